// The multigrid's parameters (mg.h): names of the cycle, smoother and coarsest-solver types,
// and the checks of a MultigridParam against the fine lattice.
#include <sstream>

#include "src/core/error.h"
#include "operators/coarse/dense_inverse.h"
#include "preconditioners/mg/mg.h"

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

bool gathers(const MultigridParam& p, int level, const Coords& local, int ranks) {
  const int want = level < static_cast<int>(p.ranks.size()) ? p.ranks[level] : 0;
  require(want == 0 || want == 1 || want == ranks, "multigrid level ", level, ": ", want,
          " ranks; expected 0 (automatic), 1 (gathered: the whole level on every rank)",
          ranks > 1 ? " or " + std::to_string(ranks) + " (spread over the ranks of the level above)" : std::string(),
          " (gathering onto some ranks only is not implemented)");
  if (ranks <= 1 || level < 1) return false;
  if (want != 0) return want == 1;
  return static_cast<long>(local[0]) * local[1] * local[2] * local[3] <= p.gather_sites;
}

std::vector<bool> check_param(const MultigridParam& p, const Lattice& fine) {
  require(p.levels >= 2, "multigrid levels ", p.levels, ": expected at least 2");
  require(static_cast<int>(p.level.size()) == p.levels - 1, "multigrid: ", p.level.size(), " level parameter sets for ",
          p.levels, " levels (expected ", p.levels - 1, ")");
  require(p.gather_sites >= 0, "multigrid: gather below ", p.gather_sites, " sites per rank: expected 0 or more");
  require(static_cast<int>(p.ranks.size()) <= p.levels, "multigrid: ranks given for ", p.ranks.size(), " levels of ",
          p.levels);
  // Where each level lives: local extents divided by the aggregates level by level, and
  // multiplied back to the whole extents where a level is gathered (ranks then 1 below it).
  std::vector<bool> gathered(p.levels, false);
  Coords local = fine.local();
  int ranks = fine.size();
  auto place = [&](int l) {
    if (l > 0 && gathers(p, l, local, ranks)) {  // the level lives whole on every rank
      gathered[l] = true;
      for (int mu = 0; mu < 4; ++mu) local[mu] *= fine.grid()[mu];
      ranks = 1;
    }
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
