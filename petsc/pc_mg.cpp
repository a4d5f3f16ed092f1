// Adaptive multigrid as a PETSc PC (-pc_type latke_mg, registered by LatkeInitialize), as a
// PCSHELL (PCShellSetLatkeMG) and as the native GCR's preconditioner (-latke_solver_pc mg).
// The hierarchy is built on the full operator of the preconditioning matrix; on the even-odd
// form, K r_p = [K_full f]_p with f = (f_p, 0) the full right-hand side of r_p
// (schur_rhs_parity), an approximation of Mhat^-1 as good as K_full is of M^-1, which
// Multigrid::apply_parity computes on parity p alone.
#include "petsc/pc_mg.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <sstream>

#include "petsc/mat_shell.h"
#include "petsc/pc_adapter.h"
#include "petsc/schwarz_options.h"
#include "preconditioners/mg/agglomerate.h"
#include "src/core/error.h"
#include "src/core/options.h"
#include "src/core/petsc_compat.h"

namespace latke::mg {

namespace {

/// A per-level list (the last value repeated to n levels).
template <typename T>
std::vector<T> per_level(std::vector<T> v, int n) {
  while (!v.empty() && static_cast<int>(v.size()) < n) v.push_back(v.back());
  return v;
}

/// Default aggregates: on level 0 extent 4 where the local extent is a multiple of 8, else 2
/// (a multiple of 4); on coarser levels 2; else 3 where the extent is a multiple of 6. Levels are added while every
/// extent allows one, up to max_levels; a level that `p` gathers onto fewer ranks (mg::level_grid) is
/// aggregated from its extents on those. Returns the aggregates of each level but the coarsest.
std::vector<Coords> default_blocks(const Lattice& fine, int max_levels, const mg::MultigridParam& p) {
  std::vector<Coords> blocks;
  Coords global = fine.global(), grid = fine.grid(), local = fine.local();
  while (static_cast<int>(blocks.size()) + 1 < max_levels) {
    const int level = static_cast<int>(blocks.size());
    grid = mg::level_grid(p, level, global, grid);
    for (int mu = 0; mu < 4; ++mu) local[mu] = global[mu] / grid[mu];
    Coords b;
    for (int mu = 0; mu < 4; ++mu) {
      if (blocks.empty() && local[mu] % 8 == 0)
        b[mu] = 4;
      else if (local[mu] % 4 == 0)
        b[mu] = 2;
      else if (local[mu] % 6 == 0)  // e.g. 6 -> 2 (48^3x96 on 4 ranks: level 1 is 12^3x6 per rank)
        b[mu] = 3;
      else
        return blocks;
    }
    for (int mu = 0; mu < 4; ++mu) {
      local[mu] /= b[mu];
      global[mu] /= b[mu];
    }
    blocks.push_back(b);
  }
  return blocks;
}

}  // namespace

MultigridOptions multigrid_options(MPI_Comm comm, const char* prefix_c, const Lattice& fine,
                                   const MultigridSettings* set_c) {
  const std::string prefix = prefix_c ? prefix_c : "";
  const MultigridSettings set = set_c ? *set_c : MultigridSettings{};
  MultigridOptions o;
  MultigridParam& p = o.param;
  long levels = 0, refine = 0, coarse_post = -1, batch = p.setup_batch, coarse_max = p.coarse_max_it,
       coarse_restart = p.coarse_restart, seed = 1;
  std::string setup_solver, cycle, set_math;
  std::vector<long> block, nvec, setup_its, setup_restrict_its, refresh_its;
  std::vector<std::string> precision, transfer, setup_prec;
  long gather_sites = p.gather_sites, gather_onto_sites = p.gather_onto_sites;
  std::vector<long> ranks(5, 0);  // per level (the most levels: 5)
  static const char* const rank_options[5] = {nullptr, "-pc_latke_mg_levels_1_ranks", "-pc_latke_mg_levels_2_ranks",
                                              "-pc_latke_mg_levels_3_ranks", "-pc_latke_mg_levels_4_ranks"};
  double max_growth = o.reuse_max_growth;
  double setup_tol = 1e-6;
  bool setup_eo = p.setup_even_odd, setup_restrict = p.setup_restrict;
  read_options(comm, prefix, "Latke multigrid preconditioner options", [&](OptionGroup& g) {
    levels = g.integer("-pc_latke_mg_levels", set.levels,
                       "Levels including the fine one (0: as many as the default aggregates allow, at most 4)");
    block = g.integers("-pc_latke_mg_block", set.block,
                       "Aggregate extents per level: X,Y,Z,T of level 0, then X,Y,Z,T of level 1, ... in one comma "
                       "list (default: 4 where the local extent is a multiple of 8 on level 0, else 2 where it is a "
                       "multiple of 4, else 3 where it is a multiple of 6)",
                       16);
    nvec = g.integers("-pc_latke_mg_nvec", set.nvec.empty() ? std::vector<long>{24, 32} : set.nvec,
                      "Null vectors per level (comma list; the last repeats)", 4);
    transfer = g.choice_list("-pc_latke_mg_transfer_precision", {"half"}, {"single", "half"},
                             "Storage of the null-space basis that P and R read, per level (comma list)", 4);
    precision = g.choice_list("-pc_latke_mg_precision", {"single"}, {"double", "single", "half"},
                              "Storage of the coarse levels' operators, per coarse level (comma list)", 4);
    setup_its = g.integers("-pc_latke_mg_setup_iterations", {100},
                           "Inverse-iteration steps per null vector, per level (comma list)", 4);
    setup_tol =
        g.real("-pc_latke_mg_setup_tol", setup_tol, "Stop a null vector's inverse iteration at this |M v|/|M v0|");
    setup_solver = g.choice("-pc_latke_mg_setup_solver", "bicgstab", {"bicgstab", "gcr", "mr", "cgnr", "cgne"},
                            "Inverse-iteration solver");
    setup_prec =
        g.choice_list("-pc_latke_mg_setup_precision", {setup_solver == "mr" ? "single" : "half"}, {"single", "half"},
                      "Inverse-iteration steps, per level (comma list; half: solutions accumulated in "
                      "single)",
                      4);
    setup_eo = g.flag("-pc_latke_mg_setup_even_odd", p.setup_even_odd,
                      "Inverse iteration on each level's even-odd system (else on the full operator)");
    setup_restrict = g.flag("-pc_latke_mg_setup_restrict", p.setup_restrict,
                            "Coarse levels start their null vectors from the level above's, restricted (the rest "
                            "Gaussian); false: all Gaussian");
    setup_restrict_its = g.integers("-pc_latke_mg_setup_restrict_iterations", {30},
                                    "Inverse-iteration steps for the restricted starts, per coarse level from level "
                                    "1 (comma list; 0: taken as restricted)",
                                    4);
    refine = g.integer("-pc_latke_mg_setup_refine", 0, "Refinement passes: rerun the setup with the current hierarchy");
    coarse_post = g.integer("-pc_latke_mg_coarse_post_smooth", -1,
                            "Smoothing steps after the coarse correction on every coarse level above the coarsest, "
                            "where -latke_mg_levels_N_post_smooth does not say (-1: each level's default)");
    batch = g.integer("-pc_latke_mg_setup_batch", batch,
                      "Null vectors solved together by one BiCGstab over the set (1: one at a time)");
    set_math = g.choice("-pc_latke_mg_setup_mma", "automatic", {"automatic", "tf32x3", "fp32"},
                        "Coarse levels' null vectors solved together multiply on tensor cores (tf32x3: split "
                        "operands, nearly FP32's accuracy) or on the CUDA cores (fp32); automatic: tf32x3 on CUDA "
                        "where the level is large enough");
    cycle = g.choice("-pc_latke_mg_cycle", set.cycle.empty() ? "vcycle" : set.cycle, {"vcycle", "kcycle"},
                     "V-cycle, or K-cycle (GCR on intermediate levels)");
    gather_sites = g.integer("-pc_latke_mg_gather_sites", gather_sites,
                             "A coarse level spread over several ranks is gathered whole onto every rank when it "
                             "would have at most this many sites per rank (0: never; _levels_N_ranks decides first)");
    gather_onto_sites = g.integer("-pc_latke_mg_gather_onto_sites", gather_onto_sites,
                                  "A gathered level goes onto the most ranks that leave each at least this many "
                                  "sites, in copies side by side; onto every rank whole where no rank count does");
    p.graphs = g.flag("-pc_latke_mg_graphs", p.graphs,
                      "On CUDA, launch the coarse correction below a level as one CUDA graph where every level "
                      "below lives on one rank (false: kernel by kernel)");
    for (int l = 1; l < 5; ++l)
      ranks[l] = g.integer(rank_options[l], 0,
                           "Ranks this coarse level lives on: 0 automatic (_gather_sites), the level above's rank "
                           "count (spread), or a divisor of it (gathered onto that many; 1: the whole level on every "
                           "rank, solved there alone)");
    seed = g.integer("-pc_latke_mg_seed", 1, "Seed of the random starting vectors");
    o.verify = g.flag("-pc_latke_mg_verify", false, "Check (1 - P P^dag) v = 0, R P = 1 and D_c = R M P after setup");
    o.monitor = g.flag("-pc_latke_mg_monitor", false, "Print progress lines during the setup");
    o.quiet = g.flag("-pc_latke_mg_quiet", false,
                     "No progress lines (by default a setup that has run 2 s prints one line per level)");
    o.save = g.string("-pc_latke_mg_save", "", "Write the null vectors to this file after the setup");
    o.load = g.string("-pc_latke_mg_load", "", "Read the null vectors from this file instead of computing them");
    o.reuse_interpolation =
        g.flag("-pc_latke_mg_reuse_interpolation", false,
               "When the operator changes (same lattice), keep the null vectors and rebuild only the coarse operators");
    refresh_its = g.integers("-pc_latke_mg_refresh_iterations", {0},
                             "With _reuse_interpolation: inverse-iteration steps that refresh the kept null vectors on "
                             "the new operator before the rebuild, per level (comma list; the last repeats; 0: kept as "
                             "they are)",
                             4);
    max_growth = g.real("-pc_latke_mg_reuse_max_growth", max_growth,
                        "With _reuse_interpolation: set up anew instead where the kept null vectors' mean |M v|/|v| "
                        "on the new operator exceeds this many times that on the one they were found for (0: never)");
  });
  require(max_growth >= 0, "-", prefix, "pc_latke_mg_reuse_max_growth ", max_growth, ": expected 0 (never) or more");
  require(coarse_post >= -1, "-", prefix, "pc_latke_mg_coarse_post_smooth ", coarse_post,
          ": expected 0 or more steps (-1: each level's default)");
  o.reuse_max_growth = max_growth;
  const std::string pre = "-" + prefix;
  p.gather_sites = gather_sites;
  p.gather_onto_sites = gather_onto_sites;
  p.ranks.assign(ranks.begin(), ranks.end());
  const std::vector<Coords> auto_blocks = default_blocks(fine, levels == 0 ? 4 : static_cast<int>(levels), p);
  require(levels != 0 || !auto_blocks.empty(), "multigrid: the local lattice ", fine.local()[0], ",", fine.local()[1],
          ",", fine.local()[2], ",", fine.local()[3],
          " cannot be coarsened (every local extent must be a multiple of 4 or 6); give -pc_latke_mg_block");
  p.levels = levels == 0 ? static_cast<int>(auto_blocks.size()) + 1 : static_cast<int>(levels);
  require(p.levels >= 2 && p.levels <= 5, pre, "pc_latke_mg_levels ", p.levels, ": expected 2 to 5");
  for (int l = p.levels; l < 5; ++l)
    require(ranks[l] == 0, pre, "pc_latke_mg_levels_", l, "_ranks ", ranks[l], ": the multigrid has ", p.levels,
            " levels (0 to ", p.levels - 1, ")");
  p.ranks.resize(p.levels);
  const int nt = p.levels - 1;
  require(block.size() % 4 == 0, pre, "pc_latke_mg_block '", list_text(block), "': ", block.size(),
          " integers; expected four (X,Y,Z,T) per level");
  require(static_cast<int>(block.size()) / 4 <= nt, pre, "pc_latke_mg_block '", list_text(block),
          "': ", block.size() / 4, " levels' aggregates for ", nt, " level(s) with aggregates");
  for (long b : block)
    require(b >= 1, pre, "pc_latke_mg_block '", list_text(block), "': extent ", b, ": expected positive extents");
  const std::vector<long> nv = per_level(nvec, nt), its = per_level(setup_its, nt),
                          rits = per_level(setup_restrict_its, nt), refresh = per_level(refresh_its, nt);
  require(static_cast<int>(refresh.size()) <= nt, pre, "pc_latke_mg_refresh_iterations '", list_text(refresh_its),
          "': ", refresh.size(), " levels' steps for ", nt, " level(s) with null vectors");
  for (long r : refresh)
    require(r >= 0, pre, "pc_latke_mg_refresh_iterations '", list_text(refresh_its), "': ", r,
            " steps: expected 0 or more");
  o.refresh.assign(refresh.begin(), refresh.end());
  const std::vector<std::string> precs = per_level(precision, nt), tprecs = per_level(transfer, nt),
                                 sprecs = per_level(setup_prec, nt);
  const SolverType ss = parse_solver_type(setup_solver);
  p.setup_set_math = parse_set_math(set_math, pre + "pc_latke_mg_setup_mma");
  p.level.assign(nt, LevelParam{});
  for (int l = 0; l < nt; ++l) {
    LevelParam& q = p.level[l];
    q.block = 4 * l < static_cast<int>(block.size())
                  ? Coords{static_cast<int>(block[4 * l]), static_cast<int>(block[4 * l + 1]),
                           static_cast<int>(block[4 * l + 2]), static_cast<int>(block[4 * l + 3])}
                  : (l < static_cast<int>(auto_blocks.size()) ? auto_blocks[l] : Coords{2, 2, 2, 2});
    q.nvec = static_cast<int>(nv[l]);
    q.setup_iterations = static_cast<int>(its[l]);
    // The list starts at level 1 (level 0 has no level above to restrict from).
    if (l > 0) q.setup_restrict_iterations = static_cast<int>(rits[l - 1]);
    q.setup_tol = setup_tol;
    q.setup_solver = ss;
    q.setup_precision = parse_precision(sprecs[l]);
    q.coarse_precision = parse_precision(precs[l]);
    q.transfer_precision = parse_precision(tprecs[l]);
    const std::string lp = prefix + "latke_mg_levels_" + std::to_string(l) + "_";
    std::string smoother, smoother_prec = "single";
    if (l < static_cast<int>(set.pre_smooth.size()) && set.pre_smooth[l] >= 0) q.pre_smooth = set.pre_smooth[l];
    if (l < static_cast<int>(set.post_smooth.size()) && set.post_smooth[l] >= 0) q.post_smooth = set.post_smooth[l];
    if (l > 0 && coarse_post >= 0) q.post_smooth = static_cast<int>(coarse_post);
    long pre_s = q.pre_smooth, post_s = q.post_smooth, kmax = q.ksp_max_it;
    read_options(comm, lp, "Latke multigrid level " + std::to_string(l), [&](OptionGroup& g) {
      smoother = g.choice("-smoother", "mr", {"mr", "schwarz"},
                          "Smoother (schwarz: level 0; -pc_latke_schwarz_* under this prefix)");
      pre_s = g.integer("-pre_smooth", q.pre_smooth, "Smoothing steps before the coarse correction");
      post_s = g.integer("-post_smooth", q.post_smooth, "Smoothing steps after the coarse correction");
      q.omega = g.real("-omega", q.omega, "MR relaxation weight in (0, 2)");
      q.smooth_even_odd = g.flag("-smooth_even_odd", q.smooth_even_odd,
                                 "MR smoothing on the level's even-odd system (else on the full operator)");
      // Half by default where it is possible: MR on the level's even-odd system.
      smoother_prec = g.string("-smoother_precision", smoother == "mr" && q.smooth_even_odd ? "half" : "single",
                               l == 0 ? "MR smoother's vectors and operator: single, or half (on the even-odd system)"
                                      : "MR smoother's operator blocks: single, or half (on the even-odd system)");
      if (l > 0) {
        kmax = g.integer("-ksp_max_it", q.ksp_max_it,
                         "K-cycle: GCR iterations on this level per cycle of the level above");
        q.ksp_rtol = g.real("-ksp_rtol", q.ksp_rtol, "K-cycle: GCR tolerance on this level");
      }
    });
    q.smoother = parse_smoother_type(smoother);
    q.smoother_precision = parse_precision(smoother_prec);
    q.pre_smooth = static_cast<int>(pre_s);
    q.post_smooth = static_cast<int>(post_s);
    q.ksp_max_it = static_cast<int>(kmax);
    if (q.smoother == SmootherType::schwarz) {
      q.schwarz = schwarz_param_from_options(comm, lp.c_str(), schwarz_smoother_param());
    }
  }
  double ctol = p.coarse_tol;
  bool ceo = p.coarse_even_odd;
  std::string csolver;
  read_options(comm, prefix + "latke_mg_coarse_", "Latke multigrid coarsest level", [&](OptionGroup& g) {
    ctol = g.real("-ksp_rtol", p.coarse_tol, "GCR tolerance of the coarsest solve");
    coarse_max = g.integer("-ksp_max_it", p.coarse_max_it, "GCR iterations of the coarsest solve at most");
    coarse_restart = g.integer("-ksp_gcr_restart", p.coarse_restart, "GCR restart of the coarsest solve");
    ceo = g.flag("-even_odd", p.coarse_even_odd, "Solve the coarsest level's even-odd system");
    csolver = g.choice("-solver", "auto", {"auto", "gcr", "direct"},
                       "Coarsest solve: gcr (to -ksp_rtol), direct (dense inverse, on several ranks gathered on "
                       "every rank), or auto (direct with at most 4096 unknowns on all ranks)");
  });
  p.coarse_tol = ctol;
  p.coarse_max_it = static_cast<int>(coarse_max);
  p.coarse_restart = static_cast<int>(coarse_restart);
  p.coarse_even_odd = ceo;
  p.coarse_solver = parse_coarse_solver_type(csolver);
  p.cycle = parse_cycle_type(cycle);
  p.setup_refine = static_cast<int>(refine);
  p.setup_batch = static_cast<int>(batch);
  p.setup_even_odd = setup_eo;
  p.setup_restrict = setup_restrict;
  p.seed = static_cast<std::uint64_t>(seed);
  check_param(p, fine);
  return o;
}

}  // namespace latke::mg

namespace latke::petsc {

using mg::Multigrid;
using mg::MultigridOptions;

/// A multigrid preconditioner for a Latke matrix in its form (full or even-odd).
class MatMultigrid final : public Preconditioner {
 public:
  MatMultigrid(MatContext& m, const MultigridOptions& o, const std::function<void(const std::string&)>& print)
      : op_(m.op), form_(m.form), options_(o), print_(print) {
    const FineOperators f = fine_operators(op_, o.param);
    mg_ = std::make_shared<Multigrid>(f.fine, o.param, f.local, f.schur, f.smoother, f.setup);
    const auto progress = o.monitor ? print : std::function<void(const std::string&)>();
    if (!o.load.empty()) {
      mg_->load(o.load, progress);
    } else {
      // Without the monitor's lines, one line per level once the setup has run 2 s (as the
      // quenched generation's progress lines).
      Multigrid::LevelDone level_done;
      if (!o.monitor && !o.quiet && print)
        level_done = [this, n = o.param.levels](int level, double seconds) {
          if (seconds < 2.0) return;
          char line[160];
          std::snprintf(line, sizeof line, "setup: level %d of %d built, %.1f s so far", level, n - 1, seconds);
          print_(line);
        };
      mg_->setup(progress, level_done);
    }
    if (!o.save.empty()) mg_->save(o.save);
    make_parity_fields();
    if (o.verify) report(mg_->verify(), print);
    if (o.monitor) mg_->set_profiling(true);  // the per-level breakdown, printed at the end
  }

  /// Rebuild for matrix m's operator keeping the null vectors (Multigrid::update), refreshed by
  /// o.refresh's steps; the options of the first set-up stay, except -pc_latke_mg_monitor,
  /// _verify and _refresh_iterations, taken from o.
  /// Not done, with nothing changed, for another form, a Multigrid::mismatch, or null vectors
  /// grown stale on m's operator (o.reuse_max_growth).
  MultigridUpdate update(MatContext& m, const MultigridOptions& o) {
    MultigridUpdate r;
    if (m.form != form_) {
      r.why = "the new matrix is in another form (full or even-odd) than the preconditioner's";
      return r;
    }
    const FineOperators f = fine_operators(m.op, options_.param);
    r.why = mg_->mismatch(*f.fine, f.schur.get());
    if (!r.why.empty()) return r;
    const auto progress = o.monitor ? print_ : std::function<void(const std::string&)>();
    r.growth = mg_->nullness_growth(*f.fine);
    std::ostringstream g;
    g << "the kept null vectors' mean |M v|/|v| on the new operator is " << r.growth
      << " times that on the one they were found for";
    if (progress) progress(g.str());
    if (o.reuse_max_growth > 0 && r.growth > o.reuse_max_growth) {
      std::ostringstream s;
      s << g.str() << " (more than -pc_latke_mg_reuse_max_growth " << o.reuse_max_growth << ")";
      r.why = s.str();
      return r;
    }
    mg_->update(f.fine, f.local, f.schur, f.smoother, f.setup, progress, o.refresh);
    op_ = m.op;
    options_.monitor = o.monitor;
    options_.verify = o.verify;
    make_parity_fields();
    if (o.verify) report(mg_->verify(), print_);
    mg_->set_profiling(o.monitor);
    r.done = true;
    return r;
  }

  ~MatMultigrid() override {
    if (!options_.monitor || !print_) return;
    for (int l = 0; l < mg_->levels(); ++l) {  // what the cycles did, per level
      const std::vector<long> w = mg_->work(l);
      std::ostringstream s;
      s << "level " << l << ": " << w[0] << " smoothing steps";
      if (l == 0 && w[3] > 0) s << ", " << w[3] << " cycles on one parity";
      if (l == 0 && w[4] > 0) s << " (" << w[4] << " right-hand sides cycled in sets)";
      if (l > 0)
        s << ", " << w[1] << " solves, " << (w[1] ? static_cast<double>(w[2]) / w[1] : 0.0) << " iterations each";
      print_(s.str());
    }
    print_profile();
  }

  /// The per-level profile (Multigrid::profile) per cycle from the fine level, on this rank.
  void print_profile() const {
    const long n = mg_->profiled_cycles();
    if (n == 0) return;
    char line[400];
    const bool graphs = mg_->param().graphs && op_->backend() == Backend::cuda;
    std::snprintf(line, sizeof line,
                  "per-level profile over %ld cycles (this rank; the device synchronized at each change of level%s), "
                  "per cycle:",
                  n, graphs ? ", so the coarse corrections ran kernel by kernel, not as CUDA graphs" : "");
    print_(line);
    double total = 0;
    for (int l = 0; l < mg_->levels(); ++l) {
      const mg::LevelProfile& p = mg_->profile()[l];
      const mg::LevelInfo i = mg_->info(l);
      total += p.seconds;
      char gather[64] = "";
      if (p.gather_seconds > 0)
        std::snprintf(gather, sizeof gather, "; gathering its right-hand side %.3f ms", 1e3 * p.gather_seconds / n);
      const std::string local = std::to_string(i.local[0]) + "x" + std::to_string(i.local[1]) + "x" +
                                std::to_string(i.local[2]) + "x" + std::to_string(i.local[3]) + " per rank";
      const std::string where = i.copies == 0 ? local : i.local == i.global ? "gathered" : "gathered, " + local;
      std::snprintf(line, sizeof line,
                    "level %d (%s): %.3f ms in %.1f visits; halo wait %.3f ms in %.1f exchanges; global sums %.3f ms "
                    "in %.1f; %.0f launches%s",
                    l, where.c_str(), 1e3 * p.seconds / n, static_cast<double>(p.visits) / n, 1e3 * p.halo_seconds / n,
                    static_cast<double>(p.exchanges) / n, 1e3 * p.reduction_seconds / n,
                    static_cast<double>(p.reductions) / n, static_cast<double>(p.launches) / n, gather);
      print_(line);
    }
    std::snprintf(line, sizeof line, "all levels: %.3f ms per cycle", 1e3 * total / n);
    print_(line);
  }

  void apply(ColorSpinorField& out, const ColorSpinorField& in) override {
    if (form_ == LATKE_OPERATOR_FULL) {
      mg_->apply(out, in);
      return;
    }
    const ColorSpinorField* r = &in;
    if (!in.is_like(*r_p_)) {  // the cycle's single precision
      r_p_->copy_from(in);
      r = r_p_.get();
    }
    mg_->apply_parity(out, op_->schur_rhs_parity(*f_p_, *r), *r);
  }
  /// The even-odd form's cycle on a whole set at once (Multigrid::apply_parity_set), where
  /// the sets are in the cycle's precision; otherwise field by field.
  void apply_set(std::vector<ColorSpinorField>& out, const std::vector<ColorSpinorField>& in) override {
    const std::size_t n = in.size();
    // Fields of the even-odd form's parity in another precision (PCMatApply's columns, in
    // double) go through single-precision sets.
    auto parity_shaped = [this](const ColorSpinorField& f) {
      return f.param().subset == r_p_->param().subset && f.nspin() == r_p_->nspin() && f.ncolor() == r_p_->ncolor() &&
             f.lattice().volume_cb() == r_p_->lattice().volume_cb() && f.backend() == r_p_->backend();
    };
    if (form_ == LATKE_OPERATOR_FULL || n < 2 || out.size() != n || !mg_->cycles_sets() || !parity_shaped(in[0]) ||
        !parity_shaped(out[0])) {
      Preconditioner::apply_set(out, in);
      return;
    }
    if (!is_set(in) || !is_set(out) || !in[0].is_like(*r_p_) || !out[0].is_like(*r_p_)) {
      if (in_set_.size() != n) {
        in_set_ = ColorSpinorField::make_set(op_->lattice(), r_p_->param(), n);
        out_set_ = ColorSpinorField::make_set(op_->lattice(), r_p_->param(), n);
      }
      for (std::size_t k = 0; k < n; ++k) in_set_[k].copy_from(in[k]);
      apply_set(out_set_, in_set_);
      for (std::size_t k = 0; k < n; ++k) out[k].copy_from(out_set_[k]);
      return;
    }
    if (f_set_.size() != n) f_set_ = ColorSpinorField::make_set(op_->lattice(), r_p_->param(), n);
    bool scratch = false;  // f_p is in[k] itself (asymmetric Schur complement) or A_pp in[k] in f_set_
    for (std::size_t k = 0; k < n; ++k) scratch = &op_->schur_rhs_parity(f_set_[k], in[k]) == &f_set_[k];
    mg_->apply_parity_set(out, scratch ? f_set_ : in, in);
  }
  std::string describe() const override { return "Latke multigrid"; }
  Multigrid& mg() { return *mg_; }

  static void report(const mg::VerifyReport& r, const std::function<void(const std::string&)>& print) {
    for (std::size_t l = 0; l < r.galerkin.size(); ++l) {
      std::ostringstream s;
      s << "verify level " << l << " -> " << l + 1 << ": max |(1 - P P^dag) v_k|/|v_k| = " << r.projector[l]
        << ", |x - R P x|/|x| = " << r.restrict_prolong[l] << ", |D_c x - R M P x|/|D_c x| = " << r.galerkin[l];
      print(s.str());
    }
    for (std::size_t i = 0; i < r.even_odd.size(); ++i) {
      std::ostringstream s;
      s << "verify coarsest even-odd: |b - D_c x|/|b| = " << r.even_odd[i]
        << " for x from the even-odd system's coarsest solver (direct; GCR to 1e-5)";
      print(s.str());
    }
  }

 private:
  static SpinorParam with_precision(SpinorParam p, Precision q) {
    p.precision = q;
    return p;
  }
  /// The fine operators the hierarchy takes (Multigrid's constructor and update()), from the
  /// matrix's operator in the precisions the parameters ask for.
  struct FineOperators {
    std::shared_ptr<LinearOperator> fine, setup;
    std::shared_ptr<SchurOperator> schur, smoother;
    Multigrid::LocalFactory local;
  };
  static FineOperators fine_operators(const std::shared_ptr<ShellOperator>& op, const mg::MultigridParam& param) {
    const Coords none{0, 0, 0, 0};
    FineOperators f;
    f.fine = op->linear_operator(LATKE_OPERATOR_FULL, Precision::single, none);
    f.schur =
        std::dynamic_pointer_cast<SchurOperator>(op->linear_operator(LATKE_OPERATOR_EVEN_ODD, Precision::single, none));
    const Precision smp = param.level[0].smoother_precision, stp = param.level[0].setup_precision;
    if (smp != Precision::single)
      f.smoother = std::dynamic_pointer_cast<SchurOperator>(op->linear_operator(LATKE_OPERATOR_EVEN_ODD, smp, none));
    if (stp != Precision::single)
      f.setup = op->linear_operator(param.setup_even_odd ? LATKE_OPERATOR_EVEN_ODD : LATKE_OPERATOR_FULL, stp, none);
    f.local = [op](const Coords& block, Precision p, bool even_odd) {
      return op->linear_operator(even_odd ? LATKE_OPERATOR_EVEN_ODD : LATKE_OPERATOR_FULL, p, block);
    };
    return f;
  }
  /// The even-odd form's r_p and f_p in single, on the operator's lattice.
  void make_parity_fields() {
    r_p_.reset();
    f_p_.reset();
    f_set_.clear();
    in_set_.clear();
    out_set_.clear();
    if (form_ != LATKE_OPERATOR_EVEN_ODD) return;
    const SpinorParam pp = with_precision(op_->field_param(form_), Precision::single);
    r_p_ = std::make_unique<ColorSpinorField>(op_->lattice(), pp);
    f_p_ = std::make_unique<ColorSpinorField>(op_->lattice(), pp);
  }
  std::shared_ptr<ShellOperator> op_;
  LatkeOperatorForm form_;
  MultigridOptions options_;
  std::function<void(const std::string&)> print_;
  std::shared_ptr<Multigrid> mg_;
  std::unique_ptr<ColorSpinorField> r_p_, f_p_;     ///< the even-odd form's r_p in single, and f_p
  std::vector<ColorSpinorField> f_set_;             ///< f_p for apply_set's sets
  std::vector<ColorSpinorField> in_set_, out_set_;  ///< apply_set's sets in single, for other precisions
};

/// Progress and verification lines of A's multigrid, to PetscPrintf on its communicator.
std::function<void(const std::string&)> printer(MPI_Comm comm) {
  return [comm](const std::string& line) { PetscPrintf(comm, "Latke MG: %s\n", line.c_str()); };
}

std::unique_ptr<Preconditioner> make_multigrid(Mat A, const char* prefix) {
  MatContext& m = context_of(A);
  const MPI_Comm comm = PetscObjectComm(reinterpret_cast<PetscObject>(A));
  const MultigridOptions o = mg::multigrid_options(comm, prefix, *m.op->lattice());
  return std::make_unique<MatMultigrid>(m, o, printer(comm));
}

MultigridUpdate update_multigrid(Preconditioner& k, Mat A, const char* prefix) {
  auto* mg = dynamic_cast<MatMultigrid*>(&k);
  if (!mg) {
    MultigridUpdate r;
    r.why = "the preconditioner is not a Latke multigrid";
    return r;
  }
  MatContext& m = context_of(A);
  const MPI_Comm comm = PetscObjectComm(reinterpret_cast<PetscObject>(A));
  return mg->update(m, mg::multigrid_options(comm, prefix, *m.op->lattice()));
}

namespace {

struct MGContext {
  static constexpr const char* type = PCLATKEMG;
  std::unique_ptr<MatMultigrid> k;
  std::shared_ptr<ShellOperator> op;
  LatkeOperatorForm form = LATKE_OPERATOR_EVEN_ODD;
  std::string prefix;
  double setup_seconds = 0;
  long applies = 0;
  ColumnSets columns;
  int updates = 0;           ///< set-ups that kept the null vectors (-pc_latke_mg_reuse_interpolation)
  std::vector<int> refresh;  ///< the last such set-up's refresh steps per level
  /// The last set-up's attempt to reuse the null vectors: done, or why not (no why: not tried).
  MultigridUpdate last;
  mg::MultigridSettings settings;  ///< what the program set (PCLatkeMGSet*), under the options
};

void set_up(MGContext& c, Mat pmat) {
  const auto t0 = std::chrono::steady_clock::now();
  MatContext& m = context_of(pmat);
  const MPI_Comm comm = PetscObjectComm(reinterpret_cast<PetscObject>(pmat));
  const MultigridOptions o = mg::multigrid_options(comm, c.prefix.c_str(), *m.op->lattice(), &c.settings);
  const auto print = printer(comm);
  const bool tried = c.k && o.reuse_interpolation;
  c.last = tried ? c.k->update(m, o) : MultigridUpdate{};
  c.form = m.form;
  if (c.last.done) {
    c.op = m.op;
    ++c.updates;
    c.refresh = o.refresh;
  } else {
    if (tried && o.monitor) print("a new setup instead of reusing the null vectors: " + c.last.why);
    c.k.reset();
    c.op = m.op;
    c.k = std::make_unique<MatMultigrid>(m, o, print);
    c.updates = 0;  // a new hierarchy: not rebuilt yet
    c.refresh.clear();
  }
  synchronize(c.op->backend());
  c.setup_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

PetscErrorCode view(MGContext& c, PetscViewer viewer) {
  PetscBool ascii = PETSC_FALSE;
  PetscFunctionBeginUser;
  PetscCall(PetscObjectTypeCompare(reinterpret_cast<PetscObject>(viewer), PETSCVIEWERASCII, &ascii));
  if (!ascii) PetscFunctionReturn(0);
  if (!c.k) {
    PetscCall(PetscViewerASCIIPrintf(viewer, "Latke multigrid: not set up yet\n"));
    PetscFunctionReturn(0);
  }
  Multigrid& mg = c.k->mg();
  const mg::MultigridParam& p = mg.param();
  PetscCall(PetscViewerASCIIPrintf(
      viewer, "Latke multigrid: %d levels, %s, setup %.3f s (this PC's set-up %.3f s), %ld applications\n", p.levels,
      to_string(p.cycle), mg.setup_seconds(), c.setup_seconds, c.applies));
  if (c.last.done) {  // updates > 0: a set-up that is not an update starts the count again
    std::string steps;
    for (int r : c.refresh) steps += (steps.empty() ? "" : ",") + std::to_string(r);
    const bool refreshed = std::any_of(c.refresh.begin(), c.refresh.end(), [](int r) { return r > 0; });
    PetscCall(PetscViewerASCIIPrintf(viewer,
                                     "  rebuilt %d time(s) for a new operator, keeping the null vectors "
                                     "(-pc_latke_mg_reuse_interpolation)%s%s%s; the setup time above is the last "
                                     "rebuild's; the kept null vectors' mean |M v|/|v| on the last operator %g "
                                     "times theirs\n",
                                     c.updates, refreshed ? ", the last time refreshed by " : "",
                                     refreshed ? steps.c_str() : "", refreshed ? " steps per level" : "",
                                     c.last.growth));
  } else if (!c.last.why.empty()) {
    PetscCall(PetscViewerASCIIPrintf(
        viewer, "  the last set-up set it up anew instead of reusing the null vectors: %s\n", c.last.why.c_str()));
  }
  PetscCall(PetscViewerASCIIPushTab(viewer));
  for (int l = 0; l < mg.levels(); ++l) {
    const mg::LevelInfo i = mg.info(l);
    const std::vector<long> w = mg.work(l);
    int ranks = 1;  // where the level lives
    for (int mu = 0; mu < 4; ++mu) ranks *= i.local[mu] > 0 ? i.global[mu] / i.local[mu] : 1;
    const std::string where =
        i.copies == 0 ? "on " + std::to_string(ranks) + (ranks == 1 ? " rank" : " ranks")
        : ranks == 1  ? "gathered whole onto each of the " + std::to_string(i.copies) + " ranks"
                      : "gathered onto " + std::to_string(ranks) + " ranks, " + std::to_string(i.copies) + " copies";
    PetscCall(PetscViewerASCIIPrintf(
        viewer,
        "level %d: lattice %dx%dx%dx%d %s (local %dx%dx%dx%d), %d components per site, %.1f MiB, setup %.3f s\n", l,
        i.global[0], i.global[1], i.global[2], i.global[3], where.c_str(), i.local[0], i.local[1], i.local[2],
        i.local[3], i.components, i.bytes / 1048576.0, i.setup_seconds));
    PetscCall(PetscViewerASCIIPushTab(viewer));
    PetscCall(PetscViewerASCIIPrintf(viewer, "operator: %s\n", i.op.c_str()));
    if (l == 0 && w[4] > 0)
      PetscCall(PetscViewerASCIIPrintf(
          viewer, "cycles so far: %ld on one parity, %ld right-hand sides of them in sets\n", w[3], w[4]));
    if (l + 1 < mg.levels()) {
      const mg::LevelParam& q = p.level[l];
      // Null vectors solved together run in the level's own precision (the fine level: single).
      std::string how = to_string(q.setup_precision);
      if (i.setup_batch > 1) {
        how = std::string(to_string(l == 0 ? Precision::single : p.level[l - 1].coarse_precision)) + ", " +
              std::to_string(i.setup_batch) + " at once";
        if (l > 0) how += std::string(", products ") + to_string(mg.coarse_operator(l).set_math());
      }
      const std::string from = i.setup_restricted > 0 ? ", " + std::to_string(i.setup_restricted) + " from level " +
                                                            std::to_string(l - 1) + "'s, restricted, " +
                                                            std::to_string(q.setup_restrict_iterations) + " iterations"
                                                      : "";
      PetscCall(PetscViewerASCIIPrintf(
          viewer,
          "transfer: aggregates %dx%dx%dx%d, %d null vectors (%s on the %s system in %s, %d iterations, tol %g%s), "
          "basis read in %s\n",
          q.block[0], q.block[1], q.block[2], q.block[3], q.nvec, to_string(q.setup_solver),
          i.setup_even_odd ? "even-odd" : "full", how.c_str(), q.setup_iterations, q.setup_tol, from.c_str(),
          to_string(q.transfer_precision)));
      if (q.smoother == mg::SmootherType::schwarz)
        PetscCall(PetscViewerASCIIPrintf(
            viewer,
            "smoother: Schwarz (%s, blocks %dx%dx%dx%d, %d MR steps, %s; %s), %d pre, %d post; %ld applications\n",
            to_string(q.schwarz.type), q.schwarz.block[0], q.schwarz.block[1], q.schwarz.block[2], q.schwarz.block[3],
            q.schwarz.iterations, to_string(q.schwarz.precision), i.schwarz.c_str(), q.pre_smooth, q.post_smooth,
            w[0]));
      else
        PetscCall(PetscViewerASCIIPrintf(
            viewer, "smoother: MR on the %s system in %s, omega %g, %d pre, %d post steps; %ld steps so far\n",
            q.smooth_even_odd ? "even-odd" : "full", to_string(q.smoother_precision), q.omega, q.pre_smooth,
            q.post_smooth, w[0]));
    }
    if (w[5] > 0)
      PetscCall(PetscViewerASCIIPrintf(viewer, "coarse corrections below it launched as one CUDA graph: %ld (%ld %s)\n",
                                       w[5], w[6], w[6] == 1 ? "recording" : "recordings"));
    if (l > 0 && l + 1 < mg.levels() && p.cycle == mg::CycleType::kcycle)
      PetscCall(PetscViewerASCIIPrintf(
          viewer, "K-cycle GCR: rtol %g, at most %d iterations; %ld solves, %.1f iterations each\n",
          p.level[l].ksp_rtol, p.level[l].ksp_max_it, w[1], w[1] ? static_cast<double>(w[2]) / w[1] : 0.0));
    if (l + 1 == mg.levels() && i.direct)
      PetscCall(PetscViewerASCIIPrintf(viewer,
                                       "coarsest solve: direct (dense inverse of the %s system, 1-norm condition "
                                       "number %.3g%s); %ld solves\n",
                                       p.coarse_even_odd ? "even-odd" : "full", i.condition,
                                       i.direct_ranks > 1 ? ", gathered on every rank" : "", w[1]));
    else if (l + 1 == mg.levels())
      PetscCall(PetscViewerASCIIPrintf(viewer,
                                       "coarsest solve: GCR(%d) on the %s system to rtol %g, at most %d iterations; "
                                       "%ld solves, %.1f iterations each\n",
                                       p.coarse_restart, p.coarse_even_odd ? "even-odd" : "full", p.coarse_tol,
                                       p.coarse_max_it, w[1], w[1] ? static_cast<double>(w[2]) / w[1] : 0.0));
    PetscCall(PetscViewerASCIIPopTab(viewer));
  }
  PetscCall(PetscViewerASCIIPopTab(viewer));
  PetscFunctionReturn(0);
}

using Adapter = PCAdapter<MGContext>;

/// The options are read at set-up, under the PC's prefix as it is then.
PetscErrorCode PCSetUp_LatkeMG(PC pc) {
  const char* prefix = nullptr;
  PetscFunctionBeginUser;
  PetscCall(PCGetOptionsPrefix(pc, &prefix));
  MGContext& c = Adapter::registered(pc);
  c.prefix = prefix ? prefix : "";
  PetscCall(guarded(Adapter::comm(pc), [&] { set_up(c, pc->pmat); }));
  PetscFunctionReturn(0);
}

/// KSPSetFromOptions: the options read and checked now, where the preconditioning matrix is
/// known (their defaults depend on its lattice), so that -help lists them with the PC's and a bad
/// value fails here rather than at the first solve. PCSetUp reads them again (the PC's prefix
/// may change in between).
PetscErrorCode PCSetFromOptions_LatkeMG(PC pc, compat::OptionItems) {
  const char* prefix = nullptr;
  PetscBool latke = PETSC_FALSE;
  PetscFunctionBeginUser;
  if (!pc->pmat) PetscFunctionReturn(0);
  PetscCall(MatIsLatke(pc->pmat, &latke));
  if (!latke) PetscFunctionReturn(0);
  PetscCall(PCGetOptionsPrefix(pc, &prefix));
  PetscCall(guarded(Adapter::comm(pc), [&] {
    (void)mg::multigrid_options(Adapter::comm(pc), prefix ? prefix : "", *context_of(pc->pmat).op->lattice(),
                                &Adapter::registered(pc).settings);
  }));
  PetscFunctionReturn(0);
}

/// A PCLatkeMGSet* call: f changes the settings (Adapter::change).
template <typename F>
PetscErrorCode change_settings(PC pc, F&& f) {
  return Adapter::change(pc, [&](MGContext& c) { f(c.settings); });
}

PetscErrorCode SetLevels(PC pc, PetscInt levels) {
  return change_settings(pc, [&](mg::MultigridSettings& s) {
    require(levels == 0 || (levels >= 2 && levels <= 5), "PCLatkeMGSetLevels: levels ", levels,
            ": expected 0 (automatic) or 2 to 5");
    s.levels = levels;
  });
}

PetscErrorCode SetBlocks(PC pc, PetscInt n, const PetscInt block[]) {
  return change_settings(pc, [&](mg::MultigridSettings& s) {
    require(n >= 0 && n <= 4, "PCLatkeMGSetBlocks: n ", n, ": expected 0 (automatic) to 4 levels");
    require(n == 0 || block != nullptr, "PCLatkeMGSetBlocks: block is NULL for ", n, " level(s)");
    for (PetscInt i = 0; i < 4 * n; ++i)
      require(block[i] >= 1, "PCLatkeMGSetBlocks: block[", i, "] ", block[i], ": expected a positive extent");
    s.block.assign(block, block + 4 * n);
  });
}

PetscErrorCode SetNullVectors(PC pc, PetscInt n, const PetscInt nvec[]) {
  return change_settings(pc, [&](mg::MultigridSettings& s) {
    require(n >= 0 && n <= 4, "PCLatkeMGSetNullVectors: n ", n, ": expected 0 (the default) to 4 levels");
    require(n == 0 || nvec != nullptr, "PCLatkeMGSetNullVectors: nvec is NULL for ", n, " level(s)");
    for (PetscInt i = 0; i < n; ++i)
      require(nvec[i] >= 1, "PCLatkeMGSetNullVectors: nvec[", i, "] ", nvec[i], ": expected 1 or more");
    s.nvec.assign(nvec, nvec + n);
  });
}

PetscErrorCode SetCycleType(PC pc, LatkeMGCycleType type) {
  return change_settings(pc, [&](mg::MultigridSettings& s) {
    require(type == LATKE_MG_VCYCLE || type == LATKE_MG_KCYCLE, "PCLatkeMGSetCycleType: type ", static_cast<int>(type),
            ": expected LATKE_MG_VCYCLE or LATKE_MG_KCYCLE");
    s.cycle = type == LATKE_MG_VCYCLE ? "vcycle" : "kcycle";
  });
}

PetscErrorCode SetSmoothing(PC pc, PetscInt level, PetscInt pre, PetscInt post) {
  return change_settings(pc, [&](mg::MultigridSettings& s) {
    require(level >= 0 && level <= 3, "PCLatkeMGSetSmoothing: level ", level,
            ": expected 0 to 3 (a level with a smoother: not the coarsest of at most 5)");
    require(pre >= 0 && post >= 0 && pre + post > 0, "PCLatkeMGSetSmoothing: pre ", pre, ", post ", post,
            ": expected steps of 0 or more, not both 0");
    const std::size_t n = std::max<std::size_t>(s.pre_smooth.size(), static_cast<std::size_t>(level) + 1);
    s.pre_smooth.resize(n, -1);
    s.post_smooth.resize(n, -1);
    s.pre_smooth[level] = pre;
    s.post_smooth[level] = post;
  });
}

PetscErrorCode GetLevels(PC pc, PetscInt* levels) {
  const MGContext& c = Adapter::registered(pc);
  *levels = c.k ? c.k->mg().levels() : 0;
  return 0;
}

/// The setters and the getter of every latke_mg PC (Adapter::methods).
PetscErrorCode compose_methods(PC pc, bool on) {
  const auto o = reinterpret_cast<PetscObject>(pc);
  PetscFunctionBeginUser;
  PetscCall(PetscObjectComposeFunction(o, "PCLatkeMGSetLevels_C", on ? SetLevels : nullptr));
  PetscCall(PetscObjectComposeFunction(o, "PCLatkeMGSetBlocks_C", on ? SetBlocks : nullptr));
  PetscCall(PetscObjectComposeFunction(o, "PCLatkeMGSetNullVectors_C", on ? SetNullVectors : nullptr));
  PetscCall(PetscObjectComposeFunction(o, "PCLatkeMGSetCycleType_C", on ? SetCycleType : nullptr));
  PetscCall(PetscObjectComposeFunction(o, "PCLatkeMGSetSmoothing_C", on ? SetSmoothing : nullptr));
  PetscCall(PetscObjectComposeFunction(o, "PCLatkeMGGetLevels_C", on ? GetLevels : nullptr));
  PetscFunctionReturn(0);
}

}  // namespace
}  // namespace latke::petsc

using namespace latke::petsc;

extern "C" {

PetscErrorCode PCCreate_LatkeMG(PC pc) {
  PetscFunctionBeginUser;
  PetscCall(Adapter::install(pc, PCSetUp_LatkeMG, PCSetFromOptions_LatkeMG, compose_methods));
  PetscFunctionReturn(0);
}

PetscErrorCode PCLatkeMGSetLevels(PC pc, PetscInt levels) {
  PetscFunctionBeginUser;
  LatkeCheckNull(pc);
  PetscTryMethod(pc, "PCLatkeMGSetLevels_C", (PC, PetscInt), (pc, levels));
  PetscFunctionReturn(0);
}

PetscErrorCode PCLatkeMGSetBlocks(PC pc, PetscInt n, const PetscInt block[]) {
  PetscFunctionBeginUser;
  LatkeCheckNull(pc);
  PetscTryMethod(pc, "PCLatkeMGSetBlocks_C", (PC, PetscInt, const PetscInt[]), (pc, n, block));
  PetscFunctionReturn(0);
}

PetscErrorCode PCLatkeMGSetNullVectors(PC pc, PetscInt n, const PetscInt nvec[]) {
  PetscFunctionBeginUser;
  LatkeCheckNull(pc);
  PetscTryMethod(pc, "PCLatkeMGSetNullVectors_C", (PC, PetscInt, const PetscInt[]), (pc, n, nvec));
  PetscFunctionReturn(0);
}

PetscErrorCode PCLatkeMGSetCycleType(PC pc, LatkeMGCycleType type) {
  PetscFunctionBeginUser;
  LatkeCheckNull(pc);
  PetscTryMethod(pc, "PCLatkeMGSetCycleType_C", (PC, LatkeMGCycleType), (pc, type));
  PetscFunctionReturn(0);
}

PetscErrorCode PCLatkeMGSetSmoothing(PC pc, PetscInt level, PetscInt pre, PetscInt post) {
  PetscFunctionBeginUser;
  LatkeCheckNull(pc);
  PetscTryMethod(pc, "PCLatkeMGSetSmoothing_C", (PC, PetscInt, PetscInt, PetscInt), (pc, level, pre, post));
  PetscFunctionReturn(0);
}

PetscErrorCode PCLatkeMGGetLevels(PC pc, PetscInt* levels) {
  PetscFunctionBeginUser;
  LatkeCheckNull(pc);
  LatkeCheckNull(levels);
  PetscUseMethod(pc, "PCLatkeMGGetLevels_C", (PC, PetscInt*), (pc, levels));
  PetscFunctionReturn(0);
}

PetscErrorCode PCLatkeMGGetReuse(PC pc, PetscInt* rebuilds, PetscReal* growth) {
  PetscBool mg = PETSC_FALSE;
  PetscFunctionBeginUser;
  LatkeCheckNull(pc);
  PetscCall(PetscObjectTypeCompare(reinterpret_cast<PetscObject>(pc), PCLATKEMG, &mg));
  PetscCheck(mg, PetscObjectComm(reinterpret_cast<PetscObject>(pc)), PETSC_ERR_ARG_WRONG,
             "PCLatkeMGGetReuse: the PC is not of type %s", PCLATKEMG);
  if (rebuilds) *rebuilds = Adapter::registered(pc).updates;
  if (growth) *growth = Adapter::registered(pc).last.growth;
  PetscFunctionReturn(0);
}

PetscErrorCode PCShellSetLatkeMG(PC pc, Mat A, const char prefix[]) {
  PetscFunctionBeginUser;
  LatkeCheckNull(pc);
  LatkeCheckNull(A);
  PetscCall(Adapter::make_shell(pc, A, "Latke multigrid", [&](MGContext& c) { c.prefix = prefix ? prefix : ""; }));
  PetscFunctionReturn(0);
}

}  // extern "C"
