// Adaptive multigrid (mg.h), its cycle: smoothing (MR, on one parity where the level has an
// even-odd form), the coarse-grid correction, the K-cycle's flexible GCR on coarse levels and
// the coarsest solve. Host code: every vector operation is a kernel of the transfer, the
// operators or BLAS.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>

#include "operators/coarse/dense_inverse.h"
#include "preconditioners/mg/galerkin.h"
#include "preconditioners/mg/mg.h"
#include "preconditioners/mg/mg_level.h"
#include "src/core/error.h"
#include "src/core/log.h"
#include "src/core/stream_graph.h"
#include "src/fields/blas.h"

namespace latke::mg {

using blas::Cplx;

namespace {

/// Flexible GCR from x = 0 to |b - A x| <= tol |b| or max_it iterations, in cycles of `cycle`
/// (its capacity the restart length; x formed at the end of each), the residual recomputed at
/// each restart. z, az: the cycle's fields, of A's shape. Returns the iterations.
int fgcr(LinearOperator& A, Preconditioner* K, ColorSpinorField& x, const ColorSpinorField& b, double tol, int max_it,
         ColorSpinorField& r, std::vector<ColorSpinorField>& z, std::vector<ColorSpinorField>& az, GcrCycle& cycle) {
  x.zero();
  r.copy_from(b);
  const double b2 = blas::cdot_norms(b, b).xx;
  if (!(b2 > 0)) return 0;
  const double target = tol * tol * b2;
  double r2 = b2;
  int it = 0;
  const int restart = cycle.capacity();
  while (it < max_it && r2 > target) {
    if (it > 0) {  // restart from the true residual
      A.apply(az[0], x);
      r.copy_from(b);
      r2 = blas::caxpby_norm(Cplx(-1), az[0], Cplx(1), r);
      if (r2 <= target) break;
    }
    cycle.begin();
    for (int j = 0; j < restart && it < max_it && r2 > target; ++j) {
      if (K)
        K->apply(z[j], r);
      else
        z[j].copy_from(r);
      A.apply(az[j], z[j]);
      r2 = cycle.add(r, r2, "multigrid GCR");
      ++it;
    }
    cycle.update(x);
  }
  return it;
}

}  // namespace

namespace {
double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

/// Attributes the work inside its lifetime to one level (Multigrid::attribute_to).
class Multigrid::LevelScope {
 public:
  LevelScope(Multigrid& m, int l) : m_(m), was_(m.attribute_to(l)) {}
  ~LevelScope() { m_.attribute_to(was_); }
  LevelScope(const LevelScope&) = delete;
  LevelScope& operator=(const LevelScope&) = delete;

 private:
  Multigrid& m_;
  int was_;
};

void Multigrid::set_profiling(bool on) {
  profiling_ = on;
  profile_level_ = -1;
  if (on) profile_.assign(levels(), LevelProfile{});  // stopping keeps the profile readable
}

int Multigrid::attribute_to(int l) {
  const int was = profile_level_;
  if (!profiling_ || l == was) return was;
  synchronize(levels_[0]->op->field_param().backend);
  const double t = now_seconds();
  const WorkCounters c = work_counters();
  if (was >= 0) {
    LevelProfile& p = profile_[was];
    p.seconds += t - profile_time_;
    p.halo_seconds += c.halo_seconds - profile_mark_.halo_seconds;
    p.reduction_seconds += c.reduction_seconds - profile_mark_.reduction_seconds;
    p.launches += c.launches - profile_mark_.launches;
    p.reductions += c.reductions - profile_mark_.reductions;
    p.exchanges += c.exchanges - profile_mark_.exchanges;
  }
  profile_level_ = l;
  profile_time_ = t;
  profile_mark_ = c;
  return was;
}

void Multigrid::smooth(int l, ColorSpinorField& x, const ColorSpinorField& r, int steps) {
  Level& L = *levels_[l];
  const LevelParam& q = param_.level[l];
  const LogScope log(static_cast<LogEvent>(static_cast<int>(LogEvent::mg_smooth0) + std::min(l, 3)), 0, true);
  if (L.schwarz) {  // x = sum of Schwarz corrections: x += K (r - M x), on the even-odd system where it smooths there
    const bool eo = L.schwarz_even_odd;
    if (eo) L.schur->prepare(*L.hr, r);
    ColorSpinorField& xs = eo ? *L.wx : x;
    const ColorSpinorField& rs = eo ? *L.hr : r;
    if (L.schwarz->param().type == SchwarzType::multiplicative) {
      // SAP: the steps are cycles of one application (the same iteration; between cycles the
      // residual is updated across block boundaries, or recomputed by the preconditioner).
      L.schwarz->apply_cycles(xs, rs, steps * L.schwarz->param().cycles);
      L.smooth_steps += steps;
      if (eo) L.schur->reconstruct(x, xs, r);
      return;
    }
    ColorSpinorField &sa = eo ? *L.wa : *L.sa, &sr = eo ? *L.wr : *L.sr;
    for (int s = 0; s < steps; ++s) {
      if (s == 0) {
        L.schwarz->apply(xs, rs);
      } else {
        L.system(eo).apply(sa, xs);
        sr.copy_from(rs);
        blas::caxpby(Cplx(-1), sa, Cplx(1), sr);
        L.schwarz->apply(sa, sr);
        blas::caxpby(Cplx(1), sa, Cplx(1), xs);
      }
      ++L.smooth_steps;
    }
    if (eo) L.schur->reconstruct(x, xs, r);
    return;
  }
  // MR steps from zero, on the even-odd system when the level smooths there (x_p from
  // Mhat x_p = rhat, then x_q from the reconstruction), else on M itself.
  const bool eo = q.smooth_even_odd && L.schur;
  if (eo)
    L.schur->prepare(*L.hr, r);
  else
    L.sr->copy_from(r);
  mr_steps(l, x, eo, steps);
  if (eo) L.schur->reconstruct(x, *L.hx, r);
}

namespace {
/// LATKE_MG_HOST_SUMS=1: one-rank levels' MR steps sum on the host as a spread level does, to
/// compare the two.
bool host_sums_forced() {
  static const bool host = [] {
    const char* v = std::getenv("LATKE_MG_HOST_SUMS");
    return v && std::string(v) == "1";
  }();
  return host;
}
/// Whether a one-rank level's MR steps keep their sums on the device (the default).
bool sums_on_device(const ColorSpinorField& f) { return f.lattice().size() == 1 && !host_sums_forced(); }
}  // namespace

void Multigrid::mr_steps(int l, ColorSpinorField& x, bool eo, int steps) {
  Level& L = *levels_[l];
  const LevelParam& q = param_.level[l];
  // With a lower smoother precision (even-odd only) the steps apply schur_low; where its
  // vectors are in that precision too (level 0), rhat is converted for the steps and x_p back
  // after them.
  const bool low = eo && L.schur_low;
  const bool low_fields = low && L.lx;
  LinearOperator& A = low ? static_cast<LinearOperator&>(*L.schur_low) : L.system(eo);
  ColorSpinorField& xs = low_fields ? *L.lx : eo ? *L.hx : x;
  ColorSpinorField& rs = low_fields ? *L.lr : eo ? *L.hr : *L.sr;
  ColorSpinorField& as = low_fields ? *L.la : eo ? *L.ha : *L.sa;
  if (low_fields) rs.copy_from(*L.hr);
  xs.zero();
  // x += omega alpha r, r -= omega alpha A r (not after the last step). On one rank the
  // scalars stay on the device (no host synchronisation); else they are summed on the host.
  blas::DotNormSum* sums = sums_on_device(rs) ? L.mr_sums_on(rs.backend()) : nullptr;
  for (int s = 0; s < steps; ++s) {
    const bool last = s + 1 == steps;
    A.apply(as, rs);
    if (sums) {
      blas::cdot_norms_to(as, rs, sums);
      blas::mr_update_from(q.omega, sums, rs, as, xs, !last);
    } else {
      const blas::DotNorms d = blas::cdot_norms(as, rs);
      if (!(d.xx > 0)) break;
      const Cplx a(q.omega * d.dot.re / d.xx, q.omega * d.dot.im / d.xx);
      if (last)
        blas::caxpby(a, rs, Cplx(1), xs);
      else
        blas::mr_update(a, rs, as, xs);  // x += a r and r -= a A r in one pass
    }
    ++L.smooth_steps;
  }
  if (low_fields) L.hx->copy_from(xs);
}

int Multigrid::coarsest_system_solve(int l, LinearOperator& A, ColorSpinorField& x, const ColorSpinorField& b,
                                     double tol, int max_it) {
  Level& C = *levels_[l];
  if (C.direct) {
    C.direct->apply(x, b);
    return 0;
  }
  return fgcr(A, nullptr, x, b, tol, max_it, *C.gr, C.z, C.az, *C.gcr);
}

void Multigrid::coarse_solve(int l, ColorSpinorField& x, const ColorSpinorField& b) {
  Level& C = *levels_[l];
  const LevelScope on(*this, l);
  if (profiling_) ++profile_[l].visits;
  const LogScope log(LogEvent::mg_coarse_solve, 0, true);
  int it = 0;
  if (C.schur) {
    C.schur->prepare(*C.bhat, b);
    it = coarsest_system_solve(l, *C.schur, *C.xhat, *C.bhat, param_.coarse_tol, param_.coarse_max_it);
    C.schur->reconstruct(x, *C.xhat, b);
  } else {
    it = coarsest_system_solve(l, *C.op, x, b, param_.coarse_tol, param_.coarse_max_it);
  }
  C.solve_iterations += it;
  ++C.solves;
}

bool Multigrid::graphs_correction(int l) const {
  if (!param_.graphs || recording_ || profiling_ || host_sums_forced() || log_synchronizes()) return false;
  for (int k = l + 1; k < levels(); ++k) {
    const Level& K = *levels_[k];
    if (K.op->field_param().backend != Backend::cuda || K.op->lattice()->size() != 1 || K.schwarz ||
        (k > l + 1 && K.gather))
      return false;
    if (k + 1 == levels() ? !K.direct || K.direct->ranks() != 1 : param_.cycle != CycleType::vcycle) return false;
  }
  return true;
}

std::vector<std::array<long, 3>> Multigrid::counts_below(int l) const {
  std::vector<std::array<long, 3>> c;
  for (int k = l + 1; k < levels(); ++k)
    c.push_back({levels_[k]->smooth_steps, levels_[k]->solves, levels_[k]->solve_iterations});
  return c;
}

void Multigrid::forget_graphs() {
  for (auto& L : levels_) {
    Level::CorrectionGraph& g = L->graph;
    g.recording.reset();
    g.direct_runs = 0;
    g.refused = false;
    g.recent_launches = g.recent_recordings = 0;
    g.adds.clear();
  }
}

void Multigrid::coarse_correction(int l) {
  if (!graphs_correction(l)) return correct_below(l);
  Level::CorrectionGraph& g = levels_[l]->graph;
  if (!g.recording.valid()) {
    // A recording goes stale when a buffer that existed when it was made is freed. Where that
    // keeps happening (a caller's temporary field per cycle) recording again would cost more
    // than the graph saves: correct directly then.
    if (g.recent_recordings >= 4 && 8 * g.recent_recordings > g.recent_launches) g.refused = true;
    if (g.refused || g.direct_runs < 2) {
      ++g.direct_runs;
      return correct_below(l);
    }
    // Recording queues nothing that runs: the host's counters are put back, and what one
    // correction adds to them is added at each launch instead.
    const std::vector<std::array<long, 3>> before = counts_below(l);
    recording_ = true;
    const bool ok = g.recording.record(Backend::cuda, [&] { correct_below(l); });
    recording_ = false;
    const std::vector<std::array<long, 3>> after = counts_below(l);
    g.adds.assign(after.size(), {0, 0, 0});
    for (std::size_t k = 0; k < after.size(); ++k) {
      Level& K = *levels_[l + 1 + k];
      for (int i = 0; i < 3; ++i) g.adds[k][i] = after[k][i] - before[k][i];
      K.smooth_steps = before[k][0], K.solves = before[k][1], K.solve_iterations = before[k][2];
    }
    if (!ok) {  // something in it cannot be a graph: correct directly from now on
      g.refused = true;
      return correct_below(l);
    }
    ++g.recordings;
    ++g.recent_recordings;
  }
  g.recording.launch();
  ++g.launches;
  ++g.recent_launches;
  for (std::size_t k = 0; k < g.adds.size(); ++k) {
    Level& K = *levels_[l + 1 + k];
    K.smooth_steps += g.adds[k][0], K.solves += g.adds[k][1], K.solve_iterations += g.adds[k][2];
  }
}

void Multigrid::correct_below(int l) {
  Level& C = *levels_[l + 1];
  if (l + 2 == param_.levels) {
    coarse_solve(l + 1, *C.x, *C.b);
  } else if (param_.cycle == CycleType::kcycle) {
    const LevelScope on(*this, l + 1);
    LevelPreconditioner K([this, l](ColorSpinorField& o, const ColorSpinorField& i) { cycle(l + 1, o, i); }, "cycle");
    const LevelParam& cq = param_.level[l + 1];
    C.solve_iterations += fgcr(*C.op, &K, *C.x, *C.b, cq.ksp_rtol, cq.ksp_max_it, *C.gr, C.z, C.az, *C.gcr);
    ++C.solves;
  } else {
    cycle(l + 1, *C.x, *C.b);
  }
}

bool Multigrid::smooths_on_parity(int l) const {
  const Level& L = *levels_[l];
  const LevelParam& q = param_.level[l];
  return q.pre_smooth == 0 && q.smooth_even_odd && L.schur && !L.schwarz;
}

void Multigrid::correct_on_parity(int l, ColorSpinorField& xp, const ColorSpinorField& bhat) {
  Level& L = *levels_[l];
  const int steps = param_.level[l].post_smooth;
  {
    const LogScope log(LogEvent::mg_transfer, 0, true);
    prolongate_up(l, xp, *levels_[l + 1]->x);
  }
  if (steps == 0) return;
  const LogScope log(static_cast<LogEvent>(static_cast<int>(LogEvent::mg_smooth0) + std::min(l, 3)), 0, true);
  // The fused steps of a set, on a set of one (bhat read before the steps, so it may be L.hx).
  auto one = [](const std::unique_ptr<ColorSpinorField>& f) {
    return f ? std::vector<ColorSpinorField>{*f} : std::vector<ColorSpinorField>{};
  };
  std::vector<ColorSpinorField> x{xp}, hr = one(L.hr), hx = one(L.hx), ha = one(L.ha), lx = one(L.lx), lr = one(L.lr),
                                       la = one(L.la);
  mr_steps_fused(l, steps, x, {bhat}, MrFields{hr, hx, ha, lx, lr, la});
}

void Multigrid::restrict_down(int l, ColorSpinorField& c, const ColorSpinorField& f) {
  Level& C = *levels_[l + 1];
  if (!C.gather) {
    levels_[l]->transfer->restrict_to(c, f);
    return;
  }
  levels_[l]->transfer->restrict_to(*C.part_b, f);
  const LevelScope on(*this, l + 1);
  const LogScope log(LogEvent::mg_gather, 0, true);
  const double t0 = profiling_ ? now_seconds() : 0;
  C.gather->gather(c, *C.part_b);
  if (profiling_) {
    synchronize(C.part_b->backend());
    profile_[l + 1].gather_seconds += now_seconds() - t0;
  }
}

void Multigrid::prolongate_up(int l, ColorSpinorField& f, const ColorSpinorField& c) {
  Level& C = *levels_[l + 1];
  if (!C.gather) {
    levels_[l]->transfer->prolongate(f, c);
    return;
  }
  C.gather->scatter(*C.part_x, c);
  levels_[l]->transfer->prolongate(f, *C.part_x);
}

void Multigrid::cycle(int l, ColorSpinorField& x, const ColorSpinorField& b) {
  Level& L = *levels_[l];
  Level& C = *levels_[l + 1];
  const LevelScope on(*this, l);
  if (profiling_ && l > 0) ++profile_[l].visits;  // level 0: counted by apply and apply_parity
  const LevelParam& q = param_.level[l];
  // Without pre-smoothing x starts at zero: the coarse level corrects b itself and x is P x_c,
  // with no zeroing, copies or sums (on the fine level each costs a pass over a field).
  const ColorSpinorField* r = &b;
  if (q.pre_smooth > 0) {
    smooth(l, x, b, q.pre_smooth);
    L.op->apply(*L.r, x);
    blas::caxpby(Cplx(1), b, Cplx(-1), *L.r);  // r = b - M x
    r = L.r.get();
  }
  {
    const LogScope log(LogEvent::mg_transfer, 0, true);
    restrict_down(l, *C.b, *r);
  }
  coarse_correction(l);
  if (q.post_smooth > 0 && smooths_on_parity(l)) {  // x_q from the reconstruction
    L.schur->prepare(*L.hx, b);
    correct_on_parity(l, *L.hb, *L.hx);
    L.schur->reconstruct(x, *L.hb, b);
    return;
  }
  {
    const LogScope log(LogEvent::mg_transfer, 0, true);
    prolongate_up(l, q.pre_smooth > 0 ? *L.t : x, *C.x);
  }
  if (q.pre_smooth > 0) blas::caxpby(Cplx(1), *L.t, Cplx(1), x);
  if (q.post_smooth > 0) {
    L.op->apply(*L.r, x);
    blas::caxpby(Cplx(1), b, Cplx(-1), *L.r);  // r = b - M x
    smooth(l, *L.e, *L.r, q.post_smooth);
    blas::caxpby(Cplx(1), *L.e, Cplx(1), x);
  }
}

void Multigrid::apply(ColorSpinorField& x, const ColorSpinorField& b) {
  Level& F = *levels_[0];
  require(F.transfer != nullptr && levels_.back()->op != nullptr, "multigrid applied before setup");
  const LogScope log(LogEvent::mg_apply, 0, true);
  const LevelScope on(*this, 0);
  if (profiling_) ++profile_[0].visits;  // a cycle from the fine level (profiled_cycles)
  // The cycle reads b and writes x: on the caller's fields where they are the fine level's
  // kind (distinct fields), else on copies converted to it.
  if (F.b->is_like(x) && F.b->is_like(b) && x.block_data(0) != b.block_data(0)) {
    cycle(0, x, b);
    return;
  }
  F.b->copy_from(b);
  cycle(0, *F.x, *F.b);
  x.copy_from(*F.x);
}

void Multigrid::apply_parity(ColorSpinorField& x, const ColorSpinorField& f_p, const ColorSpinorField& bhat) {
  Level& F = *levels_[0];
  Level& C = *levels_[1];
  require(F.transfer != nullptr && levels_.back()->op != nullptr, "multigrid applied before setup");
  require(x.n_parity() == 1 && f_p.n_parity() == 1 && bhat.n_parity() == 1 &&
              x.block_parity(0) == f_p.block_parity(0) && bhat.block_parity(0) == f_p.block_parity(0),
          "multigrid apply_parity: x, f_p and bhat must be fields of one parity, the same");
  require(f_p.precision() == Precision::single && bhat.precision() == Precision::single,
          "multigrid apply_parity: f_p and bhat must be in single precision (got ", to_string(f_p.precision()), " and ",
          to_string(bhat.precision()), ")");
  const LogScope log(LogEvent::mg_apply, 0, true);
  const LevelScope on(*this, 0);
  if (profiling_) ++profile_[0].visits;  // a cycle from the fine level (profiled_cycles)
  const int p = f_p.block_parity(0);
  // The parity cycle needs the even-odd smoother on parity p, after the coarse correction only.
  if (!smooths_on_parity(0) || !F.hr->is_like(f_p) || !F.hr->is_like(bhat)) {  // the full cycle on f = (f_p, 0)
    F.b->zero();
    F.b->parity(p).copy_from(f_p);
    cycle(0, *F.x, *F.b);
    x.copy_from(F.x->parity(p));
    return;
  }
  // What cycle() computes for parity p, without the reconstruction of the other.
  const bool in_place =
      F.hr->is_like(x) && x.block_data(0) != f_p.block_data(0) && x.block_data(0) != bhat.block_data(0);
  ColorSpinorField& xp = in_place ? x : *F.hb;
  {
    const LogScope t(LogEvent::mg_transfer, 0, true);
    restrict_down(0, *C.b, f_p);
  }
  coarse_correction(0);
  correct_on_parity(0, xp, bhat);
  if (!in_place) x.copy_from(xp);
  ++F.parity_cycles;
}

// ---- The cycle on sets of right-hand sides (apply_parity_set) -----------------------------------

bool Multigrid::cycles_sets() const {
  if (param_.cycle != CycleType::vcycle) return false;
  for (int l = 0; l + 1 < levels(); ++l)
    if (!smooths_on_parity(l) || param_.level[l].post_smooth < 1) return false;
  return true;
}

void Multigrid::restrict_down_set(int l, std::vector<ColorSpinorField>& c, const std::vector<ColorSpinorField>& f) {
  Level& C = *levels_[l + 1];
  if (!C.gather) {
    levels_[l]->transfer->restrict_set(c, f);
    return;
  }
  levels_[l]->transfer->restrict_set(C.sets.part_b, f);
  const LevelScope on(*this, l + 1);
  const LogScope log(LogEvent::mg_gather, 0, true);
  const double t0 = profiling_ ? now_seconds() : 0;
  C.gather->gather_set(c, C.sets.part_b);
  if (profiling_) {
    synchronize(C.part_b->backend());
    profile_[l + 1].gather_seconds += now_seconds() - t0;
  }
}

void Multigrid::prolongate_up_set(int l, std::vector<ColorSpinorField>& f, const std::vector<ColorSpinorField>& c) {
  Level& C = *levels_[l + 1];
  if (!C.gather) {
    levels_[l]->transfer->prolongate_set(f, c);
    return;
  }
  for (std::size_t k = 0; k < c.size(); ++k) C.gather->scatter(C.sets.part_x[k], c[k]);
  levels_[l]->transfer->prolongate_set(f, C.sets.part_x);
}

void Multigrid::mr_steps_fused(int l, int steps, std::vector<ColorSpinorField>& xp,
                               const std::vector<ColorSpinorField>& bhat, const MrFields& f) {
  Level& L = *levels_[l];
  const int n = static_cast<int>(xp.size());
  const double omega = param_.level[l].omega;
  // As mr_steps on the even-odd system, x_p += the steps' x for rhat = bhat - Mhat x_p, with the
  // passes between the steps fused: rhat formed in the smoother's precision in one pass, the
  // first step writing x (no zeroing), the last adding its x to x_p (no copy out of the
  // smoother's precision, no separate sum). A coarse level's set takes the level's own blocks,
  // not their half copy: over a set the stencil is bound by issue, not bytes, and half blocks
  // only add their decoding (on tensor cores, where the single blocks go, the half copy was the
  // slower); one field takes the half copy.
  const bool low = L.schur_low != nullptr && (n == 1 || l == 0 || !L.schur->applies_sets());
  const bool low_fields = low && !f.lx.empty();
  LinearOperator& A = low ? static_cast<LinearOperator&>(*L.schur_low) : *L.schur;
  std::vector<ColorSpinorField>&xs = low_fields ? f.lx : f.hx, &rs = low_fields ? f.lr : f.hr,
                               &as = low_fields ? f.la : f.ha;
  std::vector<Cplx> one(n, Cplx(1)), minus_one(n, Cplx(-1));
  // One field: the operators' own one-field stencils (a coarse set stencil over one field
  // would leave most of its lanes idle).
  auto apply = [n](LinearOperator& M, std::vector<ColorSpinorField>& out, const std::vector<ColorSpinorField>& in) {
    if (n == 1)
      M.apply(out[0], in[0]);
    else
      M.apply_set(out, in);
  };
  apply(*L.schur, f.hr, xp);
  if (low_fields && blas::mixed_precision_sets(f.hr[0])) {
    blas::caxpby_set_to(one.data(), bhat, minus_one.data(), f.hr, rs);  // rhat = bhat - Mhat x_p, stored low
  } else {
    blas::caxpbypcz_set(one.data(), bhat, nullptr, nullptr, minus_one.data(), f.hr);
    if (low_fields)
      for (int k = 0; k < n; ++k) rs[k].copy_from(f.hr[k]);
  }
  // x_k += omega alpha_k r_k, r_k -= omega alpha_k A r_k (not after the last step), the scalars
  // on the device on one rank, else summed on the host.
  blas::DotNormSum* sums = sums_on_device(rs[0]) ? L.mr_sums_on(rs[0].backend()) : nullptr;
  std::vector<blas::DotNorms> d(sums ? 0 : n);
  std::vector<Cplx> a(n);
  for (int s = 0; s < steps; ++s) {
    const bool last = s + 1 == steps;
    const blas::MrSetEnds ends{s == 0, last ? &xp : nullptr};
    apply(A, as, rs);
    if (sums) {
      blas::cdot_norms_set_to(as, rs, sums);
      blas::mr_update_set_from(omega, sums, rs, as, xs, !last, ends);
    } else {
      blas::cdot_norms_set(as, rs, d.data());
      for (int k = 0; k < n; ++k) {
        // A field whose residual vanished (or a zero right-hand side) takes no step.
        a[k] = d[k].xx > 0 ? Cplx(omega * d[k].dot.re / d[k].xx, omega * d[k].dot.im / d[k].xx) : Cplx(0);
      }
      blas::mr_update_set(a.data(), rs, as, xs, ends);  // x += a r and r -= a A r in one pass
    }
    L.smooth_steps += n;
  }
}

void Multigrid::correct_on_parity_set(int l, std::vector<ColorSpinorField>& xp,
                                      const std::vector<ColorSpinorField>& bhat) {
  {
    const LogScope log(LogEvent::mg_transfer, 0, true);
    prolongate_up_set(l, xp, levels_[l + 1]->sets.x);
  }
  const int steps = param_.level[l].post_smooth;
  if (steps == 0) return;
  const LogScope log(static_cast<LogEvent>(static_cast<int>(LogEvent::mg_smooth0) + std::min(l, 3)), 0, true);
  Level::Sets& S = levels_[l]->sets;
  mr_steps_fused(l, steps, xp, bhat, MrFields{S.hr, S.hx, S.ha, S.lx, S.lr, S.la});
}

void Multigrid::coarse_solve_set(int l, std::vector<ColorSpinorField>& x, const std::vector<ColorSpinorField>& b) {
  Level& C = *levels_[l];
  Level::Sets& S = C.sets;
  const std::size_t n = b.size();
  // Solved directly on its even-odd system: the set's sources, solves and solutions in one pass
  // each. Otherwise (GCR on a few thousand unknowns) field by field.
  if (!C.direct || !C.schur || S.bhat.size() != n || S.xhat.size() != n) {
    for (std::size_t k = 0; k < n; ++k) coarse_solve(l, x[k], b[k]);
    return;
  }
  const LevelScope on(*this, l);
  if (profiling_) profile_[l].visits += static_cast<long>(n);
  const LogScope log(LogEvent::mg_coarse_solve, 0, true);
  C.schur->prepare_set(S.bhat, b);
  C.direct->apply_set(S.xhat, S.bhat);
  C.schur->reconstruct_set(x, S.xhat, b);
  C.solves += static_cast<long>(n);
}

void Multigrid::coarse_correction_set(int l) {
  Level& C = *levels_[l + 1];
  if (l + 2 == param_.levels)
    coarse_solve_set(l + 1, C.sets.x, C.sets.b);
  else
    cycle_set(l + 1, C.sets.x, C.sets.b);
}

void Multigrid::cycle_set(int l, std::vector<ColorSpinorField>& x, const std::vector<ColorSpinorField>& b) {
  Level& L = *levels_[l];
  Level::Sets& S = L.sets;
  const LevelScope on(*this, l);
  if (profiling_) profile_[l].visits += S.n;
  {
    const LogScope log(LogEvent::mg_transfer, 0, true);
    restrict_down_set(l, levels_[l + 1]->sets.b, b);
  }
  coarse_correction_set(l);
  // As cycle() where it smooths on parity: x_p = [P x_c]_p smoothed, then x_q from the reconstruction.
  L.schur->prepare_set(S.hx, b);
  correct_on_parity_set(l, S.hb, S.hx);
  L.schur->reconstruct_set(x, S.hb, b);
}

void Multigrid::apply_parity_set(std::vector<ColorSpinorField>& x, const std::vector<ColorSpinorField>& f_p,
                                 const std::vector<ColorSpinorField>& bhat) {
  const std::size_t n = x.size();
  require(n >= 1 && f_p.size() == n && bhat.size() == n, "multigrid apply_parity_set: sets of ", x.size(), ", ",
          f_p.size(), " and ", bhat.size(), " fields; expected equal, non-empty sets");
  if (n == 1 || !cycles_sets()) {
    for (std::size_t k = 0; k < n; ++k) apply_parity(x[k], f_p[k], bhat[k]);
    return;
  }
  Level& F = *levels_[0];
  require(F.transfer != nullptr && levels_.back()->op != nullptr, "multigrid applied before setup");
  require(static_cast<int>(n) <= blas::set_max, "multigrid apply_parity_set: ", n, " fields; at most ", blas::set_max,
          " in one set");
  require(is_set(x) && is_set(f_p) && is_set(bhat) && F.hr->is_like(x[0]) && F.hr->is_like(f_p[0]) &&
              F.hr->is_like(bhat[0]),
          "multigrid apply_parity_set: x, f_p and bhat must be sets (ColorSpinorField::make_set) of single-precision "
          "fields of the fine level's even-odd parity");
  require(x[0].block_data(0) != f_p[0].block_data(0) && x[0].block_data(0) != bhat[0].block_data(0),
          "multigrid apply_parity_set: x must be a set apart from f_p and bhat");
  const LogScope log(LogEvent::mg_apply, 0, true);
  const LevelScope on(*this, 0);
  if (profiling_) profile_[0].visits += static_cast<long>(n);
  for (int l = 0; l < levels(); ++l) levels_[l]->allocate_sets(static_cast<int>(n), l == 0);
  {
    const LogScope t(LogEvent::mg_transfer, 0, true);
    restrict_down_set(0, levels_[1]->sets.b, f_p);
  }
  coarse_correction_set(0);
  correct_on_parity_set(0, x, bhat);
  F.parity_cycles += static_cast<long>(n);
  F.set_cycles += static_cast<long>(n);
}

}  // namespace latke::mg
