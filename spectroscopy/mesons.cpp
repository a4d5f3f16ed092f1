// Meson correlators (mesons.h): one segmented reduction per channel, segment = local time
// slice, summed over the slice's sites on the fields' backend.
#include "spectroscopy/mesons.h"

#include <array>
#include <cmath>

#include "latke/conventions.h"
#include "src/core/error.h"
#include "src/core/indexing.h"
#include "src/core/launch.h"
#include "src/core/log.h"
#include "src/core/memory.h"
#include "src/core/work_counters.h"
#include "src/fields/precision.h"

namespace latke {

namespace {

// ---- gamma algebra on the host (integer entries) -------------------------------------------

SpinMatrix identity() {
  SpinMatrix m{};
  for (int r = 0; r < 4; ++r) m[r][r] = {1, 0};
  return m;
}

SpinMatrix mul(const SpinMatrix& a, const SpinMatrix& b) {
  SpinMatrix m{};
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) {
      UnitComplex s{0, 0};
      for (int k = 0; k < 4; ++k) s = s + a[r][k] * b[k][c];
      m[r][c] = s;
    }
  return m;
}

SpinMatrix dagger(const SpinMatrix& a) {
  SpinMatrix m{};
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) m[r][c] = {a[c][r].re, -a[c][r].im};
  return m;
}

SpinMatrix gamma(int mu) { return gamma_matrix(mu); }  // mu = 0..3: gamma_1 .. gamma_4
const SpinMatrix g5 = gamma5_matrix();

/// A matrix with one non-zero entry per row, entry of row a at column col[a].
struct Monomial {
  int col[4];
  double re[4], im[4];
};

Monomial monomial(const SpinMatrix& m) {
  Monomial out{};
  for (int r = 0; r < 4; ++r) {
    int found = -1;
    for (int c = 0; c < 4; ++c)
      if (m[r][c].re != 0 || m[r][c].im != 0) {
        require(found < 0, "meson contraction: a gamma product with two entries in row ", r);
        found = c;
      }
    require(found >= 0, "meson contraction: a gamma product with an empty row ", r);
    out.col[r] = found;
    out.re[r] = m[r][found].re;
    out.im[r] = m[r][found].im;
  }
  return out;
}

/// Tr[P S Q S^dag] with P = gamma_5 G_snk, Q = Gbar_src gamma_5.
struct MesonTerm {
  Monomial p, q;
};

MesonTerm term(const SpinMatrix& snk, const SpinMatrix& src) {
  const SpinMatrix bar = mul(gamma(3), mul(dagger(src), gamma(3)));
  return {monomial(mul(g5, snk)), monomial(mul(bar, g5))};
}

struct ChannelTerms {
  int n = 0;
  MesonTerm t[3];
};

ChannelTerms terms_of(MesonChannel c) {
  ChannelTerms ct;
  auto add = [&](const SpinMatrix& snk, const SpinMatrix& src) { ct.t[ct.n++] = term(snk, src); };
  const SpinMatrix g4g5 = mul(gamma(3), g5);
  switch (c) {
    case MesonChannel::pion:
      add(g5, g5);
      break;
    case MesonChannel::pion_a4:
      add(g4g5, g4g5);
      break;
    case MesonChannel::a4_pion:
      add(g4g5, g5);
      break;
    case MesonChannel::a0:
      add(identity(), identity());
      break;
    case MesonChannel::rho:
      for (int i = 0; i < 3; ++i) add(gamma(i), gamma(i));
      break;
    case MesonChannel::a1:
      for (int i = 0; i < 3; ++i) add(mul(gamma(i), g5), mul(gamma(i), g5));
      break;
    case MesonChannel::b1:
      for (int i = 0; i < 3; ++i) {
        const SpinMatrix gjk = mul(gamma((i + 1) % 3), gamma((i + 2) % 3));
        add(gjk, gjk);
      }
      break;
  }
  return ct;
}

// ---- the kernels ----------------------------------------------------------------------------

/// The (x_cb, parity) of site i of local time slice t (lexicographic, x fastest).
LATKE_HOST_DEVICE LATKE_INLINE void slice_site(const LocalGeometry& g, int t, int i, int& x_cb, int& parity) {
  const int lex = t * g.L[0] * g.L[1] * g.L[2] + i;
  int c[4];
  parity = g.lex_coords(lex, c);
  x_cb = lex >> 1;
}

/// sum over slice t's sites of -1/n sum_terms Tr[P S Q S^dag] (segment = local time slice).
template <typename Store>
struct MesonSliceSum {
  using Acc = SpinorAccessor<Store, 3, 4>;
  Acc col[12][2];  ///< [3 s0 + c0][parity]
  LocalGeometry geom;
  ChannelTerms terms;
  double scale;

  LATKE_HOST_DEVICE Complex<double> operator()(int t, int i) const {
    int x_cb, parity;
    slice_site(geom, t, i, x_cb, parity);
    Complex<double> acc;
    for (int k = 0; k < terms.n; ++k) {
      const Monomial& p = terms.t[k].p;
      const Monomial& q = terms.t[k].q;
      for (int c = 0; c < 4; ++c) {
        Complex<double> sc;
        for (int l = 0; l < 3; ++l) {
          const auto X = col[3 * c + l][parity].load(x_cb);
          const auto Y = col[3 * q.col[c] + l][parity].load(x_cb);
          for (int a = 0; a < 4; ++a) {
            Complex<double> s;
            for (int kap = 0; kap < 3; ++kap)
              s += conj_mul(Complex<double>(Y.d[a][kap]), Complex<double>(X.d[p.col[a]][kap]));
            sc += Complex<double>(p.re[a], p.im[a]) * s;
          }
        }
        acc += Complex<double>(q.re[c], q.im[c]) * sc;
      }
    }
    return scale * acc;
  }
};

/// density[lex] = the channel's term at local site lex (lexicographic, x fastest).
template <typename Store>
struct MesonDensity {
  MesonSliceSum<Store> term;
  Complex<double>* density;
  int V3;
  LATKE_HOST_DEVICE void operator()(int lex, int) const { density[lex] = term(lex / V3, lex % V3); }
};

/// sum over local slice t of e^{-i p.(xvec - xvec0)} density(xvec, t), p = 2 pi n / L; the
/// phase's argument is reduced modulo L in integers, so that it is exact for any volume.
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

template <typename Store>
struct SliceNorm {
  SpinorAccessor<Store, 3, 4> f[2];
  LocalGeometry geom;
  LATKE_HOST_DEVICE double operator()(int t, int i) const {
    int x_cb, parity;
    slice_site(geom, t, i, x_cb, parity);
    const auto s = f[parity].load(x_cb);
    double n = 0;
    for (int a = 0; a < 4; ++a)
      for (int c = 0; c < 3; ++c) n += norm2(Complex<double>(s.d[a][c]));
    return n;
  }
};

void require_wilson_full(const ColorSpinorField& f, const char* what) {
  require(f.nspin() == 4 && f.ncolor() == 3 && f.n_parity() == 2, what, ": a field of ", f.nspin(), " spins, ",
          f.ncolor(), " colours and ", f.n_parity(), " parities; expected a full Wilson field (4 spins, 3 colours)");
}

template <typename Store>
SpinorAccessor<Store, 3, 4> accessor_of(const ColorSpinorField& f, int parity) {
  return f.accessor<Store, 3, 4>(f.block_parity(0) == parity ? 0 : 1);
}

}  // namespace

const char* to_string(MesonChannel c) {
  switch (c) {
    case MesonChannel::pion:
      return "pion";
    case MesonChannel::pion_a4:
      return "pion_a4";
    case MesonChannel::a4_pion:
      return "a4_pion";
    case MesonChannel::rho:
      return "rho";
    case MesonChannel::a0:
      return "a0";
    case MesonChannel::a1:
      return "a1";
    case MesonChannel::b1:
      return "b1";
  }
  return "?";
}

std::vector<MesonChannel> all_meson_channels() {
  std::vector<MesonChannel> all;
  for (int k = 0; k < n_meson_channels; ++k) all.push_back(static_cast<MesonChannel>(k));
  return all;
}

MesonChannel parse_meson_channel(const std::string& name) {
  std::string choices;
  for (MesonChannel c : all_meson_channels()) {
    if (name == to_string(c)) return c;
    choices += std::string(choices.empty() ? "" : ", ") + to_string(c);
  }
  fail("meson channel '", name, "': expected one of ", choices);
}

std::vector<std::vector<Complex<double>>> meson_correlators(const std::vector<const ColorSpinorField*>& columns, int t0,
                                                            const std::vector<MesonChannel>& channels) {
  const auto c = meson_correlators(columns, {0, 0, 0, t0}, channels, {{0, 0, 0}});
  std::vector<std::vector<Complex<double>>> out;
  for (const auto& per_momentum : c) out.push_back(per_momentum[0]);
  return out;
}

std::vector<std::vector<std::vector<Complex<double>>>> meson_correlators(
    const std::vector<const ColorSpinorField*>& columns, const std::array<int, 4>& source,
    const std::vector<MesonChannel>& channels, const std::vector<std::array<int, 3>>& momenta) {
  const LogScope log(LogEvent::contract);
  require(columns.size() == 12, "meson_correlators: ", columns.size(),
          " propagator columns; expected 12 (3 s0 + c0 for every source spin and colour)");
  const ColorSpinorField& f0 = *columns[0];
  require_wilson_full(f0, "meson_correlators: column 0");
  for (std::size_t j = 1; j < columns.size(); ++j) {
    require(columns[j]->is_like(f0) && &columns[j]->lattice() == &f0.lattice(), "meson_correlators: column ", j,
            " differs from column 0 in lattice, shape, precision or backend");
  }
  const Lattice& lat = f0.lattice();
  const int T = lat.global()[3], Lt = lat.local()[3], t_off = lat.offset()[3];
  for (int mu = 0; mu < 4; ++mu)
    require(source[mu] >= 0 && source[mu] < lat.global()[mu], "meson_correlators: source coordinate ", source[mu],
            " in dimension ", mu, ": expected 0 to ", lat.global()[mu] - 1);
  const int t0 = source[3];
  const int V3 = lat.local()[0] * lat.local()[1] * lat.local()[2];
  const int nch = static_cast<int>(channels.size()), nmom = static_cast<int>(momenta.size());
  MomentumSliceSum proj{};
  for (int mu = 0; mu < 3; ++mu) {
    proj.l[mu] = lat.local()[mu];
    proj.L[mu] = lat.global()[mu];
    proj.rel0[mu] = lat.offset()[mu] - source[mu];
  }
  proj.V3 = V3;
  // [channel][momentum][global t][re, im]
  std::vector<double> sums(2 * static_cast<std::size_t>(nch) * nmom * T, 0.0);
  Buffer density(memory_for(f0.backend()), sizeof(Complex<double>) * static_cast<std::size_t>(lat.volume()));
  proj.density = static_cast<const Complex<double>*>(density.data());
  dispatch_precision(f0.precision(), [&](auto s) {
    using S = decltype(s);
    MesonDensity<S> k{};
    for (int j = 0; j < 12; ++j)
      for (int p = 0; p < 2; ++p) k.term.col[j][p] = accessor_of<S>(*columns[j], p);
    k.term.geom = LocalGeometry::of(lat);
    k.density = static_cast<Complex<double>*>(density.data());
    k.V3 = V3;
    std::vector<Complex<double>> local(Lt);
    for (int c = 0; c < nch; ++c) {
      k.term.terms = terms_of(channels[c]);
      k.term.scale = -1.0 / k.term.terms.n;
      launch(f0.backend(), k, LaunchRange{static_cast<int>(lat.volume()), 0, 1});
      for (int m = 0; m < nmom; ++m) {
        for (int mu = 0; mu < 3; ++mu) proj.n[mu] = momenta[m][mu];
        launch_segmented_reduce_host<Complex<double>>(f0.backend(), proj, Lt, V3, local.data());
        for (int t = 0; t < Lt; ++t) {
          const std::size_t g = (static_cast<std::size_t>(c) * nmom + m) * T + t_off + t;
          sums[2 * g] = local[t].re;
          sums[2 * g + 1] = local[t].im;
        }
      }
    }
  });
  global_sum(sums.data(), static_cast<int>(sums.size()), lat.comm());
  std::vector<std::vector<std::vector<Complex<double>>>> out(
      nch, std::vector<std::vector<Complex<double>>>(nmom, std::vector<Complex<double>>(T)));
  for (int c = 0; c < nch; ++c)
    for (int m = 0; m < nmom; ++m)
      for (int t = 0; t < T; ++t) {
        const std::size_t g = (static_cast<std::size_t>(c) * nmom + m) * T + (t0 + t) % T;
        out[c][m][t] = Complex<double>(sums[2 * g], sums[2 * g + 1]);
      }
  return out;
}

std::vector<double> timeslice_norms(const ColorSpinorField& psi) {
  require_wilson_full(psi, "timeslice_norms");
  const Lattice& lat = psi.lattice();
  const int T = lat.global()[3], Lt = lat.local()[3];
  const int V3 = lat.local()[0] * lat.local()[1] * lat.local()[2];
  std::vector<double> out(T, 0.0), local(Lt);
  dispatch_precision(psi.precision(), [&](auto s) {
    using S = decltype(s);
    SliceNorm<S> k{};
    for (int p = 0; p < 2; ++p) k.f[p] = accessor_of<S>(psi, p);
    k.geom = LocalGeometry::of(lat);
    launch_segmented_reduce_host<double>(psi.backend(), k, Lt, V3, local.data());
  });
  for (int t = 0; t < Lt; ++t) out[lat.offset()[3] + t] = local[t];
  global_sum(out.data(), T, lat.comm());
  return out;
}

}  // namespace latke
