// Nucleon correlators (baryons.h): per site, the spin matrix G from the 144 entries of S(x) and
// its two parity traces into density arrays on the fields' backend, then the momentum
// projection of contraction.h.
#include "spectroscopy/baryons.h"

#include "latke/conventions.h"
#include "spectroscopy/contraction.h"
#include "src/core/error.h"
#include "src/core/indexing.h"
#include "src/core/launch.h"
#include "src/core/log.h"
#include "src/core/memory.h"
#include "src/fields/precision.h"

namespace latke {

namespace {

/// The (a, b, c) permutations of (0, 1, 2), even ones first.
LATKE_HOST_DEVICE LATKE_INLINE void permutation(int k, int& a, int& b, int& c, double& sign) {
  const int p[6][3] = {{0, 1, 2}, {1, 2, 0}, {2, 0, 1}, {0, 2, 1}, {2, 1, 0}, {1, 0, 2}};
  a = p[k][0];
  b = p[k][1];
  c = p[k][2];
  sign = k < 3 ? 1.0 : -1.0;
}

/// Tr G and Tr gamma_4 G of the nucleon's spin matrix G (baryons.h) from one site's (or one
/// slice sum's) propagator S[sink spin][sink colour][source spin][source colour].
LATKE_HOST_DEVICE LATKE_INLINE void nucleon_traces(const Complex<double> (&S)[4][3][4][3], const Monomial& gamma,
                                                   const Monomial& gbar, const Monomial& g4, Complex<double>& trace,
                                                   Complex<double>& trace4) {
  Complex<double> G[4][4];
  for (int b = 0; b < 3; ++b)
    for (int bp = 0; bp < 3; ++bp) {
      // M = Gamma S^{b b'} Gbar: row al of Gamma S is gamma(al) S^{bb'}[gamma.col[al]][.], and
      // column be of it lands in column gbar.col[be] with gbar(be).
      Complex<double> M[4][4];
      for (int al = 0; al < 4; ++al)
        for (int be = 0; be < 4; ++be)
          M[al][gbar.col[be]] = gamma.value(al) * S[gamma.col[al]][b][be][bp] * gbar.value(be);
      for (int k = 0; k < 6; ++k) {
        int a, kb, c;
        double sk;
        permutation(k, a, kb, c, sk);
        if (kb != b) continue;
        for (int q = 0; q < 6; ++q) {
          int ap, qb, cp;
          double sq;
          permutation(q, ap, qb, cp, sq);
          if (qb != bp) continue;
          const double sign = sk * sq;
          // term 1: S^{cc'} Tr[M (S^{aa'})^T]
          Complex<double> tr;
          for (int al = 0; al < 4; ++al)
            for (int alp = 0; alp < 4; ++alp) tr += M[al][alp] * S[al][a][alp][ap];
          tr *= sign;
          // term 2: - S^{ca'} M^T S^{ac'}, through K = M^T S^{ac'}
          Complex<double> K[4][4];
          for (int alp = 0; alp < 4; ++alp)
            for (int gp = 0; gp < 4; ++gp) {
              Complex<double> s;
              for (int al = 0; al < 4; ++al) s += M[al][alp] * S[al][a][gp][cp];
              K[alp][gp] = s;
            }
          for (int g = 0; g < 4; ++g)
            for (int gp = 0; gp < 4; ++gp) {
              Complex<double> s;
              for (int alp = 0; alp < 4; ++alp) s += S[g][c][alp][ap] * K[alp][gp];
              G[g][gp] += tr * S[g][c][gp][cp] + (-sign) * s;
            }
        }
      }
    }
  trace = Complex<double>();
  trace4 = Complex<double>();
  for (int g = 0; g < 4; ++g) {
    trace += G[g][g];
    trace4 += g4.value(g) * G[g4.col[g]][g];
  }
}

template <typename Store>
struct NucleonDensity {
  SpinorAccessor<Store, 3, 4> col[12][2];  ///< [3 s0 + c0][parity]
  LocalGeometry geom;
  Monomial gamma, gbar, g4;  ///< C gamma_5, gamma_4 (C gamma_5)^dag gamma_4, gamma_4
  Complex<double> wrap;      ///< conj(z_t)^3, for sinks before the source's slice
  int t_offset, t0;
  Complex<double>* plus;   ///< Tr[(1 + gamma_4)/2 G] per local site (lexicographic)
  Complex<double>* minus;  ///< Tr[(1 - gamma_4)/2 G]

  LATKE_HOST_DEVICE void operator()(int lex, int) const {
    int x[4];
    const int parity = geom.lex_coords(lex, x), x_cb = lex >> 1;
    Complex<double> S[4][3][4][3];  // [sink spin][sink colour][source spin][source colour]
    for (int j = 0; j < 12; ++j) {
      const auto v = col[j][parity].load(x_cb);
      for (int s = 0; s < 4; ++s)
        for (int c = 0; c < 3; ++c) S[s][c][j / 3][j % 3] = Complex<double>(v.d[s][c]);
    }
    Complex<double> trace, trace4;  // Tr G, Tr gamma_4 G
    nucleon_traces(S, gamma, gbar, g4, trace, trace4);
    Complex<double> w(1.0);
    if (x[3] + t_offset < t0) w = wrap;
    plus[lex] = 0.5 * (w * (trace + trace4));
    minus[lex] = 0.5 * (w * (trace + (-1.0) * trace4));
  }
};

/// C gamma_5 (C = gamma_2 gamma_4, checked to be the charge conjugation of conventions.h's basis),
/// its Gbar = gamma_4 Gamma^dag gamma_4 and gamma_4, as monomials.
void nucleon_gammas(Monomial& gamma, Monomial& gbar, Monomial& g4) {
  const SpinMatrix C = spin_mul(gamma_matrix(1), gamma_matrix(3));
  for (int mu = 0; mu < 4; ++mu) {
    const SpinMatrix lhs = spin_mul(C, spin_mul(gamma_matrix(mu), spin_dagger(C)));
    const SpinMatrix rhs = spin_transpose(gamma_matrix(mu));
    for (int r = 0; r < 4; ++r)
      for (int c = 0; c < 4; ++c)
        require(lhs[r][c].re == -rhs[r][c].re && lhs[r][c].im == -rhs[r][c].im,
                "nucleon_correlators: gamma_2 gamma_4 is not the charge conjugation of conventions.h's gamma basis");
  }
  const SpinMatrix g = spin_mul(C, gamma5_matrix());
  gamma = monomial(g, "nucleon contraction");
  gbar = monomial(spin_mul(gamma_matrix(3), spin_mul(spin_dagger(g), gamma_matrix(3))), "nucleon contraction");
  g4 = monomial(gamma_matrix(3), "nucleon contraction");
}

/// conj(z)^3 (every |z| = 1 hop phase of a baryon's three quarks across the time boundary); spatial phases must be 1.
Complex<double> baryon_wrap(const std::array<Complex<double>, 4>& boundary_phase, const char* what) {
  for (int mu = 0; mu < 3; ++mu)
    require(boundary_phase[mu].re == 1 && boundary_phase[mu].im == 0, what, ": the boundary phase (",
            boundary_phase[mu].re, ",", boundary_phase[mu].im, ") in direction ", mu,
            "; expected 1 in space (a baryon's momenta would shift)");
  const Complex<double> z = boundary_phase[3], zc(z.re, -z.im);
  return zc * zc * zc;
}

}  // namespace

const char* to_string(BaryonChannel c) { return c == BaryonChannel::nucleon ? "nucleon" : "nucleon_minus"; }

std::vector<std::vector<std::vector<Complex<double>>>> nucleon_correlators(
    const std::vector<const ColorSpinorField*>& columns, const std::array<int, 4>& source,
    const std::array<Complex<double>, 4>& boundary_phase, const std::vector<std::array<int, 3>>& momenta) {
  const LogScope log(LogEvent::contract);
  check_propagator(columns, "nucleon_correlators");
  const ColorSpinorField& f0 = *columns[0];
  const Lattice& lat = f0.lattice();
  check_source_and_momenta(lat, source, momenta, "nucleon_correlators");
  const Complex<double> wrap = baryon_wrap(boundary_phase, "nucleon_correlators");
  Monomial gamma, gbar, g4;
  nucleon_gammas(gamma, gbar, g4);
  const int T = lat.global()[3], nmom = static_cast<int>(momenta.size());
  const std::size_t Lt = lat.local()[3];
  const std::size_t bytes = sizeof(Complex<double>) * static_cast<std::size_t>(lat.volume());
  Buffer plus(memory_for(f0.backend()), bytes), minus(memory_for(f0.backend()), bytes);
  dispatch_precision(f0.precision(), [&](auto s) {
    using St = decltype(s);
    NucleonDensity<St> k{};
    for (int j = 0; j < 12; ++j)
      for (int p = 0; p < 2; ++p) k.col[j][p] = parity_accessor<St>(*columns[j], p);
    k.geom = LocalGeometry::of(lat);
    k.gamma = gamma;
    k.gbar = gbar;
    k.g4 = g4;
    k.wrap = wrap;
    k.t_offset = lat.offset()[3];
    k.t0 = source[3];
    k.plus = static_cast<Complex<double>*>(plus.data());
    k.minus = static_cast<Complex<double>*>(minus.data());
    launch(f0.backend(), k, LaunchRange{static_cast<int>(lat.volume()), 0, 1});
  });
  Buffer slices(memory_for(f0.backend()), sizeof(Complex<double>) * n_baryon_channels * nmom * Lt);
  Complex<double>* per_slice = static_cast<Complex<double>*>(slices.data());  // [channel][momentum][t]
  project_slices(f0.backend(), lat, static_cast<const Complex<double>*>(plus.data()), source, momenta, per_slice);
  project_slices(f0.backend(), lat, static_cast<const Complex<double>*>(minus.data()), source, momenta,
                 per_slice + nmom * Lt);
  const std::vector<Complex<double>> sums = slices_on_host(lat, per_slice, n_baryon_channels * nmom);
  std::vector<std::vector<std::vector<Complex<double>>>> out(
      n_baryon_channels, std::vector<std::vector<Complex<double>>>(nmom, std::vector<Complex<double>>(T)));
  for (int c = 0; c < n_baryon_channels; ++c)
    for (int m = 0; m < nmom; ++m)
      for (int t = 0; t < T; ++t) {
        out[c][m][t] = sums[(static_cast<std::size_t>(c) * nmom + m) * T + (source[3] + t) % T];
      }
  return out;
}

std::vector<std::vector<Complex<double>>> nucleon_correlators_wall_sink(
    const std::vector<const ColorSpinorField*>& columns, int t0, const std::array<Complex<double>, 4>& boundary_phase) {
  const LogScope log(LogEvent::contract);
  check_propagator(columns, "nucleon_correlators_wall_sink");
  const Lattice& lat = columns[0]->lattice();
  const int T = lat.global()[3];
  require(t0 >= 0 && t0 < T, "nucleon_correlators_wall_sink: source time slice ", t0, ": expected 0 to ", T - 1);
  const Complex<double> wrap = baryon_wrap(boundary_phase, "nucleon_correlators_wall_sink");
  Monomial gamma, gbar, g4;
  nucleon_gammas(gamma, gbar, g4);
  const std::vector<Complex<double>> sums = propagator_slice_sums(columns);  // [t][row][column]
  std::vector<std::vector<Complex<double>>> out(n_baryon_channels, std::vector<Complex<double>>(T));
  for (int t = 0; t < T; ++t) {
    const int tg = (t0 + t) % T;
    Complex<double> S[4][3][4][3];
    for (int r = 0; r < 12; ++r)
      for (int j = 0; j < 12; ++j)
        S[r / 3][r % 3][j / 3][j % 3] = sums[(static_cast<std::size_t>(tg) * 12 + r) * 12 + j];
    Complex<double> trace, trace4;
    nucleon_traces(S, gamma, gbar, g4, trace, trace4);
    const Complex<double> w = tg < t0 ? wrap : Complex<double>(1.0);
    out[0][t] = 0.5 * (w * (trace + trace4));
    out[1][t] = 0.5 * (w * (trace + (-1.0) * trace4));
  }
  return out;
}

}  // namespace latke
