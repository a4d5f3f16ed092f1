// Shifted systems (solvers.h): multi-shift CG refined per shift by mixed-precision CG, and the
// sequential strategy, heaviest first from extrapolated guesses. Host code only: every vector
// operation is a BLAS kernel on the operator's backend.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <vector>

#include "src/core/error.h"
#include "src/fields/blas.h"
#include "solvers/solvers.h"

namespace latke {

using blas::Cplx;

const char* to_string(MultiShiftStrategy s) {
  return s == MultiShiftStrategy::multishift ? "multishift" : "sequential";
}

MultiShiftStrategy parse_multishift_strategy(const std::string& name) {
  if (name == "multishift") return MultiShiftStrategy::multishift;
  if (name == "sequential") return MultiShiftStrategy::sequential;
  fail("unknown multi-mass strategy '", name, "': expected multishift or sequential");
}

std::vector<double> staggered_mass_shifts(const std::vector<double>& masses, double operator_mass) {
  require(!masses.empty(), "the mass list is empty: expected at least one mass");
  require(std::isfinite(operator_mass) && operator_mass >= 0, "staggered mass ", operator_mass,
          ": expected a number >= 0");
  std::vector<double> shifts(masses.size());
  for (std::size_t i = 0; i < masses.size(); ++i) {
    const double m = masses[i];
    require(std::isfinite(m) && m > 0, "mass ", m, " (entry ", i + 1, " of the mass list): expected a number > 0 ",
            "(the even-odd solve needs m > 0)");
    if (i > 0) {
      require(m != masses[i - 1], "mass ", m, " appears twice in the mass list (entries ", i, " and ", i + 1,
              "): expected distinct masses");
      require(m > masses[i - 1], "mass list not in increasing order: ", m, " (entry ", i + 1, ") follows ",
              masses[i - 1], ": expected the masses sorted from the lightest to the heaviest");
    }
    shifts[i] = 4 * (m * m - operator_mass * operator_mass);
  }
  return shifts;
}

namespace {

using Clock = std::chrono::steady_clock;

/// Checks what every strategy takes; returns the tolerance of each shift.
std::vector<double> checked_tolerances(const std::vector<double>& shifts, const std::vector<ColorSpinorField*>& x,
                                       const ColorSpinorField& b, const MultiShiftParam& p) {
  const std::size_t n = shifts.size();
  require(n > 0, "shifted solve: the list of shifts is empty");
  for (std::size_t i = 0; i < n; ++i) {
    require(std::isfinite(shifts[i]), "shift ", i, " is ", shifts[i], ": expected a finite number");
    if (i > 0)
      require(shifts[i] > shifts[i - 1], "shifts must increase strictly: shift ", i, " = ", shifts[i], " follows ",
              shifts[i - 1]);
  }
  require(x.size() == n, "shifted solve: ", x.size(), " solution fields for ", n, " shifts");
  for (std::size_t i = 0; i < n; ++i) {
    require(x[i] != nullptr, "shifted solve: solution field ", i, " is null");
    require(x[i]->precision() == Precision::double_, "shifted solve: solution field ", i, " is in ",
            to_string(x[i]->precision()), " precision, expected double");
    for (std::size_t j = 0; j < i; ++j)
      require(x[i]->block_data(0) != x[j]->block_data(0), "shifted solve: solution fields ", j, " and ", i,
              " are the same field");
  }
  require(b.precision() == Precision::double_, "shifted solve: the source must be a double-precision field");
  require(blas::cdot_norms(b, b).xx > 0, "shifted solve: the source is zero");
  require(p.tol.size() == 1 || p.tol.size() == n, "shifted solve: ", p.tol.size(), " tolerances for ", n,
          " shifts: expected one, or one per shift");
  for (double t : p.tol) require(t > 0 && t < 1, "solver tolerance ", t, ": expected a number in (0, 1)");
  require(p.max_iter >= 1, "solver iteration limit ", p.max_iter, ": expected at least 1");
  require(p.delta > 0 && p.delta < 1, "reliable-update factor ", p.delta, ": expected a number in (0, 1)");
  require(p.extrapolation >= 0, "extrapolation order ", p.extrapolation,
          ": expected the number of earlier solutions to use, 0 or more");
  return p.tol.size() == n ? p.tol : std::vector<double>(n, p.tol[0]);
}

/// op + sigma, or none without op.
std::unique_ptr<ShiftedOperator> shifted(LinearOperator* op, double sigma) {
  return op ? std::make_unique<ShiftedOperator>(*op, sigma) : nullptr;
}

SolverParam cg_param(double tol, const MultiShiftParam& p) {
  SolverParam q;
  q.type = SolverType::cg;
  q.tol = tol;
  q.max_iter = p.max_iter;
  q.delta = p.delta;
  return q;
}

/// Adds one CG solve's counts to the totals and to the shift's record.
void record(MultiShiftStats& st, ShiftStats& s, const SolverStats& cg, bool refinement) {
  (refinement ? s.refine_iterations : s.iterations) = cg.iterations;
  s.initial_residual = cg.initial_residual;
  s.true_residual = cg.true_residual;
  s.converged = cg.converged;
  s.seconds = cg.seconds;
  s.fallback_at = cg.fallback_at;
  st.iterations += cg.iterations;
  st.outer_applications += cg.outer_applications;
  st.sloppy_applications += cg.sloppy_applications;
  st.flops += cg.flops;
}

void finish(MultiShiftStats& st, const LinearOperator& A, Clock::time_point t0) {
  st.converged = std::all_of(st.shifts.begin(), st.shifts.end(), [](const ShiftStats& s) { return s.converged; });
  synchronize(A.field_param().backend);
  st.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

MultiShiftStats solve_multishift(LinearOperator& A, LinearOperator* sloppy, const std::vector<double>& shifts,
                                 const std::vector<ColorSpinorField*>& x, const ColorSpinorField& b,
                                 const MultiShiftParam& p, LinearOperator* fallback) {
  const std::vector<double> tol = checked_tolerances(shifts, x, b, p);
  const auto t0 = Clock::now();
  const int n = static_cast<int>(shifts.size());
  const bool mixed = sloppy && sloppy != &A;
  LinearOperator& S = mixed ? *sloppy : A;
  ShiftedOperator base(A, shifts[0]), base_s(S, shifts[0]);
  MultiShiftStats st;
  st.shifts.resize(n);
  for (int i = 0; i < n; ++i) st.shifts[i].shift = shifts[i];
  const double b2 = blas::cdot_norms(b, b).xx;

  // The iteration's fields in the sloppy precision: the residual of the lowest shift (the
  // others' are zeta_i r), one direction per shift and, when mixed, one partial solution per
  // shift that reliable updates fold into the double solutions (partial_solution_field).
  ColorSpinorField rs = S.make_field(), aps = S.make_field();
  std::vector<ColorSpinorField> ps, xs;
  for (int i = 0; i < n; ++i) {
    ps.push_back(S.make_field());
    ps.back().copy_from(b);
    if (mixed) xs.push_back(partial_solution_field(S));
    x[i]->zero();
  }
  std::unique_ptr<ColorSpinorField> r, tmp, rt;  // double residual and scratch; the residual in sloppy
  if (mixed) {
    r = std::make_unique<ColorSpinorField>(A.make_field());
    tmp = std::make_unique<ColorSpinorField>(A.make_field());
    rt = std::make_unique<ColorSpinorField>(S.make_field());
  }
  auto partial = [&](int i) -> ColorSpinorField& { return mixed ? xs[i] : *x[i]; };
  auto fold = [&](int i) {
    if (!mixed) return;
    tmp->copy_from(xs[i]);
    blas::caxpby(Cplx(1), *tmp, Cplx(1), *x[i]);
    xs[i].zero();
  };
  auto target = [&](int i) { return tol[i] * tol[i] * b2; };

  rs.copy_from(b);
  double r2 = b2, maxr = std::sqrt(b2);
  std::vector<double> zeta(n, 1.0), zeta_old(n, 1.0);
  std::vector<char> active(n, 1);
  double alpha_old = 1, beta_old = 0;
  bool confirmed = false;  // the lowest shift's true residual met its tolerance
  int it = 0;
  long outer = 0, sloppy_apps = 0;
  std::vector<ColorSpinorField*> ux, up;
  std::vector<double> ua, uz, ub;
  while (active[0] && it < p.max_iter) {
    base_s.apply(aps, ps[0]);
    ++(mixed ? sloppy_apps : outer);
    const double pap = blas::cdot_norms(ps[0], aps).dot.re;
    require(pap > 0, "multi-shift CG: <p, (A + sigma_0) p> = ", pap,
            " is not positive: the lowest shifted operator is not Hermitian positive definite");
    const double alpha = r2 / pap;
    double r2new = blas::caxpby_norm(Cplx(-alpha), aps, Cplx(1), rs);
    const double beta = r2new / r2;
    // The shifted coefficients (Jegerlehner): zeta_i r is shift i's residual.
    ux.clear(), up.clear(), ua.clear(), uz.clear(), ub.clear();
    for (int i = 0; i < n; ++i) {
      if (!active[i]) continue;
      double z = 1, a = alpha, c = beta;
      if (i > 0) {
        const double s = shifts[i] - shifts[0];
        z = zeta[i] * zeta_old[i] * alpha_old /
            (alpha * beta_old * (zeta_old[i] - zeta[i]) + zeta_old[i] * alpha_old * (1 + s * alpha));
        a = alpha * z / zeta[i];
        c = beta * (z / zeta[i]) * (z / zeta[i]);
        zeta_old[i] = zeta[i];
        zeta[i] = z;
      }
      ux.push_back(&partial(i));
      up.push_back(&ps[i]);
      ua.push_back(a);
      uz.push_back(z);
      ub.push_back(c);
    }
    blas::multishift_update(rs, ux, up, ua, uz, ub);
    alpha_old = alpha;
    beta_old = beta;
    ++it;
    // Reliable update of the lowest shift: its residual recomputed in double (also to
    // confirm its convergence, once). The directions just made from the iterated residual
    // r' are remade from the true one r, p_i = zeta_i r + beta_i p_i(old), with p_i(old)
    // made orthogonal to r again (as QUDA does): p_i += a_i r - zeta_i r', where
    // a_i = zeta_i - (<r, p_i> - zeta_i <r, r'>) / |r|^2.
    if (mixed && (std::sqrt(r2new) < p.delta * maxr || (r2new <= target(0) && !confirmed))) {
      for (int i = 0; i < n; ++i)
        if (active[i]) fold(i);
      base.apply(*r, *x[0]);
      ++outer;
      r2new = blas::caxpby_norm(Cplx(1), b, Cplx(-1), *r);
      rt->copy_from(*r);
      const Cplx rr = blas::cdot_norms(*rt, rs).dot;
      for (int k = 0; k < static_cast<int>(up.size()); ++k) {
        const Cplx a = Cplx(uz[k]) - (blas::cdot_norms(*rt, *up[k]).dot - Cplx(uz[k]) * rr) / Cplx(r2new);
        blas::caxpbypcz(a, *rt, Cplx(-uz[k]), rs, Cplx(1), *up[k]);
      }
      rs.copy_from(*rt);
      maxr = std::sqrt(r2new);
      confirmed = r2new <= target(0);
    }
    r2 = r2new;
    // Converged shifts stop; the lowest drives the others and stops last.
    bool others = false;
    for (int i = 1; i < n; ++i) {
      if (active[i] && zeta[i] * zeta[i] * r2 <= target(i)) {
        active[i] = 0;
        st.shifts[i].iterations = it;
        fold(i);
      }
      others = others || active[i];
    }
    if (!others && r2 <= target(0)) active[0] = 0;
  }
  for (int i = 0; i < n; ++i)
    if (active[i]) {  // the iteration limit reached
      fold(i);
      st.shifts[i].iterations = it;
    }
  st.shifts[0].iterations = it;
  st.iterations = it;
  st.outer_applications = outer;
  st.sloppy_applications = sloppy_apps;
  double local = outer * base.flops() + sloppy_apps * base_s.flops();
  MPI_Allreduce(&local, &st.flops, 1, MPI_DOUBLE, MPI_SUM, A.lattice()->comm());
  // Refinement: each shift's true residual to its tolerance by mixed-precision CG.
  for (int i = 0; i < n; ++i) {
    ShiftedOperator ai(A, shifts[i]), si(S, shifts[i]);
    const SolverStats cg =
        solve(ai, mixed ? &si : nullptr, nullptr, *x[i], b, cg_param(tol[i], p), shifted(fallback, shifts[i]).get());
    record(st, st.shifts[i], cg, true);
  }
  finish(st, A, t0);
  return st;
}

MultiShiftStats solve_multimass(LinearOperator& A, LinearOperator* sloppy, const std::vector<double>& shifts,
                                const std::vector<ColorSpinorField*>& x, const ColorSpinorField& b,
                                const MultiShiftParam& p, LinearOperator* fallback) {
  const std::vector<double> tol = checked_tolerances(shifts, x, b, p);
  const auto t0 = Clock::now();
  const int n = static_cast<int>(shifts.size());
  const bool mixed = sloppy && sloppy != &A;
  MultiShiftStats st;
  st.shifts.resize(n);
  for (int k = n - 1; k >= 0; --k) {
    st.shifts[k].shift = shifts[k];
    // The Lagrange polynomial in sigma through the m nearest solutions (k+1 .. k+m), at sigma_k.
    const int m = std::min(p.extrapolation, n - 1 - k);
    x[k]->zero();
    for (int j = k + 1; j <= k + m; ++j) {
      double c = 1;
      for (int l = k + 1; l <= k + m; ++l)
        if (l != j) c *= (shifts[k] - shifts[l]) / (shifts[j] - shifts[l]);
      blas::caxpby(Cplx(c), *x[j], Cplx(1), *x[k]);
    }
    ShiftedOperator ak(A, shifts[k]);
    const std::unique_ptr<ShiftedOperator> sk = shifted(mixed ? sloppy : nullptr, shifts[k]),
                                           fk = shifted(fallback, shifts[k]);
    const SolverStats cg = solve(ak, sk.get(), nullptr, *x[k], b, cg_param(tol[k], p), fk.get());
    record(st, st.shifts[k], cg, false);
  }
  finish(st, A, t0);
  return st;
}

MultiShiftStats solve_shifted(LinearOperator& A, LinearOperator* sloppy, const std::vector<double>& shifts,
                              const std::vector<ColorSpinorField*>& x, const ColorSpinorField& b,
                              const MultiShiftParam& param, LinearOperator* fallback) {
  return param.strategy == MultiShiftStrategy::multishift ? solve_multishift(A, sloppy, shifts, x, b, param, fallback)
                                                          : solve_multimass(A, sloppy, shifts, x, b, param, fallback);
}

}  // namespace latke
