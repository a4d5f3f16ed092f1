// The quenched generator and the gauge observables, on every backend present: the random
// numbers against published known answers, the SU(2) heat-bath distribution against exact
// moments, the observables against a naive host computation and gauge invariance, SU(3)
// after every update, over-relaxation at constant action, and the thermalized plaquette
// against strong- and weak-coupling expansions; plus the statistics of time series.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "latke/conventions.h"
#include "operators/wilson_clover/clover_build.h"
#include "src/core/autocorrelation.h"
#include "src/core/error.h"
#include "src/core/memory.h"
#include "src/fields/gauge_field.h"
#include "src/fields/gauge_generator.h"
#include "src/fields/lattice_fft.h"
#include "src/fields/philox.h"
#include "src/fields/random.h"
#include "src/fields/su3_update.h"
#include "tests/support/backends.h"

namespace latke {
namespace {

using test::available_backends;

using M3 = gauge::M3;

std::string backend_name(const ::testing::TestParamInfo<Backend>& i) { return to_string(i.param); }

M3 link_of(const std::vector<Complex<double>>& h, std::size_t site, int mu) {
  M3 u;
  for (int k = 0; k < 9; ++k) u.e[k / 3][k % 3] = h[lex_gauge_index(site, mu, k / 3, k % 3)];
  return u;
}

/// Bit-for-bit equality of two link arrays.
bool identical(const std::vector<Complex<double>>& a, const std::vector<Complex<double>>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(Complex<double>)) == 0;
}

double re_tr(const M3& u) { return u.e[0][0].re + u.e[1][1].re + u.e[2][2].re; }

// ---------------------------------------------------------------------------------------
// Random numbers and the SU(2) heat bath

TEST(Philox, PublishedKnownAnswers) {
  // Random123's kat_vectors for philox4x32_10.
  const Philox4x32 a = philox4x32_10({{0, 0, 0, 0}}, 0, 0);
  EXPECT_EQ(a.v[0], 0x6627e8d5u);
  EXPECT_EQ(a.v[1], 0xe169c58du);
  EXPECT_EQ(a.v[2], 0xbc57ac4cu);
  EXPECT_EQ(a.v[3], 0x9b00dbd8u);
  const Philox4x32 b = philox4x32_10({{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}}, 0xffffffffu, 0xffffffffu);
  EXPECT_EQ(b.v[0], 0x408f276du);
  EXPECT_EQ(b.v[1], 0x41c83b0eu);
  EXPECT_EQ(b.v[2], 0xa20bc7c6u);
  EXPECT_EQ(b.v[3], 0x6d5451fdu);
  const Philox4x32 c = philox4x32_10({{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}}, 0xa4093822u, 0x299f31d0u);
  EXPECT_EQ(c.v[0], 0xd16cfe09u);
  EXPECT_EQ(c.v[1], 0x94fdccebu);
  EXPECT_EQ(c.v[2], 0x5001e420u);
  EXPECT_EQ(c.v[3], 0x24126ea1u);
}

/// int_{-1}^{1} x^k sqrt(1 - x^2) exp(alpha x) dx, by x = cos(theta) and the trapezoid rule
/// (the integrand is smooth and periodic in theta, so the rule converges exponentially).
double su2_moment(int k, double alpha) {
  const int n = 4096;
  double s = 0;
  for (int i = 0; i < n; ++i) {
    const double t = M_PI * (i + 0.5) / n, x = std::cos(t);
    s += std::pow(x, k) * std::sin(t) * std::sin(t) * std::exp(alpha * x);
  }
  return s * M_PI / n;
}

TEST(Su2HeatBath, MomentsOfX0AndDirectionMatchTheExactDistribution) {
  // Both samplers (Creutz below alpha 1.7, Kennedy-Pendleton above) and alpha = 0 (Haar).
  for (double alpha : {0.0, 0.4, 1.6, 1.8, 5.0, 40.0}) {
    const int n = 40000;
    double m1 = 0, m2 = 0, d[3] = {0, 0, 0}, d2[3] = {0, 0, 0};
    for (int i = 0; i < n; ++i) {
      const CounterRng rng{{12345u, 678u}, {static_cast<std::uint32_t>(i), 7u, 0u}};
      gauge::M2 x;
      ASSERT_TRUE(gauge::su2_heatbath(alpha, rng, 0, gauge::draw_direction, x));
      const double x0 = x.a.re, xs[3] = {x.b.im, x.b.re, x.a.im};
      m1 += x0;
      m2 += x0 * x0;
      for (int k = 0; k < 3; ++k) {
        d[k] += xs[k];
        d2[k] += xs[k] * xs[k];
      }
      // An SU(2) matrix: unit quaternion.
      ASSERT_NEAR(x0 * x0 + xs[0] * xs[0] + xs[1] * xs[1] + xs[2] * xs[2], 1.0, 1e-12);
    }
    m1 /= n;
    m2 /= n;
    const double z = su2_moment(0, alpha), e1 = su2_moment(1, alpha) / z, e2 = su2_moment(2, alpha) / z;
    if (alpha > 0) EXPECT_NEAR(e1, std::cyl_bessel_i(2, alpha) / std::cyl_bessel_i(1, alpha), 1e-10) << alpha;
    const double s1 = std::sqrt((e2 - e1 * e1) / n);
    EXPECT_NEAR(m1, e1, 5 * s1) << "alpha " << alpha;
    EXPECT_NEAR(m2, e2, 5 * std::sqrt((su2_moment(4, alpha) / z - e2 * e2) / n)) << "alpha " << alpha;
    for (int k = 0; k < 3; ++k) {  // isotropic: <x_k> = 0, <x_k^2> = (1 - <x0^2>) / 3
      EXPECT_NEAR(d[k] / n, 0.0, 5 * std::sqrt((1 - e2) / 3 / n)) << "alpha " << alpha;
      EXPECT_NEAR(d2[k] / n, (1 - e2) / 3, 0.01) << "alpha " << alpha;
    }
  }
}

TEST(Su3Update, OverRelaxationKeepsTheLocalActionAndIsItsOwnInverseInOneSubgroup) {
  Complex<double> u[9], a[9];
  random_su3(5, 1, -1.0, u);
  random_su3(5, 2, -1.0, a);
  M3 U, A;
  for (int k = 0; k < 9; ++k) {
    U.e[k / 3][k % 3] = u[k];
    A.e[k / 3][k % 3] = 2.5 * a[k];
  }
  M3 V = U;
  gauge::overrelax_link(V, A);
  EXPECT_NEAR(re_tr(U * A), re_tr(V * A), 1e-13);
  EXPECT_GT(std::fabs(V.e[0][0].re - U.e[0][0].re) + std::fabs(V.e[1][2].im - U.e[1][2].im), 1e-3);
  EXPECT_LT(gauge::unitarity_deviation(V), 1e-14);
}

// ---------------------------------------------------------------------------------------
// Observables

/// Naive host observables over a whole lattice on one rank (periodic neighbours by index).
GaugeObservables host_observables(const Coords& L, const std::vector<Complex<double>>& h) {
  auto site = [&](Coords c) {
    for (int d = 0; d < 4; ++d) c[d] = (c[d] % L[d] + L[d]) % L[d];
    return lex_site(c, L);
  };
  GaugeObservables o;
  double ps = 0, pt = 0, tr = 0;
  Complex<double> poly;
  const long V = static_cast<long>(L[0]) * L[1] * L[2] * L[3];
  Coords c;
  for (c[3] = 0; c[3] < L[3]; ++c[3])
    for (c[2] = 0; c[2] < L[2]; ++c[2])
      for (c[1] = 0; c[1] < L[1]; ++c[1])
        for (c[0] = 0; c[0] < L[0]; ++c[0]) {
          const std::size_t x = site(c);
          for (int mu = 0; mu < 4; ++mu) {
            tr += re_tr(link_of(h, x, mu));
            for (int nu = mu + 1; nu < 4; ++nu) {
              Coords cm = c, cn = c;
              ++cm[mu];
              ++cn[nu];
              const M3 p = link_of(h, x, mu) * link_of(h, site(cm), nu) * adjoint(link_of(h, site(cn), mu)) *
                           adjoint(link_of(h, x, nu));
              (nu < 3 ? ps : pt) += re_tr(p);
            }
          }
          if (c[3] == 0) {
            M3 p = link_of(h, x, 3);
            for (int t = 1; t < L[3]; ++t) {
              Coords ct = c;
              ct[3] = t;
              p = p * link_of(h, site(ct), 3);
            }
            poly += (p.e[0][0] + p.e[1][1] + p.e[2][2]);
          }
        }
  o.plaquette_spatial = ps / (9.0 * V);
  o.plaquette_temporal = pt / (9.0 * V);
  o.plaquette = (ps + pt) / (18.0 * V);
  o.link_trace = tr / (12.0 * V);
  const double vs = static_cast<double>(V) / L[3];
  o.polyakov = Complex<double>(poly.re / (3 * vs), poly.im / (3 * vs));
  o.unitarity = su3_deviation(h);
  return o;
}

class Observables : public ::testing::TestWithParam<Backend> {};

TEST_P(Observables, MatchANaiveHostComputation) {
  activate_backend(GetParam());
  const Coords dims{4, 6, 2, 8};
  Lattice lat(MPI_COMM_SELF, dims);
  const std::vector<Complex<double>> links = random_gauge(lat, 99, 0.7);  // far from 1, not too random
  const GaugeObservables o = measure_gauge(lat, links, GetParam()), r = host_observables(dims, links);
  EXPECT_NEAR(o.plaquette, r.plaquette, 1e-13);
  EXPECT_NEAR(o.plaquette_spatial, r.plaquette_spatial, 1e-13);
  EXPECT_NEAR(o.plaquette_temporal, r.plaquette_temporal, 1e-13);
  EXPECT_NEAR(o.link_trace, r.link_trace, 1e-13);
  EXPECT_NEAR(o.polyakov.re, r.polyakov.re, 1e-13);
  EXPECT_NEAR(o.polyakov.im, r.polyakov.im, 1e-13);
  EXPECT_NEAR(o.unitarity, r.unitarity, 1e-15);
  EXPECT_GT(std::fabs(o.plaquette_spatial - o.plaquette_temporal), 1e-4);  // the split is tested
}

TEST_P(Observables, PlaquetteAndPolyakovLoopAreGaugeInvariant) {
  activate_backend(GetParam());
  Lattice lat(MPI_COMM_SELF, {4, 4, 6, 6});
  const std::vector<Complex<double>> links = random_gauge(lat, 3, 0.5);
  std::vector<Complex<double>> g(lat.volume() * 9), t(links.size());
  for (long s = 0; s < lat.volume(); ++s) {
    Complex<double> m[9];
    random_su3(17, s, -1.0, m);
    std::copy(m, m + 9, g.begin() + s * 9);
  }
  auto gm = [&](long s) {
    M3 m;
    for (int k = 0; k < 9; ++k) m.e[k / 3][k % 3] = g[s * 9 + k];
    return m;
  };
  for (long s = 0; s < lat.volume(); ++s)
    for (int mu = 0; mu < 4; ++mu) {
      Coords c = lat.coords_of(s);
      c[mu] = (c[mu] + 1) % lat.local()[mu];
      const M3 v = gm(s) * link_of(links, s, mu) * adjoint(gm(lex_site(c, lat.local())));
      for (int k = 0; k < 9; ++k) t[lex_gauge_index(s, mu, k / 3, k % 3)] = v.e[k / 3][k % 3];
    }
  const GaugeObservables a = measure_gauge(lat, links, GetParam()), b = measure_gauge(lat, t, GetParam());
  EXPECT_NEAR(a.plaquette, b.plaquette, 1e-13);
  EXPECT_NEAR(a.plaquette_spatial, b.plaquette_spatial, 1e-13);
  EXPECT_NEAR(a.polyakov.re, b.polyakov.re, 1e-13);
  EXPECT_NEAR(a.polyakov.im, b.polyakov.im, 1e-13);
  EXPECT_GT(std::fabs(a.link_trace - b.link_trace), 1e-3);  // not invariant: the test can fail
}

TEST_P(Observables, ColdStartIsTheUnitField) {
  auto lat = std::make_shared<Lattice>(MPI_COMM_SELF, Coords{4, 4, 4, 4});
  QuenchedGenerator gen(lat, GetParam(), HeatbathParam{});
  const GaugeObservables o = gen.measure();
  EXPECT_EQ(o.plaquette, 1.0);
  EXPECT_EQ(o.link_trace, 1.0);
  EXPECT_EQ(o.polyakov.re, 1.0);
  EXPECT_EQ(o.unitarity, 0.0);
  EXPECT_EQ(gen.action(), 0.0);
}

TEST_P(Observables, LinksThatAreNotFiniteAreNotUnitary) {
  // fmax drops NaN: a NaN link once measured as unitarity deviation 0 (issue 36).
  activate_backend(GetParam());
  Lattice lat(MPI_COMM_SELF, {4, 4, 4, 4});
  std::vector<Complex<double>> links = random_gauge(lat, 5);
  EXPECT_LT(measure_gauge(lat, links, GetParam()).unitarity, 1e-14);
  for (double bad : {NAN, INFINITY}) {
    std::vector<Complex<double>> h = links;
    h[lex_gauge_index(77, 1, 2, 0)] = Complex<double>(0.1, bad);
    EXPECT_TRUE(std::isinf(measure_gauge(lat, h, GetParam()).unitarity)) << bad;
    EXPECT_TRUE(std::isinf(su3_deviation(h))) << bad;
    const Su3Deviation d = su3_link_deviation(&h[lex_gauge_index(77, 1, 0, 0)]);
    EXPECT_TRUE(std::isinf(d.unitarity) && std::isinf(d.det)) << bad;
  }
  // One link's parts: 2 U gives U U^dag - 1 = 3 and det - 1 = 7; 0 gives 1 and 1.
  Complex<double> u[9];
  for (int k = 0; k < 9; ++k) u[k] = 2.0 * links[k];
  Su3Deviation d = su3_link_deviation(u);
  EXPECT_NEAR(d.unitarity, 3.0, 1e-13);
  EXPECT_NEAR(d.det, 7.0, 1e-13);
  for (auto& z : u) z = Complex<double>();
  d = su3_link_deviation(u);
  EXPECT_EQ(d.unitarity, 1.0);
  EXPECT_EQ(d.det, 1.0);
}

INSTANTIATE_TEST_SUITE_P(Backends, Observables, ::testing::ValuesIn(available_backends()), backend_name);

// Links that are not finite can still reach the clover term (LatkeGaugeCreateFromArray takes
// any links): its error then says that the links are the cause, not the mass.
TEST(CloverTerm, SingularBecauseTheLinksAreNotFiniteSaysSo) {
  auto lat = std::make_shared<Lattice>(MPI_COMM_SELF, Coords{4, 4, 4, 4});
  CloverField a(lat, CloverParam{}), a_inv(lat, CloverParam{});
  std::vector<Complex<double>> links = random_gauge(*lat, 5);
  std::vector<Complex<double>> bent = links;
  bent[lex_gauge_index(9, 3, 1, 1)] = Complex<double>(NAN, 0.0);
  std::string e;
  try {
    wilson::build_clover(*lat, bent, 0.1, 1.0, 1.0, a, a_inv);
  } catch (const Error& x) {
    e = x.what();
  }
  EXPECT_NE(e.find("because the gauge links themselves are not finite: 1 link entries are NaN or infinite"),
            std::string::npos)
      << e;
  // Finite links at m = -4, c_sw = 0 (A = 0): the mass is the cause.
  e.clear();
  try {
    wilson::build_clover(*lat, links, -4.0, 0.0, 1.0, a, a_inv);
  } catch (const Error& x) {
    e = x.what();
  }
  EXPECT_NE(e.find("singular at 256 sites for mass -4 and c_sw 0: choose a mass further from the critical one"),
            std::string::npos)
      << e;
}

// ---------------------------------------------------------------------------------------
// The generator

class Generator : public ::testing::TestWithParam<Backend> {};

TEST_P(Generator, EveryUpdateKeepsLinksInSU3) {
  activate_backend(GetParam());
  auto lat = std::make_shared<Lattice>(MPI_COMM_SELF, Coords{4, 4, 4, 6});
  HeatbathParam p;
  p.beta = 5.7;
  p.seed = 11;
  QuenchedGenerator gen(lat, GetParam(), p);
  gen.start(GaugeStart::hot);
  // Over-relaxation keeps the action, so the plaquette may come back equal to the last bit (it
  // does on the GPU); the mean link trace is what every pass changes.
  double previous = gen.measure().link_trace;
  for (int pass = 0; pass < 8; ++pass) {
    if (pass % 4 == 0)
      gen.heatbath_pass();
    else
      gen.overrelax_pass();
    const GaugeObservables o = gen.measure();
    EXPECT_LT(o.unitarity, 1e-12) << "after pass " << pass;
    EXPECT_NE(o.link_trace, previous) << "pass " << pass << " changed nothing";
    previous = o.link_trace;
  }
  EXPECT_EQ(gen.heatbath_passes(), 2);
}

TEST_P(Generator, OverRelaxationLeavesTheActionUnchanged) {
  activate_backend(GetParam());
  auto lat = std::make_shared<Lattice>(MPI_COMM_SELF, Coords{4, 4, 6, 4});
  HeatbathParam p;
  p.beta = 5.7;
  p.overrelax = 0;
  QuenchedGenerator gen(lat, GetParam(), p);
  gen.start(GaugeStart::hot);
  gen.sweep(10);
  const double s0 = gen.action();
  const std::vector<Complex<double>> before = gen.links();
  gen.overrelax_pass();
  const double s1 = gen.action();
  const std::vector<Complex<double>> after = gen.links();
  EXPECT_LT(std::fabs(s1 - s0) / s0, 1e-12) << "S before " << s0 << ", after " << s1;
  double moved = 0;
  for (std::size_t i = 0; i < before.size(); ++i) moved = std::fmax(moved, std::sqrt(norm2(after[i] - before[i])));
  EXPECT_GT(moved, 0.1) << "over-relaxation must move the links, not only keep the action";
  gen.heatbath_pass();
  EXPECT_GT(std::fabs(gen.action() - s1) / s1, 1e-4) << "a heat-bath pass changes the action";
}

TEST_P(Generator, TheSeedDeterminesTheConfiguration) {
  activate_backend(GetParam());
  auto lat = std::make_shared<Lattice>(MPI_COMM_SELF, Coords{4, 4, 4, 4});
  HeatbathParam p;
  p.overrelax = 1;
  QuenchedGenerator a(lat, GetParam(), p), b(lat, GetParam(), p);
  p.seed = 2;
  QuenchedGenerator c(lat, GetParam(), p);
  for (QuenchedGenerator* g : {&a, &b, &c}) {
    g->start(GaugeStart::weak);
    g->sweep(2);
  }
  EXPECT_TRUE(identical(a.links(), b.links()));
  EXPECT_FALSE(identical(a.links(), c.links()));
  // Continuing from saved links and pass count is the same as not stopping.
  QuenchedGenerator d(lat, GetParam(), HeatbathParam{p.beta, 1, 1, 0.2});
  d.set_links(a.links(), a.heatbath_passes());
  a.sweep(1);
  d.sweep(1);
  EXPECT_TRUE(identical(a.links(), d.links()));
}

INSTANTIATE_TEST_SUITE_P(Backends, Generator, ::testing::ValuesIn(available_backends()), backend_name);

// ---------------------------------------------------------------------------------------
// Thermalized plaquettes

/// u(beta) = <Re tr U / 3> in the one-link measure exp(beta/3 Re tr U) dHaar(U) of SU(3),
/// by Weyl's integration formula over the eigenphases (theta1, theta2, -theta1-theta2) with
/// the trapezoid rule (periodic, smooth: converges exponentially).
double strong_coupling_u(double beta) {
  const int n = 128;
  double num = 0, den = 0;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      const double t[3] = {2 * M_PI * i / n, 2 * M_PI * j / n, -2 * M_PI * (i + j) / n};
      double vdm = 1;
      for (int a = 0; a < 3; ++a)
        for (int b = a + 1; b < 3; ++b) vdm *= 2 - 2 * std::cos(t[a] - t[b]);  // |e^ia - e^ib|^2
      const double c = (std::cos(t[0]) + std::cos(t[1]) + std::cos(t[2])) / 3;
      const double w = vdm * std::exp(beta * c);
      num += w * c;
      den += w;
    }
  return num / den;
}

struct ChainResult {
  SeriesStats stats;
};

ChainResult run_chain(Backend b, const Coords& dims, const HeatbathParam& p, GaugeStart start, int therm,
                      int measured) {
  auto lat = std::make_shared<Lattice>(MPI_COMM_SELF, dims);
  QuenchedGenerator gen(lat, b, p);
  gen.start(start);
  gen.sweep(therm);
  std::vector<double> plaq;
  for (int i = 0; i < measured; ++i) {
    gen.sweep(1);
    plaq.push_back(gen.measure().plaquette);
  }
  return {analyze_series(plaq)};
}

class Thermalized : public ::testing::TestWithParam<Backend> {};

TEST_P(Thermalized, StrongCouplingPlaquetteMatchesTheCharacterExpansion) {
  // Strong coupling: <P> = u + 4 u^5 + O(u^6), with u = u(beta) the one-link average (the
  // four cubes on a plaquette give 4 u^5; at beta = 1, u = 0.0601 and 4 u^5 = 3e-6, far below
  // the statistical error). Finite-size effects need surfaces wrapping the 4^4 lattice: u^16.
  EXPECT_NEAR(strong_coupling_u(0.1), 0.1 / 18 + 0.01 / 216, 1e-8);  // u = beta/18 + beta^2/216 + ...
  activate_backend(GetParam());
  HeatbathParam p;
  p.beta = 1.0;
  p.overrelax = 1;
  p.seed = 2024;
  const ChainResult r = run_chain(GetParam(), {4, 4, 4, 4}, p, GaugeStart::hot, 50, 800);
  const double u = strong_coupling_u(p.beta), expected = u + 4 * std::pow(u, 5);
  const double sigma = r.stats.conservative_error;
  ASSERT_LT(sigma, 0.003) << "too few measurements for a test that can fail";
  EXPECT_NEAR(r.stats.mean, expected, 4 * sigma)
      << "beta 1: <P> = " << r.stats.mean << " +- " << sigma << ", strong coupling " << expected;
}

TEST_P(Thermalized, WeakCouplingPlaquetteMatchesPerturbationTheory) {
  // Weak coupling: 1 - <P> = 2/beta + 1.2208/beta^2 + O(beta^-3) in infinite volume (the
  // first coefficient is (N^2 - 1)/(4 beta) for SU(N)); on a periodic 4^4 lattice the
  // constant modes change the 1/beta term by O(1/(beta V)) ~ 2e-4 at beta = 40, the bound
  // allowed for here. (A long run, 3000 sweeps, gives 1 - <P> = 0.050730(18) against 0.050763.)
  activate_backend(GetParam());
  HeatbathParam p;
  p.beta = 40.0;
  p.overrelax = 2;
  p.seed = 77;
  const ChainResult r = run_chain(GetParam(), {4, 4, 4, 4}, p, GaugeStart::cold, 30, 200);
  const double expected = 2 / p.beta + 1.2208 / (p.beta * p.beta);
  EXPECT_NEAR(1 - r.stats.mean, expected, 3e-4 + 4 * r.stats.conservative_error)
      << "beta 40: 1 - <P> = " << 1 - r.stats.mean << " +- " << r.stats.conservative_error;
}

TEST_P(Thermalized, OverRelaxationDoesNotBiasThePlaquette) {
  // Heat bath alone and heat bath with over-relaxation sample the same distribution.
  activate_backend(GetParam());
  HeatbathParam p;
  p.beta = 5.7;
  p.seed = 5;
  p.overrelax = 0;
  const ChainResult hb = run_chain(GetParam(), {4, 4, 4, 4}, p, GaugeStart::hot, 40, 400);
  p.overrelax = 3;
  p.seed = 6;
  const ChainResult mixed = run_chain(GetParam(), {4, 4, 4, 4}, p, GaugeStart::cold, 40, 300);
  const double sigma = std::hypot(hb.stats.conservative_error, mixed.stats.conservative_error);
  ASSERT_LT(sigma, 0.003);
  EXPECT_NEAR(hb.stats.mean, mixed.stats.mean, 4 * sigma)
      << "heat bath " << hb.stats.mean << ", with over-relaxation " << mixed.stats.mean;
}

INSTANTIATE_TEST_SUITE_P(Backends, Thermalized, ::testing::ValuesIn(available_backends()), backend_name);

TEST(Thermalized, CpuAndCudaAgreeStatistically) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device: nothing to compare the CPU with";
  HeatbathParam p;
  p.beta = 5.7;
  p.overrelax = 2;
  ChainResult r[2];
  for (int k = 0; k < 2; ++k) {
    const Backend b = k == 0 ? Backend::cpu : Backend::cuda;
    activate_backend(b);
    r[k] = run_chain(b, {4, 4, 4, 4}, p, GaugeStart::hot, 50, 400);
  }
  const double sigma = std::hypot(r[0].stats.conservative_error, r[1].stats.conservative_error);
  EXPECT_NEAR(r[0].stats.mean, r[1].stats.mean, 4 * sigma);
}

TEST(Thermalized, CachedConfigurationIsWrittenOnceAndReadBack) {
  const std::string dir = std::filesystem::temp_directory_path() / ("latke-gauge-cache-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  auto lat = std::make_shared<Lattice>(MPI_COMM_SELF, Coords{4, 4, 4, 4});
  HeatbathParam p;
  p.beta = 5.8;
  p.overrelax = 1;
  bool loaded = true;
  const auto made = thermalized_configuration(lat, Backend::cpu, p, 3, dir, &loaded);
  EXPECT_FALSE(loaded);
  EXPECT_TRUE(std::filesystem::exists(dir + "/" + thermalized_cache_name(lat->global(), p, 3, Backend::cpu)));
  const auto again = thermalized_configuration(lat, Backend::cpu, p, 3, dir, &loaded);
  EXPECT_TRUE(loaded);
  EXPECT_TRUE(identical(made, again));
  EXPECT_TRUE(identical(thermalized_configuration(lat, Backend::cpu, p, 3, ""), made));  // no cache: the same chain
  std::filesystem::remove_all(dir);
}

// Progress reports split the sweeps into chunks; the chain is the same configuration.
TEST(Thermalized, ProgressReportsLeaveTheConfigurationAsItIs) {
  auto lat = std::make_shared<Lattice>(MPI_COMM_SELF, Coords{4, 4, 4, 4});
  HeatbathParam p;
  p.overrelax = 1;
  std::vector<int> heard;
  const auto with = thermalized_configuration(lat, Backend::cpu, p, 12, "", nullptr, [&](int done, int total) {
    EXPECT_EQ(total, 12);
    heard.push_back(done);
  });
  EXPECT_EQ(heard, (std::vector<int>{2, 4, 6, 8, 10, 12}));
  EXPECT_TRUE(identical(with, thermalized_configuration(lat, Backend::cpu, p, 12, "")));
}

// ---------------------------------------------------------------------------------------
// Time-series statistics

TEST(Autocorrelation, IntegratedTimeOfAnAutoregressiveProcess) {
  // x_{i+1} = rho x_i + sqrt(1 - rho^2) eta_i has rho(t) = rho^t and
  // tau_int = (1 + rho) / (2 (1 - rho)).
  for (double rho : {0.0, 0.8}) {
    const int n = 200000;
    std::vector<double> x(n);
    double v = 0;
    for (int i = 0; i < n; ++i) {
      double u[4];
      CounterRng{{1u, 2u}, {static_cast<std::uint32_t>(i), 0u, 0u}}.draw(0, u);
      const double eta = std::sqrt(-2 * std::log(u[0])) * std::cos(2 * M_PI * u[1]);
      v = rho * v + std::sqrt(1 - rho * rho) * eta;
      x[i] = 0.25 + v;
    }
    const SeriesStats s = analyze_series(x);
    const double tau = (1 + rho) / (2 * (1 - rho));
    EXPECT_NEAR(s.tau_int, tau, 3 * s.tau_int_error + 0.02) << "rho " << rho;
    EXPECT_NEAR(s.error, std::sqrt(2 * tau / n), 0.1 * std::sqrt(2 * tau / n)) << "rho " << rho;
    EXPECT_NEAR(s.mean, 0.25, 4 * s.error);
    EXPECT_GE(s.conservative_error, s.error);
  }
  EXPECT_THROW(analyze_series({1.0}), Error);
}

// ---------------------------------------------------------------------------------------
// Fourier transforms on the local lattice (the gauge fixing's)

class LocalFourier : public ::testing::TestWithParam<Backend> {};

// Every radix (4, 2, 3, 5 unrolled; 7 by the loop) against the defining sum, along each
// dimension, over chosen dimensions together, and forward then inverse is N times the identity.
TEST_P(LocalFourier, MatchesTheDefiningSumForEveryRadix) {
  activate_backend(GetParam());
  const Lattice lat(MPI_COMM_SELF, {12, 10, 14, 8});
  const long V = lat.volume();
  const int L[4] = {12, 10, 14, 8};
  constexpr int ncomp = 2;
  std::vector<Complex<double>> host(ncomp * V);
  for (long i = 0; i < ncomp * V; ++i) host[i] = Complex<double>(std::sin(0.37 * i + 0.1), std::cos(1.13 * i * i));
  const std::size_t bytes = host.size() * sizeof(Complex<double>);
  Buffer dev(memory_for(GetParam()), bytes);
  auto* d = static_cast<Complex<double>*>(dev.data());
  // The reference: the defining sums, one dimension after the other, on the host.
  auto reference = [&](unsigned dims, int sign) {
    std::vector<Complex<double>> a = host;
    long stride = 1;
    for (int mu = 0; mu < 4; ++mu) {
      if (dims >> mu & 1u) {
        std::vector<Complex<double>> b(a.size());
        for (long i = 0; i < ncomp * V; ++i) {
          const int k = static_cast<int>(i / stride % L[mu]);
          const long base = i - k * stride;
          Complex<double> acc;
          for (int x = 0; x < L[mu]; ++x) {
            const double ph = sign * 2 * M_PI * static_cast<double>(k * x % L[mu]) / L[mu];
            acc += a[base + x * stride] * Complex<double>(std::cos(ph), std::sin(ph));
          }
          b[i] = acc;
        }
        a = b;
      }
      stride *= L[mu];
    }
    return a;
  };
  for (unsigned dims : {0x1u, 0x2u, 0x4u, 0x8u, 0x7u, 0xFu}) {
    LatticeFFT fft(lat, GetParam(), dims, ncomp);
    for (int sign : {-1, 1}) {
      copy_bytes(d, host.data(), bytes, compute_stream());
      sign < 0 ? fft.forward(d) : fft.inverse(d);
      std::vector<Complex<double>> got(host.size());
      copy_bytes(got.data(), d, bytes, compute_stream());
      synchronize(GetParam());
      const std::vector<Complex<double>> want = reference(dims, sign);
      double err = 0, size = 0;
      for (std::size_t i = 0; i < got.size(); ++i) {
        err = std::max(err, std::sqrt(norm2(got[i] - want[i])));
        size = std::max(size, std::sqrt(norm2(want[i])));
      }
      EXPECT_LT(err, 1e-12 * size) << "dimensions " << dims << " sign " << sign;
    }
    copy_bytes(d, host.data(), bytes, compute_stream());
    fft.forward(d);
    fft.inverse(d);
    std::vector<Complex<double>> back(host.size());
    copy_bytes(back.data(), d, bytes, compute_stream());
    synchronize(GetParam());
    double n = 1;
    for (int mu = 0; mu < 4; ++mu)
      if (dims >> mu & 1u) n *= L[mu];
    double err = 0;
    for (std::size_t i = 0; i < back.size(); ++i) err = std::max(err, std::sqrt(norm2(back[i] * (1 / n) - host[i])));
    EXPECT_LT(err, 1e-13) << "dimensions " << dims;
  }
}

TEST(LocalFourierErrors, LargePrimesAreNamed) {
  EXPECT_EQ(LatticeFFT::radices(96), (std::vector<int>{4, 4, 2, 3}));
  EXPECT_EQ(LatticeFFT::radices(26), (std::vector<int>{2, 13}));
  EXPECT_TRUE(LatticeFFT::radices(34).empty());
  const Lattice odd(MPI_COMM_SELF, {34, 4, 4, 4});
  EXPECT_FALSE(LatticeFFT::supports(odd, 0x1u));
  EXPECT_TRUE(LatticeFFT::supports(odd, 0xEu));
  try {
    LatticeFFT(odd, Backend::cpu, 0xFu, 1);
    ADD_FAILURE() << "extent 34 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("extent 34"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, LocalFourier, ::testing::ValuesIn(available_backends()), backend_name);

}  // namespace
}  // namespace latke
