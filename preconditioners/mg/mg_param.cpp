// The multigrid's parameters (mg.h): names of the cycle, smoother and coarsest-solver types,
// and the checks of a MultigridParam against the fine lattice.
#include <sstream>

#include "operators/coarse/dense_inverse.h"
#include "preconditioners/mg/agglomerate.h"
#include "preconditioners/mg/mg.h"
#include "src/core/error.h"

namespace latke::mg {


const char* to_string(CycleType t) { return t == CycleType::kcycle ? "kcycle" : "vcycle"; }
const char* to_string(SmootherType t) { return t == SmootherType::mr ? "mr" : "schwarz"; }

CycleType parse_cycle_type(const std::string& name) {
  if (name == "kcycle") return CycleType::kcycle;
  if (name == "vcycle") return CycleType::vcycle;
  fail("unknown multigrid cycle '", name, "': expected kcycle or vcycle");
}

SmootherType parse_smoother_type(const std::string& name) {
  if (name == "mr") return SmootherType::mr;
  if (name == "schwarz") return SmootherType::schwarz;
  fail("unknown multigrid smoother '", name, "': expected mr or schwarz");
}

const char* to_string(CoarseSolverType t) {
  return t == CoarseSolverType::gcr ? "gcr" : t == CoarseSolverType::direct ? "direct" : "auto";
}

CoarseSolverType parse_coarse_solver_type(const std::string& name) {
  if (name == "auto") return CoarseSolverType::automatic;
  if (name == "gcr") return CoarseSolverType::gcr;
  if (name == "direct") return CoarseSolverType::direct;
  fail("unknown multigrid coarsest solver '", name, "': expected auto, gcr or direct");
}

Coords level_grid(const MultigridParam& p, int level, const Coords& global, const Coords& grid) {
  const int all = grid[0] * grid[1] * grid[2] * grid[3];
  const int want = level < static_cast<int>(p.ranks.size()) ? p.ranks[level] : 0;
  require(want == 0 || (want >= 1 && want <= all && all % want == 0), "multigrid level ", level, ": ", want,
          " ranks; expected 0 (automatic) or a divisor of the level above's ", all, all == 1 ? " rank" : " ranks",
          all > 1 ? " (" + std::to_string(all) +
                        ": spread over them; fewer: gathered onto that many; 1: the whole "
                        "level on every rank)"
                  : std::string());
  if (all <= 1 || level < 1) return grid;
  int k = want;
  if (k == 0) {  // the automatic rule
    const long volume = static_cast<long>(global[0]) * global[1] * global[2] * global[3];
    k = all;
    if (volume / all <= p.gather_sites) {
      k = 1;
      for (int d = all / 2; d > 1 && k == 1; --d)
        if (all % d == 0 && volume / d >= p.gather_onto_sites) k = d;
    }
  }
  return k == all ? grid : telescope_grid(global, grid, k);
}

std::vector<int> check_param(const MultigridParam& p, const Lattice& fine) {
  require(p.levels >= 2, "multigrid levels ", p.levels, ": expected at least 2");
  require(static_cast<int>(p.level.size()) == p.levels - 1, "multigrid: ", p.level.size(), " level parameter sets for ",
          p.levels, " levels (expected ", p.levels - 1, ")");
  require(p.gather_sites >= 0, "multigrid: gather below ", p.gather_sites, " sites per rank: expected 0 or more");
  require(p.gather_onto_sites >= 1, "multigrid: gather onto ranks of at least ", p.gather_onto_sites,
          " sites each: expected 1 or more");
  require(static_cast<int>(p.ranks.size()) <= p.levels, "multigrid: ranks given for ", p.ranks.size(), " levels of ",
          p.levels);
  // Where each level lives: extents divided by the aggregates level by level, and the process
  // grid merged where a level is gathered onto fewer ranks (its local extents grow with it).
  std::vector<int> gathered(p.levels, 0);
  Coords global = fine.global(), grid = fine.grid(), local = fine.local();
  auto place = [&](int l) {
    const Coords g = level_grid(p, l, global, grid);
    if (g == grid) return;
    gathered[l] = g[0] * g[1] * g[2] * g[3];  // the level is gathered onto that many ranks
    grid = g;
    for (int mu = 0; mu < 4; ++mu) local[mu] = global[mu] / grid[mu];
  };
  for (int l = 0; l + 1 < p.levels; ++l) {
    const LevelParam& q = p.level[l];
    place(l);
    for (int mu = 0; mu < 4; ++mu) {
      const int b = q.block[mu];
      require(b >= 2 && local[mu] % b == 0 && (local[mu] / b) % 2 == 0, "multigrid with ", p.levels, " levels: level ",
              l, " aggregate ", q.block[0], ",", q.block[1], ",", q.block[2], ",", q.block[3],
              " does not fit its local lattice ", local[0], ",", local[1], ",", local[2], ",", local[3],
              " in dimension ", mu,
              " (an aggregate extent must be at least 2 and divide the local extent into an even "
              "number of coarse sites); use fewer levels or smaller aggregates");
      local[mu] /= b;
      global[mu] /= b;
    }
    require(q.nvec >= 1, "multigrid level ", l, ": ", q.nvec, " null vectors; expected at least 1");
    require(q.setup_iterations >= 1, "multigrid level ", l, ": ", q.setup_iterations,
            " setup iterations; expected at least 1");
    require(q.setup_restrict_iterations >= 0, "multigrid level ", l, ": ", q.setup_restrict_iterations,
            " setup iterations for restricted starts; expected 0 or more");
    require(q.setup_tol > 0 && q.setup_tol < 1, "multigrid level ", l, ": setup tolerance ", q.setup_tol,
            ": expected a number in (0, 1)");
    require(q.pre_smooth >= 0 && q.post_smooth >= 0 && q.pre_smooth + q.post_smooth >= 1, "multigrid level ", l,
            ": smoothing steps ", q.pre_smooth, " (pre) and ", q.post_smooth, " (post): expected at least one in all");
    require(q.omega > 0 && q.omega < 2, "multigrid level ", l, ": smoother relaxation ", q.omega,
            ": expected a number in (0, 2)");
    require(q.smoother == SmootherType::mr || l == 0, "multigrid level ", l,
            ": the Schwarz smoother exists on the fine level (0) only");
    require(q.smoother_precision == Precision::single ||
                (q.smoother_precision == Precision::half && q.smoother == SmootherType::mr && q.smooth_even_odd),
            "multigrid level ", l, ": smoother precision ", to_string(q.smoother_precision),
            ": expected single, or half for MR on the level's even-odd system");
    require(q.setup_precision == Precision::single ||
                (q.setup_precision == Precision::half && q.setup_solver != SolverType::mr),
            "multigrid level ", l, ": setup precision ", to_string(q.setup_precision),
            ": expected single, or half with a setup solver other than mr (which has no mixed-precision form)");
    require(q.ksp_max_it >= 1 && q.ksp_rtol > 0 && q.ksp_rtol < 1, "multigrid level ", l + 1, ": K-cycle GCR with ",
            q.ksp_max_it, " iterations to ", q.ksp_rtol, ": expected at least 1 iteration and a tolerance in (0, 1)");
    require(q.setup_solver != SolverType::cg,
            "multigrid setup solver cg: the operator is not Hermitian "
            "(use bicgstab, gcr, mr, cgnr or cgne)");
  }
  require(p.coarse_tol > 0 && p.coarse_tol < 1, "multigrid coarse tolerance ", p.coarse_tol,
          ": expected a number in (0, 1)");
  require(p.coarse_max_it >= 1 && p.coarse_restart >= 1, "multigrid coarse solver: ", p.coarse_max_it,
          " iterations, restart ", p.coarse_restart, ": expected at least 1 each");
  require(p.setup_refine >= 0, "multigrid setup refinement passes ", p.setup_refine, ": expected 0 or more");
  require(p.setup_batch >= 1 && p.setup_batch <= blas::set_max, "multigrid setup batch ", p.setup_batch,
          ": expected 1 to ", blas::set_max, " null vectors solved together");
  place(p.levels - 1);  // the coarsest level's place (its rank count checked too)
  return gathered;
}

}  // namespace latke::mg
