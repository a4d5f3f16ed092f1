// Latke's PETSc face for the staggered operators (MatCreateLatkeStaggered in latke.h): PETSc's
// CG on the normal operator, the reconstructed solution checked with the full operator and
// the host reference, adjoints, the matrix flags, links given or stripped of MILC's phases,
// options and bad input; MatLatkeSolveMultiMass with both strategies and its bad input. Runs
// on 1 rank and, with the same expectations, on 4 (where solutions are compared with
// single-rank ones).
#include <gtest/gtest.h>

#include <utility>
#include <petscksp.h>

#include <cmath>
#include <complex>
#include <cstdio>
#include <string>
#include <vector>

#include "src/core/petsc_compat.h"
#include "latke/conventions.h"
#include "latke/latke.h"
#include "petsc/mat_shell.h"
#include "operators/staggered/staggered.h"
#include "tests/support/staggered_host.h"

namespace {

using cvec = std::vector<std::complex<double>>;
const PetscInt dims[4] = {4, 4, 8, 8};  // 4 ranks: a 1x1x2x2 grid of 4^4 blocks
constexpr PetscInt gauge_seed = 9;

#define ASSERT_PETSC(call) ASSERT_EQ((call), 0) << #call

int world_size() {
  int n = 1;
  MPI_Comm_size(PETSC_COMM_WORLD, &n);
  return n;
}

LatkeGauge make_gauge(MPI_Comm comm) {
  LatkeGauge g = nullptr;
  const PetscInt one[4] = {1, 1, 1, 1}, grid[4] = {1, 1, 2, 2};
  const PetscInt* use = comm == PETSC_COMM_SELF || world_size() == 1 ? one : grid;
  EXPECT_EQ(LatkeGaugeCreateRandom(comm, dims, use, gauge_seed, -1.0, &g), 0);
  return g;
}

LatkeStaggeredParams params(LatkeStaggeredType type) {
  LatkeStaggeredParams p;
  LatkeStaggeredParamsDefault(&p);
  p.mass = 0.1;
  p.type = type;
  p.u0 = 0.9;
  return p;
}

cvec local_part(const cvec& whole, const latke::Lattice& lat, int ncomp) {
  cvec part(static_cast<std::size_t>(lat.volume()) * ncomp);
  for (long s = 0; s < lat.volume(); ++s) {
    const latke::Coords c = lat.coords_of(s);
    long g = 0;
    for (int mu = 3; mu >= 0; --mu) g = g * lat.global()[mu] + c[mu] + lat.offset()[mu];
    for (int k = 0; k < ncomp; ++k) part[s * ncomp + k] = whole[g * ncomp + k];
  }
  return part;
}

cvec get_lex(Mat A, Vec x, long volume) {
  std::vector<PetscScalar> a(static_cast<std::size_t>(volume) * 3);
  EXPECT_EQ(LatkeVecGetLexicographic(A, x, a.data()), 0);
  return cvec(a.begin(), a.end());
}

double rel(const cvec& a, const cvec& b) {
  double d = 0, n = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    d += std::norm(a[i] - b[i]);
    n += std::norm(b[i]);
  }
  double in[2] = {d, n}, out[2];
  MPI_Allreduce(in, out, 2, MPI_DOUBLE, MPI_SUM, PETSC_COMM_WORLD);
  return std::sqrt(out[0] / out[1]);
}

struct Solution {
  cvec x;           ///< full solution, this rank's sites, lexicographic
  double true_res;  ///< |b - M x| / |b| with Latke's full operator
  KSPConvergedReason reason;
  PetscInt its;
};

/// Solve M x = b (point source at the origin, color 2) with CG on the normal operator.
Solution solve(MPI_Comm comm, LatkeStaggeredType type, PetscInt parity) {
  Solution s{};
  LatkeGauge g = make_gauge(comm);
  Mat A, M;
  Vec x, b, xh, bh, r;
  KSP ksp;
  LatkeStaggeredParams p = params(type);
  p.parity = parity;
  EXPECT_EQ(MatCreateLatkeStaggered(g, LATKE_OPERATOR_EVEN_ODD, &p, nullptr, &A), 0);
  EXPECT_EQ(MatLatkeCreateCompanion(A, LATKE_OPERATOR_FULL, &M), 0);
  EXPECT_EQ(MatLatkeCreateFullVecs(A, &x, &b), 0);
  EXPECT_EQ(MatCreateVecs(A, &xh, &bh), 0);
  EXPECT_EQ(VecDuplicate(b, &r), 0);
  const PetscInt origin[4] = {0, 0, 0, 0};
  EXPECT_EQ(LatkeVecSetPointSource(A, b, origin, 0, 2), 0);
  EXPECT_EQ(MatLatkePrepareSource(A, b, bh), 0);
  EXPECT_EQ(KSPCreate(comm, &ksp), 0);
  EXPECT_EQ(KSPSetOperators(ksp, A, A), 0);
  EXPECT_EQ(KSPSetType(ksp, KSPCG), 0);
  PC pc;
  EXPECT_EQ(KSPGetPC(ksp, &pc), 0);
  EXPECT_EQ(PCSetType(pc, PCNONE), 0);
  EXPECT_EQ(KSPSetTolerances(ksp, 1e-12, 1e-30, PETSC_DEFAULT, 1000), 0);
  EXPECT_EQ(KSPSolve(ksp, bh, xh), 0);
  EXPECT_EQ(KSPGetConvergedReason(ksp, &s.reason), 0);
  EXPECT_EQ(KSPGetIterationNumber(ksp, &s.its), 0);
  EXPECT_EQ(MatLatkeReconstruct(A, xh, b, x), 0);
  EXPECT_EQ(MatMult(M, x, r), 0);
  EXPECT_EQ(VecAYPX(r, -1.0, b), 0);
  PetscReal rn, bn;
  EXPECT_EQ(VecNorm(r, NORM_2, &rn), 0);
  EXPECT_EQ(VecNorm(b, NORM_2, &bn), 0);
  s.true_res = rn / bn;
  s.x = get_lex(A, x, g->data->lattice->volume());
  KSPDestroy(&ksp);
  VecDestroy(&x), VecDestroy(&b), VecDestroy(&xh), VecDestroy(&bh), VecDestroy(&r);
  MatDestroy(&M), MatDestroy(&A);
  LatkeGaugeDestroy(&g);
  return s;
}

struct CgCase {
  LatkeStaggeredType type;
  PetscInt parity;
};

class PetscStaggeredCg : public ::testing::TestWithParam<CgCase> {};

// PETSc's CG converges on the normal operator; the reconstructed solution solves M x = b for
// the Eigen reference operator (1 rank) or equals the single-rank solution (4 ranks).
TEST_P(PetscStaggeredCg, ConvergesToTheSolution) {
  const CgCase c = GetParam();
  const Solution s = solve(PETSC_COMM_WORLD, c.type, c.parity);
  ASSERT_GT(s.reason, 0) << KSPConvergedReasons[s.reason];
  EXPECT_LT(s.true_res, 1e-10) << "after " << s.its << " iterations";
  if (world_size() == 1) {
    LatkeGauge g = make_gauge(PETSC_COMM_SELF);
    latke::reference::StaggeredParams rp;
    rp.dims = {4, 4, 8, 8};
    rp.mass = 0.1;
    rp.improved = c.type == LATKE_STAGGERED_ASQTAD;
    cvec thin(g->data->links.size());
    for (std::size_t i = 0; i < thin.size(); ++i) thin[i] = {g->data->links[i].re, g->data->links[i].im};
    const latke::AsqtadCoefficients ac = latke::AsqtadCoefficients::asqtad(0.9);
    latke::reference::FatteningCoefficients fc;
    fc.one_link = ac.one_link, fc.three_staple = ac.three_staple, fc.five_staple = ac.five_staple;
    fc.seven_staple = ac.seven_staple, fc.lepage = ac.lepage, fc.naik = ac.naik;
    const latke::test::HostStaggered host(thin, rp, fc);
    cvec b(s.x.size());
    b[2] = 1.0;
    EXPECT_LT(latke::test::rel_diff_vec(host.full(s.x, false), b), 1e-10);
    LatkeGaugeDestroy(&g);
  } else {
    LatkeGauge g = make_gauge(PETSC_COMM_WORLD);
    const Solution one = solve(PETSC_COMM_SELF, c.type, c.parity);
    EXPECT_LT(rel(s.x, local_part(one.x, *g->data->lattice, 3)), 1e-9);
    LatkeGaugeDestroy(&g);
  }
}

INSTANTIATE_TEST_SUITE_P(Staggered, PetscStaggeredCg,
                         ::testing::Values(CgCase{LATKE_STAGGERED_ASQTAD, 0}, CgCase{LATKE_STAGGERED_ASQTAD, 1},
                                           CgCase{LATKE_STAGGERED_NAIVE, 0}),
                         [](const ::testing::TestParamInfo<CgCase>& i) {
                           return std::string(i.param.type == LATKE_STAGGERED_ASQTAD ? "asqtad" : "naive") +
                                  (i.param.parity ? "_odd" : "_even");
                         });

struct Fixture {
  LatkeGauge g = nullptr;
  Mat A = nullptr;
  Fixture(LatkeOperatorForm form, LatkeStaggeredType type = LATKE_STAGGERED_ASQTAD, const char* prefix = nullptr) {
    g = make_gauge(PETSC_COMM_WORLD);
    const LatkeStaggeredParams p = params(type);
    EXPECT_EQ(MatCreateLatkeStaggered(g, form, &p, prefix, &A), 0);
  }
  ~Fixture() {
    MatDestroy(&A);
    LatkeGaugeDestroy(&g);
  }
  long volume() const { return g->data->lattice->volume(); }
};

Vec random_vec(Mat A, unsigned seed) {
  Vec v;
  PetscRandom r;
  EXPECT_EQ(MatCreateVecs(A, &v, nullptr), 0);
  EXPECT_EQ(PetscRandomCreate(PETSC_COMM_WORLD, &r), 0);
  EXPECT_EQ(PetscRandomSetSeed(r, seed), 0);
  EXPECT_EQ(PetscRandomSeed(r), 0);
  EXPECT_EQ(VecSetRandom(v, r), 0);
  PetscRandomDestroy(&r);
  return v;
}

// <y, A x> = <A^H y, x> and y^T A x = (A^T y)^T x for both forms; the full operator is not
// Hermitian (the check can fail), the normal operator is.
TEST(PetscStaggered, AdjointAndTranspose) {
  for (LatkeOperatorForm form : {LATKE_OPERATOR_FULL, LATKE_OPERATOR_EVEN_ODD}) {
    Fixture fx(form);
    Vec x = random_vec(fx.A, 11), y = random_vec(fx.A, 12), ax, ahy;
    VecDuplicate(x, &ax);
    VecDuplicate(x, &ahy);
    ASSERT_PETSC(MatMult(fx.A, x, ax));
    ASSERT_PETSC(MatMultHermitianTranspose(fx.A, y, ahy));
    PetscScalar lhs, rhs;
    VecDot(ax, y, &lhs);  // PETSc: VecDot(a, b) = b^H a
    VecDot(x, ahy, &rhs);
    EXPECT_LT(std::abs(lhs - rhs), 1e-12 * std::abs(lhs)) << "form " << form;
    ASSERT_PETSC(MatMultTranspose(fx.A, y, ahy));
    VecTDot(ax, y, &lhs);
    VecTDot(x, ahy, &rhs);
    EXPECT_LT(std::abs(lhs - rhs), 1e-12 * std::abs(lhs)) << "form " << form;
    ASSERT_PETSC(MatMult(fx.A, y, ahy));  // A itself in place of A^H
    VecDot(x, ahy, &rhs);
    VecDot(ax, y, &lhs);
    if (form == LATKE_OPERATOR_FULL)
      EXPECT_GT(std::abs(lhs - rhs), 1e-3 * std::abs(lhs));
    else
      EXPECT_LT(std::abs(lhs - rhs), 1e-12 * std::abs(lhs));
    VecDestroy(&x), VecDestroy(&y), VecDestroy(&ax), VecDestroy(&ahy);
  }
}

// The normal operator says it is Hermitian positive definite, and not complex symmetric.
TEST(PetscStaggered, NormalOperatorFlags) {
  Fixture eo(LATKE_OPERATOR_EVEN_ODD), full(LATKE_OPERATOR_FULL);
  PetscBool set = PETSC_FALSE, flag = PETSC_FALSE;
  ASSERT_PETSC(MatIsHermitianKnown(eo.A, &set, &flag));
  EXPECT_TRUE(set && flag);
  ASSERT_PETSC(MatIsSPDKnown(eo.A, &set, &flag));
  EXPECT_TRUE(set && flag);
  ASSERT_PETSC(MatIsSymmetricKnown(eo.A, &set, &flag));
  EXPECT_FALSE(set && flag);
  ASSERT_PETSC(MatIsHermitianKnown(full.A, &set, &flag));
  EXPECT_FALSE(set && flag);
}

// MatGetInfo counts each row's stencil: asqtad reaches 17 sites (hops of 1 and 3), its normal
// operator 121; naive 9 and 33; three colours per site.
TEST(PetscStaggered, GetInfoCountsTheStencil) {
  const std::pair<LatkeStaggeredType, LatkeOperatorForm> cases[] = {
      {LATKE_STAGGERED_ASQTAD, LATKE_OPERATOR_FULL}, {LATKE_STAGGERED_ASQTAD, LATKE_OPERATOR_EVEN_ODD},
      {LATKE_STAGGERED_NAIVE, LATKE_OPERATOR_FULL}, {LATKE_STAGGERED_NAIVE, LATKE_OPERATOR_EVEN_ODD}};
  const double sites[] = {17, 121, 9, 33};
  for (int i = 0; i < 4; ++i) {
    Fixture fx(cases[i].second, cases[i].first);
    PetscInt rows = 0;
    MatGetSize(fx.A, &rows, nullptr);
    MatInfo info;
    ASSERT_PETSC(MatGetInfo(fx.A, MAT_GLOBAL_SUM, &info));
    EXPECT_EQ(info.nz_used, static_cast<double>(rows) * sites[i] * 3) << "case " << i;
    EXPECT_GT(info.memory, 0.0);
  }
}

// MatGetDiagonal of M is 2m; a staggered vector has three components per site.
TEST(PetscStaggered, DiagonalAndLayout) {
  Fixture fx(LATKE_OPERATOR_FULL);
  Vec d;
  MatCreateVecs(fx.A, &d, nullptr);
  PetscInt n = 0, local = 0;
  VecGetSize(d, &n);
  VecGetLocalSize(d, &local);
  EXPECT_EQ(n, 3 * 4 * 4 * 8 * 8);
  EXPECT_EQ(local, 3 * fx.volume());
  ASSERT_PETSC(MatGetDiagonal(fx.A, d));
  PetscReal lo, hi;
  Vec re;
  VecDuplicate(d, &re);
  VecCopy(d, re);
  VecShift(re, -0.2);
  VecNorm(re, NORM_INFINITY, &hi);
  EXPECT_LT(hi, 1e-15);
  VecNorm(d, NORM_1, &lo);
  EXPECT_NEAR(lo, 0.2 * n, 1e-9);
  VecDestroy(&d), VecDestroy(&re);
  // Lexicographic round trip for the even-odd vector: its own sites only.
  Fixture eo(LATKE_OPERATOR_EVEN_ODD);
  std::vector<PetscScalar> in(eo.volume() * 3), out(eo.volume() * 3, PetscScalar(-7.0));
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = PetscScalar(0.5 * i + 1, -0.25 * i);
  Vec v;
  MatCreateVecs(eo.A, &v, nullptr);
  ASSERT_PETSC(LatkeVecSetLexicographic(eo.A, v, in.data()));
  ASSERT_PETSC(LatkeVecGetLexicographic(eo.A, v, out.data()));
  const latke::Lattice& lat = *eo.g->data->lattice;
  for (long s = 0; s < eo.volume(); ++s) {
    const latke::Coords c = lat.coords_of(s);
    const bool mine = ((c[0] + c[1] + c[2] + c[3] + lat.offset()[2] + lat.offset()[3]) & 1) == 0;
    for (int k = 0; k < 3; ++k) ASSERT_EQ(out[s * 3 + k], mine ? in[s * 3 + k] : PetscScalar(-7.0)) << s;
  }
  VecDestroy(&v);
}

// An operator from given fat and long links (MILC's convention, stripped by Latke) is the one
// Latke builds from the thin links.
TEST(PetscStaggered, GivenMilcLinksStripped) {
  Fixture fx(LATKE_OPERATOR_FULL);
  const latke::Lattice& lat = *fx.g->data->lattice;
  const latke::StaggeredLinks l =
      latke::asqtad_links(lat, fx.g->data->links, latke::AsqtadCoefficients::asqtad(0.9), latke::Backend::cpu);
  const PetscScalar phase[4] = {1.0, 1.0, 1.0, -1.0};
  // MILC links: eta_mu(x) and the antiperiodic sign multiplied in.
  auto milc = [&](const std::vector<latke::Complex<double>>& links, int hop) {
    std::vector<PetscScalar> m(links.size());
    for (long s = 0; s < lat.volume(); ++s) {
      latke::Coords c = lat.coords_of(s);
      for (int mu = 0; mu < 4; ++mu) c[mu] += lat.offset()[mu];
      for (int mu = 0; mu < 4; ++mu) {
        double f = latke::staggered_phase(mu, c);
        if (mu == 3 && c[3] + hop >= lat.global()[3]) f = -f;
        for (int k = 0; k < 9; ++k) {
          const latke::Complex<double> z = links[(s * 4 + mu) * 9 + k];
          m[(s * 4 + mu) * 9 + k] = f * PetscScalar(z.re, z.im);
        }
      }
    }
    return m;
  };
  PetscInt grid[4];
  LatkeGaugeGetLattice(fx.g, nullptr, nullptr, grid);
  LatkeGauge fat, lng;
  ASSERT_PETSC(LatkeGaugeCreateFromArray(PETSC_COMM_WORLD, dims, grid, milc(l.fat, 1).data(), &fat));
  ASSERT_PETSC(LatkeGaugeCreateFromArray(PETSC_COMM_WORLD, dims, grid, milc(l.lng, 3).data(), &lng));
  ASSERT_PETSC(LatkeGaugeStripStaggeredPhases(fat, 1, phase));
  ASSERT_PETSC(LatkeGaugeStripStaggeredPhases(lng, 3, phase));
  LatkeStaggeredParams p = params(LATKE_STAGGERED_ASQTAD);
  p.reconstruct = 12;
  Mat B;
  ASSERT_PETSC(MatCreateLatkeStaggeredFromLinks(fat, lng, LATKE_OPERATOR_FULL, &p, nullptr, &B));
  Vec x = random_vec(fx.A, 5), ax, bx;
  VecDuplicate(x, &ax);
  VecDuplicate(x, &bx);
  MatMult(fx.A, x, ax);
  MatMult(B, x, bx);
  PetscReal n, d;
  VecNorm(ax, NORM_2, &n);
  VecAXPY(bx, -1.0, ax);
  VecNorm(bx, NORM_2, &d);
  EXPECT_LT(d / n, 1e-13);
  // Asqtad without long links, naive with them: errors.
  Mat C = nullptr;
  PetscPushErrorHandler(PetscReturnErrorHandler, nullptr);
  EXPECT_NE(MatCreateLatkeStaggeredFromLinks(fat, nullptr, LATKE_OPERATOR_FULL, &p, nullptr, &C), 0);
  p.type = LATKE_STAGGERED_NAIVE;
  EXPECT_NE(MatCreateLatkeStaggeredFromLinks(fat, lng, LATKE_OPERATOR_FULL, &p, nullptr, &C), 0);
  PetscPopErrorHandler();
  VecDestroy(&x), VecDestroy(&ax), VecDestroy(&bx);
  MatDestroy(&B);
  LatkeGaugeDestroy(&fat), LatkeGaugeDestroy(&lng);
}

// Options under the prefix override the parameters; bad values are errors naming them.
TEST(PetscStaggered, OptionsAndBadInput) {
  LatkeGauge g = make_gauge(PETSC_COMM_WORLD);
  PetscPushErrorHandler(PetscReturnErrorHandler, nullptr);
  Mat B = nullptr;
  const LatkeStaggeredParams p = params(LATKE_STAGGERED_ASQTAD);
  PetscOptionsSetValue(nullptr, "-st_latke_mass", "-0.1");
  EXPECT_NE(MatCreateLatkeStaggered(g, LATKE_OPERATOR_FULL, &p, "st_", &B), 0);
  PetscOptionsSetValue(nullptr, "-st_latke_mass", "0.25");
  PetscOptionsSetValue(nullptr, "-st_latke_staggered", "hisq");
  EXPECT_NE(MatCreateLatkeStaggered(g, LATKE_OPERATOR_FULL, &p, "st_", &B), 0);
  PetscOptionsSetValue(nullptr, "-st_latke_staggered", "naive");
  PetscOptionsSetValue(nullptr, "-st_latke_u0", "0");
  EXPECT_NE(MatCreateLatkeStaggered(g, LATKE_OPERATOR_FULL, &p, "st_", &B), 0);
  PetscOptionsClearValue(nullptr, "-st_latke_u0");
  PetscOptionsSetValue(nullptr, "-st_latke_reconstruct", "8");
  EXPECT_NE(MatCreateLatkeStaggered(g, LATKE_OPERATOR_FULL, &p, "st_", &B), 0);
  PetscOptionsSetValue(nullptr, "-st_latke_reconstruct", "12");
  PetscOptionsSetValue(nullptr, "-st_latke_boundary", "1,1,1,1");
  ASSERT_PETSC(MatCreateLatkeStaggered(g, LATKE_OPERATOR_FULL, &p, "st_", &B));
  PetscPopErrorHandler();
  for (const char* o : {"-st_latke_mass", "-st_latke_staggered", "-st_latke_reconstruct", "-st_latke_boundary"})
    PetscOptionsClearValue(nullptr, o);
  // The options took: naive, m = 0.25, periodic, links at 12 reals (MatView says so).
  PetscViewer v;
  ASSERT_PETSC(PetscViewerASCIIOpen(PETSC_COMM_WORLD, "test_petsc_staggered_view.txt", &v));
  ASSERT_PETSC(MatView(B, v));
  PetscViewerDestroy(&v);
  Vec d;
  MatCreateVecs(B, &d, nullptr);
  MatGetDiagonal(B, d);
  PetscReal dmax;
  VecMax(d, nullptr, &dmax);
  EXPECT_NEAR(dmax, 0.5, 1e-15);
  VecDestroy(&d);
  MatDestroy(&B);
  int rank = 0;
  MPI_Comm_rank(PETSC_COMM_WORLD, &rank);
  if (rank == 0) {
    std::FILE* f = std::fopen("test_petsc_staggered_view.txt", "r");
    ASSERT_NE(f, nullptr);
    std::string s;
    char buf[512];
    while (std::fgets(buf, sizeof buf, f)) s += buf;
    std::fclose(f);
    for (const char* want : {"naive staggered operator M = 2m + D on the full lattice", "mass m = 0.25",
                             "boundary phases (1,0), (1,0), (1,0), (1,0)", "links 12 reals", "4x4x8x8", "backend"})
      EXPECT_NE(s.find(want), std::string::npos) << "missing '" << want << "' in:\n" << s;
  }
  // The even-odd view of an asqtad operator.
  Fixture eo(LATKE_OPERATOR_EVEN_ODD);
  ASSERT_PETSC(PetscViewerASCIIOpen(PETSC_COMM_WORLD, "test_petsc_staggered_view.txt", &v));
  ASSERT_PETSC(MatView(eo.A, v));
  PetscViewerDestroy(&v);
  if (rank == 0) {
    std::FILE* f = std::fopen("test_petsc_staggered_view.txt", "r");
    std::string s;
    char buf[512];
    while (std::fgets(buf, sizeof buf, f)) s += buf;
    std::fclose(f);
    for (const char* want : {"asqtad staggered normal operator 4m^2 - D_pq D_qp on the even sites",
                             "tadpole factor u0 = 0.9", "fat links 18 reals, long links 18 reals"})
      EXPECT_NE(s.find(want), std::string::npos) << "missing '" << want << "' in:\n" << s;
  }
  LatkeGaugeDestroy(&g);
}

// ---- MatLatkeSolveMultiMass -----------------------------------------------------------------

const std::vector<PetscReal> mm_masses{0.06, 0.09, 0.14, 0.22, 0.35};

struct MultiMassSolution {
  std::vector<cvec> x;        ///< per mass, this rank's sites (zero off the parity)
  std::vector<double> resid;  ///< |b - A_m x| with MatMult on the matrix of mass 0.1, + shift
  double bnorm = 0;
  LatkeMultiMassStats st{};
  std::vector<LatkeMassStats> ms;
};

/// (4 m^2 - D_eo D_oe) x_m = b (Z2 noise on the even sites) for every mass of mm_masses,
/// on an asqtad matrix of mass 0.1, checked with MatMult.
MultiMassSolution solve_masses(MPI_Comm comm, LatkeMultiMassStrategy strategy, const char* prefix = nullptr) {
  MultiMassSolution s;
  LatkeGauge g = make_gauge(comm);
  const LatkeStaggeredParams p = params(LATKE_STAGGERED_ASQTAD);
  Mat A;
  Vec b, r;
  EXPECT_EQ(MatCreateLatkeStaggered(g, LATKE_OPERATOR_EVEN_ODD, &p, nullptr, &A), 0);
  EXPECT_EQ(MatCreateVecs(A, &r, &b), 0);
  EXPECT_EQ(LatkeVecSetNoiseSource(A, b, LATKE_NOISE_Z2, 5), 0);
  const PetscInt n = static_cast<PetscInt>(mm_masses.size());
  std::vector<Vec> x(n);
  for (auto& v : x) {
    EXPECT_EQ(VecDuplicate(b, &v), 0);
    EXPECT_EQ(VecSet(v, 3.0), 0);  // ignored
  }
  LatkeMultiMassParams mp;
  EXPECT_EQ(LatkeMultiMassParamsDefault(&mp), 0);
  mp.strategy = strategy;
  s.ms.resize(n);
  EXPECT_EQ(MatLatkeSolveMultiMass(A, n, mm_masses.data(), b, x.data(), &mp, prefix, &s.st, s.ms.data()), 0);
  PetscReal bn;
  VecNorm(b, NORM_2, &bn);
  s.bnorm = bn;
  for (PetscInt i = 0; i < n; ++i) {
    PetscReal rn;
    EXPECT_EQ(MatMult(A, x[i], r), 0);
    VecAXPY(r, 4 * (mm_masses[i] * mm_masses[i] - p.mass * p.mass), x[i]);
    VecAYPX(r, -1.0, b);
    VecNorm(r, NORM_2, &rn);
    s.resid.push_back(rn);
    s.x.push_back(get_lex(A, x[i], g->data->lattice->volume()));
    VecDestroy(&x[i]);
  }
  VecDestroy(&b), VecDestroy(&r), MatDestroy(&A);
  LatkeGaugeDestroy(&g);
  return s;
}

/// |a - b| over all ranks.
double diff_norm(const cvec& a, const cvec& b) {
  double d = 0, out = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d += std::norm(a[i] - b[i]);
  MPI_Allreduce(&d, &out, 1, MPI_DOUBLE, MPI_SUM, PETSC_COMM_WORLD);
  return std::sqrt(out);
}

// Both strategies: every residual, checked with MatMult, below 1e-10; the two agree within
// what the tolerance allows, |x - y| <= (|r_x| + |r_y|) / (4 m^2); on 4 ranks each equals the
// single-rank solution within the same bound.
TEST(PetscStaggeredMultiMass, BothStrategiesSolveEveryMass) {
  std::vector<MultiMassSolution> sol;
  for (LatkeMultiMassStrategy s : {LATKE_MULTIMASS_MULTISHIFT, LATKE_MULTIMASS_SEQUENTIAL}) {
    sol.push_back(solve_masses(PETSC_COMM_WORLD, s));
    const MultiMassSolution& m = sol.back();
    EXPECT_TRUE(m.st.converged) << "strategy " << s;
    EXPECT_GT(m.st.sloppy_applications, m.st.outer_applications);
    for (std::size_t i = 0; i < mm_masses.size(); ++i) {
      EXPECT_LE(m.resid[i] / m.bnorm, 1.001e-10) << "strategy " << s << " mass " << mm_masses[i];
      EXPECT_NEAR(m.ms[i].true_residual, m.resid[i] / m.bnorm, 1e-13);
      EXPECT_EQ(m.ms[i].mass, mm_masses[i]);
      EXPECT_TRUE(m.ms[i].converged);
      if (s == LATKE_MULTIMASS_SEQUENTIAL) EXPECT_EQ(m.ms[i].refine_iterations, 0);
    }
    if (s == LATKE_MULTIMASS_MULTISHIFT)
      EXPECT_LT(m.ms.back().iterations, m.ms.front().iterations) << "the heaviest mass stops first";
  }
  for (std::size_t i = 0; i < mm_masses.size(); ++i) {
    const double bound = (sol[0].resid[i] + sol[1].resid[i]) / (4 * mm_masses[i] * mm_masses[i]);
    EXPECT_LE(diff_norm(sol[0].x[i], sol[1].x[i]), 1.01 * bound) << "mass " << mm_masses[i];
  }
  if (world_size() > 1) {
    LatkeGauge g = make_gauge(PETSC_COMM_WORLD);
    for (int k = 0; k < 2; ++k) {
      const MultiMassSolution one =
          solve_masses(PETSC_COMM_SELF, k == 0 ? LATKE_MULTIMASS_MULTISHIFT : LATKE_MULTIMASS_SEQUENTIAL);
      for (std::size_t i = 0; i < mm_masses.size(); ++i) {
        const double bound = (sol[k].resid[i] + one.resid[i]) / (4 * mm_masses[i] * mm_masses[i]);
        EXPECT_LE(diff_norm(sol[k].x[i], local_part(one.x[i], *g->data->lattice, 3)), 1.01 * bound)
            << "strategy " << k << " mass " << mm_masses[i];
      }
    }
    LatkeGaugeDestroy(&g);
  }
}

// The options under the prefix choose the strategy and the extrapolation.
TEST(PetscStaggeredMultiMass, OptionsChooseTheStrategy) {
  PetscOptionsSetValue(nullptr, "-mm_latke_multimass", "sequential");
  PetscOptionsSetValue(nullptr, "-mm_latke_multimass_extrapolation", "0");
  const MultiMassSolution s = solve_masses(PETSC_COMM_WORLD, LATKE_MULTIMASS_MULTISHIFT, "mm_");
  PetscOptionsClearValue(nullptr, "-mm_latke_multimass");
  PetscOptionsClearValue(nullptr, "-mm_latke_multimass_extrapolation");
  EXPECT_TRUE(s.st.converged);
  for (const LatkeMassStats& m : s.ms) {
    EXPECT_EQ(m.refine_iterations, 0) << "sequential";
    EXPECT_NEAR(m.initial_residual, 1.0, 1e-12) << "zero guesses";
  }
}

/// The message of the last PETSc error.
std::string last_error() {
  const char* text = nullptr;
  latke::petsc::compat::ErrorMessageText specific = nullptr;
  PetscErrorMessage(0, &text, &specific);
  return specific ? specific : "";
}

// Bad input is an error naming the input, the value and what was expected.
TEST(PetscStaggeredMultiMass, BadInput) {
  LatkeGauge g = make_gauge(PETSC_COMM_WORLD);
  const LatkeStaggeredParams p = params(LATKE_STAGGERED_ASQTAD);
  Mat A, M, W;
  ASSERT_PETSC(MatCreateLatkeStaggered(g, LATKE_OPERATOR_EVEN_ODD, &p, nullptr, &A));
  ASSERT_PETSC(MatLatkeCreateCompanion(A, LATKE_OPERATOR_FULL, &M));
  ASSERT_PETSC(MatCreateLatkeWilsonClover(g, LATKE_OPERATOR_EVEN_ODD, nullptr, nullptr, &W));
  Vec b, bfull, x[3], xfull;
  ASSERT_PETSC(MatCreateVecs(A, nullptr, &b));
  ASSERT_PETSC(MatLatkeCreateFullVecs(A, &xfull, &bfull));
  ASSERT_PETSC(VecSet(b, 1.0));
  ASSERT_PETSC(VecSet(bfull, 1.0));
  for (Vec& v : x) ASSERT_PETSC(VecDuplicate(b, &v));
  PetscPushErrorHandler(PetscReturnErrorHandler, nullptr);
  struct Case {
    std::vector<PetscReal> m;
    const char* message;
  };
  const Case cases[] = {
      {{}, "the mass list is empty"},
      {{0.05, 0.02, 0.1}, "mass list not in increasing order: 0.02 (entry 2) follows 0.05"},
      {{-0.05, 0.02, 0.1}, "mass -0.05 (entry 1 of the mass list): expected a number > 0"},
      {{0.0, 0.02, 0.1}, "mass 0 (entry 1 of the mass list): expected a number > 0 (the even-odd solve needs m > 0)"},
      {{0.02, 0.05, 0.05}, "mass 0.05 appears twice in the mass list (entries 2 and 3)"},
  };
  for (const Case& c : cases) {
    EXPECT_NE(MatLatkeSolveMultiMass(A, static_cast<PetscInt>(c.m.size()), c.m.data(), b, x, nullptr, nullptr, nullptr,
                                     nullptr),
              0);
    EXPECT_NE(last_error().find(c.message), std::string::npos) << last_error();
  }
  const PetscReal good[3] = {0.05, 0.1, 0.2};
  EXPECT_NE(MatLatkeSolveMultiMass(M, 3, good, bfull, x, nullptr, nullptr, nullptr, nullptr), 0);
  EXPECT_NE(last_error().find("the matrix is the full staggered operator M; expected the even-odd form"),
            std::string::npos)
      << last_error();
  EXPECT_NE(MatLatkeSolveMultiMass(W, 3, good, b, x, nullptr, nullptr, nullptr, nullptr), 0);
  EXPECT_NE(
      last_error().find("MatLatkeSolveMultiMass: the matrix is a LatkeWilsonClover matrix, expected a staggered one"),
      std::string::npos)
      << last_error();
  EXPECT_NE(MatLatkeSolveMultiMass(A, 3, good, bfull, x, nullptr, nullptr, nullptr, nullptr), 0);
  EXPECT_NE(last_error().find("b is a vector of the whole lattice, expected one of the matrix's parity"),
            std::string::npos)
      << last_error();
  EXPECT_EQ(MatLatkeSolveMultiMass(A, 3, good, b, x, nullptr, nullptr, nullptr, nullptr), 0) << "good input works";
  Vec mixed[3] = {x[0], xfull, x[2]};
  EXPECT_NE(MatLatkeSolveMultiMass(A, 3, good, b, mixed, nullptr, nullptr, nullptr, nullptr), 0);
  EXPECT_NE(last_error().find("x[1] is a vector of the whole lattice"), std::string::npos) << last_error();
  PetscOptionsSetValue(nullptr, "-bad_latke_multimass", "both");
  EXPECT_NE(MatLatkeSolveMultiMass(A, 3, good, b, x, nullptr, "bad_", nullptr, nullptr), 0);
  EXPECT_NE(last_error().find("unknown multi-mass strategy 'both': expected multishift or sequential"),
            std::string::npos)
      << last_error();
  PetscOptionsClearValue(nullptr, "-bad_latke_multimass");
  PetscOptionsSetValue(nullptr, "-bad_latke_multimass_extrapolation", "-2");
  EXPECT_NE(MatLatkeSolveMultiMass(A, 3, good, b, x, nullptr, "bad_", nullptr, nullptr), 0);
  EXPECT_NE(last_error().find("-bad_latke_multimass_extrapolation -2"), std::string::npos) << last_error();
  PetscOptionsClearValue(nullptr, "-bad_latke_multimass_extrapolation");
  LatkeMultiMassParams mp;
  LatkeMultiMassParamsDefault(&mp);
  mp.tol = 0;
  EXPECT_NE(MatLatkeSolveMultiMass(A, 3, good, b, x, &mp, nullptr, nullptr, nullptr), 0);
  EXPECT_NE(last_error().find("solver tolerance 0: expected a number in (0, 1)"), std::string::npos) << last_error();
  PetscPopErrorHandler();
  for (Vec& v : x) VecDestroy(&v);
  VecDestroy(&b), VecDestroy(&bfull), VecDestroy(&xfull);
  MatDestroy(&A), MatDestroy(&M), MatDestroy(&W);
  LatkeGaugeDestroy(&g);
}

}  // namespace
