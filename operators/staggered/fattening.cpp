// Asqtad fattening on the backend (device or CPU, one source) in double precision, one thread
// per site, from the links extended by two sites in every direction; and the conversion of
// MILC/QUDA links (eta and boundary phases multiplied in) to Latke's phase-free ones. Paths
// and coefficients: staggered.h.
//
// A path x -> y (transverse steps) -> y + mu (along mu) -> x + mu (the steps undone) is held
// as its two open ends: `left`, the product of the steps from x to y, and `right`, the product
// from y + mu back to x + mu. Displacing it once more along a direction multiplies a step onto
// each end, so the 5- and 7-link staples reuse the shorter ones: 336 matrix products per
// direction and site.
#include "latke/conventions.h"
#include "src/core/algebra.h"
#include "src/core/error.h"
#include "src/core/indexing.h"
#include "src/core/launch.h"
#include "src/fields/extended_gauge.h"
#include "operators/staggered/staggered.h"

namespace latke {

namespace {

using M3 = ColorMatrix<double, 3>;
constexpr int ext_depth = 2;  // the Lepage term reaches two sites across, the Naik link two along

struct Path {
  M3 left, right;
  int y[4];
};

struct FattenKernel {
  const Complex<double>* ext;  // extended links, [site][mu][3][3]
  int E[4];
  LocalGeometry geom;
  AsqtadCoefficients coef;
  Complex<double>* fat;  // local links, [site][mu][3][3]
  Complex<double>* lng;

  LATKE_HOST_DEVICE M3 link(const int (&y)[4], int mu) const {
    const long s = ((static_cast<long>(y[3]) * E[2] + y[2]) * E[1] + y[1]) * E[0] + y[0];
    M3 u;
    for (int k = 0; k < 9; ++k) u.e[k / 3][k % 3] = ext[(s * 4 + mu) * 9 + k];
    return u;
  }

  /// The link of one step from y along sign * nu-hat (the adjoint of the link behind for
  /// sign < 0); moves y.
  LATKE_HOST_DEVICE M3 step(int (&y)[4], int nu, int sign) const {
    if (sign > 0) {
      const M3 u = link(y, nu);
      ++y[nu];
      return u;
    }
    --y[nu];
    return adjoint(link(y, nu));
  }

  LATKE_HOST_DEVICE Path extend(const Path& p, int mu, int nu, int sign) const {
    Path e;
    for (int k = 0; k < 4; ++k) e.y[k] = p.y[k];
    e.left = p.left * step(e.y, nu, sign);
    int z[4] = {e.y[0], e.y[1], e.y[2], e.y[3]};
    ++z[mu];
    e.right = step(z, nu, -sign) * p.right;
    return e;
  }

  LATKE_HOST_DEVICE static void add(M3& v, double c, const M3& m) {
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) v.e[i][j] += c * m.e[i][j];
  }

  LATKE_HOST_DEVICE void add_staple(M3& v, double c, const Path& p, int mu) const {
    add(v, c, p.left * link(p.y, mu) * p.right);
  }

  LATKE_HOST_DEVICE void operator()(int x_cb, int parity) const {
    int x[4];
    const long site = geom.coords(x_cb, parity, x);
    for (int k = 0; k < 4; ++k) x[k] += ext_depth;
    for (int mu = 0; mu < 4; ++mu) {
      M3 v;
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) v.e[i][j] = Complex<double>();
      add(v, coef.one_link, link(x, mu));
      Path start;
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) start.left.e[i][j] = start.right.e[i][j] = Complex<double>(i == j ? 1.0 : 0.0);
      for (int k = 0; k < 4; ++k) start.y[k] = x[k];
      for (int nu = 0; nu < 4; ++nu) {
        if (nu == mu) continue;
        for (int s1 = -1; s1 <= 1; s1 += 2) {
          const Path p1 = extend(start, mu, nu, s1);
          add_staple(v, coef.three_staple, p1, mu);
          if (coef.lepage != 0) add_staple(v, coef.lepage, extend(p1, mu, nu, s1), mu);
          if (coef.five_staple == 0 && coef.seven_staple == 0) continue;
          for (int rho = 0; rho < 4; ++rho) {
            if (rho == mu || rho == nu) continue;
            for (int s2 = -1; s2 <= 1; s2 += 2) {
              const Path p2 = extend(p1, mu, rho, s2);
              add_staple(v, coef.five_staple, p2, mu);
              if (coef.seven_staple == 0) continue;
              for (int sigma = 0; sigma < 4; ++sigma) {
                if (sigma == mu || sigma == nu || sigma == rho) continue;
                for (int s3 = -1; s3 <= 1; s3 += 2) add_staple(v, coef.seven_staple, extend(p2, mu, sigma, s3), mu);
              }
            }
          }
        }
      }
      int y[4] = {x[0], x[1], x[2], x[3]};
      M3 w = step(y, mu, 1);
      w = w * step(y, mu, 1);
      w = w * step(y, mu, 1);
      for (int k = 0; k < 9; ++k) {
        fat[(site * 4 + mu) * 9 + k] = v.e[k / 3][k % 3];
        lng[(site * 4 + mu) * 9 + k] = coef.naik * w.e[k / 3][k % 3];
      }
    }
  }
};

}  // namespace

StaggeredLinks asqtad_links(const Lattice& lat, const std::vector<Complex<double>>& thin, const AsqtadCoefficients& c,
                            Backend backend) {
  const std::size_t n = static_cast<std::size_t>(lat.volume()) * 36;
  require(thin.size() == n, "asqtad fattening: the thin links have ", thin.size(), " complex numbers, expected ", n);
  const std::vector<Complex<double>> ext = extended_gauge(lat, thin, ext_depth);
  const MemoryKind where = memory_for(backend);
  Buffer ext_buf(where, ext.size() * sizeof(Complex<double>));
  Buffer fat_buf(where, n * sizeof(Complex<double>)), long_buf(where, n * sizeof(Complex<double>));
  copy_bytes(ext_buf.data(), ext.data(), ext_buf.bytes(), compute_stream());
  FattenKernel k;
  k.ext = static_cast<const Complex<double>*>(ext_buf.data());
  for (int mu = 0; mu < 4; ++mu) k.E[mu] = lat.local()[mu] + 2 * ext_depth;
  k.geom = LocalGeometry::of(lat);
  k.coef = c;
  k.fat = static_cast<Complex<double>*>(fat_buf.data());
  k.lng = static_cast<Complex<double>*>(long_buf.data());
  launch(backend, k, {lat.volume_cb(), 0, 2}, compute_stream(), false);  // too costly to autotune
  StaggeredLinks links;
  links.fat.resize(n);
  links.lng.resize(n);
  copy_bytes(links.fat.data(), fat_buf.data(), fat_buf.bytes(), compute_stream());
  copy_bytes(links.lng.data(), long_buf.data(), long_buf.bytes(), compute_stream());
  synchronize(compute_stream());
  return links;
}

void strip_milc_phases(const Lattice& lat, std::vector<Complex<double>>& links,
                       const std::array<Complex<double>, 4>& boundary_phase, int hop) {
  require(hop == 1 || hop == 3, "strip_milc_phases: hop ", hop, ": expected 1 (fat links) or 3 (long links)");
  require(links.size() == static_cast<std::size_t>(lat.volume()) * 36, "strip_milc_phases: ", links.size(),
          " complex numbers of links, expected ", lat.volume() * 36);
  for (long s = 0; s < lat.volume(); ++s) {
    Coords g = lat.coords_of(s);
    for (int mu = 0; mu < 4; ++mu) g[mu] += lat.offset()[mu];
    for (int mu = 0; mu < 4; ++mu) {
      // MILC link = eta_mu(x) * phase (if the link wraps) * Latke link; eta^2 = |phase|^2 = 1.
      Complex<double> f(staggered_phase(mu, g));
      if (g[mu] + hop >= lat.global()[mu]) f = f * conj(boundary_phase[mu]);
      for (int k = 0; k < 9; ++k) links[(s * 4 + mu) * 9 + k] = f * links[(s * 4 + mu) * 9 + k];
    }
  }
}

}  // namespace latke
