// Gauge fixing (gauge_fixing.h). Overrelaxation: one kernel per parity over the sites, updating
// the transformation G in place from the links and G's neighbours; a reduction for theta and the
// functional. Fourier acceleration (a conjugate gradient): a reduction that also writes Delta(x)
// as four complex numbers per site, LatticeFFT's transforms over the fixed directions, a
// reduction dividing by p^2, the inverse transforms, a kernel making the direction, a reduction
// for the line search's trial step and a kernel moving G. One kernel transforms the links at the
// end.
#include "src/fields/gauge_fixing.h"

#include <algorithm>
#include <cmath>

#include "src/core/error.h"
#include "src/core/launch.h"
#include "src/core/log.h"
#include "src/core/work_counters.h"
#include "src/fields/extended_links.h"
#include "src/fields/lattice_fft.h"
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
  /// Extended site e's terms of theta and the functional, and Delta there.
  LATKE_HOST_DEVICE FixSums at(long e, M3& delta) const {
    FixSums s;
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
  LATKE_HOST_DEVICE FixSums operator()(int x_cb, int parity) const {
    int c[4];
    geom.coords(x_cb, parity, c);
    M3 delta;
    return at(u.index_of_local(c), delta);
  }
};

// The Fourier method's fields: a traceless Hermitian matrix per site as four complex numbers,
// component-major over the local volume's lexicographic sites (Delta and its filtered form, what
// LatticeFFT transforms) or over the extended sites (the line search's direction, whose ghosts it
// reads); an index i is the site's in that order. The numbers: A_01, A_02, A_12 and u + i v with
// A_00 = u + v / sqrt3, A_11 = -u + v / sqrt3, A_22 = -2 v / sqrt3. In this basis Re tr(A B) =
// 2 Re sum_k a_k conj(b_k), so inner products of fields are sums of products of their numbers, in
// position space or (Parseval) in momentum space; the filter is real and even in p, so each
// number is filtered on its own and a filtered Hermitian field stays Hermitian.
constexpr int n_alg = 4;
constexpr double inv_sqrt3 = 0.57735026918962576451;

struct AlgebraField {
  Complex<double>* data;
  long volume;  ///< sites per component: the local or the extended volume
  LATKE_HOST_DEVICE LATKE_INLINE void store(long i, const M3& a) const {
    data[i] = a.e[0][1];
    data[volume + i] = a.e[0][2];
    data[2 * volume + i] = a.e[1][2];
    data[3 * volume + i] =
        Complex<double>(0.5 * (a.e[0][0].re - a.e[1][1].re), 0.5 / inv_sqrt3 * (a.e[0][0].re + a.e[1][1].re));
  }
  /// Re tr(A B) of this field's matrix at site index i and a.
  LATKE_HOST_DEVICE LATKE_INLINE double dot(long i, const M3& a) const {
    const Complex<double> c = data[3 * volume + i];
    const double u = 0.5 * (a.e[0][0].re - a.e[1][1].re), v = 0.5 / inv_sqrt3 * (a.e[0][0].re + a.e[1][1].re);
    return 2 * (dot_re(data[i], a.e[0][1]) + dot_re(data[volume + i], a.e[0][2]) +
                dot_re(data[2 * volume + i], a.e[1][2]) + c.re * u + c.im * v);
  }
  /// The matrix -lambda A at site index i.
  LATKE_HOST_DEVICE LATKE_INLINE M3 scaled(long i, double lambda) const {
    const Complex<double> a01 = data[i] * -lambda, a02 = data[volume + i] * -lambda,
                          a12 = data[2 * volume + i] * -lambda, c = data[3 * volume + i] * -lambda;
    M3 q;
    q.e[0][0] = Complex<double>(c.re + c.im * inv_sqrt3);
    q.e[1][1] = Complex<double>(-c.re + c.im * inv_sqrt3);
    q.e[2][2] = Complex<double>(-2 * c.im * inv_sqrt3);
    q.e[0][1] = a01;
    q.e[1][0] = conj(a01);
    q.e[0][2] = a02;
    q.e[2][0] = conj(a02);
    q.e[1][2] = a12;
    q.e[2][1] = conj(a12);
    return q;
  }
  LATKE_HOST_DEVICE LATKE_INLINE static double dot_re(Complex<double> a, Complex<double> b) {
    return a.re * b.re + a.im * b.im;
  }
};

/// exp(i q) G for a small Hermitian q: exp to second order, reunitarized (a step along the
/// same curve's tangent; the line search measures what it gives).
LATKE_HOST_DEVICE LATKE_INLINE M3 stepped(const M3& q, const M3& G) {
  M3 h;
  LATKE_UNROLL for (int i = 0; i < 3; ++i) LATKE_UNROLL for (int j = 0; j < 3; ++j) {
    Complex<double> qq;
    LATKE_UNROLL for (int k = 0; k < 3; ++k) qq += q.e[i][k] * q.e[k][j];
    h.e[i][j] = Complex<double>((i == j ? 1.0 : 0.0) - 0.5 * qq.re - q.e[i][j].im, q.e[i][j].re - 0.5 * qq.im);
  }
  M3 r = h * G;
  reunitarize(r);
  return r;
}

struct FourierSums {
  double theta = 0, functional = 0;
  double dot_filtered = 0;   ///< <Delta, the previous filtered gradient>
  double dot_direction = 0;  ///< <Delta, the previous direction>
  LATKE_HOST_DEVICE FourierSums& operator+=(const FourierSums& o) {
    theta += o.theta;
    functional += o.functional;
    dot_filtered += o.dot_filtered;
    dot_direction += o.dot_direction;
    return *this;
  }
};

/// Theta and the functional, as FixMeasureKernel; Delta(x) into `delta`, and its products with
/// the previous filtered gradient and direction (for Polak-Ribiere and the slope).
struct FourierDeltaKernel {
  FixMeasureKernel m;
  AlgebraField delta, previous, direction;
  LATKE_HOST_DEVICE FourierSums operator()(int x_cb, int parity) const {
    int c[4];
    const long lex = m.geom.coords(x_cb, parity, c);
    const long e = m.u.index_of_local(c);
    M3 d;
    const FixSums f = m.at(e, d);
    FourierSums s;
    s.theta = f.theta;
    s.functional = f.functional;
    delta.store(lex, d);
    s.dot_filtered = previous.dot(lex, d);
    s.dot_direction = direction.dot(e, d);  // the direction lives on the extended sites
    return s;
  }
};

/// The filter in momentum space: every number at k times 1 / (p^2 N), p^2 = sum over the fixed
/// directions of 4 sin^2(pi k_mu / L_mu) (k where LatticeFFT put it), N the points transformed
/// together (the inverse transform's normalisation); zero at p = 0 (Delta sums to zero on a
/// periodic lattice). Returns this rank's part of <Delta, Delta~> by Parseval.
struct FourierFilterKernel {
  AlgebraField f;
  LocalGeometry geom;
  MomentumLayout mom;
  int ndir;
  double inv_n;
  LATKE_HOST_DEVICE double operator()(int lex, int) const {
    int rest = lex;
    double p2 = 0;
    for (int mu = 0; mu < 4; ++mu) {
      const int b = rest % geom.L[mu];
      rest /= geom.L[mu];
      if (mu < ndir) {
        const double s = sin(M_PI * (mom.offset[mu] + mom.step[mu] * b) / mom.global[mu]);
        p2 += 4 * s * s;
      }
    }
    const double w = p2 > 1e-12 ? inv_n / p2 : 0.0;
    double dot = 0;
    for (int k = 0; k < n_alg; ++k) {
      Complex<double>& z = f.data[k * f.volume + lex];
      dot += 2 * w * norm2(z);
      z *= w;
    }
    return dot;
  }
};

/// direction <- filtered + beta direction (the direction on the extended sites, whose ghosts the
/// line search reads).
struct FourierDirectionKernel {
  AlgebraField filtered;
  ExtSites direction;
  LocalGeometry geom;
  double beta;
  LATKE_HOST_DEVICE void operator()(int x_cb, int parity) const {
    int c[4];
    const long lex = geom.coords(x_cb, parity, c);
    const long e = direction.index_of_local(c);
    for (int k = 0; k < n_alg; ++k)
      direction.at(k, e) = filtered.data[k * filtered.volume + lex] + direction.at(k, e) * beta;
  }
};

/// F(G') - F(G) for G'(x) = exp(-i lambda S(x)) G(x), summed site by site (the change is far
/// below F's last digits near convergence); S and G of a neighbour from their ghosts.
struct FourierTrialKernel {
  FixMeasureKernel m;
  AlgebraField direction;
  double lambda;
  LATKE_HOST_DEVICE double operator()(int x_cb, int parity) const {
    int c[4];
    m.geom.coords(x_cb, parity, c);
    const long e = m.u.index_of_local(c);
    M3 G, Gn, a;
    load(m.g, e, G);
    const M3 Gt = stepped(direction.scaled(e, lambda), G);
    double change = 0;
    for (int mu = 0; mu < m.ndir; ++mu) {
      load(m.g, e + m.u.stride[mu], Gn);
      const M3 Gnt = stepped(direction.scaled(e + m.u.stride[mu], lambda), Gn);
      m.u.load(e, mu, a);
      change += re_tr_mul_adj(Gt * a, Gnt) - re_tr_mul_adj(G * a, Gn);
    }
    return change;
  }
};

/// G(x) <- exp(-i lambda S(x)) G(x) (S on the extended sites).
struct FourierUpdateKernel {
  ExtSites g;
  LocalGeometry geom;
  AlgebraField direction;
  double lambda;
  LATKE_HOST_DEVICE void operator()(int x_cb, int parity) const {
    int c[4];
    geom.coords(x_cb, parity, c);
    const long e = g.index_of_local(c);
    M3 G;
    load(g, e, G);
    save(g, e, stepped(direction.scaled(e, lambda), G));
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

const char* to_string(GaugeFixingMethod m) {
  return m == GaugeFixingMethod::automatic ? "auto" : m == GaugeFixingMethod::fourier ? "fourier" : "overrelax";
}

void check(const GaugeFixing& p) {
  require(p.tol > 0 && std::isfinite(p.tol), "gauge fixing: tolerance ", p.tol, ", expected a positive number");
  require(p.max_iter >= 1, "gauge fixing: ", p.max_iter, " iterations at most, expected 1 or more");
  require(p.omega >= 1 && p.omega < 2, "gauge fixing: overrelaxation ", p.omega, ", expected 1 <= omega < 2");
  require(p.check_every >= 1, "gauge fixing: theta measured every ", p.check_every, " iterations, expected 1 or more");
  require(p.alpha > 0 && p.alpha < 2, "gauge fixing: Fourier acceleration's first trial step alpha ", p.alpha,
          ", expected 0 < alpha < 2");
}

namespace {
unsigned fixed_dims(GaugeFixingType t) { return t == GaugeFixingType::coulomb ? 0x7u : 0xFu; }
}  // namespace

GaugeFixingMethod resolve(const Lattice& lat, const GaugeFixing& p) {
  const unsigned dims = fixed_dims(p.type);
  if (p.method == GaugeFixingMethod::overrelaxation) return p.method;
  if (LatticeFFT::supports(lat, dims)) return GaugeFixingMethod::fourier;
  if (p.method == GaugeFixingMethod::automatic) return GaugeFixingMethod::overrelaxation;
  for (int mu = 0; mu < 4; ++mu)
    require(!(dims >> mu & 1u) || LatticeFFT::supports(lat, 1u << mu), "gauge fixing: the Fourier-accelerated method ",
            "transforms local extents of prime factors up to 13, but direction ", mu, " has the local extent ",
            lat.local()[mu], " on ", lat.describe(), "; use overrelaxation (method overrelax or auto)");
  return GaugeFixingMethod::fourier;
}

namespace {

GaugeFixingResult fix_overrelaxation(const gauge::ExtendedLinks& u, gauge::ExtendedSites& g, const GaugeFixing& p,
                                     int ndir, unsigned dims) {
  using namespace gauge;
  const Lattice& lat = u.lattice();
  const Backend b = u.backend();
  GaugeFixingResult r;
  r.method = GaugeFixingMethod::overrelaxation;
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
  return r;
}

GaugeFixingResult fix_fourier(const gauge::ExtendedLinks& u, gauge::ExtendedSites& g, const GaugeFixing& p, int ndir,
                              unsigned dims) {
  using namespace gauge;
  const Lattice& lat = u.lattice();
  const Backend b = u.backend();
  const long V = lat.volume();
  LatticeFFT fft(lat, b, dims, n_alg);
  const std::size_t bytes = sizeof(Complex<double>) * n_alg * static_cast<std::size_t>(V);
  Buffer buffers[2] = {Buffer(memory_for(b), bytes), Buffer(memory_for(b), bytes)};
  for (Buffer& f : buffers) zero_bytes(f.data(), bytes, memory_for(b), compute_stream());
  auto field = [&](int i) { return AlgebraField{static_cast<Complex<double>*>(buffers[i].data()), V}; };
  int cur = 0, prev = 1;  // Delta (then filtered) of this iteration and the filtered gradient of the last
  // The direction on the extended sites: the line search reads it at the neighbours.
  ExtendedSites dir_sites(lat, b, n_alg, dims);
  const ExtSites ds = dir_sites.sites();
  zero_bytes(ds.data, sizeof(Complex<double>) * n_alg * static_cast<std::size_t>(ds.ext_volume), memory_for(b),
             compute_stream());
  const AlgebraField dir{ds.data, ds.ext_volume};
  const MomentumLayout mom = fft.momentum();
  double points = 1;
  for (int mu = 0; mu < ndir; ++mu) points *= lat.global()[mu];
  double volume = 1;
  for (int mu = 0; mu < 4; ++mu) volume *= lat.global()[mu];
  const FixMeasureKernel fm{u.view(), g.sites(), u.geometry(), ndir};
  GaugeFixingResult r;
  r.method = GaugeFixingMethod::fourier;
  double lambda = p.alpha;  // the line search's trial step
  double last_dot = 0;      // <Delta, Delta~> of the last iteration
  for (;;) {
    const FourierSums fs =
        launch_reduce<FourierSums>(b, FourierDeltaKernel{fm, field(cur), field(prev), dir}, {lat.volume_cb(), 0, 2});
    double v[4] = {fs.theta, fs.functional, fs.dot_filtered, fs.dot_direction};
    global_sum(v, 4, lat.comm());
    r.theta = v[0] / (3 * volume);
    r.functional = v[1] / (3 * ndir * volume);
    require(std::isfinite(r.theta), "gauge fixing: theta is ", r.theta, " after ", r.iterations,
            " iterations (links that are not finite?)");
    if (r.theta < p.tol || r.iterations >= p.max_iter) break;
    fft.forward(field(cur).data);
    double dot = launch_reduce<double>(b, FourierFilterKernel{field(cur), g.geometry(), mom, ndir, 1.0 / points},
                                       {static_cast<int>(V), 0, 1});
    global_sum(&dot, 1, lat.comm());
    fft.inverse(field(cur).data);
    // Polak-Ribiere (non-negative: a steepest-descent restart otherwise); the slope along the new
    // direction, <S, Delta> = dot + beta <S_old, Delta>, must be positive (an ascent).
    double beta = r.iterations == 0 ? 0.0 : std::max(0.0, (dot - v[2]) / last_dot);
    double slope = dot + beta * v[3];
    if (!(slope > 0)) {
      beta = 0;
      slope = dot;
    }
    last_dot = dot;
    launch(b, FourierDirectionKernel{field(cur), ds, g.geometry(), beta}, {lat.volume_cb(), 0, 2},
           compute_stream(), false);
    dir_sites.refresh_components(0, n_alg, -1, {}, dims);
    // Line search: F(lambda) - F(0) at the trial step, and the parabola through it with the slope.
    double change = launch_reduce<double>(b, FourierTrialKernel{fm, dir, lambda}, {lat.volume_cb(), 0, 2});
    global_sum(&change, 1, lat.comm());
    const double curvature = 2 * (slope * lambda - change) / (lambda * lambda);
    const double step = curvature > 0 ? std::min(slope / curvature, 4 * lambda) : 4 * lambda;
    launch(b, FourierUpdateKernel{g.sites(), g.geometry(), dir, step}, {lat.volume_cb(), 0, 2}, compute_stream(),
           false);
    g.refresh_components(0, 9, -1, {}, dims);
    lambda = step;
    std::swap(cur, prev);
    ++r.iterations;
  }
  return r;
}

}  // namespace

std::vector<Complex<double>> fix_gauge(const Lattice& lat, const std::vector<Complex<double>>& links,
                                       const GaugeFixing& p, Backend b, GaugeFixingResult* result) {
  using namespace gauge;
  check(p);
  const GaugeFixingMethod method = resolve(lat, p);
  const LogScope log(LogEvent::gauge_fix);
  const int ndir = p.type == GaugeFixingType::coulomb ? 3 : 4;
  ExtendedLinks u(lat, b), fixed(lat, b);
  u.upload(links);
  // G's ghosts only across the fixed directions while fixing: Coulomb gauge fixing exchanges
  // nothing in t, so a grid split in t fixes its slices without communication until the end.
  const unsigned dims = fixed_dims(p.type);
  ExtendedSites g(lat, b, 9);
  launch(b, SetIdentityKernel{g.sites(), g.geometry()}, {lat.volume_cb(), 0, 2});
  g.refresh_components(0, 9, -1, {}, dims);
  GaugeFixingResult r =
      method == GaugeFixingMethod::fourier ? fix_fourier(u, g, p, ndir, dims) : fix_overrelaxation(u, g, p, ndir, dims);
  r.converged = r.theta < p.tol;
  g.refresh_components(0, 9);  // the links' transformation needs G(x + t) too: every direction, once
  launch(b, TransformKernel{u.view(), fixed.view(), g.sites(), u.geometry()}, {lat.volume_cb(), 0, 2});
  if (result) *result = r;
  return fixed.download();
}

}  // namespace latke
