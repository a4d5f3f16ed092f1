// The clover-leaf field strength, the site term A = (4 + m) + c_sw (i/2) sum_{mu<nu}
// sigma_{mu nu} F_{mu nu} in chiral blocks, and its inverse by Gauss-Jordan elimination with
// partial pivoting, one thread per site, in double. Links come from the extended field
// (extended_gauge.h), so sites on a rank's boundary see their neighbours' links.
#include "operators/wilson_clover/clover_build.h"

#include <mpi.h>

#include <cmath>

#include "latke/conventions.h"
#include "src/core/algebra.h"
#include "src/core/error.h"
#include "src/core/indexing.h"
#include "src/core/launch.h"
#include "src/fields/extended_gauge.h"

namespace latke::wilson {

namespace {

using M3 = ColorMatrix<double, 3>;

struct CloverBuildKernel {
  const Complex<double>* ext;  // extended links, [site][mu][3][3]
  int E[4];
  LocalGeometry geom;
  double diag, csw;
  CloverAccessor<double> a[2], a_inv[2];

  struct Site {
    int c[4];
  };

  LATKE_HOST_DEVICE M3 link(const Site& x, int mu) const {
    const int* c = x.c;
    const long s = ((static_cast<long>(c[3]) * E[2] + c[2]) * E[1] + c[1]) * E[0] + c[0];
    M3 u;
    for (int k = 0; k < 9; ++k) u.e[k / 3][k % 3] = ext[(s * 4 + mu) * 9 + k];
    return u;
  }

  /// Sum of the four leaves of the mu-nu plane at extended coordinates c.
  LATKE_HOST_DEVICE M3 leaves(const int (&c)[4], int mu, int nu) const {
    auto at = [&](int dm, int dn) {
      Site d{{c[0], c[1], c[2], c[3]}};
      d.c[mu] += dm;
      d.c[nu] += dn;
      return d;
    };
    const auto p0 = at(0, 0), pm = at(1, 0), pn = at(0, 1), mm = at(-1, 0), mmn = at(-1, 1), mn = at(0, -1),
               mmm = at(-1, -1), mnp = at(1, -1);
    M3 q = link(p0, mu) * link(pm, nu) * adjoint(link(pn, mu)) * adjoint(link(p0, nu));
    const M3 l2 = link(p0, nu) * adjoint(link(mmn, mu)) * adjoint(link(mm, nu)) * link(mm, mu);
    const M3 l3 = adjoint(link(mm, mu)) * adjoint(link(mmm, nu)) * link(mmm, mu) * link(mn, nu);
    const M3 l4 = adjoint(link(mn, nu)) * link(mn, mu) * link(mnp, nu) * adjoint(link(p0, mu));
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) q.e[i][j] += l2.e[i][j] + l3.e[i][j] + l4.e[i][j];
    return q;
  }

  /// Invert a 6x6 complex matrix in place; false when a pivot vanishes.
  LATKE_HOST_DEVICE static bool invert(Complex<double> (&m)[6][6], Complex<double> (&inv)[6][6]) {
    for (int i = 0; i < 6; ++i)
      for (int j = 0; j < 6; ++j) inv[i][j] = Complex<double>(i == j ? 1.0 : 0.0);
    double scale = 0;
    for (int i = 0; i < 6; ++i) scale = fmax(scale, sqrt(norm2(m[i][i])));
    for (int k = 0; k < 6; ++k) {
      int p = k;
      for (int i = k + 1; i < 6; ++i)
        if (norm2(m[i][k]) > norm2(m[p][k])) p = i;
      if (!(sqrt(norm2(m[p][k])) > 1e-13 * scale)) return false;
      for (int j = 0; j < 6; ++j) {
        const Complex<double> t = m[k][j]; m[k][j] = m[p][j]; m[p][j] = t;
        const Complex<double> u = inv[k][j]; inv[k][j] = inv[p][j]; inv[p][j] = u;
      }
      const Complex<double> piv = m[k][k];
      const Complex<double> r = conj(piv) * (1.0 / norm2(piv));
      for (int j = 0; j < 6; ++j) { m[k][j] = m[k][j] * r; inv[k][j] = inv[k][j] * r; }
      for (int i = 0; i < 6; ++i) {
        if (i == k) continue;
        const Complex<double> f = m[i][k];
        for (int j = 0; j < 6; ++j) { m[i][j] -= f * m[k][j]; inv[i][j] -= f * inv[k][j]; }
      }
    }
    return true;
  }

  LATKE_HOST_DEVICE static void pack(const Complex<double> (&m)[6][6], CloverBlock<double>& b) {
    for (int i = 0; i < 6; ++i) b.diag[i] = m[i][i].re;
    for (int i = 1; i < 6; ++i)
      for (int j = 0; j < i; ++j) b.off[tri_index(i, j)] = m[i][j];
  }

  LATKE_HOST_DEVICE double operator()(int x_cb, int parity) const {
    int c[4];
    geom.coords(x_cb, parity, c);
    for (int mu = 0; mu < 4; ++mu) ++c[mu];
    Complex<double> blk[2][6][6];
    for (int k = 0; k < 2; ++k)
      for (int i = 0; i < 6; ++i)
        for (int j = 0; j < 6; ++j) blk[k][i][j] = Complex<double>(i == j ? diag : 0.0);
    if (csw != 0.0) {
      for (int mu = 0; mu < 4; ++mu)
        for (int nu = mu + 1; nu < 4; ++nu) {
          const M3 q = leaves(c, mu, nu);
          // F = (Q - Q^dag)/8; the term is c_sw (i/2) sigma_{mu nu} F_{mu nu}.
          const SpinMatrix sig = sigma_matrix(mu, nu);
          for (int k = 0; k < 2; ++k)
            for (int s = 0; s < 2; ++s)
              for (int t = 0; t < 2; ++t) {
                const UnitComplex e = sig[2 * k + s][2 * k + t];
                if (e.re == 0 && e.im == 0) continue;
                const Complex<double> w = Complex<double>(0.0, 0.5 * csw) * Complex<double>(e.re, e.im);
                for (int i = 0; i < 3; ++i)
                  for (int j = 0; j < 3; ++j) {
                    const Complex<double> f = 0.125 * (q.e[i][j] - conj(q.e[j][i]));
                    blk[k][3 * s + i][3 * t + j] += w * f;
                  }
              }
        }
    }
    CloverBlock<double> out[2], out_inv[2];
    double singular = 0;
    for (int k = 0; k < 2; ++k) {
      pack(blk[k], out[k]);
      Complex<double> inv[6][6];
      if (!invert(blk[k], inv)) {
        singular = 1;
        for (int i = 0; i < 6; ++i)
          for (int j = 0; j < 6; ++j) inv[i][j] = Complex<double>();
      }
      pack(inv, out_inv[k]);
    }
    a[parity].save(out, x_cb);
    a_inv[parity].save(out_inv, x_cb);
    return singular;
  }
};

}  // namespace

void build_clover(const Lattice& lat, const std::vector<Complex<double>>& host_links, double mass, double csw,
                  double scale, CloverField& a, CloverField& a_inv) {
  require(a.precision() == Precision::double_ && a_inv.precision() == Precision::double_,
          "build_clover writes double-precision clover fields");
  const std::vector<Complex<double>> ext = extended_gauge(lat, host_links);
  const Backend b = a.backend();
  Buffer buf(memory_for(b), ext.size() * sizeof(Complex<double>));
  copy_bytes(buf.data(), ext.data(), buf.bytes(), compute_stream());
  synchronize(compute_stream());
  CloverBuildKernel k;
  k.ext = static_cast<const Complex<double>*>(buf.data());
  for (int mu = 0; mu < 4; ++mu) k.E[mu] = lat.local()[mu] + 2;
  k.geom = LocalGeometry::of(lat);
  k.diag = scale * (4.0 + mass);
  k.csw = scale * csw;
  for (int p = 0; p < 2; ++p) {
    k.a[p] = a.accessor<double>(p);
    k.a_inv[p] = a_inv.accessor<double>(p);
  }
  const double local_bad = launch_reduce<double>(b, k, {lat.volume_cb(), 0, 2});
  double bad = 0;
  MPI_Allreduce(&local_bad, &bad, 1, MPI_DOUBLE, MPI_SUM, lat.comm());
  if (bad == 0) return;
  // Links that are not finite make every nearby block singular: say so, not "choose a mass".
  long local_nan = 0, nan = 0;
  for (const Complex<double>& z : host_links) local_nan += std::isfinite(z.re) && std::isfinite(z.im) ? 0 : 1;
  MPI_Allreduce(&local_nan, &nan, 1, MPI_LONG, MPI_SUM, lat.comm());
  require(nan == 0, "the clover term A = (4 + m) + C_sw is singular at ", bad,
          " sites because the gauge links themselves are not finite: ", nan,
          " link entries are NaN or infinite (check where the links came from)");
  fail("the clover term A = (4 + m) + C_sw is singular at ", bad, " sites for mass ", mass, " and c_sw ", csw,
       ": choose a mass further from the critical one");
}

}  // namespace latke::wilson
