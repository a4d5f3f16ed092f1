// Host reference for the staggered operators (formula in reference.h): naive loops over
// lexicographic sites and over every path, Eigen 3x3 matrices, double precision. Written for
// clarity, not speed: it is the yardstick the optimized kernels are checked against, so it
// uses nothing of Latke but conventions.h.
#include "tests/reference/staggered_reference.h"

#include <Eigen/Dense>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>

#include "latke/conventions.h"

namespace latke::reference {

namespace {

using ColorMatrix = Eigen::Matrix3cd;
using ColorVector = Eigen::Vector3cd;
using GaugeLink = Eigen::Matrix<complex, 3, 3, Eigen::RowMajor>;

struct Geometry {
  Coords dims;
  std::size_t volume;

  Coords coords(std::size_t site) const {
    Coords c;
    for (int mu = 0; mu < n_dim; ++mu) {
      c[mu] = static_cast<int>(site % dims[mu]);
      site /= dims[mu];
    }
    return c;
  }
  std::size_t site(const Coords& c) const { return lex_site(c, dims); }
  /// c + step mu-hat, wrapped periodically.
  Coords shift(Coords c, int mu, int step) const {
    c[mu] = ((c[mu] + step) % dims[mu] + dims[mu]) % dims[mu];
    return c;
  }
};

Geometry checked_geometry(const char* func, const Coords& dims) {
  std::size_t volume = 1;
  for (int mu = 0; mu < n_dim; ++mu) {
    if (dims[mu] <= 0)
      throw std::invalid_argument(std::string("latke::reference::") + func + ": dims[" + std::to_string(mu) +
                                  "] = " + std::to_string(dims[mu]) + ", expected a positive extent");
    volume *= static_cast<std::size_t>(dims[mu]);
  }
  return {dims, volume};
}

void check_size(const char* func, const char* name, std::size_t size, std::size_t per_site, std::size_t volume) {
  if (size != per_site * volume)
    throw std::invalid_argument(std::string("latke::reference::") + func + ": " + name +
                                ".size() = " + std::to_string(size) + ", expected " + std::to_string(per_site) +
                                " * volume = " + std::to_string(per_site * volume) + " complex numbers");
}

ColorMatrix load_link(const std::vector<complex>& gauge, const Geometry& g, const Coords& c, int mu) {
  return Eigen::Map<const GaugeLink>(gauge.data() + lex_gauge_index(g.site(c), mu, 0, 0));
}

ColorVector load_vector(const std::vector<complex>& v, std::size_t site) {
  return Eigen::Map<const ColorVector>(v.data() + 3 * site);
}

/// The link of a hop of `hop` sites from y along mu, with the boundary phase when it wraps.
ColorMatrix phased_link(const std::vector<complex>& links, const Geometry& g, const Coords& y, int mu, int hop,
                        const StaggeredParams& p) {
  ColorMatrix u = load_link(links, g, y, mu);
  if (y[mu] + hop >= g.dims[mu]) u *= p.boundary_phase[mu];
  return u;
}

std::vector<complex> dslash(const std::vector<complex>& fat, const std::vector<complex>& lng,
                            const std::vector<complex>& in, const StaggeredParams& p, const Geometry& g) {
  std::vector<complex> out(in.size());
  for (std::size_t site = 0; site < g.volume; ++site) {
    const Coords x = g.coords(site);
    ColorVector acc = ColorVector::Zero();
    for (int mu = 0; mu < n_dim; ++mu) {
      ColorVector t = phased_link(fat, g, x, mu, 1, p) * load_vector(in, g.site(g.shift(x, mu, 1)));
      const Coords b1 = g.shift(x, mu, -1);
      t -= phased_link(fat, g, b1, mu, 1, p).adjoint() * load_vector(in, g.site(b1));
      if (p.improved) {
        t += phased_link(lng, g, x, mu, 3, p) * load_vector(in, g.site(g.shift(x, mu, 3)));
        const Coords b3 = g.shift(x, mu, -3);
        t -= phased_link(lng, g, b3, mu, 3, p).adjoint() * load_vector(in, g.site(b3));
      }
      acc += static_cast<double>(staggered_phase(mu, x)) * t;
    }
    Eigen::Map<ColorVector>(out.data() + 3 * site) = acc;
  }
  return out;
}

Geometry checked_args(const char* func, const std::vector<complex>& fat, const std::vector<complex>& lng,
                      const std::vector<complex>& in, const StaggeredParams& p) {
  const Geometry g = checked_geometry(func, p.dims);
  check_size(func, "fat", fat.size(), 36, g.volume);
  if (p.improved) check_size(func, "lng", lng.size(), 36, g.volume);
  check_size(func, "in", in.size(), 3, g.volume);
  return g;
}

/// Product of the links along a path of signed directions (+-(mu+1)) starting at x.
ColorMatrix walk(const std::vector<complex>& links, const Geometry& g, Coords y, const std::vector<int>& path) {
  ColorMatrix m = ColorMatrix::Identity();
  for (int step : path) {
    const int mu = std::abs(step) - 1;
    if (step > 0) {
      m *= load_link(links, g, y, mu);
      y = g.shift(y, mu, 1);
    } else {
      y = g.shift(y, mu, -1);
      m *= load_link(links, g, y, mu).adjoint();
    }
  }
  return m;
}

}  // namespace

void apply_staggered_dslash(std::vector<complex>& out, const std::vector<complex>& fat, const std::vector<complex>& lng,
                            const std::vector<complex>& in, const StaggeredParams& p) {
  const Geometry g = checked_args("apply_staggered_dslash", fat, lng, in, p);
  out = dslash(fat, lng, in, p, g);
}

void apply_staggered(std::vector<complex>& out, const std::vector<complex>& fat, const std::vector<complex>& lng,
                     const std::vector<complex>& in, const StaggeredParams& p, bool dagger) {
  const Geometry g = checked_args("apply_staggered", fat, lng, in, p);
  std::vector<complex> d = dslash(fat, lng, in, p, g);
  const double sign = dagger ? -1.0 : 1.0;  // D is anti-Hermitian
  for (std::size_t k = 0; k < d.size(); ++k) d[k] = 2.0 * p.mass * in[k] + sign * d[k];
  out = std::move(d);
}

void fatten(std::vector<complex>& fat, std::vector<complex>& lng, const std::vector<complex>& thin, const Coords& dims,
            const FatteningCoefficients& c) {
  const Geometry g = checked_geometry("fatten", dims);
  check_size("fatten", "thin", thin.size(), 36, g.volume);
  std::vector<complex> f(thin.size()), l(thin.size());
  for (std::size_t site = 0; site < g.volume; ++site) {
    const Coords x = g.coords(site);
    for (int mu = 0; mu < n_dim; ++mu) {
      const int m = mu + 1;
      std::vector<std::pair<double, std::vector<int>>> paths{{c.one_link, {m}}};
      for (int nu = 1; nu <= n_dim; ++nu)
        for (int sn : {nu, -nu}) {
          if (nu == m) continue;
          paths.push_back({c.three_staple, {sn, m, -sn}});
          paths.push_back({c.lepage, {sn, sn, m, -sn, -sn}});
          for (int rho = 1; rho <= n_dim; ++rho)
            for (int sr : {rho, -rho}) {
              if (rho == m || rho == nu) continue;
              paths.push_back({c.five_staple, {sn, sr, m, -sr, -sn}});
              for (int sigma = 1; sigma <= n_dim; ++sigma)
                for (int ss : {sigma, -sigma}) {
                  if (sigma == m || sigma == nu || sigma == rho) continue;
                  paths.push_back({c.seven_staple, {sn, sr, ss, m, -ss, -sr, -sn}});
                }
            }
        }
      ColorMatrix v = ColorMatrix::Zero();
      for (const auto& [coeff, path] : paths) v += coeff * walk(thin, g, x, path);
      const ColorMatrix w = c.naik * walk(thin, g, x, {m, m, m});
      for (int r = 0; r < 3; ++r)
        for (int col = 0; col < 3; ++col) {
          f[lex_gauge_index(site, mu, r, col)] = v(r, col);
          l[lex_gauge_index(site, mu, r, col)] = w(r, col);
        }
    }
  }
  fat = std::move(f);
  lng = std::move(l);
}

}  // namespace latke::reference
