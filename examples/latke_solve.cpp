// latke-solve: one Dirac solve through PETSc, from a gauge field to a checked solution.
//
//   latke-solve [-latke_op wilson|staggered|asqtad] [-latke_lattice 8,8,8,8] [-latke_gauge random|unit]
//               [-latke_mass 0.1 | -latke_kappa k] [-latke_csw 1] [-latke_form even_odd|full]
//               [-latke_source point|wall|z2|z4] [-ksp_type gcr] [-pc_type latke_mg] [-ksp_rtol 1e-10]
//               [-latke_json FILE] [...]
//
// The operator is a Latke MATSHELL: Wilson-clover (default), or staggered, naive or asqtad
// (whose even-odd form is the Hermitian positive definite normal operator). The Krylov
// method and preconditioner are whatever the options database says (default: CG for the
// staggered normal operator; flexible GCR preconditioned by Latke's multigrid for
// Wilson-clover; relative tolerance 1e-10). The full solution is reconstructed and its true residual |b - M x| / |b|
// computed with the full operator, independently of the solver. Exit status 0 only when the solve converged. -help
// lists every option. -latke_solves N solves the system N times from x = 0, keeping the preconditioner, and prints the
// later solves' times too (the first also tunes the kernels it is the first to launch).
// -latke_kappas k2,k3,... (Wilson-clover, after -latke_kappa k1) then solves the same source at
// each further kappa with a new matrix, in turn; with -pc_latke_mg_reuse_interpolation the
// multigrid is rebuilt from the first setup's null vectors instead of set up anew (natively:
// MatLatkeReusePreconditioner), and the summary gives each kappa's preconditioner time.
// -latke_gauge_next n2,n3,... (Wilson-clover) instead solves the same source on further
// configurations of the quenched chain, each n_i sweeps after the one before
// (LatkeGaugeCreateEvolved with -latke_gauge_beta and -latke_gauge_seed), as in a stream of
// configurations; -pc_latke_mg_refresh_iterations refreshes the kept null vectors on each.
//
// With PETSc logging on (-log_view), it also prints where the time of the KSP solve went, per
// outer iteration: the operator (MatMult), the preconditioner (PCApply) and PETSc's own work
// (the rest of KSPSolve: its Vec* kernels, orthogonalization included), and the CPU<->GPU
// copies PETSc and Latke made during the solve. With device vectors, add -log_view_gpu_time
// so that PETSc's asynchronous vector kernels are timed in their own events.
//
// With -latke_op staggered|asqtad -latke_masses m1,m2,... (lightest first) it solves the
// even-odd normal systems (4 m_i^2 - D_pq D_qp) x_i = b_p at every mass, b_p the source's
// part on the operator's parity (x_i then gives M_i^-1 b_p: x_p = 2 m_i x_i, x_q = -D_qp x_i),
// with MatLatkeSolveMultiMass (-latke_multimass multishift|sequential, -latke_solver_* as for
// -latke_native), and checks each |b_p - A_i x_i| / |b_p| with MatMult, independently of the
// solver.
#include <petscksp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "latke/latke.h"
#include "petsc/option_help.h"
#include "petsc/program.h"
#include "petsc/schwarz_options.h"
#include "src/core/error.h"
#include "src/core/lattice.h"
#include "src/core/memory.h"
#include "src/core/options.h"
#include "src/core/output_files.h"
#include "src/core/work_counters.h"

namespace {

const char help[] =
    "latke-solve: a Wilson-clover or staggered solve with a Latke operator and a PETSc Krylov method.\n";

struct SolveOptions {
  std::string op = "wilson";
  LatkeOperatorForm form = LATKE_OPERATOR_EVEN_ODD;
  std::string source = "point";
  latke::Coords site{0, 0, 0, 0};
  long spin = 0, color = 0, seed = 1;
  std::string json, save;
  bool native = false;
  double tol = 1e-10;          ///< -latke_solver_tol of the native solves (run() reads it)
  long solves = 1;             ///< -latke_solves: the system solved this many times
  std::vector<double> masses;  ///< -latke_masses: a multi-mass solve
  std::vector<double> kappas;  ///< -latke_kappas: Wilson-clover, solved again at these kappa after the first solve
  std::vector<long> next;      ///< -latke_gauge_next: solved again on configurations this many sweeps apart
};

using latke::list_text;

SolveOptions read_solve_options() {
  SolveOptions o;
  std::string form;
  std::vector<double> masses, kappas;
  std::vector<long> site, next;
  bool masses_given = false, kappas_given = false, next_given = false;
  latke::read_options(PETSC_COMM_WORLD, "", "latke-solve options", [&](latke::OptionGroup& g) {
    o.op = g.choice("-latke_op", "wilson", {"wilson", "staggered", "asqtad"},
                    "Dirac operator: wilson (clover), staggered (naive) or asqtad");
    form = g.choice("-latke_form", "even_odd", {"even_odd", "full"},
                    "Operator solved: even_odd (Wilson: Schur complement; staggered: normal operator) or full");
    o.source = g.choice("-latke_source", "point", {"point", "wall", "z2", "z4"}, "Source");
    site = g.integers("-latke_source_site", {0, 0, 0, 0}, "Point source site x,y,z,t (wall: t is the time slice)", 4);
    o.spin = g.integer("-latke_source_spin", 0, "Source spin (point and wall)");
    o.color = g.integer("-latke_source_color", 0, "Source color (point and wall)");
    o.seed = g.integer("-latke_source_seed", 1, "Seed of a noise source");
    o.json = g.string("-latke_json", "", "Write the summary as JSON to this file");
    o.save = g.string("-latke_save_solution", "", "Save the full solution (PETSc binary, lexicographic order)");
    o.native = g.flag("-latke_native", false, "Solve with Latke's native solver (-latke_solver ...) instead of a KSP");
    masses = g.reals("-latke_masses", {},
                     "Staggered: solve at these masses m1,m2,... (lightest first) with MatLatkeSolveMultiMass "
                     "(-latke_multimass multishift|sequential)");
    masses_given = g.given("-latke_masses");
    kappas = g.reals("-latke_kappas", {},
                     "Wilson-clover: after the solve, solve the same source again at each of these kappa k2,k3,... "
                     "with a new matrix (its preconditioner set up anew, or rebuilt from the first one's null "
                     "vectors with -pc_latke_mg_reuse_interpolation)");
    next = g.integers("-latke_gauge_next", {},
                      "Wilson-clover: after the solve, solve the same source again on further configurations of the "
                      "quenched chain, each this many sweeps n2,n3,... after the one before (-latke_gauge_beta, "
                      "-latke_gauge_seed), with a new matrix as -latke_kappas makes");
    kappas_given = g.given("-latke_kappas");
    next_given = g.given("-latke_gauge_next");
    o.solves = g.integer("-latke_solves", 1,
                         "Solve the system this many times from x = 0, keeping the preconditioner (the first "
                         "solve also tunes the kernels it launches first)");
  });
  latke::require(o.solves >= 1, "-latke_solves ", o.solves, ": expected at least 1");
  latke::require(o.solves == 1 || !masses_given, "-latke_solves ", o.solves,
                 ": repeated solves are not available with -latke_masses");
  o.form = form == "full" ? LATKE_OPERATOR_FULL : LATKE_OPERATOR_EVEN_ODD;
  if (masses_given) {
    latke::require(!masses.empty(),
                   "-latke_masses: the list is empty: expected masses m1,m2,... from the lightest to "
                   "the heaviest");
    o.masses = masses;
    latke::require(o.op != "wilson", "-latke_masses ", list_text(masses),
                   ": multi-mass solves are for the staggered operators ",
                   "(-latke_op staggered or asqtad), not -latke_op ", o.op);
    latke::require(o.form == LATKE_OPERATOR_EVEN_ODD, "-latke_masses ", list_text(masses),
                   " solves the even-odd normal operator: it needs -latke_form even_odd, not full");
    latke::require(o.save.empty(), "-latke_save_solution is not available with -latke_masses");
  }
  if (kappas_given) {
    latke::require(!kappas.empty(), "-latke_kappas: the list is empty: expected positive hopping parameters k2,k3,...");
    o.kappas = kappas;
    latke::require(o.op == "wilson", "-latke_kappas ", list_text(kappas), " is for Wilson-clover, not -latke_op ",
                   o.op);
    for (double k : o.kappas)
      latke::require(k > 0, "-latke_kappas ", list_text(kappas), ": ", k, " is not a positive kappa");
    PetscBool mass = PETSC_FALSE;
    PetscOptionsHasName(nullptr, nullptr, "-latke_mass", &mass);
    latke::require(!mass, "-latke_kappas ", list_text(kappas),
                   " sets kappa for each new matrix: give the first solve's as ", "-latke_kappa, not -latke_mass");
  }
  if (next_given) {
    latke::require(!next.empty(),
                   "-latke_gauge_next: the list is empty: expected sweeps n2,n3,... between "
                   "configurations");
    for (long n : next)
      latke::require(n >= 1, "-latke_gauge_next '", list_text(next), "': ", n,
                     " is not a number of sweeps (expected an integer, 1 or more)");
    o.next = next;
    latke::require(o.op == "wilson", "-latke_gauge_next ", list_text(next), " is for Wilson-clover, not -latke_op ",
                   o.op);
    latke::require(o.kappas.empty(), "-latke_gauge_next ", list_text(next), " and -latke_kappas ", list_text(kappas),
                   ": give one of them (each solves again with a new matrix)");
  }
  latke::require(site.size() == 4, "-latke_source_site '", list_text(site), "': expected four integers x,y,z,t");
  for (int mu = 0; mu < 4; ++mu) o.site[mu] = static_cast<int>(site[mu]);
  return o;
}

/// Cumulative figures of PETSc's event log (and Latke's staging counters) at one moment.
struct LogSnapshot {
  double solve = 0, mat_mult = 0, latke_mat_mult = 0, pc_apply = 0, vec = 0;
  int solves = 0, mat_mults = 0, pc_applies = 0;
  double to_device = 0, to_host = 0, to_device_bytes = 0, to_host_bytes = 0;  ///< PETSc's copy counters
  int offloads = 0;                                   ///< PETSc's whole-vector copies (VecCUDACopyTo/From)
  PetscInt staged_to_device = 0, staged_to_host = 0;  ///< Latke's staging copies
};

/// PETSc's Vec events a Krylov method calls at its own level (VecNormalize is left out: it
/// calls VecNorm and VecScale, which are counted).
const char* const vec_events[] = {"VecDot",   "VecDotNorm2", "VecMDot",  "VecTDot",     "VecMTDot", "VecNorm",
                                  "VecScale", "VecCopy",     "VecSet",   "VecAXPY",     "VecAYPX",  "VecAXPBYCZ",
                                  "VecWAXPY", "VecMAXPY",    "VecAXPBY", "VecConjugate"};

PetscErrorCode event_info(const char* name, PetscEventPerfInfo* info) {
  PetscLogEvent id = -1;
  PetscFunctionBeginUser;
  PetscCall(PetscMemzero(info, sizeof(*info)));
  PetscCall(PetscLogEventGetId(name, &id));
  if (id >= 0) PetscCall(PetscLogEventGetPerfInfo(PETSC_DETERMINE, id, info));
  PetscFunctionReturn(0);
}

PetscErrorCode log_snapshot(LogSnapshot* s) {
  PetscEventPerfInfo i;
  PetscFunctionBeginUser;
  PetscCall(event_info("KSPSolve", &i));
  s->solve = i.time, s->solves = i.count;
#if defined(PETSC_HAVE_DEVICE)
  s->to_device = i.CpuToGpuCount, s->to_host = i.GpuToCpuCount;
  s->to_device_bytes = i.CpuToGpuSize, s->to_host_bytes = i.GpuToCpuSize;
#endif
  PetscCall(event_info("MatMult", &i));
  s->mat_mult = i.time, s->mat_mults = i.count;
  PetscCall(event_info("LatkeMatMult", &i));
  s->latke_mat_mult = i.time;
  PetscCall(event_info("PCApply", &i));
  s->pc_apply = i.time, s->pc_applies = i.count;
  s->vec = 0;
  for (const char* name : vec_events) {
    PetscCall(event_info(name, &i));
    s->vec += i.time;
  }
#if defined(PETSC_HAVE_CUDA)
  PetscCall(event_info("VecCUDACopyTo", &i));
  s->offloads = i.count;
  PetscCall(event_info("VecCUDACopyFrom", &i));
  s->offloads += i.count;
#endif
  PetscCall(LatkeGetStagingCounts(&s->staged_to_device, &s->staged_to_host));
  PetscFunctionReturn(0);
}

/// Where one KSPSolve's time went (the difference of two snapshots), per outer iteration.
struct Split {
  bool valid = false;
  double op_ms = 0, latke_op_ms = 0, pc_ms = 0, own_ms = 0, vec_ms = 0, own_share = 0;
  int mat_mults = 0, pc_applies = 0;
  double to_device = 0, to_host = 0, to_device_mb = 0, to_host_mb = 0;
  long staged = 0, offloads = 0;
};

Split split_of(const LogSnapshot& a, const LogSnapshot& b, PetscInt iterations) {
  Split s;
  const double its = iterations > 0 ? static_cast<double>(iterations) : 1.0;
  const double solve = b.solve - a.solve;
  s.valid = b.solves > a.solves;
  s.op_ms = (b.mat_mult - a.mat_mult) / its * 1e3;
  s.latke_op_ms = (b.latke_mat_mult - a.latke_mat_mult) / its * 1e3;
  s.pc_ms = (b.pc_apply - a.pc_apply) / its * 1e3;
  s.own_ms = solve / its * 1e3 - s.op_ms - s.pc_ms;
  s.vec_ms = (b.vec - a.vec) / its * 1e3;
  s.own_share = solve > 0 ? s.own_ms / (solve / its * 1e3) : 0;
  s.mat_mults = b.mat_mults - a.mat_mults;
  s.pc_applies = b.pc_applies - a.pc_applies;
  s.to_device = b.to_device - a.to_device, s.to_host = b.to_host - a.to_host;
  s.to_device_mb = (b.to_device_bytes - a.to_device_bytes) * 1e-6;
  s.to_host_mb = (b.to_host_bytes - a.to_host_bytes) * 1e-6;
  s.staged = static_cast<long>(b.staged_to_device - a.staged_to_device + b.staged_to_host - a.staged_to_host);
  s.offloads = b.offloads - a.offloads;
  return s;
}

/// One mass of a multi-mass solve: the solver's figures and the independent check.
struct MassResult {
  LatkeMassStats stats;
  double check = 0;  ///< |b_p - A_i x_i| / |b_p| with MatMult
};

/// What the preconditioner of a solve of -latke_kappas or -latke_gauge_next was.
enum class PcAgain {
  set_up,     ///< set up anew (no reuse asked for, or no multigrid)
  stale,      ///< reuse asked for, but the kept null vectors were stale: set up anew
  kept,       ///< rebuilt from the previous matrix's null vectors
  refreshed,  ///< ... after -pc_latke_mg_refresh_iterations refreshed them
};

/// One solve of -latke_kappas or -latke_gauge_next.
struct AgainResult {
  double kappa = 0;  ///< -latke_kappas: the new kappa
  long sweeps = 0;   ///< -latke_gauge_next: sweeps after the configuration before
  double setup_s = 0, solve_s = 0, true_residual = 0;
  PetscInt iterations = 0;
  PcAgain pc = PcAgain::set_up;
  bool converged = false;
};

struct Summary {
  std::string ksp, pc, reason, lattice, backend, op, form, vec_type, latke_version, petsc_version;
  std::vector<long> extents, grid;  ///< global lattice extents, process grid
  nlohmann::ordered_json physics;   ///< kappa or mass, c_sw, the gauge field's plaquette, the source
  PetscInt iterations = 0, operator_applications = 0, sloppy_applications = 0;
  PetscInt fallback_at = -1;  ///< native CG, BiCGstab: iteration at which half fell back to single
  PetscInt restarts = 0;      ///< native BiCGstab: fresh starts
  int refinements = 0;        ///< KSP solves on from the solution after its true residual was above rtol
  double true_residual = 0, solver_residual = 0, rtol = 0, setup_s = 0, solve_s = 0, gflops = 0;
  bool converged = false;
  Split split;
  std::vector<MassResult> masses;    ///< -latke_masses
  std::vector<double> repeat_s;      ///< -latke_solves: the solves after the first
  std::vector<AgainResult> kappas;   ///< -latke_kappas
  std::vector<AgainResult> configs;  ///< -latke_gauge_next
  /// A solve's halo exchanges: per rank (the mean over the ranks), the bytes each sent per
  /// exchange (the mean), and the longest host wait in them on any rank; of the solves after
  /// the first where -latke_solves repeats it (a native solve's first builds its
  /// preconditioner), else of the first.
  double halo_exchanges = 0, halo_bytes_per_exchange = 0, halo_wait_s = 0;
  double device_peak = 0, host_peak = 0;  ///< Latke's buffers, the most on any rank (host: pinned too)
};

/// The halo exchanges of the `solves` solves since this rank's counters read `start` (per
/// solve) and the peak of Latke's buffers, over the ranks.
PetscErrorCode communication(Summary& sum, const latke::WorkCounters& start, long solves = 1) {
  const latke::WorkCounters& now = latke::work_counters();
  const latke::MemoryUse use = latke::memory_use();
  double sums[2] = {static_cast<double>(now.exchanges - start.exchanges), now.halo_bytes - start.halo_bytes};
  double most[3] = {now.halo_seconds - start.halo_seconds,
                    static_cast<double>(use.peak[static_cast<int>(latke::MemoryKind::device)]),
                    static_cast<double>(use.peak[static_cast<int>(latke::MemoryKind::host)] +
                                        use.peak[static_cast<int>(latke::MemoryKind::pinned)])};
  int ranks = 1;
  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &ranks));
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, sums, 2, MPI_DOUBLE, MPI_SUM, PETSC_COMM_WORLD));
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, most, 3, MPI_DOUBLE, MPI_MAX, PETSC_COMM_WORLD));
  sum.halo_exchanges = sums[0] / ranks / static_cast<double>(solves);
  sum.halo_bytes_per_exchange = sums[0] > 0 ? sums[1] / sums[0] : 0;
  sum.halo_wait_s = most[0] / static_cast<double>(solves);
  sum.device_peak = most[1];
  sum.host_peak = most[2];
  PetscFunctionReturn(0);
}

/// With -latke_solves n > 1, the solves after the first (kernels tuned, preconditioner set up)
/// run in their own log stage, "Solved again", so that -log_view shows where such a solve goes
/// apart from the setup and the first solve (latke-scale's per-phase split reads it).
PetscErrorCode push_again_stage(long solves) {
  PetscFunctionBeginUser;
  if (solves > 1) {
    static PetscLogStage stage = -1;
    if (stage < 0) PetscCall(PetscLogStageRegister("Solved again", &stage));
    PetscCall(PetscLogStagePush(stage));
  }
  PetscFunctionReturn(0);
}

/// The summary as JSON (schema latke-solve/1, docs/latke-solve.md): every number as exact as
/// a double reads back, non-finite ones null.
std::string json_text(const Summary& s) {
  using json = nlohmann::ordered_json;
  json f = {{"schema", "latke-solve/1"},
            {"program", "latke-solve"},
            {"latke_version", s.latke_version},
            {"petsc_version", s.petsc_version},
            {"lattice", s.lattice},
            {"lattice_extents", s.extents},
            {"process_grid", s.grid},
            {"backend", s.backend},
            {"op", s.op},
            {"operator", s.form},
            {"physics", s.physics},
            {"ksp_type", s.ksp},
            {"pc_type", s.pc},
            {"converged", s.converged},
            {"reason", s.reason},
            {"iterations", s.iterations},
            {"rtol", s.rtol},
            {"solver_residual", s.solver_residual},
            {"true_residual", s.true_residual},
            {"setup_seconds", s.setup_s},
            {"solve_seconds", s.solve_s},
            {"gflops", s.gflops},
            {"vec_type", s.vec_type}};
  if (!s.repeat_s.empty()) f["repeat_solve_seconds"] = s.repeat_s;
  for (const bool by_kappa : {true, false}) {
    const std::vector<AgainResult>& again = by_kappa ? s.kappas : s.configs;
    if (again.empty()) continue;
    json list = json::array();
    for (const AgainResult& k : again) {
      json e;
      if (by_kappa)
        e["kappa"] = k.kappa;
      else
        e["sweeps"] = k.sweeps;
      e["pc_reused"] = k.pc == PcAgain::kept || k.pc == PcAgain::refreshed;
      e["pc_refreshed"] = k.pc == PcAgain::refreshed;
      e["pc_stale"] = k.pc == PcAgain::stale;
      e["setup_seconds"] = k.setup_s;
      e["iterations"] = k.iterations;
      e["solve_seconds"] = k.solve_s;
      e["true_residual"] = k.true_residual;
      e["converged"] = k.converged;
      list.push_back(e);
    }
    f[by_kappa ? "kappas" : "configurations"] = list;
  }
  if (s.fallback_at >= 0) f["fallback_at"] = s.fallback_at;
  if (s.restarts > 0) f["restarts"] = s.restarts;
  if (s.refinements > 0) f["refinements"] = s.refinements;
  f["halo"] = {{"exchanges_per_rank", s.halo_exchanges},
               {"bytes_per_exchange", s.halo_bytes_per_exchange},
               {"wait_seconds", s.halo_wait_s}};
  f["memory_peak_bytes"] = {{"device", s.device_peak}, {"host", s.host_peak}};
  if (s.split.valid) {
    f["per_iteration_ms"] = {{"operator", s.split.op_ms},
                             {"latke_operator", s.split.latke_op_ms},
                             {"preconditioner", s.split.pc_ms},
                             {"petsc_own", s.split.own_ms},
                             {"vec_events", s.split.vec_ms}};
    f["petsc_own_share"] = s.split.own_share;
    f["solve_copies"] = {{"petsc_cpu_to_gpu", s.split.to_device},       {"petsc_gpu_to_cpu", s.split.to_host},
                         {"petsc_cpu_to_gpu_mb", s.split.to_device_mb}, {"petsc_gpu_to_cpu_mb", s.split.to_host_mb},
                         {"petsc_vector_copies", s.split.offloads},     {"latke_staged", s.split.staged}};
  }
  if (!s.masses.empty()) {
    json list = json::array();
    for (const MassResult& r : s.masses) {
      const LatkeMassStats& m = r.stats;
      list.push_back({{"mass", m.mass},
                      {"iterations", m.iterations},
                      {"refine_iterations", m.refine_iterations},
                      {"initial_residual", m.initial_residual},
                      {"true_residual", m.true_residual},
                      {"check_residual", r.check},
                      {"fallback_at", m.fallback_at},
                      {"converged", m.converged == PETSC_TRUE}});
    }
    f["masses"] = list;
  }
  return f.dump(2) + "\n";
}

/// The multi-mass solve of -latke_masses: (4 m_i^2 - D_pq D_qp) x_i = b_p for every mass,
/// b_p the source's part on A's parity; each residual checked with MatMult (A has mass
/// mass_a: A_i = A + 4 (m_i^2 - mass_a^2)).
PetscErrorCode solve_masses(LatkeGauge gauge, Mat A, Vec b, Vec bhat, const SolveOptions& opt, double mass_a,
                            Summary& sum) {
  const PetscInt n = static_cast<PetscInt>(opt.masses.size());
  PetscInt local[4];
  PetscLogDouble t1, t2;
  PetscFunctionBeginUser;
  PetscCall(LatkeGaugeGetLattice(gauge, nullptr, local, nullptr));
  std::vector<PetscScalar> lex(static_cast<std::size_t>(local[0] * local[1] * local[2] * local[3]) * 3);
  PetscCall(LatkeVecGetLexicographic(A, b, lex.data()));
  PetscCall(LatkeVecSetLexicographic(A, bhat, lex.data()));  // the parity vector keeps its own sites
  PetscReal bn;
  PetscCall(VecNorm(bhat, NORM_2, &bn));
  PetscCheck(bn > 0, PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT,
             "-latke_masses: the source has no component on the operator's parity (-latke_parity), which the "
             "multi-mass solve takes as its right-hand side: choose a source site of that parity");
  std::vector<Vec> xs(n);
  for (auto& x : xs) PetscCall(VecDuplicate(bhat, &x));
  LatkeMultiMassStats st;
  std::vector<LatkeMassStats> ms(n);
  PetscCall(PetscTime(&t1));
  PetscCall(MatLatkeSolveMultiMass(A, n, opt.masses.data(), bhat, xs.data(), nullptr, nullptr, &st, ms.data()));
  PetscCall(PetscTime(&t2));
  Vec r;
  PetscCall(VecDuplicate(bhat, &r));
  sum.masses.resize(n);
  sum.true_residual = sum.solver_residual = 0;
  Mat ref;  // A's operator in double precision, whatever A stores
  PetscCall(MatLatkeCreateReference(A, LATKE_OPERATOR_EVEN_ODD, &ref));
  for (PetscInt i = 0; i < n; ++i) {
    const double sigma = 4 * (opt.masses[i] * opt.masses[i] - mass_a * mass_a);
    double res = 0;
    PetscCall(MatMult(ref, xs[i], r));
    PetscCall(VecAXPY(r, sigma, xs[i]));
    PetscCall(latke::petsc::relative_difference(bhat, r, &res));
    sum.masses[i] = {ms[i], res};
    sum.true_residual = std::fmax(sum.true_residual, res);
    sum.solver_residual = std::fmax(sum.solver_residual, ms[i].true_residual);
  }
  PetscCall(MatDestroy(&ref));
  PetscCall(VecDestroy(&r));
  for (auto& x : xs) PetscCall(VecDestroy(&x));
  char strategy[64] = "multishift";
  PetscCall(PetscOptionsGetString(nullptr, nullptr, "-latke_multimass", strategy, sizeof strategy, nullptr));
  sum.ksp = std::string("latke ") + strategy;
  sum.pc = "none";
  PetscReal tol = 1e-10;
  PetscCall(PetscOptionsGetReal(nullptr, nullptr, "-latke_solver_tol", &tol, nullptr));
  sum.rtol = tol;
  sum.iterations = st.iterations;
  sum.operator_applications = st.outer_applications;
  sum.sloppy_applications = st.sloppy_applications;
  sum.gflops = st.gflops;
  sum.solve_s = t2 - t1;
  sum.converged = st.converged && sum.true_residual <= tol;
  sum.reason = st.converged ? "CONVERGED_RTOL" : "DIVERGED_ITS";
  PetscFunctionReturn(0);
}

/// A KSP's solve and the independent check of its solution. The KSP's tolerance is on the
/// even-odd system's residual in the KSP's own norm; success is the full solution's residual
/// with the double-precision full operator at or below rtol. Where the KSP converged by its
/// tolerance but that residual is still above rtol, the KSP solves on from the solution
/// (latke::petsc::solve_on; its tolerance and initial-guess setting are restored).
struct Checked {
  KSPConvergedReason reason = KSP_CONVERGED_ITERATING;
  PetscInt iterations = 0;  ///< all passes
  int passes = 0;           ///< solves after the first
  double true_residual = 0;
  bool converged = false;
};

PetscErrorCode check_and_refine(KSP ksp, Mat A, Mat M, Vec bhat, Vec xhat, Vec b, Vec x, Vec r, Checked& c) {
  PetscReal rtol, abstol, dtol;
  PetscInt maxit, its;
  PetscBool guess;
  latke::petsc::SolveChecked s;
  PetscFunctionBeginUser;
  PetscCall(KSPGetTolerances(ksp, &rtol, &abstol, &dtol, &maxit));
  PetscCall(KSPGetInitialGuessNonzero(ksp, &guess));
  PetscCall(KSPGetConvergedReason(ksp, &c.reason));
  PetscCall(KSPGetIterationNumber(ksp, &its));
  const auto by_tolerance = [&c] { return c.reason == KSP_CONVERGED_RTOL || c.reason == KSP_CONVERGED_ATOL; };
  s.converged = by_tolerance();
  s.iterations = its;
  PetscCall(latke::petsc::full_residual(A, M, xhat, b, x, r, &s.residual));
  const auto solve = [&](double step, bool* converged, long* iterations) -> PetscErrorCode {
    PetscCall(KSPSetInitialGuessNonzero(ksp, PETSC_TRUE));
    PetscCall(KSPSetTolerances(ksp, step, abstol, dtol, maxit));
    PetscCall(KSPSolve(ksp, bhat, xhat));
    PetscCall(KSPGetConvergedReason(ksp, &c.reason));
    PetscCall(KSPGetIterationNumber(ksp, &its));
    *converged = by_tolerance();
    *iterations = its;
    return 0;
  };
  const auto residual = [&](double* res) { return latke::petsc::full_residual(A, M, xhat, b, x, r, res); };
  PetscCall(latke::petsc::solve_on("latke-solve", "-ksp_rtol", rtol, rtol, solve, residual, s));
  PetscCall(KSPSetTolerances(ksp, rtol, abstol, dtol, maxit));
  PetscCall(KSPSetInitialGuessNonzero(ksp, guess));
  c.iterations = static_cast<PetscInt>(s.iterations);
  c.passes = s.passes;
  c.true_residual = s.residual;
  c.converged = c.reason > 0 && c.true_residual <= rtol;
  PetscFunctionReturn(0);
}

/// MatLatkeSolve on A's system to the program's tolerance tol (-latke_solver_tol, which run()
/// takes out of the options database so that the tighter tolerances of the passes are not
/// overridden), checked as a KSP's solve is: where the solver converged but the full residual
/// is above tol, it solves on from the solution (latke::petsc::solve_on). st: the solves
/// together (iterations, applications, seconds; the last pass's residual and outcome).
/// check_s: seconds spent in the checks.
PetscErrorCode native_checked(Mat A, Mat M, Vec bhat, Vec xhat, Vec b, Vec x, Vec r, double tol, LatkeSolverStats& st,
                              latke::petsc::SolveChecked& s, double& check_s) {
  LatkeSolverParams p;
  check_s = 0;
  const auto residual = [&](double* res) -> PetscErrorCode {
    PetscLogDouble t0, t1;
    PetscCall(PetscTime(&t0));
    PetscCall(latke::petsc::full_residual(A, M, xhat, b, x, r, res));
    PetscCall(PetscTime(&t1));
    check_s += t1 - t0;
    return 0;
  };
  PetscFunctionBeginUser;
  PetscCall(LatkeSolverParamsDefault(&p));
  p.tol = tol;
  PetscCall(MatLatkeSolve(A, bhat, xhat, &p, nullptr, &st));
  s.converged = st.converged == PETSC_TRUE;
  s.iterations = st.iterations;
  PetscCall(residual(&s.residual));
  const auto solve = [&](double step, bool* converged, long* iterations) -> PetscErrorCode {
    LatkeSolverStats more;
    p.tol = step;
    PetscCall(MatLatkeSolve(A, bhat, xhat, &p, nullptr, &more));
    const double flops = st.gflops * st.seconds + more.gflops * more.seconds;
    st.iterations += more.iterations;
    st.outer_applications += more.outer_applications;
    st.sloppy_applications += more.sloppy_applications;
    st.restarts += more.restarts;
    st.seconds += more.seconds;
    st.gflops = st.seconds > 0 ? flops / st.seconds : 0;
    st.true_residual = more.true_residual;
    st.converged = more.converged;
    *converged = more.converged == PETSC_TRUE;
    *iterations = more.iterations;
    return 0;
  };
  PetscCall(latke::petsc::solve_on("latke-solve", "-latke_solver_tol", tol, tol, solve, residual, s));
  PetscFunctionReturn(0);
}

/// One line, before a PETSc solve, where the operator runs on the GPU and PETSc's vectors v
/// (A's) are host vectors: each application then stages them over PCIe, which a PETSc built
/// with CUDA avoids. Names the fix that applies to this PETSc.
PetscErrorCode note_staged_vectors(Mat A, Vec v) {
  const char* backend = nullptr;
  PetscBool staged = PETSC_FALSE;
  PetscInt n = 0;
  PetscFunctionBeginUser;
  PetscCall(LatkeGetBackend(&backend));
  PetscCall(MatLatkeVecIsStaged(A, v, &staged));
  if (std::string(backend) != "cuda" || !staged) PetscFunctionReturn(0);
  PetscCall(MatGetLocalSize(A, &n, nullptr));
#if defined(PETSC_HAVE_CUDA)
  const char* fix =
      "this PETSc has CUDA: device vectors need PETSc >= 3.26, PETSc's device on this GPU and no "
      "-vec_type standard, see docs/petsc.md";
#else
  const char* fix = "a PETSc built with CUDA removes this: scripts/main.sh builds one on a GPU host, see docs/petsc.md";
#endif
  PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                        "latke-solve: PETSc's vectors are on the host: each operator and preconditioner application "
                        "copies its vectors over PCIe (about %.3g MB each way); %s\n",
                        n * sizeof(PetscScalar) * 1e-6, fix));
  PetscFunctionReturn(0);
}

/// -latke_kappas, -latke_gauge_next: the source b solved with a new Wilson-clover matrix on
/// gauge, at kappa where it is given (the other operator options as given), by the KSP ksp (its
/// operators replaced; PCSetUp timed apart) or, where ksp is null, natively with MatLatkeSolve.
/// With -pc_latke_mg_reuse_interpolation the multigrid keeps the null vectors of prev's (the
/// KSP's PC updates itself; natively MatLatkeReusePreconditioner moves it from prev), refreshed
/// with -pc_latke_mg_refresh_iterations. *made: the new matrix (the caller's).
PetscErrorCode solve_again(LatkeGauge gauge, const SolveOptions& opt, const double* kappa, KSP ksp, Vec b, Mat prev,
                           Mat* made, AgainResult& res) {
  Mat A2, M2;
  Vec x2, xhat2, bhat2, r2;
  PetscFunctionBeginUser;
  if (kappa) {
    res.kappa = *kappa;
    char was[64] = "";
    PetscBool had = PETSC_FALSE;
    PetscCall(PetscOptionsGetString(nullptr, nullptr, "-latke_kappa", was, sizeof was, &had));
    char value[64];
    std::snprintf(value, sizeof value, "%.17g", *kappa);
    PetscCall(PetscOptionsSetValue(nullptr, "-latke_kappa", value));
    const PetscErrorCode created = MatCreateLatkeWilsonClover(gauge, opt.form, nullptr, nullptr, &A2);
    if (had)
      PetscCall(PetscOptionsSetValue(nullptr, "-latke_kappa", was));
    else
      PetscCall(PetscOptionsClearValue(nullptr, "-latke_kappa"));
    PetscCall(created);
  } else {
    PetscCall(MatCreateLatkeWilsonClover(gauge, opt.form, nullptr, nullptr, &A2));
  }
  PetscCall(MatLatkeCreateReference(A2, LATKE_OPERATOR_FULL, &M2));
  PetscCall(MatLatkeCreateFullVecs(A2, &x2, &r2));
  PetscCall(MatCreateVecs(A2, &xhat2, &bhat2));
  PetscCall(MatLatkePrepareSource(A2, b, bhat2));
  PetscCall(VecSet(xhat2, 0.0));
  PetscBool reuse = PETSC_FALSE;
  PetscCall(PetscOptionsGetBool(nullptr, nullptr, "-pc_latke_mg_reuse_interpolation", &reuse, nullptr));
  PetscInt steps[8] = {0}, levels = 8;  // the multigrid reads and checks the list; any step refreshes
  PetscCall(PetscOptionsGetIntArray(nullptr, nullptr, "-pc_latke_mg_refresh_iterations", steps, &levels, nullptr));
  const PcAgain rebuilt =
      std::any_of(steps, steps + levels, [](PetscInt n) { return n > 0; }) ? PcAgain::refreshed : PcAgain::kept;
  PetscLogDouble t0, t1, t2;
  if (ksp) {
    PC pc;
    PetscBool mg = PETSC_FALSE;
    PetscCall(KSPGetPC(ksp, &pc));
    PetscCall(PetscObjectTypeCompare(reinterpret_cast<PetscObject>(pc), PCLATKEMG, &mg));
    PetscCall(KSPSetOperators(ksp, A2, A2));
    PetscCall(PetscTime(&t0));
    PetscCall(KSPSetUp(ksp));
    PetscCall(PetscTime(&t1));
    PetscInt rebuilds = 0;
    PetscReal growth = 0;
    if (mg && reuse) PetscCall(PCLatkeMGGetReuse(pc, &rebuilds, &growth));
    res.pc = rebuilds > 0 ? rebuilt : growth > 0 ? PcAgain::stale : PcAgain::set_up;
    PetscCall(KSPSolve(ksp, bhat2, xhat2));
    Checked c;
    PetscCall(check_and_refine(ksp, A2, M2, bhat2, xhat2, b, x2, r2, c));
    PetscCall(PetscTime(&t2));
    res.iterations = c.iterations;
    res.true_residual = c.true_residual;
    res.converged = c.converged;
    res.setup_s = t1 - t0;
    res.solve_s = t2 - t1;
  } else {
    char pc[64] = "none";
    PetscCall(PetscOptionsGetString(nullptr, nullptr, "-latke_solver_pc", pc, sizeof pc, nullptr));
    const bool asked = reuse && std::string(pc) == "mg";
    PetscBool moved = PETSC_FALSE;
    PetscCall(PetscTime(&t0));
    if (asked) PetscCall(MatLatkeReusePreconditioner(A2, prev, nullptr, &moved));
    PetscCall(PetscTime(&t1));
    res.pc = !asked ? PcAgain::set_up : moved ? rebuilt : PcAgain::stale;
    LatkeSolverStats st;
    latke::petsc::SolveChecked c;
    double check_s = 0;
    PetscCall(native_checked(A2, M2, bhat2, xhat2, b, x2, r2, opt.tol, st, c, check_s));
    res.true_residual = c.residual;
    res.iterations = static_cast<PetscInt>(c.iterations);
    res.converged = c.met(opt.tol);
    res.setup_s = t1 - t0 + st.pc_setup_seconds;
    res.solve_s = st.seconds;
  }
  PetscCall(VecDestroy(&x2));
  PetscCall(VecDestroy(&r2));
  PetscCall(VecDestroy(&xhat2));
  PetscCall(VecDestroy(&bhat2));
  PetscCall(MatDestroy(&M2));
  *made = A2;
  PetscFunctionReturn(0);
}

PetscErrorCode run(int& status) {
  LatkeGauge gauge = nullptr;
  Mat A = nullptr, M = nullptr;
  Vec x, b, xhat, bhat, r;
  KSP ksp;
  SolveOptions opt;
  Summary sum;
  PetscFunctionBeginUser;
  PetscCall(LatkeInitialize());
  try {
    opt = read_solve_options();
  } catch (const std::exception& e) {
    SETERRQ(PETSC_COMM_WORLD, PETSC_ERR_USER_INPUT, "%s", e.what());
  }
  try {  // before any work: an output that cannot be written is found now, not after the solve
    if (!opt.json.empty()) latke::require_writable(PETSC_COMM_WORLD, opt.json, "-latke_json");
    if (!opt.save.empty()) latke::require_writable(PETSC_COMM_WORLD, opt.save, "-latke_save_solution");
  } catch (const std::exception& e) {
    SETERRQ(PETSC_COMM_WORLD, PETSC_ERR_FILE_OPEN, "%s", e.what());
  }
  {
    // -help lists every option Latke takes, the groups of objects this run does not make too.
    PetscBool help = PETSC_FALSE;
    PetscCall(PetscOptionsHasHelp(nullptr, &help));
    if (help) {
      if (opt.op == "wilson")
        latke::petsc::staggered_options_help(PETSC_COMM_WORLD, nullptr);
      else
        latke::petsc::wilson_clover_options_help(PETSC_COMM_WORLD, nullptr);
      if (!opt.native) latke::petsc::native_solver_options_help(PETSC_COMM_WORLD, nullptr);
      latke::petsc::read_for_help(
          [] { (void)latke::schwarz_param_from_options(PETSC_COMM_WORLD, nullptr, latke::SchwarzParam{}); });
    }
  }
  if (opt.native && opt.masses.empty()) {
    // The native solves' tolerance is the program's (native_checked passes it to MatLatkeSolve):
    // out of the options database, which would override the tighter ones of a pass.
    PetscCall(PetscOptionsGetReal(nullptr, nullptr, "-latke_solver_tol", &opt.tol, nullptr));
    PetscCall(PetscOptionsClearValue(nullptr, "-latke_solver_tol"));
  }
  PetscCall(LatkeGaugeCreateFromOptions(PETSC_COMM_WORLD, nullptr, &gauge));
  PetscLogDouble t0, t1, t2, f0, f1;
  PetscCall(PetscTime(&t0));
  const bool staggered = opt.op != "wilson";
  const bool multi = !opt.masses.empty();
  double mass_a = 0;
  if (staggered) {
    LatkeStaggeredParams sp;
    PetscCall(LatkeStaggeredParamsDefault(&sp));
    sp.type = opt.op == "asqtad" ? LATKE_STAGGERED_ASQTAD : LATKE_STAGGERED_NAIVE;
    PetscCall(PetscOptionsGetReal(nullptr, nullptr, "-latke_mass", &sp.mass, nullptr));  // as the matrix reads it
    mass_a = sp.mass;
    PetscCall(MatCreateLatkeStaggered(gauge, opt.form, &sp, nullptr, &A));
  } else {
    PetscCall(MatCreateLatkeWilsonClover(gauge, opt.form, nullptr, nullptr, &A));
  }
  PetscCall(MatLatkeCreateReference(A, LATKE_OPERATOR_FULL, &M));
  PetscCall(MatLatkeCreateFullVecs(A, &x, &b));
  PetscCall(VecDuplicate(b, &r));
  PetscCall(MatCreateVecs(A, &xhat, &bhat));
  {
    VecType vtype = nullptr;
    PetscCall(VecGetType(xhat, &vtype));
    sum.vec_type = vtype;
  }
  PetscCall(PetscObjectSetName(reinterpret_cast<PetscObject>(x), "solution"));

  if (opt.source == "point") {
    const PetscInt site[4] = {opt.site[0], opt.site[1], opt.site[2], opt.site[3]};
    PetscCall(LatkeVecSetPointSource(A, b, site, opt.spin, opt.color));
  } else if (opt.source == "wall") {
    PetscCall(LatkeVecSetWallSource(A, b, opt.site[3], opt.spin, opt.color));
  } else {
    PetscCall(LatkeVecSetNoiseSource(A, b, opt.source == "z2" ? LATKE_NOISE_Z2 : LATKE_NOISE_Z4, opt.seed));
  }
  PetscCall(MatLatkePrepareSource(A, b, bhat));

  KSPConvergedReason reason = KSP_CONVERGED_ITERATING;
  latke::WorkCounters start;  // this rank's counters before the solves whose exchanges are counted
  ksp = nullptr;
  if (multi) {
    start = latke::work_counters();
    PetscCall(solve_masses(gauge, A, b, bhat, opt, mass_a, sum));
    PetscCall(communication(sum, start));
    PetscCall(PetscTime(&t1));
    sum.setup_s = t1 - t0 - sum.solve_s;
  } else if (opt.native) {
    LatkeSolverStats st;
    latke::petsc::SolveChecked c;
    double check_s = 0;
    PetscCall(PetscTime(&t1));
    start = latke::work_counters();
    PetscCall(VecSet(xhat, 0.0));
    PetscCall(native_checked(A, M, bhat, xhat, b, x, r, opt.tol, st, c, check_s));
    PetscCall(PetscTime(&t2));
    PetscCall(communication(sum, start));
    sum.iterations = st.iterations;
    sum.operator_applications = st.outer_applications;
    sum.sloppy_applications = st.sloppy_applications;
    sum.fallback_at = st.fallback_at;
    sum.restarts = st.restarts;
    sum.solver_residual = st.true_residual;
    sum.rtol = 0;
    char type[64] = "bicgstab";
    PetscCall(PetscOptionsGetString(nullptr, nullptr, "-latke_solver", type, sizeof type, nullptr));
    sum.ksp = std::string("latke ") + type;
    char pc[64] = "none";
    PetscCall(PetscOptionsGetString(nullptr, nullptr, "-latke_solver_pc", pc, sizeof pc, nullptr));
    sum.pc = pc;
    sum.gflops = st.gflops;
    sum.reason = st.converged ? "CONVERGED_RTOL" : "DIVERGED_ITS";
    reason = st.converged ? KSP_CONVERGED_RTOL : KSP_DIVERGED_ITS;
    sum.rtol = opt.tol;
    sum.true_residual = c.residual;
    sum.refinements = c.passes;
    sum.converged = c.met(opt.tol);
    sum.setup_s = t1 - t0 + (t2 - t1 - st.seconds - check_s);  // a preconditioner's set-up happens inside MatLatkeSolve
    sum.solve_s = st.seconds;
    start = latke::work_counters();  // the solves after the first, where there are some
    PetscCall(push_again_stage(opt.solves));
    LatkeSolverParams p;
    PetscCall(LatkeSolverParamsDefault(&p));
    p.tol = opt.tol;
    for (long i = 1; i < opt.solves; ++i) {  // the preconditioner is kept with A (MatLatkeSolve)
      LatkeSolverStats again;
      PetscCall(VecSet(xhat, 0.0));
      PetscCall(MatLatkeSolve(A, bhat, xhat, &p, nullptr, &again));
      sum.repeat_s.push_back(again.seconds);
    }
    if (opt.solves > 1) {
      PetscCall(PetscLogStagePop());
      PetscCall(communication(sum, start, opt.solves - 1));
    }
  } else {
    PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
    PetscCall(KSPSetOperators(ksp, A, A));
    PetscCall(KSPSetTolerances(ksp, 1e-10, PETSC_DEFAULT, PETSC_DEFAULT, 10000));
    {
      PC pc;
      PetscCall(KSPGetPC(ksp, &pc));
      // Wilson-clover: FGMRES preconditioned by Latke's multigrid, where the local lattice can
      // be coarsened (every local extent a multiple of 4); else GCR. The staggered normal
      // operator is Hermitian positive definite: CG.
      PetscInt local[4];
      PetscCall(LatkeGaugeGetLattice(gauge, nullptr, local, nullptr));
      bool coarsens = true;
      for (int mu = 0; mu < 4; ++mu) coarsens = coarsens && local[mu] % 4 == 0;
      PetscCall(KSPSetType(
          ksp, staggered ? (opt.form == LATKE_OPERATOR_EVEN_ODD ? KSPCG : KSPGCR) : (coarsens ? KSPFGMRES : KSPGCR)));
      if (!staggered && !coarsens)
        PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                              "latke-solve: local lattice %dx%dx%dx%d too small to coarsen (extents "
                              "must be multiples of 4): no multigrid preconditioner by default\n",
                              (int)local[0], (int)local[1], (int)local[2], (int)local[3]));
      PetscCall(PCSetType(pc, staggered || !coarsens ? PCNONE : PCLATKEMG));
    }
    PetscCall(KSPSetFromOptions(ksp));
    {
      // FGMRES with the multigrid restarts every 10 iterations unless told: an iteration is
      // worth several operator applications, and a short restart keeps PETSc's own vector work
      // (each new direction orthogonalized against the earlier ones) small beside it
      // (docs/gpu-petsc.md).
      PetscBool fgmres = PETSC_FALSE, mg = PETSC_FALSE, restart = PETSC_FALSE;
      PC pc;
      PetscCall(KSPGetPC(ksp, &pc));
      PetscCall(PetscObjectTypeCompare(reinterpret_cast<PetscObject>(ksp), KSPFGMRES, &fgmres));
      PetscCall(PetscObjectTypeCompare(reinterpret_cast<PetscObject>(pc), PCLATKEMG, &mg));
      PetscCall(PetscOptionsHasName(nullptr, nullptr, "-ksp_gmres_restart", &restart));
      if (fgmres && mg && !restart) PetscCall(KSPGMRESSetRestart(ksp, 10));
    }
    {
      // PETSc's CGNE multiplies by A^T, not A^H, for complex scalars: the normal equations it
      // solves are not Hermitian for Latke's operators, and it does not converge on them.
      PetscBool cgne = PETSC_FALSE;
      PetscCall(PetscObjectTypeCompare(reinterpret_cast<PetscObject>(ksp), KSPCGNE, &cgne));
      if (cgne)
        PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                              "latke-solve: warning: PETSc's -ksp_type cgne multiplies by the transpose A^T, not "
                              "A^H, for complex matrices, and does not converge on Latke's operators; use "
                              "-ksp_type cgls or bicg, or -latke_native -latke_solver cgne\n"));
    }
    PetscCall(note_staged_vectors(A, xhat));
    PetscCall(KSPSetUp(ksp));
    PetscBool logging = PETSC_FALSE;
    LogSnapshot before, after;
    PetscCall(PetscLogIsActive(&logging));
    if (logging) PetscCall(log_snapshot(&before));
    start = latke::work_counters();
    PetscCall(PetscTime(&t1));
    PetscCall(PetscGetFlops(&f0));
    PetscCall(KSPSolve(ksp, bhat, xhat));
    PetscCall(PetscGetFlops(&f1));
    PetscCall(PetscTime(&t2));
    if (logging) PetscCall(log_snapshot(&after));

    PetscReal rnorm, bnorm;
    KSPType ktype;
    PCType ptype;
    PC pc;
    PetscCall(KSPGetConvergedReason(ksp, &reason));
    PetscCall(KSPGetIterationNumber(ksp, &sum.iterations));
    PetscCall(KSPGetResidualNorm(ksp, &rnorm));
    PetscCall(KSPGetType(ksp, &ktype));
    PetscCall(KSPGetPC(ksp, &pc));
    PetscCall(PCGetType(pc, &ptype));
    PetscCall(KSPGetTolerances(ksp, &sum.rtol, nullptr, nullptr, nullptr));
    PetscCall(VecNorm(bhat, NORM_2, &bnorm));
    sum.solver_residual = bnorm > 0 ? rnorm / bnorm : rnorm;
    double flops = f1 - f0, total = 0;
    PetscCallMPI(MPI_Allreduce(&flops, &total, 1, MPI_DOUBLE, MPI_SUM, PETSC_COMM_WORLD));
    sum.setup_s = t1 - t0;
    sum.solve_s = t2 - t1;
    sum.gflops = sum.solve_s > 0 ? total / sum.solve_s * 1e-9 : 0;
    sum.ksp = ktype;
    sum.pc = ptype;
    sum.reason = KSPConvergedReasons[reason];
    PetscCall(MatLatkeGetApplications(A, &sum.operator_applications));
    if (logging) sum.split = split_of(before, after, sum.iterations);
    Checked c;
    PetscCall(check_and_refine(ksp, A, M, bhat, xhat, b, x, r, c));
    PetscCall(PetscTime(&t1));
    sum.solve_s += t1 - t2;  // the refinement's solves, if any
    PetscCall(communication(sum, start));
    sum.iterations = c.iterations;
    sum.refinements = c.passes;
    sum.reason = KSPConvergedReasons[c.reason];
    sum.true_residual = c.true_residual;
    sum.converged = c.converged;
    PetscCall(KSPGetResidualNorm(ksp, &rnorm));
    sum.solver_residual = bnorm > 0 ? rnorm / bnorm : rnorm;
    start = latke::work_counters();  // the solves after the first, where there are some
    PetscCall(push_again_stage(opt.solves));
    for (long i = 1; i < opt.solves; ++i) {  // the same KSP: its preconditioner is set up
      PetscCall(VecSet(xhat, 0.0));
      PetscLogDouble a, z;
      PetscCall(PetscTime(&a));
      PetscCall(KSPSolve(ksp, bhat, xhat));
      PetscCall(PetscTime(&z));
      sum.repeat_s.push_back(z - a);
    }
    if (opt.solves > 1) {
      PetscCall(PetscLogStagePop());
      PetscCall(communication(sum, start, opt.solves - 1));
    }
  }

  {  // -latke_kappas, -latke_gauge_next: each solved with a new matrix, after the one before
    Mat prev = A, next;
    LatkeGauge config = gauge, evolved;
    for (double k : opt.kappas) {
      AgainResult kr;
      PetscCall(solve_again(gauge, opt, &k, ksp, b, prev, &next, kr));
      if (prev != A) PetscCall(MatDestroy(&prev));
      prev = next;
      sum.kappas.push_back(kr);
    }
    for (long n : opt.next) {
      AgainResult cr;
      cr.sweeps = n;
      // The chain's own coupling and seed: those the gauge was created with (-latke_gauge_beta, -latke_gauge_seed).
      PetscCall(LatkeGaugeCreateEvolved(config, PETSC_DEFAULT, PETSC_DEFAULT, n, &evolved));
      PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                            "latke-solve: configuration %d of -latke_gauge_next: ", (int)sum.configs.size() + 2));
      PetscCall(LatkeGaugeView(evolved, PETSC_VIEWER_STDOUT_WORLD));
      if (config != gauge) PetscCall(LatkeGaugeDestroy(&config));
      config = evolved;
      PetscCall(solve_again(config, opt, nullptr, ksp, b, prev, &next, cr));
      if (prev != A) PetscCall(MatDestroy(&prev));
      prev = next;
      sum.configs.push_back(cr);
    }
    if (prev != A) PetscCall(MatDestroy(&prev));
    if (config != gauge) PetscCall(LatkeGaugeDestroy(&config));
  }
  PetscInt global[4], grid[4];
  PetscCall(LatkeGaugeGetLattice(gauge, global, nullptr, grid));
  char lat[128];
  std::snprintf(lat, sizeof lat, "%dx%dx%dx%d on %dx%dx%dx%d ranks", (int)global[0], (int)global[1], (int)global[2],
                (int)global[3], (int)grid[0], (int)grid[1], (int)grid[2], (int)grid[3]);
  sum.lattice = lat;
  for (int mu = 0; mu < 4; ++mu) sum.extents.push_back(global[mu]), sum.grid.push_back(grid[mu]);
  {
    auto& ph = sum.physics;
    PetscReal v = 0, plaquette = 0;
    PetscBool set = PETSC_FALSE;
    for (const char* name : {"kappa", "mass", "csw"}) {
      PetscCall(PetscOptionsGetReal(nullptr, nullptr, (std::string("-latke_") + name).c_str(), &v, &set));
      if (set) ph[name] = v;
    }
    PetscCall(LatkeGaugeGetPlaquette(gauge, &plaquette));
    ph["plaquette"] = plaquette;
    ph["source"] = {{"type", opt.source}};
    if (opt.source == "point" || opt.source == "wall")
      ph["source"].update({{"site", opt.site}, {"spin", opt.spin}, {"color", opt.color}});
    else
      ph["source"]["seed"] = opt.seed;
  }
  sum.form = opt.form == LATKE_OPERATOR_FULL ? "full" : "even_odd";
  sum.op = opt.op == "wilson" ? "Wilson-clover" : opt.op == "asqtad" ? "asqtad staggered" : "naive staggered";
  const char* backend = nullptr;
  PetscCall(LatkeGetBackend(&backend));
  sum.backend = backend;
  {
    int v[3];
    PetscInt p[4];
    PetscCall(LatkeGetVersion(&v[0], &v[1], &v[2]));
    PetscCall(PetscGetVersionNumber(&p[0], &p[1], &p[2], &p[3]));
    sum.latke_version = std::to_string(v[0]) + "." + std::to_string(v[1]) + "." + std::to_string(v[2]);
    sum.petsc_version = std::to_string(p[0]) + "." + std::to_string(p[1]) + "." + std::to_string(p[2]);
  }
  {
    PetscViewer out = PETSC_VIEWER_STDOUT_WORLD;
    PetscCall(PetscViewerASCIIPrintf(out, "latke-solve: %s (%s) on %s, %s backend, %s source, %s vectors\n",
                                     sum.op.c_str(), sum.form.c_str(), lat, backend, opt.source.c_str(),
                                     sum.vec_type.c_str()));
    PetscCall(PetscViewerASCIIPushTab(out));
    PetscCall(
        PetscViewerASCIIPrintf(out, "Latke %s, PETSc %s\n", sum.latke_version.c_str(), sum.petsc_version.c_str()));
    PetscCall(LatkeGaugeView(gauge, out));
    PetscCall(PetscViewerASCIIPopTab(out));
    if (multi) {
      PetscCall(PetscViewerASCIIPrintf(
          out, "  multi-mass %s, %d masses: %s in %d iterations (largest true residual %.3e, rtol %.1e)\n",
          sum.ksp.c_str(), (int)sum.masses.size(), sum.converged ? "converged" : "NOT converged", (int)sum.iterations,
          sum.solver_residual, sum.rtol));
      PetscCall(PetscViewerASCIIPrintf(out, "  operator applications: %d double, %d sloppy\n",
                                       (int)sum.operator_applications, (int)sum.sloppy_applications));
      PetscCall(PetscViewerASCIIPrintf(out, "  %10s %10s %10s %12s %12s %12s %9s\n", "mass", "iterations", "refinement",
                                       "start res", "true res", "MatMult res", "to single"));
      for (const MassResult& m : sum.masses) {
        char fell[16] = "-";
        if (m.stats.fallback_at >= 0) std::snprintf(fell, sizeof fell, "%d", (int)m.stats.fallback_at);
        PetscCall(PetscViewerASCIIPrintf(out, "  %10g %10d %10d %12.3e %12.3e %12.3e %9s%s\n", (double)m.stats.mass,
                                         (int)m.stats.iterations, (int)m.stats.refine_iterations,
                                         (double)m.stats.initial_residual, (double)m.stats.true_residual, m.check, fell,
                                         m.stats.converged ? "" : "  NOT converged"));
      }
      PetscCall(PetscViewerASCIIPrintf(out,
                                       "  (true res: the solver's |b_p - A_i x_i|/|b_p| in double; MatMult res: "
                                       "the same with the matrix, independently; to single: the CG iteration at "
                                       "which half fell back to single)\n"));
    } else {
      PetscCall(PetscViewerASCIIPrintf(out, "  KSP %s, PC %s: %s in %d iterations (solver residual %.3e, rtol %.1e)\n",
                                       sum.ksp.c_str(), sum.pc.c_str(), sum.reason.c_str(), (int)sum.iterations,
                                       sum.solver_residual, sum.rtol));
      PetscCall(PetscViewerASCIIPrintf(out, "  operator applications: %d double, %d sloppy\n",
                                       (int)sum.operator_applications, (int)sum.sloppy_applications));
      if (sum.fallback_at >= 0)
        PetscCall(PetscViewerASCIIPrintf(out, "  the iteration fell back from half to single at iteration %d\n",
                                         (int)sum.fallback_at));
      if (sum.restarts > 0)
        PetscCall(PetscViewerASCIIPrintf(out,
                                         "  BiCGstab restarted %d times (biorthogonality lost in the sloppy "
                                         "precision, or a breakdown)\n",
                                         (int)sum.restarts));
      if (sum.refinements > 0)
        PetscCall(PetscViewerASCIIPrintf(out, "  solved on from the solution %d time(s) for the true residual\n",
                                         sum.refinements));
      PetscCall(PetscViewerASCIIPrintf(
          out, "  true residual |b - M x|/|b| = %.3e (full operator in double, reconstructed solution)\n",
          sum.true_residual));
    }
    PetscCall(PetscViewerASCIIPrintf(out, "  time: setup %.3f s, solve %.3f s; %.2f GFLOPS in the solve\n", sum.setup_s,
                                     sum.solve_s, sum.gflops));
    if (!sum.repeat_s.empty()) {
      std::ostringstream r;
      double fastest = sum.repeat_s.front();
      for (double t : sum.repeat_s) r << " " << std::fixed << std::setprecision(3) << t, fastest = std::min(fastest, t);
      PetscCall(PetscViewerASCIIPrintf(
          out, "  solved again %d times from x = 0 (kernels tuned, preconditioner kept):%s s; fastest %.3f s\n",
          (int)sum.repeat_s.size(), r.str().c_str(), fastest));
    }
    {
      int ranks = 1;
      PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &ranks));
      char halo[160] = "";
      if (ranks > 1)
        std::snprintf(halo, sizeof halo, "%.0f halo exchanges per rank in the solve, %.1f kB sent per exchange; ",
                      sum.halo_exchanges, sum.halo_bytes_per_exchange * 1e-3);
      char device[64] = "";
      if (sum.backend == "cuda")
        std::snprintf(device, sizeof device, "%.3f GB on the device and ", sum.device_peak * 1e-9);
      PetscCall(PetscViewerASCIIPrintf(out, "  %sLatke's buffers at most %s%.3f GB on the host per rank\n", halo,
                                       device, sum.host_peak * 1e-9));
    }
    for (const bool by_kappa : {true, false})
      for (std::size_t i = 0; i < (by_kappa ? sum.kappas : sum.configs).size(); ++i) {
        const AgainResult& k = (by_kappa ? sum.kappas : sum.configs)[i];
        char what[64];
        if (by_kappa)
          std::snprintf(what, sizeof what, "kappa %g", k.kappa);
        else
          std::snprintf(what, sizeof what, "configuration %d (%ld sweep(s) on)", (int)i + 2, k.sweeps);
        PetscCall(PetscViewerASCIIPrintf(
            out, "  %s: preconditioner %s %.3f s; %d iterations, %.3f s; true residual %.3e%s\n", what,
            k.pc == PcAgain::stale ? "set up anew (the kept null vectors were stale, -pc_latke_mg_reuse_max_growth) in"
            : k.pc == PcAgain::set_up    ? "set up in"
            : k.pc == PcAgain::refreshed ? "rebuilt refreshing the null vectors in"
                                         : "rebuilt keeping the null vectors in",
            k.setup_s, (int)k.iterations, k.solve_s, k.true_residual, k.converged ? "" : "  NOT converged"));
      }
    const Split& sp = sum.split;
    if (sp.valid) {
      PetscCall(PetscViewerASCIIPrintf(out,
                                       "  per iteration: operator %.3f ms (MatMult, %d calls; LatkeMatMult %.3f ms), "
                                       "preconditioner %.3f ms (PCApply, %d calls), PETSc's own work %.3f ms "
                                       "(rest of KSPSolve; Vec events %.3f ms): %.1f%% of the iteration\n",
                                       sp.op_ms, sp.mat_mults, sp.latke_op_ms, sp.pc_ms, sp.pc_applies, sp.own_ms,
                                       sp.vec_ms, 100 * sp.own_share));
      PetscCall(PetscViewerASCIIPrintf(out,
                                       "  copies in the solve: whole vectors: PETSc %ld (VecCUDACopyTo/From), Latke "
                                       "staging %ld; all of PETSc's, reduction results included: CPU->GPU %.0f "
                                       "(%.3f MB), GPU->CPU %.0f (%.3f MB)\n",
                                       sp.offloads, sp.staged, sp.to_device, sp.to_device_mb, sp.to_host,
                                       sp.to_host_mb));
    }
  }
  if (!opt.save.empty()) PetscCall(LatkeVecSave(A, x, opt.save.c_str()));
  if (!opt.json.empty()) {
    int rank = 0;
    std::string why;
    PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
    try {
      if (rank == 0) latke::write_text_atomically(opt.json, json_text(sum), "-latke_json");
    } catch (const std::exception& e) {
      why = e.what();
    }
    try {
      latke::collective_require(PETSC_COMM_WORLD, why.empty(), why);
    } catch (const std::exception& e) {
      SETERRQ(PETSC_COMM_WORLD, PETSC_ERR_FILE_WRITE, "%s", e.what());
    }
  }

  if (ksp) PetscCall(KSPDestroy(&ksp));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&b));
  PetscCall(VecDestroy(&r));
  PetscCall(VecDestroy(&xhat));
  PetscCall(VecDestroy(&bhat));
  PetscCall(MatDestroy(&M));
  PetscCall(MatDestroy(&A));
  PetscCall(LatkeGaugeDestroy(&gauge));
  PetscCall(LatkeFinalize());
  if (!sum.converged && multi) {
    PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                          "latke-solve: the multi-mass solve did not converge: largest true residual %.3e (solver), "
                          "%.3e (MatMult in double), tolerance %.1e\n",
                          sum.solver_residual, sum.true_residual, sum.rtol));
    status = 2;
  } else if (!sum.converged) {
    PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                          "latke-solve: the solve did not converge: KSPConvergedReason %s, true residual %.3e "
                          "(full operator in double) against the tolerance %.1e\n",
                          sum.reason.c_str(), sum.true_residual, sum.rtol));
    status = 2;
  }
  for (const AgainResult& k : sum.kappas)
    if (!k.converged) {
      PetscCall(PetscPrintf(PETSC_COMM_WORLD, "latke-solve: the solve at kappa %g (-latke_kappas) did not converge\n",
                            k.kappa));
      status = 2;
    }
  for (std::size_t i = 0; i < sum.configs.size(); ++i)
    if (!sum.configs[i].converged) {
      PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                            "latke-solve: the solve on configuration %d (-latke_gauge_next) did not converge\n",
                            (int)i + 2));
      status = 2;
    }
  PetscFunctionReturn(0);
}

}  // namespace

int main(int argc, char** argv) { return latke::petsc::program_main(argc, argv, help, "latke-solve", run); }
