// Meson correlators (mesons.h): one segmented reduction per channel, segment = local time
// slice, summed over the slice's sites on the fields' backend.
#include "spectroscopy/mesons.h"

#include <array>
#include <cmath>

#include "latke/conventions.h"
#include "spectroscopy/contraction.h"
#include "src/core/error.h"
#include "src/core/indexing.h"
#include "src/core/launch.h"
#include "src/core/log.h"
#include "src/core/memory.h"
#include "src/core/work_counters.h"
#include "src/fields/precision.h"

namespace latke {

namespace {

SpinMatrix gamma(int mu) { return gamma_matrix(mu); }  // mu = 0..3: gamma_1 .. gamma_4
const SpinMatrix g5 = gamma5_matrix();

/// Tr[P S Q S^dag] with P = gamma_5 G_snk, Q = Gbar_src gamma_5.
struct MesonTerm {
  Monomial p, q;
};

MesonTerm term(const SpinMatrix& snk, const SpinMatrix& src) {
  const SpinMatrix bar = spin_mul(gamma(3), spin_mul(spin_dagger(src), gamma(3)));
  return {monomial(spin_mul(g5, snk), "meson contraction"), monomial(spin_mul(bar, g5), "meson contraction")};
}

struct ChannelTerms {
  int n = 0;
  MesonTerm t[3];
};

ChannelTerms terms_of(MesonChannel c) {
  ChannelTerms ct;
  auto add = [&](const SpinMatrix& snk, const SpinMatrix& src) { ct.t[ct.n++] = term(snk, src); };
  const SpinMatrix g4g5 = spin_mul(gamma(3), g5);
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
      add(spin_identity(), spin_identity());
      break;
    case MesonChannel::rho:
      for (int i = 0; i < 3; ++i) add(gamma(i), gamma(i));
      break;
    case MesonChannel::a1:
      for (int i = 0; i < 3; ++i) add(spin_mul(gamma(i), g5), spin_mul(gamma(i), g5));
      break;
    case MesonChannel::b1:
      for (int i = 0; i < 3; ++i) {
        const SpinMatrix gjk = spin_mul(gamma((i + 1) % 3), gamma((i + 2) % 3));
        add(gjk, gjk);
      }
      break;
  }
  return ct;
}

// ---- the kernels ----------------------------------------------------------------------------

/// sum_terms Tr[P S Q R^dag] at one site (or of one slice sum), S the quark's propagator and R the
/// antiquark's: quark(j) and antiquark(j) give column j = 3 s0 + c0 as a spinor (d[spin][colour]).
template <typename Quark, typename Antiquark>
LATKE_HOST_DEVICE LATKE_INLINE Complex<double> meson_traces(const ChannelTerms& terms, const Quark& quark,
                                                            const Antiquark& antiquark) {
  Complex<double> acc;
  for (int k = 0; k < terms.n; ++k) {
    const Monomial& p = terms.t[k].p;
    const Monomial& q = terms.t[k].q;
    for (int c = 0; c < 4; ++c) {
      Complex<double> sc;
      for (int l = 0; l < 3; ++l) {
        const auto X = quark(3 * c + l);
        const auto Y = antiquark(3 * q.col[c] + l);
        for (int a = 0; a < 4; ++a) {
          Complex<double> s;
          for (int kap = 0; kap < 3; ++kap)
            s += conj_mul(Complex<double>(Y.d[a][kap]), Complex<double>(X.d[p.col[a]][kap]));
          sc += p.value(a) * s;
        }
      }
      acc += q.value(c) * sc;
    }
  }
  return acc;
}

/// sum over slice t's sites of -1/n sum_terms Tr[P S Q R^dag] (segment = local time slice), S the
/// quark's propagator and R the antiquark's (the same one for degenerate quarks).
template <typename Store>
struct MesonSliceSum {
  using Acc = SpinorAccessor<Store, 3, 4>;
  Acc col[12][2];    ///< S: [3 s0 + c0][parity]
  Acc other[12][2];  ///< R
  LocalGeometry geom;
  ChannelTerms terms;
  double scale;

  LATKE_HOST_DEVICE Complex<double> operator()(int t, int i) const {
    int x_cb, parity;
    slice_site(geom, t, i, x_cb, parity);
    return scale * meson_traces(
                       terms, [&](int j) { return col[j][parity].load(x_cb); },
                       [&](int j) { return other[j][parity].load(x_cb); });
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
  return meson_correlators(columns, columns, source, channels, momenta);
}

std::vector<std::vector<std::vector<Complex<double>>>> meson_correlators(
    const std::vector<const ColorSpinorField*>& columns, const std::vector<const ColorSpinorField*>& antiquark,
    const std::array<int, 4>& source, const std::vector<MesonChannel>& channels,
    const std::vector<std::array<int, 3>>& momenta) {
  const LogScope log(LogEvent::contract);
  check_propagator(columns, "meson_correlators");
  check_propagator(antiquark, "meson_correlators (the antiquark's)");
  const ColorSpinorField& f0 = *columns[0];
  require(antiquark[0]->is_like(f0) && &antiquark[0]->lattice() == &f0.lattice(),
          "meson_correlators: the antiquark's propagator differs from the quark's in lattice, shape, precision or "
          "backend");
  const Lattice& lat = f0.lattice();
  const int T = lat.global()[3];
  check_source_and_momenta(lat, source, momenta, "meson_correlators");
  const int t0 = source[3];
  const int V3 = lat.local()[0] * lat.local()[1] * lat.local()[2];
  const int nch = static_cast<int>(channels.size()), nmom = static_cast<int>(momenta.size());
  const std::size_t Lt = lat.local()[3];
  Buffer density(memory_for(f0.backend()), sizeof(Complex<double>) * static_cast<std::size_t>(lat.volume()));
  Buffer slices(memory_for(f0.backend()), sizeof(Complex<double>) * nch * nmom * Lt);  // [channel][momentum][t]
  Complex<double>* per_slice = static_cast<Complex<double>*>(slices.data());
  dispatch_precision(f0.precision(), [&](auto s) {
    using S = decltype(s);
    MesonDensity<S> k{};
    for (int j = 0; j < 12; ++j)
      for (int p = 0; p < 2; ++p) {
        k.term.col[j][p] = parity_accessor<S>(*columns[j], p);
        k.term.other[j][p] = parity_accessor<S>(*antiquark[j], p);
      }
    k.term.geom = LocalGeometry::of(lat);
    k.density = static_cast<Complex<double>*>(density.data());
    k.V3 = V3;
    for (int c = 0; c < nch; ++c) {
      k.term.terms = terms_of(channels[c]);
      k.term.scale = -1.0 / k.term.terms.n;
      launch(f0.backend(), k, LaunchRange{static_cast<int>(lat.volume()), 0, 1});
      project_slices(f0.backend(), lat, k.density, source, momenta, per_slice + c * nmom * Lt);
    }
  });
  const std::vector<Complex<double>> sums = slices_on_host(lat, per_slice, nch * nmom);  // [channel][momentum][t]
  std::vector<std::vector<std::vector<Complex<double>>>> out(
      nch, std::vector<std::vector<Complex<double>>>(nmom, std::vector<Complex<double>>(T)));
  for (int c = 0; c < nch; ++c)
    for (int m = 0; m < nmom; ++m)
      for (int t = 0; t < T; ++t) {
        out[c][m][t] = sums[(static_cast<std::size_t>(c) * nmom + m) * T + (t0 + t) % T];
      }
  return out;
}

std::vector<std::vector<Complex<double>>> meson_correlators_wall_sink(
    const std::vector<const ColorSpinorField*>& columns, int t0, const std::vector<MesonChannel>& channels) {
  const LogScope log(LogEvent::contract);
  check_propagator(columns, "meson_correlators_wall_sink");
  const Lattice& lat = columns[0]->lattice();
  const int T = lat.global()[3];
  require(t0 >= 0 && t0 < T, "meson_correlators_wall_sink: source time slice ", t0, ": expected 0 to ", T - 1);
  const std::vector<Complex<double>> sums = propagator_slice_sums(columns);  // [t][row 3 s + c][column j]
  const int nch = static_cast<int>(channels.size());
  std::vector<std::vector<Complex<double>>> out(nch, std::vector<Complex<double>>(T));
  std::vector<ChannelTerms> terms;
  for (MesonChannel c : channels) terms.push_back(terms_of(c));
  std::vector<ColorSpinor<double, 3, 4>> Sw(12);  // the slice sum's columns at one t
  for (int t = 0; t < T; ++t) {
    const std::size_t tg = (t0 + t) % T;
    for (int j = 0; j < 12; ++j)
      for (int r = 0; r < 12; ++r) Sw[j].d[r / 3][r % 3] = sums[(tg * 12 + r) * 12 + j];
    const auto column = [&](int j) { return Sw[j]; };
    for (int ch = 0; ch < nch; ++ch) out[ch][t] = (-1.0 / terms[ch].n) * meson_traces(terms[ch], column, column);
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
    for (int p = 0; p < 2; ++p) k.f[p] = parity_accessor<S>(psi, p);
    k.geom = LocalGeometry::of(lat);
    launch_segmented_reduce_host<double>(psi.backend(), k, Lt, V3, local.data());
  });
  for (int t = 0; t < Lt; ++t) out[lat.offset()[3] + t] = local[t];
  global_sum(out.data(), T, lat.comm());
  return out;
}

}  // namespace latke
