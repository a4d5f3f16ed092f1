// Where each rank's sites lie on the whole lattice (sites_on_whole.h).
#include "src/core/sites_on_whole.h"

#include <mpi.h>

#include "src/core/error.h"
#include "src/core/indexing.h"

namespace latke {

std::vector<int> sites_on_whole(const Lattice& part, const Lattice& whole) {
  require(whole.size() == 1 && whole.global() == part.global(), "sites on the whole lattice: ", whole.describe(),
          " is not ", part.describe(), " on one rank");
  const int ranks = part.size(), vcb = part.volume_cb();
  std::vector<int> offsets(4 * ranks);
  MPI_Allgather(part.offset().data(), 4, MPI_INT, offsets.data(), 4, MPI_INT, part.comm());
  const LocalGeometry pg = LocalGeometry::of(part), wg = LocalGeometry::of(whole);
  std::vector<int> map(static_cast<std::size_t>(ranks) * 2 * vcb);
  for (int r = 0; r < ranks; ++r)
    for (int p = 0; p < 2; ++p)
      for (int x = 0; x < vcb; ++x) {
        int c[4];
        pg.coords(x, p, c);
        for (int mu = 0; mu < 4; ++mu) c[mu] += offsets[4 * r + mu];
        map[(static_cast<std::size_t>(r) * 2 + p) * vcb + x] = wg.full_index(c) / 2;
      }
  return map;
}

}  // namespace latke
