// Host-side compositions of the reference operator into the even-odd forms, for tests:
// built only from reference.h (lexicographic, double) and Eigen, never from the kernels.
#pragma once

#include <Eigen/Dense>
#include <array>
#include <complex>
#include <vector>

#include "tests/reference/wilson_reference.h"

namespace latke::test {

using cvec = std::vector<std::complex<double>>;

inline int site_parity(long site, const std::array<int, 4>& d) {
  const int x = site % d[0], y = (site / d[0]) % d[1], z = (site / (d[0] * d[1])) % d[2], t = site / (d[0] * d[1] * d[2]);
  return (x + y + z + t) & 1;
}

/// Zero the sites of the other parity.
inline cvec restrict_parity(const cvec& v, int parity, const std::array<int, 4>& d) {
  cvec r(v.size());
  const long vol = static_cast<long>(d[0]) * d[1] * d[2] * d[3];
  for (long s = 0; s < vol; ++s)
    if (site_parity(s, d) == parity)
      for (int k = 0; k < 12; ++k) r[s * 12 + k] = v[s * 12 + k];
  return r;
}

/// The reference operator's pieces on one lattice: hopping, A and A^-1 per site.
class HostWilson {
 public:
  HostWilson(const cvec& gauge, const reference::WilsonCloverParams& p) : gauge_(gauge), p_(p) {
    const long vol = volume();
    a_.resize(vol);
    a_inv_.resize(vol);
    for (long s = 0; s < vol; ++s) {
      std::array<int, 4> c{static_cast<int>(s % p.dims[0]), static_cast<int>((s / p.dims[0]) % p.dims[1]),
                           static_cast<int>((s / (p.dims[0] * p.dims[1])) % p.dims[2]),
                           static_cast<int>(s / (p.dims[0] * p.dims[1] * p.dims[2]))};
      const auto m = reference::clover_site_matrix(gauge, p, c);
      for (int i = 0; i < 12; ++i)
        for (int j = 0; j < 12; ++j) a_[s](i, j) = m[i * 12 + j];
      a_inv_[s] = a_[s].inverse();
    }
  }
  long volume() const { return static_cast<long>(p_.dims[0]) * p_.dims[1] * p_.dims[2] * p_.dims[3]; }
  const std::array<int, 4>& dims() const { return p_.dims; }

  cvec hop(const cvec& in, bool dagger) const {
    cvec out(in.size());
    reference::apply_hopping(out, gauge_, in, p_, dagger);
    return out;
  }
  cvec site(const cvec& in, bool inverse) const {
    cvec out(in.size());
    for (long s = 0; s < volume(); ++s) {
      Eigen::Matrix<std::complex<double>, 12, 1> v;
      for (int k = 0; k < 12; ++k) v[k] = in[s * 12 + k];
      v = (inverse ? a_inv_[s] : a_[s]) * v;
      for (int k = 0; k < 12; ++k) out[s * 12 + k] = v[k];
    }
    return out;
  }
  cvec full(const cvec& in, bool dagger) const {
    cvec out(in.size());
    reference::apply_wilson_clover(out, gauge_, in, p_, dagger);
    return out;
  }
  /// Mhat on parity p (in holds parity p only); symmetric or asymmetric, dagger or not.
  cvec schur(const cvec& in, int p, bool symmetric, bool dagger) const {
    const int q = 1 - p;
    cvec x = in;
    if (symmetric && dagger) x = site(in, true);  // A_pp^-1 first
    const cvec t = site(restrict_parity(hop(x, dagger), q, dims()), true);
    const cvec h = restrict_parity(hop(t, dagger), p, dims());
    cvec out(in.size());
    if (!symmetric) {
      const cvec ax = site(in, false);
      for (std::size_t i = 0; i < in.size(); ++i) out[i] = ax[i] - 0.25 * h[i];
    } else if (!dagger) {
      const cvec ah = site(h, true);
      for (std::size_t i = 0; i < in.size(); ++i) out[i] = in[i] - 0.25 * ah[i];
    } else {
      for (std::size_t i = 0; i < in.size(); ++i) out[i] = in[i] - 0.25 * h[i];
    }
    return restrict_parity(out, p, dims());
  }

 private:
  cvec gauge_;
  reference::WilsonCloverParams p_;
  std::vector<Eigen::Matrix<std::complex<double>, 12, 12>> a_, a_inv_;
};

/// ||a - b|| / ||b|| over the sites of the given parity (-1: all).
inline double rel_diff(const cvec& a, const cvec& b) {
  double d = 0, n = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    d += std::norm(a[i] - b[i]);
    n += std::norm(b[i]);
  }
  return std::sqrt(d / n);
}

}  // namespace latke::test
