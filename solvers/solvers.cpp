// The native solvers (solvers.h): CG, CGNE/CGNR, BiCGstab with reliable updates, flexible
// GCR(k) with restarts, MR. Host code only: every vector operation is a BLAS kernel.
#include "solvers/solvers.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <sstream>
#include <vector>

#include <Eigen/Dense>

#include "src/core/error.h"
#include "src/core/log.h"
#include "src/fields/blas.h"

namespace latke {

using blas::Cplx;

const char* to_string(SolverType t) {
  switch (t) {
    case SolverType::cg: return "cg";
    case SolverType::cgne: return "cgne";
    case SolverType::cgnr: return "cgnr";
    case SolverType::bicgstab: return "bicgstab";
    case SolverType::gcr: return "gcr";
    case SolverType::mr: return "mr";
  }
  return "?";
}

SolverType parse_solver_type(const std::string& name) {
  for (SolverType t : {SolverType::cg, SolverType::cgne, SolverType::cgnr, SolverType::bicgstab, SolverType::gcr,
                       SolverType::mr})
    if (name == to_string(t)) return t;
  fail("unknown solver '", name, "': expected cg, cgne, cgnr, bicgstab, gcr or mr");
}

ColorSpinorField partial_solution_field(const LinearOperator& sloppy) {
  SpinorParam sp = sloppy.field_param();
  if (sp.precision == Precision::half) sp.precision = Precision::single;
  return ColorSpinorField(sloppy.lattice(), sp);
}

namespace {

/// Counts applications of the two operators and keeps the double solution and residual.
class Work {
 public:
  Work(LinearOperator& a, LinearOperator* sloppy, SolverStats& st, LinearOperator* fallback = nullptr)
      : a_(a), s_(sloppy ? sloppy : &a), fallback_(sloppy && sloppy != &a ? fallback : nullptr), st_(st),
        mixed_(sloppy && sloppy != &a) {}
  LinearOperator& outer() { return a_; }
  bool mixed() const { return mixed_; }
  void apply_outer(ColorSpinorField& out, const ColorSpinorField& in) {
    a_.apply(out, in);
    ++st_.outer_applications;
  }
  void apply_sloppy(ColorSpinorField& out, const ColorSpinorField& in) {
    s_->apply(out, in);
    if (mixed_)
      ++st_.sloppy_applications;
    else
      ++st_.outer_applications;
  }
  /// Iterate with the fallback operator from now on; false when there is none (left).
  bool fall_back() {
    if (!fallback_) return false;
    s_ = fallback_;
    fallback_ = nullptr;
    st_.fallback_at = st_.iterations;
    return true;
  }
  ColorSpinorField sloppy_field() { return s_->make_field(); }
  ColorSpinorField accumulator_field() { return partial_solution_field(*s_); }
  ColorSpinorField outer_field() { return a_.make_field(); }
  /// r = b - A x (double); returns |r|^2.
  double true_residual(ColorSpinorField& r, const ColorSpinorField& x, const ColorSpinorField& b) {
    apply_outer(r, x);
    return blas::caxpby_norm(Cplx(1), b, Cplx(-1), r);
  }
  double flops_per(bool outer) const { return outer ? a_.flops() : s_->flops(); }

 private:
  LinearOperator& a_;
  LinearOperator* s_;
  LinearOperator* fallback_;
  SolverStats& st_;
  bool mixed_;
};

/// The monitor's call (SolverParam::monitor), if there is one: |r|^2 and |b|^2 given.
void report(const SolverParam& p, int iteration, double r2, double b2) {
  if (p.monitor) p.monitor(iteration, std::sqrt(r2 / b2));
}

/// GCR's stop reason once its true residual has stayed above 0.9 of its best (|r|^2 best, |b|^2
/// b2) for `iterations` iterations.
std::string stall_reason(double best, double b2, int iterations) {
  std::ostringstream why;
  why << "the true residual stayed above " << std::sqrt(0.81 * best / b2) << " of |b| for the last " << iterations
      << " iterations (stalled)";
  return why.str();
}

/// x += xs (xs sloppy), then xs = 0.
void fold(ColorSpinorField& x, ColorSpinorField& xs, ColorSpinorField& tmp) {
  tmp.copy_from(xs);
  blas::caxpby(Cplx(1), tmp, Cplx(1), x);
  xs.zero();
}

void cg(Work& w, ColorSpinorField& x, const ColorSpinorField& b, const SolverParam& p, SolverStats& st) {
  ColorSpinorField r = w.outer_field(), tmp = w.outer_field();
  ColorSpinorField rs = w.sloppy_field(), ps = w.sloppy_field(), aps = w.sloppy_field(), xs = w.accumulator_field();
  const double b2 = blas::cdot_norms(b, b).xx, target = p.tol * p.tol * b2;
  double r2 = w.true_residual(r, x, b);
  st.initial_residual = std::sqrt(r2 / b2);
  if (st.iterations == 0) report(p, 0, r2, b2);  // CGNR calls cg again to tighten
  rs.copy_from(r);
  ps.copy_from(r);
  double maxr = std::sqrt(r2);
  while (r2 > target && st.iterations < p.max_iter) {
    bool restart = false;
    w.apply_sloppy(aps, ps);
    const double pap = blas::cdot_norms(ps, aps).dot.re;
    require(pap > 0, "CG: <p, A p> = ", pap, " is not positive: the operator is not Hermitian positive definite");
    const double alpha = r2 / pap;
    blas::caxpy_promote(Cplx(alpha), ps, xs);
    double r2new = blas::caxpby_norm(Cplx(-alpha), aps, Cplx(1), rs);
    ++st.iterations;
    const bool by_delta = w.mixed() && std::sqrt(r2new) < p.delta * maxr;
    if (by_delta || r2new <= target) {
      fold(x, xs, tmp);
      const double iterated = r2new;
      r2new = w.true_residual(r, x, b);
      // The true residual more than twice the iterated one: the sloppy operator's error is
      // as large as the residual (solvers.h); leave its precision, and restart from r (the
      // directions made in half are no use to the new precision).
      if (by_delta && r2new > 4 * iterated && w.fall_back()) {
        rs = w.sloppy_field();
        aps = w.sloppy_field();
        ps = w.sloppy_field();
        restart = true;
      }
      rs.copy_from(r);
      // Make p orthogonal to the new residual again (as QUDA does): the iterated residual it
      // was orthogonal to has drifted from the true one, and in half precision the lost
      // conjugacy stalls the solve when the solution lives in the low modes.
      if (!restart) {
        const blas::DotNorms rp = blas::cdot_norms(rs, ps);
        if (rp.xx > 0) blas::caxpby(-(rp.dot / Cplx(rp.xx)), rs, Cplx(1), ps);
      }
      maxr = std::sqrt(r2new);
      ++st.reliable_updates;
    }
    blas::caxpby(Cplx(1), rs, Cplx(restart ? 0.0 : r2new / r2), ps);  // after a restart ps is zero: p = r
    r2 = r2new;
    report(p, st.iterations, r2, b2);
  }
  fold(x, xs, tmp);
}

/// The loss of biorthogonality at which mixed-precision BiCGstab restarts: |<rhat, r>| below
/// this times |rhat| |r|. Single: its unit roundoff. Half: measured (32^3x64, kappa 0.1349 and
/// 0.1350: 1025 and 2197 iterations, against 2951 and no convergence without restarts; its
/// unit roundoff, about 3e-5, restarted too often to converge).
double biorthogonality_floor(Precision sloppy) {
  switch (sloppy) {
    case Precision::half:
      return 1e-6;
    case Precision::single:
      return 6e-8;
    default:
      return 0;
  }
}

/// BiCGstab in half gives up a sloppy segment whose iterated residual grew this many times past
/// the true residual of the last reliable update. Single is not guarded: its residual near
/// kappa_c spikes by 10^4 and more and still converges (guarded so, single near kappa_c
/// restarts many times and takes about twice the iterations; docs/solvers.md).
constexpr double divergence = 1e4;

/// BiCGstab in half that has gone this many iterations without a reliable update checks the
/// true residual: a segment that did not lower it is dropped as a divergent one is (half can
/// wander near kappa_c without growing past `divergence`); one that did is kept. Either way
/// the iteration restarts.
constexpr int stagnation = 500;

// BiCGstab with reliable updates. In a sloppy precision, <rhat, r> falls to the rounding level
// of the iteration once r has become (nearly) orthogonal to the shadow residual rhat; from
// then on rho, alpha and beta are noise and near kappa_c the iteration wanders (residual
// spikes of 10^3 and more, then divergence). So a mixed solve restarts (rhat = r, no
// directions) when |<rhat, r>| falls below biorthogonality_floor(sloppy) |rhat| |r|; in double
// it never does. Where the iteration is healthy it never fires; near kappa_c it lets single-
// precision BiCGstab converge where it diverged or stalled (docs/solvers.md). A breakdown
// (<rhat, r> or <rhat, A p> zero, omega zero, a non-finite coefficient) restarts from the
// iterated residual too (one test at
// the top of the iteration: omega enters through the next beta), and an iterated residual
// that overflows, or in half grows `divergence` times past the last true one or goes
// `stagnation` iterations without a reliable update and without lowering the true residual,
// drops the sloppy partial solution since the last reliable update; that and a breakdown right after a restart
// move a half-precision iteration to single (the fallback operator) where there is one, and
// otherwise the breakdown ends the solve. Half precision needs this: on an 8^4 quenched
// configuration near kappa_c (kappa = 0.140) it diverged to a residual of 10^19 where single
// converged.
void bicgstab(Work& w, ColorSpinorField& x, const ColorSpinorField& b, const SolverParam& p, SolverStats& st) {
  ColorSpinorField r = w.outer_field(), tmp = w.outer_field();
  ColorSpinorField rs = w.sloppy_field(), rhat = w.sloppy_field(), ps = w.sloppy_field(), v = w.sloppy_field(),
                   t = w.sloppy_field(), xs = w.accumulator_field();
  const double b2 = blas::cdot_norms(b, b).xx, target = p.tol * p.tol * b2;
  double floor = w.mixed() ? biorthogonality_floor(rs.precision()) : 0.0;
  double r2 = w.true_residual(r, x, b);
  st.initial_residual = std::sqrt(r2 / b2);
  report(p, st.iterations, r2, b2);
  rs.copy_from(r);
  Cplx rho, alpha, omega;
  bool fresh = true;     // no iteration since the last restart
  bool pending = false;  // iterations since the last reliable update
  int last_update = 0;   // the iteration of the last reliable update
  double maxr = std::sqrt(r2);
  const auto restart = [&] {
    rhat.copy_from(rs);
    ps.zero();
    v.zero();
    rho = alpha = omega = Cplx(1);
    fresh = true;
  };
  // x += xs (or drop xs), the residual recomputed in double; returns |r|^2.
  const auto reliable_update = [&](bool drop) {
    if (drop) xs.zero();
    fold(x, xs, tmp);
    const double r2t = w.true_residual(r, x, b);
    rs.copy_from(r);
    maxr = std::sqrt(r2t);
    ++st.reliable_updates;
    pending = false;
    last_update = st.iterations;
    return r2t;
  };
  // Whether x + xs has a smaller true residual than x (r then holds it).
  const auto segment_helps = [&] {
    tmp.copy_from(xs);
    blas::caxpby(Cplx(1), x, Cplx(1), tmp);
    return w.true_residual(r, tmp, b) < maxr * maxr;
  };
  // Leave a sloppy precision that failed for the fallback operator, when there is one.
  const auto fall_back = [&] {
    if (!w.fall_back()) return false;
    for (ColorSpinorField* f : {&rs, &rhat, &ps, &v, &t}) *f = w.sloppy_field();
    floor = biorthogonality_floor(rs.precision());
    return true;
  };
  const auto usable = [](Cplx c) { return std::isfinite(c.re) && std::isfinite(c.im) && norm2(c) > 0; };
  restart();
  // <rhat, r>, |rhat|^2, |r|^2 from the last iteration's residual update, while neither r nor
  // rhat has changed since (no reliable update or restart): one pass and one synchronisation
  // fewer per iteration.
  std::optional<blas::DotNorms> next_rr;
  while (r2 > target && st.iterations < p.max_iter) {
    // rho below the floor (in double: zero) or a non-finite or zero beta (omega was zero) or
    // alpha (<rhat, A p> zero): no step to take from here.
    const blas::DotNorms rr = next_rr ? *next_rr : blas::cdot_norms(rhat, rs);
    next_rr.reset();
    const Cplx rho_new = rr.dot, beta = (rho_new / rho) * (alpha / omega);
    bool ok = norm2(rho_new) > floor * floor * rr.xx * rr.yy && usable(beta);
    if (ok) {
      blas::caxpbypcz(Cplx(1), rs, -(beta * omega), v, beta, ps);
      w.apply_sloppy(v, ps);
      alpha = rho_new / blas::cdot_norms(rhat, v).dot;
      ok = usable(alpha);
    }
    if (!ok) {
      if (fresh) {  // a breakdown right after a restart: this precision cannot go on
        if (!fall_back()) break;
        r2 = reliable_update(false);
      }
      restart();
      ++st.restarts;
      continue;
    }
    blas::caxpby(-alpha, v, Cplx(1), rs);  // s
    w.apply_sloppy(t, rs);
    const blas::DotNorms ts = blas::cdot_norms(t, rs);
    omega = ts.xx > 0 ? ts.dot / Cplx(ts.xx) : Cplx(0);
    blas::caxpbypz_promote(alpha, ps, omega, rs, xs);
    next_rr = blas::caxpby_cdot_norms(-omega, t, Cplx(1), rs, rhat);  // r = s - omega t
    double r2new = next_rr->yy;
    rho = rho_new;
    fresh = false;
    pending = true;
    ++st.iterations;
    // Overflow, or (half) growth far past the residual of the last reliable update: the
    // sloppy iteration diverged. Its partial solution is dropped and it restarts, in the
    // fallback precision when there is one (half diverges near kappa_c where single does not).
    // In half, a long segment without a reliable update is kept only if it helped.
    const bool guarded = w.mixed() && rs.precision() == Precision::half;
    bool lost = !std::isfinite(r2new) || (guarded && r2new > divergence * divergence * maxr * maxr);
    bool update = w.mixed() ? (std::sqrt(r2new) < p.delta * maxr || r2new <= target) : r2new <= target;
    bool stalled = false;
    if (guarded && !lost && !update && st.iterations - last_update >= stagnation) {
      stalled = true;
      lost = !segment_helps();
      update = !lost;
    }
    if (lost) fall_back();
    if (update || lost) {
      next_rr.reset();
      r2new = reliable_update(lost);
      if (lost || stalled) {
        restart();
        ++st.restarts;
      }
    }
    r2 = r2new;
    report(p, st.iterations, r2, b2);
  }
  // Iterations since the last reliable update (the limit reached, or a final breakdown) count
  // only if they lower the true residual: a wandering sloppy iteration must not spoil x.
  if (pending && segment_helps()) x.copy_from(tmp);
}

}  // namespace

GcrCycle::GcrCycle(std::vector<ColorSpinorField>& z, std::vector<ColorSpinorField>& az, int restart)
    : z_(z),
      az_(az),
      beta_(static_cast<std::size_t>(restart) * restart),
      alpha_(restart),
      minus_(restart),
      n2_(restart),
      restart_(restart) {
  require(restart >= 1 && static_cast<int>(z.size()) >= restart && static_cast<int>(az.size()) >= restart,
          "GCR cycle of ", restart, " directions with ", z.size(), " and ", az.size(), " fields");
  for (int j = 0; j < restart; ++j) {
    zp_.push_back(&z[j]);
    azp_.push_back(&az[j]);
  }
}

bool GcrCycle::orthogonalize(double& w2, Cplx& wr) {
  // The products of every earlier A z_i and of w = A z_j itself with w and with r are in gw_
  // and gr_. As the A z_i are orthogonal (n2_i their norms), the orthogonalized w' = w -
  // sum_i beta_i A z_i has |w'|^2 = |w|^2 - sum_i |<A z_i, w>|^2 / n2_i and <w', r> = <w, r> -
  // sum_i conj(beta_i) <A z_i, r>; and |r - alpha w'|^2 = |r|^2 - |<w', r>|^2 / |w'|^2.
  const int j = n_;
  w2 = gw_[j].re;
  wr = gr_[j];
  if (j == 0) return false;
  Cplx* beta = &beta_[static_cast<std::size_t>(j) * restart_];  // classical Gram-Schmidt
  for (int i = 0; i < j; ++i) {
    beta[i] = Cplx(gw_[i].re / n2_[i], gw_[i].im / n2_[i]);
    minus_[i] = Cplx(-beta[i].re, -beta[i].im);
    w2 -= (gw_[i].re * gw_[i].re + gw_[i].im * gw_[i].im) / n2_[i];
    wr -= Cplx(beta[i].re, -beta[i].im) * gr_[i];
  }
  // Where w lay nearly in the span of the earlier directions, the difference lost its digits:
  // its norm and overlap are then measured on w' itself (one more global sum).
  return !(w2 > cancellation * gw_[j].re);
}

double GcrCycle::take(double w2, Cplx wr, double r2, const char* what, bool& measure) {
  require(w2 > 0, what, ": the operator maps a search direction to zero");
  const int j = n_;
  n2_[j] = w2;
  alpha_[j] = Cplx(wr.re / w2, wr.im / w2);
  ++n_;
  if (j == 0) measured_r2_ = r2;  // the cycle starts from a measured residual
  const double next = r2 - (wr.re * wr.re + wr.im * wr.im) / w2;
  // The differences carry an error of about the fields' rounding times the last measured |r|^2:
  // once the residual has fallen by 1/cancellation since, its norm is measured again (one more
  // global sum; with a multigrid's steps about one iteration in three).
  measure = !(next > cancellation * measured_r2_);
  return next;
}

double GcrCycle::add(ColorSpinorField& r, double r2, const char* what) {
  const LogScope log(LogEvent::gcr_ortho);
  require(n_ < restart_, what, ": more than ", restart_, " directions in one GCR cycle");
  const int j = n_;
  ColorSpinorField& w = az_[j];
  const std::size_t m = static_cast<std::size_t>(j) + 1;
  if (gw_.size() < m) gw_.resize(m), gr_.resize(m);
  blas::cdot_multi_pair(azp_.data(), j + 1, w, r, gw_.data(), gr_.data());  // one global sum
  double w2 = 0;
  Cplx wr;
  const bool lost = orthogonalize(w2, wr);
  if (j > 0) blas::caxpy_multi(minus_.data(), azp_.data(), j, w);
  if (lost) {
    const blas::DotNorms d = blas::cdot_norms(w, r);
    w2 = d.xx;
    wr = d.dot;
  }
  bool measure = false;
  const double next = take(w2, wr, r2, what, measure);
  const Cplx minus_alpha(-alpha_[j].re, -alpha_[j].im);
  if (measure) {
    measured_r2_ = blas::caxpby_norm(minus_alpha, w, Cplx(1), r);
  } else {
    blas::caxpby(minus_alpha, w, Cplx(1), r);
  }
  last_r2_ = measure ? measured_r2_ : next;
  return last_r2_;
}

void GcrCycle::add_set(const std::vector<GcrCycle*>& cycles, std::vector<std::vector<ColorSpinorField>>& az,
                       std::vector<ColorSpinorField>& r, std::vector<double>& r2, const char* what) {
  const int count = static_cast<int>(r.size());
  require(static_cast<int>(cycles.size()) == count && static_cast<int>(r2.size()) == count && count <= blas::set_max,
          what, ": ", cycles.size(), " cycles, ", count, " residuals and ", r2.size(),
          " norms; expected one of each per system, at most ", blas::set_max);
  unsigned active = 0;
  int j = -1;
  for (int k = 0; k < count; ++k) {
    const GcrCycle* c = cycles[k];
    if (!c) continue;
    require(c->n_ < c->restart_, what, ": more than ", c->restart_, " directions in one GCR cycle");
    if (j < 0) j = c->n_;
    require(c->n_ == j, what, ": the systems of a set add their directions together (", c->n_, " and ", j, ")");
    active |= 1u << k;
  }
  if (!active) return;
  require(static_cast<int>(az.size()) > j, what, ": direction ", j, " of ", az.size());
  if (!blas::multi_set_forms(r[0])) {  // half: system by system
    for (int k = 0; k < count; ++k)
      if (cycles[k]) r2[k] = cycles[k]->add(r[k], r2[k], what);
    return;
  }
  const LogScope log(LogEvent::gcr_ortho);
  // Every system's products in one pass over the set (one global sum), its coefficients on the
  // host, then every system's w' and r updated in one pass each.
  const int m = j + 1;
  std::vector<const std::vector<ColorSpinorField>*> dirs(m);
  for (int i = 0; i < m; ++i) dirs[i] = &az[i];
  std::vector<Cplx> gw(static_cast<std::size_t>(count) * m), gr(gw.size()), minus(static_cast<std::size_t>(count) * m);
  blas::cdot_multi_pair_set(dirs.data(), m, az[j], r, active, gw.data(), gr.data());
  std::vector<double> w2(count);
  std::vector<Cplx> wr(count);
  std::vector<char> lost(count, 0);
  bool any_lost = false;
  for (int k = 0; k < count; ++k) {
    GcrCycle* c = cycles[k];
    if (!c) continue;
    c->gw_.assign(gw.begin() + static_cast<long>(k) * m, gw.begin() + static_cast<long>(k + 1) * m);
    c->gr_.assign(gr.begin() + static_cast<long>(k) * m, gr.begin() + static_cast<long>(k + 1) * m);
    lost[k] = c->orthogonalize(w2[k], wr[k]);
    any_lost = any_lost || lost[k];
    for (int i = 0; i < j; ++i) minus[static_cast<std::size_t>(k) * j + i] = c->minus_[i];
  }
  if (j > 0) blas::caxpy_multi_set(minus.data(), dirs.data(), j, az[j], active);
  if (any_lost) {
    std::vector<blas::DotNorms> d(count);
    blas::cdot_norms_set(az[j], r, d.data());
    for (int k = 0; k < count; ++k)
      if (lost[k]) {
        w2[k] = d[k].xx;
        wr[k] = d[k].dot;
      }
  }
  std::vector<Cplx> minus_alpha(count, Cplx(0)), one(count, Cplx(1));
  std::vector<double> next(count), norms(count);
  std::vector<char> measure(count, 0);
  bool any_measure = false;
  for (int k = 0; k < count; ++k) {
    GcrCycle* c = cycles[k];
    if (!c) continue;
    bool mk = false;
    next[k] = c->take(w2[k], wr[k], r2[k], what, mk);
    measure[k] = mk;
    any_measure = any_measure || mk;
    minus_alpha[k] = Cplx(-c->alpha_[j].re, -c->alpha_[j].im);
  }
  // r_k -= alpha_k w'_k (a system outside the set's step keeps its r: coefficients 0 and 1)
  blas::caxpbypcz_set(minus_alpha.data(), az[j], nullptr, nullptr, one.data(), r, any_measure ? norms.data() : nullptr);
  for (int k = 0; k < count; ++k) {
    if (!cycles[k]) continue;
    if (measure[k]) cycles[k]->measured_r2_ = norms[k];
    r2[k] = measure[k] ? norms[k] : next[k];
  }
}

void GcrCycle::update(ColorSpinorField& x) const {
  if (n_ == 0) return;
  const LogScope log(LogEvent::gcr_ortho);
  // The orthogonalized directions are p_j = z_j - sum_{i<j} beta_ji p_i, so Z = P B with B unit
  // upper triangular (B_ij = beta_ji) and x += P alpha = Z gamma for B gamma = alpha.
  std::vector<Cplx> gamma(n_);
  for (int i = n_ - 1; i >= 0; --i) {
    Cplx g = alpha_[i];
    for (int j = i + 1; j < n_; ++j) g -= beta_[static_cast<std::size_t>(j) * restart_ + i] * gamma[j];
    gamma[i] = g;
  }
  blas::caxpy_multi(gamma.data(), zp_.data(), n_, x);
}

int GcrCycle::deflate(int k, std::vector<ColorSpinorField>& spare_z, std::vector<ColorSpinorField>& spare_az,
                      bool exact, std::vector<double>* theta) {
  using Mat = Eigen::MatrixXcd;
  using Scalar = std::complex<double>;
  const int n = n_;
  k = std::min(k, n);
  require(k >= 1 && static_cast<int>(spare_z.size()) >= k && static_cast<int>(spare_az.size()) >= k,
          "GCR deflated restart: ", k, " directions kept with ", spare_z.size(), " and ", spare_az.size(),
          " spare fields");
  const LogScope log(LogEvent::gcr_deflate);
  // Images: A Z = W' B, W' the orthogonalized A z (norms n2_), B unit upper triangular (B_ij =
  // beta_ji); with W = W' D^-1/2 orthonormal, A Z = W T, T = D^1/2 B.
  Mat t = Mat::Zero(n, n);
  for (int i = 0; i < n; ++i) {
    const double s = std::sqrt(n2_[i]);
    t(i, i) = s;
    for (int j = i + 1; j < n; ++j) {
      const Cplx b = beta_[static_cast<std::size_t>(j) * restart_ + i];
      t(i, j) = s * Scalar(b.re, b.im);
    }
  }
  // Pre-images: direction j was made from the residual r_j (z_j = K r_j), a kept one from the
  // combination of the earlier cycle's residuals recorded in pre_. In the orthonormal basis [W,
  // r_n / |r_n|] of the residual space (GCR leaves r_n orthogonal to W), r_j = sum_{i >= j} a_i
  // w_i + r_n with a_i = alpha_i |w'_i|, and the cycle's starting residual is sum_{l < kept}
  // alpha_l w_l + r_kept. S: the pre-images' coordinates ((n + 1) x n).
  const int k0 = pre_k_;
  std::vector<Scalar> a(n);
  for (int i = 0; i < n; ++i) a[i] = Scalar(alpha_[i].re, alpha_[i].im) * std::sqrt(n2_[i]);
  const double rn = std::sqrt(std::max(last_r2_, 0.0)), r0 = std::sqrt(std::max(start_r2_, 0.0));
  Mat sm = Mat::Zero(n + 1, n);
  const auto pre = [&](int i, int l) {
    const Cplx c = pre_[static_cast<std::size_t>(l) * (k0 + 1) + i];
    return Scalar(c.re, c.im);
  };
  for (int l = 0; l < k0; ++l) {  // C xi_l + eta_l r_start / |r_start|
    const Scalar e = r0 > 0 ? pre(k0, l) / r0 : Scalar(0);
    for (int i = 0; i < n; ++i) sm(i, l) = (i < k0 ? pre(i, l) : Scalar(0)) + e * a[i];
    sm(n, l) = e * rn;
  }
  for (int j = k0; j < n; ++j) {
    for (int i = j; i < n; ++i) sm(i, j) = a[i];
    sm(n, j) = rn;
  }
  // Harmonic Ritz pairs of the map from pre-images to images (A K where the preconditioner K is
  // linear), as FGMRES-DR takes them (Giraud, Gratton et al. 2010): the images' part orthogonal
  // to themselves, T s = theta S_W s, S_W the first n rows of S. As T^-1 S_W s = (1/theta) s,
  // the largest moduli are the values nearest zero. No global sum: the cycle's coefficients hold
  // it all.
  // Or, exactly on span(z) (`exact`): (A Z y - theta Z y) orthogonal to A Z, T y = theta G y
  // with G = W^H Z, which takes n global sums of n products.
  Mat g;
  if (exact) {
    g.resize(n, n);
    std::vector<Cplx> col(n);
    for (int j = 0; j < n; ++j) {
      blas::cdot_multi(azp_.data(), n, z_[j], col.data());
      for (int i = 0; i < n; ++i) g(i, j) = Scalar(col[i].re, col[i].im) / std::sqrt(n2_[i]);
    }
  }
  const Mat m = t.triangularView<Eigen::Upper>().solve(exact ? g : Mat(sm.topRows(n)));
  const Eigen::ComplexEigenSolver<Mat> eig(m);
  require(eig.info() == Eigen::Success, "GCR deflated restart: the harmonic Ritz problem of ", n,
          " directions did not converge");
  std::vector<int> order(n);
  for (int i = 0; i < n; ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](int x, int y) { return std::abs(eig.eigenvalues()(x)) > std::abs(eig.eigenvalues()(y)); });
  Mat y(n, k);
  for (int l = 0; l < k; ++l) y.col(l) = eig.eigenvectors().col(order[l]);
  // Images A Z y = W T y; orthonormalized as T y = Q R, the kept directions are U = Z y R^-1
  // with A U = W Q, exactly (A is linear, whatever K is). Vectors dependent to the fields'
  // precision are dropped.
  const Eigen::HouseholderQR<Mat> qr(t * y);
  const Mat r = qr.matrixQR().topRows(k).triangularView<Eigen::Upper>();
  const double tiny = 1e-6 * std::abs(r(0, 0));
  int kept = 0;
  while (kept < k && std::abs(r(kept, kept)) > tiny) ++kept;
  require(kept >= 1, "GCR deflated restart: the harmonic Ritz vectors have no independent image");
  const Mat q = qr.householderQ() * Mat::Identity(n, kept);
  const Mat u =
      y.leftCols(kept) * r.topLeftCorner(kept, kept).triangularView<Eigen::Upper>().solve(Mat::Identity(kept, kept));
  // The kept pre-images S u lie in span(W Q, r_n) (T y = theta S_W y): their coordinates there,
  // for the next cycle's S.
  const Mat x = sm * u;
  Mat coords(kept + 1, kept);
  coords.topRows(kept) = q.adjoint() * x.topRows(n);
  coords.row(kept) = x.row(n);
  pre_.resize(static_cast<std::size_t>(kept + 1) * kept);
  for (int l = 0; l < kept; ++l)
    for (int i = 0; i <= kept; ++i)
      pre_[static_cast<std::size_t>(l) * (kept + 1) + i] = Cplx(coords(i, l).real(), coords(i, l).imag());
  std::vector<Cplx> cu(static_cast<std::size_t>(n) * kept), cq(cu.size());
  std::vector<ColorSpinorField*> to_z(kept), to_az(kept);
  for (int l = 0; l < kept; ++l) {
    for (int i = 0; i < n; ++i) {
      const Scalar c = q(i, l) / std::sqrt(n2_[i]);
      cu[static_cast<std::size_t>(l) * n + i] = Cplx(u(i, l).real(), u(i, l).imag());
      cq[static_cast<std::size_t>(l) * n + i] = Cplx(c.real(), c.imag());
    }
    to_z[l] = &spare_z[l];
    to_az[l] = &spare_az[l];
  }
  blas::combine_multi(cu.data(), zp_.data(), n, to_z.data(), kept);
  blas::combine_multi(cq.data(), azp_.data(), n, to_az.data(), kept);
  for (int l = 0; l < kept; ++l) {
    std::swap(z_[l], spare_z[l]);
    std::swap(az_[l], spare_az[l]);
  }
  if (theta) {
    theta->clear();
    for (int l = 0; l < kept; ++l) theta->push_back(1 / std::abs(eig.eigenvalues()(order[l])));
  }
  n_ = 0;
  pre_k_ = 0;
  pre_pending_ = kept;
  return kept;
}

double GcrCycle::seed(int k, ColorSpinorField& r, double r2) {
  require(k >= 0 && k < restart_ && (k == 0 || k == pre_pending_), "GCR cycle seeded with ", k, " directions of ",
          restart_, " (", pre_pending_, " kept)");
  n_ = 0;
  pre_k_ = k;
  start_r2_ = last_r2_ = r2;
  if (k == 0) return r2;
  const LogScope log(LogEvent::gcr_deflate);
  // The kept images are orthonormal: their Gram-Schmidt coefficients among themselves are 0
  // and their norms 1; the residual's overlaps with them are its alpha.
  std::vector<Cplx> overlap(k), minus(k);
  blas::cdot_multi(azp_.data(), k, r, overlap.data());
  double removed = 0;
  for (int l = 0; l < k; ++l) {
    for (int i = 0; i < l; ++i) beta_[static_cast<std::size_t>(l) * restart_ + i] = Cplx(0);
    n2_[l] = 1;
    alpha_[l] = overlap[l];
    minus[l] = -overlap[l];
    removed += norm2(overlap[l]);
  }
  blas::caxpy_multi(minus.data(), azp_.data(), k, r);
  n_ = k;
  // Measured where the projection removed most of r (its rounding would weigh on the difference).
  measured_r2_ = r2 - removed > cancellation * r2 ? r2 - removed : blas::cdot_norms(r, r).xx;
  last_r2_ = measured_r2_;
  return measured_r2_;
}

namespace {

void gcr(Work& w, Preconditioner* K, ColorSpinorField& x, const ColorSpinorField& b, const SolverParam& p,
         SolverStats& st) {
  require(p.restart >= 1, "GCR restart ", p.restart, ": expected at least 1");
  require(p.deflate >= 0 && p.deflate < p.restart, "GCR deflated restart: ", p.deflate,
          " directions kept of a restart of ", p.restart, ": expected 0 up to ", p.restart - 1);
  // Mixed: each cycle of `restart` directions runs in the sloppy precision from the true
  // residual; its partial solution is folded into x and the residual recomputed in double at
  // the end. Otherwise the cycle works on r and x themselves.
  ColorSpinorField r = w.outer_field();
  std::optional<ColorSpinorField> rs_mixed, xs_mixed, tmp;
  if (w.mixed()) {
    rs_mixed.emplace(w.sloppy_field());
    xs_mixed.emplace(w.accumulator_field());
    tmp.emplace(w.outer_field());
  }
  ColorSpinorField& rs = w.mixed() ? *rs_mixed : r;
  ColorSpinorField& xs = w.mixed() ? *xs_mixed : x;
  std::vector<ColorSpinorField> z = ColorSpinorField::make_set(rs.lattice_ptr(), rs.param(), p.restart),
                                az = ColorSpinorField::make_set(rs.lattice_ptr(), rs.param(), p.restart);
  GcrCycle cycle(z, az, p.restart);
  // Deflated restarts: the directions kept over a restart, and as many spare fields to form them in.
  std::vector<ColorSpinorField> spare_z, spare_az;
  if (p.deflate > 0) {
    spare_z = ColorSpinorField::make_set(rs.lattice_ptr(), rs.param(), p.deflate);
    spare_az = ColorSpinorField::make_set(rs.lattice_ptr(), rs.param(), p.deflate);
  }
  int kept = 0;
  const double b2 = blas::cdot_norms(b, b).xx, target = p.tol * p.tol * b2;
  double r2 = w.true_residual(r, x, b);
  st.initial_residual = std::sqrt(r2 / b2);
  report(p, st.iterations, r2, b2);
  // A sloppy cycle's recurrence holds only as many digits as its precision and the operator's
  // condition allow (in single at light quark masses three to four: past them the iterated
  // residual runs ahead of the true one and the cycle's last directions are wasted), so it also
  // ends, as a reliable update, once its iterated residual fell by restart_drop.
  // Stagnation: the best true residual and the iteration at which it last fell by 10%.
  double best = r2;
  int best_at = 0;
  while (r2 > target && st.iterations < p.max_iter) {
    if (p.stall_iterations > 0 && st.iterations - best_at >= p.stall_iterations) {
      st.stop_reason = stall_reason(best, b2, st.iterations - best_at);
      st.stalled = true;
      break;
    }
    if (w.mixed()) rs.copy_from(r);
    const double cycle_target = w.mixed() ? std::max(target, p.restart_drop * p.restart_drop * r2) : target;
    r2 = cycle.seed(kept, rs, r2);  // r orthogonal to the kept directions' images
    // Every cycle adds at least one direction, so that a restart never repeats the last.
    for (int j = kept; j < p.restart && (j == kept || r2 > cycle_target) && st.iterations < p.max_iter; ++j) {
      if (K)
        K->apply(z[j], rs);
      else
        z[j].copy_from(rs);
      w.apply_sloppy(az[j], z[j]);
      r2 = cycle.add(rs, r2, "GCR");
      ++st.iterations;
      report(p, st.iterations, r2, b2);
    }
    cycle.update(xs);
    if (w.mixed()) fold(x, xs, *tmp);
    r2 = w.true_residual(r, x, b);  // restart from the true residual
    ++st.reliable_updates;
    if (r2 < 0.81 * best) {
      best = r2;
      best_at = st.iterations;
    }
    if (p.deflate > 0 && r2 > target && st.iterations < p.max_iter)
      kept = cycle.deflate(p.deflate, spare_z, spare_az, p.deflate_exact);
  }
}

void mr(Work& w, ColorSpinorField& x, const ColorSpinorField& b, const SolverParam& p, SolverStats& st) {
  ColorSpinorField r = w.outer_field(), ar = w.outer_field();
  const double b2 = blas::cdot_norms(b, b).xx, target = p.tol * p.tol * b2;
  double r2 = w.true_residual(r, x, b);
  st.initial_residual = std::sqrt(r2 / b2);
  report(p, st.iterations, r2, b2);
  while (r2 > target && st.iterations < p.max_iter) {
    w.apply_outer(ar, r);
    const blas::DotNorms d = blas::cdot_norms(ar, r);
    require(d.xx > 0, "MR: the operator maps the residual to zero");
    const Cplx alpha = d.dot / Cplx(d.xx);
    blas::caxpby(alpha, r, Cplx(1), x);
    r2 = blas::caxpby_norm(-alpha, ar, Cplx(1), r);
    ++st.iterations;
    report(p, st.iterations, r2, b2);
  }
}

}  // namespace

SolverStats solve(LinearOperator& A, LinearOperator* sloppy, Preconditioner* K, ColorSpinorField& x,
                  const ColorSpinorField& b, const SolverParam& p, LinearOperator* fallback) {
  require(p.tol > 0 && p.tol < 1, "solver tolerance ", p.tol, ": expected a number in (0, 1)");
  require(p.max_iter >= 1, "solver iteration limit ", p.max_iter, ": expected at least 1");
  require(p.delta > 0 && p.delta < 1, "reliable-update factor ", p.delta, ": expected a number in (0, 1)");
  require(p.restart_drop > 0 && p.restart_drop < 1, "GCR restart drop ", p.restart_drop,
          ": expected a number in (0, 1)");
  const Precision ap = A.field_param().precision;
  require(x.precision() == ap && b.precision() == ap, "solve: the solution and the source must be in the operator's ",
          to_string(ap), " precision (got ", to_string(x.precision()), " and ", to_string(b.precision()), ")");
  require(!K || p.type == SolverType::gcr, "solve: only GCR takes a preconditioner, not ", to_string(p.type));
  SolverStats st;
  const auto t0 = std::chrono::steady_clock::now();
  const double b2 = blas::cdot_norms(b, b).xx;
  require(b2 > 0, "solve: the source is zero");
  switch (p.type) {
    case SolverType::cg: {
      Work w(A, sloppy, st, fallback);
      cg(w, x, b, p, st);
      break;
    }
    case SolverType::cgne: {  // A A^dag y = b, x = A^dag y
      NormalOperator n(A, true);
      std::unique_ptr<NormalOperator> ns = sloppy ? std::make_unique<NormalOperator>(*sloppy, true) : nullptr;
      Work w(n, ns.get(), st);
      ColorSpinorField y = A.make_field();
      cg(w, y, b, p, st);
      st.outer_applications *= 2;  // each normal-operator application is two of A
      st.sloppy_applications *= 2;
      A.apply(x, y, true);
      ++st.outer_applications;
      break;
    }
    case SolverType::cgnr: {  // A^dag A x = A^dag b
      NormalOperator n(A, false);
      std::unique_ptr<NormalOperator> ns = sloppy ? std::make_unique<NormalOperator>(*sloppy, false) : nullptr;
      Work w(n, ns.get(), st);
      ColorSpinorField adb = A.make_field();
      A.apply(adb, b, true);
      ++st.outer_applications;
      // CG stops on the normal equations' residual |A^dag (b - A x)|; continue with a tighter
      // tolerance until the true residual |b - A x| meets the one asked for.
      SolverParam q = p;
      ColorSpinorField r = A.make_field();
      double initial = 0;
      for (int round = 0; round < 4; ++round) {
        const long before = st.outer_applications, sloppy_before = st.sloppy_applications;
        cg(w, x, adb, q, st);
        if (round == 0) initial = st.initial_residual;
        st.outer_applications = before + 2 * (st.outer_applications - before);
        st.sloppy_applications = sloppy_before + 2 * (st.sloppy_applications - sloppy_before);
        A.apply(r, x);
        ++st.outer_applications;
        const double rel = std::sqrt(blas::caxpby_norm(Cplx(1), b, Cplx(-1), r) / b2);
        if (rel <= p.tol || st.iterations >= p.max_iter) break;
        q.tol = std::max(q.tol * p.tol / rel * 0.5, 1e-15);
      }
      st.initial_residual = initial;
      break;
    }
    case SolverType::bicgstab: {
      Work w(A, sloppy, st, fallback);
      bicgstab(w, x, b, p, st);
      break;
    }
    case SolverType::gcr: {
      Work w(A, sloppy, st);
      gcr(w, K, x, b, p, st);
      break;
    }
    case SolverType::mr: {
      require(!sloppy, "solve: MR iterates in the operator's precision only; it takes no sloppy operator");
      Work w(A, nullptr, st);
      mr(w, x, b, p, st);
      break;
    }
  }
  // The verdict, in double with the operator itself.
  ColorSpinorField r = A.make_field();
  A.apply(r, x);
  ++st.outer_applications;
  const double r2 = blas::caxpby_norm(Cplx(1), b, Cplx(-1), r);
  st.true_residual = std::sqrt(r2 / b2);
  st.converged = st.true_residual <= p.tol * (1 + 1e-6);
  synchronize(A.field_param().backend);
  st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double local = st.outer_applications * A.flops() + st.sloppy_applications * (sloppy ? sloppy->flops() : 0.0);
  MPI_Allreduce(&local, &st.flops, 1, MPI_DOUBLE, MPI_SUM, A.lattice()->comm());
  return st;
}

// Independent Krylov spaces rather than a block method: each system's GCR is the one solve()
// runs (GcrCycle), so its iterations and result are those of a single solve to rounding, and a
// system that converges early stops costing reductions. The set shares what dominates the
// cost of a preconditioned iteration: the multigrid cycle and the operator, which read their
// coefficients once for the set. The Gram-Schmidt reductions stay per system; each is a pass
// over the system's own fields, so fusing them across the set would save only host
// synchronisations, a few per system and iteration.
namespace {

std::vector<SolverStats> gcr_set_run(LinearOperator& A, LinearOperator* sloppy, Preconditioner* K,
                                     std::vector<ColorSpinorField>& x, const std::vector<ColorSpinorField>& b,
                                     const SolverParam& p) {
  const auto t0 = std::chrono::steady_clock::now();
  const int n = static_cast<int>(b.size());
  require(p.type == SolverType::gcr, "gcr_set: the solver is ", to_string(p.type), "; expected gcr");
  require(p.deflate == 0, "gcr_set: deflated restarts (", p.deflate,
          " directions kept) are for single solves; a set restarts plainly (deflate 0)");
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
  // r2[k] = |r_k|^2 of r_k = b_k - A x_k for the systems in `which`: where that is all of them
  // and x and b are sets, the operator reads its coefficients once for the set and the norms take
  // one pass and one global sum; else system by system.
  const bool whole_sets = n > 1 && is_set(x) && is_set(b);
  std::vector<Cplx> one(n, Cplx(1)), minus_one(n, Cplx(-1));
  auto true_residuals = [&](const std::vector<bool>& which, std::vector<double>& out) {
    if (whole_sets && std::find(which.begin(), which.end(), false) == which.end()) {
      A.apply_set(r, x);
      for (int k = 0; k < n; ++k) ++st[k].outer_applications;
      blas::caxpbypcz_set(one.data(), b, nullptr, nullptr, minus_one.data(), r, out.data());
      return;
    }
    for (int k = 0; k < n; ++k)
      if (which[k]) out[k] = true_residual(k);
  };
  auto count_sloppy_set = [&] {
    for (int k = 0; k < n; ++k) ++(mixed ? st[k].sloppy_applications : st[k].outer_applications);
  };
  for (int k = 0; k < n; ++k) {
    b2[k] = blas::cdot_norms(b[k], b[k]).xx;
    require(b2[k] > 0, "gcr_set: source ", k, " is zero");
    target[k] = p.tol * p.tol * b2[k];
  }
  true_residuals(std::vector<bool>(n, true), r2);
  for (int k = 0; k < n; ++k) {
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
        st[k].stop_reason = stall_reason(best[k], b2[k], st[k].iterations - best_at[k]);
        st[k].stalled = true;
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
      count_sloppy_set();
      ++iterations;
      std::vector<GcrCycle*> adding(n, nullptr);
      for (int k = 0; k < n; ++k)
        if (in_cycle[k]) adding[k] = cycle[k].get();
      GcrCycle::add_set(adding, az, rs, r2, "GCR (a set)");  // every system's step at once
      double worst = 0;
      for (int k = 0; k < n; ++k) {
        if (!in_cycle[k]) continue;
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
      if (mixed) fold(x[k], xs[k], *tmp);
    }
    true_residuals(active, r2);  // restart from the true residuals
    for (int k = 0; k < n; ++k) {
      if (!active[k]) continue;
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
  true_residuals(std::vector<bool>(n, true), r2);  // the verdict, in double with the operator itself
  for (int k = 0; k < n; ++k) {
    st[k].true_residual = std::sqrt(r2[k] / b2[k]);
    st[k].converged = st[k].true_residual <= p.tol * (1 + 1e-6);
    st[k].seconds = seconds;
    double local = st[k].outer_applications * A.flops() + st[k].sloppy_applications * (mixed ? S.flops() : 0.0);
    MPI_Allreduce(&local, &st[k].flops, 1, MPI_DOUBLE, MPI_SUM, A.lattice()->comm());
  }
  // The double operator's set scratch (a set of the other parity, as large as x) is not kept
  // between solves: a further set solve makes it again, once.
  if (whole_sets) A.release_set_scratch();
  return st;
}

}  // namespace

std::vector<SolverStats> gcr_set(LinearOperator& A, LinearOperator* sloppy, Preconditioner* K,
                                 std::vector<ColorSpinorField>& x, const std::vector<ColorSpinorField>& b,
                                 const SolverParam& p) {
  try {
    return gcr_set_run(A, sloppy, K, x, b, p);
  } catch (const OutOfMemory& e) {
    // The directions are the set's largest buffers, and whichever allocation fails after them (a
    // preconditioner's set buffers, say) would not say so: the message names them and the way out.
    const SpinorParam& sp = (sloppy ? *sloppy : A).field_param();
    const double field = static_cast<double>(ColorSpinorField::bytes_for(*A.lattice(), sp));
    const double gib = 2.0 * p.restart * static_cast<double>(b.size()) * field / (1024.0 * 1024.0 * 1024.0);
    std::ostringstream m;
    m.precision(3);
    m << "GCR over a set of " << b.size() << " right-hand sides with restart " << p.restart
      << " ran out of memory; its directions (2 x " << p.restart << " fields per right-hand side, "
      << to_string(sp.precision) << ") take " << gib
      << " GiB: a smaller restart (-latke_solver_restart) or fewer right-hand sides solved together "
         "(-latke_solver_set_size) needs less. "
      << e.what();
    throw OutOfMemory(m.str());
  }
}

}  // namespace latke
