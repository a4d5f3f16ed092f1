// Propagator checks and momentum projection over time slices (contraction.h).
#include "spectroscopy/contraction.h"

#include <cmath>
#include <cstdlib>

#include "src/core/error.h"
#include "src/core/indexing.h"
#include "src/core/launch.h"
#include "src/core/memory.h"
#include "src/core/work_counters.h"
#include "src/fields/precision.h"

namespace latke {

namespace {

/// sum over local slice t of e^{-i p.(xvec - xvec0)} density(xvec, t), p = 2 pi n / L.
struct MomentumSliceSum {
  const Complex<double>* density;
  int n[3];     ///< the momentum's integers
  int l[3];     ///< local extents
  int L[3];     ///< global extents
  int rel0[3];  ///< this rank's offset minus the source site: local x + rel0 = x - x0
  int V3;

  LATKE_HOST_DEVICE Complex<double> operator()(int t, int i) const {
    const Complex<double> d = density[t * V3 + i];
    if (n[0] == 0 && n[1] == 0 && n[2] == 0) return d;
    const int x[3] = {i % l[0], i / l[0] % l[1], i / (l[0] * l[1])};
    double turns = 0;  // (p.(x - x0)) / 2 pi
    for (int mu = 0; mu < 3; ++mu) {
      long long k = static_cast<long long>(n[mu]) * (x[mu] + rel0[mu]) % L[mu];
      if (k < 0) k += L[mu];
      turns += static_cast<double>(k) / L[mu];
    }
    const double a = -2 * 3.14159265358979323846 * turns;
    return Complex<double>(cos(a), sin(a)) * d;
  }
};

/// Six complex numbers: half a spinor's (two spins') sum.
struct HalfSpinorSum {
  Complex<double> v[6];
  LATKE_HOST_DEVICE HalfSpinorSum& operator+=(const HalfSpinorSum& o) {
    for (int k = 0; k < 6; ++k) v[k] += o.v[k];
    return *this;
  }
};

/// Spins 2 half, 2 half + 1 of one field summed over the sites of local slice t (lexicographic, x fastest).
template <typename Store>
struct SliceSpinorSum {
  SpinorAccessor<Store, 3, 4> f[2];
  LocalGeometry geom;
  int half;
  LATKE_HOST_DEVICE HalfSpinorSum operator()(int t, int i) const {
    int x_cb, parity;
    slice_site(geom, t, i, x_cb, parity);
    const auto s = f[parity].load(x_cb);
    HalfSpinorSum r;
    for (int a = 0; a < 2; ++a)
      for (int k = 0; k < 3; ++k) r.v[3 * a + k] = Complex<double>(s.d[2 * half + a][k]);
    return r;
  }
};

}  // namespace

SpinMatrix spin_identity() {
  SpinMatrix m{};
  for (int r = 0; r < 4; ++r) m[r][r] = {1, 0};
  return m;
}

SpinMatrix spin_mul(const SpinMatrix& a, const SpinMatrix& b) {
  SpinMatrix m{};
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) {
      UnitComplex s{0, 0};
      for (int k = 0; k < 4; ++k) s = s + a[r][k] * b[k][c];
      m[r][c] = s;
    }
  return m;
}

SpinMatrix spin_dagger(const SpinMatrix& a) {
  SpinMatrix m{};
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) m[r][c] = {a[c][r].re, -a[c][r].im};
  return m;
}

SpinMatrix spin_transpose(const SpinMatrix& a) {
  SpinMatrix m{};
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) m[r][c] = a[c][r];
  return m;
}

Monomial monomial(const SpinMatrix& m, const char* what) {
  Monomial out{};
  for (int r = 0; r < 4; ++r) {
    int found = -1;
    for (int c = 0; c < 4; ++c)
      if (m[r][c].re != 0 || m[r][c].im != 0) {
        require(found < 0, what, ": a gamma product with two entries in row ", r);
        found = c;
      }
    require(found >= 0, what, ": a gamma product with an empty row ", r);
    out.col[r] = found;
    out.re[r] = m[r][found].re;
    out.im[r] = m[r][found].im;
  }
  return out;
}

void check_propagator(const std::vector<const ColorSpinorField*>& columns, const char* what) {
  require(columns.size() == 12, what, ": ", columns.size(),
          " propagator columns; expected 12 (3 s0 + c0 for every source spin and colour)");
  const ColorSpinorField& f0 = *columns[0];
  require(f0.nspin() == 4 && f0.ncolor() == 3 && f0.n_parity() == 2, what, ": column 0 is a field of ", f0.nspin(),
          " spins, ", f0.ncolor(), " colours and ", f0.n_parity(),
          " parities; expected a full Wilson field (4 spins, 3 colours)");
  for (std::size_t j = 1; j < columns.size(); ++j)
    require(columns[j]->is_like(f0) && &columns[j]->lattice() == &f0.lattice(), what, ": column ", j,
            " differs from column 0 in lattice, shape, precision or backend");
}

void check_source_and_momenta(const Lattice& lat, const std::array<int, 4>& source,
                              const std::vector<std::array<int, 3>>& momenta, const char* what) {
  for (int mu = 0; mu < 4; ++mu)
    require(source[mu] >= 0 && source[mu] < lat.global()[mu], what, ": source coordinate ", source[mu],
            " in dimension ", mu, ": expected 0 to ", lat.global()[mu] - 1);
  for (std::size_t m = 0; m < momenta.size(); ++m)
    for (int i = 0; i < 3; ++i)
      require(2 * std::abs(momenta[m][i]) <= lat.global()[i], what, ": momentum ", m, " component ", i, " is ",
              momenta[m][i], ": expected |n| <= ", lat.global()[i] / 2, " (p = 2 pi n / ", lat.global()[i], ")");
}

std::vector<Complex<double>> propagator_slice_sums(const std::vector<const ColorSpinorField*>& columns) {
  check_propagator(columns, "propagator_slice_sums");
  const ColorSpinorField& f0 = *columns[0];
  const Lattice& lat = f0.lattice();
  const int T = lat.global()[3], Lt = lat.local()[3], t_off = lat.offset()[3];
  const int V3 = lat.local()[0] * lat.local()[1] * lat.local()[2];
  // Every (column, half) reduction queued into one array on the backend, collected once.
  Buffer dev(memory_for(f0.backend()), sizeof(HalfSpinorSum) * 24 * static_cast<std::size_t>(Lt));
  HalfSpinorSum* d = static_cast<HalfSpinorSum*>(dev.data());
  dispatch_precision(f0.precision(), [&](auto s) {
    using S = decltype(s);
    for (int j = 0; j < 12; ++j)
      for (int half = 0; half < 2; ++half) {
        SliceSpinorSum<S> k{};
        for (int p = 0; p < 2; ++p) k.f[p] = parity_accessor<S>(*columns[j], p);
        k.geom = LocalGeometry::of(lat);
        k.half = half;
        launch_segmented_reduce<HalfSpinorSum>(f0.backend(), k, Lt, V3, d + (2 * j + half) * Lt);
      }
  });
  std::vector<HalfSpinorSum> local(24 * static_cast<std::size_t>(Lt));
  copy_bytes(local.data(), d, sizeof(HalfSpinorSum) * local.size(), compute_stream());
  synchronize(compute_stream());
  std::vector<double> w(2 * static_cast<std::size_t>(T) * 144, 0.0);  // [global t][row][column][re, im]
  for (int j = 0; j < 12; ++j)
    for (int half = 0; half < 2; ++half)
      for (int t = 0; t < Lt; ++t)
        for (int r = 0; r < 6; ++r) {
          const Complex<double> v = local[(2 * j + half) * Lt + t].v[r];
          const std::size_t g = (static_cast<std::size_t>(t_off + t) * 144 + (6 * half + r) * 12 + j) * 2;
          w[g] = v.re;
          w[g + 1] = v.im;
        }
  global_sum(w.data(), static_cast<int>(w.size()), lat.comm());
  std::vector<Complex<double>> out(static_cast<std::size_t>(T) * 144);
  for (std::size_t k = 0; k < out.size(); ++k) out[k] = Complex<double>(w[2 * k], w[2 * k + 1]);
  return out;
}

void project_slices(Backend b, const Lattice& lat, const Complex<double>* density, const std::array<int, 4>& source,
                    const std::vector<std::array<int, 3>>& momenta, Complex<double>* out) {
  const int Lt = lat.local()[3];
  MomentumSliceSum proj{};
  proj.density = density;
  for (int mu = 0; mu < 3; ++mu) {
    proj.l[mu] = lat.local()[mu];
    proj.L[mu] = lat.global()[mu];
    proj.rel0[mu] = lat.offset()[mu] - source[mu];
  }
  proj.V3 = lat.local()[0] * lat.local()[1] * lat.local()[2];
  for (std::size_t m = 0; m < momenta.size(); ++m) {
    for (int mu = 0; mu < 3; ++mu) proj.n[mu] = momenta[m][mu];
    launch_segmented_reduce<Complex<double>>(b, proj, Lt, proj.V3, out + m * Lt);
  }
}

std::vector<Complex<double>> slices_on_host(const Lattice& lat, const Complex<double>* sums, int blocks) {
  const int T = lat.global()[3], Lt = lat.local()[3], t_off = lat.offset()[3];
  std::vector<Complex<double>> local(static_cast<std::size_t>(blocks) * Lt);
  copy_bytes(local.data(), sums, sizeof(Complex<double>) * local.size(), compute_stream());
  synchronize(compute_stream());
  std::vector<double> w(2 * static_cast<std::size_t>(blocks) * T, 0.0);
  for (int k = 0; k < blocks; ++k)
    for (int t = 0; t < Lt; ++t) {
      const std::size_t g = static_cast<std::size_t>(k) * T + t_off + t;
      w[2 * g] = local[static_cast<std::size_t>(k) * Lt + t].re;
      w[2 * g + 1] = local[static_cast<std::size_t>(k) * Lt + t].im;
    }
  global_sum(w.data(), static_cast<int>(w.size()), lat.comm());
  std::vector<Complex<double>> out(static_cast<std::size_t>(blocks) * T);
  for (std::size_t k = 0; k < out.size(); ++k) out[k] = Complex<double>(w[2 * k], w[2 * k + 1]);
  return out;
}

}  // namespace latke
