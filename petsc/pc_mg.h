// The multigrid preconditioner's options and its preconditioner on a Latke matrix, shared by
// the PETSc PC (-pc_type latke_mg, PCShellSetLatkeMG) and the native GCR (MatLatkeSolve with
// -latke_solver_pc mg). Options, under the PC's (or the solve's) prefix:
//   -pc_latke_mg_levels, _block, _nvec, _precision, _setup_iterations, _setup_tol,
//   _setup_solver, _setup_precision, _setup_even_odd, _setup_batch, _setup_refine, _cycle,
//   _seed, _verify, _monitor, _save, _load, _reuse_interpolation, _refresh_iterations,
//   _reuse_max_growth;
//   -latke_mg_levels_N_{smoother, pre_smooth, post_smooth, omega, ksp_max_it, ksp_rtol,
//   pc_latke_schwarz_*} for level N (0: the fine level);
//   -latke_mg_coarse_{ksp_rtol, ksp_max_it, ksp_gcr_restart, even_odd} for the coarsest.
#pragma once

#include <petscmat.h>

#include <memory>
#include <string>
#include <vector>

#include "preconditioners/mg/mg.h"

namespace latke::mg {

struct MultigridOptions {
  MultigridParam param;
  bool verify = false, monitor = false;
  /// No progress lines at all (without -pc_latke_mg_monitor a set-up that has run 2 s prints
  /// one line per level).
  bool quiet = false;
  /// A later set-up (the operator changed: another kappa, c_sw or gauge field on the same
  /// lattice) keeps the null vectors and rebuilds only the coarse operators (Multigrid::update).
  bool reuse_interpolation = false;
  /// Per level, inverse-iteration steps that refresh the kept null vectors in such a set-up
  /// (0: kept bit for bit); read at every set-up.
  std::vector<int> refresh;
  /// Such a set-up sets up anew instead where the kept null vectors are stale on the new operator:
  /// Multigrid::nullness_growth above this (0: never). The growth stays near 1 for another kappa
  /// on the same configuration, where the rebuild pays, and exceeds 2 on the next configuration
  /// of a heat-bath chain, where a rebuilt hierarchy stalls the solve (docs/multigrid.md).
  double reuse_max_growth = 1.25;
  std::string save, load;
};

/// What a program set on a latke_mg PC (PCLatkeMGSetLevels, ...; latke.h): the defaults of the
/// options of the same meaning, which override them, as PETSc's setters and options do.
struct MultigridSettings {
  long levels = 0;                            ///< -pc_latke_mg_levels (0: automatic)
  std::vector<long> block;                    ///< -pc_latke_mg_block, 4 per level (empty: automatic)
  std::vector<long> nvec;                     ///< -pc_latke_mg_nvec (empty: its default)
  std::string cycle;                          ///< -pc_latke_mg_cycle (empty: its default)
  std::vector<long> pre_smooth, post_smooth;  ///< per level, -1: the option's default
};

/// @brief Read the options above under prefix for a hierarchy on the fine lattice, with the
/// defaults a program set (`set`, may be null); bad values fail naming the option, the value
/// and what was expected.
MultigridOptions multigrid_options(MPI_Comm comm, const char* prefix, const Lattice& fine,
                                   const MultigridSettings* set = nullptr);

}  // namespace latke::mg

namespace latke::petsc {

/// @brief The multigrid preconditioner of Latke matrix A in its form, set up now (options
/// under prefix); progress and verification lines go to PetscPrintf on A's communicator.
std::unique_ptr<Preconditioner> make_multigrid(Mat A, const char* prefix);
/// What an attempt to rebuild a multigrid for a new operator keeping its null vectors did.
struct MultigridUpdate {
  bool done = false;  ///< rebuilt for the new operator
  double growth = 0;  ///< Multigrid::nullness_growth on the new operator (0: not measured)
  std::string why;    ///< why not, when not done
  /// Not done because the null vectors are stale there (the growth, measured, above the limit):
  /// every other refusal comes before the growth is measured.
  bool stale() const { return !done && growth > 0; }
};

/// @brief Rebuild k, a multigrid make_multigrid made, for Latke matrix A's operator keeping
/// its null vectors (Multigrid::update; -pc_latke_mg_monitor, _verify, _refresh_iterations and
/// _reuse_max_growth under prefix apply). Not done, leaving k as it was, where k is not such a
/// multigrid, A's form, lattice, process grid, parity or backend differ from its matrix's, or
/// the null vectors are stale on A's operator (stale).
MultigridUpdate update_multigrid(Preconditioner& k, Mat A, const char* prefix);

}  // namespace latke::petsc
