// The Schwarz preconditioner as a PETSc PC (-pc_type latke_schwarz, registered by
// LatkeInitialize) and as a PCSHELL (PCShellSetLatkeSchwarz), both through PCAdapter
// (pc_adapter.h). With device vectors the applies take them in place (VecField), like
// MatMult.
#include <chrono>

#include "petsc/mat_shell.h"
#include "petsc/pc_adapter.h"
#include "petsc/schwarz_options.h"
#include "preconditioners/schwarz/schwarz.h"
#include "src/core/error.h"
#include "src/core/options.h"
#include "src/core/petsc_compat.h"

namespace latke {
SchwarzParam schwarz_param_from_options(MPI_Comm comm, const char* prefix, SchwarzParam p) {
  std::string precision, type;
  long iterations = p.iterations, cycles = p.cycles;
  bool boundary_update = p.boundary_update;
  bool on_chip = p.on_chip, half_pairs = p.half_pairs != SchwarzParam::HalfPairs::off, given_block = false,
       given_pairs = false;
  double omega = p.omega;
  read_options(comm, prefix ? prefix : "", "Latke Schwarz preconditioner options", [&](OptionGroup& o) {
    p.block = o.coords("-pc_latke_schwarz_block", p.block,
                       "Block extents X,Y,Z,T (even, dividing the local volume; by default halved where they do not)");
    given_block = o.given("-pc_latke_schwarz_block");
    iterations = o.integer("-pc_latke_schwarz_iterations", p.iterations, "MR steps per block per application");
    precision = o.choice("-pc_latke_schwarz_precision", to_string(p.precision), {"double", "single", "half"},
                         "Block solve storage");
    type = o.choice("-pc_latke_schwarz_type", to_string(p.type), {"additive", "multiplicative"},
                    "Additive, or multiplicative (red-black SAP)");
    omega = o.real("-pc_latke_schwarz_omega", p.omega, "Relaxation weight on each correction, in (0, 2)");
    cycles = o.integer("-pc_latke_schwarz_cycles", p.cycles,
                       "Schwarz cycles per application (each from the residual of the earlier ones)");
    on_chip = o.flag("-pc_latke_schwarz_on_chip", p.on_chip,
                        "Each block's MR steps in one kernel with the block in shared memory (else streamed over the rank)");
    half_pairs = o.flag("-pc_latke_schwarz_half_pairs", half_pairs,
                        "Block MR steps in FP16 arithmetic, two blocks per team (by default on CUDA where the "
                        "blocks are half precision on chip; given, always)");
    given_pairs = o.given("-pc_latke_schwarz_half_pairs");
    boundary_update = o.flag("-pc_latke_schwarz_boundary_update", p.boundary_update,
                             "Multiplicative: the residual between colours from the block solves and the hops "
                             "across block boundaries (where the blocks are on chip); 0: from the operator");
  });
  p.boundary_update = boundary_update;
  p.on_chip = on_chip;
  if (given_pairs) p.half_pairs = half_pairs ? SchwarzParam::HalfPairs::on : SchwarzParam::HalfPairs::off;
  if (given_block) p.adapt_block = false;
  require(iterations >= 1, "-", prefix ? prefix : "", "pc_latke_schwarz_iterations ", iterations,
          ": expected at least 1");
  p.iterations = static_cast<int>(iterations);
  p.precision = parse_precision(precision);
  p.type = parse_schwarz_type(type);
  require(omega > 0 && omega < 2, "-", prefix ? prefix : "", "pc_latke_schwarz_omega ", omega,
          ": expected a number in (0, 2)");
  p.omega = omega;
  require(cycles >= 1, "-", prefix ? prefix : "", "pc_latke_schwarz_cycles ", cycles, ": expected at least 1");
  p.cycles = static_cast<int>(cycles);
  return p;
}
}  // namespace latke

namespace latke::petsc {
namespace {

struct SchwarzContext {
  static constexpr const char* type = PCLATKESCHWARZ;
  SchwarzParam param;
  std::shared_ptr<ShellOperator> op;
  LatkeOperatorForm form = LATKE_OPERATOR_EVEN_ODD;
  std::unique_ptr<SchwarzPreconditioner> k;
  double setup_seconds = 0;
  long applies = 0;
  ColumnSets columns;
};

void read_params(MPI_Comm comm, const char* prefix, SchwarzParam& p) { p = schwarz_param_from_options(comm, prefix, p); }

void set_up(SchwarzContext& c, Mat pmat) {
  const auto t0 = std::chrono::steady_clock::now();
  MatContext& m = context_of(pmat);
  c.param.block = schwarz_block_for(*m.op->lattice(), c.param);
  check_schwarz_block(*m.op->lattice(), c.param.block);
  c.op = m.op;
  c.form = m.form;
  c.k = std::make_unique<SchwarzPreconditioner>(
      [&](const Coords& block) { return c.op->linear_operator(c.form, c.param.precision, block); }, c.param);
  synchronize(c.op->backend());
  c.setup_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

PetscErrorCode view(SchwarzContext& c, PetscViewer viewer) {
  PetscBool ascii = PETSC_FALSE;
  PetscFunctionBeginUser;
  PetscCall(PetscObjectTypeCompare(reinterpret_cast<PetscObject>(viewer), PETSCVIEWERASCII, &ascii));
  if (!ascii) PetscFunctionReturn(0);
  const SchwarzParam& p = c.param;
  PetscCall(PetscViewerASCIIPrintf(viewer,
                                   "Latke Schwarz: %s, blocks %dx%dx%dx%d, %d cycle(s) of %d MR steps, %s precision, omega %g\n",
                                   to_string(p.type), p.block[0], p.block[1], p.block[2], p.block[3], p.cycles,
                                   p.iterations, to_string(p.precision), p.omega));
  if (c.k) {
    PetscCall(PetscViewerASCIIPrintf(
        viewer, "  %d blocks per rank, solved %s; block operator: %s; set up in %.3f s; %ld applications\n",
        c.k->block_count(),
        (std::string(c.k->block_solves()) + (c.k->on_chip() ? " (one kernel per colour)" : " over the rank")).c_str(),
        c.k->block_operator().c_str(), c.setup_seconds, c.applies));
    if (p.type == SchwarzType::multiplicative || p.cycles > 1)
      PetscCall(PetscViewerASCIIPrintf(
          viewer, "  residual between %s: %s\n", p.type == SchwarzType::multiplicative ? "colours" : "cycles",
          c.k->boundary_update() ? "updated across block boundaries" : "recomputed with the operator"));
  }
  PetscFunctionReturn(0);
}

using Adapter = PCAdapter<SchwarzContext>;

PetscErrorCode PCSetUp_LatkeSchwarz(PC pc) {
  PetscFunctionBeginUser;
  PetscCall(guarded(Adapter::comm(pc), [&] { set_up(Adapter::registered(pc), pc->pmat); }));
  PetscFunctionReturn(0);
}

PetscErrorCode PCSetFromOptions_LatkeSchwarz(PC pc, compat::OptionItems) {
  const char* prefix = nullptr;
  PetscFunctionBeginUser;
  PetscCall(PCGetOptionsPrefix(pc, &prefix));
  PetscCall(guarded(Adapter::comm(pc), [&] { read_params(Adapter::comm(pc), prefix, Adapter::registered(pc).param); }));
  PetscFunctionReturn(0);
}

/// A PCLatkeSchwarzSet* call: f changes the parameters (Adapter::change).
template <typename F>
PetscErrorCode change_param(PC pc, F&& f) {
  return Adapter::change(pc, [&](SchwarzContext& c) { f(c.param); });
}

PetscErrorCode SetBlock(PC pc, const PetscInt block[4]) {
  return change_param(pc, [&](SchwarzParam& p) {
    require(block != nullptr, "PCLatkeSchwarzSetBlock: block is NULL");
    for (int mu = 0; mu < 4; ++mu)
      require(block[mu] >= 1, "PCLatkeSchwarzSetBlock: block[", mu, "] ", block[mu], ": expected a positive extent");
    p.block = Coords{static_cast<int>(block[0]), static_cast<int>(block[1]), static_cast<int>(block[2]),
                     static_cast<int>(block[3])};
    p.adapt_block = false;
  });
}

PetscErrorCode SetIterations(PC pc, PetscInt iterations) {
  return change_param(pc, [&](SchwarzParam& p) {
    require(iterations >= 1, "PCLatkeSchwarzSetIterations: iterations ", iterations, ": expected at least 1");
    p.iterations = static_cast<int>(iterations);
  });
}

PetscErrorCode SetCycles(PC pc, PetscInt cycles) {
  return change_param(pc, [&](SchwarzParam& p) {
    require(cycles >= 1, "PCLatkeSchwarzSetCycles: cycles ", cycles, ": expected at least 1");
    p.cycles = static_cast<int>(cycles);
  });
}

PetscErrorCode SetType(PC pc, LatkeSchwarzType type) {
  return change_param(pc, [&](SchwarzParam& p) {
    require(type == LATKE_SCHWARZ_ADDITIVE || type == LATKE_SCHWARZ_MULTIPLICATIVE, "PCLatkeSchwarzSetType: type ",
            static_cast<int>(type), ": expected LATKE_SCHWARZ_ADDITIVE or LATKE_SCHWARZ_MULTIPLICATIVE");
    p.type = type == LATKE_SCHWARZ_ADDITIVE ? SchwarzType::additive : SchwarzType::multiplicative;
  });
}

PetscErrorCode SetPrecision(PC pc, LatkePrecision precision) {
  return change_param(pc, [&](SchwarzParam& p) {
    require(
        precision == LATKE_PRECISION_DOUBLE || precision == LATKE_PRECISION_SINGLE || precision == LATKE_PRECISION_HALF,
        "PCLatkeSchwarzSetPrecision: precision ", static_cast<int>(precision),
        ": expected LATKE_PRECISION_DOUBLE, _SINGLE or _HALF");
    p.precision = precision == LATKE_PRECISION_DOUBLE   ? Precision::double_
                  : precision == LATKE_PRECISION_SINGLE ? Precision::single
                                                        : Precision::half;
  });
}

/// The setters of every latke_schwarz PC (Adapter::methods).
PetscErrorCode compose_methods(PC pc, bool on) {
  const auto o = reinterpret_cast<PetscObject>(pc);
  PetscFunctionBeginUser;
  PetscCall(PetscObjectComposeFunction(o, "PCLatkeSchwarzSetBlock_C", on ? SetBlock : nullptr));
  PetscCall(PetscObjectComposeFunction(o, "PCLatkeSchwarzSetIterations_C", on ? SetIterations : nullptr));
  PetscCall(PetscObjectComposeFunction(o, "PCLatkeSchwarzSetType_C", on ? SetType : nullptr));
  PetscCall(PetscObjectComposeFunction(o, "PCLatkeSchwarzSetCycles_C", on ? SetCycles : nullptr));
  PetscCall(PetscObjectComposeFunction(o, "PCLatkeSchwarzSetPrecision_C", on ? SetPrecision : nullptr));
  PetscFunctionReturn(0);
}

}  // namespace
}  // namespace latke::petsc

using namespace latke::petsc;

extern "C" {

PetscErrorCode PCCreate_LatkeSchwarz(PC pc) {
  PetscFunctionBeginUser;
  PetscCall(Adapter::install(pc, PCSetUp_LatkeSchwarz, PCSetFromOptions_LatkeSchwarz, compose_methods));
  PetscFunctionReturn(0);
}

PetscErrorCode PCLatkeSchwarzSetBlock(PC pc, const PetscInt block[4]) {
  PetscFunctionBeginUser;
  LatkeCheckNull(pc);
  PetscTryMethod(pc, "PCLatkeSchwarzSetBlock_C", (PC, const PetscInt[]), (pc, block));
  PetscFunctionReturn(0);
}

PetscErrorCode PCLatkeSchwarzSetIterations(PC pc, PetscInt iterations) {
  PetscFunctionBeginUser;
  LatkeCheckNull(pc);
  PetscTryMethod(pc, "PCLatkeSchwarzSetIterations_C", (PC, PetscInt), (pc, iterations));
  PetscFunctionReturn(0);
}

PetscErrorCode PCLatkeSchwarzSetType(PC pc, LatkeSchwarzType type) {
  PetscFunctionBeginUser;
  LatkeCheckNull(pc);
  PetscTryMethod(pc, "PCLatkeSchwarzSetType_C", (PC, LatkeSchwarzType), (pc, type));
  PetscFunctionReturn(0);
}

PetscErrorCode PCLatkeSchwarzSetCycles(PC pc, PetscInt cycles) {
  PetscFunctionBeginUser;
  LatkeCheckNull(pc);
  PetscTryMethod(pc, "PCLatkeSchwarzSetCycles_C", (PC, PetscInt), (pc, cycles));
  PetscFunctionReturn(0);
}

PetscErrorCode PCLatkeSchwarzSetPrecision(PC pc, LatkePrecision precision) {
  PetscFunctionBeginUser;
  LatkeCheckNull(pc);
  PetscTryMethod(pc, "PCLatkeSchwarzSetPrecision_C", (PC, LatkePrecision), (pc, precision));
  PetscFunctionReturn(0);
}

PetscErrorCode PCShellSetLatkeSchwarz(PC pc, Mat A, const char prefix[]) {
  PetscFunctionBeginUser;
  LatkeCheckNull(pc);
  LatkeCheckNull(A);
  PetscCall(Adapter::make_shell(pc, A, "Latke Schwarz", [&](SchwarzContext& c) {
    read_params(Adapter::comm(pc), prefix, c.param);
  }));
  PetscFunctionReturn(0);
}

}  // extern "C"
