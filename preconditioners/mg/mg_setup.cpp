// Adaptive multigrid (mg.h), its setup: the levels' operators, the null vectors (inverse
// iteration from random vectors, as sets where the operator applies sets), the transfers and
// the Galerkin coarse operators; update and reuse on a new fine operator. Host code: every
// vector operation is a kernel of the transfer, the operators or BLAS.
#include "preconditioners/mg/mg.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <sstream>

#include "src/core/error.h"
#include "src/core/log.h"
#include "src/fields/blas.h"
#include "operators/coarse/dense_inverse.h"
#include "preconditioners/mg/galerkin.h"
#include "preconditioners/mg/mg_level.h"

namespace latke::mg {

using blas::Cplx;

namespace {

std::string dims(const Coords& c) {
  std::ostringstream s;
  s << c[0] << "x" << c[1] << "x" << c[2] << "x" << c[3];
  return s.str();
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

Multigrid::Multigrid(std::shared_ptr<LinearOperator> fine, const MultigridParam& param, LocalFactory local,
                     std::shared_ptr<SchurOperator> fine_schur, std::shared_ptr<SchurOperator> fine_smoother,
                     std::shared_ptr<LinearOperator> fine_setup)
    : param_(param) {
  gathered_ = check_param(param_, *fine->lattice());
  for (int l = 0; l < param_.levels; ++l) levels_.push_back(std::make_unique<Level>());
  install_fine(std::move(fine), std::move(local), std::move(fine_schur), std::move(fine_smoother),
               std::move(fine_setup));
}

void Multigrid::install_fine(std::shared_ptr<LinearOperator> fine, LocalFactory local,
                             std::shared_ptr<SchurOperator> fine_schur, std::shared_ptr<SchurOperator> fine_smoother,
                             std::shared_ptr<LinearOperator> fine_setup) {
  forget_graphs();  // the recorded coarse corrections hold the old operators' buffers
  const SpinorParam fp = fine->field_param();
  require(fp.subset == Subset::full && fp.precision == Precision::single,
          "multigrid: the fine operator must act on full single-precision fields (got ", to_string(fp.precision),
          fp.subset == Subset::full ? ", full" : ", one parity", ")");
  require(param_.level[0].smoother != SmootherType::schwarz || local,
          "multigrid: the Schwarz smoother needs the fine operator's domain-local form, which this operator lacks");
  if (fine_schur) {
    const SpinorParam sp = fine_schur->field_param();
    require(sp.subset != Subset::full && sp.precision == Precision::single && sp.nspin == fp.nspin &&
                sp.ncolor == fp.ncolor,
            "multigrid: the fine even-odd operator must act on one parity of the fine fields, in single precision");
  }
  // The fine operators in a lower precision that the smoother and the setup ask for: given
  // exactly when the precision is not single, on the fine fields of the expected subset.
  auto check_low = [&](const LinearOperator* op, Precision want, Subset subset, const char* what, const char* needs) {
    if (want == Precision::single) return;
    require(op != nullptr, "multigrid: ", what, " in ", to_string(want), " precision needs the fine ", needs, " in ",
            to_string(want));
    const SpinorParam sp = op->field_param();
    require(sp.precision == want && sp.subset == subset && sp.nspin == fp.nspin && sp.ncolor == fp.ncolor,
            "multigrid: ", what, ": the fine operator given acts on ", to_string(sp.precision), " fields; expected ",
            subset == Subset::full ? "full fine fields" : "one parity of the fine fields", " in ", to_string(want));
  };
  const LevelParam& q0 = param_.level[0];
  check_low(fine_schur ? fine_smoother.get() : nullptr, q0.smoother_precision,
            fine_schur ? fine_schur->field_param().subset : Subset::full, "smoothing",
            "even-odd operator in single and");
  const bool setup_eo = fine_schur && param_.setup_even_odd;
  check_low(fine_setup.get(), q0.setup_precision, setup_eo ? fine_schur->field_param().subset : Subset::full, "a setup",
            setup_eo ? "even-odd operator" : "operator");
  Level& F = *levels_[0];
  F.schur_low = q0.smoother_precision != Precision::single ? std::move(fine_smoother) : nullptr;
  F.setup_low = q0.setup_precision != Precision::single ? std::move(fine_setup) : nullptr;
  F.op = std::move(fine);
  F.schur = std::move(fine_schur);
  local_ = std::move(local);
}

std::string Multigrid::mismatch(const LinearOperator& fine, const SchurOperator* fine_schur) const {
  const Level& F = *levels_[0];
  const Lattice &was = *F.op->lattice(), &now = *fine.lattice();
  const SpinorParam a = F.op->field_param(), b = fine.field_param();
  const bool same_form =
      !fine_schur == !F.schur && (!fine_schur || fine_schur->field_param().subset == F.schur->field_param().subset);
  if (now.global() == was.global() && now.local() == was.local() && now.size() == was.size() && a.nspin == b.nspin &&
      a.ncolor == b.ncolor && a.backend == b.backend && same_form)
    return "";
  std::ostringstream s;
  s << "the new fine operator acts on a " << dims(now.global()) << " lattice (local " << dims(now.local()) << ", "
    << now.size() << " ranks) with " << b.nspin << "x" << b.ncolor
    << " components per site; the null vectors were found for " << dims(was.global()) << " (local " << dims(was.local())
    << ", " << was.size() << " ranks) with " << a.nspin << "x" << a.ncolor
    << " and the same even-odd form (parity) and backend are needed";
  return s.str();
}

void Multigrid::update(std::shared_ptr<LinearOperator> fine, LocalFactory local,
                       std::shared_ptr<SchurOperator> fine_schur, std::shared_ptr<SchurOperator> fine_smoother,
                       std::shared_ptr<LinearOperator> fine_setup,
                       const std::function<void(const std::string&)>& progress, const std::vector<int>& refresh) {
  const auto t0 = std::chrono::steady_clock::now();
  const LogScope log(LogEvent::mg_setup, 0, true);
  Level& F = *levels_[0];
  require(F.transfer != nullptr, "multigrid update: the hierarchy has not been set up (setup() or load() first)");
  require(fine != nullptr, "multigrid update: no fine operator given");
  const std::string why = mismatch(*fine, fine_schur.get());
  require(why.empty(), "multigrid update: ", why);
  require(static_cast<int>(refresh.size()) < param_.levels, "multigrid update: ", refresh.size(),
          " levels' refresh steps given: expected at most ", param_.levels - 1);
  for (std::size_t l = 0; l < refresh.size(); ++l)
    require(refresh[l] >= 0, "multigrid update: ", refresh[l], " refresh steps on level ", l, ": expected 0 or more");
  // Kept fine vectors stay measured against the operator they were found for, which this replaces.
  if (refresh.empty() || refresh[0] == 0) fine_reference();
  install_fine(std::move(fine), std::move(local), std::move(fine_schur), std::move(fine_smoother),
               std::move(fine_setup));
  prepare_fine_level();
  for (int l = 0; l < param_.levels; ++l) levels_[l]->setup_seconds = 0;
  for (int l = 0; l + 1 < param_.levels; ++l) {
    const int steps = l < static_cast<int>(refresh.size()) ? refresh[l] : 0;
    if (steps == 0) {
      if (progress)
        progress("level " + std::to_string(l) + ": keeping its " + std::to_string(param_.level[l].nvec) +
                 " null vectors for the new operator");
      build_level(l, progress, false);  // the basis is orthonormal and packed already
      continue;
    }
    // From the kept vectors (orthonormal over aggregates, spanning there what the old ones
    // spanned), on level l's operator for the new fine one.
    const auto tl = std::chrono::steady_clock::now();
    find_null_vectors(l, false, progress, 0, steps);
    levels_[l]->setup_seconds += seconds_since(tl);
    build_level(l, progress);
  }
  synchronize(levels_[0]->op->field_param().backend);
  setup_seconds_ = seconds_since(t0);
}

Multigrid::~Multigrid() = default;

double Multigrid::mean_nullness(LinearOperator& M) const {
  const std::vector<ColorSpinorField>& v = levels_[0]->transfer->vectors();
  ColorSpinorField mv = M.make_field();
  double sum = 0;
  for (const ColorSpinorField& x : v) {
    M.apply(mv, x);
    sum += std::sqrt(blas::cdot_norms(mv, mv).xx / blas::cdot_norms(x, x).xx);
  }
  return sum / static_cast<double>(v.size());
}

double Multigrid::nullness_growth(LinearOperator& fine) const {
  require(levels_[0]->transfer != nullptr, "multigrid: the hierarchy has not been set up (setup() or load() first)");
  const std::string why = mismatch(fine, levels_[0]->schur.get());  // the fields' shape, not the form
  require(why.empty(), "multigrid: ", why);
  return mean_nullness(fine) / fine_reference();
}

double Multigrid::fine_reference() const {
  if (fine_nullness_ == 0) fine_nullness_ = mean_nullness(*levels_[0]->op);
  return fine_nullness_;
}

bool Multigrid::setup_on_even_odd(int l) const { return param_.setup_even_odd && levels_[l]->schur; }

LinearOperator* Multigrid::set_operator(int l) const {
  const LevelParam& q = param_.level[l];
  const Level& L = *levels_[l];
  if (q.setup_solver != SolverType::bicgstab) return nullptr;
  const bool eo = setup_on_even_odd(l);
  LinearOperator* A = &L.system(eo);
  // The fine level's sets in its setup precision: the fine operator in half, given to the
  // constructor. Coarse levels' sets stay on their single blocks: the set stencil is bound by
  // latency and issue, not bytes, so the half blocks of their smoother only add decoding (the
  // vectors took longer), and the vectors of the perturbed operator cost K-cycle iterations.
  if (l == 0 && q.setup_precision != Precision::single) A = eo ? L.setup_low.get() : nullptr;
  return A && A->applies_sets() ? A : nullptr;
}

int Multigrid::setup_batch(int l) const {
  const LevelParam& q = param_.level[l];
  const LinearOperator* A = set_operator(l);
  if (!A) return 1;
  long batch = std::min(param_.setup_batch, q.nvec);
  if (l == 0) {
    // The fine level's sets are large: per vector -M v and e (full fields in single), bhat and
    // e_p (one parity in single; without even-odd none), BiCGstab's five fields and the
    // operator's scratch field (one parity each in the set's precision, or full ones without
    // even-odd); where the set's precision is not single also bhat in it, and for the reliable
    // updates b - A x and the single operator's scratch (one parity in single each). As many as
    // half the free memory holds.
    const SpinorParam fp = A->field_param();
    SpinorParam one = fp;  // one parity in the set's precision, and in single
    one.subset = Subset::even;
    const std::size_t own = ColorSpinorField::bytes_for(*A->lattice(), one);
    one.precision = Precision::single;
    const std::size_t single = ColorSpinorField::bytes_for(*A->lattice(), one);
    const std::size_t parity = fp.n_parity();
    const std::size_t per = 4 * single + (parity == 1 ? 2 * single : 0) + 6 * parity * own +
                            (fp.precision != Precision::single ? own + 2 * single : 0);
    batch = std::min<long>(batch, std::max<long>(1, static_cast<long>(free_memory(fp.backend) / 2 / per)));
  }
  return static_cast<int>(batch);
}

std::vector<SolverStats> Multigrid::solve_null_vectors(int l, int k0, int count, bool refine, const SolverParam& sp,
                                                       LinearOperator* low, NullVectorFields& f, int restricted) {
  Level& L = *levels_[l];
  std::vector<ColorSpinorField>& v = L.transfer->vectors();
  const bool eo = !refine && setup_on_even_odd(l);
  if (static_cast<int>(f.mv.size()) != count) {  // allocated once per pass (and for a shorter last set)
    f.mv = ColorSpinorField::make_set(L.op->lattice(), L.op->field_param(), count);
    f.e = ColorSpinorField::make_set(L.op->lattice(), L.op->field_param(), count);
    if (eo) {
      f.bh = ColorSpinorField::make_set(L.op->lattice(), L.schur->field_param(), count);
      f.eh = ColorSpinorField::make_set(L.op->lattice(), L.schur->field_param(), count);
    }
  }
  std::vector<ColorSpinorField>&mv = f.mv, &e = f.e, &bh = f.bh, &eh = f.eh;
  // Inverse iteration: M x = 0 from x = v, i.e. v + e with M e = -M v (first pass: v random).
  for (int j = 0; j < count; ++j) {
    if (!refine && k0 + j >= restricted) fill_gaussian(v[k0 + j], param_.seed * 1000003ull + 1009ull * l + k0 + j);
    L.op->apply(mv[j], v[k0 + j]);
    blas::caxpby(Cplx(0), mv[j], Cplx(-1), mv[j]);
    (eo ? eh[j] : e[j]).zero();
    if (eo) L.schur->prepare(bh[j], mv[j]);  // the even-odd system: bhat from -M v, e from e_p
  }
  std::vector<SolverStats> st;
  if (count > 1) {  // together: one BiCGstab over the set, the operator reading its coefficients once for all
    LinearOperator& A = *set_operator(l);
    std::vector<ColorSpinorField>& rhs = eo ? bh : mv;
    const auto set_of = [](LinearOperator& op) -> SetOperator {
      return [&op](std::vector<ColorSpinorField>& o, const std::vector<ColorSpinorField>& i) { op.apply_set(o, i); };
    };
    if (A.field_param().precision != rhs[0].precision()) {
      // Half steps, e accumulated in single, with reliable updates by the level's own operator.
      if (static_cast<int>(f.bl.size()) != count)
        f.bl = ColorSpinorField::make_set(L.op->lattice(), A.field_param(), count);
      for (int j = 0; j < count; ++j) f.bl[j].copy_from(rhs[j]);
      const SetOperator precise = set_of(L.system(eo));
      st = bicgstab_set(set_of(A), eo ? eh : e, f.bl, sp, &precise, &rhs);
    } else {
      st = bicgstab_set(set_of(A), eo ? eh : e, rhs, sp);
    }
  } else if (eo) {
    st = {solve(*L.schur, low, nullptr, eh[0], bh[0], sp)};
  } else {
    LevelPreconditioner K([this, l](ColorSpinorField& o, const ColorSpinorField& i) { cycle(l, o, i); }, "cycle");
    st = {solve(*L.op, refine ? nullptr : low, refine ? &K : nullptr, e[0], mv[0], sp)};
  }
  for (int j = 0; j < count; ++j) {
    if (eo) L.schur->reconstruct(e[j], eh[j], mv[j]);
    blas::caxpby(Cplx(1), e[j], Cplx(1), v[k0 + j]);
  }
  return st;
}

void Multigrid::find_null_vectors(int l, bool refine, const std::function<void(const std::string&)>& progress,
                                  int restricted, int refresh) {
  const LogScope log(LogEvent::mg_null_vectors, 0, true);
  Level& L = *levels_[l];
  const LevelParam& q = param_.level[l];
  std::vector<ColorSpinorField>& v = L.transfer->vectors();
  // The first pass solves the even-odd system where the level has one; refinement passes
  // solve M itself, which the cycle preconditions. The first pass solves up to setup_batch
  // vectors together (setup_batch(l)): their solves are independent, so this is the same
  // inverse iteration as one at a time. Coarse levels' sets run in their own precision
  // (single); the fine level's, where its even-odd operator applies a set in one pass
  // (Wilson-clover, on one rank or several), in its setup precision, as many as half the free
  // memory holds.
  const bool eo = !refine && setup_on_even_odd(l);
  const int batch = refine ? 1 : setup_batch(l);
  // Whether a set's steps run on an operator in half (the fine one given) rather than the
  // level's own.
  const bool set_in_half = batch > 1 && set_operator(l) != &L.system(eo);
  if (!refine && refresh == 0) {
    L.setup_batch = batch;
    L.setup_restricted = restricted;
  }
  // A refresh starts every vector from the kept one (none is filled with Gaussian numbers).
  const int given = refresh > 0 ? q.nvec : restricted;
  // The steps in half: on level 0 the fine operator given in half; on a coarse level solving
  // one vector at a time, a copy of its operator with the blocks in half (unless they are already).
  std::shared_ptr<LinearOperator> low = L.setup_low;
  if (l > 0 && q.setup_precision == Precision::half && !refine && batch == 1 &&
      L.coarse->precision() != Precision::half)
    low = std::make_shared<CoarseLinear>(L.coarse->in_half(), eo, 0, Precision::single);
  SolverParam sp;
  sp.tol = q.setup_tol;
  if (refine) {
    sp.type = SolverType::gcr;
    sp.max_iter = std::max(1, q.setup_iterations / 10);
    sp.restart = sp.max_iter;
  } else {
    sp.type = q.setup_solver;
    sp.max_iter = q.setup_iterations;
  }
  NullVectorFields fields;
  std::vector<SolverStats> stats;
  std::unique_ptr<ColorSpinorField> probe;
  double seconds = 0;
  // Sets of at most `batch` vectors, the restricted starts (setup_restrict_iterations steps
  // each; with 0 they stay as restricted) apart from the Gaussian ones (setup_iterations).
  const int steps = sp.max_iter;
  int set_start = 0;
  for (int k = 0; k < q.nvec; ++k) {
    if (k == set_start + static_cast<int>(stats.size())) {
      const auto t0 = std::chrono::steady_clock::now();
      const int count = std::min(batch, (k < restricted ? restricted : q.nvec) - k);
      set_start = k;
      sp.max_iter = refresh > 0 ? refresh : k < restricted ? q.setup_restrict_iterations : steps;
      if (sp.max_iter > 0) {
        stats = solve_null_vectors(l, k, count, refine, sp, low.get(), fields, given);
      } else {
        stats.assign(count, SolverStats{});
        for (SolverStats& st : stats) st.true_residual = 1;
      }
      synchronize(v[k].backend());
      seconds = seconds_since(t0);
    }
    const SolverStats& st = stats[k - set_start];
    // Gram-Schmidt (twice) against the vectors before it, as QUDA's setup does: inverse
    // iteration drives every vector towards the lowest modes, and close to kappa_c towards
    // the same isolated few, which would leave the aggregates' bases nearly degenerate.
    if (k > 0) {
      std::vector<const ColorSpinorField*> prev(k);
      std::vector<Cplx> c(k);
      for (int j = 0; j < k; ++j) prev[j] = &v[j];
      for (int pass = 0; pass < 2; ++pass) {
        blas::cdot_multi(prev.data(), k, v[k], c.data());
        for (Cplx& a : c) a = -a;
        blas::caxpy_multi(c.data(), prev.data(), k, v[k]);
      }
    }
    const double n = std::sqrt(blas::cdot_norms(v[k], v[k]).xx);
    require(n > 0, "multigrid level ", l, ": null vector ", k, " vanished in the setup");
    blas::caxpby(Cplx(0), v[k], Cplx(1 / n), v[k]);
    if (progress) {
      // How null the vector is now (|v| = 1), for the progress line only: one application.
      if (!probe) probe = std::make_unique<ColorSpinorField>(L.op->make_field());
      L.op->apply(*probe, v[k]);
      const double nullness = std::sqrt(norm2(*probe));
      const char* how = refine ? "+cycle" : eo ? " even-odd" : "";
      std::ostringstream s;
      s << "level " << l << ": "
        << (refine        ? "refined"
            : refresh > 0 ? "refreshed"
                          : "found")
        << " null vector " << k + 1 << "/" << q.nvec << " ("
        << (!refine && k < restricted ? "from the level above's, restricted; " : "") << st.iterations << " "
        << to_string(sp.type) << how << " iterations";
      if (st.reliable_updates > 0) s << " (" << st.reliable_updates << " reliable updates)";
      s << " reduced |M v| by " << st.true_residual;
      s << "; |M v|/|v| " << nullness;
      if (stats.size() > 1)
        s << ", solved with " << stats.size() - 1 << " others" << (set_in_half ? ", in half," : "") << " in " << seconds
          << " s, " << st.seconds << " s of them in the solver)";
      else
        s << ", " << seconds << " s)";
      progress(s.str());
    }
  }
  if (batch > 1) {
    set_operator(l)->release_set_scratch();
    L.system(eo).release_set_scratch();  // reliable updates
  }
}

void Multigrid::build_level(int l, const std::function<void(const std::string&)>& progress, bool orthonormalize) {
  const auto t0 = std::chrono::steady_clock::now();
  forget_graphs();
  Level& L = *levels_[l];
  Level& C = *levels_[l + 1];
  const LevelParam& q = param_.level[l];
  if (orthonormalize) {
    L.transfer->orthonormalize();  // synchronizes (it checks for vanishing aggregates)
    if (l == 0) fine_nullness_ = 0;  // nullness_growth()'s reference: on this operator, when asked
  }
  const double t_orth = seconds_since(t0);
  const bool coarsest = l + 1 == param_.levels - 1;
  const bool even_odd = coarsest ? param_.coarse_even_odd : param_.level[l + 1].smooth_even_odd;
  // An agglomerated level: its blocks gathered onto its copy's ranks (the Agglomeration made
  // once; update() keeps it with the transfer).
  if (gathered_[l + 1] > 0 && !C.gather)
    C.gather =
        std::make_unique<Agglomeration>(L.transfer->coarse_lattice(), L.op->field_param().backend, gathered_[l + 1]);
  const auto tg = std::chrono::steady_clock::now();
  {
    const LogScope log(LogEvent::mg_galerkin, 0, true);
    C.coarse = galerkin(*L.op, *L.transfer, q.coarse_precision, even_odd, GalerkinAssembly::automatic, C.gather.get());
  }
  C.coarse->set_math(param_.setup_set_math);
  const double t_galerkin = seconds_since(tg);  // finalize synchronized
  C.op = std::make_shared<CoarseLinear>(C.coarse, false, 0, Precision::single);
  C.schur.reset();
  if (even_odd) C.schur = std::make_shared<CoarseLinear>(C.coarse, true, 0, Precision::single);
  C.allocate(C.op->field_param());
  if (C.gather) {
    C.part_b = std::make_unique<ColorSpinorField>(C.gather->part(), C.op->field_param());
    C.part_x = std::make_unique<ColorSpinorField>(C.gather->part(), C.op->field_param());
  }
  const int nk = coarsest ? param_.coarse_restart : param_.level[l + 1].ksp_max_it;
  const SpinorParam wp = coarsest && C.schur ? C.schur->field_param() : C.op->field_param();
  C.z = ColorSpinorField::make_set(C.op->lattice(), wp, nk);
  C.az = ColorSpinorField::make_set(C.op->lattice(), wp, nk);
  C.gcr = std::make_unique<GcrCycle>(C.z, C.az, nk);
  C.gr = std::make_unique<ColorSpinorField>(C.op->lattice(), wp);
  if (coarsest && C.schur) {
    C.bhat = std::make_unique<ColorSpinorField>(C.op->lattice(), wp);
    C.xhat = std::make_unique<ColorSpinorField>(C.op->lattice(), wp);
  }
  C.schur_low.reset();
  C.coarse_low.reset();
  if (!coarsest && C.schur) {
    // A smoother in half on a coarse level: the even-odd operator with its blocks in half.
    if (param_.level[l + 1].smoother_precision == Precision::half && C.coarse->precision() != Precision::half) {
      C.coarse_low = C.coarse->in_half(true);
      C.schur_low = std::make_shared<CoarseLinear>(C.coarse_low, true, 0, Precision::single);
    }
    C.allocate_even_odd();
  }
  C.direct.reset();
  if (coarsest) {
    LinearOperator& A = C.system(C.schur != nullptr);
    // Collective either way: every rank calls global_unknowns.
    const bool direct = param_.coarse_solver == CoarseSolverType::direct ||
                        (param_.coarse_solver == CoarseSolverType::automatic && DenseInverse::global_unknowns(A) <= 4096);
    if (direct) {
      const auto td = std::chrono::steady_clock::now();
      C.direct = std::make_unique<DenseInverse>(A);  // probed 32 columns per apply_set
      if (progress) {
        std::ostringstream s;
        s << "level " << l + 1 << ": direct coarsest solve: dense inverse of the " << (C.schur ? "even-odd" : "full")
          << " system, " << C.direct->n() << " unknowns"
          << (C.direct->ranks() > 1 ? ", gathered on each of the " + std::to_string(C.direct->ranks()) + " ranks" : "")
          << ", 1-norm condition number " << C.direct->condition()
          << ", built in " << seconds_since(td) << " s";
        progress(s.str());
      }
    }
  }
  synchronize(C.op->field_param().backend);
  L.setup_seconds += seconds_since(t0);
  if (progress) {
    std::ostringstream s;
    s << "level " << l + 1 << ": coarse operator " << dims(C.op->lattice()->global()) << " x " << C.coarse->n()
      << (C.gather ? ", gathered " + C.gather->where(levels_[0]->op->lattice()->size()) + "," : "") << " built in " << seconds_since(t0)
      << " s (orthonormalization " << t_orth << " s, Galerkin products " << t_galerkin - C.coarse->finalize_seconds()
      << " s, " << (even_odd ? "even-odd blocks and " : "") << "storage " << C.coarse->finalize_seconds() << " s; "
      << C.coarse->bytes() / 1048576.0 << " MiB per rank)";
    progress(s.str());
  }
}

void Multigrid::prepare_fine_level() {
  Level& F = *levels_[0];
  F.allocate(F.op->field_param());
  if (F.schur) F.allocate_even_odd();
  if (param_.level[0].smoother == SmootherType::schwarz) {
    SchwarzParam sp = param_.level[0].schwarz;
    sp.block = schwarz_block_for(*F.op->lattice(), sp);
    const bool eo = param_.level[0].smooth_even_odd && F.schur;
    F.schwarz = std::make_unique<SchwarzPreconditioner>(
        [&](const Coords& block) { return local_(block, sp.precision, eo); }, sp);
    F.schwarz_even_odd = eo;
    if (eo)
      for (auto* f : {&F.wx, &F.wr, &F.wa}) f->reset(new ColorSpinorField(F.op->lattice(), F.schur->field_param()));
  }
}

void Multigrid::setup(const std::function<void(const std::string&)>& progress, const LevelDone& level_done) {
  const auto t0 = std::chrono::steady_clock::now();
  const LogScope log(LogEvent::mg_setup, 0, true);
  Level& F = *levels_[0];
  prepare_fine_level();
  // The level above's null vectors as the inverse iteration left them (before the transfer
  // orthonormalizes them over aggregates), to start this level's from (setup_restrict).
  std::vector<ColorSpinorField> above;
  for (int l = 0; l + 1 < param_.levels; ++l) {
    const auto tl = std::chrono::steady_clock::now();
    Level& L = *levels_[l];
    const LevelParam& q = param_.level[l];
    SpinorParam vp = L.op->field_param();
    vp.precision = Precision::single;
    L.transfer = std::make_unique<Transfer>(L.op->lattice(), vp, q.block, q.nvec, l + 1, q.transfer_precision);
    const int restricted = std::min<int>(q.nvec, static_cast<int>(above.size()));
    for (int k = 0; k < restricted; ++k) restrict_down(l - 1, L.transfer->vectors()[k], above[k]);
    above.clear();
    find_null_vectors(l, false, progress, restricted);
    if (param_.setup_restrict && l + 2 < param_.levels) {
      // Half where fields of the level's shape have it (the Wilson fine level's, 2.4 GB for 24
      // vectors on 32^3x64), single on coarse levels.
      if (vp.nspin == 4 && vp.ncolor == 3) vp.precision = Precision::half;
      above = ColorSpinorField::make_set(L.op->lattice(), vp, q.nvec);
      for (int k = 0; k < q.nvec; ++k) above[k].copy_from(L.transfer->vectors()[k]);
    }
    L.setup_seconds += seconds_since(tl);
    build_level(l, progress);
    if (level_done) level_done(l + 1, seconds_since(t0));
  }
  for (int pass = 0; pass < param_.setup_refine; ++pass)
    for (int l = 0; l + 1 < param_.levels; ++l) {
      const auto tl = std::chrono::steady_clock::now();
      find_null_vectors(l, true, progress);
      levels_[l]->setup_seconds += seconds_since(tl);
      build_level(l, progress);
    }
  synchronize(F.op->field_param().backend);
  setup_seconds_ = seconds_since(t0);
}

}  // namespace latke::mg
