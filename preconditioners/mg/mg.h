// Adaptive multigrid for the Wilson-clover operator (and any gamma_5-Hermitian operator with
// a chirality split), as QUDA and DD-alphaAMG build it, entirely on the backend.
//
// Levels are numbered from the fine one, 0, to the coarsest, L-1. Level l < L-1 owns
//   - its full operator M_l (level 0: the fine operator in the cycle precision; level l > 0:
//     the Galerkin coarse operator D_l = R M_{l-1} P, coarse_operator.h),
//   - the transfer T_l to level l+1 (transfer.h): nvec_l near-null vectors found by inverse
//     iteration (setup_iterations steps of setup_solver on M_l v = 0 from a Gaussian random
//     v, or with setup_restrict on a coarse level setup_restrict_iterations steps from the
//     level above's vectors restricted to it; on M_l's even-odd system where the level has
//     one; each vector Gram-Schmidt orthogonalized against the earlier ones), split by
//     chirality and orthonormalized over aggregates of `block` sites,
//   - a smoother: MR steps on M_l's even-odd system (as QUDA smooths; source prepared and
//     solution reconstructed around them; on level 0 optionally with vectors and operator in
//     half precision) or on M_l itself, or (level 0) the Schwarz blocks of latke_schwarz.
// Setup refinement passes rerun the inverse iteration of every level with the current
// hierarchy as preconditioner (GCR(8) preconditioned by the cycle from that level) and
// rebuild the levels below.
//
// The cycle at level l applied to b (x ~ M_l^-1 b, from x = 0):
//   x = S_pre(b);  r = b - M_l x;  x += P_l e with e ~ M_{l+1}^-1 R_l r;  x += S_post(b - M_l x)
// where e is, for the coarsest level, a GCR solve of its even-odd (or full) system to the
// coarse tolerance, or a direct solve (its dense inverse, when it is small; on several ranks
// gathered on every rank, so that no iterative solve runs across them);
// otherwise, in a K-cycle, flexible GCR on M_{l+1} preconditioned by the cycle of level l+1,
// to ksp_rtol in at most ksp_max_it iterations; in a V-cycle one application of the cycle of
// level l+1.
//
// All vectors of the cycle are single precision (the fine operator at level 0 too); the
// outer solver (PETSc's FGMRES/GCR, or Latke's GCR) runs in double and is flexible.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "operators/coarse/coarse_operator.h"
#include "preconditioners/mg/transfer.h"
#include "preconditioners/schwarz/schwarz.h"
#include "solvers/solvers.h"
#include "src/core/lattice.h"
#include "src/core/work_counters.h"

namespace latke::mg {

class Agglomeration;

enum class CycleType { kcycle, vcycle };
enum class SmootherType { mr, schwarz };
/// The coarsest solve: GCR to coarse_tol, a dense direct solve (dense_inverse.h: on several ranks
/// the matrix gathered on every rank), or `automatic`: direct when the coarsest system has at
/// most 4096 unknowns on all ranks together, else GCR.
enum class CoarseSolverType { automatic, gcr, direct };
const char* to_string(CycleType t);
const char* to_string(SmootherType t);
const char* to_string(CoarseSolverType t);
/// @brief auto, gcr or direct; anything else is an error naming the value.
CoarseSolverType parse_coarse_solver_type(const std::string& name);
/// @brief kcycle or vcycle; anything else is an error naming the value.
CycleType parse_cycle_type(const std::string& name);
/// @brief mr or schwarz; anything else is an error naming the value.
SmootherType parse_smoother_type(const std::string& name);

/// What level l does (l < levels - 1: every level but the coarsest).
struct LevelParam {
  Coords block{4, 4, 4, 4};                          ///< aggregates for the transfer to level l+1
  int nvec = 24;                                     ///< near-null vectors (2 nvec coarse components)
  Precision coarse_precision = Precision::single;    ///< blocks of the level l+1 operator
  Precision transfer_precision = Precision::single;  ///< the basis as P and R read it
  SolverType setup_solver = SolverType::bicgstab;    ///< inverse iteration
  int setup_iterations = 100;                        ///< steps per null vector (or fewer at setup_tol)
  /// Steps for the null vectors that start from the level above's, restricted (setup_restrict;
  /// coarse levels); 0: they stay as restricted (Gram-Schmidt and normalization only).
  int setup_restrict_iterations = 30;
  double setup_tol = 1e-6;                           ///< relative residual of M v = 0 to stop early
  /// Precision of the inverse iteration's steps; half is mixed precision. Level 0: the fine
  /// operator given in half, over a set of vectors or one at a time, the solutions accumulated
  /// in single with reliable updates by the single operator. Coarse levels: only one at a time
  /// (setup_batch 1), on a copy of the blocks in half made for the setup (vectors stay single);
  /// their sets are in single.
  Precision setup_precision = Precision::single;
  SmootherType smoother = SmootherType::mr;
  int pre_smooth = 0, post_smooth = 4;  ///< MR steps (Schwarz: applications)
  double omega = 1.0;                   ///< relaxation of MR steps
  bool smooth_even_odd = true;          ///< MR on the level's even-odd system (when it has one)
  /// Storage precision of the MR smoother (even-odd MR only: single or half; arithmetic in
  /// single), as QUDA smooths in half: on level 0 its vectors and operator, on a coarse level
  /// its operator's blocks (a half copy of the level's operator; vectors in single).
  Precision smoother_precision = Precision::single;
  SchwarzParam schwarz = schwarz_smoother_param();  ///< level 0 with the Schwarz smoother
  int ksp_max_it = 8;                   ///< K-cycle GCR solving this level (levels 1 .. L-2)
  double ksp_rtol = 0.25;
};

struct MultigridParam {
  int levels = 2;
  std::vector<LevelParam> level;  ///< levels - 1 entries
  CycleType cycle = CycleType::kcycle;
  double coarse_tol = 0.25;  ///< coarsest solve: GCR to this relative residual
  int coarse_max_it = 100;
  int coarse_restart = 16;
  bool coarse_even_odd = true;  ///< solve the coarsest level's even-odd system
  CoarseSolverType coarse_solver = CoarseSolverType::automatic;
  int setup_refine = 0;         ///< refinement passes after the first setup
  /// Inverse iteration on each level's even-odd system where the level has one (prepare,
  /// solve Mhat e_p = bhat, reconstruct): the Schur complement is better conditioned, so the
  /// same steps take the low modes further down. Refinement passes stay on the full system.
  bool setup_even_odd = true;
  /// Null vectors of a level solved together in the first pass (BiCGstab over a set, the
  /// operator's apply_set; at most blas::set_max); 1: one at a time. Coarse levels' sets are in
  /// single. The fine level's are in its setup_precision (LevelParam::setup_precision); it
  /// solves together when its even-odd operator in that precision applies a set in one pass
  /// (Wilson-clover on one rank), as many as half the free memory holds.
  int setup_batch = 32;
  /// A coarse level's first pass starts its first min(nvec, nvec of the level above) null
  /// vectors from the level above's (before orthonormalization) restricted to it, as DD-alphaAMG
  /// passes test vectors down: they are near-null already (|D_c R v| = |R M v| <= |M v| for
  /// |R v| = |v|), so fewer steps polish them; the rest start Gaussian. false: all Gaussian.
  /// Off by default: it saves a small part of the setup, but the coarse levels it builds make
  /// the solve faster at some kappa and slower at others (docs/multigrid.md).
  bool setup_restrict = false;
  std::uint64_t seed = 1;       ///< of the random starting vectors
  /// How coarse levels' sets multiply (CoarseOperator::set_math): by default on tensor cores
  /// (tf32x3) on CUDA where the level is large enough, such as level 1 of 32^3x64.
  SetMath setup_set_math = SetMath::automatic;
  /// Where each coarse level lives (index: level; entry 0 and missing entries: 0), as PETSc's
  /// PCTELESCOPE places a coarse problem: 0 automatic; the rank count of the level above:
  /// spread over those ranks; a divisor of it: gathered onto that many ranks (agglomerate.h:
  /// copies of the level side by side, each on its own ranks; 1: the whole level on every
  /// rank, each running it and the levels below alone). The levels below a gathered one live
  /// on its ranks or on fewer.
  std::vector<int> ranks;
  /// The automatic rule: a coarse level spread over several ranks is gathered when its local
  /// volume would be at most this many sites (there its stencil is launch- and latency-bound, and
  /// gathered it can be coarsened further and solved directly) ...
  long gather_sites = 512;
  /// ... onto the most ranks that leave each at least this many sites, or whole onto every rank
  /// where no rank count does. Gathered whole, a level costs every rank its whole work; on
  /// many ranks a large level would then outweigh the rest of the cycle (docs/multigrid.md).
  long gather_onto_sites = 1024;
  /// Launch the coarse correction below a level as one CUDA graph where every level below
  /// lives on one rank (Multigrid::graphs_correction); false: kernel by kernel.
  bool graphs = true;
};

/// @brief The process grid coarse level `level` lives on when the level above lives on `grid`,
/// a process grid of the level's `global` extents (MultigridParam::ranks, else the rule of
/// gather_sites and gather_onto_sites): `grid` itself (spread), or the grid it is gathered onto
/// (telescope_grid, fewer ranks). Fails naming the level and the value for a rank count that
/// does not divide the grid's.
Coords level_grid(const MultigridParam& p, int level, const Coords& global, const Coords& grid);

/// @brief Check the parameters against the fine lattice: level count, aggregates dividing
/// each level's local extents (on a gathered level, those on the ranks it is gathered onto)
/// with even coarse extents, rank counts, nvec >= 1, iterations, tolerances; fails naming the
/// option's meaning, the value and what was expected. Returns, per level (0 .. levels - 1), the
/// ranks it is gathered onto from the ranks of the level above, or 0 where it lives on the
/// ranks of the level above.
std::vector<int> check_param(const MultigridParam& p, const Lattice& fine);

/// Per-level facts for views and reports.
struct LevelInfo {
  Coords global, local;
  int components = 0;     ///< per site (Ns x Nc)
  int nvec = 0;           ///< of the transfer below (0 on the coarsest)
  std::size_t bytes =
      0;  ///< operator blocks (coarse levels; with a half copy for the smoother) and basis, on this rank
  double setup_seconds = 0;
  std::string op;               ///< the operator's description
  bool setup_even_odd = false;  ///< the null vectors were found on the level's even-odd system
  int setup_batch = 0;          ///< null vectors the first setup pass solved together (1: one at a time)
  int setup_restricted = 0;     ///< null vectors the first pass started from the level above's, restricted
  int copies = 0;               ///< copies of the level side by side (gathered here or above; 0: one)
  bool direct = false;          ///< (coarsest) solved directly, by its dense inverse
  int direct_ranks = 0;         ///< (direct) ranks that each hold the whole inverse
  double condition = 0;         ///< (direct) 1-norm condition number of the inverted system
  std::string schwarz;          ///< (Schwarz smoother) where it works and how it solves its blocks
};

/// What the cycles did on one level since profiling started (Multigrid::set_profiling), the
/// levels below it excluded: wall time with the device synchronized at every change of level,
/// and the latency-bound parts of it (work_counters.h). Each rank measures its own.
struct LevelProfile {
  long visits = 0;                 ///< cycles run on the level (its coarsest solves on the coarsest)
  double seconds = 0;              ///< wall time on the level
  double halo_seconds = 0;         ///< of it, the host waiting in halo exchanges
  double reduction_seconds = 0;    ///< of it, in global sums across the ranks (MPI_Allreduce)
  double gather_seconds = 0;       ///< of it, gathering the level's right-hand side (agglomerated)
  long launches = 0, reductions = 0, exchanges = 0;
};

/// Deviations found by verify().
struct VerifyReport {
  std::vector<double> projector;         ///< per transfer: max_k |(1 - P P^dag) v_k| / |v_k|
  std::vector<double> restrict_prolong;  ///< per transfer: |x - R P x| / |x|, random coarse x
  std::vector<double> galerkin;          ///< per coarse level: |D_c x - R M P x| / |D_c x|
  std::vector<double> even_odd;          ///< per coarse level with even-odd: |x - x'| / |x| for a solve
                                         ///< of D_c x = b through Mhat (prepare, the coarsest solver: direct or
                                         ///< GCR to 1e-5, reconstruct) checked by D_c
};

class Multigrid {
 public:
  /// Makes the domain-local (Dirichlet blocks) fine operator for the Schwarz smoother, in the
  /// given precision, on full fields or (even_odd) in the even-odd form of fine_schur (its Schur
  /// type and parity); block {0,0,0,0}: the same operator with communication (SAP's residual
  /// updates).
  using LocalFactory =
      std::function<std::shared_ptr<LinearOperator>(const Coords& block, Precision precision, bool even_odd)>;

  /// @param fine the full fine operator on single-precision fields (the cycle precision).
  /// @param fine_schur its even-odd form (single precision), for smoothing on the even-odd
  ///        system; may be null (smoothing on the full system).
  /// @param fine_smoother the even-odd form on fields of level 0's smoother_precision, when
  ///        that is not single (required then).
  /// @param fine_setup the fine operator on fields of level 0's setup_precision, when that is
  ///        not single (required then), in the form the setup solves: even-odd (one parity, as
  ///        fine_schur) when fine_schur is given and param.setup_even_odd, else full.
  Multigrid(std::shared_ptr<LinearOperator> fine, const MultigridParam& param, LocalFactory local = nullptr,
            std::shared_ptr<SchurOperator> fine_schur = nullptr, std::shared_ptr<SchurOperator> fine_smoother = nullptr,
            std::shared_ptr<LinearOperator> fine_setup = nullptr);
  ~Multigrid();

  /// Called as each coarse level is built: its number (1 = the first coarse level) and the
  /// seconds the setup has run.
  using LevelDone = std::function<void(int level, double seconds)>;
  /// @brief Build the hierarchy: null vectors (unless loaded), transfers, coarse operators,
  /// refinement passes. progress (may be null) receives one line per step; level_done (may be
  /// null) is called once per coarse level of the first pass.
  void setup(const std::function<void(const std::string&)>& progress = nullptr, const LevelDone& level_done = nullptr);
  /// @brief Load the null vectors of every level from a file written by save() (same
  /// lattice, levels, aggregates and nvec), then build the hierarchy from them.
  void load(const std::string& file, const std::function<void(const std::string&)>& progress = nullptr);
  /// @brief Rebuild the hierarchy for another fine operator on the same lattice (another
  /// kappa or c_sw, a new gauge field), keeping every level's null vectors: the fine operators
  /// (arguments as the constructor's) replace the old ones, and each level's coarse operator,
  /// even-odd blocks and coarsest inverse are built again from the kept transfers (already
  /// orthonormal: not orthonormalized again, so the vectors stay bit for bit). The parameters stay those of the first
  /// setup. Needs a hierarchy (setup() or load() first) and a new operator of the same lattice, process grid, sites'
  /// components, even-odd form and backend.
  /// @param refresh per level (missing entries: 0), inverse-iteration steps that refresh the kept
  ///        null vectors on the new operator first (as the first setup's pass runs, from the kept
  ///        vectors instead of random ones; then orthonormalized again), as QUDA refreshes its
  ///        setup in HMC, where the gauge field moves little between solves. (After a heat-bath
  ///        sweep the kept vectors are worth no more than random starts: docs/multigrid.md.)
  ///        0: kept bit for bit.
  void update(std::shared_ptr<LinearOperator> fine, LocalFactory local, std::shared_ptr<SchurOperator> fine_schur,
              std::shared_ptr<SchurOperator> fine_smoother, std::shared_ptr<LinearOperator> fine_setup,
              const std::function<void(const std::string&)>& progress = nullptr, const std::vector<int>& refresh = {});
  /// @brief Why update() would refuse the fine operator and its even-odd form (another
  /// lattice, process grid, sites' components, even-odd form or parity, backend); empty when it
  /// takes them. Needs a hierarchy set up.
  std::string mismatch(const LinearOperator& fine, const SchurOperator* fine_schur) const;
  /// @brief How stale the fine level's null vectors are for another fine operator: the mean of
  /// |M' v_k| / |v_k| over the kept (orthonormalized) basis on `fine`, divided by the same mean on
  /// the operator they were found for (measured on it once, at the first such question or
  /// update()). About 1 for
  /// another kappa nearby; far above 1 where the operator changed on the near-null space, as for
  /// a new gauge field of a heat-bath chain, whose low modes the vectors no longer follow (a
  /// rebuild from them then preconditions worse than none). nvec fine applications (2 nvec the
  /// first time: the reference). Needs a
  /// hierarchy set up, and a fine operator update() takes (mismatch() empty).
  double nullness_growth(LinearOperator& fine) const;
  /// @brief Write the (orthonormalized) null vectors of every level, in global lexicographic
  /// order, so that any process grid reads them back. Written to FILE.tmp, then renamed.
  void save(const std::string& file) const;

  /// @brief x ~ M^-1 b on level 0 (full fields of the fine shape, any precision).
  void apply(ColorSpinorField& x, const ColorSpinorField& b);
  /// @brief The preconditioner of an even-odd solve: x = [K f]_p, with K the cycle apply()
  /// runs and f the full right-hand side that is f_p on parity p and zero on the other, given
  /// also bhat, the fine even-odd operator's prepare() of f (f_p itself for an asymmetric
  /// Schur complement). Fields of one parity p, any precision. Where the fine level smooths
  /// its even-odd system after the coarse correction only (no pre-smoothing; the default), the
  /// cycle runs on parity p alone: R of f_p, P onto parity p, the smoother's residual
  /// bhat - Mhat x_p; the other parity of x, which only the reconstruction would use, is never
  /// formed. This equals apply() on f in exact arithmetic (the even-odd residual does not
  /// depend on x's other parity) and skips a full operator, the prepare and reconstruct, and
  /// half of R and P. Otherwise it runs apply() on f.
  void apply_parity(ColorSpinorField& x, const ColorSpinorField& f_p, const ColorSpinorField& bhat);
  /// @brief apply_parity for a set of right-hand sides: x[k] = [K f_k]_p for the fields k of
  /// sets made by ColorSpinorField::make_set (at most blas::set_max fields; single precision;
  /// shaped as apply_parity's). Where cycles_sets(), the whole set goes through one cycle: each
  /// level's smoother applies its operator once for all the fields (reading links, clover and
  /// coarse blocks once), and its reductions are one per step for the set; the result is the
  /// one apply_parity gives each field, to rounding. Otherwise apply_parity field by field.
  void apply_parity_set(std::vector<ColorSpinorField>& x, const std::vector<ColorSpinorField>& f_p,
                        const std::vector<ColorSpinorField>& bhat);
  /// Whether apply_parity_set cycles whole sets: a V-cycle that smooths every level's even-odd
  /// system with MR after the coarse correction only (the default hierarchy).
  bool cycles_sets() const;
  VerifyReport verify();

  int levels() const { return static_cast<int>(levels_.size()); }
  LevelInfo info(int level) const;
  const MultigridParam& param() const { return param_; }
  double setup_seconds() const { return setup_seconds_; }
  /// Per level, so far: smoother steps, solves (K-cycle or coarsest), their iterations,
  /// (level 0) the cycles apply_parity ran on one parity and, of them, the right-hand sides
  /// apply_parity_set cycled in sets, the coarse corrections below the level launched as one
  /// CUDA graph, and the recordings of that graph.
  std::vector<long> work(int level) const;
  /// @brief Start (clearing it) or stop (keeping it) the per-level profile of the cycles. While
  /// it is on, every change of level synchronizes the device, which costs a little time of its own.
  void set_profiling(bool on);
  /// @brief Switch the CUDA graphs of the coarse corrections (MultigridParam::graphs) on or off.
  void set_graphs(bool on) {
    param_.graphs = on;
    forget_graphs();
  }
  /// Per level, since profiling started.
  const std::vector<LevelProfile>& profile() const { return profile_; }
  /// Cycles from the fine level (apply, apply_parity) since profiling started.
  long profiled_cycles() const { return profile_.empty() ? 0 : profile_[0].visits; }
  /// The transfer from level l to l + 1 (l < levels() - 1), after setup; for benchmarks.
  const Transfer& transfer(int level) const;
  /// The Galerkin operator of level l >= 1, after setup; for benchmarks.
  CoarseOperator& coarse_operator(int level);
  /// @brief The coarse correction below level l (l < levels() - 1) on the levels' own fields:
  /// what a cycle on level l runs between its restriction and its prolongation, as a CUDA graph
  /// where the cycle would launch one; for benchmarks (collective where a level below is spread).
  void correct_below_level(int level);
  /// How level l >= 1 is gathered from the ranks of the level above, or null where it is not
  /// (after setup); for benchmarks.
  Agglomeration* agglomeration(int level);

  struct Level;

 private:
  /// Checks the fine operators (as the constructor takes them) and makes them level 0's.
  void install_fine(std::shared_ptr<LinearOperator> fine, LocalFactory local, std::shared_ptr<SchurOperator> fine_schur,
                    std::shared_ptr<SchurOperator> fine_smoother, std::shared_ptr<LinearOperator> fine_setup);
  /// The fine level's fields (and even-odd fields) and, with the Schwarz smoother, its blocks.
  void prepare_fine_level();
  /// The transfer from level l (orthonormalized over aggregates and packed first, unless
  /// orthonormalize is false: the basis is so already) and level l + 1's operators.
  void build_level(int l, const std::function<void(const std::string&)>& progress, bool orthonormalize = true);
  /// Whether the first setup pass of level l solves its even-odd system (it has one and the
  /// parameters ask for it).
  bool setup_on_even_odd(int l) const;
  /// Inverse iteration for every null vector of level l (first pass: from Gaussian vectors, except
  /// the first `restricted`, which the caller filled with the level above's restricted). With
  /// refresh > 0, the first pass's solver runs `refresh` steps from every vector as it is (update()).
  void find_null_vectors(int l, bool refine, const std::function<void(const std::string&)>& progress,
                         int restricted = 0, int refresh = 0);
  /// Null vectors of level l that the first setup pass solves together (1: one at a time).
  int setup_batch(int l) const;
  /// The operator whose apply_set solves level l's null vectors together in the first pass, or
  /// null where there is none (setup_batch is then 1).
  LinearOperator* set_operator(int l) const;
  /// The fields of the setup's inverse iteration for a set of vectors: -M v and e (full),
  /// bhat and e_p (even-odd), made for `count` vectors and reused while the count stays.
  struct NullVectorFields {
    std::vector<ColorSpinorField> mv, e, bh, eh;
    std::vector<ColorSpinorField> bl;  ///< the right-hand sides in the set operator's precision, where it differs
  };
  /// One inverse-iteration step for null vectors k0 .. k0 + count - 1 of level l (v += e with
  /// M e = -M v; the first pass fills v with random vectors first, from vector `restricted` on): one at a time (count
  /// 1, by solve() with the sloppy operator low or, refining, the cycle) or together (bicgstab_set over
  /// set_operator(l)'s apply_set, with reliable updates by the level operator where that is in another precision).
  /// Returns each vector's solver statistics.
  std::vector<SolverStats> solve_null_vectors(int l, int k0, int count, bool refine, const SolverParam& sp,
                                              LinearOperator* low, NullVectorFields& f, int restricted);
  /// c = R_l f: c a field of level l + 1 (where that level lives: gathered from the ranks' parts
  /// when it is agglomerated; collective then).
  void restrict_down(int l, ColorSpinorField& c, const ColorSpinorField& f);
  /// f = P_l c, from this rank's sites of c when level l + 1 is agglomerated.
  void prolongate_up(int l, ColorSpinorField& f, const ColorSpinorField& c);
  void cycle(int l, ColorSpinorField& x, const ColorSpinorField& b);
  // The same for sets of fields (apply_parity_set; cycles_sets()): on level l's Sets.
  void restrict_down_set(int l, std::vector<ColorSpinorField>& c, const std::vector<ColorSpinorField>& f);
  void prolongate_up_set(int l, std::vector<ColorSpinorField>& f, const std::vector<ColorSpinorField>& c);
  void cycle_set(int l, std::vector<ColorSpinorField>& x, const std::vector<ColorSpinorField>& b);
  void coarse_correction_set(int l);
  void correct_on_parity_set(int l, std::vector<ColorSpinorField>& xp, const std::vector<ColorSpinorField>& bhat);
  /// A level's even-odd smoothing fields as mr_steps_fused takes them: its Sets, or one field
  /// each (an absent field: an empty vector). hr receives Mhat x_p and, in the level's
  /// precision, the residual; lx, lr, la exist where the smoother's precision is lower.
  struct MrFields {
    std::vector<ColorSpinorField>&hr, &hx, &ha, &lx, &lr, &la;
  };
  /// x_p += `steps` MR steps on Mhat e = bhat - Mhat x_p from e = 0, for a set of any size (a
  /// single right-hand side's cycle: a set of one): the residual formed in one pass, the first
  /// step writing x, the last adding x + alpha r to x_p.
  void mr_steps_fused(int l, int steps, std::vector<ColorSpinorField>& xp, const std::vector<ColorSpinorField>& bhat,
                      const MrFields& f);
  void coarse_solve_set(int l, std::vector<ColorSpinorField>& x, const std::vector<ColorSpinorField>& b);
  /// While profiling: the work since the last change of level (device synchronized) goes to the
  /// level it was on, and from now on to level l (-1: outside the multigrid). Returns the level
  /// before. A no-op returning it when not profiling.
  int attribute_to(int l);
  class LevelScope;
  /// The coarse correction of a cycle on level l: C.x from C.b on level l + 1 (coarsest
  /// solve, K-cycle or V-cycle). Where graphs_correction(l), launched as a CUDA graph of
  /// correct_below(l), recorded at the third correction (after two direct ones) and again
  /// whenever a buffer it used has gone.
  void coarse_correction(int l);
  /// The coarse correction's work itself, queued kernel by kernel.
  void correct_below(int l);
  /// Whether level l's coarse correction can be one CUDA graph: param.graphs, CUDA, not while a graph is
  /// being recorded, profiled (-pc_latke_mg_monitor) or logged (-log_view); every level below
  /// on one rank (the one-rank MR smoother then keeps its sums on the device), with no
  /// Schwarz smoother and no gathering below level l + 1, the coarsest solved directly on one
  /// rank, and a V-cycle where a level below is not the coarsest.
  bool graphs_correction(int l) const;
  /// Drop every recorded coarse correction (the hierarchy changes).
  void forget_graphs();
  /// smooth_steps, solves and solve_iterations of each level below l.
  std::vector<std::array<long, 3>> counts_below(int l) const;
  /// Whether level l's cycle can form only parity p of x before its reconstruction: MR on its
  /// even-odd system, after the coarse correction only. Then prepare(b - M x) = bhat - Mhat x_p
  /// whatever x_q is, and the reconstruction sets x_q from b and the smoothed x_p.
  bool smooths_on_parity(int l) const;
  /// After the coarse correction on level l (smooths_on_parity): xp = [P x_c]_p, then MR on
  /// Mhat e_p = bhat - Mhat x_p and xp += e_p. xp, bhat: fields of the level's even-odd shape,
  /// xp distinct from L.hr, bhat read before the steps (so it may be L.hx).
  void correct_on_parity(int l, ColorSpinorField& xp, const ColorSpinorField& bhat);
  void smooth(int l, ColorSpinorField& x, const ColorSpinorField& r, int steps);
  /// MR steps from zero on level l's even-odd system (when eo, else on its full operator):
  /// the right-hand side in L.hr (eo) or L.sr, the result left in L.hx (eo) or x.
  void mr_steps(int l, ColorSpinorField& x, bool eo, int steps);
  void coarse_solve(int l, ColorSpinorField& x, const ColorSpinorField& b);
  /// A x = b on the coarsest level l (A: its even-odd or full operator): by the dense inverse
  /// when it has one, else GCR to tol; returns the GCR iterations (0 when direct).
  int coarsest_system_solve(int l, LinearOperator& A, ColorSpinorField& x, const ColorSpinorField& b, double tol,
                            int max_it);

  /// Mean |M v_k| / |v_k| over the fine basis, on fine operator M.
  double mean_nullness(LinearOperator& M) const;
  /// mean_nullness on the operator the fine basis was orthonormalized for: measured when first
  /// asked for (nullness_growth(), or update() before it replaces that operator), so that a
  /// setup never reused pays nothing for it.
  double fine_reference() const;

  MultigridParam param_;
  LocalFactory local_;
  mutable double fine_nullness_ = 0;  ///< fine_reference() once measured; 0: not yet (build_level resets it)
  std::vector<std::unique_ptr<Level>> levels_;
  std::vector<int> gathered_;  ///< per level, the ranks it is gathered onto from the level above's, or 0 (check_param)
  bool profiling_ = false;
  bool recording_ = false;  ///< a coarse correction is being recorded as a CUDA graph
  int profile_level_ = -1;
  double profile_time_ = 0;  ///< at the last change of level (steady clock, seconds)
  WorkCounters profile_mark_;
  std::vector<LevelProfile> profile_;
  double setup_seconds_ = 0;
};

/// The cycle from level 0 as a Preconditioner (for Latke's GCR and the PETSc PC).
class MultigridPreconditioner final : public Preconditioner {
 public:
  explicit MultigridPreconditioner(std::shared_ptr<Multigrid> mg) : mg_(std::move(mg)) {}
  void apply(ColorSpinorField& out, const ColorSpinorField& in) override { mg_->apply(out, in); }
  std::string describe() const override;
  Multigrid& mg() { return *mg_; }

 private:
  std::shared_ptr<Multigrid> mg_;
};

}  // namespace latke::mg
