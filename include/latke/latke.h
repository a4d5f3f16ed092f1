/* Latke's C API for PETSc programs: Latke's Dirac operators as PETSc matrices (MATSHELL),
 * the vectors they act on, and the helpers a solve needs around them.
 *
 *   PetscInitialize(&argc, &argv, NULL, help);
 *   LatkeInitialize();                                  // backend, process grid, log events
 *   LatkeGaugeCreateFromOptions(PETSC_COMM_WORLD, NULL, &U);
 *   MatCreateLatkeWilsonClover(U, LATKE_OPERATOR_EVEN_ODD, NULL, NULL, &A);
 *   MatLatkeCreateFullVecs(A, &x, &b);                  // full-lattice source and solution
 *   MatCreateVecs(A, &xhat, &bhat);                     // the even-odd system's vectors
 *   LatkeVecSetPointSource(A, b, site, spin, color);
 *   MatLatkePrepareSource(A, b, bhat);
 *   KSPSetOperators(ksp, A, A); KSPSetFromOptions(ksp); KSPSolve(ksp, bhat, xhat);
 *   MatLatkeReconstruct(A, xhat, b, x);
 *
 * Vectors are complex double in Latke's native layout: for each parity block present (even
 * then odd for a full-lattice vector; the solved parity for an even-odd vector), for each
 * spin-color component (spin slowest), every site of the block in checkerboard order
 * (src/core/lattice.h). Use the lexicographic helpers, not the raw array, to read
 * or set values by site. The operators' formulas and conventions are stated in
 * operators/wilson_clover/wilson_clover.h, operators/staggered/staggered.h and
 * include/latke/conventions.h.
 *
 * Every function returns a PetscErrorCode; bad input is a PETSc error whose message names
 * the input, its value and what was expected. */
#ifndef LATKE_LATKE_H
#define LATKE_LATKE_H

#include <petscmat.h>
#include <petscpc.h>
#include <petscviewer.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LATKE_VERSION_MAJOR 0
#define LATKE_VERSION_MINOR 1
#define LATKE_VERSION_PATCH 0

/* ---- Start and end -------------------------------------------------------------------- */

/* Read the run options (-latke_backend cpu|cuda, -latke_grid a,b,c,d), select this rank's
 * GPU, and register Latke's log events (LatkeMatMult, LatkeDslash, LatkeClover, LatkeHalo,
 * LatkeStage) and preconditioners. Call after PetscInitialize; calling it again is harmless. */
PetscErrorCode LatkeInitialize(void);
/* The version of the library linked at run time (which may differ from the LATKE_VERSION_*
 * macros of the header a program was compiled with); any argument may be NULL. */
PetscErrorCode LatkeGetVersion(int *major, int *minor, int *patch);
/* The backend in use: "cpu" or "cuda". */
PetscErrorCode LatkeGetBackend(const char **name);
/* Release what LatkeInitialize set up and keep the autotuner's choices (LATKE_RESOURCE_PATH);
 * call before PetscFinalize, after destroying Latke's objects. PetscFinalize calls it for a
 * program that does not. */
PetscErrorCode LatkeFinalize(void);
/* Called by PETSc when a program loads the library (-dll_append /path/liblatke.so): runs
 * LatkeInitialize, and LatkeFinalize at PetscFinalize, so that a PETSc program that never
 * calls Latke can still take -pc_type latke_mg or latke_schwarz. */
PetscErrorCode PetscDLLibraryRegister_latke(void);

/* ---- Gauge configurations ------------------------------------------------------------- */

/* A gauge configuration on a distributed lattice: the lattice, the process grid and this
 * rank's links. Operators made from it keep what they need; destroy it when done. */
typedef struct _p_LatkeGauge *LatkeGauge;

/* From links over this rank's local volume, lexicographic (x fastest, t slowest), per site
 * the four links U_x, U_y, U_z, U_t as 3x3 row-major matrices (36 complex numbers per site).
 * global: the lattice's extents; grid: ranks per dimension, or NULL for -latke_grid or a
 * chosen grid. */
PetscErrorCode LatkeGaugeCreateFromArray(MPI_Comm comm, const PetscInt global[4], const PetscInt grid[4],
                                         const PetscScalar links[], LatkeGauge *gauge);
/* A reproducible random field, the same on any process grid: spread < 0 gives independent
 * random SU(3) links; spread >= 0 the SU(3) projection of 1 + spread * (Gaussian), with
 * spread = 0 the unit gauge. */
PetscErrorCode LatkeGaugeCreateRandom(MPI_Comm comm, const PetscInt global[4], const PetscInt grid[4],
                                      PetscInt seed, PetscReal spread, LatkeGauge *gauge);
/* From the options database under prefix (may be NULL):
 *   -latke_gauge quenched|random|unit|FILE   the configuration (default quenched): a quenched
 *                                thermalized field made by Latke's generator (cached, so made
 *                                once), a reproducible random field, the unit gauge, or a
 *                                NERSC or ILDG file (which brings its lattice)
 *   -latke_lattice X,Y,Z,T       lattice extents (default 8,8,8,8)
 *   -latke_gauge_seed N          seed of the generated or random field (default 1)
 *   -latke_gauge_beta b, -latke_gauge_sweeps n   quenched: coupling and sweeps (6.0, 200)
 *   -latke_gauge_cache DIR       quenched: cache directory (default: the build tree's gauge-cache)
 *   -latke_gauge_spread S        random: < 0 independent random SU(3) links; >= 0 the SU(3)
 *                                projection of 1 + S * noise (default -1)
 *   -latke_gauge_quiet           quenched: no progress lines while generating (by default a line
 *                                about every tenth of the sweeps once generation has taken 2 s)
 *   -latke_gauge_accept_nonunitary   FILE: read 3x3 links that are not SU(3) (smeared, fat);
 *                                by default a file's links must be SU(3); non-finite links are
 *                                always refused
 * Real options must be finite (beta >= 0); a -latke_lattice given with a FILE must be the file's. */
PetscErrorCode LatkeGaugeCreateFromOptions(MPI_Comm comm, const char prefix[], LatkeGauge *gauge);
/* The next configuration of a quenched Markov chain: gauge's links continued by `sweeps` (>= 1)
 * sweeps of Latke's generator (a Cabibbo-Marinari heat-bath pass and four over-relaxation
 * passes each) for the Wilson gauge action at beta, with random numbers keyed by seed and the
 * chain's heat-bath pass count. PETSC_DEFAULT for beta or seed takes the gauge's own: the
 * -latke_gauge_beta / -latke_gauge_seed LatkeGaugeCreateFromOptions read (6.0, 1 by default),
 * or those an evolved gauge was evolved with (other gauges have none: an error). A configuration of -latke_gauge
 * quenched continues its own chain with them: n more sweeps give what -latke_gauge_sweeps (its sweeps + n) would on the
 * same backend; links from elsewhere start the count at 0. For tests and
 * demonstrations of solver setups reused from one configuration to the next. Collective. */
PetscErrorCode LatkeGaugeCreateEvolved(LatkeGauge gauge, PetscReal beta, PetscInt seed, PetscInt sweeps,
                                       LatkeGauge* next);
/* A NERSC or ILDG file (format recognized, checksums and SU(3) checked; the file brings the
 * lattice), on the process grid `grid` (NULL: -latke_grid or a chosen one). Collective. */
PetscErrorCode LatkeGaugeLoad(MPI_Comm comm, const char path[], const PetscInt grid[4], LatkeGauge *gauge);
/* Write the configuration to path in format "nersc" or "ildg" (NULL: nersc), in double, through
 * a temporary file renamed when complete. Collective. */
PetscErrorCode LatkeGaugeSave(LatkeGauge gauge, const char path[], const char format[]);
/* This rank's links, laid out as LatkeGaugeCreateFromArray takes them (36 complex numbers per
 * local site, lexicographic; U_x, U_y, U_z, U_t row-major). */
PetscErrorCode LatkeGaugeGetLinks(LatkeGauge gauge, PetscScalar links[]);
/* The average plaquette Re tr U_P / 3 over all ranks. Collective. */
PetscErrorCode LatkeGaugeGetPlaquette(LatkeGauge gauge, PetscReal *plaquette);
/* Global extents, local extents and process grid (any may be NULL). */
PetscErrorCode LatkeGaugeGetLattice(LatkeGauge gauge, PetscInt global[4], PetscInt local[4], PetscInt grid[4]);
PetscErrorCode LatkeGaugeView(LatkeGauge gauge, PetscViewer viewer);
PetscErrorCode LatkeGaugeDestroy(LatkeGauge *gauge);

/* ---- Operators -------------------------------------------------------------------------- */

typedef enum {
  LATKE_OPERATOR_FULL,    /* the operator on the whole lattice */
  LATKE_OPERATOR_EVEN_ODD /* on one parity: the Schur complement (Wilson-clover); the normal
                             operator 4m^2 - D_eo D_oe (staggered) */
} LatkeOperatorForm;

typedef enum { LATKE_PRECISION_DOUBLE, LATKE_PRECISION_SINGLE, LATKE_PRECISION_HALF } LatkePrecision;
typedef enum { LATKE_SCHUR_SYMMETRIC, LATKE_SCHUR_ASYMMETRIC } LatkeSchurType;

/* Wilson-clover parameters; LatkeWilsonCloverParamsDefault fills the defaults shown. The
 * options database overrides them under the matrix's prefix:
 *   -latke_mass m          bare mass, M = (4 + m) - D/2 + C_sw         (0.1)
 *   -latke_kappa k         kappa normalisation instead, m = 1/(2k) - 4 (not with -latke_mass)
 *   -latke_csw c           clover coefficient                           (1.0)
 *   -latke_boundary a,b,c,d  boundary signs per direction, each 1 or -1 (1,1,1,-1)
 *   -latke_twist a,b,c,d   extra boundary phases exp(i pi a), ...       (0,0,0,0)
 *   -latke_schur symmetric|asymmetric   even-odd form                  (symmetric)
 *   -latke_parity even|odd the parity an even-odd operator acts on       (even)
 *   -latke_precision double|single|half  storage of the operator's own fields (double);
 *                          vectors are double, converted around each application
 *   -latke_reconstruct auto|18|12  gauge link storage; auto (reconstruct 0): 12 on the GPU when
 *                          every link is SU(3) to 1e-6, else 18                (auto) */
typedef struct {
  PetscReal mass;
  PetscReal kappa; /* > 0: kappa normalisation (M_kappa = 2 kappa M), and mass is ignored */
  PetscReal csw;
  PetscScalar boundary_phase[4];
  LatkeSchurType schur;
  PetscInt parity;
  LatkePrecision precision;
  PetscInt reconstruct; /* 18, 12, or 0: automatic (12 on the GPU when the links are SU(3), else 18) */
} LatkeWilsonCloverParams;

PetscErrorCode LatkeWilsonCloverParamsDefault(LatkeWilsonCloverParams *params);

/* A MATSHELL that owns a Wilson-clover operator on the gauge field's lattice, in the given
 * form. params may be NULL (defaults); prefix (may be NULL) is the matrix's options prefix.
 * MatMult, MatMultTranspose, MatMultHermitianTranspose, MatGetDiagonal (full form),
 * MatView and MatCreateVecs are defined. MatCreateVecs gives VECCUDA vectors when PETSc has
 * CUDA and the operator runs on the GPU (used in place, ordered with PETSc's stream by CUDA
 * events), host vectors otherwise (-vec_type under the prefix overrides); host vectors given
 * to an operator on the GPU are staged through pinned buffers, counted in LatkeStage. */
PetscErrorCode MatCreateLatkeWilsonClover(LatkeGauge gauge, LatkeOperatorForm form, const LatkeWilsonCloverParams *params,
                                          const char prefix[], Mat *A);

/* Staggered parameters; LatkeStaggeredParamsDefault fills the defaults shown. The options
 * database overrides them under the matrix's prefix:
 *   -latke_mass m          M = 2m + D (MILC's convention: D without 1/2), m >= 0     (0.1)
 *   -latke_staggered naive|asqtad   naive (V = U, no Naik term) or asqtad (fat7 + Lepage
 *                          fat links and Naik long links, fattened by Latke)     (asqtad)
 *   -latke_u0 u            tadpole factor of asqtad fattening                    (1.0)
 *   -latke_boundary a,b,c,d  boundary signs per direction, each 1 or -1         (1,1,1,-1)
 *   -latke_twist a,b,c,d   extra boundary phases exp(i pi a), ...               (0,0,0,0)
 *   -latke_parity even|odd the parity the even-odd (normal) operator acts on     (even)
 *   -latke_precision double|single|half  storage of the operator's links        (double)
 *   -latke_reconstruct 18|12  naive: link storage; asqtad: long-link storage (long links at
 *                          12 must be one real multiple of SU(3) matrices; fat links stay
 *                          at 18)                                                (18)
 * Forms: LATKE_OPERATOR_FULL is M = 2m + D on the whole lattice (MatMultHermitianTranspose
 * applies M^H = 2m - D, D being anti-Hermitian); LATKE_OPERATOR_EVEN_ODD is the normal
 * operator A = 4m^2 - D_pq D_qp on parity p, Hermitian positive definite for m > 0 (the
 * matrix carries MAT_HERMITIAN and MAT_SPD): solve it with -ksp_type cg. Around it,
 * MatLatkePrepareSource gives bhat = 2m b_p - D_pq b_q and MatLatkeReconstruct sets
 * x_p = xhat, x_q = (b_q - D_qp xhat) / (2m) (needs m > 0). Vectors have one spin and three
 * colors per site. The formula, the factor convention and how links map onto MILC's are in
 * operators/staggered/staggered.h. */
typedef enum { LATKE_STAGGERED_NAIVE, LATKE_STAGGERED_ASQTAD } LatkeStaggeredType;
typedef struct {
  PetscReal mass;
  LatkeStaggeredType type;
  PetscReal u0;
  PetscScalar boundary_phase[4];
  PetscInt parity;
  LatkePrecision precision;
  PetscInt reconstruct;
} LatkeStaggeredParams;

PetscErrorCode LatkeStaggeredParamsDefault(LatkeStaggeredParams *params);

/* A MATSHELL that owns a staggered operator built from the gauge field's (thin) links: naive
 * uses them as they are, asqtad fattens them (on the GPU when the operator runs there).
 * params may be NULL (defaults); prefix (may be NULL) is the matrix's options prefix.
 * MatMult, MatMultTranspose, MatMultHermitianTranspose, MatGetDiagonal (full form: 2m),
 * MatView and MatCreateVecs are defined. */
PetscErrorCode MatCreateLatkeStaggered(LatkeGauge gauge, LatkeOperatorForm form, const LatkeStaggeredParams *params,
                                       const char prefix[], Mat *A);
/* The same from given fat and long links, held as LatkeGauge handles on one lattice (e.g.
 * LatkeGaugeCreateFromArray; lng may be NULL for a naive operator, whose links are `fat`).
 * The links must be free of staggered and boundary phases: for links from MILC or QUDA,
 * call LatkeGaugeStripStaggeredPhases first. The u0 parameter is not used. */
PetscErrorCode MatCreateLatkeStaggeredFromLinks(LatkeGauge fat, LatkeGauge lng, LatkeOperatorForm form,
                                                const LatkeStaggeredParams *params, const char prefix[], Mat *A);
/* Divide out of MILC- or QUDA-convention links the staggered phase eta_mu(x) and, on links
 * that wrap around the lattice, the boundary phase: hop = 1 for fat (or naive) links, 3 for
 * long links (operators/staggered/staggered.h). In place; operators made earlier from the
 * handle keep their links. */
PetscErrorCode LatkeGaugeStripStaggeredPhases(LatkeGauge links, PetscInt hop, const PetscScalar boundary_phase[4]);

/* A matrix of another form sharing A's operator (no second copy of links or clover). */
PetscErrorCode MatLatkeCreateCompanion(Mat A, LatkeOperatorForm form, Mat *B);
/* A matrix of another form with A's operator held in double precision: A's own operator where
 * A is double, else one built anew from the links (clover terms included), so that a residual
 * checked with it is a double-precision residual whatever precision A stores. */
PetscErrorCode MatLatkeCreateReference(Mat A, LatkeOperatorForm form, Mat *B);
/* Vectors on the whole lattice (for an even-odd A: the full source and solution). */
PetscErrorCode MatLatkeCreateFullVecs(Mat A, Vec *x, Vec *b);
/* bhat, the even-odd system's right-hand side, from the full source b (a copy for the full
 * form). */
PetscErrorCode MatLatkePrepareSource(Mat A, Vec b, Vec bhat);
/* The full solution x from the even-odd solution xhat and the full source b. */
PetscErrorCode MatLatkeReconstruct(Mat A, Vec xhat, Vec b, Vec x);
/* MatMult and MatMultHermitianTranspose applications of A so far (for operator counts). */
PetscErrorCode MatLatkeGetApplications(Mat A, PetscInt *applications);
/* Whether A's applications copy v through pinned host buffers (PETSC_TRUE: v lives on the
 * host and A on the GPU, or the reverse, or v is not aligned for Latke's loads) rather than
 * using it in place. */
PetscErrorCode MatLatkeVecIsStaged(Mat A, Vec v, PetscBool *staged);
/* Whether A is one of Latke's matrices. */
PetscErrorCode MatIsLatke(Mat A, PetscBool *is_latke);

/* ---- Native solvers ------------------------------------------------------------------------ */

/* Latke's own device-resident Krylov solvers on a Latke matrix's system (solvers/solvers.h):
 * mixed precision by reliable updates (the iteration in the sloppy precision, the solution
 * accumulated and the residual recomputed in double; GCR: each cycle of `restart` directions
 * in the sloppy precision, the residual recomputed in double at every restart), converged when the true residual
 * |b - A x| <= tol |b|. CG needs a Hermitian positive definite matrix; CGNE/CGNR solve the
 * normal equations. Options under the prefix override the parameters:
 *   -latke_solver cg|cgne|cgnr|bicgstab|gcr|mr   (bicgstab)
 *   -latke_solver_tol 1e-10, -latke_solver_max_it 10000,
 *   -latke_solver_sloppy double|single|half       (single)
 *   -latke_solver_delta 0.1 (reliable-update factor), -latke_solver_restart 16 (GCR; 32 with
 *                                   the Schwarz preconditioner; 8 in MatLatkeSolveMany with the
 *                                   multigrid)
 *   -latke_solver_deflate 0         GCR: directions kept over each restart, harmonic Ritz
 *                                   vectors nearest zero (deflated restarting; fewer than the
 *                                   restart; a quarter of it by default with the Schwarz
 *                                   preconditioner, one right-hand side at a time;
 *                                   MatLatkeSolveMany then solves column by column)
 *   -latke_solver_pc none|schwarz|mg GCR preconditioned by the Schwarz or the multigrid
 *                                   preconditioner below (their -pc_latke_schwarz_* and
 *                                   -pc_latke_mg_* options), all on the device
 *   -latke_solver_monitor           print the iterated relative residual |r|/|b| at every
 *                                   iteration (rank 0 of A's communicator), as -ksp_monitor does
 * CG iterating in half moves to single for the rest of the solve when a reliable update finds
 * the true residual more than twice the iterated one (half's error as large as the residual:
 * low-mode residuals at light masses); BiCGstab in half does when its iterated residual grows
 * 10^4 times past the last true one, or 500 iterations without a reliable update did not lower
 * the true residual (dropping that segment), or it breaks down right after a restart;
 * fallback_at says when. */
typedef enum {
  LATKE_SOLVER_CG,
  LATKE_SOLVER_CGNE,
  LATKE_SOLVER_CGNR,
  LATKE_SOLVER_BICGSTAB,
  LATKE_SOLVER_GCR,
  LATKE_SOLVER_MR
} LatkeSolverType;

typedef struct {
  LatkeSolverType type;
  PetscReal       tol;
  PetscInt        max_it;
  LatkePrecision  sloppy;
  PetscReal       delta;
  /* GCR's directions per cycle; PETSC_DEFAULT (the default): 16, or 8 in MatLatkeSolveMany
   * with the multigrid */
  PetscInt restart;
  /* GCR in a sloppy precision: a cycle also ends once its residual fell by this factor */
  PetscReal restart_drop;
  /* PETSC_TRUE (the default): x holds the initial guess; PETSC_FALSE: the solve starts from
   * zero and never reads x (as KSPSetInitialGuessNonzero(ksp, PETSC_FALSE)), so a host x is
   * not copied to the device first */
  PetscBool initial_guess_nonzero;
} LatkeSolverParams;

typedef struct {
  PetscInt  iterations;
  PetscInt  reliable_updates;
  PetscInt  outer_applications;  /* of the double-precision operator */
  PetscInt  sloppy_applications; /* of the sloppy one */
  PetscInt fallback_at;          /* CG, BiCGstab: iteration at which it left half for single (-1: never) */
  PetscInt restarts;             /* BiCGstab: fresh starts (biorthogonality lost in the sloppy precision, breakdowns) */
  PetscReal true_residual;
  PetscReal seconds;
  PetscReal gflops;
  PetscBool converged;
  PetscReal pc_setup_seconds; /* building the preconditioner in this call (0: none, or reused) */
} LatkeSolverStats;

PetscErrorCode LatkeSolverParamsDefault(LatkeSolverParams *params);
/* Solve A x = b with a native solver; x holds the initial guess (unless
 * params->initial_guess_nonzero is PETSC_FALSE). stats may be NULL. A solve
 * that does not converge is not an error: stats->converged says so. The multigrid
 * preconditioner (-latke_solver_pc mg) is built at the first call on A with a prefix and kept
 * with A (until MatDestroy) for the next calls with that prefix, as a KSP keeps its PC; it is
 * built again when the multigrid options under the prefix (-pc_latke_mg_*, -latke_mg_*)
 * changed. stats->pc_setup_seconds says whether this call built it. */
PetscErrorCode MatLatkeSolve(Mat A, Vec b, Vec x, const LatkeSolverParams *params, const char prefix[],
                             LatkeSolverStats *stats);
/* Solve A x[i] = b[i] for n right-hand sides (a propagator's 12 spin-colour columns), as
 * MatLatkeSolve would one by one, with its options. With GCR the columns go in sets of at most
 * -latke_solver_set_size (12; at most 32): each column keeps its own Krylov space, but every
 * iteration applies the operator and the preconditioner once for the whole set, so the
 * multigrid (-latke_solver_pc mg) reads links, clover, transfers and coarse blocks once per
 * set. Other solvers solve the columns one after another. x[i] hold the initial guesses
 * (unless params->initial_guess_nonzero is PETSC_FALSE). A set keeps 2 x restart direction
 * fields per column (single precision by default), so with the multigrid the restart is 8
 * unless given, in sets and one by one (12 columns of 32^3x64 with 16 do not fit beside it on
 * an 80 GB GPU); an error names the restart and the set where they do not fit.
 * stats (may be NULL) receives n entries; a column's seconds are its set's, and the
 * preconditioner's setup in this call is in stats[0].pc_setup_seconds alone. */
PetscErrorCode MatLatkeSolveMany(Mat A, PetscInt n, Vec b[], Vec x[], const LatkeSolverParams *params,
                                 const char prefix[], LatkeSolverStats stats[]);
/* Give A the multigrid preconditioner that MatLatkeSolve built for matrix `from` under prefix,
 * rebuilt for A's operator keeping its null vectors: only the coarse operators are made again,
 * as -pc_latke_mg_reuse_interpolation does for the PC. For another kappa, c_sw or gauge field
 * on the same lattice (a few coarse-operator builds instead of a setup). A and `from` must
 * share lattice, process grid, form and backend; `from` no longer holds the preconditioner
 * (its next MatLatkeSolve with -latke_solver_pc mg sets one up anew). The multigrid options
 * under prefix must be those it was built with (else MatLatkeSolve on A builds a new one);
 * -pc_latke_mg_refresh_iterations and _reuse_max_growth apply. Where the null vectors are stale
 * on A's operator (_reuse_max_growth) nothing moves and *reused (may be NULL) is PETSC_FALSE:
 * A's next MatLatkeSolve sets up anew. */
PetscErrorCode MatLatkeReusePreconditioner(Mat A, Mat from, const char prefix[], PetscBool* reused);

/* Solves at several staggered masses: (4 m_i^2 - D_pq D_qp) x_i = b for n masses m_i, on a
 * Latke staggered matrix A in the even-odd form (of any mass: the others are shifts of it).
 * The masses must be given from the lightest to the heaviest, distinct and each > 0; b and
 * the x[i] are vectors of A's parity (MatCreateVecs); x[i] receive the solutions (what they
 * hold on entry is ignored). Converged when every |b - A_i x_i| <= tol |b|. Strategies:
 *   LATKE_MULTIMASS_MULTISHIFT  multi-shift CG for all masses at once in the sloppy precision
 *       (reliable updates on the lightest mass; a mass stops updating once converged), then
 *       each solution refined by mixed-precision CG to its tolerance (as QUDA does)
 *   LATKE_MULTIMASS_SEQUENTIAL  one mixed-precision CG per mass, heaviest first, each started
 *       from the polynomial extrapolation in m^2 of the `extrapolation` nearest solutions
 *       found before it (0: from zero)
 * The first needs two sloppy vectors per mass more than CG; which is faster depends on the
 * masses (latke-bench multimass measures both). Options under the prefix override params:
 *   -latke_multimass multishift|sequential    (multishift)
 *   -latke_multimass_extrapolation k          (4)
 *   -latke_solver_tol, -latke_solver_max_it, -latke_solver_sloppy, -latke_solver_delta  as for
 *       MatLatkeSolve (1e-10, 10000 per solve, single, 0.1)
 * stats and mass_stats (n entries, in the order of the masses) may be NULL. A solve that does
 * not converge is not an error: the stats say so. */
typedef enum { LATKE_MULTIMASS_MULTISHIFT, LATKE_MULTIMASS_SEQUENTIAL } LatkeMultiMassStrategy;

typedef struct {
  LatkeMultiMassStrategy strategy;
  PetscReal              tol;
  PetscInt               max_it;
  LatkePrecision         sloppy;
  PetscReal              delta;
  PetscInt               extrapolation;
} LatkeMultiMassParams;

typedef struct {
  PetscReal mass;
  PetscInt  iterations;        /* multishift: the iteration at which the mass stopped updating;
                                  sequential: its CG's iterations */
  PetscInt  refine_iterations; /* multishift: of the refining CG */
  PetscReal initial_residual;  /* of the multi-shift solution, or of the extrapolated guess */
  PetscReal true_residual;     /* |b - A_i x_i| / |b| at the end, in double */
  PetscInt  fallback_at;       /* its CG's (refinement's) iteration at which it left half for
                                  single, -1: never (see MatLatkeSolve) */
  PetscBool converged;
} LatkeMassStats;

typedef struct {
  PetscInt  iterations;          /* all iterations, refinements included */
  PetscInt  outer_applications;  /* of the double-precision operator */
  PetscInt  sloppy_applications; /* of the sloppy one */
  PetscReal seconds;
  PetscReal gflops;              /* operator flops (QUDA's counting) per second */
  PetscBool converged;           /* every mass */
} LatkeMultiMassStats;

PetscErrorCode LatkeMultiMassParamsDefault(LatkeMultiMassParams *params);
PetscErrorCode MatLatkeSolveMultiMass(Mat A, PetscInt n, const PetscReal masses[], Vec b, Vec x[],
                                      const LatkeMultiMassParams *params, const char prefix[],
                                      LatkeMultiMassStats *stats, LatkeMassStats mass_stats[]);

/* ---- Preconditioners ---------------------------------------------------------------------- */

/* Additive Schwarz on GPU-resident blocks with communication off (preconditioners/schwarz):
 * -pc_type latke_schwarz on a KSP whose preconditioning matrix is a Latke matrix, with
 *   -pc_latke_schwarz_block 8,8,8,8         block extents (even, dividing the local volume)
 *   -pc_latke_schwarz_iterations 4          MR steps per block per application
 *   -pc_latke_schwarz_precision half        double|single|half storage of the block solves
 *   -pc_latke_schwarz_type additive         additive|multiplicative (red-black SAP)
 *   -pc_latke_schwarz_omega 1.0             relaxation weight on each correction
 *   -pc_latke_schwarz_cycles 1              cycles per application, each from the residual
 *                                           of the earlier ones (with communication)
 * Registered by LatkeInitialize; use it under a flexible method (-ksp_type fgmres or gcr). */
#define PCLATKESCHWARZ "latke_schwarz"
PETSC_EXTERN PetscErrorCode PCCreate_LatkeSchwarz(PC pc);
/* The same preconditioner as a PCSHELL: makes pc a PCSHELL applying Latke's Schwarz
 * preconditioner for the Latke matrix A (and sets A as pc's operators; a KSP that owns pc
 * may set its own), set up now, with options read under prefix (the names above,
 * e.g. "-mypc_pc_latke_schwarz_block" for prefix "mypc_"). */
PetscErrorCode PCShellSetLatkeSchwarz(PC pc, Mat A, const char prefix[]);
/* Settings of a latke_schwarz PC from a program, as PETSc's own PCs have them: each sets the
 * default of its option above, which a later PCSetFromOptions (KSPSetFromOptions) lets the
 * command line override, and takes effect at the next set-up. On a PC of another type they do
 * nothing, as PETSc's setters (PetscTryMethod). */
typedef enum { LATKE_SCHWARZ_ADDITIVE, LATKE_SCHWARZ_MULTIPLICATIVE } LatkeSchwarzType;
PetscErrorCode PCLatkeSchwarzSetBlock(PC pc, const PetscInt block[4]);
PetscErrorCode PCLatkeSchwarzSetIterations(PC pc, PetscInt iterations);
PetscErrorCode PCLatkeSchwarzSetType(PC pc, LatkeSchwarzType type);
PetscErrorCode PCLatkeSchwarzSetCycles(PC pc, PetscInt cycles);
PetscErrorCode PCLatkeSchwarzSetPrecision(PC pc, LatkePrecision precision);

/* Adaptive multigrid (preconditioners/mg): -pc_type latke_mg on a KSP whose preconditioning
 * matrix is a Latke Wilson-clover matrix (full or even-odd form), under a flexible method
 * (-ksp_type fgmres or gcr). The hierarchy is built on the device at PCSetUp: null vectors by
 * inverse iteration, chirality split, aggregates, Galerkin coarse operators. Options:
 *   -pc_latke_mg_levels 0                   levels with the fine one (0: 3 if the lattice allows, else 2)
 *   -pc_latke_mg_block 4,4,4,4,2,2,2,2      aggregate extents, X,Y,Z,T per level
 *   -pc_latke_mg_nvec 24,32                 null vectors per level
 *   -pc_latke_mg_precision single           coarse operators' storage per coarse level (double|single|half)
 *   -pc_latke_mg_setup_iterations 100, -pc_latke_mg_setup_tol 1e-6, -pc_latke_mg_setup_solver bicgstab
 *   -pc_latke_mg_setup_restrict false       coarse levels start from the level above's vectors, restricted,
 *   -pc_latke_mg_setup_restrict_iterations 30   and take this many steps from there (per coarse level)
 *   -pc_latke_mg_setup_refine 0             refinement passes with the current hierarchy
 *   -pc_latke_mg_cycle kcycle|vcycle, -pc_latke_mg_seed 1
 *   -pc_latke_mg_verify, -pc_latke_mg_monitor, -pc_latke_mg_save FILE, -pc_latke_mg_load FILE
 *   -pc_latke_mg_reuse_interpolation false  a set-up for a changed matrix keeps the null vectors,
 *   -pc_latke_mg_refresh_iterations 0        refreshed by this many steps per level first,
 *   -pc_latke_mg_reuse_max_growth 1.25       unless they are this much staler there (then anew)
 *   -latke_mg_levels_N_smoother mr|schwarz, _pre_smooth 0, _post_smooth 4, _omega 1,
 *     _ksp_max_it 8, _ksp_rtol 0.25 (K-cycle GCR on level N >= 1), _pc_latke_schwarz_* (N = 0)
 *   -latke_mg_coarse_ksp_rtol 0.25, _ksp_max_it 100, _ksp_gcr_restart 16, _even_odd true
 * Registered by LatkeInitialize. */
#define PCLATKEMG "latke_mg"
PETSC_EXTERN PetscErrorCode PCCreate_LatkeMG(PC pc);
/* With -pc_latke_mg_reuse_interpolation: how many set-ups in a row rebuilt the hierarchy for a new
 * operator keeping its null vectors (0 after a new setup), and the growth of the null vectors'
 * mean |M v|/|v| on the last new operator against the one they were found for (0: not measured).
 * Above -pc_latke_mg_reuse_max_growth (default 1.25) the PC sets up anew instead. Either may be NULL. */
PetscErrorCode PCLatkeMGGetReuse(PC pc, PetscInt* rebuilds, PetscReal* growth);
/* Settings of a latke_mg PC from a program, as PETSc's own PCs have them (PCMGSetLevels, ...):
 * each sets the default of its option, which a later PCSetFromOptions (KSPSetFromOptions) lets
 * the command line override, and the hierarchy is set up again with it at the next PCSetUp. On
 * a PC of another type they do nothing, as PETSc's setters (PetscTryMethod).
 *   PCLatkeMGSetLevels       -pc_latke_mg_levels (0: automatic; else 2 to 5, the fine one included)
 *   PCLatkeMGSetBlocks       -pc_latke_mg_block: n levels' aggregates, X,Y,Z,T each (4n values)
 *   PCLatkeMGSetNullVectors  -pc_latke_mg_nvec: null vectors of n levels (the last repeats)
 *   PCLatkeMGSetCycleType    -pc_latke_mg_cycle
 *   PCLatkeMGSetSmoothing    -latke_mg_levels_N_pre_smooth and _post_smooth of level N
 * PCLatkeMGGetLevels gives the levels of the hierarchy set up (0 before the set-up). */
typedef enum { LATKE_MG_VCYCLE, LATKE_MG_KCYCLE } LatkeMGCycleType;
PetscErrorCode PCLatkeMGSetLevels(PC pc, PetscInt levels);
PetscErrorCode PCLatkeMGSetBlocks(PC pc, PetscInt n, const PetscInt block[]);
PetscErrorCode PCLatkeMGSetNullVectors(PC pc, PetscInt n, const PetscInt nvec[]);
PetscErrorCode PCLatkeMGSetCycleType(PC pc, LatkeMGCycleType type);
PetscErrorCode PCLatkeMGSetSmoothing(PC pc, PetscInt level, PetscInt pre, PetscInt post);
PetscErrorCode PCLatkeMGGetLevels(PC pc, PetscInt* levels);
/* The same preconditioner as a PCSHELL, set up now for the Latke matrix A, options under prefix. */
PetscErrorCode PCShellSetLatkeMG(PC pc, Mat A, const char prefix[]);

/* ---- Vectors ------------------------------------------------------------------------------ */

/* Between a Latke vector of A (full or of A's parity) and this rank's local volume in
 * lexicographic order (site x fastest; per site spin, then color; spin*color complex numbers
 * per site). A parity vector reads and writes only its own sites of the array. */
PetscErrorCode LatkeVecSetLexicographic(Mat A, Vec x, const PetscScalar lex[]);
PetscErrorCode LatkeVecGetLexicographic(Mat A, Vec x, PetscScalar lex[]);

/* Sources. A point source is 1 at one global site, spin and color; a wall source 1 on every
 * site of time slice t for one spin and color; noise sources fill every component with
 * Z2 (+1 or -1) or Z4 (1, i, -1, -i) noise, a function of the seed and the global site, so
 * the same on any process grid. Everything else is zero. */
PetscErrorCode LatkeVecSetPointSource(Mat A, Vec b, const PetscInt site[4], PetscInt spin, PetscInt color);
PetscErrorCode LatkeVecSetWallSource(Mat A, Vec b, PetscInt t, PetscInt spin, PetscInt color);
typedef enum { LATKE_NOISE_Z2, LATKE_NOISE_Z4 } LatkeNoise;
PetscErrorCode LatkeVecSetNoiseSource(Mat A, Vec b, LatkeNoise noise, PetscInt seed);
/* A spin-color diluted noise source: eta(x) at (spin, color) on every site of time slice t
 * (t = -1: every site), zero elsewhere, with eta(x) one Z2 or Z4 number per site, a function of
 * the seed and the global site only, so the same for all 12 dilutions (and on any process
 * grid). The 12 solutions phi_{s,c} contract like a propagator's columns, and their correlator
 * averages the point sources of the slice: E[C_noise(t)] = sum over the slice's sites y of
 * C_y(t) (the one-end trick), gauge invariant in the mean without gauge fixing. */
PetscErrorCode LatkeVecSetDilutedNoiseSource(Mat A, Vec b, LatkeNoise noise, PetscInt seed, PetscInt t,
                                             PetscInt spin, PetscInt color);

/* Save and load a vector in global lexicographic order (independent of the process grid and
 * of the parity layout), with any PETSc viewer that VecView/VecLoad accept: binary, HDF5
 * (when PETSc has it; the dataset is named after the vector), ASCII for viewing. */
PetscErrorCode LatkeVecView(Mat A, Vec x, PetscViewer viewer);
PetscErrorCode LatkeVecLoad(Mat A, Vec x, PetscViewer viewer);
/* Save a full-lattice vector to the file path in PETSc's binary format (no .info file), global
 * lexicographic order: the file LatkeVecView writes with a binary viewer, and LatkeVecLoad
 * reads. The file is written to path.tmp-PID and renamed over path only when every rank's
 * write succeeded and the size is right; a failure on any rank (a full disk, say) fails every
 * rank with one message and leaves an existing path as it was. */
PetscErrorCode LatkeVecSave(Mat A, Vec x, const char path[]);

/* ---- Spectroscopy ------------------------------------------------------------------------- */

/* Meson channels (J^PC), sink / source gamma structure in the DeGrand-Rossi basis:
 *   PION 0-+ g5/g5;  PION_A4 0-+ g4g5/g4g5;  A4_PION g4g5/g5 (the PCAC correlator <A_4 P>);
 *   RHO 1-- gi/gi;  A0 0++ 1/1;  A1 1++ gig5/gig5;  B1 1+- gjgk/gjgk  (i, jk averaged over
 *   the three spatial directions). */
typedef enum {
  LATKE_MESON_PION,
  LATKE_MESON_PION_A4,
  LATKE_MESON_A4_PION,
  LATKE_MESON_RHO,
  LATKE_MESON_A0,
  LATKE_MESON_A1,
  LATKE_MESON_B1
} LatkeMesonChannel;
/* "pion", "pion_a4", "a4_pion", "rho", "a0", "a1", "b1". */
PetscErrorCode LatkeMesonChannelGetName(LatkeMesonChannel channel, const char **name);
/* Zero-momentum meson correlators C(t) = sum_x <O_snk(x, t) O_src(0)^dag> of the propagator
 * whose 12 columns prop[3 s0 + c0] are full-lattice vectors of the Wilson-clover matrix A (the
 * solutions for sources of spin s0 and color c0 at one site or wall of time slice t0), for the
 * n channels: corr[k T + t] for channel k and t = 0 .. T-1 counted from t0. The pion is
 * sum_x |S(x)|^2, positive; the formula and signs are in spectroscopy/mesons.h. Every rank gets
 * them. Collective. */
PetscErrorCode MatLatkeMesonCorrelators(Mat A, const Vec prop[], PetscInt t0, PetscInt n,
                                        const LatkeMesonChannel channels[], PetscScalar corr[]);
/* The same at n_momenta integer momenta momenta[3 m + i] (p_i = 2 pi n_i / L_i, |n_i| <= L_i / 2):
 * C(t, p) = sum_x e^{-i p.(x - x0)} <O_snk(x, t) O_src(x0)^dag> with x0 the source site
 * site[0..2] on slice t0 = site[3]: corr[(k n_momenta + m) T + t]. The columns must come from one
 * site (a point source, smeared or not); at n = 0 the result is MatLatkeMesonCorrelators' bit
 * for bit. Collective. */
PetscErrorCode MatLatkeMesonCorrelatorsMomenta(Mat A, const Vec prop[], const PetscInt site[], PetscInt n_momenta,
                                               const PetscInt momenta[], PetscInt n, const LatkeMesonChannel channels[],
                                               PetscScalar corr[]);
/* Mesons of two quarks (two hopping parameters: a kaon, a heavy-light meson): quark[] the 12
 * columns of the quark's propagator S_1, antiquark[] the antiquark's S_2, from the same source at
 * site (x, y, z, t0), vectors of matrices on one lattice (A: any of them, for the layout):
 * C(t, p) = -sum_x e^{-i p.(x - x0)} Tr[G_snk S_1(x) Gbar_src g5 S_2(x)^dag g5], corr[(k n_momenta
 * + m) T + t] as MatLatkeMesonCorrelatorsMomenta, which it equals bit for bit when S_2 = S_1.
 * Collective. */
PetscErrorCode MatLatkeMesonCorrelatorsPair(Mat A, const Vec quark[], const Vec antiquark[], const PetscInt site[],
                                           PetscInt n_momenta, const PetscInt momenta[], PetscInt n,
                                           const LatkeMesonChannel channels[], PetscScalar corr[]);
/* The same channels at a wall sink: the columns summed over each time slice, S_w(t) = sum_x S(x, t),
 * then contracted as at one site, -Tr[G S_w Gbar g5 S_w^dag g5] (with a gauge-fixed wall source,
 * LatkeVecSetWallSource on LatkeGaugeCreateGaugeFixed links, the wall-wall correlator): corr[k T + t].
 * Collective. */
PetscErrorCode MatLatkeMesonCorrelatorsWallSink(Mat A, const Vec prop[], PetscInt t0, PetscInt n,
                                                const LatkeMesonChannel channels[], PetscScalar corr[]);
/* Nucleon correlators of the propagator of a point (or smeared point) source at site (x, y, z, t0),
 * u and d degenerate: N = eps_abc (u_a^T C g5 d_b) u_c, C = g2 g4, projected with (1 + g4)/2
 * (LATKE_BARYON_NUCLEON: the nucleon forward) and (1 - g4)/2 (LATKE_BARYON_NUCLEON_MINUS), at the
 * n_momenta integer momenta momenta[3 m + i] ((0, 0, 0) at rest; phases as in
 * MatLatkeMesonCorrelatorsMomenta): corr[(k n_momenta + m) T + t], t from t0. Sinks past the time
 * boundary carry the conjugate of its phase cubed, so that C(t) is a source at the origin's; the
 * formula is in spectroscopy/baryons.h. Spatial boundary phases must be 1. Collective. */
typedef enum { LATKE_BARYON_NUCLEON, LATKE_BARYON_NUCLEON_MINUS } LatkeBaryonChannel;
/* "nucleon", "nucleon_minus". */
PetscErrorCode LatkeBaryonChannelGetName(LatkeBaryonChannel channel, const char** name);
PetscErrorCode MatLatkeNucleonCorrelators(Mat A, const Vec prop[], const PetscInt site[], PetscInt n_momenta,
                                          const PetscInt momenta[], PetscScalar corr[]);
/* Both projections at a wall sink (each quark summed over the sink's slice: the columns summed per
 * slice, then contracted as at one site), corr[k T + t]; with a Coulomb-gauge-fixed wall source,
 * the wall-wall nucleon. Collective. */
PetscErrorCode MatLatkeNucleonCorrelatorsWallSink(Mat A, const Vec prop[], PetscInt t0, PetscScalar corr[]);
/* The 12 columns of a propagator (full-lattice vectors of A) saved or loaded with a PETSc
 * viewer, each in global lexicographic order (LatkeVecView / LatkeVecLoad) under the name
 * s<spin>_c<color> of its source: in an HDF5 viewer, datasets s0_c0 ... s3_c2 of the viewer's
 * current group (PetscViewerHDF5PushGroup). The vectors' own names are kept. */
PetscErrorCode LatkePropagatorView(Mat A, const Vec prop[], PetscViewer viewer);
PetscErrorCode LatkePropagatorLoad(Mat A, Vec prop[], PetscViewer viewer);

/* ---- Smearing ---------------------------------------------------------------------------- */

/* Link smearing, `steps` steps that each update all smeared links at once (formulas in
 * src/fields/link_smearing.h):
 *   APE    U' = P_SU(3)[(1 - alpha) U + alpha / n S], S the sum of the n staples (4 in the
 *          spatial planes, 6 in all), P_SU(3) the nearest SU(3) matrix; alpha in [0, 1]
 *   stout  U' = exp(iQ) U with Q from rho S U^dag (Morningstar-Peardon), rho = alpha
 * With spatial = PETSC_TRUE only x, y and z links are smeared, from spatial staples, and the
 * time links are kept (what smeared sources use). A new gauge on the same lattice; collective. */
typedef enum { LATKE_LINK_SMEAR_NONE, LATKE_LINK_SMEAR_APE, LATKE_LINK_SMEAR_STOUT } LatkeLinkSmear;
PetscErrorCode LatkeGaugeCreateSmeared(LatkeGauge gauge, LatkeLinkSmear type, PetscInt steps, PetscReal alpha,
                                       PetscBool spatial, LatkeGauge* smeared);
/* Gauge fixing (src/fields/gauge_fixing.h): the links transformed to the Coulomb gauge
 * (sum_i d_i A_i = 0 on every time slice; what gauge-fixed wall sources need) or the Landau gauge
 * (sum_mu d_mu A_mu = 0), until theta = (1/3V) sum_x tr[Delta Delta^dag] < tol (Delta the
 * lattice divergence of A) or max_iter iterations. Methods: FOURIER, Fourier-accelerated
 * conjugate gradient with a line search whose first trial step is alpha in (0, 2) (PETSC_DEFAULT:
 * 1), where no local extent of a fixed direction has a prime factor above 13; OVERRELAX,
 * overrelaxation with omega in [1, 2) (PETSC_DEFAULT: 1.7); AUTO, FOURIER where it can run, else
 * OVERRELAX. A
 * new gauge on the same lattice. info (may be NULL) receives the iterations, theta, the
 * functional (1 for unit links), whether theta < tol and the method that ran; without info, not
 * converging is an error naming theta. Collective. */
typedef enum { LATKE_GAUGE_FIX_COULOMB, LATKE_GAUGE_FIX_LANDAU } LatkeGaugeFix;
typedef enum { LATKE_GAUGE_FIX_AUTO, LATKE_GAUGE_FIX_FOURIER, LATKE_GAUGE_FIX_OVERRELAX } LatkeGaugeFixMethod;
typedef struct {
  PetscInt iterations;
  PetscReal theta, functional;
  PetscBool converged;
  LatkeGaugeFixMethod method;
} LatkeGaugeFixInfo;
PetscErrorCode LatkeGaugeCreateGaugeFixed(LatkeGauge gauge, LatkeGaugeFix type, LatkeGaugeFixMethod method,
                                          PetscReal tol, PetscInt max_iter, PetscReal omega, PetscReal alpha,
                                          LatkeGauge* fixed, LatkeGaugeFixInfo* info);
/* Quark smearing on time slices with the spatial links of a gauge (usually smeared ones), `steps`
 * steps of (H psi(x) = sum_i U_i(x) psi(x+i) + U_i(x-i)^dag psi(x-i), i = x, y, z):
 *   WUPPERTAL  psi <- (psi + alpha H psi) / (1 + 6 alpha)
 *   GAUSSIAN   psi <- psi + (alpha^2 / (4 steps)) (H - 6) psi   (alpha = omega, the width)
 * A smearer holds the links on A's backend; LatkeSmearerApply smears a full-lattice vector of
 * the Wilson-clover matrix A in place (collective): every time slice (t = -1), or only global
 * slice t, the others left as they are (a source on slice t, smeared at 1/T of the cost). A propagator from a smeared
 * source, smeared at the sink column by column, contracts with MatLatkeMesonCorrelators as a point one. */
typedef enum { LATKE_QUARK_SMEAR_NONE, LATKE_QUARK_SMEAR_WUPPERTAL, LATKE_QUARK_SMEAR_GAUSSIAN } LatkeQuarkSmear;
typedef struct _p_LatkeSmearer* LatkeSmearer;
PetscErrorCode MatLatkeSmearerCreate(Mat A, LatkeGauge links, LatkeQuarkSmear type, PetscInt steps, PetscReal alpha,
                                     LatkeSmearer* smearer);
PetscErrorCode LatkeSmearerApply(LatkeSmearer smearer, Vec x, PetscInt t);
PetscErrorCode LatkeSmearerDestroy(LatkeSmearer* smearer);

/* Host<->device staging copies of whole vectors made on this rank so far (zero when the
 * vectors live where the operator runs). */
PetscErrorCode LatkeGetStagingCounts(PetscInt *to_device, PetscInt *to_host);

#ifdef __cplusplus
}
#endif

#endif /* LATKE_LATKE_H */
