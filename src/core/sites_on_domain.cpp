// Where each rank's sites lie on a coarser distribution of the lattice (sites_on_domain.h).
#include "src/core/sites_on_domain.h"

#include "src/core/error.h"
#include "src/core/indexing.h"

namespace latke {

std::vector<int> sites_on_domain(const Lattice& part, const Lattice& onto, MPI_Comm group) {
  require(onto.global() == part.global(), "sites on a coarser distribution: ", onto.describe(), " is not ",
          part.describe(), " on fewer ranks");
  int ranks = 1;
  MPI_Comm_size(group, &ranks);
  const int vcb = part.volume_cb();
  std::vector<int> offsets(4 * static_cast<std::size_t>(ranks));
  MPI_Allgather(part.offset().data(), 4, MPI_INT, offsets.data(), 4, MPI_INT, group);
  const LocalGeometry pg = LocalGeometry::of(part), og = LocalGeometry::of(onto);
  const Coords lo = onto.offset(), n = onto.local();
  std::vector<int> map(static_cast<std::size_t>(ranks) * 2 * vcb);
  for (int r = 0; r < ranks; ++r)
    for (int p = 0; p < 2; ++p)
      for (int x = 0; x < vcb; ++x) {
        int c[4];
        pg.coords(x, p, c);
        for (int mu = 0; mu < 4; ++mu) {
          c[mu] += offsets[4 * static_cast<std::size_t>(r) + mu] - lo[mu];
          require(c[mu] >= 0 && c[mu] < n[mu], "sites on a coarser distribution: a part of ", part.describe(),
                  " lies outside this rank's part of ", onto.describe());
        }
        map[(static_cast<std::size_t>(r) * 2 + p) * vcb + x] = og.full_index(c) / 2;
      }
  return map;
}

}  // namespace latke
