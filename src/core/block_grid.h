// A rank's local volume cut into blocks of equal extents (Schwarz domains, aligned at the
// rank's origin): one block's geometry, the blocks' red-black colouring over the global block
// grid, and where a block's sites are on the rank. Block origins are even, so a site's parity
// within its block is its parity on the rank.
#pragma once

#include "src/core/indexing.h"
#include "src/core/lattice.h"
#include "src/core/macros.h"

namespace latke {

struct BlockGrid {
  LocalGeometry rank, blk;  ///< the rank's local volume; one block (volume_cb: sites per parity)
  int nb[4];                ///< blocks per dimension
  int origin_sum;           ///< the global block coordinates of the rank's first block, summed

  /// @brief The blocks of extents `block` (dividing lat's local extents) on lat.
  static BlockGrid of(const Lattice& lat, const Coords& block) {
    BlockGrid g;
    g.rank = LocalGeometry::of(lat);
    long volume = 1;
    g.origin_sum = 0;
    for (int mu = 0; mu < 4; ++mu) {
      g.blk.L[mu] = block[mu];
      g.nb[mu] = lat.local()[mu] / block[mu];
      g.origin_sum += lat.offset()[mu] / block[mu];
      volume *= block[mu];
    }
    g.blk.volume_cb = static_cast<int>(volume / 2);
    return g;
  }
  int count() const { return nb[0] * nb[1] * nb[2] * nb[3]; }

  /// Block index and colour of the site at rank coordinates c.
  LATKE_HOST_DEVICE LATKE_INLINE int block_of(const int (&c)[4], int& colour) const {
    int b = 0, sum = 0;
    for (int mu = 3; mu >= 0; --mu) {
      const int bc = c[mu] / blk.L[mu];
      b = b * nb[mu] + bc;
      sum += bc;
    }
    colour = (sum + origin_sum) & 1;  // red-black over the global block grid
    return b;
  }
  /// The origin of block b in rank coordinates; returns the block's colour.
  LATKE_HOST_DEVICE LATKE_INLINE int origin(int b, int (&o)[4]) const {
    int sum = origin_sum;
    for (int mu = 0; mu < 4; ++mu) {
      const int bc = b % nb[mu];
      b /= nb[mu];
      o[mu] = bc * blk.L[mu];
      sum += bc;
    }
    return sum & 1;
  }
  /// The rank's x_cb of site i of parity `parity` of the block at origin o.
  LATKE_HOST_DEVICE LATKE_INLINE int rank_cb(const int (&o)[4], int i, int parity) const {
    int c[4];
    blk.coords(i, parity, c);
    for (int mu = 0; mu < 4; ++mu) c[mu] += o[mu];
    return rank.full_index(c) >> 1;
  }
};

}  // namespace latke
