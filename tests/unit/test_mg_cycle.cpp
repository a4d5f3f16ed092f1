// Adaptive multigrid on every backend this machine has (label mg): the cycle: verify() identities,
// MG-preconditioned GCR against the unpreconditioned solve, the direct coarsest solve, smoothers,
// the cycle against its definition and on one parity.
#include "tests/unit/mg_test_support.h"

namespace latke::mg {
namespace {

// verify(): the projector, R P = 1, D_c = R M P, and the coarse even-odd solve, on two and
// three levels, in single precision (the cycle's).
TEST_P(MgBackend, VerifyIdentities) {
  Problem pr(GetParam(), Precision::single, {8, 8, 8, 8});
  for (int levels : {2, 3}) {
    auto mg = std::make_shared<Multigrid>(pr.full(), small_param(levels));
    mg->setup();
    const VerifyReport r = mg->verify();
    ASSERT_EQ(static_cast<int>(r.galerkin.size()), levels - 1);
    for (int l = 0; l + 1 < levels; ++l) {
      EXPECT_LT(r.projector[l], 1e-5) << "level " << l;
      EXPECT_LT(r.restrict_prolong[l], 1e-5) << "level " << l;
      EXPECT_LT(r.galerkin[l], 1e-5) << "level " << l;
    }
    ASSERT_EQ(r.even_odd.size(), 1u);
    EXPECT_LT(r.even_odd[0], 1e-4);
  }
}

// GCR preconditioned by the multigrid cycle converges to the solution of BiCGstab without a
// preconditioner, with far fewer operator applications, smoothing on the full and on the even-odd system;
// the even-odd smoother (QUDA's choice) is the better one.
TEST_P(MgBackend, PreconditionedSolve) {
  Problem pr(GetParam(), Precision::double_, {8, 8, 8, 8}, -0.2, 0.25);
  Problem ps(GetParam(), Precision::single, {8, 8, 8, 8}, -0.2, 0.25);
  auto M = pr.full();
  ColorSpinorField b = M->make_field(), x1 = M->make_field();
  fill_gaussian(b, 8);
  SolverParam bi;
  bi.type = SolverType::bicgstab;
  bi.tol = 1e-11;
  const SolverStats plain = solve(*M, nullptr, nullptr, x1, b, bi);
  ASSERT_TRUE(plain.converged);
  int iterations[2];
  for (int eo = 0; eo < 2; ++eo) {
    auto schur = eo ? std::make_shared<WilsonCloverLinear>(ps.op, true, SchurType::symmetric, 0) : nullptr;
    auto mg = std::make_shared<Multigrid>(ps.full(), small_param(2), nullptr, schur);
    mg->setup();
    ColorSpinorField x2 = M->make_field();
    const SolverStats pre = mg_gcr(mg, *M, x2, b);
    ASSERT_TRUE(pre.converged) << (eo ? "even-odd" : "full") << " smoothing";
    EXPECT_LT(rel_diff(x1, x2), 1e-8);
    // Four times fewer outer operator applications than BiCGstab's.
    EXPECT_LT(pre.outer_applications * 4, plain.outer_applications)
        << "MG-GCR " << pre.outer_applications << ", BiCGstab " << plain.outer_applications
        << (eo ? ", even-odd" : ", full");
    iterations[eo] = pre.iterations;
  }
  EXPECT_LT(iterations[1], iterations[0]) << "even-odd smoothing should beat smoothing on the full operator";
}

// The coarsest level solved directly (its dense inverse) against GCR to the coarse tolerance:
// the verify check of the coarsest even-odd solve is exact to single precision, MG-GCR
// reaches the same solution in no more iterations.
TEST_P(MgBackend, DirectCoarsestSolve) {
  LightProblem lp(GetParam());
  auto& M = lp.M;
  const ColorSpinorField& b = lp.b;
  int iterations[2];
  ColorSpinorField x[2] = {M->make_field(), M->make_field()};
  for (int direct = 0; direct < 2; ++direct) {
    SCOPED_TRACE(direct ? "direct coarsest solve" : "GCR coarsest solve");
    MultigridParam p = small_param(3);  // 8^4 -> 4^4 -> 2^4: 96 unknowns on the coarsest even-odd system
    p.coarse_solver = direct ? CoarseSolverType::direct : CoarseSolverType::gcr;
    auto mg = lp.hierarchy(p);
    EXPECT_EQ(mg->info(2).direct, direct == 1);
    const VerifyReport r = mg->verify();
    ASSERT_EQ(r.even_odd.size(), 1u);
    EXPECT_LT(r.even_odd[0], direct ? 1e-5 : 2e-5);
    if (direct) {
      EXPECT_GT(mg->info(2).condition, 1.0);
      // Probing 32 columns per application (the setup's way, through the operator over a set)
      // and one column per application (the same operator behind a wrapper that does not
      // apply sets: LinearOperator::apply_set's field-by-field loop) give the same inverse.
      std::shared_ptr<CoarseOperator> dc(mg, &mg->coarse_operator(2));
      CoarseLinear A(dc, true, 0, Precision::single);
      ShiftedOperator by_field(A, 0.0);
      ASSERT_TRUE(A.applies_sets());
      ASSERT_FALSE(by_field.applies_sets());
      const DenseInverse one(by_field), set(A);
      ColorSpinorField f = A.make_field(), x1 = A.make_field(), x2 = A.make_field();
      fill_gaussian(f, 12);
      one.apply(x1, f);
      set.apply(x2, f);
      EXPECT_LT(rel_diff(x1, x2), 1e-5);
      EXPECT_GT(rel_diff(x1, f), 1e-2);
      EXPECT_NEAR(one.condition(), set.condition(), 1e-4 * one.condition());
      // Over a set of 5 (apply_set: one pass) as field by field; loose fields go one by one.
      std::vector<ColorSpinorField> fs = ColorSpinorField::make_set(A.lattice(), A.field_param(), 5),
                                    xs = ColorSpinorField::make_set(A.lattice(), A.field_param(), 5);
      for (int k = 0; k < 5; ++k) fill_gaussian(fs[k], 20 + k);
      set.apply_set(xs, fs);
      for (int k = 0; k < 5; ++k) {
        set.apply(x1, fs[k]);
        EXPECT_LT(rel_diff(x1, xs[k]), 1e-6) << "field " << k;
        EXPECT_GT(rel_diff(xs[k], fs[k]), 1e-2) << "field " << k;
      }
      std::vector<ColorSpinorField> loose{x2, A.make_field()}, two{fs[3], fs[1]};
      set.apply_set(loose, two);
      EXPECT_LT(rel_diff(loose[0], xs[3]), 1e-6);
      EXPECT_LT(rel_diff(loose[1], xs[1]), 1e-6);
    }
    const SolverStats st = mg_gcr(mg, *M, x[direct], b);
    ASSERT_TRUE(st.converged);
    iterations[direct] = st.iterations;
    if (direct)
      EXPECT_EQ(mg->work(2)[2], 0) << "the direct solve counts no iterations";
    else
      EXPECT_GT(mg->work(2)[2], 0);
    EXPECT_GT(mg->work(2)[1], 0);
  }
  EXPECT_LT(rel_diff(x[0], x[1]), 1e-8);
  EXPECT_LE(iterations[1], iterations[0])
      << "direct coarsest solve: " << iterations[1] << " MG-GCR iterations; GCR to 0.25: " << iterations[0];
}

// A coarse level smoothed in half (MR on its even-odd system with the blocks in half, vectors in
// single): the same solution, in about as many iterations as with the single smoother, the
// smoother ran, and the cycle is not the single one.
TEST_P(MgBackend, CoarseSmootherInHalf) {
  LightProblem lp(GetParam());
  int iterations[2];
  std::size_t bytes[2];
  ColorSpinorField x[2] = {lp.M->make_field(), lp.M->make_field()};
  std::shared_ptr<Multigrid> mgs;
  for (int c = 0; c < 2; ++c) {
    SCOPED_TRACE(c == 0 ? "single coarse smoothers" : "half coarse smoothers");
    MultigridParam p = small_param(3);  // 8^4 -> 4^4 -> 2^4: level 1 smooths
    if (c == 1) p.level[1].smoother_precision = Precision::half;
    auto mg = lp.hierarchy(p);
    const SolverStats st = mg_gcr(mg, *lp.M, x[c], lp.b);
    ASSERT_TRUE(st.converged);
    iterations[c] = st.iterations;
    bytes[c] = mg->info(1).bytes;
    EXPECT_GT(mg->work(1)[0], 0);
    if (c == 0) mgs = mg;
  }
  // The copy holds the even-odd blocks alone: a quarter of the single operator's bytes (half
  // the blocks, half the bytes each), plus one scale per block.
  const std::size_t single_op = mgs->coarse_operator(1).bytes();
  EXPECT_GT(bytes[1] - bytes[0], single_op / 5);
  EXPECT_LT(bytes[1] - bytes[0], single_op / 3);
  // Such a copy applies Mhat and refuses the full operator.
  auto copy = mgs->coarse_operator(1).in_half(true);
  ColorSpinorField cf(copy->lattice(), copy->field_param(Precision::single, Subset::full)),
      cg = cf.like(Precision::single);
  fill_gaussian(cf, 3);
  expect_error([&] { copy->apply(cg, cf); }, "coarse operator (apply): this copy holds only the even-odd blocks",
               "the full operator of an even-odd copy");
  EXPECT_LT(rel_diff(x[0], x[1]), 1e-8);
  EXPECT_GT(rel_diff(x[0], x[1]), 0) << "the same cycle: the half smoothers did not run";
  EXPECT_LE(iterations[1], iterations[0] + 3) << iterations[1] << " iterations, single smoothers " << iterations[0];
}

// Pre-smoothing, alone or with post-smoothing, on every level of three: MG-GCR reaches the
// solution of the default cycle (post-smoothing only, where x starts as P x_c), and every
// cycle runs the steps asked for on the fine level.
TEST_P(MgBackend, PreAndPostSmoothing) {
  LightProblem lp(GetParam());
  ColorSpinorField x0 = lp.M->make_field();
  ASSERT_TRUE(mg_gcr(lp.hierarchy(small_param(3)), *lp.M, x0, lp.b).converged);
  for (const auto& [pre, post] : {std::pair{2, 2}, std::pair{4, 0}}) {
    SCOPED_TRACE(std::to_string(pre) + " pre- and " + std::to_string(post) + " post-smoothing steps");
    MultigridParam p = small_param(3);
    for (LevelParam& q : p.level) q.pre_smooth = pre, q.post_smooth = post;
    auto mg = lp.hierarchy(p);
    ColorSpinorField x = lp.M->make_field();
    const SolverStats st = mg_gcr(mg, *lp.M, x, lp.b);
    ASSERT_TRUE(st.converged);
    EXPECT_LT(rel_diff(x0, x), 1e-8);
    EXPECT_EQ(mg->work(0)[0], static_cast<long>(pre + post) * st.iterations);
  }
}

// The default cycle (coarse correction, then MR on the even-odd system) against its definition
// computed here step by step on two levels: x0 = P x_c with D_c x_c = R b, r = b - M x0,
// e_p from MR steps on Mhat e_p = prepare(r), e from the reconstruction, x = x0 + e. The cycle
// forms only parity p of P x_c and smooths bhat - Mhat x_p instead; the results agree to the
// coarse solves' tolerance.
TEST_P(MgBackend, CycleEqualsItsDefinition) {
  LightProblem lp(GetParam());
  MultigridParam p = small_param(2);
  p.coarse_tol = 1e-6;
  p.coarse_max_it = 500;
  auto schur = std::make_shared<WilsonCloverLinear>(lp.ps.op, true, SchurType::symmetric, 0);
  auto M = lp.ps.full();
  auto mg = std::make_shared<Multigrid>(M, p, nullptr, schur);
  mg->setup();
  ColorSpinorField b = M->make_field(), x = M->make_field();
  b.copy_from(lp.b);
  mg->apply(x, b);
  // The definition.
  const Transfer& T = mg->transfer(0);
  CoarseLinear Dc(std::shared_ptr<CoarseOperator>(std::shared_ptr<CoarseOperator>(), &mg->coarse_operator(1)), false, 0,
                  Precision::single);
  ColorSpinorField c = Dc.make_field(), xc = Dc.make_field();
  T.restrict_to(c, b);
  SolverParam sp;
  sp.type = SolverType::bicgstab;
  sp.tol = 1e-6;
  ASSERT_TRUE(solve(Dc, nullptr, nullptr, xc, c, sp).converged);
  ColorSpinorField x0 = M->make_field(), r = M->make_field(), e = M->make_field();
  T.prolongate(x0, xc);
  M->apply(r, x0);
  blas::caxpby(Cplx(1), b, Cplx(-1), r);
  ColorSpinorField rh = schur->make_field(), eh = schur->make_field(), ah = schur->make_field();
  schur->prepare(rh, r);
  eh.zero();
  for (int s = 0; s < p.level[0].post_smooth; ++s) {
    schur->apply(ah, rh);
    const blas::DotNorms d = blas::cdot_norms(ah, rh);
    const Cplx a(p.level[0].omega * d.dot.re / d.xx, p.level[0].omega * d.dot.im / d.xx);
    blas::caxpby(a, rh, Cplx(1), eh);
    blas::caxpby(Cplx(-a.re, -a.im), ah, Cplx(1), rh);
  }
  schur->reconstruct(e, eh, r);
  blas::caxpby(Cplx(1), e, Cplx(1), x0);
  EXPECT_LT(rel_diff(x0, x), 1e-4);
  EXPECT_EQ(mg->work(0)[0], p.level[0].post_smooth);
}

// On CUDA the coarse correction below the fine level is launched as one CUDA graph from its
// third run on (the first two queue it kernel by kernel, tuning the kernels): each cycle, full
// (apply) or on one parity (apply_parity), equals exactly the cycle queued kernel by kernel
// (set_graphs(false)) on new right-hand sides, and the levels' counters add up alike; it is
// recorded once. After update() (new coarse operators in new buffers) the graph is recorded
// again, not launched stale; where every recording goes stale it stops recording. Nothing is
// recorded on the CPU.
TEST_P(MgBackend, CoarseCorrectionAsGraphEqualsKernelByKernel) {
  LightProblem lp(GetParam());
  Problem heavy(GetParam(), Precision::single, {8, 8, 8, 8}, -0.1, 0.25);
  MultigridParam p = small_param(3);  // 8^4 -> 4^4 -> 2^4, the coarsest solved directly
  p.coarse_solver = CoarseSolverType::direct;
  p.cycle = CycleType::vcycle;
  p.level[1].pre_smooth = 1;  // level 1's full-system smoother in the graph too
  auto schur = std::make_shared<WilsonCloverLinear>(lp.ps.op, true, SchurType::symmetric, 0);
  auto mg = std::make_shared<Multigrid>(lp.ps.full(), p, nullptr, schur);
  mg->setup();
  ASSERT_TRUE(mg->info(2).direct);
  const bool cuda = GetParam() == Backend::cuda;
  const int cycles = 5;
  std::vector<ColorSpinorField> f, fp, bhat;
  for (int k = 0; k < cycles; ++k) {
    f.push_back(lp.ps.full()->make_field());
    fill_gaussian(f.back(), 50 + k);
    fp.push_back(schur->make_field());
    fill_gaussian(fp.back(), 60 + k);
    bhat.push_back(schur->make_field());
    ColorSpinorField fk = lp.ps.full()->make_field();
    fk.zero();
    fk.parity(0).copy_from(fp.back());
    schur->prepare(bhat.back(), fk);
  }
  // cycles of each kind with graphs (on), then without (off): x[on][k], xp[on][k].
  std::vector<ColorSpinorField> x[2], xp[2];
  std::vector<long> work[2][3];
  auto run = [&](bool on) {
    mg->set_graphs(on);
    std::vector<long> before[3];
    for (int l = 0; l < 3; ++l) before[l] = mg->work(l);
    for (int k = 0; k < cycles; ++k) {
      x[on].push_back(f[k].like(Precision::single));
      mg->apply(x[on].back(), f[k]);
      xp[on].push_back(schur->make_field());
      mg->apply_parity(xp[on].back(), fp[k], bhat[k]);
    }
    for (int l = 0; l < 3; ++l) {
      work[on][l] = mg->work(l);
      for (std::size_t i = 0; i < before[l].size(); ++i) work[on][l][i] -= before[l][i];
    }
  };
  run(true);
  run(false);
  for (int k = 0; k < cycles; ++k) {
    EXPECT_EQ(rel_diff(x[0][k], x[1][k]), 0.0) << "full cycle " << k;
    EXPECT_EQ(rel_diff(xp[0][k], xp[1][k]), 0.0) << "parity cycle " << k;
    EXPECT_GT(rel_diff(x[1][k], f[k]), 1e-2) << "the cycle did something";
  }
  EXPECT_EQ(work[1][0][5], cuda ? 2 * cycles - 2 : 0) << "coarse corrections launched as a graph";
  EXPECT_EQ(work[1][0][6], cuda ? 1 : 0) << "recordings (no buffer it uses went away)";
  EXPECT_EQ(work[0][0][5], 0);
  for (int l = 1; l < 3; ++l) {
    EXPECT_EQ(work[1][l][0], work[0][l][0]) << "smoothing steps on level " << l;
    EXPECT_EQ(work[1][l][1], work[0][l][1]) << "solves on level " << l;
    EXPECT_GT(work[1][l][0] + work[1][l][1], 0) << "level " << l;
  }

  // update(): the old graph's buffers are gone; the new hierarchy's cycles still agree.
  auto heavy_schur = std::make_shared<WilsonCloverLinear>(heavy.op, true, SchurType::symmetric, 0);
  mg->set_graphs(true);
  mg->apply(x[1][0], f[0]);  // a graph of the old hierarchy, launched
  mg->update(heavy.full(), nullptr, heavy_schur, nullptr, nullptr);
  ColorSpinorField on = f[0].like(Precision::single), off = on.like(Precision::single);
  for (int k = 0; k < 4; ++k) mg->apply(on, f[k]);
  mg->set_graphs(false);
  for (int k = 0; k < 4; ++k) mg->apply(off, f[k]);
  EXPECT_EQ(rel_diff(on, off), 0.0) << "after update()";
  EXPECT_GT(rel_diff(on, x[0][3]), 1e-3) << "the updated hierarchy is another";

  // A caller's temporary field made before each cycle and freed after it makes every recording
  // stale: after four recordings the correction runs kernel by kernel, with the same result.
  mg->set_graphs(true);
  const long recorded = mg->work(0)[6];
  for (int k = 0; k < 12; ++k) {
    const ColorSpinorField temporary = f[0].like(Precision::single);
    mg->apply(on, f[k % cycles]);
  }
  EXPECT_EQ(mg->work(0)[6] - recorded, cuda ? 4 : 0);
  mg->set_graphs(false);
  mg->apply(off, f[11 % cycles]);
  EXPECT_EQ(rel_diff(on, off), 0.0) << "after the recordings went stale";
}

// The preconditioner of an even-odd solve on one parity (apply_parity, as the Latke MATSHELL's
// even-odd form uses it) against the full cycle on f = (f_p, 0), taking parity p: the same
// x_p up to single-precision rounding, for both Schur complements and both parities, and the
// cycles ran on one parity. With pre-smoothing it runs the full cycle: the same field exactly.
TEST_P(MgBackend, ParityCycleEqualsTheFullCycle) {
  LightProblem lp(GetParam());
  struct Case {
    SchurType schur;
    int parity, pre;
  };
  for (const Case& cs :
       {Case{SchurType::symmetric, 0, 0}, Case{SchurType::symmetric, 1, 0}, Case{SchurType::asymmetric, 0, 0},
        Case{SchurType::asymmetric, 1, 0}, Case{SchurType::symmetric, 1, 2}}) {
    SCOPED_TRACE(::testing::Message() << to_string(cs.schur) << ", parity " << cs.parity << ", " << cs.pre
                                      << " pre-smoothing steps");
    MultigridParam p = small_param(2);
    p.level[0].pre_smooth = cs.pre;
    auto schur = std::make_shared<WilsonCloverLinear>(lp.ps.op, true, cs.schur, cs.parity);
    auto mg = std::make_shared<Multigrid>(lp.ps.full(), p, nullptr, schur);
    mg->setup();
    ColorSpinorField f = lp.ps.full()->make_field(), x = f.like(Precision::single);
    ColorSpinorField fp = f.parity(cs.parity);
    fill_gaussian(fp, 31);
    ColorSpinorField bhat = schur->make_field(), xp = schur->make_field(), xd = schur->make_field();
    schur->prepare(bhat, f);
    mg->apply(x, f);
    mg->apply_parity(xp, fp, bhat);
    // In double: the even-odd form's solve may hand over fields of another precision.
    ColorSpinorField xdd = xp.like(Precision::double_);
    mg->apply_parity(xdd, fp, bhat);
    xd.copy_from(xdd);
    if (cs.pre == 0) {
      EXPECT_LT(rel_diff(x.parity(cs.parity), xp), 2e-5);
      EXPECT_EQ(mg->work(0)[3], 2);
    } else {
      EXPECT_EQ(rel_diff(x.parity(cs.parity), xp), 0.0);
      EXPECT_EQ(mg->work(0)[3], 0);
    }
    EXPECT_EQ(rel_diff(xp, xd), 0.0);
  }
}

// The Schwarz smoother on the fine level (latke_schwarz's additive Dirichlet blocks of 4^4,
// MR steps in half precision): MG-GCR converges to the solution of the hierarchy smoothed by
// MR on the even-odd system, the smoother runs, and it smooths: with one MR step per block
// instead of six the solve needs more iterations. SAP (the colours in turn, residuals updated
// by the fine operator in half between them; DD-alphaAMG's smoother) with six steps converges
// to the same solution in no more iterations than the additive one.
TEST_P(MgBackend, SchwarzSmoother) {
  LightProblem lp(GetParam());
  ColorSpinorField x0 = lp.M->make_field();
  const SolverStats mr = mg_gcr(lp.hierarchy(small_param(2)), *lp.M, x0, lp.b);
  ASSERT_TRUE(mr.converged);
  int iterations[3];
  for (int c = 0; c < 3; ++c) {
    MultigridParam p = small_param(2);
    p.level[0].smoother = SmootherType::schwarz;
    p.level[0].schwarz.block = {4, 4, 4, 4};
    p.level[0].schwarz.iterations = c == 1 ? 1 : 6;
    if (c == 2) p.level[0].schwarz.type = SchwarzType::multiplicative;
    SCOPED_TRACE(to_string(p.level[0].schwarz.type));
    auto mg = std::make_shared<Multigrid>(
        lp.ps.full(), p, [&lp](const Coords& block, Precision q, bool eo) { return lp.ps.local(block, q, eo); });
    mg->setup();
    EXPECT_EQ(mg->info(0).schwarz, "on the full system, blocks streamed");
    ColorSpinorField x = lp.M->make_field();
    const SolverStats st = mg_gcr(mg, *lp.M, x, lp.b);
    ASSERT_TRUE(st.converged) << p.level[0].schwarz.iterations << " MR steps per block";
    EXPECT_LT(rel_diff(x0, x), 1e-8);
    EXPECT_GT(mg->work(0)[0], 0);
    iterations[c] = st.iterations;
  }
  EXPECT_LT(iterations[0], iterations[1])
      << "Schwarz smoother with 6 MR steps per block: " << iterations[0] << " iterations, with 1: " << iterations[1]
      << " (MR smoother " << mr.iterations << ")";
  EXPECT_LE(iterations[2], iterations[0]) << "SAP smoother: " << iterations[2] << " iterations, additive "
                                          << iterations[0];
}

// Where the fine level smooths on its even-odd system, so does the Schwarz smoother: its blocks
// are Mhat's, solved on chip (in FP16 pairs when asked, as CUDA does by default), x_p then
// reconstructed. MG-GCR converges to the same solution, additive and SAP, with one and two
// smoothing steps (the second from the even-odd residual of the first).
TEST_P(MgBackend, SchwarzSmootherOnTheEvenOddSystem) {
  LightProblem lp(GetParam());
  ColorSpinorField x0 = lp.M->make_field();
  ASSERT_TRUE(mg_gcr(lp.hierarchy(small_param(2)), *lp.M, x0, lp.b).converged);
  struct Case {
    SchwarzType type;
    bool pairs;
    int post;
  };
  for (const Case& c : {Case{SchwarzType::additive, false, 1}, Case{SchwarzType::additive, true, 2},
                        Case{SchwarzType::multiplicative, true, 1}}) {
    MultigridParam p = small_param(2);
    p.level[0].smoother = SmootherType::schwarz;
    p.level[0].schwarz.block = {4, 4, 4, 4};
    p.level[0].schwarz.iterations = 4;
    p.level[0].schwarz.type = c.type;
    p.level[0].schwarz.half_pairs = c.pairs ? SchwarzParam::HalfPairs::on : SchwarzParam::HalfPairs::off;
    p.level[0].post_smooth = c.post;
    SCOPED_TRACE(::testing::Message() << to_string(c.type) << (c.pairs ? ", FP16 pairs" : "") << ", " << c.post
                                      << " smoothing steps");
    auto mg = std::make_shared<Multigrid>(
        lp.ps.full(), p, [&lp](const Coords& block, Precision q, bool eo) { return lp.ps.local(block, q, eo); },
        std::make_shared<WilsonCloverLinear>(lp.ps.op, true, SchurType::symmetric, 0));
    mg->setup();
    EXPECT_EQ(mg->info(0).schwarz,
              std::string("on the even-odd system, blocks on chip") + (c.pairs ? " in FP16 pairs" : ""));
    ColorSpinorField x = lp.M->make_field();
    const SolverStats st = mg_gcr(mg, *lp.M, x, lp.b);
    ASSERT_TRUE(st.converged);
    EXPECT_LT(rel_diff(x0, x), 1e-8);
    EXPECT_GT(mg->work(0)[0], 0);
  }
}

// A set of right-hand sides through one cycle (apply_parity_set: what MatLatkeSolveMany's GCR
// calls) against apply_parity field by field, on three levels (level 1 cycled as a set: its
// smoother on its single blocks, where one field at a time takes their half copy; the coarsest
// solved by GCR field by field, or directly for the whole set), both parities, the fine
// smoother in single and in half: the same fields to the smoothers' rounding, and the smoothers
// took as many steps. With pre-smoothing the set cycle does not apply (cycles_sets() false) and
// each field gets its own cycle: the same fields exactly.
TEST_P(MgBackend, SetCycleEqualsTheCycleOfEachField) {
  LightProblem lp(GetParam());
  Problem ph(GetParam(), Precision::half, {8, 8, 8, 8}, -0.2, 0.25);
  const int n = 5;
  struct Case {
    int parity, pre;
    bool half, direct;
  };
  for (const Case& cs :
       {Case{0, 0, false, false}, Case{1, 0, true, false}, Case{0, 1, false, false}, Case{1, 0, false, true}}) {
    SCOPED_TRACE(::testing::Message() << "parity " << cs.parity << ", " << cs.pre << " pre-smoothing steps, "
                                      << (cs.half ? "half" : "single") << " fine smoother"
                                      << (cs.direct ? ", direct coarsest solve" : ""));
    MultigridParam p = small_param(3);
    if (cs.direct) p.coarse_solver = CoarseSolverType::direct;
    p.cycle = CycleType::vcycle;
    p.level[0].pre_smooth = cs.pre;
    p.level[1].smoother_precision = Precision::half;
    std::shared_ptr<SchurOperator> smoother;
    if (cs.half) {
      p.level[0].smoother_precision = Precision::half;
      smoother = std::make_shared<WilsonCloverLinear>(ph.op, true, SchurType::symmetric, cs.parity);
    }
    auto schur = std::make_shared<WilsonCloverLinear>(lp.ps.op, true, SchurType::symmetric, cs.parity);
    auto mg = std::make_shared<Multigrid>(lp.ps.full(), p, nullptr, schur, smoother);
    mg->setup();
    EXPECT_EQ(mg->cycles_sets(), cs.pre == 0);
    const SpinorParam sp = schur->field_param();
    std::vector<ColorSpinorField> fp = ColorSpinorField::make_set(lp.ps.lat, sp, n),
                                  bhat = ColorSpinorField::make_set(lp.ps.lat, sp, n),
                                  x = ColorSpinorField::make_set(lp.ps.lat, sp, n);
    std::vector<ColorSpinorField> each;
    for (int k = 0; k < n; ++k) {
      ColorSpinorField f = lp.ps.full()->make_field();
      ColorSpinorField fpk = f.parity(cs.parity);
      fill_gaussian(fpk, 100 + k);
      fp[k].copy_from(fpk);
      schur->prepare(bhat[k], f);
      each.push_back(schur->make_field());
    }
    const std::vector<long> w0 = mg->work(0), w1 = mg->work(1), w2 = mg->work(2);
    for (int k = 0; k < n; ++k) mg->apply_parity(each[k], fp[k], bhat[k]);
    const std::vector<long> w0_each = mg->work(0), w1_each = mg->work(1), w2_each = mg->work(2);
    mg->apply_parity_set(x, fp, bhat);
    const std::vector<long> w0_set = mg->work(0), w1_set = mg->work(1), w2_set = mg->work(2);
    for (int k = 0; k < n; ++k) {
      if (cs.pre == 0)
        EXPECT_LT(rel_diff(each[k], x[k]), cs.half ? 1e-3 : 1e-5) << "field " << k;
      else
        EXPECT_EQ(rel_diff(each[k], x[k]), 0.0) << "field " << k;
    }
    EXPECT_EQ(w0_each[0] - w0[0], w0_set[0] - w0_each[0]);  // fine smoother steps
    EXPECT_EQ(w1_each[0] - w1[0], w1_set[0] - w1_each[0]);  // level 1's
    EXPECT_EQ(w0_each[3] - w0[3], w0_set[3] - w0_each[3]);  // cycles on one parity
    EXPECT_EQ(w2_each[1] - w2[1], n);  // the coarsest solves: one per field, for the set as field by field
    EXPECT_EQ(w2_set[1] - w2_each[1], n);
    if (cs.direct) EXPECT_TRUE(mg->info(2).direct);
  }
}

/// The multigrid's cycle on one parity as the preconditioner of the asymmetric even-odd system
/// (whose f_p is the residual itself), field by field or for whole sets.
class ParityMultigrid final : public Preconditioner {
 public:
  explicit ParityMultigrid(std::shared_ptr<Multigrid> mg) : mg_(std::move(mg)) {}
  void apply(ColorSpinorField& out, const ColorSpinorField& in) override { mg_->apply_parity(out, in, in); }
  void apply_set(std::vector<ColorSpinorField>& out, const std::vector<ColorSpinorField>& in) override {
    mg_->apply_parity_set(out, in, in);
  }
  std::string describe() const override { return "multigrid on one parity"; }

 private:
  std::shared_ptr<Multigrid> mg_;
};

// GCR on a set of right-hand sides (gcr_set, mixed precision, preconditioned by the set cycle)
// against solve() column by column: every column converges, to the same solution within the
// tolerance's reach, in about as many iterations; a column that is solved from the start
// (its guess is the solution) takes no iteration and stays solved; bad sets are refused.
TEST_P(MgBackend, GcrSetSolvesEachColumnAsGcrDoes) {
  LightProblem lp(GetParam());
  MultigridParam p = small_param(2);
  p.cycle = CycleType::vcycle;
  auto schur = std::make_shared<WilsonCloverLinear>(lp.ps.op, true, SchurType::asymmetric, 0);
  auto mg = std::make_shared<Multigrid>(lp.ps.full(), p, nullptr, schur);
  mg->setup();
  ASSERT_TRUE(mg->cycles_sets());
  ParityMultigrid K(mg);
  WilsonCloverLinear A(lp.pr.op, true, SchurType::asymmetric, 0);
  SolverParam sp;
  sp.type = SolverType::gcr;
  sp.tol = 1e-10;
  sp.restart = 8;
  const int n = 4;
  std::vector<ColorSpinorField> b, x, xs;
  for (int k = 0; k < n; ++k) {
    b.push_back(A.make_field());
    fill_gaussian(b.back(), 40 + k);
    x.push_back(A.make_field());
    xs.push_back(A.make_field());
  }
  std::vector<SolverStats> one;
  for (int k = 0; k < n; ++k) one.push_back(solve(A, schur.get(), &K, x[k], b[k], sp));
  xs[n - 1].copy_from(x[n - 1]);  // already solved
  const std::vector<SolverStats> set = gcr_set(A, schur.get(), &K, xs, b, sp);
  ASSERT_EQ(static_cast<int>(set.size()), n);
  for (int k = 0; k < n; ++k) {
    SCOPED_TRACE(::testing::Message() << "column " << k);
    ASSERT_TRUE(one[k].converged);
    EXPECT_TRUE(set[k].converged);
    EXPECT_LE(set[k].true_residual, 1e-10);
    EXPECT_LT(rel_diff(x[k], xs[k]), 1e-7);
    if (k < n - 1) {
      EXPECT_GT(one[k].iterations, 3);
      EXPECT_LE(std::abs(set[k].iterations - one[k].iterations), 1);
      EXPECT_GT(set[k].sloppy_applications, 0);
    } else {
      EXPECT_EQ(set[k].iterations, 0);
    }
  }
  // Solutions and sources as sets (make_set, as MatLatkeSolveMany makes them): the true residuals
  // at the start, the restarts and the end take the operator's set form and one pass of norms.
  ASSERT_TRUE(A.applies_sets());
  std::vector<ColorSpinorField> bs = ColorSpinorField::make_set(A.lattice(), A.field_param(), n),
                                xset = ColorSpinorField::make_set(A.lattice(), A.field_param(), n);
  for (int k = 0; k < n; ++k) {
    bs[k].copy_from(b[k]);
    xset[k].zero();
  }
  const std::vector<SolverStats> as_sets = gcr_set(A, schur.get(), &K, xset, bs, sp);
  for (int k = 0; k < n; ++k) {
    SCOPED_TRACE(::testing::Message() << "column " << k << " of a set");
    EXPECT_TRUE(as_sets[k].converged);
    EXPECT_LE(as_sets[k].true_residual, 1e-10);
    EXPECT_LT(rel_diff(x[k], xset[k]), 1e-7);
    EXPECT_LE(std::abs(as_sets[k].iterations - one[k].iterations), 1);
    EXPECT_GE(as_sets[k].reliable_updates, 1);
  }
  std::vector<ColorSpinorField> none;
  expect_error([&] { gcr_set(A, schur.get(), &K, none, none, sp); }, "expected equal counts", "an empty set");
  std::vector<ColorSpinorField> zero{A.make_field()}, x1{A.make_field()};
  expect_error([&] { gcr_set(A, schur.get(), &K, x1, zero, sp); }, "source 0 is zero", "a zero source");
  SolverParam bicg = sp;
  bicg.type = SolverType::bicgstab;
  expect_error([&] { gcr_set(A, schur.get(), &K, xs, b, bicg); }, "expected gcr", "BiCGstab");
  // Memory running out inside the set's solve (here in the preconditioner, where the multigrid
  // makes its set buffers): still an OutOfMemory, naming what the set's directions take and the
  // options that fit it in less, with the failed allocation's own message.
  struct Exhausted : Preconditioner {
    void apply(ColorSpinorField&, const ColorSpinorField&) override {
      throw OutOfMemory("out of GPU memory: asked for 48 bytes, 0 of 80 bytes free");
    }
    std::string describe() const override { return "out of memory"; }
  } exhausted;
  for (ColorSpinorField& f : xset) f.zero();
  try {
    gcr_set(A, schur.get(), &exhausted, xset, bs, sp);
    ADD_FAILURE() << "a set solve whose preconditioner ran out of memory returned";
  } catch (const OutOfMemory& e) {
    const std::string m = e.what();
    for (const char* part : {"set of 4 right-hand sides with restart 8", "2 x 8 fields per right-hand side",
                             "-latke_solver_restart", "-latke_solver_set_size", "asked for 48 bytes"})
      EXPECT_NE(m.find(part), std::string::npos) << "'" << part << "' missing from: " << m;
  }
}

}  // namespace
}  // namespace latke::mg
