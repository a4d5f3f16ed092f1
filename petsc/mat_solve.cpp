// MatLatkeSolve, MatLatkeSolveMany and MatLatkeSolveMultiMass (latke.h): the native solvers on
// a Latke matrix's system (for one right-hand side, or for many in sets), and on a staggered
// matrix's system at several masses, from C.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <memory>
#include <sstream>
#include <vector>

#include "src/core/error.h"
#include "src/core/options.h"
#include "src/fields/blas.h"
#include "petsc/mat_shell.h"
#include "petsc/pc_mg.h"
#include "petsc/schwarz_options.h"
#include "petsc/option_help.h"
#include "solvers/solvers.h"
#include "petsc/mat_staggered.h"

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

MultiShiftStrategy strategy_of(LatkeMultiMassStrategy s) {
  switch (s) {
    case LATKE_MULTIMASS_MULTISHIFT:
      return MultiShiftStrategy::multishift;
    case LATKE_MULTIMASS_SEQUENTIAL:
      return MultiShiftStrategy::sequential;
  }
  fail("multi-mass strategy ", static_cast<int>(s),
       ": expected LATKE_MULTIMASS_MULTISHIFT or LATKE_MULTIMASS_SEQUENTIAL");
}

/// The multigrid options under the prefix in the options database, as text ("-name value"
/// pairs in the database's order): MatLatkeSolve builds its multigrid again when they change.
std::string multigrid_options_text(const char* prefix) {
  char* all = nullptr;
  require(PetscOptionsGetAll(nullptr, &all) == 0, "reading the options database failed");
  std::istringstream in(all ? all : "");
  PetscFree(all);
  const std::string p = std::string("-") + (prefix ? prefix : "");
  std::string token, text;
  bool keep = false;
  while (in >> token) {
    const bool name =
        token.size() > 1 && token[0] == '-' && !std::isdigit(static_cast<unsigned char>(token[1])) && token[1] != '.';
    if (name) keep = token.rfind(p + "pc_latke_mg_", 0) == 0 || token.rfind(p + "latke_mg_", 0) == 0;
    if (keep) text += token + " ";
  }
  return text;
}

/// For iterations in half: the operator in single, built only if CG or BiCGstab falls back to it.
std::unique_ptr<DeferredOperator> half_fallback(const MatContext& c, Precision sloppy) {
  if (sloppy != Precision::half) return nullptr;
  return std::make_unique<DeferredOperator>(
      [op = c.op, form = c.form] { return op->linear_operator(form, Precision::single, Coords{0, 0, 0, 0}); });
}


/// The native solver's options under prefix, from the C struct's values (MatLatkeSolve).
struct NativeOptions {
  SolverParam p;
  Precision sloppy = Precision::single;
  std::string pc;
  bool monitor = false;
  bool zero_guess = false;  ///< start from zero, never reading x (initial_guess_nonzero false)
};

/// The native solver's options; `many`: for MatLatkeSolveMany, where GCR with the multigrid keeps
/// 8 directions unless told otherwise (over a set each column keeps 2 restart fields, and the
/// Gram-Schmidt steps are a larger share of an iteration; with latke-propagator's multigrid 8
/// also beat 16 one column at a time).
NativeOptions native_options(MPI_Comm comm, const char* prefix, const LatkeSolverParams& in, bool many = false) {
  NativeOptions o;
  SolverParam& p = o.p;
  p.type = solver_of(in.type);
  p.tol = in.tol;
  p.max_iter = static_cast<int>(in.max_it);
  p.delta = in.delta;
  p.restart = static_cast<int>(in.restart);
  p.restart_drop = in.restart_drop;
  std::string type, sl;
  long max_it = p.max_iter, restart = p.restart, stall = p.stall_iterations, deflate = p.deflate;
  read_options(comm, prefix ? prefix : "", "Latke native solver options", [&](OptionGroup& g) {
    type = g.choice("-latke_solver", to_string(p.type), {"cg", "cgne", "cgnr", "bicgstab", "gcr", "mr"},
                    "Native solver");
    o.pc = g.choice("-latke_solver_pc", "none", {"none", "schwarz", "mg"},
                    "GCR's preconditioner: schwarz (-pc_latke_schwarz_* options) or mg (-pc_latke_mg_* options)");
    p.tol = g.real("-latke_solver_tol", p.tol, "Relative tolerance on the true residual");
    max_it = g.integer("-latke_solver_max_it", p.max_iter, "Iteration limit");
    sl = g.choice("-latke_solver_sloppy", to_string(precision_of(in.sloppy)), {"double", "single", "half"},
                  "Precision of the iteration");
    p.delta = g.real("-latke_solver_delta", p.delta, "Reliable update when the residual fell by this factor");
    // With the Schwarz preconditioner, one right-hand side at a time, GCR keeps a quarter of 32
    // directions over its restarts: near kappa_c a plain GCR(16) stalls on the low modes that
    // the blocks cannot reach (docs/solvers.md, "Deflated restarts").
    const bool dd = o.pc == "schwarz" && !many;
    if (p.restart == PETSC_DEFAULT) p.restart = many && o.pc == "mg" ? 8 : dd ? 32 : 16;
    restart = g.integer("-latke_solver_restart", p.restart,
                        "GCR: directions before a restart (default 16; 32 with -latke_solver_pc schwarz; 8 in "
                        "MatLatkeSolveMany with the multigrid)");
    p.restart_drop = g.real("-latke_solver_restart_drop", p.restart_drop,
                            "GCR in a sloppy precision: end a cycle once its residual fell by this factor");
    deflate = g.integer("-latke_solver_deflate", dd ? restart / 4 : p.deflate,
                        "GCR: directions kept over each restart, harmonic Ritz vectors nearest zero (default 0; a "
                        "quarter of the restart with -latke_solver_pc schwarz, one right-hand side at a time)");
    p.deflate_exact = g.flag("-latke_solver_deflate_exact", p.deflate_exact,
                             "GCR deflated restarts: A's harmonic Ritz vectors on the directions' span (n^2 "
                             "products per restart), not those of the preconditioned map (free)");
    o.monitor = g.flag("-latke_solver_monitor", false, "Print the iterated relative residual at every iteration");
    stall = g.integer("-latke_solver_stall_it", p.stall_iterations,
                      "GCR: stop once the true residual has not fallen by 10% in this many iterations (0: never)");
    o.zero_guess = !g.flag("-latke_solver_initial_guess_nonzero", in.initial_guess_nonzero == PETSC_TRUE,
                           "Start from x (else from zero, never reading x)");
  });
  require(stall >= 0, "-", prefix ? prefix : "", "latke_solver_stall_it ", stall, ": expected 0 or more");
  p.stall_iterations = static_cast<int>(stall);
  p.type = parse_solver_type(type);
  p.max_iter = static_cast<int>(max_it);
  p.restart = static_cast<int>(restart);
  require(deflate >= 0 && deflate < restart, "-", prefix ? prefix : "", "latke_solver_deflate ", deflate,
          ": expected 0 up to one less than the restart (", restart, ")");
  p.deflate = static_cast<int>(deflate);
  o.sloppy = parse_precision(sl);
  return o;
}

/// -latke_solver_set_size (MatLatkeSolveMany), checked.
long solver_set_size(MPI_Comm comm, const char* prefix) {
  const std::string pre = prefix ? prefix : "";
  long set_size = 12;
  read_options(comm, pre, "Latke native solver: many right-hand sides", [&](OptionGroup& g) {
    set_size = g.integer("-latke_solver_set_size", set_size,
                         "GCR: right-hand sides solved together (one operator and preconditioner application per "
                         "iteration for the set), at most 32");
  });
  require(set_size >= 1 && set_size <= blas::set_max, "-", pre, "latke_solver_set_size ", set_size, ": expected 1 to ",
          blas::set_max);
  return set_size;
}

/// What MatLatkeSolve and MatLatkeSolveMany solve with: the options, the operators and the
/// preconditioner (the multigrid kept with the matrix, built or rebuilt here when needed).
struct NativeSetup {
  NativeOptions o;
  std::shared_ptr<LinearOperator> outer, low;
  std::unique_ptr<DeferredOperator> fallback;
  std::shared_ptr<Preconditioner> k;
  double pc_setup = 0;  ///< seconds spent building the preconditioner here
};

NativeSetup native_setup(Mat A, MatContext& c, MPI_Comm comm, const char* prefix, const LatkeSolverParams& in,
                         bool many = false) {
  NativeSetup n;
  n.o = native_options(comm, prefix, in, many);
  SolverParam& p = n.o.p;
  const Precision sloppy = n.o.sloppy;
  const std::string& pc = n.o.pc;
  if (n.o.monitor) {
    const std::string name = to_string(p.type);
    p.monitor = [comm, name](int it, double res) {
      PetscPrintf(comm, "  %4d Latke %s residual |r|/|b| %.12e\n", it, name.c_str(), res);
    };
  }
  const Coords none{0, 0, 0, 0};
  n.outer = c.op->linear_operator(c.form, Precision::double_, none);
  if (sloppy != Precision::double_ && p.type != SolverType::mr)  // MR iterates in double only
    n.low = c.op->linear_operator(c.form, sloppy, none);
  n.fallback = half_fallback(c, sloppy);
  if (pc == "mg") {
    require(p.type == SolverType::gcr, "-latke_solver_pc mg needs -latke_solver gcr (a flexible method)");
    MatContext::NativePreconditioner& cached = c.native_mg[prefix ? prefix : ""];
    const std::string options = multigrid_options_text(prefix);
    if (!cached.k || cached.options != options) {
      cached.k.reset();  // before the new one: a hierarchy holds gigabytes on the device
      const auto t0 = std::chrono::steady_clock::now();
      cached.k = make_multigrid(A, prefix);
      synchronize(c.op->backend());
      n.pc_setup = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      cached.options = options;
    }
    n.k = cached.k;
  } else if (pc == "schwarz") {
    require(p.type == SolverType::gcr, "-latke_solver_pc schwarz needs -latke_solver gcr (a flexible method)");
    SchwarzParam sp = schwarz_param_from_options(comm, prefix, SchwarzParam{});
    sp.block = schwarz_block_for(*c.op->lattice(), sp);
    n.k = std::make_shared<SchwarzPreconditioner>(
        [&](const Coords& block) { return c.op->linear_operator(c.form, sp.precision, block); }, sp);
  }
  return n;
}

/// A solve that stopped for a reason other than the iteration limit says so; a stalled GCR also
/// says what converges there.
void report_stop(MPI_Comm comm, const SolverParam& p, const SolverStats& st, const std::string& which,
                 const char* prefix) {
  if (st.stop_reason.empty()) return;
  PetscPrintf(comm, "Latke %s%s: stopped after %d iterations, not converged: %s\n", to_string(p.type), which.c_str(),
              st.iterations, st.stop_reason.c_str());
  if (st.stalled) {
    const char* pre = prefix ? prefix : "";
    const std::string kept = p.deflate > 0 ? "kept " + std::to_string(p.deflate) + " directions over its restarts"
                                           : "discards its directions at each restart";
    PetscPrintf(comm,
                "  GCR(%d) %s; where that stalls it on the low modes (near the critical mass) more "
                "-%slatke_solver_deflate (directions kept over restarts), a longer -%slatke_solver_restart or "
                "-%slatke_solver_pc mg converges\n",
                p.restart, kept.c_str(), pre, pre, pre);
  }
}

void fill_stats(const SolverStats& st, double pc_setup, LatkeSolverStats& out) {
  out.iterations = st.iterations;
  out.reliable_updates = st.reliable_updates;
  out.outer_applications = static_cast<PetscInt>(st.outer_applications);
  out.sloppy_applications = static_cast<PetscInt>(st.sloppy_applications);
  out.fallback_at = st.fallback_at;
  out.restarts = st.restarts;
  out.true_residual = st.true_residual;
  out.seconds = st.seconds;
  out.gflops = st.seconds > 0 ? st.flops / st.seconds * 1e-9 : 0;
  out.converged = st.converged ? PETSC_TRUE : PETSC_FALSE;
  out.pc_setup_seconds = pc_setup;
}

/// One column's solve (MatLatkeSolve, and MatLatkeSolveMany one column at a time): b and x
/// seen as Latke fields (staged where they are host vectors), x read only as a nonzero guess.
SolverStats solve_column(const NativeSetup& s, MatContext& c, Vec b, Vec x) {
  VecField fb(*c.op, b, Access::read, 0);
  VecField fx(*c.op, x, s.o.zero_guess ? Access::write : Access::read_write, 1);
  if (s.o.zero_guess) fx.field().zero();
  const SolverStats st = solve(*s.outer, s.low.get(), s.k.get(), fx.field(), fb.field(), s.o.p, s.fallback.get());
  fx.release();
  fb.release();
  return st;
}

}  // namespace

void native_solver_options_help(MPI_Comm comm, const char* prefix) {
  LatkeSolverParams in;
  (void)LatkeSolverParamsDefault(&in);  // fills the struct
  read_for_help([&] {
    (void)native_options(comm, prefix, in);
    (void)solver_set_size(comm, prefix);
  });
}

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
  p->restart = PETSC_DEFAULT;  // 16, or 8 for MatLatkeSolveMany with the multigrid
  p->restart_drop = 1e-4;
  p->initial_guess_nonzero = PETSC_TRUE;
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
    NativeSetup n = native_setup(A, c, comm, prefix, in);
    const SolverStats st = solve_column(n, c, b, x);
    report_stop(comm, n.o.p, st, "", prefix);
    if (stats) fill_stats(st, n.pc_setup, *stats);
  }));
  PetscFunctionReturn(0);
}

PetscErrorCode MatLatkeSolveMany(Mat A, PetscInt n, Vec b[], Vec x[], const LatkeSolverParams* params,
                                 const char prefix[], LatkeSolverStats stats[]) {
  LatkeSolverParams defaults;
  PetscFunctionBeginUser;
  LatkeCheckNull(A);
  if (n > 0) {
    LatkeCheckNull(b);
    LatkeCheckNull(x);
  }
  PetscCall(LatkeSolverParamsDefault(&defaults));
  const LatkeSolverParams& in = params ? *params : defaults;
  const MPI_Comm comm = PetscObjectComm(reinterpret_cast<PetscObject>(A));
  PetscCall(guarded(comm, [&] {
    require(n >= 0, "MatLatkeSolveMany: n = ", n, ": expected the number of right-hand sides");
    for (PetscInt i = 0; i < n; ++i) require(b[i] && x[i], "MatLatkeSolveMany: b[", i, "] or x[", i, "] is NULL");
    MatContext& c = context_of(A);
    long set_size = solver_set_size(comm, prefix);
    NativeSetup s = native_setup(A, c, comm, prefix, in, true);
    // Deflated restarts keep a space per system: such a GCR solves column by column.
    if (s.o.p.type != SolverType::gcr || s.o.p.deflate > 0) set_size = 1;
    for (PetscInt i0 = 0; i0 < n; i0 += set_size) {
      const int m = static_cast<int>(std::min<PetscInt>(set_size, n - i0));
      std::vector<SolverStats> st;
      if (m == 1) {
        st.push_back(solve_column(s, c, b[i0], x[i0]));
      } else {
        // The columns in Latke's double fields (the vectors may be host vectors, staged), as
        // sets: the restarts' true residuals then read the operator once for the set.
        std::vector<ColorSpinorField> fx = ColorSpinorField::make_set(s.outer->lattice(), s.outer->field_param(), m),
                                      fb = ColorSpinorField::make_set(s.outer->lattice(), s.outer->field_param(), m);
        for (int k = 0; k < m; ++k) {
          VecField vb(*c.op, b[i0 + k], Access::read, 0);
          fb[k].copy_from(vb.field());
          vb.release();
          if (s.o.zero_guess) {
            fx[k].zero();
            continue;
          }
          VecField vx(*c.op, x[i0 + k], Access::read, 1);
          fx[k].copy_from(vx.field());
          vx.release();
        }
        st = gcr_set(*s.outer, s.low.get(), s.k.get(), fx, fb, s.o.p);
        for (int k = 0; k < m; ++k) {
          VecField vx(*c.op, x[i0 + k], Access::write, 1);
          vx.field().copy_from(fx[k]);
          vx.release();
        }
      }
      for (int k = 0; k < m; ++k) {
        report_stop(comm, s.o.p, st[k], " (column " + std::to_string(i0 + k) + ")", prefix);
        if (stats) fill_stats(st[k], i0 + k == 0 ? s.pc_setup : 0, stats[i0 + k]);
      }
    }
  }));
  PetscFunctionReturn(0);
}

PetscErrorCode MatLatkeReusePreconditioner(Mat A, Mat from, const char prefix[], PetscBool* reused) {
  PetscFunctionBeginUser;
  LatkeCheckNull(A);
  LatkeCheckNull(from);
  if (reused) *reused = PETSC_FALSE;
  PetscCall(guarded(PetscObjectComm(reinterpret_cast<PetscObject>(A)), [&] {
    const std::string pre = prefix ? prefix : "";
    MatContext &a = context_of(A), &f = context_of(from);
    const auto it = f.native_mg.find(pre);
    require(it != f.native_mg.end() && it->second.k, "MatLatkeReusePreconditioner: the matrix to reuse from holds no ",
            "multigrid preconditioner of MatLatkeSolve under the prefix '", pre,
            "' (solve on it with -latke_solver_pc mg first)");
    if (&a == &f) {
      if (reused) *reused = PETSC_TRUE;
      return;
    }
    const MultigridUpdate r = update_multigrid(*it->second.k, A, prefix);
    if (r.stale()) return;  // A sets up its own
    require(r.done, "MatLatkeReusePreconditioner: the null vectors cannot be reused: ", r.why);
    a.native_mg[pre] = std::move(it->second);
    f.native_mg.erase(it);
    if (reused) *reused = PETSC_TRUE;
  }));
  PetscFunctionReturn(0);
}

PetscErrorCode LatkeMultiMassParamsDefault(LatkeMultiMassParams* p) {
  PetscFunctionBeginUser;
  LatkeCheckNull(p);
  p->strategy = LATKE_MULTIMASS_MULTISHIFT;
  p->tol = 1e-10;
  p->max_it = 10000;
  p->sloppy = LATKE_PRECISION_SINGLE;
  p->delta = 0.1;
  p->extrapolation = 4;
  PetscFunctionReturn(0);
}

PetscErrorCode MatLatkeSolveMultiMass(Mat A, PetscInt n, const PetscReal masses[], Vec b, Vec x[],
                                      const LatkeMultiMassParams* params, const char prefix[],
                                      LatkeMultiMassStats* stats, LatkeMassStats mass_stats[]) {
  LatkeMultiMassParams defaults;
  PetscFunctionBeginUser;
  LatkeCheckNull(A);
  LatkeCheckNull(b);
  if (n > 0) {
    LatkeCheckNull(masses);
    LatkeCheckNull(x);
  }
  PetscCall(LatkeMultiMassParamsDefault(&defaults));
  const LatkeMultiMassParams& in = params ? *params : defaults;
  const MPI_Comm comm = PetscObjectComm(reinterpret_cast<PetscObject>(A));
  PetscCall(guarded(comm, [&] {
    MatContext& c = context_of(A);
    const StaggeredParam& sp = staggered_param(*c.op, "MatLatkeSolveMultiMass");
    require(c.form == LATKE_OPERATOR_EVEN_ODD, "MatLatkeSolveMultiMass: the matrix is the full staggered operator M; ",
            "expected the even-odd form (LATKE_OPERATOR_EVEN_ODD), the normal operator whose masses are shifts");
    require(n >= 0, "MatLatkeSolveMultiMass: n = ", n, ": expected the number of masses");
    const std::vector<double> m(masses, masses + n);
    for (PetscInt i = 0; i < n; ++i) require(x[i] != nullptr, "MatLatkeSolveMultiMass: x[", i, "] is NULL");
    MultiShiftParam p;
    p.strategy = strategy_of(in.strategy);
    p.max_iter = static_cast<int>(in.max_it);
    p.delta = in.delta;
    p.extrapolation = static_cast<int>(in.extrapolation);
    Precision sloppy = precision_of(in.sloppy);
    std::string strategy, sl;
    double tol = in.tol;
    long max_it = p.max_iter, extrapolation = p.extrapolation;
    const std::string pre = prefix ? prefix : "";
    read_options(comm, pre, "Latke multi-mass solver options", [&](OptionGroup& o) {
      strategy = o.string("-latke_multimass", to_string(p.strategy),
                          "Multi-mass strategy: multishift (CG-M, then refinement) or sequential (heaviest first, "
                          "extrapolated guesses)");
      extrapolation =
          o.integer("-latke_multimass_extrapolation", p.extrapolation,
                    "Sequential: earlier solutions the polynomial extrapolation of a guess uses (0: zero guess)");
      tol = o.real("-latke_solver_tol", tol, "Relative tolerance on each mass's true residual");
      max_it = o.integer("-latke_solver_max_it", p.max_iter, "Iteration limit of each solve");
      sl = o.choice("-latke_solver_sloppy", to_string(sloppy), {"double", "single", "half"},
                    "Precision of the iterations");
      p.delta = o.real("-latke_solver_delta", p.delta, "Reliable update when the residual fell by this factor");
    });
    p.strategy = parse_multishift_strategy(strategy);
    p.tol = {tol};
    p.max_iter = static_cast<int>(max_it);
    p.extrapolation = static_cast<int>(extrapolation);
    require(p.extrapolation >= 0, "-", pre, "latke_multimass_extrapolation ", extrapolation,
            ": expected the number of earlier solutions to use, 0 or more");
    sloppy = parse_precision(sl);
    const std::vector<double> shifts = staggered_mass_shifts(m, sp.mass);
    const Coords none{0, 0, 0, 0};
    std::shared_ptr<LinearOperator> outer = c.op->linear_operator(c.form, Precision::double_, none);
    std::shared_ptr<LinearOperator> low;
    if (sloppy != Precision::double_) low = c.op->linear_operator(c.form, sloppy, none);
    const std::unique_ptr<DeferredOperator> fallback = half_fallback(c, sloppy);
    // The solutions in Latke's fields, copied out one by one (x[i] may be host vectors
    // staged through a few scratch fields).
    std::vector<ColorSpinorField> fields;
    std::vector<ColorSpinorField*> ptrs;
    for (PetscInt i = 0; i < n; ++i) fields.push_back(outer->make_field());
    for (auto& f : fields) ptrs.push_back(&f);
    VecField fb(*c.op, b, Access::read, 0);
    require(!fb.full(), "MatLatkeSolveMultiMass: b is a vector of the whole lattice, expected one of the matrix's ",
            "parity (MatCreateVecs)");
    const MultiShiftStats st = solve_shifted(*outer, low.get(), shifts, ptrs, fb.field(), p, fallback.get());
    fb.release();
    for (PetscInt i = 0; i < n; ++i) {
      VecField fx(*c.op, x[i], Access::write, 1);
      require(!fx.full(), "MatLatkeSolveMultiMass: x[", i, "] is a vector of the whole lattice, expected one of the ",
              "matrix's parity (MatCreateVecs)");
      fx.field().copy_from(fields[i]);
      fx.release();
    }
    if (stats) {
      stats->iterations = st.iterations;
      stats->outer_applications = static_cast<PetscInt>(st.outer_applications);
      stats->sloppy_applications = static_cast<PetscInt>(st.sloppy_applications);
      stats->seconds = st.seconds;
      stats->gflops = st.seconds > 0 ? st.flops / st.seconds * 1e-9 : 0;
      stats->converged = st.converged ? PETSC_TRUE : PETSC_FALSE;
    }
    if (mass_stats)
      for (PetscInt i = 0; i < n; ++i) {
        const ShiftStats& s = st.shifts[i];
        mass_stats[i].mass = m[i];
        mass_stats[i].iterations = s.iterations;
        mass_stats[i].refine_iterations = s.refine_iterations;
        mass_stats[i].initial_residual = s.initial_residual;
        mass_stats[i].true_residual = s.true_residual;
        mass_stats[i].fallback_at = s.fallback_at;
        mass_stats[i].converged = s.converged ? PETSC_TRUE : PETSC_FALSE;
      }
  }));
  PetscFunctionReturn(0);
}

}  // extern "C"
