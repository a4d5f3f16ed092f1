// Latke's native Krylov solvers: device-resident (every vector operation is a fused kernel on
// the operator's backend), mixed precision by reliable updates. They are the baseline the
// preconditioners are measured against and the block solvers inside them.
//
// Mixed precision: the iteration runs on the sloppy operator's fields (single or half
// storage); the solution is accumulated in double, and whenever the iterated residual has
// fallen by the factor delta since the last update (or reached the tolerance), the true
// residual b - A x is recomputed with the double operator and the recurrence continues from
// it (reliable updates, Sleijpen and van der Vorst; as in QUDA). Convergence is declared on
// the true residual only: |b - A x| <= tol |b|.
//
// Fallback precision (CG): the iterated residual tracks the true one only while the sloppy
// operator's own error, about 3e-5 of its norm in half (the links' rounding), times the
// correction stays below the residual. A residual made of the lowest modes, as an
// extrapolated guess at a light mass leaves, needs a correction |A^-1 r| ~ |r| / lambda_min,
// and in half its error then exceeds r itself: the iterated residual falls by delta while the
// true one hardly moves, and CG crawls. When a reliable update finds the true residual more
// than twice the iterated one, CG moves to the fallback operator (the same operator in
// single) for the rest of the solve, if one is given, and restarts its directions from r.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "operators/linear_operator.h"

namespace latke {

enum class SolverType { cg, cgne, cgnr, bicgstab, gcr, mr };

const char* to_string(SolverType t);
/// @brief cg, cgne, cgnr, bicgstab, gcr or mr; anything else is an error naming the value.
SolverType parse_solver_type(const std::string& name);

struct SolverParam {
  SolverType type = SolverType::bicgstab;
  double tol = 1e-10;    ///< on the true relative residual |b - A x| / |b|
  int max_iter = 10000;  ///< iterations (sloppy operator applications for the Krylov methods)
  double delta = 0.1;    ///< reliable update when the residual fell by this factor
  int restart = 16;      ///< GCR(k): directions kept before a restart
  /// GCR in a sloppy precision: a cycle also ends (fold, true residual, restart) once its iterated
  /// residual fell by this factor. Measured with multigrid at light masses (docs/solvers.md):
  /// 0.1 loses too many directions with a weak hierarchy, never (restart only) loses iterations
  /// with a strong one; 1e-4 has neither loss.
  double restart_drop = 1e-4;
  /// GCR: stop, not converged, once the true residual has not fallen below 0.9 of its best
  /// value for this many iterations (a preconditioner too weak for the system: near kappa_c an
  /// additive Schwarz whose blocks are not solved well enough); 0: only max_iter stops it.
  int stall_iterations = 500;
  /// GCR: directions carried over each restart (deflated restarting, as GCRO-DR: Parks, de
  /// Sturler et al. 2006). At a restart the cycle keeps the combinations of its directions
  /// that belong to the harmonic Ritz values of smallest modulus (GcrCycle::deflate), so that
  /// the low modes which a plain restart would discard (and which stall a weak preconditioner
  /// near kappa_c) stay in the space and the residual is kept orthogonal to their images. Each
  /// cycle then adds restart - deflate new directions. 0: plain restarts.
  int deflate = 0;
  /// Deflated restarts: keep A's harmonic Ritz vectors on the span of the directions (n^2
  /// products per restart) instead of those of the map from the directions' pre-images (the
  /// residuals the preconditioner was applied to) to their images, which the cycle's
  /// coefficients give (FGMRES-DR's choice). The same without a preconditioner.
  bool deflate_exact = false;
  /// Called with 0 and the initial |r|/|b|, then after every iteration with the iterated
  /// relative residual of the system the method iterates on (the true one after a reliable
  /// update; CGNR: of the normal equations). Null: none.
  std::function<void(int iteration, double residual)> monitor;
};

struct SolverStats {
  int iterations = 0;
  int reliable_updates = 0;
  int restarts = 0;              ///< BiCGstab: fresh starts (lost biorthogonality in a sloppy precision; breakdowns)
  long outer_applications = 0;   ///< of the double-precision operator
  long sloppy_applications = 0;  ///< of the sloppy operator (0 when it is the double one)
  double initial_residual = 0;   ///< |b - A x| / |b| of the initial guess (CGNR: of A^dag A x = A^dag b)
  double true_residual = 0;      ///< |b - A x| / |b| at the end, in double
  double seconds = 0;
  double flops = 0;              ///< operator flops (QUDA's counting), all ranks
  int fallback_at = -1;          ///< CG, BiCGstab: iteration at which it moved to the fallback precision (-1: never)
  bool converged = false;
  bool stalled = false;  ///< GCR: stopped by the stall rule (SolverParam::stall_iterations)
  /// Why an unconverged solve stopped, for reports: empty (the iteration limit), or a sentence
  /// ("the true residual stayed above ... for ... iterations").
  std::string stop_reason;
};

/// A preconditioner for flexible methods: out ~ A^-1 in, on fields of A's shape (double).
class Preconditioner {
 public:
  virtual ~Preconditioner() = default;
  virtual void apply(ColorSpinorField& out, const ColorSpinorField& in) = 0;
  /// @brief out[k] = K in[k] for the fields of two sets (ColorSpinorField::make_set) of equal
  /// size: field by field here; preconditioners that do the set at once override it.
  virtual void apply_set(std::vector<ColorSpinorField>& out, const std::vector<ColorSpinorField>& in) {
    for (std::size_t k = 0; k < in.size(); ++k) apply(out[k], in[k]);
  }
  virtual std::string describe() const = 0;
};

/// @brief A field for a mixed-precision solver's partial solution between reliable updates,
/// for iterations with `sloppy`: its precision, but at least single. In half the rounding of
/// the partial solution (about 3e-5 of each site) times the condition number exceeds the
/// reliable-update factor at light masses and the true residual stalls (QUDA too keeps its
/// partial accumulator above half).
ColorSpinorField partial_solution_field(const LinearOperator& sloppy);

/// @brief Solve A x = b. x holds the initial guess and receives the solution; x and b are
/// fields of A's shape and precision (double for the outer solve; multigrid's setup solves
/// in single). sloppy: the same operator in lower precision for the
/// iteration (nullptr: A itself). K: a preconditioner for GCR (nullptr: none). CG needs A
/// Hermitian positive definite; CGNE/CGNR solve A A^dag y = b, x = A^dag y / A^dag A x = A^dag b.
/// Mixed precision: CG and BiCGstab iterate in sloppy's precision with reliable updates in
/// double (delta); GCR runs each cycle of at most `restart` directions (and its preconditioner's
/// input and output) in sloppy's precision, ends it once its iterated residual fell by
/// restart_drop, and recomputes the residual in double at every restart;
/// MR has no mixed form and refuses a sloppy operator.
/// fallback: the operator in a precision above sloppy's, which CG moves to when the sloppy
/// iteration stops tracking the true residual (see above) and BiCGstab when the sloppy
/// iteration diverges or stagnates, or breaks down right after a restart (nullptr: none).
/// Fails on bad parameters; a solve that does not converge returns converged = false.
SolverStats solve(LinearOperator& A, LinearOperator* sloppy, Preconditioner* K, ColorSpinorField& x,
                  const ColorSpinorField& b, const SolverParam& param, LinearOperator* fallback = nullptr);

/// One restart cycle of flexible GCR(k) on preconditioned directions z_j with A z_j given (the
/// native GCR and multigrid's K-cycle and coarsest solves run it): A z_j is orthogonalized
/// against the earlier A z_i by classical Gram-Schmidt and the residual updated, with one global
/// sum per direction, but the z_j themselves are left as they are and the solution is formed once, at
/// the end of the cycle, from the triangular system of the Gram-Schmidt coefficients (as QUDA's
/// GCR does): per direction this saves a pass over j + 2 fields (orthogonalizing z_j) and one
/// over three (updating x).
class GcrCycle {
 public:
  /// z, az: the cycle's directions and their images (at least `restart` fields, kept by the
  /// caller, of one shape and precision; the cycle keeps pointers to them, so it is made again
  /// when they are).
  GcrCycle(std::vector<ColorSpinorField>& z, std::vector<ColorSpinorField>& az, int restart);
  /// Starts a cycle (no directions).
  void begin() { n_ = 0, pre_k_ = 0; }
  /// Directions added since begin().
  int size() const { return n_; }
  /// Directions a cycle holds at most (the restart length).
  int capacity() const { return restart_; }
  /// @brief Takes direction z[size()] with az[size()] = A z[size()]: orthogonalizes az (in
  /// place) against the cycle's earlier ones, r -= alpha az with the minimising alpha; returns
  /// the new |r|^2, from r2 = |r|^2 before (measured, at the cycle's first direction). One
  /// global sum (the products of az with the earlier directions, itself and r, all at once; the
  /// norms after it follow from the directions' orthogonality); one more where a difference would
  /// lose most of its digits (`cancellation`). Fails when A z is zero (the operator or
  /// preconditioner broke down), naming `what`.
  double add(ColorSpinorField& r, double r2, const char* what);
  /// @brief add() for the systems of a set at once (gcr_set): system k with cycles[k] (null: it
  /// takes no step) adds its direction j = size(), whose A z is field k of the set az[j]
  /// (az[i]: make_set sets, the same fields as the cycles' own), against its residual r[k], and
  /// r2[k] becomes its new |r|^2. The systems must be at the same j. In single and double, every
  /// system's Gram-Schmidt products are one pass over the set and one global sum, and its
  /// updates of A z and r one pass each; in half, system by system.
  static void add_set(const std::vector<GcrCycle*>& cycles, std::vector<std::vector<ColorSpinorField>>& az,
                      std::vector<ColorSpinorField>& r, std::vector<double>& r2, const char* what);
  /// @brief x += the cycle's correction sum_j gamma_j z_j (x may be stored more precisely than z).
  void update(ColorSpinorField& x) const;
  /// @brief Deflated restarting, after update(): makes the cycle's first k' = min(k, size())
  /// directions z[l], az[l] = A z[l] those combinations of its directions whose images are
  /// orthonormal and belong to the k' harmonic Ritz values of smallest modulus of the map from
  /// the directions' pre-images to their images (A K for a linear preconditioner K; A itself
  /// without one), as FGMRES-DR chooses them. It takes direction j to be K applied to the
  /// residual at its add() (z_j = K r_j, as GCR makes them) and a seeded one to be what the
  /// last deflate() kept, and r to be the residual the cycle left. From the cycle's
  /// coefficients alone (no global sum), then 2 k' passes over the directions. spare_z,
  /// spare_az: at least k fields of the cycle's shape, swapped with the kept ones (so they hold
  /// the old directions after). Returns k' (fewer where the chosen vectors are dependent to
  /// the precision of the fields) and the moduli of the kept values in `theta` (smallest first).
  /// exact: A's harmonic Ritz values on span(z) instead ((A z y - theta z y) orthogonal to A z),
  /// which costs n global sums of n products <A z_i, z_j>.
  int deflate(int k, std::vector<ColorSpinorField>& spare_z, std::vector<ColorSpinorField>& spare_az,
              bool exact = false, std::vector<double>* theta = nullptr);
  /// @brief Starts a cycle (as begin()) from the k directions deflate() kept (all of them, or 0),
  /// whose images az[l] are orthonormal: r -= sum_l <az_l, r> az_l (one global sum); returns
  /// the new |r|^2 from r2, its value before (measured). r: the residual the last cycle left, or
  /// the true one recomputed from its solution.
  double seed(int k, ColorSpinorField& r, double r2);

 private:
  /// add()'s arithmetic once gw_ and gr_ hold direction j = n_'s products: the Gram-Schmidt
  /// coefficients (minus_: their negatives) and |w'|^2, <w', r> of the orthogonalized w' from
  /// them; returns whether those lost their digits (to be measured on w' itself).
  bool orthogonalize(double& w2, blas::Cplx& wr);
  /// Takes direction n_ with |w'|^2 and <w', r>: its alpha and norm; returns the iterated
  /// |r - alpha w'|^2 and sets `measure` where that must be measured instead.
  double take(double w2, blas::Cplx wr, double r2, const char* what, bool& measure);

  std::vector<ColorSpinorField>& z_;
  std::vector<ColorSpinorField>& az_;
  std::vector<const ColorSpinorField*> zp_, azp_;
  std::vector<blas::Cplx> beta_;   ///< [j * restart + i]: A z_j's Gram-Schmidt coefficient on A z_i, i < j
  std::vector<blas::Cplx> alpha_;  ///< the residual's coefficient on each orthogonalized A z_j
  std::vector<blas::Cplx> minus_;  ///< scratch: -beta of the direction being added
  std::vector<double> n2_;         ///< |A z_j|^2 after orthogonalization
  std::vector<blas::Cplx> gw_, gr_;  ///< scratch: <A z_i, A z_j> and <A z_i, r>, i <= j
  double measured_r2_ = 0;           ///< |r|^2 last measured (at the cycle's start or since)
  double last_r2_ = 0;               ///< |r|^2 after the last direction (add)
  double start_r2_ = 0;              ///< |r|^2 at seed(), before the projection
  /// Deflated restarts: the kept directions' pre-images (the residual combinations their
  /// preconditioned forms came from) as coordinates on the kept images (rows 0..k-1) and on
  /// the residual the next cycle starts from, over its norm (row k); pre_k_ of them seeded.
  std::vector<blas::Cplx> pre_;  ///< column-major, pre_pending_ + 1 rows
  int pre_k_ = 0, pre_pending_ = 0;
  int restart_, n_ = 0;
  /// A norm from a difference is measured instead where the difference fell below this
  /// fraction of its larger term (for |r|^2: of the last measured one): there the fields' own
  /// rounding would weigh on it.
  static constexpr double cancellation = 1e-3;
};

// ---- Sets of systems: A x_k = b_k for many right-hand sides at once ----------------------------

/// Applies one operator to every field of a set (ColorSpinorField::make_set) at once: out[k] =
/// A in[k]. E.g. mg::CoarseOperator::apply_set, which reads the operator once for the set.
using SetOperator = std::function<void(std::vector<ColorSpinorField>& out, const std::vector<ColorSpinorField>& in)>;

/// @brief BiCGstab on A x_k = b_k for every field k of the sets x and b (make_set, of A's
/// shape; at most blas::set_max fields), one application of A per step for all of them and one
/// host synchronisation per reduction: each system has its own coefficients and stops at
/// param.tol of |b_k| (on its iterated residual), at a breakdown, or at param.max_iter; the
/// others go on. In b's precision; x, which holds the initial guesses, may be stored more
/// precisely and accumulates the updates. With a precise operator and b_precise (b in x's
/// precision), reliable updates: whenever a system's iterated residual has fallen by
/// param.delta since the last update (or reached the tolerance), its r = b - A x is recomputed
/// with the precise operator (on that field alone). Returns per system: iterations, reliable
/// updates, initial and true residual (in b's precision, or the precise operator's), converged.
/// The multigrid setup solves a level's null vectors so.
std::vector<SolverStats> bicgstab_set(const SetOperator& A, std::vector<ColorSpinorField>& x,
                                      const std::vector<ColorSpinorField>& b, const SolverParam& param,
                                      const SetOperator* precise = nullptr,
                                      const std::vector<ColorSpinorField>* b_precise = nullptr);

/// @brief Flexible GCR, mixed precision as solve() runs it, on A x_k = b_k for a set of
/// right-hand sides (at most blas::set_max): each system keeps its own Krylov space, residual
/// and restarts, but every iteration applies the preconditioner (K->apply_set) and the sloppy
/// operator (apply_set) once for the whole set, so that a multigrid or an operator that reads
/// its coefficients once per set does so. x[k] (initial guesses; receive the solutions) and
/// b[k]: double fields of A's shape, any fields; where both are sets (make_set), the true
/// residuals at the start, at the end and at each restart where every system still iterates take
/// the operator's set form. A system that meets its tolerance stops taking directions (its
/// residual is zeroed for the rest of the set's cycle); the set ends when every system has
/// converged, stalled or reached max_iter. Returns per system what solve() returns, its
/// applications counting those made for the whole set. Needs p.type gcr. Memory running out
/// during the solve throws OutOfMemory naming the directions' share (2 restart fields per
/// system) and the options that shrink it.
std::vector<SolverStats> gcr_set(LinearOperator& A, LinearOperator* sloppy, Preconditioner* K,
                                 std::vector<ColorSpinorField>& x, const std::vector<ColorSpinorField>& b,
                                 const SolverParam& p);

// ---- Shifted systems: (A + sigma_i) x_i = b for a list of shifts -------------------------------
//
// For the staggered even-odd normal operator at masses m_i, A_i = 4 m_i^2 - D_pq D_qp is the
// normal operator of any mass m_A plus sigma_i = 4 (m_i^2 - m_A^2) (staggered_mass_shifts).
// A must be Hermitian positive definite with every A + sigma_i. Two strategies:
//
// multishift: CG-M (Jegerlehner, hep-lat/9612014) on the lowest shift, the others following
//   through the zeta recurrences, every update of the solutions and directions fused into one
//   kernel (blas::multishift_update). A shift stops updating once its residual estimate
//   zeta_i |r| meets its tolerance. Mixed precision as QUDA does it: the multi-shift iteration
//   in the sloppy precision with reliable updates of the lowest shift (solutions accumulated
//   in double, its residual recomputed in double), then each shift refined by the mixed-
//   precision CG of solve() from its multi-shift solution until its true residual
//   |b - (A + sigma_i) x_i| / |b| meets its tolerance. One iteration applies A once for all
//   shifts, but needs two vectors per shift more than CG.
// sequential: one mixed-precision CG per shift, from the highest shift (heaviest mass, fastest)
//   to the lowest, each started from the polynomial extrapolation in sigma of the (up to
//   `extrapolation`) nearest solutions already found (Alexandru, Pelissier, Gamari, Lee,
//   "Multi-mass solvers for lattice QCD on GPUs", J. Comput. Phys.): the Lagrange polynomial
//   through them, evaluated at the new shift. For exact earlier solutions the guess's
//   residual is b with each eigencomponent (eigenvalue lambda of A) multiplied by
//   prod_l (sigma_l - sigma)/(sigma_l + lambda), each factor in (0, 1) for sigma below the
//   earlier shifts: a guess is never worse than zero, and every further point improves it in
//   every mode (most in the high modes, least in the low modes that dominate light masses).

enum class MultiShiftStrategy { multishift, sequential };

const char* to_string(MultiShiftStrategy s);
/// @brief multishift or sequential; anything else is an error naming the value.
MultiShiftStrategy parse_multishift_strategy(const std::string& name);

struct MultiShiftParam {
  MultiShiftStrategy strategy = MultiShiftStrategy::multishift;
  std::vector<double> tol{1e-10};  ///< one for every shift, or one per shift (true residuals)
  int max_iter = 10000;            ///< per solve (the multi-shift iteration, each refinement or CG)
  double delta = 0.1;              ///< reliable update when the residual fell by this factor
  int extrapolation = 4;           ///< sequential: earlier solutions the guess uses (0: zero guess)
};

struct ShiftStats {
  double shift = 0;
  int iterations = 0;           ///< multishift: iteration at which the shift stopped; sequential: CG's
  int refine_iterations = 0;    ///< multishift: iterations of the refining CG
  double initial_residual = 0;  ///< sequential: of the extrapolated guess; multishift: of the
                                ///< multi-shift solution before refinement
  double true_residual = 0;     ///< |b - (A + sigma) x| / |b| at the end, in double
  double seconds = 0;           ///< sequential: of its CG; multishift: of its refinement
  int fallback_at = -1;         ///< its CG's SolverStats::fallback_at
  bool converged = false;
};

struct MultiShiftStats {
  std::vector<ShiftStats> shifts;  ///< in the order of the shifts given
  int iterations = 0;              ///< all iterations (multishift: the shared ones + refinements)
  long outer_applications = 0;     ///< of the double-precision operator
  long sloppy_applications = 0;    ///< of the sloppy operator
  double seconds = 0;
  double flops = 0;        ///< operator flops (QUDA's counting), all ranks
  bool converged = false;  ///< every shift
};

/// @brief Solve (A + shifts[i]) x[i] = b for every i, with the strategy param.strategy.
/// shifts: strictly increasing. x[i]: double fields of A's shape that receive the solutions
/// (what they hold on entry is ignored). sloppy: A in lower precision for the iterations
/// (nullptr: A itself); fallback: A in a precision above sloppy's for the CG solves (solve()).
/// A solve that does not converge returns converged = false.
MultiShiftStats solve_shifted(LinearOperator& A, LinearOperator* sloppy, const std::vector<double>& shifts,
                              const std::vector<ColorSpinorField*>& x, const ColorSpinorField& b,
                              const MultiShiftParam& param, LinearOperator* fallback = nullptr);
/// @brief solve_shifted with the multishift strategy.
MultiShiftStats solve_multishift(LinearOperator& A, LinearOperator* sloppy, const std::vector<double>& shifts,
                                 const std::vector<ColorSpinorField*>& x, const ColorSpinorField& b,
                                 const MultiShiftParam& param, LinearOperator* fallback = nullptr);
/// @brief solve_shifted with the sequential strategy (heaviest first, extrapolated guesses).
MultiShiftStats solve_multimass(LinearOperator& A, LinearOperator* sloppy, const std::vector<double>& shifts,
                                const std::vector<ColorSpinorField*>& x, const ColorSpinorField& b,
                                const MultiShiftParam& param, LinearOperator* fallback = nullptr);

/// @brief The shifts sigma_i = 4 (m_i^2 - m_A^2) that turn the staggered normal operator of
/// mass m_A into those of masses m_i. Checks the list, naming the offending entry: not empty,
/// each m_i finite and > 0 (the even-odd solve needs m > 0), distinct, in increasing order.
std::vector<double> staggered_mass_shifts(const std::vector<double>& masses, double operator_mass);

}  // namespace latke
