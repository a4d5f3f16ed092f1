// The distributed lattice: global extents, the 4-D process grid, this rank's local extents
// and position, and checkerboard (even-odd) indexing of local sites.
//
// Checkerboard index: a local site (x,y,z,t) has lexicographic index
//   full = ((t*Lz + z)*Ly + y)*Lx + x and x_cb = full / 2,
// its parity is (x+y+z+t) mod 2. Local extents are even, so every rank's origin has even
// global coordinates and local parity equals global parity.
#pragma once

#include <array>
#include <string>

#include <mpi.h>

namespace latke {

using Coords = std::array<int, 4>;

class Lattice {
 public:
  /// @brief Distribute a lattice of global extents over the ranks of comm.
  /// @param grid ranks per dimension; all zeros: chosen (largest local extents split first).
  /// Fails, naming the value, when the grid does not match the communicator size, an extent
  /// does not divide, or a local extent is odd.
  Lattice(MPI_Comm comm, const Coords& global, const Coords& grid = {0, 0, 0, 0});
  ~Lattice();
  Lattice(const Lattice&) = delete;
  Lattice& operator=(const Lattice&) = delete;

  const Coords& global() const { return global_; }
  const Coords& local() const { return local_; }
  const Coords& grid() const { return grid_; }
  /// This rank's coordinates in the process grid.
  const Coords& grid_coords() const { return grid_coords_; }
  /// Global coordinates of this rank's local origin.
  const Coords& offset() const { return offset_; }
  /// True when dimension mu is split over more than one rank (its hops need halo exchange).
  bool partitioned(int mu) const { return grid_[mu] > 1; }
  /// Rank of the neighbour in direction mu (dir = +1 forward, -1 backward).
  int neighbour(int mu, int dir) const { return dir > 0 ? fwd_[mu] : bwd_[mu]; }

  long volume() const { return volume_; }
  int volume_cb() const { return static_cast<int>(volume_ / 2); }
  /// Sites of one parity on the face of dimension mu (local volume / (2 L_mu)).
  int face_volume_cb(int mu) const { return static_cast<int>(volume_ / (2 * local_[mu])); }

  MPI_Comm comm() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }

  /// Local coordinates and parity from a lexicographic local index.
  Coords coords_of(long full) const;
  /// "16x16x16x32 on 1x1x2x2 ranks" for reports.
  std::string describe() const;

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  Coords global_{}, local_{}, grid_{}, grid_coords_{}, offset_{}, fwd_{}, bwd_{};
  long volume_ = 0;
};

/// @brief "a,b,c,d", as options take them.
std::string coords_text(const Coords& c);

/// @brief Parse "a,b,c,d" into four positive integers; what names the option in errors.
Coords parse_coords(const std::string& text, const std::string& what);

/// @brief Choose a process grid for nranks on a lattice of global extents: each prime factor
/// of nranks (largest first) splits the dimension with the largest local extent that stays
/// even; on ties the dimension split less so far, then t before z before y before x.
Coords choose_grid(const Coords& global, int nranks);

}  // namespace latke
