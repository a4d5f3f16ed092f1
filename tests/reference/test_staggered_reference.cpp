// Tests of the host staggered reference (staggered_reference.h) against results
// known without it: the staggered phases written out, free-field plane waves (D^dag D is
// diagonal in momentum), a point source hand-traced through D, anti-hermiticity, gauge
// covariance, fattening path counts and unit-gauge values, and MILC's sign convention.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "latke/conventions.h"
#include "tests/reference/staggered_reference.h"

namespace {

using latke::reference::complex;
using latke::reference::Coords;
using latke::reference::FatteningCoefficients;
using latke::reference::StaggeredParams;
using ColorMatrix = Eigen::Matrix3cd;
using Field = std::vector<complex>;

constexpr double pi = 3.14159265358979323846;

std::size_t volume(const Coords& d) { return static_cast<std::size_t>(d[0]) * d[1] * d[2] * d[3]; }

Coords coords_of(std::size_t site, const Coords& d) {
  Coords c;
  for (int mu = 0; mu < 4; ++mu) {
    c[mu] = static_cast<int>(site % d[mu]);
    site /= d[mu];
  }
  return c;
}

std::size_t site_of(Coords c, const Coords& d) {
  for (int mu = 0; mu < 4; ++mu) c[mu] = ((c[mu] % d[mu]) + d[mu]) % d[mu];
  return latke::lex_site(c, d);
}

ColorMatrix link(const Field& g, std::size_t site, int mu) {
  ColorMatrix u;
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) u(r, c) = g[latke::lex_gauge_index(site, mu, r, c)];
  return u;
}

void set_link(Field& g, std::size_t site, int mu, const ColorMatrix& u) {
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) g[latke::lex_gauge_index(site, mu, r, c)] = u(r, c);
}

Field unit_gauge(std::size_t vol) {
  Field g(36 * vol);
  for (std::size_t s = 0; s < vol; ++s)
    for (int mu = 0; mu < 4; ++mu) set_link(g, s, mu, ColorMatrix::Identity());
  return g;
}

complex inner(const Field& a, const Field& b) {
  complex s = 0.0;
  for (std::size_t k = 0; k < a.size(); ++k) s += std::conj(a[k]) * b[k];
  return s;
}

double rel_diff(const Field& a, const Field& b) {
  double d = 0, n = 0;
  for (std::size_t k = 0; k < a.size(); ++k) {
    d += std::norm(a[k] - b[k]);
    n += std::norm(b[k]);
  }
  return std::sqrt(d / n);
}

class Random {
 public:
  explicit Random(std::uint64_t seed) : engine_(seed) {}
  complex gaussian() { return {normal_(engine_), normal_(engine_)}; }
  ColorMatrix su3() {
    ColorMatrix q;
    for (int c = 0; c < 3; ++c) {
      Eigen::Vector3cd v;
      for (int r = 0; r < 3; ++r) v(r) = gaussian();
      for (int k = 0; k < c; ++k) v -= q.col(k).dot(v) * q.col(k);
      q.col(c) = v.normalized();
    }
    return q * std::polar(1.0, -std::arg(q.determinant()) / 3.0);
  }
  Field vector(std::size_t vol) {
    Field f(3 * vol);
    for (complex& z : f) z = gaussian();
    return f;
  }
  Field gauge(std::size_t vol) {
    Field g(36 * vol);
    for (std::size_t s = 0; s < vol; ++s)
      for (int mu = 0; mu < 4; ++mu) set_link(g, s, mu, su3());
    return g;
  }

 private:
  std::mt19937_64 engine_;
  std::normal_distribution<double> normal_;
};

/// Asqtad coefficients with tadpole factor u0, phase-free convention, written out from the
/// formula in staggered.h.
FatteningCoefficients asqtad(double u0) {
  FatteningCoefficients c;
  c.one_link = 5.0 / 8.0;
  c.three_staple = 1.0 / 16.0 / std::pow(u0, 2);
  c.five_staple = 1.0 / 64.0 / std::pow(u0, 4);
  c.seven_staple = 1.0 / 384.0 / std::pow(u0, 6);
  c.lepage = -1.0 / 16.0 / std::pow(u0, 4);
  c.naik = -1.0 / 24.0 / std::pow(u0, 2);
  return c;
}

Field dslash(const Field& fat, const Field& lng, const Field& in, const StaggeredParams& p) {
  Field out;
  latke::reference::apply_staggered_dslash(out, fat, lng, in, p);
  return out;
}

TEST(StaggeredReference, PhasesAreWrittenOut) {
  // eta_x = 1, eta_y = (-1)^x, eta_z = (-1)^(x+y), eta_t = (-1)^(x+y+z).
  const Coords a{1, 0, 0, 0}, b{1, 1, 0, 1}, c{0, 1, 1, 0}, d{2, 3, 1, 5};
  EXPECT_EQ(latke::staggered_phase(0, a), 1);
  EXPECT_EQ(latke::staggered_phase(1, a), -1);
  EXPECT_EQ(latke::staggered_phase(2, a), -1);
  EXPECT_EQ(latke::staggered_phase(3, a), -1);
  EXPECT_EQ(latke::staggered_phase(1, b), -1);
  EXPECT_EQ(latke::staggered_phase(2, b), 1);
  EXPECT_EQ(latke::staggered_phase(3, b), 1);
  EXPECT_EQ(latke::staggered_phase(1, c), 1);
  EXPECT_EQ(latke::staggered_phase(2, c), -1);
  EXPECT_EQ(latke::staggered_phase(3, c), 1);
  EXPECT_EQ(latke::staggered_phase(3, d), 1);
  EXPECT_EQ(latke::staggered_phase(2, d), -1);
}

// Free field: the etas satisfy eta_mu(x) eta_nu(x + mu) = -eta_nu(x) eta_mu(x + nu) for
// mu != nu, so in D^2 the mixed terms cancel and D^dag D = -D^2 = sum_mu -(Delta_mu)^2, with
// Delta_mu chi = a (chi(x+mu) - chi(x-mu)) + b (chi(x+3mu) - chi(x-3mu)). On a plane wave
// e^{i p x} (p_mu = (2 pi n_mu + theta_mu)/X_mu, the boundary phase e^{i theta_mu} making
// every hop an infinite-volume one) Delta_mu = 2i (a sin p_mu + b sin 3p_mu), so
// D^dag D = 4 sum_mu (a sin p_mu + b sin 3p_mu)^2: naive a = 1, b = 0; asqtad free links
// a = 9/8, b = -1/24 (which the fattening must produce from unit links).
TEST(StaggeredReference, FreeFieldPlaneWavesAreEigenvectorsOfDdagD) {
  const Coords dims{4, 6, 4, 8};
  const std::size_t vol = volume(dims);
  const Field unit = unit_gauge(vol);
  Field fat_imp, lng_imp;
  latke::reference::fatten(fat_imp, lng_imp, unit, dims, asqtad(1.0));
  Random rng(3);
  const Eigen::Vector3cd u(rng.gaussian(), rng.gaussian(), rng.gaussian());
  const std::vector<std::array<double, 4>> angle_sets = {{0, 0, 0, pi}, {0.3, -1.1, 2.0, pi + 0.4}};
  const std::vector<std::array<int, 4>> modes = {{0, 0, 0, 0}, {1, 2, 3, 4}, {2, 3, 2, 4}, {3, 1, 0, 7}};
  for (bool improved : {false, true})
    for (const auto& theta : angle_sets)
      for (const auto& n : modes) {
        StaggeredParams p;
        p.dims = dims;
        p.improved = improved;
        for (int mu = 0; mu < 4; ++mu) p.boundary_phase[mu] = std::polar(1.0, theta[mu]);
        std::array<double, 4> mom;
        double lambda = 0;
        for (int mu = 0; mu < 4; ++mu) {
          mom[mu] = (2 * pi * n[mu] + theta[mu]) / dims[mu];
          const double s =
              improved ? 9.0 / 8.0 * std::sin(mom[mu]) - 1.0 / 24.0 * std::sin(3 * mom[mu]) : std::sin(mom[mu]);
          lambda += 4 * s * s;
        }
        Field chi(3 * vol);
        for (std::size_t s = 0; s < vol; ++s) {
          const Coords x = coords_of(s, dims);
          double phase = 0;
          for (int mu = 0; mu < 4; ++mu) phase += mom[mu] * x[mu];
          for (int c = 0; c < 3; ++c) chi[3 * s + c] = std::polar(1.0, phase) * u(c);
        }
        const Field& fat = improved ? fat_imp : unit;
        const Field d2 = dslash(fat, lng_imp, dslash(fat, lng_imp, chi, p), p);
        double diff = 0;
        for (std::size_t k = 0; k < chi.size(); ++k) diff = std::max(diff, std::abs(-d2[k] - lambda * chi[k]));
        EXPECT_LT(diff, 1e-12 * (1 + lambda)) << "improved " << improved << " mode " << n[0] << n[1] << n[2] << n[3];
      }
}

// D on a point source at y, color c, traced by hand: (D chi)(y - mu) = eta_mu(y - mu) V_mu(y - mu) e_c,
// (D chi)(y + mu) = -eta_mu(y + mu) V_mu(y)^dag e_c, and with Naik links the same at y -+ 3 mu
// with W; zero elsewhere. At the time boundary the wrapping hops carry the phase -1.
TEST(StaggeredReference, PointSourceByHand) {
  const Coords dims{6, 4, 4, 8};
  const std::size_t vol = volume(dims);
  Random rng(5);
  const Field fat = rng.gauge(vol);
  Field lng = rng.gauge(vol);
  for (complex& z : lng) z *= 0.3;
  for (const Coords& y : {Coords{2, 1, 3, 4}, Coords{3, 2, 1, 0}})
    for (bool improved : {false, true}) {
      StaggeredParams p;
      p.dims = dims;
      p.improved = improved;
      const int color = 1;
      Field chi(3 * vol);
      chi[3 * site_of(y, dims) + color] = 1.0;
      const Field out = dslash(fat, lng, chi, p);
      Field want(3 * vol);
      for (int mu = 0; mu < 4; ++mu)
        for (int hop : {1, 3}) {
          if (hop == 3 && !improved) continue;
          const Field& g = hop == 1 ? fat : lng;
          Coords back = y, fwd = y;
          back[mu] -= hop;
          fwd[mu] += hop;
          // Hops that wrap in time (antiperiodic) flip sign: from back to y, and from fwd to y.
          const double s_back = mu == 3 && back[mu] < 0 ? -1.0 : 1.0;
          const double s_fwd = mu == 3 && fwd[mu] >= dims[3] ? -1.0 : 1.0;
          const std::size_t b = site_of(back, dims), f = site_of(fwd, dims);
          const ColorMatrix ub = link(g, b, mu), uy = link(g, site_of(y, dims), mu);
          for (int r = 0; r < 3; ++r) {
            want[3 * b + r] += s_back * latke::staggered_phase(mu, coords_of(b, dims)) * ub(r, color);
            want[3 * f + r] -= s_fwd * latke::staggered_phase(mu, coords_of(f, dims)) * std::conj(uy(color, r));
          }
        }
      EXPECT_LT(rel_diff(out, want), 1e-14) << "improved " << improved << " y_t " << y[3];
    }
}

// <x, D y> = -<D x, y>, and M^dag = 2m - D is the adjoint of M, with twisted phases.
TEST(StaggeredReference, AntiHermitian) {
  const Coords dims{4, 6, 4, 4};
  const std::size_t vol = volume(dims);
  Random rng(7);
  const Field fat = rng.gauge(vol), lng = rng.gauge(vol);
  StaggeredParams p;
  p.dims = dims;
  p.improved = true;
  p.mass = 0.3;
  p.boundary_phase = {std::polar(1.0, 0.4), 1.0, std::polar(1.0, -2.1), -1.0};
  const Field x = rng.vector(vol), y = rng.vector(vol);
  const complex l = inner(x, dslash(fat, lng, y, p)), r = inner(dslash(fat, lng, x, p), y);
  EXPECT_LT(std::abs(l + r), 1e-12 * std::abs(l));
  EXPECT_GT(std::abs(l - r), 1e-3 * std::abs(l));  // D is not Hermitian: the check can fail
  Field mx, mdy;
  latke::reference::apply_staggered(mx, fat, lng, x, p, false);
  latke::reference::apply_staggered(mdy, fat, lng, y, p, true);
  EXPECT_LT(std::abs(inner(y, mx) - inner(mdy, x)), 1e-12 * std::abs(inner(y, mx)));
}

// U_mu(x) -> g(x) U_mu(x) g(x+mu)^dag, chi -> g chi: fat and long links transform like links
// (to x + mu and x + 3 mu) and D chi like chi.
TEST(StaggeredReference, GaugeCovariance) {
  const Coords dims{4, 4, 6, 4};
  const std::size_t vol = volume(dims);
  Random rng(11);
  const Field thin = rng.gauge(vol);
  std::vector<ColorMatrix> g(vol);
  for (ColorMatrix& m : g) m = rng.su3();
  Field thin2(thin.size());
  for (std::size_t s = 0; s < vol; ++s)
    for (int mu = 0; mu < 4; ++mu) {
      Coords n = coords_of(s, dims);
      ++n[mu];
      set_link(thin2, s, mu, g[s] * link(thin, s, mu) * g[site_of(n, dims)].adjoint());
    }
  Field fat, lng, fat2, lng2;
  latke::reference::fatten(fat, lng, thin, dims, asqtad(0.9));
  latke::reference::fatten(fat2, lng2, thin2, dims, asqtad(0.9));
  double worst = 0;
  for (std::size_t s = 0; s < vol; ++s)
    for (int mu = 0; mu < 4; ++mu) {
      Coords n1 = coords_of(s, dims), n3 = n1;
      n1[mu] += 1;
      n3[mu] += 3;
      worst = std::max(worst, (g[s] * link(fat, s, mu) * g[site_of(n1, dims)].adjoint() - link(fat2, s, mu)).norm());
      worst = std::max(worst, (g[s] * link(lng, s, mu) * g[site_of(n3, dims)].adjoint() - link(lng2, s, mu)).norm());
    }
  EXPECT_LT(worst, 1e-13);
  StaggeredParams p;
  p.dims = dims;
  p.improved = true;
  const Field chi = rng.vector(vol);
  Field gchi(chi.size());
  auto rotate = [&](const Field& v, Field& out) {
    for (std::size_t s = 0; s < vol; ++s)
      Eigen::Map<Eigen::Vector3cd>(out.data() + 3 * s) = g[s] * Eigen::Map<const Eigen::Vector3cd>(v.data() + 3 * s);
  };
  rotate(chi, gchi);
  Field want(chi.size());
  rotate(dslash(fat, lng, chi, p), want);
  EXPECT_LT(rel_diff(dslash(fat2, lng2, gchi, p), want), 1e-13);
}

// On unit links every path is 1: each coefficient alone counts its paths (6 three-link
// staples, 24 five-link, 48 seven-link, 6 Lepage), and asqtad gives
// V = 5/8 + 3/(8 u0^2) + 1/(8 u0^6) (the 5-link and Lepage parts cancel), W = -1/(24 u0^2).
TEST(StaggeredReference, FatteningCountsPathsAndGivesUnitGaugeValues) {
  const Coords dims{4, 4, 4, 6};
  const std::size_t vol = volume(dims);
  const Field unit = unit_gauge(vol);
  const std::vector<std::pair<double FatteningCoefficients::*, double>> counts = {
      {&FatteningCoefficients::one_link, 1},
      {&FatteningCoefficients::three_staple, 6},
      {&FatteningCoefficients::five_staple, 24},
      {&FatteningCoefficients::seven_staple, 48},
      {&FatteningCoefficients::lepage, 6}};
  for (const auto& [member, n] : counts) {
    FatteningCoefficients c;
    c.*member = 1.0;
    Field fat, lng;
    latke::reference::fatten(fat, lng, unit, dims, c);
    EXPECT_LT((link(fat, 17, 2) - n * ColorMatrix::Identity()).norm(), 1e-14) << n;
  }
  for (double u0 : {1.0, 0.8}) {
    Field fat, lng;
    latke::reference::fatten(fat, lng, unit, dims, asqtad(u0));
    const double v = 5.0 / 8.0 + 3.0 / (8 * u0 * u0) + 1.0 / (8 * std::pow(u0, 6)), w = -1.0 / (24 * u0 * u0);
    for (std::size_t s : {std::size_t(0), vol / 2 + 3, vol - 1})
      for (int mu = 0; mu < 4; ++mu) {
        EXPECT_LT((link(fat, s, mu) - v * ColorMatrix::Identity()).norm(), 1e-14) << "u0 " << u0;
        EXPECT_LT((link(lng, s, mu) - w * ColorMatrix::Identity()).norm(), 1e-14) << "u0 " << u0;
      }
  }
}

// MILC fattens links with eta_mu(x) and the boundary phase multiplied in, with the staple
// coefficients -1/16, +1/64, -1/384 (its asqtad table). The result must be eta_mu(x) times the
// phase (when the link wraps: fat at x_mu = X-1, long at x_mu >= X-3) times the phase-free
// links fattened with Latke's coefficients: the mapping staggered.h states.
TEST(StaggeredReference, MilcConventionDiffersByEtaAndBoundaryPhase) {
  const Coords dims{4, 4, 6, 8};
  const std::size_t vol = volume(dims);
  Random rng(13);
  const Field thin = rng.gauge(vol);
  const std::array<complex, 4> phase{1.0, 1.0, std::polar(1.0, 0.7), -1.0};
  Field milc_thin(thin.size());
  for (std::size_t s = 0; s < vol; ++s) {
    const Coords x = coords_of(s, dims);
    for (int mu = 0; mu < 4; ++mu) {
      complex f = double(latke::staggered_phase(mu, x));
      if (x[mu] == dims[mu] - 1) f *= phase[mu];
      set_link(milc_thin, s, mu, f * link(thin, s, mu));
    }
  }
  const double u0 = 0.85;
  FatteningCoefficients milc = asqtad(u0);
  milc.three_staple = -milc.three_staple;
  milc.seven_staple = -milc.seven_staple;
  Field fat, lng, milc_fat, milc_lng;
  latke::reference::fatten(fat, lng, thin, dims, asqtad(u0));
  latke::reference::fatten(milc_fat, milc_lng, milc_thin, dims, milc);
  double worst = 0;
  for (std::size_t s = 0; s < vol; ++s) {
    const Coords x = coords_of(s, dims);
    for (int mu = 0; mu < 4; ++mu) {
      const double eta = latke::staggered_phase(mu, x);
      const complex pf = x[mu] == dims[mu] - 1 ? phase[mu] : 1.0, pl = x[mu] >= dims[mu] - 3 ? phase[mu] : 1.0;
      worst = std::max(worst, (eta * pf * link(fat, s, mu) - link(milc_fat, s, mu)).norm());
      worst = std::max(worst, (eta * pl * link(lng, s, mu) - link(milc_lng, s, mu)).norm());
    }
  }
  EXPECT_LT(worst, 1e-13);
}

TEST(StaggeredReference, BadSizesAreErrors) {
  StaggeredParams p;
  p.dims = {4, 4, 4, 4};
  Field out, small(10);
  EXPECT_THROW(latke::reference::apply_staggered_dslash(out, small, small, small, p), std::invalid_argument);
  p.dims = {4, 0, 4, 4};
  EXPECT_THROW(latke::reference::apply_staggered(out, small, small, small, p, false), std::invalid_argument);
}

}  // namespace
