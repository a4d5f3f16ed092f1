// Tests of the host Wilson-clover reference (wilson_reference.h) against
// results known without it: free-field plane waves, gamma5-hermiticity and the dagger flag,
// algebraic properties of the clover term plus a hand-computed single-link case, and gauge
// covariance. The gamma matrices are written out here from conventions.h's comment rather
// than taken from latke::gamma_matrix, so that the tests do not inherit a mistake there.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "latke/conventions.h"
#include "tests/reference/wilson_reference.h"

namespace {

using latke::reference::complex;
using latke::reference::Coords;
using latke::reference::WilsonCloverParams;
using ColorMatrix = Eigen::Matrix3cd;
using DiracMatrix = Eigen::Matrix4cd;
using CloverMatrix = Eigen::Matrix<complex, 12, 12>;
// A site's components at spin*3 + color, read column-major: a (color x spin) matrix.
using SiteSpinor = Eigen::Matrix<complex, 3, 4>;
using Field = std::vector<complex>;

constexpr double pi = 3.14159265358979323846;
const complex I(0.0, 1.0);

/// gamma_{mu+1}, DeGrand-Rossi, copied from the comment at the top of conventions.h.
DiracMatrix gamma(int mu) {
  DiracMatrix g;
  switch (mu) {
    case 0: g << 0, 0, 0, I, 0, 0, I, 0, 0, -I, 0, 0, -I, 0, 0, 0; break;
    case 1: g << 0, 0, 0, -1, 0, 0, 1, 0, 0, 1, 0, 0, -1, 0, 0, 0; break;
    case 2: g << 0, 0, I, 0, 0, 0, 0, -I, -I, 0, 0, 0, 0, I, 0, 0; break;
    default: g << 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 1, 0, 0; break;
  }
  return g;
}

DiracMatrix sigma(int mu, int nu) {
  return (I / 2.0) * (gamma(mu) * gamma(nu) - gamma(nu) * gamma(mu));
}

/// (spin matrix) (x) (color matrix) in the spin*3 + color index order.
CloverMatrix spin_color(const DiracMatrix& s, const ColorMatrix& c) {
  CloverMatrix m;
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 4; ++b) m.block<3, 3>(3 * a, 3 * b) = s(a, b) * c;
  return m;
}

std::size_t volume(const Coords& dims) {
  return static_cast<std::size_t>(dims[0]) * dims[1] * dims[2] * dims[3];
}

Coords coords_of(std::size_t site, const Coords& dims) {
  Coords c;
  for (int mu = 0; mu < 4; ++mu) {
    c[mu] = static_cast<int>(site % dims[mu]);
    site /= dims[mu];
  }
  return c;
}

Coords shifted(Coords c, int mu, int step, const Coords& dims) {
  c[mu] = (c[mu] + step + dims[mu]) % dims[mu];
  return c;
}

SiteSpinor site_spinor(const Field& f, std::size_t site) {
  return Eigen::Map<const SiteSpinor>(f.data() + latke::lex_spinor_index(site, 0, 0));
}

void set_site_spinor(Field& f, std::size_t site, const SiteSpinor& s) {
  Eigen::Map<SiteSpinor>(f.data() + latke::lex_spinor_index(site, 0, 0)) = s;
}

ColorMatrix link(const Field& gauge, std::size_t site, int mu) {
  ColorMatrix u;
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) u(r, c) = gauge[latke::lex_gauge_index(site, mu, r, c)];
  return u;
}

void set_link(Field& gauge, std::size_t site, int mu, const ColorMatrix& u) {
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) gauge[latke::lex_gauge_index(site, mu, r, c)] = u(r, c);
}

Field unit_gauge(std::size_t vol) {
  Field gauge(36 * vol);
  for (std::size_t site = 0; site < vol; ++site)
    for (int mu = 0; mu < 4; ++mu) set_link(gauge, site, mu, ColorMatrix::Identity());
  return gauge;
}

complex inner(const Field& a, const Field& b) {
  complex s = 0.0;
  for (std::size_t k = 0; k < a.size(); ++k) s += std::conj(a[k]) * b[k];
  return s;
}

double norm(const Field& a) { return std::sqrt(inner(a, a).real()); }

double relative_difference(const Field& a, const Field& b) {
  Field d(a.size());
  for (std::size_t k = 0; k < a.size(); ++k) d[k] = a[k] - b[k];
  return norm(d) / norm(b);
}

Field gamma5_times(Field f) {
  for (std::size_t k = 0; k < f.size(); ++k)
    if ((k / 3) % 4 >= 2) f[k] = -f[k];
  return f;
}

Field apply_m(const Field& gauge, const Field& in, const WilsonCloverParams& p, bool dagger) {
  Field out;
  latke::reference::apply_wilson_clover(out, gauge, in, p, dagger);
  return out;
}

CloverMatrix clover_at(const Field& gauge, const WilsonCloverParams& p, const Coords& x) {
  const std::array<complex, 144> a = latke::reference::clover_site_matrix(gauge, p, x);
  return Eigen::Map<const Eigen::Matrix<complex, 12, 12, Eigen::RowMajor>>(a.data());
}

std::array<complex, 4> phases_from_angles(const std::array<double, 4>& theta) {
  std::array<complex, 4> ph;
  for (int mu = 0; mu < 4; ++mu) ph[mu] = std::polar(1.0, theta[mu]);
  return ph;
}

// A general twist: every direction gets a different, non-real phase.
const std::array<double, 4> twisted_angles = {0.3, -1.1, 2.0, pi + 0.4};

class Random {
 public:
  explicit Random(std::uint64_t seed) : engine_(seed) {}

  complex gaussian() { return {normal_(engine_), normal_(engine_)}; }

  /// Gram-Schmidt on the columns of a Gaussian matrix, then its phase removed: det = 1.
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

  Field spinor(std::size_t vol) {
    Field f(12 * vol);
    for (complex& z : f) z = gaussian();
    return f;
  }

  Field gauge(std::size_t vol) {
    Field g(36 * vol);
    for (std::size_t site = 0; site < vol; ++site)
      for (int mu = 0; mu < 4; ++mu) set_link(g, site, mu, su3());
    return g;
  }

  std::vector<ColorMatrix> gauge_transform(std::size_t vol) {
    std::vector<ColorMatrix> g(vol);
    for (ColorMatrix& m : g) m = su3();
    return g;
  }

 private:
  std::mt19937_64 engine_;
  std::normal_distribution<double> normal_;
};

TEST(WilsonReferenceRandom, Su3MatricesAreSpecialUnitary) {
  Random rng(7);
  for (int k = 0; k < 20; ++k) {
    const ColorMatrix u = rng.su3();
    EXPECT_LT((u * u.adjoint() - ColorMatrix::Identity()).norm(), 1e-14);
    EXPECT_LT(std::abs(u.determinant() - 1.0), 1e-14);
  }
}

// With unit links the operator is diagonal in momentum. psi(x) = exp(i p.x) u with
// p_mu = (2 pi n_mu + theta_mu) / X_mu is periodic up to exactly the boundary phase
// exp(i theta_mu), so the phase on wrapping hops makes every hop look like an infinite-volume
// one: psi(x +- mu) = exp(+-i p_mu) psi(x). Then D_hop psi = sum_mu [(1 - gamma_mu) e^{i p_mu}
// + (1 + gamma_mu) e^{-i p_mu}] psi = sum_mu [2 cos p_mu - 2 i gamma_mu sin p_mu] psi, and
// M psi = (4 + m - sum cos p + i sum gamma sin p) psi; the dagger flips the sign of the i.
// The clover term vanishes for unit links, so c_sw != 0 must not change anything.
TEST(WilsonReference, FreeFieldPlaneWavesAreEigenvectors) {
  const Coords dims{4, 6, 2, 8};
  const std::size_t vol = volume(dims);
  const Field gauge = unit_gauge(vol);
  Random rng(1);
  SiteSpinor u;
  for (int s = 0; s < 4; ++s)
    for (int c = 0; c < 3; ++c) u(c, s) = rng.gaussian();

  // The default WilsonCloverParams phases (antiperiodic time), then a general twist.
  const std::array<double, 4> default_angles = {0.0, 0.0, 0.0, pi};
  const std::vector<std::array<double, 4>> angle_sets = {default_angles, twisted_angles};
  // Zero, the Brillouin-zone corner n_mu = X_mu / 2, and generic modes.
  const std::vector<std::array<int, 4>> modes = {
      {0, 0, 0, 0}, {2, 3, 1, 4}, {1, 0, 0, 0}, {0, 1, 1, 3}, {3, 5, 1, 7}, {1, 4, 0, 2}};
  for (const auto& theta : angle_sets)
    for (const auto& n : modes)
      for (const bool dagger : {false, true}) {
        WilsonCloverParams p;
        p.dims = dims;
        p.mass = 0.23;
        p.csw = 1.7;
        if (theta != default_angles) p.boundary_phase = phases_from_angles(theta);

        std::array<double, 4> mom;
        double cos_sum = 0.0;
        DiracMatrix gamma_sin = DiracMatrix::Zero();
        for (int mu = 0; mu < 4; ++mu) {
          mom[mu] = (2.0 * pi * n[mu] + theta[mu]) / dims[mu];
          cos_sum += std::cos(mom[mu]);
          gamma_sin += std::sin(mom[mu]) * gamma(mu);
        }
        const DiracMatrix symbol = (4.0 + p.mass - cos_sum) * DiracMatrix::Identity() +
                                   (dagger ? -I : I) * gamma_sin;

        Field psi(12 * vol), expected(12 * vol);
        for (std::size_t site = 0; site < vol; ++site) {
          const Coords x = coords_of(site, dims);
          double px = 0.0;
          for (int mu = 0; mu < 4; ++mu) px += mom[mu] * x[mu];
          const complex wave = std::polar(1.0, px);
          set_site_spinor(psi, site, wave * u);
          set_site_spinor(expected, site, wave * u * symbol.transpose());
        }
        SCOPED_TRACE("theta_x = " + std::to_string(theta[0]) + ", n = (" +
                     std::to_string(n[0]) + "," + std::to_string(n[1]) + "," +
                     std::to_string(n[2]) + "," + std::to_string(n[3]) +
                     "), dagger = " + std::to_string(dagger));
        EXPECT_LT(relative_difference(apply_m(gauge, psi, p, dagger), expected), 1e-12);
      }
}

// gamma5 (1 -+ gamma_mu) gamma5 = (1 +- gamma_mu) and A is Hermitian with gamma5 commuting
// with it, so gamma5 M gamma5 = M^dag on any gauge field and for unit-modulus phases.
TEST(WilsonReference, Gamma5HermiticityAndDaggerFlag) {
  const Coords dims{4, 6, 2, 8};
  const std::size_t vol = volume(dims);
  Random rng(2);
  const Field gauge = rng.gauge(vol);
  const Field x = rng.spinor(vol), y = rng.spinor(vol);
  WilsonCloverParams p;
  p.dims = dims;
  p.mass = -0.3;
  p.csw = 1.4;
  p.boundary_phase = phases_from_angles(twisted_angles);

  const Field my = apply_m(gauge, y, p, false);
  const Field mx = apply_m(gauge, x, p, false);
  const Field mdag_x = apply_m(gauge, x, p, true);
  const double scale = norm(x) * norm(my);
  EXPECT_LT(std::abs(inner(x, gamma5_times(my)) - inner(gamma5_times(mx), y)), 1e-12 * scale);
  EXPECT_LT(std::abs(inner(x, my) - inner(mdag_x, y)), 1e-12 * scale);
  // M is far from Hermitian, so the two checks above would notice an ignored dagger flag.
  EXPECT_GT(std::abs(inner(x, my) - inner(mx, y)), 1e-3 * scale);

  // The same for the pieces, to say which one is wrong if M fails.
  Field ay, ax, dy, ddag_x;
  latke::reference::apply_clover(ay, gauge, y, p);
  latke::reference::apply_clover(ax, gauge, x, p);
  latke::reference::apply_hopping(dy, gauge, y, p, false);
  latke::reference::apply_hopping(ddag_x, gauge, x, p, true);
  EXPECT_LT(std::abs(inner(x, ay) - inner(ax, y)), 1e-12 * norm(x) * norm(ay));
  EXPECT_LT(std::abs(inner(x, dy) - inner(ddag_x, y)), 1e-12 * norm(x) * norm(dy));
}

TEST(WilsonReference, CloverIsHermitianChirallyBlockDiagonalAndPhaseFree) {
  const Coords dims{4, 4, 4, 4};
  const std::size_t vol = volume(dims);
  Random rng(3);
  const Field gauge = rng.gauge(vol);
  WilsonCloverParams p;
  p.dims = dims;
  p.mass = 0.1;
  p.csw = 1.3;
  WilsonCloverParams periodic = p;
  periodic.boundary_phase = {1.0, 1.0, 1.0, 1.0};
  WilsonCloverParams twisted = p;
  twisted.boundary_phase = phases_from_angles(twisted_angles);

  for (std::size_t site = 0; site < vol; ++site) {
    const Coords x = coords_of(site, dims);
    const CloverMatrix a = clover_at(gauge, p, x);
    SCOPED_TRACE("site " + std::to_string(site));
    EXPECT_LT((a - a.adjoint()).norm(), 1e-13 * a.norm());
    // Chiral block 0 is spins {0,1} = rows/cols 0..5, block 1 spins {2,3} = 6..11.
    const double off_chiral = a.topRightCorner(6, 6).norm() + a.bottomLeftCorner(6, 6).norm();
    EXPECT_LT(off_chiral, 1e-14 * a.norm());
    // A random field has F = O(1): the checks above are not about a multiple of 1.
    EXPECT_GT((a - (4.0 + p.mass) * CloverMatrix::Identity()).norm(), 0.1);
    // Phases cancel around closed loops, so they must not enter at all.
    EXPECT_EQ(latke::reference::clover_site_matrix(gauge, periodic, x),
              latke::reference::clover_site_matrix(gauge, twisted, x));
  }
}

// U_mu(x) = g(x) g(x+mu)^dag: every loop is g(x) g(x)^dag = 1, so F = 0 and A = (4 + m) 1.
TEST(WilsonReference, CloverOfPureGaugeIsMassTerm) {
  const Coords dims{4, 4, 4, 4};
  const std::size_t vol = volume(dims);
  Random rng(4);
  const std::vector<ColorMatrix> g = rng.gauge_transform(vol);
  Field gauge(36 * vol);
  for (std::size_t site = 0; site < vol; ++site)
    for (int mu = 0; mu < 4; ++mu) {
      const std::size_t next = latke::lex_site(shifted(coords_of(site, dims), mu, 1, dims), dims);
      set_link(gauge, site, mu, g[site] * g[next].adjoint());
    }
  WilsonCloverParams p;
  p.dims = dims;
  p.mass = 0.37;
  p.csw = 2.1;
  for (std::size_t site = 0; site < vol; ++site) {
    const CloverMatrix a = clover_at(gauge, p, coords_of(site, dims));
    EXPECT_LT((a - (4.0 + p.mass) * CloverMatrix::Identity()).norm(), 1e-12 * (4.0 + p.mass))
        << "site " << site;
  }
}

// All links 1 except U_x(x0) = V = diag(e^{it}, e^{-it}, 1). In each plane (x, nu),
// nu = y, z, t, that link lies on two plaquettes: the upper one, corners x0, x0+x, x0+x+nu,
// x0+nu, and the lower one, corners x0-nu, x0+x-nu, x0+x, x0. Read counter-clockwise in the
// (x, nu) plane (x first, then nu) the upper plaquette runs along the link forwards, so its
// product from any corner is V; the lower one runs along it backwards, product V^dag. A leaf
// of Q_{x nu}(y) is one of the plaquettes with a corner at y, read from y; all other leaves
// are 1. So:
//   y = x0:     leaf 1 (U_x(x0) first)  = V,  leaf 4 (U_x(x0)^dag last) = V^dag;
//   y = x0+x:   leaf 2 (upper)          = V,  leaf 3 (lower)            = V^dag.
//     Q = 2 + V + V^dag is Hermitian: F_{x nu} = 0 there, the two leaves cancel, A = (4+m) 1.
//   y = x0+nu (leaf 4), x0+x+nu (leaf 3): only the upper plaquette, Q = 3 + V,
//     F_{x nu} = (V - V^dag)/8 = (i sin t / 4) diag(1, -1, 0) =: f.
//   y = x0-nu (leaf 1), x0+x-nu (leaf 2): only the lower plaquette, F_{x nu} = -f.
// Q_{nu x} = Q_{x nu}^dag leaf by leaf, so F_{nu x} = -F_{x nu}, and with
// sigma_{nu x} = -sigma_{x nu} both orderings in sum_{mu,nu} give the same term:
//   C_sw(y) = c_sw (i/4) 2 sigma_{x nu} (x) (+-f)
//           = -+ (c_sw sin t / 8) sigma_{x nu} (x) diag(1, -1, 0)    at y = x0 +- nu, x0+x +- nu.
// Every other site and plane has F = 0. Extents of 4 keep these eight sites and x0, x0+x apart.
TEST(WilsonReference, CloverOfOneAbelianLinkMatchesHandComputation) {
  const Coords dims{4, 4, 4, 4};
  const std::size_t vol = volume(dims);
  const Coords x0{3, 0, 2, 1};  // x0+x and x0-y wrap: leaves across the boundary are used
  const double t = 0.7;
  WilsonCloverParams p;
  p.dims = dims;
  p.mass = 0.1;
  p.csw = 1.9;
  Field gauge = unit_gauge(vol);
  const ColorMatrix v = Eigen::Vector3cd(std::polar(1.0, t), std::polar(1.0, -t), 1.0).asDiagonal();
  set_link(gauge, latke::lex_site(x0, dims), 0, v);

  std::vector<CloverMatrix> expected(vol, (4.0 + p.mass) * CloverMatrix::Identity());
  const ColorMatrix tau = Eigen::Vector3cd(1.0, -1.0, 0.0).asDiagonal();
  const Coords x0_plus_x = shifted(x0, 0, 1, dims);
  for (int nu = 1; nu < 4; ++nu) {
    const CloverMatrix c = (p.csw * std::sin(t) / 8.0) * spin_color(sigma(0, nu), tau);
    for (const Coords& base : {x0, x0_plus_x}) {
      expected[latke::lex_site(shifted(base, nu, +1, dims), dims)] -= c;
      expected[latke::lex_site(shifted(base, nu, -1, dims), dims)] += c;
    }
  }

  for (std::size_t site = 0; site < vol; ++site) {
    const CloverMatrix a = clover_at(gauge, p, coords_of(site, dims));
    for (int r = 0; r < 12; ++r)
      for (int c = 0; c < 12; ++c) {
        EXPECT_NEAR(a(r, c).real(), expected[site](r, c).real(), 1e-13)
            << "site " << site << " (" << r << "," << c << ")";
        EXPECT_NEAR(a(r, c).imag(), expected[site](r, c).imag(), 1e-13)
            << "site " << site << " (" << r << "," << c << ")";
      }
  }

  // apply_clover must apply the same matrices.
  Random rng(5);
  const Field psi = rng.spinor(vol);
  Field want(12 * vol), got;
  using SiteVector = Eigen::Matrix<complex, 12, 1>;
  for (std::size_t site = 0; site < vol; ++site)
    Eigen::Map<SiteVector>(want.data() + 12 * site) =
        expected[site] * Eigen::Map<const SiteVector>(psi.data() + 12 * site);
  latke::reference::apply_clover(got, gauge, psi, p);
  EXPECT_LT(relative_difference(got, want), 1e-12);
}

// U'_mu(x) = g(x) U_mu(x) g(x+mu)^dag, psi'(x) = g(x) psi(x) give M[U'] psi' = g M[U] psi;
// g is periodic and commutes with the (color-scalar) boundary phases.
TEST(WilsonReference, GaugeCovariance) {
  const Coords dims{4, 6, 2, 8};
  const std::size_t vol = volume(dims);
  Random rng(6);
  const Field gauge = rng.gauge(vol);
  const Field psi = rng.spinor(vol);
  const std::vector<ColorMatrix> g = rng.gauge_transform(vol);
  Field gauge_g(36 * vol), psi_g(12 * vol);
  for (std::size_t site = 0; site < vol; ++site) {
    for (int mu = 0; mu < 4; ++mu) {
      const std::size_t next = latke::lex_site(shifted(coords_of(site, dims), mu, 1, dims), dims);
      set_link(gauge_g, site, mu, g[site] * link(gauge, site, mu) * g[next].adjoint());
    }
    set_site_spinor(psi_g, site, g[site] * site_spinor(psi, site));
  }
  WilsonCloverParams p;
  p.dims = dims;
  p.mass = 0.15;
  p.csw = 1.1;
  p.boundary_phase = phases_from_angles(twisted_angles);
  for (const bool dagger : {false, true}) {
    const Field m_psi = apply_m(gauge, psi, p, dagger);
    Field want(12 * vol);
    for (std::size_t site = 0; site < vol; ++site)
      set_site_spinor(want, site, g[site] * site_spinor(m_psi, site));
    EXPECT_LT(relative_difference(apply_m(gauge_g, psi_g, p, dagger), want), 1e-12)
        << "dagger = " << dagger;
  }
}

TEST(WilsonReference, OutputMayAliasInput) {
  const Coords dims{4, 4, 2, 2};
  const std::size_t vol = volume(dims);
  Random rng(8);
  const Field gauge = rng.gauge(vol);
  WilsonCloverParams p;
  p.dims = dims;
  p.mass = 0.2;
  p.csw = 1.0;
  Field psi = rng.spinor(vol);
  const Field want = apply_m(gauge, psi, p, false);
  latke::reference::apply_wilson_clover(psi, gauge, psi, p, false);
  EXPECT_EQ(psi, want);
}

TEST(WilsonReference, BadInputThrows) {
  using latke::reference::apply_clover;
  using latke::reference::apply_hopping;
  using latke::reference::apply_wilson_clover;
  using latke::reference::clover_site_matrix;
  const Coords dims{4, 4, 2, 2};
  const std::size_t vol = volume(dims);
  WilsonCloverParams p;
  p.dims = dims;
  const Field gauge = unit_gauge(vol), psi(12 * vol);
  const Field short_psi(12 * vol - 1), long_gauge(36 * vol + 36);
  Field out;

  EXPECT_THROW(apply_hopping(out, gauge, short_psi, p, false), std::invalid_argument);
  EXPECT_THROW(apply_clover(out, gauge, short_psi, p), std::invalid_argument);
  EXPECT_THROW(apply_wilson_clover(out, gauge, short_psi, p, true), std::invalid_argument);
  EXPECT_THROW(apply_hopping(out, long_gauge, psi, p, true), std::invalid_argument);
  EXPECT_THROW(apply_clover(out, long_gauge, psi, p), std::invalid_argument);
  EXPECT_THROW(apply_wilson_clover(out, long_gauge, psi, p, false), std::invalid_argument);
  EXPECT_THROW(clover_site_matrix(long_gauge, p, Coords{0, 0, 0, 0}), std::invalid_argument);
  EXPECT_THROW(clover_site_matrix(gauge, p, Coords{0, 0, 2, 0}), std::invalid_argument);
  EXPECT_THROW(clover_site_matrix(gauge, p, Coords{0, -1, 0, 0}), std::invalid_argument);

  WilsonCloverParams no_dims;  // dims default to zero
  EXPECT_THROW(apply_wilson_clover(out, Field{}, Field{}, no_dims, false), std::invalid_argument);
  WilsonCloverParams negative = p;
  negative.dims[1] = -4;
  EXPECT_THROW(apply_hopping(out, gauge, psi, negative, false), std::invalid_argument);

  // The message names the argument, its value and what was expected.
  try {
    apply_clover(out, gauge, short_psi, p);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("in.size() = " + std::to_string(12 * vol - 1)), std::string::npos) << what;
    EXPECT_NE(what.find(std::to_string(12 * vol)), std::string::npos) << what;
  }
}

}  // namespace
