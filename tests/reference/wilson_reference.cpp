// Host reference for the Wilson-clover operator (formula in wilson_reference.h): naive loops over
// lexicographic sites, Eigen 3x3 color matrices and explicit 4x4 gamma matrices, double
// precision. Written for clarity, not speed: it is the yardstick the optimized kernels are
// checked against, so it uses nothing of Latke but conventions.h.
#include "tests/reference/wilson_reference.h"

#include <Eigen/Dense>
#include <stdexcept>
#include <string>

#include "latke/conventions.h"

namespace latke::reference {

namespace {

using ColorMatrix = Eigen::Matrix3cd;
using DiracMatrix = Eigen::Matrix4cd;
using CloverMatrix = Eigen::Matrix<complex, 12, 12>;
// A site's 12 spinor components stored as spin*3 + color are, read column-major, a
// (color x spin) matrix: color algebra multiplies from the left, spin algebra (transposed)
// from the right.
using SiteSpinor = Eigen::Matrix<complex, n_color, n_spin>;
using GaugeLink = Eigen::Matrix<complex, n_color, n_color, Eigen::RowMajor>;

constexpr std::size_t spinor_site_size = n_spin * n_color;
constexpr std::size_t gauge_site_size = n_dim * n_color * n_color;

DiracMatrix to_dirac(const SpinMatrix& m) {
  DiracMatrix d;
  for (int r = 0; r < n_spin; ++r)
    for (int c = 0; c < n_spin; ++c) d(r, c) = complex(m[r][c].re, m[r][c].im);
  return d;
}

std::array<DiracMatrix, n_dim> gammas() {
  std::array<DiracMatrix, n_dim> g;
  for (int mu = 0; mu < n_dim; ++mu) g[mu] = to_dirac(gamma_matrix(mu));
  return g;
}

/// Lattice extents with the neighbor arithmetic the naive loops need.
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
  /// c + step * mu-hat, wrapped periodically (step = +1 or -1).
  Coords shift(Coords c, int mu, int step) const {
    c[mu] = (c[mu] + step + dims[mu]) % dims[mu];
    return c;
  }
};

Geometry checked_geometry(const char* func, const Coords& dims) {
  std::size_t volume = 1;
  for (int mu = 0; mu < n_dim; ++mu) {
    if (dims[mu] <= 0)
      throw std::invalid_argument(std::string("latke::reference::") + func + ": p.dims[" +
                                  std::to_string(mu) + "] = " + std::to_string(dims[mu]) +
                                  ", expected a positive extent");
    volume *= static_cast<std::size_t>(dims[mu]);
  }
  return {dims, volume};
}

void check_size(const char* func, const char* name, std::size_t size, std::size_t per_site,
                std::size_t volume) {
  if (size != per_site * volume)
    throw std::invalid_argument(std::string("latke::reference::") + func + ": " + name +
                                ".size() = " + std::to_string(size) + ", expected " +
                                std::to_string(per_site) + " * volume = " +
                                std::to_string(per_site * volume) + " complex numbers");
}

SiteSpinor load_spinor(const std::vector<complex>& v, std::size_t site) {
  return Eigen::Map<const SiteSpinor>(v.data() + lex_spinor_index(site, 0, 0));
}

void store_spinor(std::vector<complex>& v, std::size_t site, const SiteSpinor& s) {
  Eigen::Map<SiteSpinor>(v.data() + lex_spinor_index(site, 0, 0)) = s;
}

ColorMatrix load_link(const std::vector<complex>& gauge, const Geometry& g, const Coords& c,
                      int mu) {
  return Eigen::Map<const GaugeLink>(gauge.data() + lex_gauge_index(g.site(c), mu, 0, 0));
}

/// F_{mu nu}(x) = (Q - Q^dag)/8 from the four leaves; raw links, because boundary phases
/// cancel around every closed loop.
ColorMatrix field_strength(const std::vector<complex>& gauge, const Geometry& g,
                           const Coords& x, int mu, int nu) {
  const auto u = [&](const Coords& c, int dir) { return load_link(gauge, g, c, dir); };
  const Coords xpm = g.shift(x, mu, +1), xpn = g.shift(x, nu, +1);
  const Coords xmm = g.shift(x, mu, -1), xmn = g.shift(x, nu, -1);
  const Coords xpn_mm = g.shift(xpn, mu, -1), xmm_mn = g.shift(xmm, nu, -1);
  const Coords xmn_pm = g.shift(xmn, mu, +1);
  const ColorMatrix q =
      u(x, mu) * u(xpm, nu) * u(xpn, mu).adjoint() * u(x, nu).adjoint() +
      u(x, nu) * u(xpn_mm, mu).adjoint() * u(xmm, nu).adjoint() * u(xmm, mu) +
      u(xmm, mu).adjoint() * u(xmm_mn, nu).adjoint() * u(xmm_mn, mu) * u(xmn, nu) +
      u(xmn, nu).adjoint() * u(xmn, mu) * u(xmn_pm, nu) * u(x, mu).adjoint();
  return (q - q.adjoint()) / 8.0;
}

CloverMatrix clover_matrix(const std::vector<complex>& gauge, const WilsonCloverParams& p,
                           const Geometry& g, const std::array<DiracMatrix, n_dim>& gamma,
                           const Coords& x) {
  const complex i(0.0, 1.0);
  CloverMatrix a = (4.0 + p.mass) * CloverMatrix::Identity();
  for (int mu = 0; mu < n_dim; ++mu)
    for (int nu = 0; nu < n_dim; ++nu) {
      if (mu == nu) continue;  // sigma_{mu mu} = 0
      const DiracMatrix sigma = (i / 2.0) * (gamma[mu] * gamma[nu] - gamma[nu] * gamma[mu]);
      const ColorMatrix f = field_strength(gauge, g, x, mu, nu);
      const complex coeff = p.csw * i / 4.0;
      for (int s = 0; s < n_spin; ++s)
        for (int t = 0; t < n_spin; ++t)
          a.block<n_color, n_color>(s * n_color, t * n_color) += coeff * sigma(s, t) * f;
    }
  return a;
}

/// The body of apply_clover without argument checks (apply_wilson_clover checks once).
std::vector<complex> clover_times(const std::vector<complex>& gauge,
                                  const std::vector<complex>& in, const WilsonCloverParams& p,
                                  const Geometry& g) {
  const auto gamma = gammas();
  std::vector<complex> out(in.size());
  using SiteVector = Eigen::Matrix<complex, spinor_site_size, 1>;
  for (std::size_t site = 0; site < g.volume; ++site) {
    const CloverMatrix a = clover_matrix(gauge, p, g, gamma, g.coords(site));
    Eigen::Map<SiteVector>(out.data() + lex_spinor_index(site, 0, 0)) =
        a * Eigen::Map<const SiteVector>(in.data() + lex_spinor_index(site, 0, 0));
  }
  return out;
}

/// The body of apply_hopping without argument checks.
std::vector<complex> hopping_times(const std::vector<complex>& gauge,
                                   const std::vector<complex>& in, const WilsonCloverParams& p,
                                   const Geometry& g, bool dagger) {
  const auto gamma = gammas();
  const DiracMatrix one = DiracMatrix::Identity();
  // Spin matrices act on a SiteSpinor from the right, hence the transposes.
  const double s = dagger ? 1.0 : -1.0;
  std::array<DiracMatrix, n_dim> forward_proj, backward_proj;
  for (int mu = 0; mu < n_dim; ++mu) {
    forward_proj[mu] = (one + s * gamma[mu]).transpose();
    backward_proj[mu] = (one - s * gamma[mu]).transpose();
  }
  std::vector<complex> out(in.size());
  for (std::size_t site = 0; site < g.volume; ++site) {
    const Coords x = g.coords(site);
    SiteSpinor acc = SiteSpinor::Zero();
    for (int mu = 0; mu < n_dim; ++mu) {
      const Coords fwd = g.shift(x, mu, +1);
      ColorMatrix u_fwd = load_link(gauge, g, x, mu);
      if (x[mu] == g.dims[mu] - 1) u_fwd *= p.boundary_phase[mu];
      acc += u_fwd * load_spinor(in, g.site(fwd)) * forward_proj[mu];

      const Coords bwd = g.shift(x, mu, -1);
      ColorMatrix u_bwd = load_link(gauge, g, bwd, mu);
      if (x[mu] == 0) u_bwd *= p.boundary_phase[mu];  // conjugated by the adjoint below
      acc += u_bwd.adjoint() * load_spinor(in, g.site(bwd)) * backward_proj[mu];
    }
    store_spinor(out, site, acc);
  }
  return out;
}

Geometry checked_operator_args(const char* func, const std::vector<complex>& gauge,
                               const std::vector<complex>& in, const WilsonCloverParams& p) {
  const Geometry g = checked_geometry(func, p.dims);
  check_size(func, "gauge", gauge.size(), gauge_site_size, g.volume);
  check_size(func, "in", in.size(), spinor_site_size, g.volume);
  return g;
}

}  // namespace

// The apply_* functions build the result in a fresh vector and then move it into out, so
// out may alias in and need not be sized beforehand.

void apply_hopping(std::vector<complex>& out, const std::vector<complex>& gauge,
                   const std::vector<complex>& in, const WilsonCloverParams& p, bool dagger) {
  const Geometry g = checked_operator_args("apply_hopping", gauge, in, p);
  out = hopping_times(gauge, in, p, g, dagger);
}

void apply_clover(std::vector<complex>& out, const std::vector<complex>& gauge,
                  const std::vector<complex>& in, const WilsonCloverParams& p) {
  const Geometry g = checked_operator_args("apply_clover", gauge, in, p);
  out = clover_times(gauge, in, p, g);
}

void apply_wilson_clover(std::vector<complex>& out, const std::vector<complex>& gauge,
                         const std::vector<complex>& in, const WilsonCloverParams& p,
                         bool dagger) {
  const Geometry g = checked_operator_args("apply_wilson_clover", gauge, in, p);
  // A is Hermitian, so M^dag = A - D_hop^dag / 2 differs from M only in the hopping term.
  std::vector<complex> result = clover_times(gauge, in, p, g);
  const std::vector<complex> hop = hopping_times(gauge, in, p, g, dagger);
  for (std::size_t k = 0; k < result.size(); ++k) result[k] -= 0.5 * hop[k];
  out = std::move(result);
}

std::array<complex, 144> clover_site_matrix(const std::vector<complex>& gauge,
                                            const WilsonCloverParams& p, const Coords& x) {
  const char* func = "clover_site_matrix";
  const Geometry g = checked_geometry(func, p.dims);
  check_size(func, "gauge", gauge.size(), gauge_site_size, g.volume);
  for (int mu = 0; mu < n_dim; ++mu)
    if (x[mu] < 0 || x[mu] >= p.dims[mu])
      throw std::invalid_argument(std::string("latke::reference::") + func + ": x[" +
                                  std::to_string(mu) + "] = " + std::to_string(x[mu]) +
                                  ", expected 0 <= x[" + std::to_string(mu) + "] < " +
                                  std::to_string(p.dims[mu]));
  const CloverMatrix a = clover_matrix(gauge, p, g, gammas(), x);
  std::array<complex, 144> out;
  for (int r = 0; r < 12; ++r)
    for (int c = 0; c < 12; ++c) out[r * 12 + c] = a(r, c);
  return out;
}

}  // namespace latke::reference
