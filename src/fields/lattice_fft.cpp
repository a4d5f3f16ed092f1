// Mixed-radix Stockham passes and the four-step transform across ranks (lattice_fft.h). A pass of radix R after
// sub-transforms of length Ns reads the R points j + r N/R of a line, multiplies point r by exp(sign 2 pi i r k / (Ns
// R)), k = j mod Ns, takes their length-R transform and writes it to the points (j / Ns) Ns R + k + q Ns: the lines are
// in natural order after the last pass.
#include "src/fields/lattice_fft.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <utility>

#include "src/core/error.h"
#include "src/core/halo.h"
#include "src/core/indexing.h"
#include "src/core/launch.h"

namespace latke {
namespace {

constexpr int max_radix = 13;

/// exp(i pi x).
LATKE_HOST_DEVICE LATKE_INLINE Complex<double> unit_pi(double x) {
#if defined(__CUDA_ARCH__)
  double s, c;
  sincospi(x, &s, &c);
  return {c, s};
#else
  return {std::cos(M_PI * x), std::sin(M_PI * x)};
#endif
}

/// One pass over every line along one dimension and every component: thread n takes the R
/// inputs j + r N/R of one line. R = 0: the radix is `radix` (a loop); otherwise R, unrolled.
template <int R>
struct StockhamPass {
  const Complex<double>* in;
  Complex<double>* out;
  long volume;  ///< sites per component
  long stride;  ///< sites between neighbours along the dimension
  int n;        ///< the dimension's extent
  int radix;
  int ns;                        ///< length of the sub-transforms done before this pass
  double sign;                   ///< -1 forward, +1 inverse
  Complex<double> w[max_radix];  ///< exp(sign 2 pi i q / radix)

  LATKE_HOST_DEVICE void operator()(int idx, int) const {
    const int r_n = R > 0 ? R : radix;
    const long per_comp = volume / r_n;
    const long comp = idx / per_comp, m = idx - comp * per_comp;
    const long inner = m % stride, rest = m / stride;
    const int span = n / r_n;
    const int j = static_cast<int>(rest % span);
    const long outer = rest / span;
    const long base = comp * volume + outer * stride * n + inner;
    const int k = j % ns;
    const Complex<double> tw = unit_pi(sign * 2.0 * k / (static_cast<double>(ns) * r_n));
    Complex<double> v[R > 0 ? R : max_radix];
    Complex<double> t(1.0, 0.0);
    LATKE_UNROLL for (int r = 0; r < (R > 0 ? R : max_radix); ++r) {
      if (R == 0 && r >= r_n) break;
      v[r] = in[base + (j + static_cast<long>(r) * span) * stride] * t;
      t = t * tw;
    }
    const long d = static_cast<long>(j / ns) * ns * r_n + k;
    LATKE_UNROLL for (int q = 0; q < (R > 0 ? R : max_radix); ++q) {
      if (R == 0 && q >= r_n) break;
      Complex<double> acc = v[0];
      LATKE_UNROLL for (int r = 1; r < (R > 0 ? R : max_radix); ++r) {
        if (R == 0 && r >= r_n) break;
        acc += v[r] * w[(r * q) % r_n];
      }
      out[base + (d + static_cast<long>(q) * ns) * stride] = acc;
    }
  }
};

template <int R>
void pass(Backend b, StockhamPass<R> p, int ncomp) {
  const long threads = ncomp * (p.volume / p.radix);
  require(threads < (1L << 31), "Fourier transform: ", threads, " threads in one pass, more than one launch takes");
  launch(b, p, {static_cast<int>(threads), 0, 1});
}

/// The length-P transform's contributions of this rank (coordinate r along the dimension):
/// block a of out is in times exp(sign 2 pi i a r / P).
struct AcrossScaleKernel {
  const Complex<double>* in;
  Complex<double>* out;
  long m;  ///< complex numbers per block
  int r, p;
  double sign;
  LATKE_HOST_DEVICE void operator()(int i, int) const {
    const long a = i / m, k = i - a * m;
    out[i] = in[k] * unit_pi(sign * 2.0 * static_cast<double>((a * r) % p) / p);
  }
};

/// data(j) *= exp(sign 2 pi i a j / L) at local position j along the dimension (stride `stride`,
/// local extent l), a this rank's coordinate along it.
struct TwiddleKernel {
  Complex<double>* data;
  long volume, stride;
  int l, a, global;
  double sign;
  LATKE_HOST_DEVICE void operator()(int i, int) const {
    const int j = static_cast<int>((i % volume) / stride % l);
    data[i] = data[i] * unit_pi(sign * 2.0 * static_cast<double>((static_cast<long>(a) * j) % global) / global);
  }
};

}  // namespace

std::vector<int> LatticeFFT::radices(int n) {
  std::vector<int> r;
  for (int f : {4, 2, 3, 5, 7, 11, 13})
    while (n > 1 && n % f == 0) {
      r.push_back(f);
      n /= f;
    }
  if (n != 1) r.clear();
  return r;
}

bool LatticeFFT::supports(const Lattice& lat, unsigned dims) {
  for (int mu = 0; mu < 4; ++mu)
    if ((dims >> mu & 1u) && lat.local()[mu] > 1 && radices(lat.local()[mu]).empty()) return false;
  return true;
}

LatticeFFT::LatticeFFT(const Lattice& lat, Backend b, unsigned dims, int ncomp)
    : lat_(lat), backend_(b), dims_(dims), ncomp_(ncomp) {
  require(ncomp >= 1, "Fourier transform: ", ncomp, " components, expected 1 or more");
  const std::size_t field = sizeof(Complex<double>) * ncomp * static_cast<std::size_t>(lat.volume());
  int most = 1;  // ranks along the most split transformed dimension
  for (int mu = 0; mu < 4; ++mu) {
    if (!(dims >> mu & 1u)) continue;
    const int n = lat.local()[mu];
    require(n == 1 || !radices(n).empty(), "Fourier transform over dimension ", mu, ": local extent ", n,
            " has a prime factor above ", max_radix, "; expected extents of factors 2, 3, 5, 7, 11 and 13");
    if (!lat.partitioned(mu)) continue;
    // The ranks of this rank's line along mu, ordered by their coordinate along it.
    long colour = 0;
    for (int nu = 3; nu >= 0; --nu)
      if (nu != mu) colour = colour * lat.grid()[nu] + lat.grid_coords()[nu];
    MPI_Comm_split(lat.comm(), static_cast<int>(colour), lat.grid_coords()[mu], &line_comm_[mu]);
    most = std::max(most, lat.grid()[mu]);
  }
  scratch_ = Buffer(memory_for(b), field);
  if (most > 1) {
    send_ = Buffer(memory_for(b), field * most);
    if (b == Backend::cuda && !mpi_cuda_aware()) {
      send_host_ = Buffer(MemoryKind::pinned, field * most);
      recv_host_ = Buffer(MemoryKind::pinned, field);
    }
  }
}

LatticeFFT::~LatticeFFT() {
  for (MPI_Comm& c : line_comm_)
    if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
}

MomentumLayout LatticeFFT::momentum() const {
  MomentumLayout m{};
  for (int mu = 0; mu < 4; ++mu) {
    const bool split = (dims_ >> mu & 1u) && lat_.partitioned(mu);
    m.offset[mu] = split ? lat_.grid_coords()[mu] : lat_.offset()[mu];
    m.step[mu] = split ? lat_.grid()[mu] : 1;
    m.global[mu] = lat_.global()[mu];
  }
  return m;
}

long LatticeFFT::stride_of(int mu) const {
  long stride = 1;
  for (int nu = 0; nu < mu; ++nu) stride *= lat_.local()[nu];
  return stride;
}

void LatticeFFT::run(Complex<double>* data, int sign) {
  for (int mu = 0; mu < 4; ++mu) {
    if (!(dims_ >> mu & 1u)) continue;
    const bool split = lat_.partitioned(mu);
    if (split && sign < 0) across_ranks(data, mu, sign);
    local_passes(data, mu, sign);
    if (split && sign > 0) across_ranks(data, mu, sign);
  }
}

void LatticeFFT::across_ranks(Complex<double>* data, int mu, int sign) {
  const long V = lat_.volume(), m = ncomp_ * V;
  const long stride = stride_of(mu);
  const int p = lat_.grid()[mu], a = lat_.grid_coords()[mu];
  const TwiddleKernel twiddle{data, V, stride, lat_.local()[mu], a, lat_.global()[mu], static_cast<double>(sign)};
  require(m * p < (1L << 31), "Fourier transform: ", m * p, " numbers across ranks, more than one launch takes");
  if (sign > 0) launch(backend_, twiddle, {static_cast<int>(m), 0, 1}, compute_stream(), false);
  auto* send = static_cast<Complex<double>*>(send_.data());
  launch(backend_, AcrossScaleKernel{data, send, m, a, p, static_cast<double>(sign)}, {static_cast<int>(m * p), 0, 1});
  const std::size_t bytes = sizeof(Complex<double>) * static_cast<std::size_t>(m);
  if (backend_ == Backend::cuda && mpi_cuda_aware()) {  // MPI takes the device buffers
    synchronize(compute_stream());
    MPI_Reduce_scatter_block(send, data, static_cast<int>(2 * m), MPI_DOUBLE, MPI_SUM, line_comm_[mu]);
  } else if (backend_ == Backend::cuda) {
    copy_bytes(send_host_.data(), send, bytes * p, compute_stream());
    synchronize(compute_stream());
    MPI_Reduce_scatter_block(send_host_.data(), recv_host_.data(), static_cast<int>(2 * m), MPI_DOUBLE, MPI_SUM,
                             line_comm_[mu]);
    copy_bytes(data, recv_host_.data(), bytes, compute_stream());
  } else {
    MPI_Reduce_scatter_block(send, data, static_cast<int>(2 * m), MPI_DOUBLE, MPI_SUM, line_comm_[mu]);
  }
  if (sign < 0) launch(backend_, twiddle, {static_cast<int>(m), 0, 1}, compute_stream(), false);
}

void LatticeFFT::local_passes(Complex<double>* data, int mu, int sign) {
  const int n = lat_.local()[mu];
  if (n == 1) return;
  const long stride = stride_of(mu);
  Complex<double>* src = data;
  Complex<double>* dst = static_cast<Complex<double>*>(scratch_.data());
  int ns = 1;
  for (int r : radices(n)) {
    // One pass of this radix: unrolled for 2, 3, 4 and 5, the loop (R = 0) otherwise.
    auto go = [&](auto radix) {
      StockhamPass<decltype(radix)::value> p{};
      p.in = src;
      p.out = dst;
      p.volume = lat_.volume();
      p.stride = stride;
      p.n = n;
      p.radix = r;
      p.ns = ns;
      p.sign = sign;
      for (int q = 0; q < r; ++q) p.w[q] = unit_pi(sign * 2.0 * q / r);
      pass(backend_, p, ncomp_);
    };
    switch (r) {
      case 2:
        go(std::integral_constant<int, 2>{});
        break;
      case 3:
        go(std::integral_constant<int, 3>{});
        break;
      case 4:
        go(std::integral_constant<int, 4>{});
        break;
      case 5:
        go(std::integral_constant<int, 5>{});
        break;
      default:
        go(std::integral_constant<int, 0>{});
        break;
    }
    std::swap(src, dst);
    ns *= r;
  }
  if (src != data)
    copy_bytes(data, src, sizeof(Complex<double>) * ncomp_ * static_cast<std::size_t>(lat_.volume()), compute_stream());
}

}  // namespace latke
