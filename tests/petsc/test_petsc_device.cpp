// The GPU-resident PETSc path (a PETSc built with CUDA and Latke's CUDA backend): Latke's
// matrices hand out device vectors; a Krylov solve on them moves no vector between host and
// device (PETSc's copy counters and Latke's staging count stay unchanged); host vectors
// handed to a device operator are staged, counted, and give the same answer; PETSc's and
// Latke's kernels on the same vectors stay in order. Where the device path is not available
// (a host-only PETSc, a CPU-only Latke, no GPU) the tests that need it skip and say why; the
// others check the host path's side of the same rules. Runs on 1 and 2 ranks.
#include <gtest/gtest.h>
#include <petscksp.h>

#include <cmath>
#include <complex>
#include <string>
#include <vector>

#include "src/core/petsc_device.h"
#include "latke/latke.h"

namespace {

#define ASSERT_PETSC(call) ASSERT_EQ((call), 0) << #call

latke::Backend backend() {
  const char* name = nullptr;
  EXPECT_EQ(LatkeGetBackend(&name), 0);
  return latke::parse_backend(name);
}

bool device_path() { return latke::petsc::device_vectors(backend()); }

/// Why the device path is not available here (empty when it is).
std::string no_device_path_reason() {
  if (device_path()) return "";
  if (!latke::petsc::device_path_compiled)
    return "no device path in this build (PETSc " + std::to_string(PETSC_VERSION_MAJOR) + "." +
           std::to_string(PETSC_VERSION_MINOR) + " without CUDA, or Latke without CUDA)";
  if (backend() != latke::Backend::cuda) return "the CUDA backend is not active (no GPU visible)";
  return "PETSc's device is not the CUDA GPU Latke uses";
}

#define SKIP_WITHOUT_DEVICE_PATH()                                \
  do {                                                            \
    const std::string why = no_device_path_reason();              \
    if (!why.empty()) GTEST_SKIP() << "device path: " << why;     \
  } while (0)

struct Fixture {
  LatkeGauge g = nullptr;
  Mat A = nullptr;
  Fixture(const PetscInt dims[4], LatkeOperatorForm form, const char* prefix = nullptr) {
    EXPECT_EQ(LatkeGaugeCreateRandom(PETSC_COMM_WORLD, dims, nullptr, 11, -1.0, &g), 0);
    LatkeWilsonCloverParams p;
    LatkeWilsonCloverParamsDefault(&p);
    p.mass = 0.1;
    p.csw = 1.0;
    EXPECT_EQ(MatCreateLatkeWilsonClover(g, form, &p, prefix, &A), 0);
  }
  ~Fixture() {
    MatDestroy(&A);
    LatkeGaugeDestroy(&g);
  }
};

const PetscInt small[4] = {4, 4, 4, 8};
const PetscInt medium[4] = {8, 8, 8, 16};

std::string type_of(Vec v) {
  VecType t = nullptr;
  EXPECT_EQ(VecGetType(v, &t), 0);
  return t ? t : "";
}

/// A vector of A's full shape of the given type (VECSTANDARD: a host vector).
Vec vec_of_type(Mat A, VecType type) {
  Vec v = nullptr, like = nullptr;
  PetscInt n = 0;
  EXPECT_EQ(MatLatkeCreateFullVecs(A, &like, nullptr), 0);
  EXPECT_EQ(VecGetLocalSize(like, &n), 0);
  VecDestroy(&like);
  EXPECT_EQ(VecCreate(PETSC_COMM_WORLD, &v), 0);
  EXPECT_EQ(VecSetSizes(v, n, PETSC_DETERMINE), 0);
  EXPECT_EQ(VecSetType(v, type), 0);
  return v;
}

/// |a - b| / |b| over all ranks, through the lexicographic layout (any vector type).
double rel_diff(Mat A, Vec a, Vec b) {
  PetscInt n = 0;
  EXPECT_EQ(VecGetLocalSize(a, &n), 0);
  std::vector<PetscScalar> la(static_cast<std::size_t>(n)), lb(la.size());
  EXPECT_EQ(LatkeVecGetLexicographic(A, a, la.data()), 0);
  EXPECT_EQ(LatkeVecGetLexicographic(A, b, lb.data()), 0);
  double s[2] = {0, 0}, t[2];
  for (std::size_t i = 0; i < la.size(); ++i) s[0] += std::norm(la[i] - lb[i]), s[1] += std::norm(lb[i]);
  MPI_Allreduce(s, t, 2, MPI_DOUBLE, MPI_SUM, PETSC_COMM_WORLD);
  return std::sqrt(t[0] / t[1]);
}

/// Copies between host and device so far on this rank: PETSc's counters (all its copies,
/// reduction results included), the count of its full-vector offload events, and Latke's
/// staging copies. PETSc's event counts need its default log handler (started by the tests).
struct Copies {
  double petsc_to_device = 0, petsc_to_host = 0;              ///< PETSc's copy counters
  double petsc_to_device_bytes = 0, petsc_to_host_bytes = 0;  ///< and their bytes
  int vec_to_device = 0, vec_to_host = 0;                     ///< VecCUDACopyTo / VecCUDACopyFrom events
  int latke_stage_events = 0;                                 ///< LatkeStage events
  PetscInt staged_to_device = 0, staged_to_host = 0;          ///< Latke's staging copies
};

int event_count(const char* name) {
  PetscLogEvent id = -1;
  PetscEventPerfInfo info;
  PetscBool logging = PETSC_FALSE;
  PetscMemzero(&info, sizeof info);
  EXPECT_EQ(PetscLogIsActive(&logging), 0);
  if (!logging) return 0;
  EXPECT_EQ(PetscLogEventGetId(name, &id), 0);
  if (id >= 0) {
    EXPECT_EQ(PetscLogEventGetPerfInfo(PETSC_DETERMINE, id, &info), 0);
  }
  return info.count;
}

Copies copies() {
  Copies c;
#if defined(PETSC_HAVE_DEVICE)
  c.petsc_to_device = petsc_ctog_ct, c.petsc_to_host = petsc_gtoc_ct;
  c.petsc_to_device_bytes = petsc_ctog_sz, c.petsc_to_host_bytes = petsc_gtoc_sz;
#endif
#if defined(PETSC_HAVE_CUDA)
  c.vec_to_device = event_count("VecCUDACopyTo");
  c.vec_to_host = event_count("VecCUDACopyFrom");
#endif
  c.latke_stage_events = event_count("LatkeStage");
  EXPECT_EQ(LatkeGetStagingCounts(&c.staged_to_device, &c.staged_to_host), 0);
  return c;
}

// MatCreateVecs and MatLatkeCreateFullVecs give device vectors exactly where the device path
// is on; -vec_type under the matrix's prefix overrides, and asking for device vectors
// where there can be none is an error naming the option.
TEST(PetscDevice, VectorTypeFollowsTheBackend) {
  const bool dev = device_path();
  const std::string want = dev ? "cuda" : "standard";
  {
    Fixture fx(small, LATKE_OPERATOR_EVEN_ODD);
    Vec x, b;
    ASSERT_PETSC(MatCreateVecs(fx.A, &x, nullptr));
    ASSERT_PETSC(MatLatkeCreateFullVecs(fx.A, &b, nullptr));
    for (Vec v : {x, b}) {
      const std::string t = type_of(v);
      EXPECT_EQ(t.find("cuda") != std::string::npos, dev) << "vector type " << t << ", expected a " << want << " type";
    }
    VecDestroy(&x), VecDestroy(&b);
  }
  PetscOptionsSetValue(nullptr, "-host_vec_type", "standard");
  {
    Fixture fx(small, LATKE_OPERATOR_EVEN_ODD, "host_");
    Vec x;
    ASSERT_PETSC(MatCreateVecs(fx.A, &x, nullptr));
    EXPECT_EQ(type_of(x).find("cuda"), std::string::npos) << type_of(x);
    VecDestroy(&x);
  }
  PetscOptionsClearValue(nullptr, "-host_vec_type");
  if (!dev) {
    PetscOptionsSetValue(nullptr, "-dev_vec_type", "cuda");
    PetscPushErrorHandler(PetscReturnErrorHandler, nullptr);
    LatkeGauge g = nullptr;
    Mat B = nullptr;
    EXPECT_EQ(LatkeGaugeCreateRandom(PETSC_COMM_WORLD, small, nullptr, 1, -1.0, &g), 0);
    EXPECT_NE(MatCreateLatkeWilsonClover(g, LATKE_OPERATOR_FULL, nullptr, "dev_", &B), 0);
    PetscPopErrorHandler();
    PetscOptionsClearValue(nullptr, "-dev_vec_type");
    MatDestroy(&B);
    LatkeGaugeDestroy(&g);
  }
}

// A host vector given to an operator on the GPU is staged (and MatLatkeVecIsStaged says so):
// the same answer as the matrix's own vectors, one staging copy each way, counted by Latke (LatkeStage) and, where
// PETSc has a device, by PETSc's copy counters too. On the CPU backend nothing is staged.
TEST(PetscDevice, HostVectorsAreStagedAndCounted) {
  ASSERT_PETSC(PetscLogDefaultBegin());
  Fixture fx(small, LATKE_OPERATOR_FULL);
  Vec xh = vec_of_type(fx.A, VECSTANDARD), yh = vec_of_type(fx.A, VECSTANDARD), x, y;
  ASSERT_PETSC(MatCreateVecs(fx.A, &x, &y));
  ASSERT_PETSC(LatkeVecSetNoiseSource(fx.A, xh, LATKE_NOISE_Z4, 3));
  ASSERT_PETSC(LatkeVecSetNoiseSource(fx.A, x, LATKE_NOISE_Z4, 3));
  const bool gpu = backend() == latke::Backend::cuda;
  const bool own_staged = gpu && !device_path();  // the matrix's vectors are host vectors too
  PetscBool staged = PETSC_FALSE;                 // what MatLatkeVecIsStaged says is what the counts below show
  ASSERT_PETSC(MatLatkeVecIsStaged(fx.A, xh, &staged));
  EXPECT_EQ(staged == PETSC_TRUE, gpu) << "a host vector";
  ASSERT_PETSC(MatLatkeVecIsStaged(fx.A, x, &staged));
  EXPECT_EQ(staged == PETSC_TRUE, own_staged) << "the matrix's own vector";

  const Copies c0 = copies();
  ASSERT_PETSC(MatMult(fx.A, xh, yh));
  const Copies c1 = copies();
  EXPECT_EQ(c1.staged_to_device - c0.staged_to_device, gpu ? 1 : 0);
  EXPECT_EQ(c1.staged_to_host - c0.staged_to_host, gpu ? 1 : 0);
  EXPECT_EQ(c1.latke_stage_events - c0.latke_stage_events, gpu ? 2 : 0) << "LatkeStage events";
#if defined(PETSC_HAVE_DEVICE)
  EXPECT_EQ(c1.petsc_to_device - c0.petsc_to_device, gpu ? 1 : 0) << "the staging copy in PETSc's CPU->GPU counter";
  EXPECT_EQ(c1.petsc_to_host - c0.petsc_to_host, gpu ? 1 : 0) << "the staging copy in PETSc's GPU->CPU counter";
#endif
  ASSERT_PETSC(MatMult(fx.A, x, y));
  const Copies c2 = copies();
  EXPECT_EQ(c2.staged_to_device - c1.staged_to_device, own_staged ? 1 : 0);
  EXPECT_EQ(c2.staged_to_host - c1.staged_to_host, own_staged ? 1 : 0);
  if (device_path()) {
    EXPECT_EQ(c2.petsc_to_device, c1.petsc_to_device) << "a MatMult on device vectors copied to the GPU";
    EXPECT_EQ(c2.petsc_to_host, c1.petsc_to_host) << "a MatMult on device vectors copied to the host";
  }
  EXPECT_LT(rel_diff(fx.A, yh, y), 1e-14);
  VecDestroy(&xh), VecDestroy(&yh), VecDestroy(&x), VecDestroy(&y);
}

/// Solves the even-odd system on device vectors to 1e-10 and checks the copies made by
/// KSPSolve alone: no full vector either way, by any count.
void device_solve(const char* ksp_type, const char* pc_type) {
  ASSERT_PETSC(PetscLogDefaultBegin());
  Fixture fx(medium, LATKE_OPERATOR_EVEN_ODD);
  Vec x, b, xh, bh;
  ASSERT_PETSC(MatLatkeCreateFullVecs(fx.A, &x, &b));
  ASSERT_PETSC(MatCreateVecs(fx.A, &xh, &bh));
  ASSERT_NE(type_of(xh).find("cuda"), std::string::npos) << type_of(xh);
  ASSERT_PETSC(LatkeVecSetNoiseSource(fx.A, b, LATKE_NOISE_Z2, 5));
  ASSERT_PETSC(MatLatkePrepareSource(fx.A, b, bh));
  KSP ksp;
  PC pc;
  ASSERT_PETSC(KSPCreate(PETSC_COMM_WORLD, &ksp));
  ASSERT_PETSC(KSPSetOptionsPrefix(ksp, "devsolve_"));
  PetscOptionsSetValue(nullptr, "-devsolve_pc_latke_schwarz_block", "4,4,4,4");
  ASSERT_PETSC(KSPSetOperators(ksp, fx.A, fx.A));
  ASSERT_PETSC(KSPSetType(ksp, ksp_type));
  ASSERT_PETSC(KSPGMRESSetRestart(ksp, 20));
  ASSERT_PETSC(KSPGCRSetRestart(ksp, 20));
  ASSERT_PETSC(KSPGetPC(ksp, &pc));
  ASSERT_PETSC(PCSetType(pc, pc_type));
  ASSERT_PETSC(KSPSetTolerances(ksp, 1e-10, 1e-30, PETSC_DEFAULT, 2000));
  ASSERT_PETSC(KSPSetFromOptions(ksp));
  ASSERT_PETSC(KSPSetUp(ksp));
  PetscInt applications0 = 0, applications1 = 0;
  ASSERT_PETSC(MatLatkeGetApplications(fx.A, &applications0));

  const Copies c0 = copies();
  ASSERT_PETSC(KSPSolve(ksp, bh, xh));
  const Copies c1 = copies();

  KSPConvergedReason reason;
  ASSERT_PETSC(KSPGetConvergedReason(ksp, &reason));
  EXPECT_GT(reason, 0) << KSPConvergedReasons[reason];
  ASSERT_PETSC(MatLatkeGetApplications(fx.A, &applications1));
  EXPECT_GT(applications1, applications0) << "the solve did not run through Latke's operator";
  PetscInt n = 0;
  ASSERT_PETSC(VecGetLocalSize(xh, &n));
  const double vector_bytes = static_cast<double>(n) * sizeof(PetscScalar);
  EXPECT_EQ(c1.staged_to_device, c0.staged_to_device) << "Latke staged vectors to the GPU during the solve";
  EXPECT_EQ(c1.staged_to_host, c0.staged_to_host) << "Latke staged vectors to the host during the solve";
  EXPECT_EQ(c1.latke_stage_events, c0.latke_stage_events) << "LatkeStage events during the solve";
  EXPECT_EQ(c1.vec_to_device, c0.vec_to_device) << "PETSc offloaded vectors to the GPU during the solve";
  EXPECT_EQ(c1.vec_to_host, c0.vec_to_host) << "PETSc copied vectors back to the host during the solve";
  // PETSc's counters also count the few scalars of each reduction it brings to the host;
  // together they stay below one vector, which a single vector copy would reach.
  EXPECT_LT(c1.petsc_to_device_bytes - c0.petsc_to_device_bytes, vector_bytes) << (c1.petsc_to_device - c0.petsc_to_device) << " CPU->GPU copies";
  EXPECT_LT(c1.petsc_to_host_bytes - c0.petsc_to_host_bytes, vector_bytes) << (c1.petsc_to_host - c0.petsc_to_host) << " GPU->CPU copies";

  // The counters are alive: reading the solution on the host is one vector copied back.
  const PetscScalar* a = nullptr;
  ASSERT_PETSC(VecGetArrayRead(xh, &a));
  ASSERT_PETSC(VecRestoreArrayRead(xh, &a));
  const Copies c2 = copies();
  EXPECT_EQ(c2.vec_to_host, c1.vec_to_host + 1) << "PETSc's VecCUDACopyFrom event missed a copy";
  EXPECT_GE(c2.petsc_to_host_bytes - c1.petsc_to_host_bytes, vector_bytes) << "PETSc's GPU->CPU counter missed a copy";

  PetscOptionsClearValue(nullptr, "-devsolve_pc_latke_schwarz_block");
  KSPDestroy(&ksp);
  VecDestroy(&x), VecDestroy(&b), VecDestroy(&xh), VecDestroy(&bh);
}

// A solve on device vectors copies no vector between host and device: PETSc's Krylov methods
// and Latke's operator and Schwarz preconditioner all work in GPU memory.
TEST(PetscDevice, SolveCopiesNoVectors) {
  SKIP_WITHOUT_DEVICE_PATH();
  device_solve(KSPGCR, PCLATKESCHWARZ);
  device_solve(KSPFGMRES, PCLATKESCHWARZ);
  device_solve(KSPFGMRES, PCNONE);
}

// PETSc's vector kernels (its stream) and Latke's operator (Latke's compute stream) on the
// same device vectors, back to back with no host synchronization in between, give what the
// same sequence gives on host vectors, where every step is complete before the next: the
// CUDA events order reads after writes and writes after reads in both directions.
TEST(PetscDevice, PetscAndLatkeKernelsStayInOrder) {
  SKIP_WITHOUT_DEVICE_PATH();
  Fixture fx(medium, LATKE_OPERATOR_FULL);
  Vec x, y, xh = vec_of_type(fx.A, VECSTANDARD), yh = vec_of_type(fx.A, VECSTANDARD);
  ASSERT_PETSC(MatCreateVecs(fx.A, &x, &y));
  ASSERT_PETSC(LatkeVecSetNoiseSource(fx.A, x, LATKE_NOISE_Z4, 9));
  ASSERT_PETSC(LatkeVecSetNoiseSource(fx.A, xh, LATKE_NOISE_Z4, 9));
  for (auto [u, v] : {std::pair{x, y}, std::pair{xh, yh}}) {
    for (int k = 0; k < 20; ++k) {
      ASSERT_PETSC(VecScale(u, 0.25));         // PETSc writes u ...
      ASSERT_PETSC(MatMult(fx.A, u, v));       // ... Latke reads u and writes v ...
      ASSERT_PETSC(VecAXPY(u, 0.5, v));        // ... PETSc reads v and overwrites u, which Latke read
      ASSERT_PETSC(VecAYPX(v, -1.0, u));       // ... PETSc overwrites v, which Latke wrote
    }
  }
  EXPECT_LT(rel_diff(fx.A, x, xh), 1e-12);
  EXPECT_LT(rel_diff(fx.A, y, yh), 1e-12);
  VecDestroy(&x), VecDestroy(&y), VecDestroy(&xh), VecDestroy(&yh);
}

}  // namespace
