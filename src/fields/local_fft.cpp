// Mixed-radix Stockham passes (local_fft.h). A pass of radix R after sub-transforms of length Ns
// reads the R points j + r N/R of a line, multiplies point r by exp(sign 2 pi i r k / (Ns R)),
// k = j mod Ns, takes their length-R transform and writes it to the points
// (j / Ns) Ns R + k + q Ns: the lines are in natural order after the last pass.
#include "src/fields/local_fft.h"

#include <cmath>
#include <type_traits>
#include <utility>

#include "src/core/error.h"
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

}  // namespace

std::vector<int> LocalFFT::radices(int n) {
  std::vector<int> r;
  for (int f : {4, 2, 3, 5, 7, 11, 13})
    while (n > 1 && n % f == 0) {
      r.push_back(f);
      n /= f;
    }
  if (n != 1) r.clear();
  return r;
}

bool LocalFFT::supports(const Lattice& lat, unsigned dims) {
  for (int mu = 0; mu < 4; ++mu)
    if ((dims >> mu & 1u) && (lat.partitioned(mu) || (lat.local()[mu] > 1 && radices(lat.local()[mu]).empty())))
      return false;
  return true;
}

LocalFFT::LocalFFT(const Lattice& lat, Backend b, unsigned dims, int ncomp)
    : lat_(lat), backend_(b), dims_(dims), ncomp_(ncomp) {
  require(ncomp >= 1, "Fourier transform: ", ncomp, " components, expected 1 or more");
  for (int mu = 0; mu < 4; ++mu) {
    if (!(dims >> mu & 1u)) continue;
    require(!lat.partitioned(mu), "Fourier transform over dimension ", mu, ": the process grid (", lat.describe(),
            ") splits it; the transform needs each line whole on one rank");
    const int n = lat.local()[mu];
    require(n == 1 || !radices(n).empty(), "Fourier transform over dimension ", mu, ": extent ", n,
            " has a prime factor above ", max_radix, "; expected extents of factors 2, 3, 5, 7, 11 and 13");
  }
  scratch_ = Buffer(memory_for(b), sizeof(Complex<double>) * ncomp * static_cast<std::size_t>(lat.volume()));
}

void LocalFFT::run(Complex<double>* data, int sign) {
  Complex<double>* src = data;
  Complex<double>* dst = static_cast<Complex<double>*>(scratch_.data());
  long stride = 1;
  for (int mu = 0; mu < 4; ++mu) {
    const int n = lat_.local()[mu];
    if ((dims_ >> mu & 1u) && n > 1) {
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
    }
    stride *= n;
  }
  if (src != data)
    copy_bytes(data, src, sizeof(Complex<double>) * ncomp_ * static_cast<std::size_t>(lat_.volume()), compute_stream());
}

}  // namespace latke
