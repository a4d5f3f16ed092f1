// Gauge fixing by overrelaxation (gauge_fixing.h): one kernel per parity over the sites, updating
// the transformation G in place from the links and G's neighbours; a reduction for theta and the
// functional; one kernel transforming the links at the end.
#include "src/fields/gauge_fixing.h"

#include <algorithm>
#include <cmath>

#include "src/core/error.h"
#include "src/core/launch.h"
#include "src/core/log.h"
#include "src/core/work_counters.h"
#include "src/fields/extended_links.h"
#include "src/fields/su3_update.h"

namespace latke {

namespace gauge {
namespace {

LATKE_HOST_DEVICE LATKE_INLINE void load(const ExtSites& g, long e, M3& m) {
  LATKE_UNROLL for (int k = 0; k < 9; ++k) m.e[k / 3][k % 3] = g.at(k, e);
}
LATKE_HOST_DEVICE LATKE_INLINE void save(const ExtSites& g, long e, const M3& m) {
  LATKE_UNROLL for (int k = 0; k < 9; ++k) g.at(k, e) = m.e[k / 3][k % 3];
}

/// The transformed link G(x) U_mu(x) G(x+mu)^dag of extended site e.
LATKE_HOST_DEVICE LATKE_INLINE M3 transformed(const ExtLinks& u, const ExtSites& g, long e, int mu) {
  M3 a, gx, gy;
  u.load(e, mu, a);
  load(g, e, gx);
  load(g, e + u.stride[mu], gy);
  return mul_adj(gx * a, gy);
}

struct FixStepKernel {
  ExtLinks u;
  ExtSites g;
  LocalGeometry geom;
  int ndir;
  double omega;
  LATKE_HOST_DEVICE void operator()(int x_cb, int parity) const {
    int c[4];
    geom.coords(x_cb, parity, c);
    const long e = u.index_of_local(c);
    M3 K;
    for (int mu = 0; mu < ndir; ++mu) {
      M3 a, gn;
      u.load(e, mu, a);
      load(g, e + u.stride[mu], gn);
      const M3 f = mul_adj(a, gn);  // U_mu(x) G(x+mu)^dag
      u.load(e - u.stride[mu], mu, a);
      load(g, e - u.stride[mu], gn);
      const M3 b = adjoint(gn * a);  // (G(x-mu) U_mu(x-mu))^dag
      LATKE_UNROLL for (int i = 0; i < 3; ++i) LATKE_UNROLL for (int j = 0; j < 3; ++j) K.e[i][j] +=
          f.e[i][j] + b.e[i][j];
    }
    M3 G;
    load(g, e, G);
    M3 W = G * K;
    for (int s = 0; s < 3; ++s) {
      int i, j;
      subgroup(s, i, j);
      double k;
      M2 v;
      if (!project_su2(W, i, j, k, v)) continue;
      // Re tr(R w) is largest at R = V^dag: quaternion (q0, -q1, -q2, -q3) of V = su2(q0, q1, q2, q3),
      // here raised to the power omega along its own great circle.
      const double q0 = v.a.re, q3 = v.a.im, q2 = v.b.re, q1 = v.b.im;
      const double sn = sqrt(q1 * q1 + q2 * q2 + q3 * q3);
      if (!(sn > 1e-300)) continue;  // V = 1: already at the subgroup's maximum
      const double theta = atan2(sn, q0), f = sin(omega * theta) / sn;
      const M2 r = su2(cos(omega * theta), -q1 * f, -q2 * f, -q3 * f);
      rotate_rows(G, i, j, r);
      rotate_rows(W, i, j, r);
    }
    reunitarize(G);
    save(g, e, G);
  }
};

struct FixSums {
  double theta = 0, functional = 0;
  LATKE_HOST_DEVICE FixSums& operator+=(const FixSums& o) {
    theta += o.theta;
    functional += o.functional;
    return *this;
  }
};

/// The traceless part of (U - U^dag) / (2i): Hermitian.
LATKE_HOST_DEVICE LATKE_INLINE M3 potential(const M3& m) {
  M3 a;
  LATKE_UNROLL for (int i = 0; i < 3; ++i) LATKE_UNROLL for (int j = 0; j < 3; ++j) {
    const Complex<double> d = m.e[i][j] - conj(m.e[j][i]);  // U - U^dag
    a.e[i][j] = Complex<double>(0.5 * d.im, -0.5 * d.re);   // d / 2i
  }
  const double tr = (a.e[0][0].re + a.e[1][1].re + a.e[2][2].re) / 3;
  LATKE_UNROLL for (int i = 0; i < 3; ++i) a.e[i][i].re -= tr;
  return a;
}

struct FixMeasureKernel {
  ExtLinks u;
  ExtSites g;
  LocalGeometry geom;
  int ndir;
  LATKE_HOST_DEVICE FixSums operator()(int x_cb, int parity) const {
    int c[4];
    geom.coords(x_cb, parity, c);
    const long e = u.index_of_local(c);
    FixSums s;
    M3 delta;
    for (int mu = 0; mu < ndir; ++mu) {
      const M3 f = transformed(u, g, e, mu);
      s.functional += f.e[0][0].re + f.e[1][1].re + f.e[2][2].re;
      const M3 af = potential(f), ab = potential(transformed(u, g, e - u.stride[mu], mu));
      LATKE_UNROLL for (int i = 0; i < 3; ++i) LATKE_UNROLL for (int j = 0; j < 3; ++j) delta.e[i][j] +=
          af.e[i][j] - ab.e[i][j];
    }
    LATKE_UNROLL for (int i = 0; i < 3; ++i) LATKE_UNROLL for (int j = 0; j < 3; ++j) s.theta += norm2(delta.e[i][j]);
    return s;
  }
};

struct SetIdentityKernel {
  ExtSites g;
  LocalGeometry geom;
  LATKE_HOST_DEVICE void operator()(int x_cb, int parity) const {
    int c[4];
    geom.coords(x_cb, parity, c);
    const long e = g.index_of_local(c);
    LATKE_UNROLL for (int k = 0; k < 9; ++k) g.at(k, e) = Complex<double>(k % 4 == 0 ? 1.0 : 0.0);
  }
};

struct TransformKernel {
  ExtLinks in, out;
  ExtSites g;
  LocalGeometry geom;
  LATKE_HOST_DEVICE void operator()(int x_cb, int parity) const {
    int c[4];
    geom.coords(x_cb, parity, c);
    const long e = in.index_of_local(c);
    for (int mu = 0; mu < 4; ++mu) out.save(e, mu, transformed(in, g, e, mu));
  }
};

FixSums measure(const ExtendedLinks& u, const ExtendedSites& g, int ndir) {
  const Lattice& lat = u.lattice();
  FixSums s = launch_reduce<FixSums>(u.backend(), FixMeasureKernel{u.view(), g.sites(), u.geometry(), ndir},
                                     {lat.volume_cb(), 0, 2});
  double v[2] = {s.theta, s.functional};
  global_sum(v, 2, lat.comm());
  double V = 1;
  for (int mu = 0; mu < 4; ++mu) V *= lat.global()[mu];
  return {v[0] / (3 * V), v[1] / (3 * ndir * V)};
}

}  // namespace
}  // namespace gauge

const char* to_string(GaugeFixingType t) { return t == GaugeFixingType::coulomb ? "coulomb" : "landau"; }

void check(const GaugeFixing& p) {
  require(p.tol > 0 && std::isfinite(p.tol), "gauge fixing: tolerance ", p.tol, ", expected a positive number");
  require(p.max_iter >= 1, "gauge fixing: ", p.max_iter, " iterations at most, expected 1 or more");
  require(p.omega >= 1 && p.omega < 2, "gauge fixing: overrelaxation ", p.omega, ", expected 1 <= omega < 2");
  require(p.check_every >= 1, "gauge fixing: theta measured every ", p.check_every, " iterations, expected 1 or more");
}

std::vector<Complex<double>> fix_gauge(const Lattice& lat, const std::vector<Complex<double>>& links,
                                       const GaugeFixing& p, Backend b, GaugeFixingResult* result) {
  using namespace gauge;
  check(p);
  const LogScope log(LogEvent::gauge_fix);
  const int ndir = p.type == GaugeFixingType::coulomb ? 3 : 4;
  ExtendedLinks u(lat, b), fixed(lat, b);
  u.upload(links);
  // G's ghosts only across the fixed directions during the sweeps: Coulomb gauge fixing exchanges
  // nothing in t, so a grid split in t fixes its slices without communication until the end.
  const unsigned dims = ndir == 3 ? 0x7u : 0xFu;
  ExtendedSites g(lat, b, 9);
  launch(b, SetIdentityKernel{g.sites(), g.geometry()}, {lat.volume_cb(), 0, 2});
  g.refresh_components(0, 9, -1, {}, dims);
  GaugeFixingResult r;
  FixSums s = measure(u, g, ndir);
  while (!(s.theta < p.tol) && r.iterations < p.max_iter) {
    const int n = std::min(p.check_every, p.max_iter - r.iterations);
    for (int k = 0; k < n; ++k) {
      for (int parity = 0; parity < 2; ++parity) {
        launch(b, FixStepKernel{u.view(), g.sites(), u.geometry(), ndir, p.omega}, {lat.volume_cb(), parity, 1},
               compute_stream(), false);
        g.refresh_components(0, 9, parity, {}, dims);
      }
    }
    r.iterations += n;
    s = measure(u, g, ndir);
    require(std::isfinite(s.theta), "gauge fixing: theta is ", s.theta, " after ", r.iterations,
            " iterations (links that are not finite?)");
  }
  r.theta = s.theta;
  r.functional = s.functional;
  r.converged = s.theta < p.tol;
  g.refresh_components(0, 9);  // the links' transformation needs G(x + t) too: every direction, once
  launch(b, TransformKernel{u.view(), fixed.view(), g.sites(), u.geometry()}, {lat.volume_cb(), 0, 2});
  if (result) *result = r;
  return fixed.download();
}

}  // namespace latke
