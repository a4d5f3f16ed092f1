// What the MPI tier's tests share: activating the backend on every rank, a rank's part of a
// whole-lattice array, and differences summed over ranks.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "src/core/backend.h"
#include "src/core/complex.h"
#include "src/core/lattice.h"
#include "src/fields/random.h"

namespace latke::test {

/// The default backend, activated on this rank (one device per rank, round robin).
inline Backend mpi_backend() {
  const Backend b = default_backend();
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  activate_backend(b, rank);
  return b;
}

/// This rank's part (lexicographic over its local volume) of a global lexicographic array of
/// per_site numbers per site.
inline std::vector<Complex<double>> local_part(const Lattice& lat, const std::vector<Complex<double>>& global,
                                               int per_site) {
  std::vector<Complex<double>> out(lat.volume() * per_site);
  for (long s = 0; s < lat.volume(); ++s) {
    const std::uint64_t g = global_site(lat, s);
    std::copy_n(global.begin() + g * per_site, per_site, out.begin() + s * per_site);
  }
  return out;
}

/// ||a - b|| / ||b|| with both norms summed over the ranks of MPI_COMM_WORLD.
inline double global_rel_diff(const std::vector<Complex<double>>& a, const std::vector<Complex<double>>& b) {
  double loc[2] = {0, 0}, glob[2];
  for (std::size_t i = 0; i < a.size(); ++i) {
    loc[0] += norm2(a[i] - b[i]);
    loc[1] += norm2(b[i]);
  }
  MPI_Allreduce(loc, glob, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return std::sqrt(glob[0] / glob[1]);
}

}  // namespace latke::test
