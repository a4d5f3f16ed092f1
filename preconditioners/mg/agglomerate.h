// Agglomeration of a multigrid level (as PETSc's PCTELESCOPE and PCREDUNDANT gather a coarse
// problem): a level whose lattice is spread over several ranks is gathered whole onto every
// one of them, a lattice of its own on MPI_COMM_SELF. Each rank then runs that level and the
// levels below it alone, the same work on every rank, with no halo exchange or reduction
// across ranks; the level can be coarsened past what its local extents allowed and solved
// directly on one GPU. The only communication is one all-gather of the level's right-hand side
// per visit from the level above; the correction goes back up without any (each rank takes its
// own sites of the whole).
#pragma once

#include <memory>
#include <vector>

#include "src/core/lattice.h"
#include "src/core/memory.h"
#include "src/fields/color_spinor_field.h"

namespace latke::mg {

class Agglomeration {
 public:
  /// @param part the level's lattice, spread over the ranks of its communicator.
  /// @param backend where the level's fields live (the site maps are put there).
  Agglomeration(std::shared_ptr<const Lattice> part, Backend backend);

  const std::shared_ptr<const Lattice>& part() const { return part_; }
  /// The same global lattice on this rank alone.
  const std::shared_ptr<const Lattice>& whole() const { return whole_; }
  /// Ranks that each hold a copy of the whole level.
  int copies() const { return part_->size(); }

  /// @brief whole = every rank's `part`, placed at its sites. Collective over part()'s
  /// communicator. Full fields in double or single (coarse fields), of one shape.
  void gather(ColorSpinorField& whole, const ColorSpinorField& part);
  /// @brief gather for every field of two sets (ColorSpinorField::make_set) of equal size, in
  /// one all-gather for the set.
  void gather_set(std::vector<ColorSpinorField>& whole, const std::vector<ColorSpinorField>& part);
  /// @brief part = this rank's sites of `whole`; no communication.
  void scatter(ColorSpinorField& part, const ColorSpinorField& whole);
  /// Bytes one gather moves into each rank (every rank's part).
  std::size_t gather_bytes(const ColorSpinorField& part) const { return part.bytes() * part_->size(); }

 private:
  void check(const ColorSpinorField& whole, const ColorSpinorField& part, const char* what) const;
  /// out(parity, x) = in's site map[parity * out's volume_cb + x] (see PlaceKernel); in holds
  /// `fields` fields per rank's chunk (all-gathered sets), out takes the first.
  void place(ColorSpinorField& out, const void* in, int in_vcb, const int* map, int fields = 1);
  /// All-gathers `bytes` from `from` (device or host) into everyone's buffer; returns it.
  const void* all_gather(const void* from, std::size_t bytes);

  std::shared_ptr<const Lattice> part_, whole_;
  Backend backend_;
  Buffer gather_map_;   ///< per whole (parity, site): rank * part volume_cb + the site there
  Buffer scatter_map_;  ///< per part (parity, site): the site in the whole lattice
  Buffer stage_, stage_all_, device_all_;  ///< host staging (this rank's, everyone's) and everyone's on the device
};

}  // namespace latke::mg
