// Agglomeration of a multigrid level (as PETSc's PCTELESCOPE and PCREDUNDANT place a coarse
// problem): a level whose lattice is spread over P ranks is gathered onto k of them (k divides
// P; down to one), and P / k copies of it run side by side, each copy on a communicator of k
// ranks. The ranks whose parts make up one part of the k-rank lattice form a group of P / k;
// each visit from the level above all-gathers the level's right-hand side within the groups,
// and the correction goes back up without communication (each rank takes its own sites of its
// part). On k ranks the level exchanges halos and sums over those k only; gathered onto one
// (the whole level on every rank, a lattice on a communicator of its own) it needs neither and
// can be coarsened past what the spread local extents allowed and solved directly on one GPU.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "src/core/lattice.h"
#include "src/core/memory.h"
#include "src/fields/color_spinor_field.h"

namespace latke::mg {

/// @brief The process grid of `global` on `ranks` ranks that merges blocks of `grid` (a grid of
/// the same lattice): each extent of the result divides that of `grid`, and the thinnest local
/// extents merge first (on a tie the lower dimension), so that a split in t is kept longest.
/// Fails naming the grid and the rank count where `ranks` does not divide the grid's count
/// (any divisor can be merged).
Coords telescope_grid(const Coords& global, const Coords& grid, int ranks);

class Agglomeration {
 public:
  /// @param part the level's lattice, spread over the ranks of its communicator.
  /// @param backend where the level's fields live (the site maps are put there).
  /// @param ranks the ranks each copy of the level lives on (telescope_grid); 1: the whole
  ///   level on every rank. Collective over part's communicator.
  Agglomeration(std::shared_ptr<const Lattice> part, Backend backend, int ranks = 1);
  ~Agglomeration();
  Agglomeration(const Agglomeration&) = delete;
  Agglomeration& operator=(const Agglomeration&) = delete;

  const std::shared_ptr<const Lattice>& part() const { return part_; }
  /// The same global lattice on ranks() ranks: this rank's copy of the level.
  const std::shared_ptr<const Lattice>& onto() const { return onto_; }
  /// Ranks a copy of the level lives on.
  int ranks() const { return onto_->size(); }
  /// Copies of the level side by side: part's ranks / ranks().
  int copies() const { return part_->size() / onto_->size(); }
  /// The ranks whose parts make up this rank's part of onto() (copies() of them).
  MPI_Comm group() const { return group_; }
  /// "whole onto each of the 16 ranks", "onto 4 ranks (grid 1,1,1,4), 4 copies", counting the
  /// copies over all `world` ranks (more than part()'s where the level above is a copy itself).
  std::string where(int world) const;

  /// @brief whole = the group's `part`s, placed at their sites of this rank's part of onto().
  /// Collective over group(). Full fields in double or single (coarse fields), of one shape.
  void gather(ColorSpinorField& whole, const ColorSpinorField& part);
  /// @brief gather for every field of two sets (ColorSpinorField::make_set) of equal size, in
  /// one all-gather for the set.
  void gather_set(std::vector<ColorSpinorField>& whole, const std::vector<ColorSpinorField>& part);
  /// @brief part = this rank's sites of `whole` (a field on onto()); no communication.
  void scatter(ColorSpinorField& part, const ColorSpinorField& whole);
  /// Bytes one gather moves into each rank (its group's parts).
  std::size_t gather_bytes(const ColorSpinorField& part) const { return part.bytes() * copies(); }

 private:
  void check(const ColorSpinorField& whole, const ColorSpinorField& part, const char* what) const;
  /// out(parity, x) = in's site map[parity * out's volume_cb + x] (see PlaceKernel); in holds
  /// `fields` fields per rank's chunk (all-gathered sets), out takes the first.
  void place(ColorSpinorField& out, const void* in, int in_vcb, const int* map, int fields = 1);
  /// All-gathers `bytes` from `from` (device or host) over the group into one buffer; returns it.
  const void* all_gather(const void* from, std::size_t bytes);

  std::shared_ptr<const Lattice> part_, onto_;
  Backend backend_;
  MPI_Comm group_ = MPI_COMM_NULL;
  Buffer gather_map_;                      ///< per onto (parity, site): group rank * part volume_cb + the site there
  Buffer scatter_map_;                     ///< per part (parity, site): the site in this rank's part of onto
  Buffer stage_, stage_all_, device_all_;  ///< host staging (this rank's, the group's) and the group's on the device
};

}  // namespace latke::mg
