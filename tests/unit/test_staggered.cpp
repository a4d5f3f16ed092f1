// Tiers 2 and 3 for the staggered operators: every optimized form x precision x link storage
// x parity x dagger against the host reference, on every backend this machine has; then the
// identities (anti-hermiticity, the normal operator's hermiticity and positivity, gauge
// covariance, even-odd pieces, an even-odd solve), asqtad fattening against the reference
// and against hand-computed values, MILC links, and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <map>
#include <memory>
#include <tuple>

#include "latke/conventions.h"
#include "src/core/error.h"
#include "src/fields/random.h"
#include "operators/staggered/staggered.h"
#include "tests/support/staggered_host.h"
#include "tests/support/backends.h"

namespace latke {
namespace {

using test::available_backends;
using test::error_of;

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
    case Precision::double_:
      return 1e-12;
    case Precision::single:
      return 3e-6;
    default:
      return 3e-3;
  }
}

reference::FatteningCoefficients reference_coefficients(const AsqtadCoefficients& c) {
  reference::FatteningCoefficients r;
  r.one_link = c.one_link;
  r.three_staple = c.three_staple;
  r.five_staple = c.five_staple;
  r.seven_staple = c.seven_staple;
  r.lepage = c.lepage;
  r.naik = c.naik;
  return r;
}

/// A single-rank problem: lattice, random thin links, operator parameters, host reference
/// (the reference's fat links computed once per lattice and kind, as they are slow to make).
struct Problem {
  std::shared_ptr<const Lattice> lat;
  std::vector<Complex<double>> thin;
  StaggeredParam param;
  reference::StaggeredParams ref;
  std::shared_ptr<test::HostStaggered> host;

  Problem(Backend b, Precision prec, StaggeredType type, Reconstruct r, Coords dims = {6, 4, 4, 8},
          std::uint64_t seed = 1234) {
    activate_backend(b);
    lat = std::make_shared<Lattice>(MPI_COMM_SELF, dims);
    thin = random_gauge(*lat, seed);
    param.mass = 0.07;
    param.type = type;
    param.u0 = 0.9;
    param.boundary_phase = {Complex<double>(1), Complex<double>(1), Complex<double>(std::cos(0.3), std::sin(0.3)),
                            Complex<double>(-1)};
    param.precision = prec;
    param.reconstruct = r;
    param.backend = b;
    ref.dims = dims;
    ref.mass = param.mass;
    ref.improved = type == StaggeredType::asqtad;
    for (int mu = 0; mu < 4; ++mu) ref.boundary_phase[mu] = {param.boundary_phase[mu].re, param.boundary_phase[mu].im};
    static std::map<std::tuple<Coords, std::uint64_t, bool>, std::shared_ptr<test::HostStaggered>> cache;
    std::shared_ptr<test::HostStaggered>& h = cache[{dims, seed, ref.improved}];
    if (!h)
      h = std::make_shared<test::HostStaggered>(to_std(thin), ref,
                                                reference_coefficients(AsqtadCoefficients::asqtad(param.u0)));
    host = std::make_shared<test::HostStaggered>(h->fat(), h->lng(), ref);
  }

  /// The operator from these thin links (fattened once per lattice and backend kind: the
  /// fattening itself is tested on its own).
  std::unique_ptr<StaggeredOperator> op() const {
    static std::map<std::tuple<Coords, Backend>, StaggeredLinks> cache;
    if (param.type == StaggeredType::naive) return std::make_unique<StaggeredOperator>(lat, thin, param);
    StaggeredLinks& l = cache[{ref.dims, param.backend}];
    if (l.fat.empty()) l = asqtad_links(*lat, thin, AsqtadCoefficients::asqtad(param.u0), param.backend);
    return std::make_unique<StaggeredOperator>(lat, l, param);
  }

  void set_mass(double m) {
    param.mass = ref.mass = m;
    host = std::make_shared<test::HostStaggered>(host->fat(), host->lng(), ref);
  }

  ColorSpinorField field(Subset s, Precision p) const {
    return ColorSpinorField(lat, SpinorParam{1, 3, p, s, param.backend});
  }
  /// A random field, and its host copy as the field holds it (after rounding to storage).
  ColorSpinorField random_field(Subset s, std::uint64_t seed, cvec& host_copy) const {
    ColorSpinorField f = field(s, param.precision);
    f.from_lexicographic(random_spinor(*lat, seed, 1, 3));
    host_copy = download(f);
    if (s != Subset::full) host_copy = test::restrict_vector_parity(host_copy, s == Subset::even ? 0 : 1, ref.dims);
    return f;
  }
  cvec download(const ColorSpinorField& f) const {
    std::vector<Complex<double>> h(lat->volume() * 3);
    f.to_lexicographic(h);
    return to_std(h);
  }
  cvec download_parity(const ColorSpinorField& f, int p) const {
    return test::restrict_vector_parity(download(f), p, ref.dims);
  }
};

using Case = std::tuple<Backend, Precision, StaggeredType, Reconstruct>;

class StaggeredBackend : public ::testing::TestWithParam<Case> {};

std::string case_name(const ::testing::TestParamInfo<Case>& i) {
  return std::string(to_string(std::get<0>(i.param))) + "_" + to_string(std::get<1>(i.param)) + "_" +
         to_string(std::get<2>(i.param)) + "_r" + to_string(std::get<3>(i.param));
}

Subset subset_of(int p) { return p == 0 ? Subset::even : Subset::odd; }

TEST_P(StaggeredBackend, DslashMatchesReference) {
  const auto [b, prec, type, r] = GetParam();
  Problem pb(b, prec, type, r);
  const std::unique_ptr<StaggeredOperator> op_ptr = pb.op();
  StaggeredOperator& op = *op_ptr;
  for (int p = 0; p < 2; ++p)
    for (bool dagger : {false, true}) {
      cvec x;
      ColorSpinorField in = pb.random_field(subset_of(1 - p), 11 + p, x);
      ColorSpinorField out = pb.field(subset_of(p), prec);
      const double a = dagger ? -1.0 : 1.0;  // D^dag = -D
      op.dslash(out, in, a);
      cvec want = test::restrict_vector_parity(pb.host->dslash(x), p, pb.ref.dims);
      for (auto& z : want) z *= a;
      EXPECT_LT(test::rel_diff_vec(pb.download_parity(out, p), want), tolerance(prec))
          << "parity " << p << " dagger " << dagger;
    }
}

/// out = a D in + c x on each parity against the reference; in place (x = out) or not.
void expect_fused_xpay(const Problem& pb, StaggeredOperator& op, bool in_place, std::uint64_t seed) {
  const double a = 0.7, c = -1.3;
  for (int p = 0; p < 2; ++p) {
    cvec hin, hx;
    ColorSpinorField in = pb.random_field(subset_of(1 - p), seed + p, hin);
    ColorSpinorField x = pb.random_field(subset_of(p), seed + 2 + p, hx);
    ColorSpinorField sep = pb.field(subset_of(p), pb.param.precision);
    ColorSpinorField& out = in_place ? x : sep;
    op.dslash(out, in, a, &x, c);
    const cvec d = test::restrict_vector_parity(pb.host->dslash(hin), p, pb.ref.dims);
    cvec want(d.size());
    for (std::size_t i = 0; i < d.size(); ++i) want[i] = a * d[i] + c * hx[i];
    EXPECT_LT(test::rel_diff_vec(pb.download_parity(out, p), want), tolerance(pb.param.precision))
        << (in_place ? "in place, " : "") << "parity " << p;
  }
}

TEST_P(StaggeredBackend, FusedXpayMatchesReference) {
  const auto [b, prec, type, r] = GetParam();
  Problem pb(b, prec, type, r);
  expect_fused_xpay(pb, *pb.op(), false, 21);
}

// x = a D in + c x and the normal operator in place: the CUDA tuner must not time these by
// running them repeatedly. The lattice is one no other test uses, so that this is the first
// call of each kernel at its size, the call that would be timed.
TEST_P(StaggeredBackend, InPlaceXpayMatchesReference) {
  const auto [b, prec, type, r] = GetParam();
  Problem pb(b, prec, type, r, {4, 6, 4, 10});
  const std::unique_ptr<StaggeredOperator> op = pb.op();
  expect_fused_xpay(pb, *op, true, 51);
  for (int p = 0; p < 2; ++p) {
    cvec hy;
    ColorSpinorField y = pb.random_field(subset_of(p), 57 + p, hy);
    op->apply_normal(y, y);
    EXPECT_LT(test::rel_diff_vec(pb.download_parity(y, p), pb.host->normal(hy, p)), tolerance(prec))
        << "normal operator in place, parity " << p;
  }
}

TEST_P(StaggeredBackend, FullOperatorMatchesReference) {
  const auto [b, prec, type, r] = GetParam();
  Problem pb(b, prec, type, r);
  const std::unique_ptr<StaggeredOperator> op_ptr = pb.op();
  StaggeredOperator& op = *op_ptr;
  for (bool dagger : {false, true}) {
    cvec x;
    ColorSpinorField in = pb.random_field(Subset::full, 7, x);
    ColorSpinorField out = pb.field(Subset::full, prec);
    op.apply(out, in, dagger);
    EXPECT_LT(test::rel_diff_vec(pb.download(out), pb.host->full(x, dagger)), tolerance(prec)) << "dagger " << dagger;
  }
}

TEST_P(StaggeredBackend, NormalOperatorMatchesReference) {
  const auto [b, prec, type, r] = GetParam();
  Problem pb(b, prec, type, r);
  const std::unique_ptr<StaggeredOperator> op_ptr = pb.op();
  StaggeredOperator& op = *op_ptr;
  for (int p = 0; p < 2; ++p) {
    cvec x;
    ColorSpinorField in = pb.random_field(subset_of(p), 31 + p, x);
    ColorSpinorField out = pb.field(subset_of(p), prec);
    op.apply_normal(out, in);
    EXPECT_LT(test::rel_diff_vec(pb.download_parity(out, p), pb.host->normal(x, p)), tolerance(prec)) << "parity " << p;
  }
}

TEST_P(StaggeredBackend, PrepareSourceMatchesReference) {
  const auto [b, prec, type, r] = GetParam();
  Problem pb(b, prec, type, r);
  const std::unique_ptr<StaggeredOperator> op_ptr = pb.op();
  StaggeredOperator& op = *op_ptr;
  cvec hb;
  ColorSpinorField src = pb.random_field(Subset::full, 41, hb);
  for (int p = 0; p < 2; ++p) {
    ColorSpinorField bhat = pb.field(subset_of(p), prec);
    op.prepare_source(bhat, src);
    const cvec d = pb.host->dslash(test::restrict_vector_parity(hb, 1 - p, pb.ref.dims));
    cvec want(d.size());
    for (std::size_t i = 0; i < d.size(); ++i) want[i] = 2 * pb.param.mass * hb[i] - d[i];
    EXPECT_LT(test::rel_diff_vec(pb.download_parity(bhat, p), test::restrict_vector_parity(want, p, pb.ref.dims)),
              tolerance(prec))
        << "parity " << p;
  }
}

INSTANTIATE_TEST_SUITE_P(AllForms, StaggeredBackend,
                         ::testing::Combine(::testing::ValuesIn(available_backends()),
                                            ::testing::Values(Precision::double_, Precision::single, Precision::half),
                                            ::testing::Values(StaggeredType::naive, StaggeredType::asqtad),
                                            ::testing::Values(Reconstruct::r18, Reconstruct::r12)),
                         case_name);

// ---- identities, on the optimized operator -------------------------------------------------

class StaggeredIdentity : public ::testing::TestWithParam<Backend> {};

TEST_P(StaggeredIdentity, DIsAntiHermitian) {
  for (StaggeredType type : {StaggeredType::naive, StaggeredType::asqtad}) {
    Problem pb(GetParam(), Precision::double_, type, Reconstruct::r18);
    StaggeredOperator op(pb.lat, pb.thin, pb.param);
    cvec h;
    ColorSpinorField x = pb.random_field(Subset::full, 51, h), y = pb.random_field(Subset::full, 52, h);
    // <x_e, D y_o> = -<D x_e, y_o>
    ColorSpinorField dy = pb.field(Subset::even, Precision::double_), dx = pb.field(Subset::odd, Precision::double_);
    op.dslash(dy, y.parity(1));
    op.dslash(dx, x.parity(0));
    const Complex<double> l = dot(x.parity(0), dy), r = dot(dx, y.parity(1));
    EXPECT_LT(std::sqrt(norm2(l + r)), 1e-12 * std::sqrt(norm2(l))) << to_string(type);
    EXPECT_GT(std::sqrt(norm2(l - r)), 1e-3 * std::sqrt(norm2(l))) << to_string(type);
    // <x, M y> = <M^dag x, y>
    ColorSpinorField my = pb.field(Subset::full, Precision::double_), mdx = my.like(Precision::double_);
    op.apply(my, y);
    op.apply(mdx, x, true);
    const Complex<double> a = dot(x, my), c = dot(mdx, y);
    EXPECT_LT(std::sqrt(norm2(a - c)), 1e-12 * std::sqrt(norm2(a))) << to_string(type);
  }
}

TEST_P(StaggeredIdentity, NormalOperatorIsHermitianPositive) {
  Problem pb(GetParam(), Precision::double_, StaggeredType::asqtad, Reconstruct::r12);
  StaggeredOperator op(pb.lat, pb.thin, pb.param);
  cvec h;
  for (int p = 0; p < 2; ++p) {
    ColorSpinorField x = pb.random_field(subset_of(p), 61, h), y = pb.random_field(subset_of(p), 62, h);
    ColorSpinorField ax = pb.field(subset_of(p), Precision::double_), ay = ax.like(Precision::double_);
    op.apply_normal(ax, x);
    op.apply_normal(ay, y);
    const Complex<double> l = dot(y, ax), r = dot(ay, x);
    EXPECT_LT(std::sqrt(norm2(l - r)), 1e-12 * std::sqrt(norm2(l)));
    const Complex<double> xax = dot(x, ax);
    EXPECT_GT(xax.re, 4 * pb.param.mass * pb.param.mass * norm2(x));
    EXPECT_LT(std::fabs(xax.im), 1e-12 * xax.re);
  }
}

TEST_P(StaggeredIdentity, GaugeCovariance) {
  Problem pb(GetParam(), Precision::double_, StaggeredType::asqtad, Reconstruct::r12);
  const long vol = pb.lat->volume();
  std::vector<Complex<double>> g(vol * 9), thin2(pb.thin.size());
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
      mul(&g[s * 9], &pb.thin[(s * 4 + mu) * 9], t, false);
      mul(t, &g[neighbour(s, mu) * 9], &thin2[(s * 4 + mu) * 9], true);
    }
  StaggeredOperator op(pb.lat, pb.thin, pb.param), op2(pb.lat, thin2, pb.param);
  const std::vector<Complex<double>> psi = random_spinor(*pb.lat, 5, 1, 3);
  std::vector<Complex<double>> gpsi(psi.size());
  auto rotate = [&](const std::vector<Complex<double>>& v, std::vector<Complex<double>>& out) {
    for (long s = 0; s < vol; ++s)
      for (int i = 0; i < 3; ++i) {
        Complex<double> a;
        for (int j = 0; j < 3; ++j) a += g[s * 9 + 3 * i + j] * v[s * 3 + j];
        out[s * 3 + i] = a;
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
  EXPECT_LT(test::rel_diff_vec(to_std(h2), to_std(gh1)), 1e-12);
}

TEST_P(StaggeredIdentity, EvenOddPiecesSumToFullOperator) {
  Problem pb(GetParam(), Precision::double_, StaggeredType::asqtad, Reconstruct::r18);
  StaggeredOperator op(pb.lat, pb.thin, pb.param);
  cvec hx;
  ColorSpinorField x = pb.random_field(Subset::full, 71, hx);
  ColorSpinorField full = pb.field(Subset::full, Precision::double_), sum = full.like(Precision::double_);
  op.apply(full, x);
  for (int p = 0; p < 2; ++p) {
    ColorSpinorField s = sum.parity(p);
    op.dslash(s, x.parity(1 - p));            // D_pq x_q
    axpy(2 * pb.param.mass, x.parity(p), s);  // + 2m x_p
  }
  EXPECT_LT(test::rel_diff_vec(pb.download(sum), pb.download(full)), 1e-14);
}

/// CG on the normal operator, then reconstruct: the full residual must be small.
TEST_P(StaggeredIdentity, EvenOddSolveReconstructsFullSolution) {
  for (StaggeredType type : {StaggeredType::naive, StaggeredType::asqtad})
    for (int p = 0; p < 2; ++p) {
      Problem pb(GetParam(), Precision::double_, type, Reconstruct::r12);
      pb.set_mass(0.2);
      StaggeredOperator op(pb.lat, pb.thin, pb.param);
      cvec hb;
      ColorSpinorField b = pb.random_field(Subset::full, 81, hb);
      ColorSpinorField bhat = pb.field(subset_of(p), Precision::double_);
      op.prepare_source(bhat, b);
      ColorSpinorField x = bhat.like(Precision::double_), r = bhat.like(Precision::double_);
      ColorSpinorField d = bhat.like(Precision::double_), ad = bhat.like(Precision::double_);
      r.copy_from(bhat);
      d.copy_from(bhat);
      double rr = norm2(r);
      const double stop = 1e-26 * norm2(bhat);
      int it = 0;
      for (; it < 1000 && rr > stop; ++it) {
        op.apply_normal(ad, d);
        const double alpha = rr / dot(d, ad).re;
        axpy(alpha, d, x);
        axpy(-alpha, ad, r);
        const double rr_new = norm2(r);
        xpay(r, rr_new / rr, d);
        rr = rr_new;
      }
      ASSERT_LE(rr, stop) << "CG did not converge in " << it << " iterations";
      ColorSpinorField sol = pb.field(Subset::full, Precision::double_), mx = sol.like(Precision::double_);
      op.reconstruct(sol, x, b);
      op.apply(mx, sol);
      axpy(-1.0, b, mx);
      EXPECT_LT(std::sqrt(norm2(mx) / norm2(b)), 1e-10) << to_string(type) << " parity " << p;
      // The same equation for the reference operator.
      cvec mref = pb.host->full(pb.download(sol), false);
      EXPECT_LT(test::rel_diff_vec(mref, hb), 1e-10) << to_string(type) << " parity " << p;
    }
}

TEST_P(StaggeredIdentity, SetMassChangesOnlyTheMass) {
  Problem pb(GetParam(), Precision::double_, StaggeredType::naive, Reconstruct::r18);
  StaggeredOperator op(pb.lat, pb.thin, pb.param);
  cvec hx;
  ColorSpinorField x = pb.random_field(Subset::full, 91, hx);
  ColorSpinorField a = pb.field(Subset::full, Precision::double_), c = a.like(Precision::double_);
  op.apply(a, x);
  op.set_mass(pb.param.mass + 0.5);
  op.apply(c, x);
  axpy(-1.0, a, c);  // = 2 (0.5) x
  axpy(-1.0, x, c);
  EXPECT_LT(std::sqrt(norm2(c) / norm2(x)), 1e-14);
}

INSTANTIATE_TEST_SUITE_P(Backends, StaggeredIdentity, ::testing::ValuesIn(available_backends()),
                         [](const ::testing::TestParamInfo<Backend>& i) { return std::string(to_string(i.param)); });

// ---- links ------------------------------------------------------------------------------------

class StaggeredLinksTest : public ::testing::TestWithParam<Backend> {};

TEST_P(StaggeredLinksTest, FatteningMatchesReference) {
  Problem pb(GetParam(), Precision::double_, StaggeredType::asqtad, Reconstruct::r18, {4, 6, 4, 4});
  const StaggeredLinks l = asqtad_links(*pb.lat, pb.thin, AsqtadCoefficients::asqtad(pb.param.u0), GetParam());
  EXPECT_LT(test::rel_diff_vec(to_std(l.fat), pb.host->fat()), 1e-14);
  EXPECT_LT(test::rel_diff_vec(to_std(l.lng), pb.host->lng()), 1e-14);
  // Long links from SU(3) links are c X with X in SU(3): stored at 12 reals with c = -1/(24 u0^2).
  pb.param.reconstruct = Reconstruct::r12;
  StaggeredOperator op(pb.lat, l, pb.param);
  EXPECT_NEAR(op.long_link_scale(), -1.0 / (24 * pb.param.u0 * pb.param.u0), 1e-14);
}

// Unit links: V = 5/8 + 3/(8 u0^2) + 1/(8 u0^6) and W = -1/(24 u0^2) times the identity.
TEST_P(StaggeredLinksTest, FatteningUnitGauge) {
  activate_backend(GetParam());
  auto lat = std::make_shared<Lattice>(MPI_COMM_SELF, Coords{4, 4, 6, 4});
  const std::vector<Complex<double>> unit = random_gauge(*lat, 1, 0.0);
  for (double u0 : {1.0, 0.8}) {
    const StaggeredLinks l = asqtad_links(*lat, unit, AsqtadCoefficients::asqtad(u0), GetParam());
    const double v = 5.0 / 8 + 3.0 / (8 * u0 * u0) + 1.0 / (8 * std::pow(u0, 6)), w = -1.0 / (24 * u0 * u0);
    double worst = 0;
    for (std::size_t i = 0; i < l.fat.size(); ++i) {
      const double diag = (i % 9) % 4 == 0 ? 1.0 : 0.0;
      worst = std::fmax(worst, std::sqrt(norm2(l.fat[i] - Complex<double>(v * diag))));
      worst = std::fmax(worst, std::sqrt(norm2(l.lng[i] - Complex<double>(w * diag))));
    }
    EXPECT_LT(worst, 1e-14) << "u0 " << u0;
  }
}

// Links fattened MILC's way (eta and the boundary phase in the thin links, MILC's staple
// signs), then stripped, are Latke's links; and an operator from them is the same operator.
TEST_P(StaggeredLinksTest, MilcLinksStrippedOfPhases) {
  Problem pb(GetParam(), Precision::double_, StaggeredType::asqtad, Reconstruct::r18, {4, 4, 6, 8});
  const long vol = pb.lat->volume();
  std::vector<Complex<double>> milc_thin(pb.thin.size());
  for (long s = 0; s < vol; ++s) {
    const Coords x = pb.lat->coords_of(s);
    for (int mu = 0; mu < 4; ++mu) {
      Complex<double> f(staggered_phase(mu, x));
      if (x[mu] == pb.lat->global()[mu] - 1) f = f * pb.param.boundary_phase[mu];
      for (int k = 0; k < 9; ++k) milc_thin[(s * 4 + mu) * 9 + k] = f * pb.thin[(s * 4 + mu) * 9 + k];
    }
  }
  reference::FatteningCoefficients milc = reference_coefficients(AsqtadCoefficients::asqtad(pb.param.u0));
  milc.three_staple = -milc.three_staple;
  milc.seven_staple = -milc.seven_staple;
  cvec fat, lng;
  reference::fatten(fat, lng, to_std(milc_thin), pb.ref.dims, milc);
  StaggeredLinks l{from_std(fat), from_std(lng)};
  strip_milc_phases(*pb.lat, l.fat, pb.param.boundary_phase, 1);
  strip_milc_phases(*pb.lat, l.lng, pb.param.boundary_phase, 3);
  EXPECT_LT(test::rel_diff_vec(to_std(l.fat), pb.host->fat()), 1e-13);
  EXPECT_LT(test::rel_diff_vec(to_std(l.lng), pb.host->lng()), 1e-13);
  StaggeredOperator a(pb.lat, pb.thin, pb.param), b(pb.lat, l, pb.param);
  cvec h;
  ColorSpinorField x = pb.random_field(Subset::full, 3, h);
  ColorSpinorField ax = pb.field(Subset::full, Precision::double_), bx = ax.like(Precision::double_);
  a.apply(ax, x);
  b.apply(bx, x);
  EXPECT_LT(test::rel_diff_vec(pb.download(bx), pb.download(ax)), 1e-13);
}

INSTANTIATE_TEST_SUITE_P(Backends, StaggeredLinksTest, ::testing::ValuesIn(available_backends()),
                         [](const ::testing::TestParamInfo<Backend>& i) { return std::string(to_string(i.param)); });

// ---- bad input --------------------------------------------------------------------------------

TEST(StaggeredBadInput, ErrorsNameTheValue) {
  Problem pb(Backend::cpu, Precision::double_, StaggeredType::asqtad, Reconstruct::r18);
  auto build = [&](StaggeredParam p) { StaggeredOperator op(pb.lat, pb.thin, p); };
  StaggeredParam p = pb.param;
  p.mass = -0.1;
  EXPECT_NE(error_of([&] { build(p); }).find("staggered mass -0.1: expected a number >= 0"), std::string::npos);
  p.mass = std::nan("");
  EXPECT_NE(error_of([&] { build(p); }).find("staggered mass nan"), std::string::npos);
  p = pb.param;
  p.u0 = 0;
  EXPECT_NE(error_of([&] { build(p); }).find("tadpole factor u0 = 0"), std::string::npos);
  p = pb.param;
  p.boundary_phase[3] = Complex<double>(-2);
  EXPECT_NE(error_of([&] { build(p); }).find("expected modulus one"), std::string::npos);
  EXPECT_NE(error_of([] { parse_staggered_type("hisq"); }).find("unknown staggered operator 'hisq'"),
            std::string::npos);

  // Long links at 12 reals must be one real multiple of SU(3) matrices.
  StaggeredLinks l = asqtad_links(*pb.lat, pb.thin, AsqtadCoefficients::asqtad(1.0), Backend::cpu);
  l.lng[9 * 37 + 4] = l.lng[9 * 37 + 4] * 1.5;
  p = pb.param;
  p.reconstruct = Reconstruct::r12;
  EXPECT_NE(error_of([&] { StaggeredOperator op(pb.lat, l, p); }).find("use reconstruct 18"), std::string::npos);
  p.type = StaggeredType::naive;
  EXPECT_NE(error_of([&] { StaggeredOperator op(pb.lat, l, p); }).find("long links given"), std::string::npos);
  EXPECT_NE(error_of([&] {
              StaggeredOperator op(pb.lat, StaggeredLinks{l.fat, {}}, p);
            }).find("reconstruct 12 needs SU(3)"),
            std::string::npos);

  // Fields of the wrong shape; reconstruct at m = 0.
  StaggeredOperator op(pb.lat, pb.thin, pb.param);
  ColorSpinorField wilson(pb.lat, SpinorParam{4, 3, Precision::double_, Subset::even, Backend::cpu});
  ColorSpinorField odd = pb.field(Subset::odd, Precision::double_), even = pb.field(Subset::even, Precision::double_);
  EXPECT_NE(error_of([&] { op.dslash(wilson, odd); }).find("has 4 spins and 3 colors, expected 1 and 3"),
            std::string::npos);
  EXPECT_NE(error_of([&] { op.dslash(odd, odd); }).find("maps one parity to the other"), std::string::npos);
  op.set_mass(0);
  ColorSpinorField full = pb.field(Subset::full, Precision::double_), b = full.like(Precision::double_);
  EXPECT_NE(error_of([&] { op.reconstruct(full, even, b); }).find("needs a mass > 0"), std::string::npos);
  EXPECT_NE(error_of([&] { op.set_mass(-1); }).find("staggered mass -1"), std::string::npos);

  // The Naik term needs extents of at least 4.
  auto small = std::make_shared<Lattice>(MPI_COMM_SELF, Coords{4, 2, 4, 4});
  const std::vector<Complex<double>> links = random_gauge(*small, 1);
  EXPECT_NE(
      error_of([&] {
        StaggeredOperator o(small, links, pb.param);
      }).find("lattice extent 2 in dimension 1: the asqtad operator's three-hop Naik term needs extents of at least 4"),
      std::string::npos);
  p = pb.param;
  p.type = StaggeredType::naive;
  EXPECT_EQ(error_of([&] { StaggeredOperator o(small, links, p); }), "");  // naive is fine
}

}  // namespace
}  // namespace latke
