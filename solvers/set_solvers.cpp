// Solvers over sets of right-hand sides (solvers.h, "Sets of systems").
#include <chrono>
#include <cmath>
#include <vector>

#include "src/core/error.h"
#include "src/fields/blas.h"
#include "solvers/solvers.h"

namespace latke {

using blas::Cplx;

// Each system k runs the BiCGstab recurrences of solvers.cpp (without reliable updates or
// restarts) with its own rho, alpha, omega; the set operations update every field with its
// own coefficients in one pass. A system that has converged, broken down (rho or <rhat, A p>
// zero, a non-finite coefficient) or reached max_iter is frozen: its coefficients are zero from
// then on, so its fields keep their values while the set goes on being applied as a whole.
std::vector<SolverStats> bicgstab_set(const SetOperator& A, std::vector<ColorSpinorField>& x,
                                      const std::vector<ColorSpinorField>& b, const SolverParam& p,
                                      const SetOperator* precise, const std::vector<ColorSpinorField>* b_precise) {
  const auto t0 = std::chrono::steady_clock::now();
  const int n = static_cast<int>(b.size());
  require(n >= 1 && n <= blas::set_max && static_cast<int>(x.size()) == n, "bicgstab_set: ", x.size(),
          " solutions and ", n, " right-hand sides; expected equal counts from 1 to ", blas::set_max);
  require(p.tol > 0 && p.max_iter >= 0, "bicgstab_set: tolerance ", p.tol, " and ", p.max_iter,
          " iterations: expected a positive tolerance and a non-negative count");
  auto make = [&] { return ColorSpinorField::make_set(b[0].lattice_ptr(), b[0].param(), n); };
  std::vector<ColorSpinorField> r = make(), rhat = make(), ps = make(), v = make(), t = make();
  std::vector<SolverStats> st(n);
  std::vector<Cplx> one(n, Cplx(1)), minus(n, Cplx(-1)), ca(n), cb(n), cc(n);
  std::vector<double> b2(n), r2(n);
  std::vector<blas::DotNorms> dn(n);
  // x may be stored more precisely than b (an accumulator: the updates are in b's precision);
  // the operator then takes x rounded to b's precision, through t.
  const bool promote = x[0].precision() != b[0].precision();
  require(!precise == !b_precise, "bicgstab_set: a precise operator needs the right-hand sides in its precision");
  if (precise)
    require(promote && b_precise->size() == b.size() && (*b_precise)[0].precision() == x[0].precision(),
            "bicgstab_set: reliable updates need the solutions and the precise right-hand sides in one precision, "
            "above the iteration's ",
            to_string(b[0].precision()));
  std::vector<ColorSpinorField> rp;  // b - A x in the precise operator's precision
  if (precise) rp = ColorSpinorField::make_set(x[0].lattice_ptr(), x[0].param(), n);
  // r = b - A x, r2 its norms (summed before rounding to r): with the precise operator where
  // there is one, else with A on x (rounded to b's precision through t if it is more precise).
  auto true_residual = [&] {
    if (precise) {
      (*precise)(rp, x);
      blas::caxpbypcz_set(one.data(), *b_precise, nullptr, nullptr, minus.data(), rp, r2.data());
      for (int k = 0; k < n; ++k) r[k].copy_from(rp[k]);
      return;
    }
    if (promote) {
      for (int k = 0; k < n; ++k) t[k].copy_from(x[k]);
      A(r, t);
    } else {
      A(r, x);
    }
    blas::caxpbypcz_set(one.data(), b, nullptr, nullptr, minus.data(), r, r2.data());
  };
  // r_k = b_k - A x_k with the precise operator, for system k alone (a set of one field).
  auto true_residual_of = [&](int k) {
    std::vector<ColorSpinorField> rk{rp[k]};
    const std::vector<ColorSpinorField> xk{x[k]}, bk{(*b_precise)[k]};
    (*precise)(rk, xk);
    blas::caxpbypcz_set(one.data(), bk, nullptr, nullptr, minus.data(), rk, &r2[k]);
    r[k].copy_from(rp[k]);
  };
  // r = b - A x, rhat = r.
  true_residual();
  const std::vector<ColorSpinorField>& bb = precise ? *b_precise : b;
  blas::cdot_norms_set(bb, bb, dn.data());
  std::vector<bool> active(n);
  std::vector<double> maxr(n);  // |r| at the last reliable update
  for (int k = 0; k < n; ++k) {
    maxr[k] = std::sqrt(r2[k]);
    b2[k] = dn[k].xx;
    st[k].initial_residual = b2[k] > 0 ? std::sqrt(r2[k] / b2[k]) : 0;
    active[k] = b2[k] > 0 && r2[k] > p.tol * p.tol * b2[k];
    rhat[k].copy_from(r[k]);
  }
  std::vector<Cplx> rho(n, Cplx(1)), alpha(n, Cplx(1)), omega(n, Cplx(1));
  const auto usable = [](Cplx c) { return std::isfinite(c.re) && std::isfinite(c.im) && norm2(c) > 0; };
  auto any = [&] {
    for (int k = 0; k < n; ++k)
      if (active[k]) return true;
    return false;
  };
  for (int it = 0; it < p.max_iter && any(); ++it) {
    // p = r + beta (p - omega v)
    blas::cdot_norms_set(rhat, r, dn.data());
    std::vector<Cplx> rho_new(n);
    for (int k = 0; k < n; ++k) {
      rho_new[k] = dn[k].dot;
      const Cplx beta = (rho_new[k] / rho[k]) * (alpha[k] / omega[k]);
      if (active[k] && !(norm2(rho_new[k]) > 0 && usable(beta))) active[k] = false;
      ca[k] = active[k] ? Cplx(1) : Cplx(0);
      cb[k] = active[k] ? -(beta * omega[k]) : Cplx(0);
      cc[k] = active[k] ? beta : Cplx(1);
    }
    blas::caxpbypcz_set(ca.data(), r, cb.data(), &v, cc.data(), ps);
    A(v, ps);
    blas::cdot_norms_set(rhat, v, dn.data());
    for (int k = 0; k < n; ++k) {
      const Cplx a = rho_new[k] / dn[k].dot;
      if (active[k] && !usable(a)) active[k] = false;
      alpha[k] = active[k] ? a : alpha[k];
      ca[k] = active[k] ? -alpha[k] : Cplx(0);
    }
    blas::caxpbypcz_set(ca.data(), v, nullptr, nullptr, one.data(), r);  // s = r - alpha v
    A(t, r);
    blas::cdot_norms_set(t, r, dn.data());
    for (int k = 0; k < n; ++k) {
      if (active[k]) {
        omega[k] = dn[k].xx > 0 ? dn[k].dot / Cplx(dn[k].xx) : Cplx(0);
        rho[k] = rho_new[k];
        if (!std::isfinite(omega[k].re) || !std::isfinite(omega[k].im)) active[k] = false;  // t overflowed
      }
      ca[k] = active[k] ? alpha[k] : Cplx(0);
      cb[k] = active[k] ? omega[k] : Cplx(0);
      cc[k] = active[k] ? -omega[k] : Cplx(0);
    }
    blas::caxpbypcz_set(ca.data(), ps, cb.data(), &r, one.data(), x);               // x += alpha p + omega s
    blas::caxpbypcz_set(cc.data(), t, nullptr, nullptr, one.data(), r, r2.data());  // r = s - omega t
    // The true residual again, system by system, once a system's iterated residual has fallen by
    // delta: the systems fall at their own pace, and a whole set's update on the first of them
    // made a set of 24 update at most iterations, where each system needs a few updates in all.
    if (precise)
      for (int k = 0; k < n; ++k)
        if (active[k] && (std::sqrt(r2[k]) < p.delta * maxr[k] || r2[k] <= p.tol * p.tol * b2[k])) {
          true_residual_of(k);
          maxr[k] = std::sqrt(r2[k]);
          ++st[k].reliable_updates;
        }
    for (int k = 0; k < n; ++k) {
      if (!active[k]) continue;
      ++st[k].iterations;
      if (!std::isfinite(r2[k]) || r2[k] <= p.tol * p.tol * b2[k] || !usable(omega[k])) active[k] = false;
    }
  }
  // The true residuals, in b's precision (or the precise operator's).
  true_residual();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (int k = 0; k < n; ++k) {
    st[k].true_residual = b2[k] > 0 ? std::sqrt(r2[k] / b2[k]) : 0;
    st[k].converged = st[k].true_residual <= p.tol;
    st[k].sloppy_applications = 0;
    st[k].outer_applications = 2L * st[k].iterations + 2;
    st[k].seconds = seconds;
  }
  return st;
}

}  // namespace latke
