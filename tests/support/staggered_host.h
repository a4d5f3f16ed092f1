// Host-side compositions of the staggered reference operator (tests/reference/staggered_reference.h)
// into the forms the optimized operator has, for tests: built only from the reference,
// lexicographic, double, never from the kernels.
#pragma once

#include <array>
#include <cmath>
#include <complex>
#include <vector>

#include "tests/reference/staggered_reference.h"

namespace latke::test {

using cvec = std::vector<std::complex<double>>;

/// Zero the color vectors of the other parity (3 complex numbers per site).
inline cvec restrict_vector_parity(const cvec& v, int parity, const std::array<int, 4>& d) {
  cvec r(v.size());
  const long vol = static_cast<long>(d[0]) * d[1] * d[2] * d[3];
  for (long s = 0; s < vol; ++s) {
    const int x = s % d[0], y = (s / d[0]) % d[1], z = (s / (d[0] * d[1])) % d[2], t = s / (d[0] * d[1] * d[2]);
    if (((x + y + z + t) & 1) == parity)
      for (int k = 0; k < 3; ++k) r[s * 3 + k] = v[s * 3 + k];
  }
  return r;
}

/// The reference staggered operator on one lattice, with links fattened by the reference.
class HostStaggered {
 public:
  /// improved: fat and long links from reference::fatten with the given coefficients; naive:
  /// the thin links.
  HostStaggered(const cvec& thin, const reference::StaggeredParams& p, const reference::FatteningCoefficients& c)
      : p_(p) {
    if (p.improved)
      reference::fatten(fat_, lng_, thin, p.dims, c);
    else
      fat_ = thin;
  }
  HostStaggered(const cvec& fat, const cvec& lng, const reference::StaggeredParams& p) : p_(p), fat_(fat), lng_(lng) {}

  const std::array<int, 4>& dims() const { return p_.dims; }
  const cvec& fat() const { return fat_; }
  const cvec& lng() const { return lng_; }
  double mass() const { return p_.mass; }

  cvec dslash(const cvec& in) const {
    cvec out;
    reference::apply_staggered_dslash(out, fat_, lng_, in, p_);
    return out;
  }
  cvec full(const cvec& in, bool dagger) const {
    cvec out;
    reference::apply_staggered(out, fat_, lng_, in, p_, dagger);
    return out;
  }
  /// (4m^2 - D_pq D_qp) in on parity p (in holds parity p only).
  cvec normal(const cvec& in, int p) const {
    const cvec t = restrict_vector_parity(dslash(in), 1 - p, dims());
    const cvec dd = dslash(t);
    cvec out(in.size());
    for (std::size_t i = 0; i < in.size(); ++i) out[i] = 4 * p_.mass * p_.mass * in[i] - dd[i];
    return restrict_vector_parity(out, p, dims());
  }

 private:
  reference::StaggeredParams p_;
  cvec fat_, lng_;
};

/// ||a - b|| / ||b||.
inline double rel_diff_vec(const cvec& a, const cvec& b) {
  double d = 0, n = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    d += std::norm(a[i] - b[i]);
    n += std::norm(b[i]);
  }
  return std::sqrt(d / n);
}

}  // namespace latke::test
