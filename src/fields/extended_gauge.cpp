#include "latke/fields/extended_gauge.h"

#include <algorithm>

#include <mpi.h>

#include "latke/core/error.h"

namespace latke {

std::vector<Complex<double>> extended_gauge(const Lattice& lat, const std::vector<Complex<double>>& local, int depth) {
  const Coords L = lat.local();
  const int d = depth;
  const Coords E{L[0] + 2 * d, L[1] + 2 * d, L[2] + 2 * d, L[3] + 2 * d};
  require(local.size() == static_cast<std::size_t>(lat.volume()) * 36, "extended_gauge: host array has ",
          local.size(), " complex numbers, expected ", lat.volume() * 36);
  for (int mu = 0; mu < 4; ++mu)
    require(d >= 1 && L[mu] >= d, "extended_gauge: depth ", d, " needs local extents of at least ", d,
            ", but the local extent in dimension ", mu, " is ", L[mu]);
  const long ext_volume = static_cast<long>(E[0]) * E[1] * E[2] * E[3];
  std::vector<Complex<double>> ext(ext_volume * 36);
  auto ext_index = [&](const Coords& c) { return ((static_cast<long>(c[3]) * E[2] + c[2]) * E[1] + c[1]) * E[0] + c[0]; };
  for (long s = 0; s < lat.volume(); ++s) {
    Coords c = lat.coords_of(s);
    for (int mu = 0; mu < 4; ++mu) c[mu] += d;
    std::copy(local.begin() + s * 36, local.begin() + (s + 1) * 36, ext.begin() + ext_index(c) * 36);
  }
  for (int mu = 0; mu < 4; ++mu) {
    const long slab_sites = ext_volume / E[mu];
    std::vector<Complex<double>> send(slab_sites * 36), recv(slab_sites * 36);
    auto for_slab = [&](int x_mu, auto&& f) {
      long k = 0;
      Coords c;
      for (c[3] = 0; c[3] < E[3]; ++c[3])
        for (c[2] = 0; c[2] < E[2]; ++c[2])
          for (c[1] = 0; c[1] < E[1]; ++c[1])
            for (c[0] = 0; c[0] < E[0]; ++c[0]) {
              if (c[mu] != x_mu) continue;
              f(ext_index(c), k++);
            }
    };
    // Forward halo slices (x_mu = L+d+j) are the next rank's first slices (ext d+j); backward
    // halo slices (x_mu = j) the previous rank's last ones (ext L+j), j = 0..d-1.
    for (int dir : {+1, -1})
      for (int j = 0; j < d; ++j) {
        const int src_slice = dir > 0 ? d + j : L[mu] + j;
        const int dst_slice = dir > 0 ? L[mu] + d + j : j;
        for_slab(src_slice, [&](long e, long k) { std::copy_n(ext.begin() + e * 36, 36, send.begin() + k * 36); });
        const int count = static_cast<int>(send.size() * 2);
        MPI_Sendrecv(send.data(), count, MPI_DOUBLE, lat.neighbour(mu, -dir), mu, recv.data(), count, MPI_DOUBLE,
                     lat.neighbour(mu, dir), mu, lat.comm(), MPI_STATUS_IGNORE);
        for_slab(dst_slice, [&](long e, long k) { std::copy_n(recv.begin() + k * 36, 36, ext.begin() + e * 36); });
      }
  }
  return ext;
}

}  // namespace latke
