// Solvers over sets of right-hand sides (solvers.h, "Sets of systems").
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <sstream>
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
    if (precise) {  // the true residual again once the iterated one of a system has fallen by delta
      bool update = false;
      for (int k = 0; k < n; ++k)
        update = update || (active[k] && (std::sqrt(r2[k]) < p.delta * maxr[k] || r2[k] <= p.tol * p.tol * b2[k]));
      if (update) {
        true_residual();
        for (int k = 0; k < n; ++k) maxr[k] = std::sqrt(r2[k]);
      }
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

// Independent Krylov spaces rather than a block method: each system's GCR is the one solve()
// runs (GcrCycle), so its iterations and result are those of a single solve to rounding, and a
// system that converges early stops costing reductions. The set shares what dominates the
// cost of a preconditioned iteration: the multigrid cycle and the operator, which read their
// coefficients once for the set. The Gram-Schmidt reductions stay per system; each is a pass
// over the system's own fields, so fusing them across the set would save only host
// synchronisations, a few per system and iteration.
std::vector<SolverStats> gcr_set(LinearOperator& A, LinearOperator* sloppy, Preconditioner* K,
                                 std::vector<ColorSpinorField>& x, const std::vector<ColorSpinorField>& b,
                                 const SolverParam& p) {
  const auto t0 = std::chrono::steady_clock::now();
  const int n = static_cast<int>(b.size());
  require(p.type == SolverType::gcr, "gcr_set: the solver is ", to_string(p.type), "; expected gcr");
  require(n >= 1 && n <= blas::set_max && static_cast<int>(x.size()) == n, "gcr_set: ", x.size(), " solutions and ", n,
          " right-hand sides; expected equal counts from 1 to ", blas::set_max);
  require(p.tol > 0 && p.tol < 1, "solver tolerance ", p.tol, ": expected a number in (0, 1)");
  require(p.max_iter >= 1, "solver iteration limit ", p.max_iter, ": expected at least 1");
  require(p.restart >= 1, "GCR restart ", p.restart, ": expected at least 1");
  require(p.restart_drop > 0 && p.restart_drop < 1, "GCR restart drop ", p.restart_drop,
          ": expected a number in (0, 1)");
  const Precision ap = A.field_param().precision;
  for (int k = 0; k < n; ++k)
    require(x[k].precision() == ap && b[k].precision() == ap, "gcr_set: solution and source ", k,
            " must be in the operator's ", to_string(ap), " precision (got ", to_string(x[k].precision()), " and ",
            to_string(b[k].precision()), ")");
  LinearOperator& S = sloppy ? *sloppy : A;
  const bool mixed = sloppy && sloppy != &A;
  auto make = [&](const SpinorParam& sp) { return ColorSpinorField::make_set(A.lattice(), sp, n); };
  std::vector<ColorSpinorField> r = make(A.field_param());
  std::vector<ColorSpinorField> rs_mixed, xs_mixed;
  std::optional<ColorSpinorField> tmp;
  if (mixed) {
    rs_mixed = make(S.field_param());
    xs_mixed = make(partial_solution_field(S).param());
    tmp.emplace(A.make_field());
  }
  std::vector<ColorSpinorField>& rs = mixed ? rs_mixed : r;
  std::vector<ColorSpinorField>& xs = mixed ? xs_mixed : x;
  // Direction j of every system is field k of the sets z[j], az[j]; system k's cycle sees its own.
  std::vector<std::vector<ColorSpinorField>> z, az;
  for (int j = 0; j < p.restart; ++j) {
    z.push_back(make(S.field_param()));
    az.push_back(make(S.field_param()));
  }
  std::vector<std::vector<ColorSpinorField>> zk(n), azk(n);
  std::vector<std::unique_ptr<GcrCycle>> cycle;
  for (int k = 0; k < n; ++k) {
    for (int j = 0; j < p.restart; ++j) {
      zk[k].push_back(z[j][k]);
      azk[k].push_back(az[j][k]);
    }
    cycle.push_back(std::make_unique<GcrCycle>(zk[k], azk[k], p.restart));
  }
  std::vector<SolverStats> st(n);
  std::vector<double> b2(n), target(n), r2(n), best(n), cycle_target(n);
  std::vector<int> best_at(n, 0);
  std::vector<bool> active(n), in_cycle(n);
  auto true_residual = [&](int k) {
    A.apply(r[k], x[k]);
    ++st[k].outer_applications;
    return blas::caxpby_norm(Cplx(1), b[k], Cplx(-1), r[k]);
  };
  auto count_set = [&](bool sloppy_op) {
    for (int k = 0; k < n; ++k) ++(sloppy_op && mixed ? st[k].sloppy_applications : st[k].outer_applications);
  };
  for (int k = 0; k < n; ++k) {
    b2[k] = blas::cdot_norms(b[k], b[k]).xx;
    require(b2[k] > 0, "gcr_set: source ", k, " is zero");
    target[k] = p.tol * p.tol * b2[k];
    r2[k] = true_residual(k);
    st[k].initial_residual = std::sqrt(r2[k] / b2[k]);
    best[k] = r2[k];
    active[k] = r2[k] > target[k];
  }
  if (p.monitor) {
    double worst = 0;
    for (const SolverStats& s : st) worst = std::max(worst, s.initial_residual);
    p.monitor(0, worst);
  }
  int iterations = 0;  // of the set: the most any system made
  auto any = [](const std::vector<bool>& v) { return std::find(v.begin(), v.end(), true) != v.end(); };
  while (any(active) && iterations < p.max_iter) {
    for (int k = 0; k < n; ++k) {
      in_cycle[k] = active[k];
      if (active[k] && p.stall_iterations > 0 && st[k].iterations - best_at[k] >= p.stall_iterations) {
        std::ostringstream why;
        why << "the true residual stayed above " << std::sqrt(0.81 * best[k] / b2[k]) << " of |b| for the last "
            << st[k].iterations - best_at[k] << " iterations (stalled)";
        st[k].stop_reason = why.str();
        active[k] = in_cycle[k] = false;
      }
      if (mixed) rs[k].copy_from(r[k]);
      if (!in_cycle[k]) rs[k].zero();  // a zero residual: the set's directions for k are zero
      cycle_target[k] = mixed ? std::max(target[k], p.restart_drop * p.restart_drop * r2[k]) : target[k];
      cycle[k]->begin();
    }
    for (int j = 0; j < p.restart && any(in_cycle) && iterations < p.max_iter; ++j) {
      if (K) {
        K->apply_set(z[j], rs);
      } else {
        for (int k = 0; k < n; ++k) z[j][k].copy_from(rs[k]);
      }
      S.apply_set(az[j], z[j]);
      count_set(true);
      ++iterations;
      double worst = 0;
      for (int k = 0; k < n; ++k) {
        if (!in_cycle[k]) continue;
        r2[k] = cycle[k]->add(rs[k], "GCR (a set)");
        ++st[k].iterations;
        worst = std::max(worst, r2[k] / b2[k]);
        if (r2[k] <= cycle_target[k]) {
          in_cycle[k] = false;
          rs[k].zero();
        }
      }
      if (p.monitor) p.monitor(iterations, std::sqrt(worst));
    }
    for (int k = 0; k < n; ++k) {
      if (!active[k]) continue;
      cycle[k]->update(xs[k]);
      if (mixed) {
        tmp->copy_from(xs[k]);
        blas::caxpby(Cplx(1), *tmp, Cplx(1), x[k]);
        xs[k].zero();
      }
      r2[k] = true_residual(k);  // restart from the true residual
      ++st[k].reliable_updates;
      if (r2[k] < 0.81 * best[k]) {
        best[k] = r2[k];
        best_at[k] = st[k].iterations;
      }
      active[k] = r2[k] > target[k];
    }
  }
  synchronize(A.field_param().backend);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (int k = 0; k < n; ++k) {  // the verdict, in double with the operator itself
    const double rk = true_residual(k);
    st[k].true_residual = std::sqrt(rk / b2[k]);
    st[k].converged = st[k].true_residual <= p.tol * (1 + 1e-6);
    st[k].seconds = seconds;
    double local = st[k].outer_applications * A.flops() + st[k].sloppy_applications * (mixed ? S.flops() : 0.0);
    MPI_Allreduce(&local, &st[k].flops, 1, MPI_DOUBLE, MPI_SUM, A.lattice()->comm());
  }
  return st;
}

}  // namespace latke
