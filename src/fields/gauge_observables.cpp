// Gauge observables (gauge_observables.h): one reduction kernel over the sites for the
// plaquettes, link trace and unitarity, and one kernel over the spatial sites for the
// rank-local parts of the Polyakov lines, which the ranks along t then multiply in order.
#include <mpi.h>

#include <vector>

#include "src/fields/gauge_measure.h"
#include "src/fields/su3_update.h"
#include "src/core/launch.h"

namespace latke {
namespace gauge {

namespace {

/// Sums over sites, except `unitarity`, the largest value.
struct ObservableSums {
  double plaquette_spatial = 0, plaquette_temporal = 0, link_trace = 0, unitarity = 0;
  LATKE_HOST_DEVICE ObservableSums& operator+=(const ObservableSums& o) {
    plaquette_spatial += o.plaquette_spatial;
    plaquette_temporal += o.plaquette_temporal;
    link_trace += o.link_trace;
    unitarity = fmax(unitarity, o.unitarity);
    return *this;
  }
};

struct SiteObservablesKernel {
  ExtLinks ext;
  LocalGeometry geom;
  LATKE_HOST_DEVICE ObservableSums operator()(int x_cb, int parity) const {
    int c[4];
    geom.coords(x_cb, parity, c);
    const long e = ext.index_of_local(c);
    ObservableSums s;
    M3 u[4];
    LATKE_UNROLL for (int mu = 0; mu < 4; ++mu) {
      ext.load(e, mu, u[mu]);
      s.link_trace += u[mu].e[0][0].re + u[mu].e[1][1].re + u[mu].e[2][2].re;
      s.unitarity = fmax(s.unitarity, unitarity_deviation(u[mu]));
    }
    LATKE_UNROLL for (int mu = 0; mu < 3; ++mu) LATKE_UNROLL for (int nu = mu + 1; nu < 4; ++nu) {
      // Re tr(U_mu(x) U_nu(x+mu) [U_nu(x) U_mu(x+nu)]^dag)
      M3 a, b;
      ext.load(e + ext.stride[mu], nu, a);
      ext.load(e + ext.stride[nu], mu, b);
      const double p = re_tr_mul_adj(u[mu] * a, u[nu] * b);
      if (nu < 3)
        s.plaquette_spatial += p;
      else
        s.plaquette_temporal += p;
    }
    return s;
  }
};

/// Product of U_t over this rank's t extent, for each spatial site i (x fastest).
struct LocalPolyakovKernel {
  ExtLinks ext;
  int L[4];
  Complex<double>* out;
  LATKE_HOST_DEVICE void operator()(int i, int) const {
    int c[4] = {i % L[0], (i / L[0]) % L[1], i / (L[0] * L[1]), 0};
    const long e0 = ext.index_of_local(c);
    M3 p;
    ext.load(e0, 3, p);
    for (int t = 1; t < L[3]; ++t) {
      M3 u;
      ext.load(e0 + t * ext.stride[3], 3, u);
      p = p * u;
    }
    for (int k = 0; k < 9; ++k) out[static_cast<long>(i) * 9 + k] = p.e[k / 3][k % 3];
  }
};

Complex<double> polyakov_loop(const ExtendedLinks& links) {
  const Lattice& lat = links.lattice();
  const Coords& L = lat.local();
  const int n = L[0] * L[1] * L[2];
  Buffer dev(memory_for(links.backend()), static_cast<std::size_t>(n) * 9 * sizeof(Complex<double>));
  LocalPolyakovKernel k{links.view(), {L[0], L[1], L[2], L[3]}, static_cast<Complex<double>*>(dev.data())};
  launch(links.backend(), k, {n, 0, 1});
  std::vector<Complex<double>> local(static_cast<std::size_t>(n) * 9);
  copy_bytes(local.data(), dev.data(), dev.bytes(), compute_stream());
  synchronize(compute_stream());

  // The ranks of one column along t multiply their pieces in t order on the column's first.
  const Coords& g = lat.grid_coords();
  const int column = (g[2] * lat.grid()[1] + g[1]) * lat.grid()[0] + g[0];
  MPI_Comm col;
  MPI_Comm_split(lat.comm(), column, g[3], &col);
  int col_rank = 0, col_size = 1;
  MPI_Comm_rank(col, &col_rank);
  MPI_Comm_size(col, &col_size);
  std::vector<Complex<double>> all(col_rank == 0 ? local.size() * col_size : 0);
  MPI_Gather(local.data(), n * 18, MPI_DOUBLE, all.data(), n * 18, MPI_DOUBLE, 0, col);
  MPI_Comm_free(&col);
  double sum[2] = {0, 0};
  if (col_rank == 0)
    for (int i = 0; i < n; ++i) {
      M3 p;
      for (int r = 0; r < col_size; ++r) {
        M3 u;
        for (int k = 0; k < 9; ++k) u.e[k / 3][k % 3] = all[(static_cast<std::size_t>(r) * n + i) * 9 + k];
        p = r == 0 ? u : p * u;
      }
      for (int d = 0; d < 3; ++d) {
        sum[0] += p.e[d][d].re;
        sum[1] += p.e[d][d].im;
      }
    }
  double total[2];
  MPI_Allreduce(sum, total, 2, MPI_DOUBLE, MPI_SUM, lat.comm());
  const Coords& G = lat.global();
  const double norm = 3.0 * G[0] * G[1] * G[2];
  return {total[0] / norm, total[1] / norm};
}

}  // namespace

GaugeObservables measure(const ExtendedLinks& links) {
  const Lattice& lat = links.lattice();
  const ObservableSums local = launch_reduce<ObservableSums>(
      links.backend(), SiteObservablesKernel{links.view(), links.geometry()}, {lat.volume_cb(), 0, 2});
  double sums[3] = {local.plaquette_spatial, local.plaquette_temporal, local.link_trace}, total[3];
  MPI_Allreduce(sums, total, 3, MPI_DOUBLE, MPI_SUM, lat.comm());
  GaugeObservables o;
  MPI_Allreduce(&local.unitarity, &o.unitarity, 1, MPI_DOUBLE, MPI_MAX, lat.comm());
  const double v = static_cast<double>(lat.volume()) * lat.size();
  o.plaquette_spatial = total[0] / (9 * v);
  o.plaquette_temporal = total[1] / (9 * v);
  o.plaquette = (total[0] + total[1]) / (18 * v);
  o.link_trace = total[2] / (12 * v);
  o.polyakov = polyakov_loop(links);
  return o;
}

}  // namespace gauge

GaugeObservables measure_gauge(const Lattice& lat, const std::vector<Complex<double>>& links, Backend b) {
  gauge::ExtendedLinks ext(lat, b);
  ext.upload(links);
  return gauge::measure(ext);
}

double wilson_action(const Lattice& lat, double beta, double plaquette) {
  return beta * 6.0 * static_cast<double>(lat.volume()) * lat.size() * (1.0 - plaquette);
}

}  // namespace latke
