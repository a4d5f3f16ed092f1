// Latke's PETSc face (latke.h): Krylov solves through the MATSHELLs, adjoints, diagonals,
// vector layouts, sources, viewers and bad input. Runs on 1 rank and, with the same
// expectations, on 4 (where solutions and fields are compared with single-rank ones).
#include <gtest/gtest.h>
#include <petscksp.h>

#include <cmath>
#include <complex>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "latke/latke.h"
#include "petsc/mat_shell.h"
#include "petsc/program.h"
#include "tests/reference/wilson_reference.h"
#include "tests/support/wilson_host.h"

namespace {

using cvec = std::vector<std::complex<double>>;
const PetscInt dims[4] = {4, 4, 4, 8};
constexpr PetscInt gauge_seed = 7;

#define ASSERT_PETSC(call) ASSERT_EQ((call), 0) << #call

int world_size() {
  int n = 1;
  MPI_Comm_size(PETSC_COMM_WORLD, &n);
  return n;
}

/// A gauge field on comm (the whole world, or this rank alone).
LatkeGauge make_gauge(MPI_Comm comm) {
  LatkeGauge g = nullptr;
  const PetscInt one[4] = {1, 1, 1, 1};
  EXPECT_EQ(LatkeGaugeCreateRandom(comm, dims, comm == PETSC_COMM_SELF ? one : nullptr, gauge_seed, -1.0, &g), 0);
  return g;
}

LatkeWilsonCloverParams params(LatkeSchurType schur = LATKE_SCHUR_SYMMETRIC) {
  LatkeWilsonCloverParams p;
  LatkeWilsonCloverParamsDefault(&p);
  p.mass = 0.1;
  p.csw = 1.0;
  p.schur = schur;
  return p;
}

/// This rank's local part (lexicographic) of a whole-lattice lexicographic array.
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
  std::vector<PetscScalar> a(static_cast<std::size_t>(volume) * 12);
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

/// Solve M x = b (point source at the origin) with the given KSP on comm.
Solution solve(MPI_Comm comm, const char* ksp_type, LatkeOperatorForm form, LatkeSchurType schur) {
  Solution s{};
  LatkeGauge g = make_gauge(comm);
  Mat A, M;
  Vec x, b, xh, bh, r;
  KSP ksp;
  const LatkeWilsonCloverParams p = params(schur);
  EXPECT_EQ(MatCreateLatkeWilsonClover(g, form, &p, nullptr, &A), 0);
  EXPECT_EQ(MatLatkeCreateCompanion(A, LATKE_OPERATOR_FULL, &M), 0);
  EXPECT_EQ(MatLatkeCreateFullVecs(A, &x, &b), 0);
  EXPECT_EQ(MatCreateVecs(A, &xh, &bh), 0);
  EXPECT_EQ(VecDuplicate(b, &r), 0);
  const PetscInt origin[4] = {0, 0, 0, 0};
  EXPECT_EQ(LatkeVecSetPointSource(A, b, origin, 1, 2), 0);
  EXPECT_EQ(MatLatkePrepareSource(A, b, bh), 0);
  EXPECT_EQ(KSPCreate(comm, &ksp), 0);
  EXPECT_EQ(KSPSetOperators(ksp, A, A), 0);
  EXPECT_EQ(KSPSetType(ksp, ksp_type), 0);
  PC pc;
  EXPECT_EQ(KSPGetPC(ksp, &pc), 0);
  EXPECT_EQ(PCSetType(pc, PCNONE), 0);
  EXPECT_EQ(KSPSetTolerances(ksp, 1e-11, 1e-30, PETSC_DEFAULT, 2000), 0);
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

struct KspCase {
  const char* ksp;
  LatkeOperatorForm form;
  LatkeSchurType schur;
};

class PetscKsp : public ::testing::TestWithParam<KspCase> {};

// The Krylov solution solves the reference operator's equation (1 rank), and on a process
// grid equals the single-rank solution.
TEST_P(PetscKsp, ConvergesToTheSolution) {
  const KspCase c = GetParam();
  const Solution s = solve(PETSC_COMM_WORLD, c.ksp, c.form, c.schur);
  ASSERT_GT(s.reason, 0) << c.ksp << ": " << KSPConvergedReasons[s.reason];
  EXPECT_LT(s.true_res, 1e-9) << c.ksp << " after " << s.its << " iterations";
  if (world_size() == 1) {
    // Independent check: b - M x with the Eigen host reference operator.
    LatkeGauge g = make_gauge(PETSC_COMM_SELF);
    latke::reference::WilsonCloverParams rp;
    rp.dims = {4, 4, 4, 8};
    rp.mass = 0.1;
    rp.csw = 1.0;
    cvec links(g->data->links.size());
    for (std::size_t i = 0; i < links.size(); ++i) links[i] = {g->data->links[i].re, g->data->links[i].im};
    cvec mx(s.x.size()), b(s.x.size());
    latke::reference::apply_wilson_clover(mx, links, s.x, rp, false);
    b[0 * 12 + 1 * 3 + 2] = 1.0;
    EXPECT_LT(latke::test::rel_diff(mx, b), 1e-9);
    LatkeGaugeDestroy(&g);
  } else {
    LatkeGauge g = make_gauge(PETSC_COMM_WORLD);
    const Solution one = solve(PETSC_COMM_SELF, c.ksp, c.form, c.schur);
    EXPECT_LT(rel(s.x, local_part(one.x, *g->data->lattice, 12)), 1e-8);
    LatkeGaugeDestroy(&g);
  }
}

INSTANTIATE_TEST_SUITE_P(Wilson, PetscKsp,
                         ::testing::Values(KspCase{KSPGMRES, LATKE_OPERATOR_EVEN_ODD, LATKE_SCHUR_SYMMETRIC},
                                           KspCase{KSPFGMRES, LATKE_OPERATOR_EVEN_ODD, LATKE_SCHUR_SYMMETRIC},
                                           KspCase{KSPGCR, LATKE_OPERATOR_EVEN_ODD, LATKE_SCHUR_ASYMMETRIC},
                                           KspCase{KSPBCGS, LATKE_OPERATOR_EVEN_ODD, LATKE_SCHUR_SYMMETRIC},
                                           KspCase{KSPGCR, LATKE_OPERATOR_FULL, LATKE_SCHUR_SYMMETRIC},
                                           KspCase{KSPBCGS, LATKE_OPERATOR_FULL, LATKE_SCHUR_SYMMETRIC},
                                           KspCase{KSPLSQR, LATKE_OPERATOR_EVEN_ODD, LATKE_SCHUR_SYMMETRIC}),
                         [](const ::testing::TestParamInfo<KspCase>& i) {
                           return std::string(i.param.ksp) + (i.param.form == LATKE_OPERATOR_FULL ? "_full" : "_eo") +
                                  (i.param.schur == LATKE_SCHUR_SYMMETRIC ? "_sym" : "_asym");
                         });

struct Fixture {
  LatkeGauge g = nullptr;
  Mat A = nullptr;
  Fixture(LatkeOperatorForm form, LatkeSchurType schur = LATKE_SCHUR_SYMMETRIC) {
    g = make_gauge(PETSC_COMM_WORLD);
    const LatkeWilsonCloverParams p = params(schur);
    EXPECT_EQ(MatCreateLatkeWilsonClover(g, form, &p, nullptr, &A), 0);
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

// <y, A x> = <A^H y, x> and y^T A x = (A^T y)^T x, for every form.
TEST(PetscMat, AdjointAndTranspose) {
  const LatkeOperatorForm forms[] = {LATKE_OPERATOR_FULL, LATKE_OPERATOR_EVEN_ODD, LATKE_OPERATOR_EVEN_ODD};
  const LatkeSchurType schurs[] = {LATKE_SCHUR_SYMMETRIC, LATKE_SCHUR_SYMMETRIC, LATKE_SCHUR_ASYMMETRIC};
  for (int f = 0; f < 3; ++f) {
    Fixture fx(forms[f], schurs[f]);
    Vec x = random_vec(fx.A, 11), y = random_vec(fx.A, 12), ax, ahy;
    VecDuplicate(x, &ax);
    VecDuplicate(x, &ahy);
    ASSERT_PETSC(MatMult(fx.A, x, ax));
    ASSERT_PETSC(MatMultHermitianTranspose(fx.A, y, ahy));
    PetscScalar lhs, rhs;
    VecDot(ax, y, &lhs);  // PETSc: VecDot(a, b) = b^H a
    VecDot(x, ahy, &rhs);
    EXPECT_LT(std::abs(lhs - rhs), 1e-12 * std::abs(lhs)) << "form " << f;
    ASSERT_PETSC(MatMultTranspose(fx.A, y, ahy));
    VecTDot(ax, y, &lhs);
    VecTDot(x, ahy, &rhs);
    EXPECT_LT(std::abs(lhs - rhs), 1e-12 * std::abs(lhs)) << "form " << f;
    // The adjoint is not the operator itself: the check above can fail.
    ASSERT_PETSC(MatMult(fx.A, y, ahy));
    VecDot(x, ahy, &rhs);
    VecDot(ax, y, &lhs);
    EXPECT_GT(std::abs(lhs - rhs), 1e-3 * std::abs(lhs));
    VecDestroy(&x), VecDestroy(&y), VecDestroy(&ax), VecDestroy(&ahy);
  }
}

// MatMatMult of a Latke matrix and a dense matrix of vectors (the operator on sets of columns,
// 35 columns: a set of 32 and one of 3) equals MatMult column by column, for every form and for
// an operator stored in single precision; MAT_REUSE_MATRIX computes it again.
TEST(PetscMat, MatMatMultIsMatMultOnEveryColumn) {
  const LatkeOperatorForm forms[] = {LATKE_OPERATOR_FULL, LATKE_OPERATOR_EVEN_ODD, LATKE_OPERATOR_EVEN_ODD};
  const LatkePrecision precisions[] = {LATKE_PRECISION_DOUBLE, LATKE_PRECISION_DOUBLE, LATKE_PRECISION_SINGLE};
  for (int f = 0; f < 3; ++f) {
    LatkeGauge g = make_gauge(PETSC_COMM_WORLD);
    LatkeWilsonCloverParams p = params();
    p.precision = precisions[f];
    Mat A = nullptr, X = nullptr, Y = nullptr;
    ASSERT_PETSC(MatCreateLatkeWilsonClover(g, forms[f], &p, nullptr, &A));
    PetscInt n = 0;
    ASSERT_PETSC(MatGetLocalSize(A, &n, nullptr));
    const PetscInt cols = 35;
    ASSERT_PETSC(MatCreateDense(PETSC_COMM_WORLD, n, PETSC_DECIDE, PETSC_DETERMINE, cols, nullptr, &X));
    PetscRandom r;
    ASSERT_PETSC(PetscRandomCreate(PETSC_COMM_WORLD, &r));
    ASSERT_PETSC(MatSetRandom(X, r));
    PetscRandomDestroy(&r);
    for (int pass = 0; pass < 2; ++pass) {
      if (pass == 1) ASSERT_PETSC(MatScale(X, 2.0));
      ASSERT_PETSC(MatMatMult(A, X, pass ? MAT_REUSE_MATRIX : MAT_INITIAL_MATRIX, PETSC_DEFAULT, &Y));
      const double tol = precisions[f] == LATKE_PRECISION_DOUBLE ? 1e-13 : 1e-6;
      Vec ax;
      ASSERT_PETSC(MatCreateVecs(A, nullptr, &ax));
      for (PetscInt j = 0; j < cols; ++j) {
        Vec x, y;
        ASSERT_PETSC(MatDenseGetColumnVecRead(X, j, &x));
        ASSERT_PETSC(MatMult(A, x, ax));
        ASSERT_PETSC(MatDenseRestoreColumnVecRead(X, j, &x));
        ASSERT_PETSC(MatDenseGetColumnVecRead(Y, j, &y));
        PetscReal d = 0, a = 0;
        ASSERT_PETSC(VecNorm(ax, NORM_2, &a));
        ASSERT_PETSC(VecAXPY(ax, -1.0, y));
        ASSERT_PETSC(VecNorm(ax, NORM_2, &d));
        ASSERT_PETSC(MatDenseRestoreColumnVecRead(Y, j, &y));
        EXPECT_LT(d, tol * a) << "form " << f << ", pass " << pass << ", column " << j;
        EXPECT_GT(a, 0.0);
      }
      VecDestroy(&ax);
    }
    MatDestroy(&X), MatDestroy(&Y), MatDestroy(&A);
    LatkeGaugeDestroy(&g);
  }
}

// MatGetDiagonal of the full operator equals (A e_i)_i on unit vectors.
TEST(PetscMat, Diagonal) {
  Fixture fx(LATKE_OPERATOR_FULL);
  Vec d, e, ae;
  MatCreateVecs(fx.A, &d, &e);
  VecDuplicate(e, &ae);
  ASSERT_PETSC(MatGetDiagonal(fx.A, d));
  PetscInt n = 0;
  VecGetSize(d, &n);
  for (PetscInt i : {PetscInt(0), PetscInt(5), n / 2 + 7, n - 1}) {
    VecSet(e, 0.0);
    VecSetValue(e, i, 1.0, INSERT_VALUES);
    VecAssemblyBegin(e), VecAssemblyEnd(e);
    MatMult(fx.A, e, ae);
    PetscScalar want = 0, got = 0;
    PetscInt lo, hi;
    VecGetOwnershipRange(d, &lo, &hi);
    if (i >= lo && i < hi) {
      const PetscScalar *pa, *pd;
      VecGetArrayRead(ae, &pa);
      VecGetArrayRead(d, &pd);
      want = pa[i - lo];
      got = pd[i - lo];
      VecRestoreArrayRead(ae, &pa);
      VecRestoreArrayRead(d, &pd);
    }
    double local[4] = {PetscRealPart(want), PetscImaginaryPart(want), PetscRealPart(got), PetscImaginaryPart(got)},
           all[4];
    MPI_Allreduce(local, all, 4, MPI_DOUBLE, MPI_SUM, PETSC_COMM_WORLD);  // one rank owns entry i
    want = PetscScalar(all[0], all[1]);
    got = PetscScalar(all[2], all[3]);
    EXPECT_LT(std::abs(want - got), 1e-13 * (1 + std::abs(want))) << "entry " << i;
    EXPECT_GT(std::abs(want), 1.0);  // 4 + m plus the clover term
  }
  VecDestroy(&d), VecDestroy(&e), VecDestroy(&ae);
  // The even-odd operator has no diagonal: a clear error, not a wrong answer.
  Fixture eo(LATKE_OPERATOR_EVEN_ODD);
  MatCreateVecs(eo.A, &d, nullptr);
  PetscPushErrorHandler(PetscReturnErrorHandler, nullptr);
  EXPECT_NE(MatGetDiagonal(eo.A, d), 0);
  PetscPopErrorHandler();
  VecDestroy(&d);
}

// Lexicographic <-> native round trips for full and parity vectors.
TEST(PetscVec, LexicographicRoundTrip) {
  for (LatkeOperatorForm form : {LATKE_OPERATOR_FULL, LATKE_OPERATOR_EVEN_ODD}) {
    Fixture fx(form);
    const long vol = fx.volume();
    std::vector<PetscScalar> in(vol * 12), out(vol * 12, PetscScalar(-7.0));
    for (long i = 0; i < vol * 12; ++i) in[i] = PetscScalar(0.5 * i + 1, -0.25 * i);
    Vec v;
    MatCreateVecs(fx.A, &v, nullptr);
    ASSERT_PETSC(LatkeVecSetLexicographic(fx.A, v, in.data()));
    ASSERT_PETSC(LatkeVecGetLexicographic(fx.A, v, out.data()));
    const latke::Lattice& lat = *fx.g->data->lattice;
    for (long s = 0; s < vol; ++s) {
      const latke::Coords c = lat.coords_of(s);
      const bool mine = form == LATKE_OPERATOR_FULL || ((c[0] + c[1] + c[2] + c[3]) & 1) == 0;
      for (int k = 0; k < 12; ++k)
        ASSERT_EQ(out[s * 12 + k], mine ? in[s * 12 + k] : PetscScalar(-7.0)) << "site " << s << " component " << k;
    }
    // The native layout is not the lexicographic one: the raw array differs.
    const PetscScalar* raw;
    VecGetArrayRead(v, &raw);
    bool same = true;
    for (long i = 0; i < 24; ++i) same = same && raw[i] == in[i];
    VecRestoreArrayRead(v, &raw);
    EXPECT_FALSE(same);
    VecDestroy(&v);
  }
}

TEST(PetscVec, SourcesHaveTheirNorms) {
  Fixture fx(LATKE_OPERATOR_EVEN_ODD);
  Vec x, b, bh;
  ASSERT_PETSC(MatLatkeCreateFullVecs(fx.A, &x, &b));
  MatCreateVecs(fx.A, nullptr, &bh);
  const double spatial = 4 * 4 * 4, volume = spatial * 8;
  PetscReal n;
  const PetscInt site[4] = {3, 2, 1, 5};
  ASSERT_PETSC(LatkeVecSetPointSource(fx.A, b, site, 3, 1));
  VecNorm(b, NORM_2, &n);
  EXPECT_DOUBLE_EQ(n, 1.0);
  // Where it is: global lexicographic site * 12 + spin * 3 + color, in the natural order.
  {
    const latke::Lattice& lat = *fx.g->data->lattice;
    const cvec lex = get_lex(fx.A, b, lat.volume());
    const long g = ((5L * 4 + 1) * 4 + 2) * 4 + 3;
    double found = 0;
    for (long s = 0; s < lat.volume(); ++s) {
      const latke::Coords c = lat.coords_of(s);
      long gs = 0;
      for (int mu = 3; mu >= 0; --mu) gs = gs * lat.global()[mu] + c[mu] + lat.offset()[mu];
      if (gs == g) found += std::abs(lex[s * 12 + 3 * 3 + 1]);
    }
    double total = 0;
    MPI_Allreduce(&found, &total, 1, MPI_DOUBLE, MPI_SUM, PETSC_COMM_WORLD);
    EXPECT_EQ(total, 1.0);
  }
  ASSERT_PETSC(LatkeVecSetWallSource(fx.A, b, 6, 0, 2));
  VecNorm(b, NORM_2, &n);
  EXPECT_DOUBLE_EQ(n * n, spatial);
  ASSERT_PETSC(LatkeVecSetWallSource(fx.A, bh, 6, 0, 2));  // even sites only
  VecNorm(bh, NORM_2, &n);
  EXPECT_DOUBLE_EQ(n * n, spatial / 2);
  for (LatkeNoise noise : {LATKE_NOISE_Z2, LATKE_NOISE_Z4}) {
    ASSERT_PETSC(LatkeVecSetNoiseSource(fx.A, b, noise, 99));
    VecNorm(b, NORM_2, &n);
    EXPECT_NEAR(n * n, 12 * volume, 1e-9);
    const PetscScalar* a;
    PetscInt len;
    VecGetLocalSize(b, &len);
    VecGetArrayRead(b, &a);
    int imag = 0, neg = 0;
    for (PetscInt i = 0; i < len; ++i) {
      EXPECT_NEAR(std::abs(a[i]), 1.0, 1e-15);
      EXPECT_NEAR(std::abs(PetscRealPart(a[i]) * PetscImaginaryPart(a[i])), 0.0, 1e-15);
      imag += PetscImaginaryPart(a[i]) != 0;
      neg += PetscRealPart(a[i]) < 0 || PetscImaginaryPart(a[i]) < 0;
    }
    VecRestoreArrayRead(b, &a);
    if (noise == LATKE_NOISE_Z2)
      EXPECT_EQ(imag, 0);
    else
      EXPECT_GT(imag, len / 4);
    EXPECT_GT(neg, len / 4);
  }
  // Noise is a function of the global site: the same on one rank as on the process grid.
  LatkeGauge g1 = make_gauge(PETSC_COMM_SELF);
  Mat A1;
  const LatkeWilsonCloverParams p = params();
  ASSERT_PETSC(MatCreateLatkeWilsonClover(g1, LATKE_OPERATOR_FULL, &p, nullptr, &A1));
  Vec b1;
  MatCreateVecs(A1, nullptr, &b1);
  ASSERT_PETSC(LatkeVecSetNoiseSource(A1, b1, LATKE_NOISE_Z4, 99));
  const cvec whole = get_lex(A1, b1, g1->data->lattice->volume());
  EXPECT_EQ(rel(get_lex(fx.A, b, fx.volume()), local_part(whole, *fx.g->data->lattice, 12)), 0.0);
  VecDestroy(&b1), MatDestroy(&A1), LatkeGaugeDestroy(&g1);
  VecDestroy(&x), VecDestroy(&b), VecDestroy(&bh);
}

/// A viewer of the type on the file (binary: without the .info file when skip_info).
PetscViewer open_viewer(MPI_Comm comm, PetscViewerType type, PetscFileMode mode, const char* file,
                        bool skip_info = false) {
  PetscViewer v = nullptr;
  EXPECT_EQ(PetscViewerCreate(comm, &v), 0);
  PetscViewerSetType(v, type);
  if (skip_info) PetscViewerBinarySetSkipInfo(v, PETSC_TRUE);
  PetscViewerFileSetMode(v, mode);
  PetscViewerFileSetName(v, file);
  return v;
}

/// LatkeVecLoad of the file into back gives exactly b.
void expect_loads_back(Mat A, PetscViewerType type, const char* file, Vec back, Vec b) {
  PetscViewer v = open_viewer(PETSC_COMM_WORLD, type, FILE_MODE_READ, file);
  EXPECT_EQ(LatkeVecLoad(A, back, v), 0) << file;
  PetscViewerDestroy(&v);
  VecAXPY(back, -1.0, b);
  PetscReal d = -1;
  VecNorm(back, NORM_INFINITY, &d);
  EXPECT_EQ(d, 0.0) << file;
}

// LatkeVecView writes global lexicographic order: a plain VecLoad on one rank sees the
// point source at site * 12 + spin * 3 + color; LatkeVecLoad restores the vector.
void viewer_round_trip(PetscViewerType type, const char* file) {
  Fixture fx(LATKE_OPERATOR_FULL);
  Vec b, back;
  MatCreateVecs(fx.A, &b, &back);
  PetscObjectSetName(reinterpret_cast<PetscObject>(b), "source");
  PetscObjectSetName(reinterpret_cast<PetscObject>(back), "source");
  const PetscInt site[4] = {1, 3, 2, 6};
  ASSERT_PETSC(LatkeVecSetPointSource(fx.A, b, site, 2, 0));
  Vec noise;
  VecDuplicate(b, &noise);
  LatkeVecSetNoiseSource(fx.A, noise, LATKE_NOISE_Z4, 5);
  VecAXPY(b, 0.001, noise);
  PetscViewer v = open_viewer(PETSC_COMM_WORLD, type, FILE_MODE_WRITE, file);
  ASSERT_PETSC(LatkeVecView(fx.A, b, v));
  PetscViewerDestroy(&v);

  expect_loads_back(fx.A, type, file, back, b);

  int rank = 0;
  MPI_Comm_rank(PETSC_COMM_WORLD, &rank);
  if (rank == 0) {
    Vec plain;
    VecCreate(PETSC_COMM_SELF, &plain);
    PetscObjectSetName(reinterpret_cast<PetscObject>(plain), "source");
    v = open_viewer(PETSC_COMM_SELF, type, FILE_MODE_READ, file);
    ASSERT_PETSC(VecLoad(plain, v));
    PetscViewerDestroy(&v);
    const PetscScalar* a;
    VecGetArrayRead(plain, &a);
    const long g = ((6L * 4 + 2) * 4 + 3) * 4 + 1;
    EXPECT_NEAR(PetscRealPart(a[g * 12 + 2 * 3 + 0]), 1.0, 0.0011);
    EXPECT_NEAR(std::abs(a[g * 12 + 2 * 3 + 1]), 0.001, 1e-12);
    VecRestoreArrayRead(plain, &a);
    VecDestroy(&plain);
  }
  VecDestroy(&b), VecDestroy(&back), VecDestroy(&noise);
}

TEST(PetscVec, BinaryViewerRoundTrip) { viewer_round_trip(PETSCVIEWERBINARY, "test_petsc_vec.bin"); }

std::string file_bytes(const char* path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// LatkeVecSave writes, through a temporary renamed on success, the bytes LatkeVecView writes
// with a binary viewer (no .info file), and LatkeVecLoad reads them back; a parity vector and
// an unwritable path are refused on every rank, leaving no file.
TEST(PetscVec, SaveIsTheBinaryViewersFileWrittenAtomically) {
  Fixture fx(LATKE_OPERATOR_FULL);
  Vec b, back;
  MatCreateVecs(fx.A, &b, &back);
  ASSERT_PETSC(LatkeVecSetNoiseSource(fx.A, b, LATKE_NOISE_Z4, 11));
  ASSERT_PETSC(LatkeVecSave(fx.A, b, "test_petsc_save.bin"));
  PetscViewer v = open_viewer(PETSC_COMM_WORLD, PETSCVIEWERBINARY, FILE_MODE_WRITE, "test_petsc_view.bin", true);
  ASSERT_PETSC(LatkeVecView(fx.A, b, v));
  PetscViewerDestroy(&v);
  MPI_Barrier(PETSC_COMM_WORLD);
  const std::string saved = file_bytes("test_petsc_save.bin");
  EXPECT_EQ(saved.size(), 8u + static_cast<std::size_t>(fx.volume()) * world_size() * 12 * 16);
  EXPECT_TRUE(saved == file_bytes("test_petsc_view.bin")) << "LatkeVecSave and LatkeVecView wrote different files";
  expect_loads_back(fx.A, PETSCVIEWERBINARY, "test_petsc_save.bin", back, b);

  Fixture eo(LATKE_OPERATOR_EVEN_ODD);
  Vec half;
  MatCreateVecs(eo.A, &half, nullptr);
  PetscPushErrorHandler(PetscReturnErrorHandler, nullptr);
  EXPECT_NE(LatkeVecSave(eo.A, half, "test_petsc_half.bin"), 0);
  EXPECT_NE(LatkeVecSave(fx.A, b, "no-such-directory/x.bin"), 0);
  PetscPopErrorHandler();
  EXPECT_FALSE(std::ifstream("test_petsc_half.bin").good());
  VecDestroy(&b), VecDestroy(&back), VecDestroy(&half);
}

#if defined(PETSC_HAVE_HDF5)
TEST(PetscVec, Hdf5ViewerRoundTrip) { viewer_round_trip(PETSCVIEWERHDF5, "test_petsc_vec.h5"); }
#endif

// Vectors of the wrong shape and bad options are PETSc errors with clear messages.
TEST(PetscBadInput, Errors) {
  PetscPushErrorHandler(PetscReturnErrorHandler, nullptr);
  Fixture fx(LATKE_OPERATOR_EVEN_ODD);
  Vec full, out;
  MatLatkeCreateFullVecs(fx.A, &full, nullptr);
  MatCreateVecs(fx.A, &out, nullptr);
  EXPECT_NE(MatMult(fx.A, full, out), 0);  // a full vector into the even-odd operator
  const PetscInt odd_site[4] = {1, 0, 0, 0};
  EXPECT_NE(LatkeVecSetPointSource(fx.A, out, odd_site, 0, 0), 0);  // odd site in an even vector
  const PetscInt outside[4] = {4, 0, 0, 0};
  EXPECT_NE(LatkeVecSetPointSource(fx.A, full, outside, 0, 0), 0);
  EXPECT_NE(LatkeVecSetPointSource(fx.A, full, odd_site, 4, 0), 0);  // spin 4

  // -latke_mass and -latke_kappa together; an unknown precision; a bad boundary.
  Mat B = nullptr;
  PetscOptionsSetValue(nullptr, "-bad_latke_mass", "0.1");
  PetscOptionsSetValue(nullptr, "-bad_latke_kappa", "0.12");
  EXPECT_NE(MatCreateLatkeWilsonClover(fx.g, LATKE_OPERATOR_FULL, nullptr, "bad_", &B), 0);
  PetscOptionsClearValue(nullptr, "-bad_latke_kappa");
  PetscOptionsSetValue(nullptr, "-bad_latke_precision", "quad");
  EXPECT_NE(MatCreateLatkeWilsonClover(fx.g, LATKE_OPERATOR_FULL, nullptr, "bad_", &B), 0);
  PetscOptionsClearValue(nullptr, "-bad_latke_precision");
  PetscOptionsSetValue(nullptr, "-bad_latke_boundary", "1,1,1,2");
  EXPECT_NE(MatCreateLatkeWilsonClover(fx.g, LATKE_OPERATOR_FULL, nullptr, "bad_", &B), 0);
  PetscOptionsClearValue(nullptr, "-bad_latke_boundary");
  // With the bad options gone the same call works, and the prefix reaches the options.
  PetscOptionsClearValue(nullptr, "-bad_latke_mass");
  PetscOptionsSetValue(nullptr, "-bad_latke_kappa", "0.125");
  EXPECT_EQ(MatCreateLatkeWilsonClover(fx.g, LATKE_OPERATOR_FULL, nullptr, "bad_", &B), 0);
  PetscOptionsClearValue(nullptr, "-bad_latke_kappa");
  MatDestroy(&B);
  // A lattice the process grid does not divide.
  LatkeGauge g = nullptr;
  const PetscInt odd[4] = {4, 4, 4, 6}, grid[4] = {1, 1, 1, 4};
  if (world_size() == 4) EXPECT_NE(LatkeGaugeCreateRandom(PETSC_COMM_WORLD, odd, grid, 1, -1, &g), 0);
  const PetscInt two[4] = {1, 1, 1, 2};
  if (world_size() == 1) EXPECT_NE(LatkeGaugeCreateRandom(PETSC_COMM_WORLD, dims, two, 1, -1, &g), 0);
  EXPECT_EQ(g, nullptr);
  PetscPopErrorHandler();
  VecDestroy(&full), VecDestroy(&out);
}

/// What MatView prints for A: an ASCII viewer on A's communicator into a file, read back on
/// that communicator's rank 0 (empty elsewhere).
std::string view_text(Mat A) {
  const MPI_Comm comm = PetscObjectComm(reinterpret_cast<PetscObject>(A));
  int world_rank = 0, size = 1, rank = 0;
  MPI_Comm_rank(PETSC_COMM_WORLD, &world_rank);
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  const std::string file = "test_petsc_view_" + (size == 1 ? std::to_string(world_rank) : std::string("all")) + ".txt";
  PetscViewer v;
  EXPECT_EQ(PetscViewerASCIIOpen(comm, file.c_str(), &v), 0);
  EXPECT_EQ(MatView(A, v), 0);
  PetscViewerDestroy(&v);
  std::string s;
  if (rank != 0) return s;
  std::FILE* f = std::fopen(file.c_str(), "r");
  EXPECT_NE(f, nullptr) << file;
  if (!f) return s;
  char buf[512];
  while (std::fgets(buf, sizeof buf, f)) s += buf;
  std::fclose(f);
  return s;
}

// The default link storage (reconstruct 0, -latke_reconstruct auto): 12 reals on the GPU when
// every link is SU(3), 18 on the CPU and for links that are not SU(3) (here 0.9 times the unit
// gauge, as tadpole-scaled links are); 12 asked for such links is refused naming why; 18 or 12
// given explicitly is taken as given; a storage other than 0, 12 or 18 is refused.
TEST(PetscMat, AutomaticLinkStorage) {
  const char* name = nullptr;
  ASSERT_PETSC(LatkeGetBackend(&name));
  const bool gpu = std::string(name) == "cuda";
  const PetscInt one[4] = {1, 1, 1, 1};
  LatkeGauge su3 = make_gauge(PETSC_COMM_SELF), scaled = nullptr;
  std::vector<PetscScalar> links(static_cast<std::size_t>(dims[0] * dims[1] * dims[2] * dims[3]) * 36, 0.0);
  for (std::size_t m = 0; m < links.size(); m += 9)
    for (int i = 0; i < 3; ++i) links[m + 4 * i] = 0.9;
  ASSERT_PETSC(LatkeGaugeCreateFromArray(PETSC_COMM_SELF, dims, one, links.data(), &scaled));
  const LatkeWilsonCloverParams p = params();
  Mat A = nullptr;
  ASSERT_PETSC(MatCreateLatkeWilsonClover(su3, LATKE_OPERATOR_FULL, &p, nullptr, &A));
  std::string v = view_text(A);
  EXPECT_NE(v.find(gpu ? "links 12 reals (auto)" : "links 18 reals (auto)"), std::string::npos) << v;
  MatDestroy(&A);
  ASSERT_PETSC(MatCreateLatkeWilsonClover(scaled, LATKE_OPERATOR_FULL, &p, nullptr, &A));
  v = view_text(A);
  EXPECT_NE(v.find("links 18 reals (auto)"), std::string::npos) << v;
  MatDestroy(&A);
  PetscOptionsSetValue(nullptr, "-ls_latke_reconstruct", "12");
  ASSERT_PETSC(MatCreateLatkeWilsonClover(su3, LATKE_OPERATOR_FULL, &p, "ls_", &A));
  v = view_text(A);
  EXPECT_NE(v.find("links 12 reals,"), std::string::npos) << v;
  MatDestroy(&A);
  PetscPushErrorHandler(PetscReturnErrorHandler, nullptr);
  EXPECT_NE(MatCreateLatkeWilsonClover(scaled, LATKE_OPERATOR_FULL, &p, "ls_", &A), 0);
  PetscOptionsSetValue(nullptr, "-ls_latke_reconstruct", "18");
  PetscPopErrorHandler();
  ASSERT_PETSC(MatCreateLatkeWilsonClover(su3, LATKE_OPERATOR_FULL, &p, "ls_", &A));
  v = view_text(A);
  EXPECT_NE(v.find("links 18 reals,"), std::string::npos) << v;
  MatDestroy(&A);
  PetscOptionsClearValue(nullptr, "-ls_latke_reconstruct");
  LatkeWilsonCloverParams bad = p;
  bad.reconstruct = 8;
  PetscPushErrorHandler(PetscReturnErrorHandler, nullptr);
  EXPECT_NE(MatCreateLatkeWilsonClover(su3, LATKE_OPERATOR_FULL, &bad, nullptr, &A), 0);
  PetscPopErrorHandler();
  LatkeGaugeDestroy(&su3);
  LatkeGaugeDestroy(&scaled);
}

// MatView names the operator, its parameters and the vector path.
// The gauge handle by path: saved (NERSC and ILDG) and loaded back with the same links and
// plaquette, on this run's grid; a missing file is an error naming it.
TEST(PetscGauge, SavedAndLoadedByPathWithItsLinksAndPlaquette) {
  LatkeGauge g = make_gauge(PETSC_COMM_WORLD);
  PetscInt local[4];
  ASSERT_PETSC(LatkeGaugeGetLattice(g, nullptr, local, nullptr));
  const std::size_t n = static_cast<std::size_t>(local[0] * local[1] * local[2] * local[3]) * 36;
  std::vector<PetscScalar> a(n), b(n);
  ASSERT_PETSC(LatkeGaugeGetLinks(g, a.data()));
  PetscReal pa = 0, pb = 0;
  ASSERT_PETSC(LatkeGaugeGetPlaquette(g, &pa));
  EXPECT_GT(pa, -1.0);
  EXPECT_LT(pa, 1.0);
  for (const char* format : {"nersc", "ildg"}) {
    const std::string path = std::string("test_petsc_gauge.") + format;
    ASSERT_PETSC(LatkeGaugeSave(g, path.c_str(), format));
    LatkeGauge h = nullptr;
    ASSERT_PETSC(LatkeGaugeLoad(PETSC_COMM_WORLD, path.c_str(), nullptr, &h));
    ASSERT_PETSC(LatkeGaugeGetLinks(h, b.data()));
    ASSERT_PETSC(LatkeGaugeGetPlaquette(h, &pb));
    EXPECT_EQ(pa, pb) << format;
    double d = 0;
    for (std::size_t i = 0; i < n; ++i) d = std::max(d, std::abs(cvec::value_type(a[i]) - cvec::value_type(b[i])));
    EXPECT_EQ(d, 0.0) << format << ": links differ after a double-precision round trip";
    LatkeGaugeDestroy(&h);
  }
  LatkeGauge missing = nullptr;
  PetscPushErrorHandler(PetscReturnErrorHandler, nullptr);
  EXPECT_NE(LatkeGaugeLoad(PETSC_COMM_WORLD, "no-such-gauge.nersc", nullptr, &missing), 0);
  EXPECT_NE(LatkeGaugeSave(g, "test_petsc_gauge.x", "xml"), 0);
  PetscPopErrorHandler();
  EXPECT_EQ(missing, nullptr);
  LatkeGaugeDestroy(&g);
}

TEST(PetscMat, View) {
  Fixture fx(LATKE_OPERATOR_EVEN_ODD);
  const std::string s = view_text(fx.A);  // ASCII into a file, read back on rank 0
  int rank = 0;
  MPI_Comm_rank(PETSC_COMM_WORLD, &rank);
  if (rank == 0)
    for (const char* want : {"Wilson-clover even-odd operator, symmetric Schur complement on the even sites",
                             "mass m = 0.1", "c_sw = 1", "double precision", "vectors:", "4x4x4x8", "backend"})
      EXPECT_NE(s.find(want), std::string::npos) << "missing '" << want << "' in:\n" << s;
}

// A viewer that needs the entries of the matrix-free operator (binary) gets it assembled: read
// back as AIJ, its product is the operator's. A lattice too large to assemble is refused
// (PETSC_ERR_SUP) instead of an empty file. MatGetInfo counts the stencil's entries: two hops
// of 12x12 blocks (33 sites) per row of the Schur complement, 9 sites for the full operator.
TEST(PetscMat, BinaryViewAssemblesAndGetInfoCountsTheStencil) {
  Fixture fx(LATKE_OPERATOR_EVEN_ODD);
  const char* file = "test_petsc_mat.bin";
  PetscViewer v;
  ASSERT_PETSC(PetscViewerBinaryOpen(PETSC_COMM_WORLD, file, FILE_MODE_WRITE, &v));
  ASSERT_PETSC(MatView(fx.A, v));
  PetscViewerDestroy(&v);
  PetscInt m = 0, n = 0, rows = 0;
  MatGetLocalSize(fx.A, &m, &n);
  MatGetSize(fx.A, &rows, nullptr);
  Mat B;
  MatCreate(PETSC_COMM_WORLD, &B);
  MatSetSizes(B, m, n, PETSC_DETERMINE, PETSC_DETERMINE);
  MatSetType(B, MATAIJ);
  ASSERT_PETSC(PetscViewerBinaryOpen(PETSC_COMM_WORLD, file, FILE_MODE_READ, &v));
  ASSERT_PETSC(MatLoad(B, v));
  PetscViewerDestroy(&v);
  Vec x = random_vec(fx.A, 5), ax, bx;
  VecDuplicate(x, &ax);
  VecDuplicate(x, &bx);
  ASSERT_PETSC(MatMult(fx.A, x, ax));
  ASSERT_PETSC(MatMult(B, x, bx));
  PetscReal na = 0, d = 0;
  VecNorm(ax, NORM_2, &na);
  VecAXPY(bx, -1.0, ax);
  VecNorm(bx, NORM_2, &d);
  EXPECT_LT(d, 1e-12 * na);
  EXPECT_GT(na, 0.0);
  MatInfo info;
  ASSERT_PETSC(MatGetInfo(fx.A, MAT_GLOBAL_SUM, &info));
  EXPECT_EQ(info.nz_used, static_cast<double>(rows) * 33 * 12);
  EXPECT_GT(info.memory, 0.0);
  MatInfo b_info;
  MatGetInfo(B, MAT_GLOBAL_SUM, &b_info);
  EXPECT_LE(b_info.nz_used, info.nz_used);  // the stencil's count bounds the entries
  VecDestroy(&x), VecDestroy(&ax), VecDestroy(&bx), MatDestroy(&B);

  LatkeGauge g = nullptr;
  const PetscInt big[4] = {8, 8, 8, 16};  // 8192 sites: 98304 rows of the full operator
  ASSERT_EQ(LatkeGaugeCreateRandom(PETSC_COMM_WORLD, big, nullptr, 1, -1.0, &g), 0);
  const LatkeWilsonCloverParams p = params();
  Mat F = nullptr;
  ASSERT_PETSC(MatCreateLatkeWilsonClover(g, LATKE_OPERATOR_FULL, &p, nullptr, &F));
  ASSERT_PETSC(MatGetInfo(F, MAT_GLOBAL_SUM, &info));
  EXPECT_EQ(info.nz_used, 98304.0 * 9 * 12);
  ASSERT_PETSC(PetscViewerBinaryOpen(PETSC_COMM_WORLD, "test_petsc_mat_big.bin", FILE_MODE_WRITE, &v));
  PetscPushErrorHandler(PetscReturnErrorHandler, nullptr);
  EXPECT_EQ(MatView(F, v), PETSC_ERR_SUP);
  PetscPopErrorHandler();
  PetscViewerDestroy(&v);
  MatDestroy(&F);
  LatkeGaugeDestroy(&g);
}

// The programs' answer to a solve that converged on its own system but missed the full
// residual: a pass from the solution with the tolerance tightened by the miss (at most 100
// times a pass), at most two, none where the solver did not converge or nothing was missed.
TEST(PetscProgram, SolveOnTightensByTheMissAtMostTwice) {
  using latke::petsc::SolveChecked;
  struct Fake {
    std::vector<double> residuals;  // the full residual after each pass
    std::vector<double> steps;      // the tolerances the passes were given
    bool converges = true;
    SolveChecked run(double residual, bool converged) {
      SolveChecked s;
      s.converged = converged;
      s.iterations = 10;
      s.residual = residual;
      const auto solve = [&](double step, bool* c, long* its) -> PetscErrorCode {
        steps.push_back(step);
        *c = converges;
        *its = 5;
        return 0;
      };
      const auto residual_of = [&](double* r) -> PetscErrorCode {
        *r = residuals.at(steps.size() - 1);
        return 0;
      };
      EXPECT_EQ(latke::petsc::solve_on("test", "-tol", 1e-10, 2e-10, solve, residual_of, s), 0);
      return s;
    }
  };
  {  // a miss by a hair: one pass at half the miss, met
    Fake f;
    f.residuals = {4e-11};
    const SolveChecked s = f.run(1.25e-10, true);
    ASSERT_EQ(f.steps.size(), 1u);
    EXPECT_DOUBLE_EQ(f.steps[0], 2e-10 * 0.5 * 1e-10 / 1.25e-10);
    EXPECT_EQ(s.passes, 1);
    EXPECT_EQ(s.iterations, 15);
    EXPECT_TRUE(s.met(1e-10));
  }
  {  // a miss by 10^6: each pass tightens 100 times, two passes, still missed
    Fake f;
    f.residuals = {1e-6, 1e-7};
    const SolveChecked s = f.run(1e-4, true);
    ASSERT_EQ(f.steps.size(), 2u);
    EXPECT_DOUBLE_EQ(f.steps[0], 2e-12);
    EXPECT_DOUBLE_EQ(f.steps[1], 2e-14);
    EXPECT_EQ(s.passes, 2);
    EXPECT_DOUBLE_EQ(s.residual, 1e-7);
    EXPECT_FALSE(s.met(1e-10));
  }
  {  // a pass that did not converge ends the passes
    Fake f;
    f.converges = false;
    f.residuals = {5e-10};
    const SolveChecked s = f.run(2e-10, true);
    EXPECT_EQ(f.steps.size(), 1u);
    EXPECT_FALSE(s.converged);
    EXPECT_FALSE(s.met(1e-10));
  }
  {  // not converged, or nothing missed: no pass
    Fake f;
    EXPECT_EQ(f.run(2e-10, false).passes, 0);
    EXPECT_EQ(f.run(1e-10, true).passes, 0);
    EXPECT_TRUE(f.steps.empty());
  }
}

}  // namespace
