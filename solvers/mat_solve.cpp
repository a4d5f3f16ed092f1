// MatLatkeSolve (latke.h): the native solvers on a Latke matrix's system, from C.
#include "latke/core/error.h"
#include "latke/core/options.h"
#include "mat_shell.h"
#include "preconditioners/mg/pc_mg.h"
#include "preconditioners/schwarz/schwarz_options.h"
#include "solvers/solvers.h"

namespace latke::petsc {
namespace {

SolverType solver_of(LatkeSolverType t) {
  switch (t) {
    case LATKE_SOLVER_CG: return SolverType::cg;
    case LATKE_SOLVER_CGNE: return SolverType::cgne;
    case LATKE_SOLVER_CGNR: return SolverType::cgnr;
    case LATKE_SOLVER_BICGSTAB: return SolverType::bicgstab;
    case LATKE_SOLVER_GCR: return SolverType::gcr;
    case LATKE_SOLVER_MR: return SolverType::mr;
  }
  fail("solver type ", static_cast<int>(t), ": expected one of LATKE_SOLVER_CG ... LATKE_SOLVER_MR");
}

}  // namespace
}  // namespace latke::petsc

using namespace latke;
using namespace latke::petsc;

extern "C" {

PetscErrorCode LatkeSolverParamsDefault(LatkeSolverParams* p) {
  PetscFunctionBeginUser;
  LatkeCheckNull(p);
  p->type = LATKE_SOLVER_BICGSTAB;
  p->tol = 1e-10;
  p->max_it = 10000;
  p->sloppy = LATKE_PRECISION_SINGLE;
  p->delta = 0.1;
  p->restart = 16;
  PetscFunctionReturn(0);
}

PetscErrorCode MatLatkeSolve(Mat A, Vec b, Vec x, const LatkeSolverParams* params, const char prefix[],
                             LatkeSolverStats* stats) {
  LatkeSolverParams defaults;
  PetscFunctionBeginUser;
  LatkeCheckNull(A);
  LatkeCheckNull(b);
  LatkeCheckNull(x);
  PetscCall(LatkeSolverParamsDefault(&defaults));
  const LatkeSolverParams& in = params ? *params : defaults;
  const MPI_Comm comm = PetscObjectComm(reinterpret_cast<PetscObject>(A));
  PetscCall(guarded(comm, [&] {
    MatContext& c = context_of(A);
    SolverParam p;
    p.type = solver_of(in.type);
    p.tol = in.tol;
    p.max_iter = static_cast<int>(in.max_it);
    p.delta = in.delta;
    p.restart = static_cast<int>(in.restart);
    Precision sloppy = precision_of(in.sloppy);
    std::string type, sl, pc;
    long max_it = p.max_iter, restart = p.restart;
    read_options(comm, prefix ? prefix : "", "Latke native solver options", [&](OptionGroup& o) {
      type = o.string("-latke_solver", to_string(p.type), "Native solver: cg, cgne, cgnr, bicgstab, gcr or mr");
      p.tol = o.real("-latke_solver_tol", p.tol, "Relative tolerance on the true residual");
      max_it = o.integer("-latke_solver_max_it", p.max_iter, "Iteration limit");
      sl = o.string("-latke_solver_sloppy", to_string(sloppy), "Precision of the iteration: double, single or half");
      p.delta = o.real("-latke_solver_delta", p.delta, "Reliable update when the residual fell by this factor");
      restart = o.integer("-latke_solver_restart", p.restart, "GCR: directions before a restart");
      pc = o.string("-latke_solver_pc", "none",
                    "GCR's preconditioner: none, schwarz (-pc_latke_schwarz_* options) or mg (-pc_latke_mg_* options)");
    });
    require(pc == "none" || pc == "schwarz" || pc == "mg", "-", prefix ? prefix : "", "latke_solver_pc '", pc,
            "': expected none, schwarz or mg");
    p.type = parse_solver_type(type);
    p.max_iter = static_cast<int>(max_it);
    p.restart = static_cast<int>(restart);
    sloppy = parse_precision(sl);
    const Coords none{0, 0, 0, 0};
    std::shared_ptr<LinearOperator> outer = c.op->linear_operator(c.form, Precision::double_, none);
    std::shared_ptr<LinearOperator> low;
    if (sloppy != Precision::double_) low = c.op->linear_operator(c.form, sloppy, none);
    std::unique_ptr<Preconditioner> k;
    if (pc == "mg") {
      require(p.type == SolverType::gcr, "-latke_solver_pc mg needs -latke_solver gcr (a flexible method)");
      k = make_multigrid(A, prefix);
    } else if (pc == "schwarz") {
      require(p.type == SolverType::gcr, "-latke_solver_pc schwarz needs -latke_solver gcr (a flexible method)");
      const SchwarzParam sp = schwarz_param_from_options(comm, prefix, SchwarzParam{});
      std::shared_ptr<LinearOperator> full;
      if (sp.type == SchwarzType::multiplicative) full = c.op->linear_operator(c.form, sp.precision, none);
      k = std::make_unique<SchwarzPreconditioner>(c.op->linear_operator(c.form, sp.precision, sp.block),
                                                  std::move(full), sp);
    }
    VecField fb(*c.op, b, Access::read, 0);
    VecField fx(*c.op, x, Access::read_write, 1);
    const SolverStats st = solve(*outer, low.get(), k.get(), fx.field(), fb.field(), p);
    fx.release();
    fb.release();
    if (stats) {
      stats->iterations = st.iterations;
      stats->reliable_updates = st.reliable_updates;
      stats->outer_applications = static_cast<PetscInt>(st.outer_applications);
      stats->sloppy_applications = static_cast<PetscInt>(st.sloppy_applications);
      stats->true_residual = st.true_residual;
      stats->seconds = st.seconds;
      stats->gflops = st.seconds > 0 ? st.flops / st.seconds * 1e-9 : 0;
      stats->converged = st.converged ? PETSC_TRUE : PETSC_FALSE;
    }
  }));
  PetscFunctionReturn(0);
}

}  // extern "C"
