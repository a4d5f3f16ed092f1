// Tiers 2 and 3 for the Wilson-clover operator: every optimized form x precision x
// reconstruct x parity x dagger against the host reference, on every backend this machine
// has; then the identities (gamma_5-hermiticity, gauge covariance, clover inverse, even-odd
// pieces, an even-odd solve) on the optimized operator itself.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <complex>
#include <memory>
#include <tuple>

#include "latke/conventions.h"
#include "src/fields/random.h"
#include "tests/support/backends.h"
#include "tests/support/expect_error.h"
#include "tests/support/wilson_host.h"
#include "operators/wilson_clover/wilson_clover.h"

namespace latke {
namespace {

using test::available_backends;

using test::cvec;

cvec to_std(const std::vector<Complex<double>>& v) {
  cvec r(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) r[i] = {v[i].re, v[i].im};
  return r;
}
std::vector<Complex<double>> from_std(const cvec& v) {
  std::vector<Complex<double>> r(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) r[i] = {v[i].real(), v[i].imag()};
  return r;
}

double tolerance(Precision p) {
  switch (p) {
    case Precision::double_: return 1e-12;
    case Precision::single: return 3e-6;
    default: return 3e-3;
  }
}

/// A single-rank problem: lattice, random links, operator parameters, host reference.
struct Problem {
  std::shared_ptr<const Lattice> lat;
  std::vector<Complex<double>> links;
  reference::WilsonCloverParams ref;
  WilsonCloverParam param;
  std::unique_ptr<test::HostWilson> host;

  Problem(Backend b, Precision prec, Reconstruct r, Coords dims = {6, 4, 4, 8}, std::uint64_t seed = 1234) {
    activate_backend(b);
    lat = std::make_shared<Lattice>(MPI_COMM_SELF, dims);
    links = random_gauge(*lat, seed);
    param.mass = 0.1;
    param.csw = 1.1;
    param.boundary_phase = {Complex<double>(1), Complex<double>(1), Complex<double>(std::cos(0.3), std::sin(0.3)),
                            Complex<double>(-1)};
    param.precision = prec;
    param.reconstruct = r;
    param.backend = b;
    ref.dims = dims;
    ref.mass = param.mass;
    ref.csw = param.csw;
    for (int mu = 0; mu < 4; ++mu) ref.boundary_phase[mu] = {param.boundary_phase[mu].re, param.boundary_phase[mu].im};
    host = std::make_unique<test::HostWilson>(to_std(links), ref);
  }

  ColorSpinorField field(Subset s, Precision p) const {
    return ColorSpinorField(lat, SpinorParam{4, 3, p, s, param.backend});
  }
  /// A random field, and its host copy as the field holds it (after rounding to storage).
  ColorSpinorField random_field(Subset s, std::uint64_t seed, cvec& host_copy) const {
    ColorSpinorField f = field(s, param.precision);
    f.from_lexicographic(random_spinor(*lat, seed));
    std::vector<Complex<double>> h(lat->volume() * 12);
    f.to_lexicographic(h);
    host_copy = to_std(h);
    return f;
  }
  cvec download(const ColorSpinorField& f) const {
    std::vector<Complex<double>> h(lat->volume() * 12);
    f.to_lexicographic(h);
    return to_std(h);
  }
};

using Case = std::tuple<Backend, Precision, Reconstruct>;

class WilsonBackend : public ::testing::TestWithParam<Case> {};

std::string case_name(const ::testing::TestParamInfo<Case>& i) {
  return std::string(to_string(std::get<0>(i.param))) + "_" + to_string(std::get<1>(i.param)) + "_r" +
         to_string(std::get<2>(i.param));
}

TEST_P(WilsonBackend, FullOperatorMatchesReference) {
  const auto [b, prec, r] = GetParam();
  Problem pb(b, prec, r);
  WilsonCloverOperator op(pb.lat, pb.links, pb.param);
  for (bool dagger : {false, true}) {
    cvec x;
    ColorSpinorField in = pb.random_field(Subset::full, 7, x);
    ColorSpinorField out = pb.field(Subset::full, prec);
    op.apply(out, in, dagger);
    EXPECT_LT(test::rel_diff(pb.download(out), pb.host->full(x, dagger)), tolerance(prec)) << "dagger " << dagger;
  }
}

TEST_P(WilsonBackend, HoppingTermMatchesReference) {
  const auto [b, prec, r] = GetParam();
  Problem pb(b, prec, r);
  WilsonCloverOperator op(pb.lat, pb.links, pb.param);
  for (int p = 0; p < 2; ++p)
    for (bool dagger : {false, true}) {
      cvec x;
      ColorSpinorField in = pb.random_field(p == 0 ? Subset::odd : Subset::even, 11 + p, x);
      ColorSpinorField out = pb.field(p == 0 ? Subset::even : Subset::odd, prec);
      op.hopping(out, in, dagger);
      const cvec want = test::restrict_parity(pb.host->hop(x, dagger), p, pb.ref.dims);
      EXPECT_LT(test::rel_diff(test::restrict_parity(pb.download(out), p, pb.ref.dims), want), tolerance(prec))
          << "parity " << p << " dagger " << dagger;
    }
}

TEST_P(WilsonBackend, SchurOperatorsMatchReference) {
  const auto [b, prec, r] = GetParam();
  Problem pb(b, prec, r);
  WilsonCloverOperator op(pb.lat, pb.links, pb.param);
  for (SchurType type : {SchurType::asymmetric, SchurType::symmetric})
    for (int p = 0; p < 2; ++p)
      for (bool dagger : {false, true}) {
        const Subset s = p == 0 ? Subset::even : Subset::odd;
        cvec x;
        ColorSpinorField in = pb.random_field(s, 21 + p, x);
        ColorSpinorField out = pb.field(s, prec);
        op.apply_schur(out, in, type, dagger);
        const cvec want = pb.host->schur(x, p, type == SchurType::symmetric, dagger);
        EXPECT_LT(test::rel_diff(test::restrict_parity(pb.download(out), p, pb.ref.dims), want), tolerance(prec))
            << to_string(type) << " parity " << p << " dagger " << dagger;
      }
}

// The even-odd operator over a set of fields (one kernel per hopping term for all of them;
// 5 fields leave a warp's last lanes without a field): every field against the reference, in every precision. The
// domain-local form over a set equals its field-by-field application, and fields that are not a set made by make_set
// are refused.
TEST_P(WilsonBackend, SchurOperatorOverASetMatchesReference) {
  const auto [b, prec, r] = GetParam();
  Problem pb(b, prec, r);
  WilsonCloverOperator op(pb.lat, pb.links, pb.param);
  EXPECT_TRUE(op.applies_sets());
  constexpr int count = 5;
  for (SchurType type : {SchurType::asymmetric, SchurType::symmetric})
    for (int p = 0; p < 2; ++p) {
      const SpinorParam sp{4, 3, prec, p == 0 ? Subset::even : Subset::odd, b};
      std::vector<ColorSpinorField> in = ColorSpinorField::make_set(pb.lat, sp, count);
      std::vector<ColorSpinorField> out = ColorSpinorField::make_set(pb.lat, sp, count);
      std::vector<cvec> x(count);
      for (int k = 0; k < count; ++k) {
        ColorSpinorField full = pb.random_field(Subset::full, 61 + 7 * k + p, x[k]);
        in[k].copy_from(full.parity(p));
      }
      op.apply_schur_set(out, in, type);
      for (int k = 0; k < count; ++k) {
        cvec xk = test::restrict_parity(x[k], p, pb.ref.dims);
        const cvec want = pb.host->schur(xk, p, type == SchurType::symmetric, false);
        EXPECT_LT(test::rel_diff(test::restrict_parity(pb.download(out[k]), p, pb.ref.dims), want), tolerance(prec))
            << to_string(type) << " parity " << p << " field " << k;
      }
    }
  WilsonCloverParam lp = pb.param;
  lp.block = {2, 4, 2, 4};
  WilsonCloverOperator local(pb.lat, pb.links, lp);
  const SpinorParam sp{4, 3, prec, Subset::odd, b};
  std::vector<ColorSpinorField> in = ColorSpinorField::make_set(pb.lat, sp, count);
  std::vector<ColorSpinorField> out = ColorSpinorField::make_set(pb.lat, sp, count);
  for (int k = 0; k < count; ++k) {
    cvec unused;
    in[k].copy_from(pb.random_field(Subset::full, 91 + k, unused).parity(1));
  }
  local.apply_schur_set(out, in, SchurType::symmetric);
  for (int k = 0; k < count; ++k) {
    ColorSpinorField one = pb.field(Subset::odd, prec);
    local.apply_schur(one, in[k], SchurType::symmetric);
    EXPECT_LT(test::rel_diff(pb.download(out[k]), pb.download(one)), tolerance(prec)) << "domain-local field " << k;
  }
  std::vector<ColorSpinorField> swapped = {in[1], in[0]};  // separate allocations may lie end to end
  std::vector<ColorSpinorField> two(out.begin(), out.begin() + 2);
  test::expect_error([&] { op.apply_schur_set(two, swapped, SchurType::symmetric); }, "not a set made by make_set",
                     "a set's fields out of order");
}

// Half-precision sets with the hopping sums and A^-1 in FP16 pair arithmetic (two fields per
// Half2): 5 fields (three pairs, one per warp row; the last pair's second lane without a field),
// 8 (four pairs per warp) and 12 (two per warp). Every field against the reference to half
// arithmetic's accuracy, fields from 10^-16 to 10^6 in size alike (each is scaled into half's
// range), and not to FP32's: the pair arithmetic did run.
TEST_P(WilsonBackend, HalfPairSetMatchesReferenceToHalfArithmetic) {
  const auto [b, prec, r] = GetParam();
  if (prec != Precision::half) GTEST_SKIP() << "FP16 pairs are for half storage";
  Problem pb(b, prec, r);
  WilsonCloverParam pp = pb.param;
  pp.half_pairs = true;
  WilsonCloverOperator pairs(pb.lat, pb.links, pp), fp32(pb.lat, pb.links, pb.param);
  const double size[5] = {1.0, 1e-4, 1e-9, 1e-16, 1e6};
  for (int count : {5, 8, 12}) {
    for (SchurType type : {SchurType::asymmetric, SchurType::symmetric}) {
      for (int p = 0; p < 2; ++p) {
        const SpinorParam sp{4, 3, prec, p == 0 ? Subset::even : Subset::odd, b};
        std::vector<ColorSpinorField> in = ColorSpinorField::make_set(pb.lat, sp, count);
        std::vector<ColorSpinorField> out = ColorSpinorField::make_set(pb.lat, sp, count);
        std::vector<ColorSpinorField> out32 = ColorSpinorField::make_set(pb.lat, sp, count);
        std::vector<cvec> x(count);
        for (int k = 0; k < count; ++k) {
          std::vector<Complex<double>> v = random_spinor(*pb.lat, 161 + 7 * k + p);
          for (auto& z : v) z = Complex<double>(z.re * size[k % 5], z.im * size[k % 5]);
          ColorSpinorField full = pb.field(Subset::full, prec);
          full.from_lexicographic(v);
          x[k] = pb.download(full);
          in[k].copy_from(full.parity(p));
        }
        pairs.apply_schur_set(out, in, type);
        fp32.apply_schur_set(out32, in, type);
        for (int k = 0; k < count; ++k) {
          cvec xk = test::restrict_parity(x[k], p, pb.ref.dims);
          const cvec want = pb.host->schur(xk, p, type == SchurType::symmetric, false);
          const cvec got = test::restrict_parity(pb.download(out[k]), p, pb.ref.dims);
          const double err = test::rel_diff(got, want);
          EXPECT_LT(err, 2e-3) << to_string(type) << " parity " << p << " field " << k << " of " << count;
          EXPECT_GT(test::rel_diff(got, test::restrict_parity(pb.download(out32[k]), p, pb.ref.dims)), 1e-5)
              << to_string(type) << " parity " << p << " field " << k << " of " << count << ": as FP32 rounds, not half";
        }
      }
    }
  }
}

TEST_P(WilsonBackend, CloverTermMatchesReference) {
  const auto [b, prec, r] = GetParam();
  Problem pb(b, prec, r);
  WilsonCloverOperator op(pb.lat, pb.links, pb.param);
  for (bool inverse : {false, true}) {
    cvec x;
    ColorSpinorField in = pb.random_field(Subset::full, 31, x);
    ColorSpinorField out = pb.field(Subset::full, prec);
    op.clover(out, in, inverse);
    EXPECT_LT(test::rel_diff(pb.download(out), pb.host->site(x, inverse)), tolerance(prec)) << "inverse " << inverse;
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllForms, WilsonBackend,
    ::testing::Combine(::testing::ValuesIn(available_backends()),
                       ::testing::Values(Precision::double_, Precision::single, Precision::half),
                       ::testing::Values(Reconstruct::r18, Reconstruct::r12)),
    case_name);

// ---- identities, on the optimized operator -------------------------------------------------

class WilsonIdentity : public ::testing::TestWithParam<Backend> {};

TEST_P(WilsonIdentity, Gamma5Hermiticity) {
  Problem pb(GetParam(), Precision::double_, Reconstruct::r18);
  WilsonCloverOperator op(pb.lat, pb.links, pb.param);
  cvec hx, hy;
  ColorSpinorField x = pb.random_field(Subset::full, 41, hx), y = pb.random_field(Subset::full, 42, hy);
  ColorSpinorField my = pb.field(Subset::full, Precision::double_), mx = my.like(Precision::double_);
  ColorSpinorField g = my.like(Precision::double_);
  op.apply(my, y);
  apply_gamma5(g, my);
  op.apply(mx, x);
  apply_gamma5(my, mx);  // my := gamma5 M x
  const Complex<double> lhs = dot(x, g), rhs = dot(my, y);
  EXPECT_NEAR(lhs.re, rhs.re, 1e-10 * std::abs(lhs.re) + 1e-10);
  EXPECT_NEAR(lhs.im, rhs.im, 1e-10 * std::abs(lhs.re) + 1e-10);
  // <x, Mhat y> = <Mhat^dag x, y> for both even-odd forms.
  for (SchurType type : {SchurType::asymmetric, SchurType::symmetric}) {
    ColorSpinorField xe = x.parity(0), ye = y.parity(0);
    ColorSpinorField a = pb.field(Subset::even, Precision::double_), c = a.like(Precision::double_);
    op.apply_schur(a, ye, type, false);
    op.apply_schur(c, xe, type, true);
    const Complex<double> l = dot(xe, a), r = dot(c, ye);
    EXPECT_NEAR(l.re, r.re, 1e-10 * std::abs(l.re)) << to_string(type);
    EXPECT_NEAR(l.im, r.im, 1e-10 * std::abs(l.re)) << to_string(type);
  }
}

TEST_P(WilsonIdentity, GaugeCovariance) {
  Problem pb(GetParam(), Precision::double_, Reconstruct::r12);
  const long vol = pb.lat->volume();
  std::vector<Complex<double>> g(vol * 9), links2(pb.links.size());
  for (long s = 0; s < vol; ++s) {
    Complex<double> u[9];
    random_su3(99, s, -1.0, u);
    std::copy(u, u + 9, g.begin() + s * 9);
  }
  auto neighbour = [&](long s, int mu) {
    Coords c = pb.lat->coords_of(s);
    c[mu] = (c[mu] + 1) % pb.lat->local()[mu];
    return static_cast<long>(lex_site(c, pb.lat->local()));
  };
  auto mul = [](const Complex<double>* a, const Complex<double>* b, Complex<double>* c, bool adj_b) {
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) {
        Complex<double> s;
        for (int k = 0; k < 3; ++k) s += a[3 * i + k] * (adj_b ? conj(b[3 * j + k]) : b[3 * k + j]);
        c[3 * i + j] = s;
      }
  };
  for (long s = 0; s < vol; ++s)
    for (int mu = 0; mu < 4; ++mu) {
      Complex<double> t[9];
      mul(&g[s * 9], &pb.links[(s * 4 + mu) * 9], t, false);
      mul(t, &g[neighbour(s, mu) * 9], &links2[(s * 4 + mu) * 9], true);
    }
  WilsonCloverOperator op(pb.lat, pb.links, pb.param), op2(pb.lat, links2, pb.param);
  const std::vector<Complex<double>> psi = random_spinor(*pb.lat, 5);
  std::vector<Complex<double>> gpsi(psi.size());
  auto rotate = [&](const std::vector<Complex<double>>& v, std::vector<Complex<double>>& out) {
    for (long s = 0; s < vol; ++s)
      for (int sp = 0; sp < 4; ++sp)
        for (int i = 0; i < 3; ++i) {
          Complex<double> a;
          for (int j = 0; j < 3; ++j) a += g[s * 9 + 3 * i + j] * v[(s * 4 + sp) * 3 + j];
          out[(s * 4 + sp) * 3 + i] = a;
        }
  };
  rotate(psi, gpsi);
  ColorSpinorField in = pb.field(Subset::full, Precision::double_), in2 = in.like(Precision::double_);
  ColorSpinorField out = in.like(Precision::double_), out2 = in.like(Precision::double_);
  in.from_lexicographic(psi);
  in2.from_lexicographic(gpsi);
  op.apply(out, in);
  op2.apply(out2, in2);
  std::vector<Complex<double>> h1, h2, gh1(psi.size());
  out.to_lexicographic(h1);
  out2.to_lexicographic(h2);
  rotate(h1, gh1);
  EXPECT_LT(test::rel_diff(to_std(h2), to_std(gh1)), 1e-12);
}

TEST_P(WilsonIdentity, CloverInverseTimesClover) {
  for (Precision prec : {Precision::double_, Precision::single}) {
    Problem pb(GetParam(), prec, Reconstruct::r18);
    WilsonCloverOperator op(pb.lat, pb.links, pb.param);
    cvec x;
    ColorSpinorField in = pb.random_field(Subset::full, 51, x);
    ColorSpinorField a = pb.field(Subset::full, prec), b = a.like(prec);
    op.clover(a, in, false);
    op.clover(b, a, true);
    EXPECT_LT(test::rel_diff(pb.download(b), x), prec == Precision::double_ ? 1e-13 : 1e-5);
  }
}

// An operator made from another one (its clover terms converted on the backend, not built
// again) in single and half, with 12-real links (also from an operator that stores them so,
// which checked them for SU(3) already) and as a domain-local block operator, equals one built
// from the links; with another mass the clover terms are built for that mass.
TEST_P(WilsonIdentity, OperatorFromAnotherEqualsOneBuiltFromTheLinks) {
  Problem pb(GetParam(), Precision::double_, Reconstruct::r18);
  WilsonCloverOperator from(pb.lat, pb.links, pb.param);
  cvec x;
  ColorSpinorField in = pb.random_field(Subset::full, 61, x);
  WilsonCloverParam q12 = pb.param;
  q12.reconstruct = Reconstruct::r12;
  WilsonCloverOperator from12(pb.lat, pb.links, q12);  // links checked for SU(3) once, here
  auto check = [&](WilsonCloverParam q, const char* what, const WilsonCloverOperator& source) {
    SCOPED_TRACE(what);
    WilsonCloverOperator built(pb.lat, pb.links, q), made(source, pb.links, q);
    ColorSpinorField i = pb.field(Subset::full, q.precision), a = i.like(q.precision), b = i.like(q.precision);
    i.copy_from(in);
    built.apply(a, i);
    made.apply(b, i);
    EXPECT_EQ(test::rel_diff(pb.download(a), pb.download(b)), 0.0);
  };
  struct Case {
    Precision precision;
    Reconstruct reconstruct;
    std::array<int, 4> block;
    double mass;  ///< 0: pb's
    bool from_r12;
    const char* what;
  };
  const std::array<int, 4> none{0, 0, 0, 0};
  const Precision s = Precision::single, h = Precision::half;
  const Reconstruct r18 = Reconstruct::r18, r12 = Reconstruct::r12;
  for (const Case& c :
       {Case{s, r18, none, 0, false, "single"}, Case{h, r18, none, 0, false, "half"},
        Case{s, r12, none, 0, false, "single, links of 12 reals"},
        Case{s, r12, none, 0, true, "single, links of 12 reals, from an operator with links of 12 reals"},
        Case{h, r12, none, 0, true, "half, links of 12 reals, from an operator with links of 12 reals"},
        Case{s, r18, none, 0, true, "single, links of 18 reals (uploaded), from an operator with links of 12 reals"},
        Case{s, r12, {2, 2, 2, 4}, 0, false, "single, domain-local blocks"},
        Case{Precision::double_, r18, none, 0.3, false, "double, another mass"}}) {
    WilsonCloverParam q = pb.param;
    q.precision = c.precision;
    q.reconstruct = c.reconstruct;
    q.block = c.block;
    if (c.mass != 0) q.mass = c.mass;
    check(q, c.what, c.from_r12 ? from12 : from);
  }
}

TEST_P(WilsonIdentity, EvenOddPiecesSumToFullOperator) {
  Problem pb(GetParam(), Precision::double_, Reconstruct::r18);
  WilsonCloverOperator op(pb.lat, pb.links, pb.param);
  cvec hx;
  ColorSpinorField x = pb.random_field(Subset::full, 61, hx);
  ColorSpinorField full = pb.field(Subset::full, Precision::double_), sum = full.like(Precision::double_);
  op.apply(full, x);
  for (int p = 0; p < 2; ++p) {
    ColorSpinorField s = sum.parity(p), h = pb.field(p == 0 ? Subset::even : Subset::odd, Precision::double_);
    op.clover(s, x.parity(p), false);  // A_pp x_p
    op.hopping(h, x.parity(1 - p));    // D_pq x_q
    axpy(-0.5, h, s);
  }
  EXPECT_LT(test::rel_diff(pb.download(sum), pb.download(full)), 1e-14);
}

TEST_P(WilsonIdentity, KappaNormalisationIsTwoKappaTimesMass) {
  Problem pb(GetParam(), Precision::double_, Reconstruct::r12);
  WilsonCloverOperator op_m(pb.lat, pb.links, pb.param);
  WilsonCloverParam pk = pb.param;
  pk.normalisation = Normalisation::kappa;
  WilsonCloverOperator op_k(pb.lat, pb.links, pk);
  const double two_kappa = 2.0 / (2.0 * pb.param.mass + 8.0);
  EXPECT_DOUBLE_EQ(op_k.kappa(), two_kappa / 2);
  cvec hx;
  ColorSpinorField x = pb.random_field(Subset::full, 81, hx);
  ColorSpinorField a = pb.field(Subset::full, Precision::double_), b = a.like(Precision::double_);
  for (bool dagger : {false, true}) {
    op_m.apply(a, x, dagger);
    op_k.apply(b, x, dagger);
    axpy(-two_kappa, a, b);
    EXPECT_LT(std::sqrt(norm2(b) / norm2(a)) / two_kappa, 1e-13) << "full, dagger " << dagger;
    for (SchurType t : {SchurType::asymmetric, SchurType::symmetric}) {
      ColorSpinorField ae = a.parity(0), be = b.parity(0);
      op_m.apply_schur(ae, x.parity(0), t, dagger);
      op_k.apply_schur(be, x.parity(0), t, dagger);
      const double factor = t == SchurType::asymmetric ? two_kappa : 1.0;
      axpy(-factor, ae, be);
      EXPECT_LT(std::sqrt(norm2(be) / norm2(ae)) / factor, 1e-13) << to_string(t) << ", dagger " << dagger;
    }
  }
}

/// CG on Mhat^dag Mhat x = Mhat^dag bhat, then reconstruct: the full residual must be small.
TEST_P(WilsonIdentity, EvenOddSolveReconstructsFullSolution) {
  for (auto [type, norm] : {std::pair{SchurType::asymmetric, Normalisation::mass},
                            std::pair{SchurType::symmetric, Normalisation::mass},
                            std::pair{SchurType::asymmetric, Normalisation::kappa}}) {
    Problem pb(GetParam(), Precision::double_, Reconstruct::r12);
    pb.param.mass = 0.5;
    pb.param.normalisation = norm;
    WilsonCloverOperator op(pb.lat, pb.links, pb.param);
    cvec hb;
    ColorSpinorField b = pb.random_field(Subset::full, 71, hb);
    ColorSpinorField bhat = pb.field(Subset::even, Precision::double_);
    op.prepare_source(bhat, b, type);
    ColorSpinorField rhs = bhat.like(Precision::double_), x = bhat.like(Precision::double_);
    op.apply_schur(rhs, bhat, type, true);
    ColorSpinorField r = rhs.like(Precision::double_), p = rhs.like(Precision::double_);
    ColorSpinorField t = rhs.like(Precision::double_), ap = rhs.like(Precision::double_);
    r.copy_from(rhs);
    p.copy_from(rhs);
    double rr = norm2(r);
    const double stop = 1e-26 * norm2(rhs);
    int it = 0;
    for (; it < 2000 && rr > stop; ++it) {
      op.apply_schur(t, p, type, false);
      op.apply_schur(ap, t, type, true);
      const double alpha = rr / dot(p, ap).re;
      axpy(alpha, p, x);
      axpy(-alpha, ap, r);
      const double rr_new = norm2(r);
      xpay(r, rr_new / rr, p);
      rr = rr_new;
    }
    ASSERT_LE(rr, stop) << "CG did not converge in " << it << " iterations";
    ColorSpinorField sol = pb.field(Subset::full, Precision::double_), mx = sol.like(Precision::double_);
    op.reconstruct(sol, x, b);
    op.apply(mx, sol);
    axpy(-1.0, b, mx);
    EXPECT_LT(std::sqrt(norm2(mx) / norm2(b)), 1e-10) << to_string(type) << ", " << to_string(norm);
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, WilsonIdentity, ::testing::ValuesIn(available_backends()),
                         [](const ::testing::TestParamInfo<Backend>& i) { return std::string(to_string(i.param)); });

}  // namespace
}  // namespace latke
