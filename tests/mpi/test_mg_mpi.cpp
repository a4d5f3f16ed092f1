// Tier 4 for multigrid: on process grids splitting each direction (coarse halos included),
// the Galerkin coarse operator, its even-odd form and the transfers equal the single-rank
// ones, also applied to a set of fields at once (every rank also builds the whole lattice on
// MPI_COMM_SELF and compares its part);
// verify() holds on the split lattice; an MG-preconditioned GCR solve there reaches the
// single-rank solution; the coarsest direct solve (gathered on every rank) gives the one-rank
// one; null vectors saved on the grid load on one rank; and a hierarchy whose coarse levels are
// gathered whole onto every rank (agglomerate.h) gives the preconditioner of the spread one and
// of one rank. Labels mg, mpi.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "src/fields/blas.h"
#include "src/fields/random.h"
#include "operators/coarse/dense_inverse.h"
#include "preconditioners/mg/agglomerate.h"
#include "preconditioners/mg/galerkin.h"
#include "preconditioners/mg/mg.h"
#include "tests/support/expect_error.h"
#include "tests/support/mpi_compare.h"
#include "operators/wilson_clover/wilson_clover.h"
#include "operators/wilson_clover/wilson_clover_linear.h"

namespace latke::mg {
namespace {

using test::global_rel_diff;
using test::local_part;
using test::mpi_backend;

const Coords global_dims{8, 8, 8, 8};

std::vector<Coords> grids_for(int n) {
  switch (n) {
    case 1:
      return {{1, 1, 1, 1}};
    case 2:
      return {{2, 1, 1, 1}, {1, 1, 1, 2}};
    case 4:
      return {{1, 2, 2, 1}, {2, 1, 1, 2}};
    default:
      return {};
  }
}

/// The same Wilson-clover operator on the whole lattice (this rank alone) and on a grid.
struct Split {
  std::shared_ptr<const Lattice> whole, part;
  std::shared_ptr<WilsonCloverOperator> op_whole, op_part;
  Backend b;

  Split(const Coords& grid, Precision p, double mass = 0.05, const Coords& global = global_dims) {
    b = mpi_backend();
    whole = std::make_shared<Lattice>(MPI_COMM_SELF, global);
    part = std::make_shared<Lattice>(MPI_COMM_WORLD, global, grid);
    const std::vector<Complex<double>> links = random_gauge(*whole, 99, 0.3);
    WilsonCloverParam w;
    w.mass = mass;
    w.csw = 1.1;
    w.boundary_phase[2] = Complex<double>(std::cos(0.4), std::sin(0.4));
    w.precision = p;
    w.backend = b;
    op_whole = std::make_shared<WilsonCloverOperator>(whole, links, w);
    op_part = std::make_shared<WilsonCloverOperator>(part, local_part(*part, links, 36), w);
  }
  std::shared_ptr<LinearOperator> full(bool on_part) {
    return std::make_shared<WilsonCloverLinear>(on_part ? op_part : op_whole, false, SchurType::symmetric, 0);
  }
};

/// The same transfer on the whole lattice and on the grid: nvec Gaussian vectors from `seed` on
/// (a function of the global site, so the same on both), orthonormalized over 2^4 aggregates.
struct TransferPair {
  std::unique_ptr<Transfer> whole, part;
};
TransferPair transfers(const Split& s, const SpinorParam& fp, int nvec, Precision basis, int seed) {
  TransferPair t{std::make_unique<Transfer>(s.whole, fp, Coords{2, 2, 2, 2}, nvec, 1, basis),
                 std::make_unique<Transfer>(s.part, fp, Coords{2, 2, 2, 2}, nvec, 1, basis)};
  for (int k = 0; k < nvec; ++k) {
    fill_gaussian(t.whole->vectors()[k], seed + k);
    fill_gaussian(t.part->vectors()[k], seed + k);
  }
  t.whole->orthonormalize();
  t.part->orthonormalize();
  return t;
}

/// A coarse field's values compared across lattices: rank-local part of the whole one.
double coarse_diff(const ColorSpinorField& part, const ColorSpinorField& whole) {
  std::vector<Complex<double>> hp, hw;
  part.to_lexicographic(hp);
  whole.to_lexicographic(hw);
  return global_rel_diff(hp, local_part(part.lattice(), hw, part.site_reals() / 2));
}

TEST(MgMpi, CoarseOperatorAndTransfersEqualOneRank) {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (const Coords& grid : grids_for(size)) {
    Split s(grid, Precision::double_);
    const SpinorParam fp{4, 3, Precision::double_, Subset::full, s.b};
    const TransferPair t = transfers(s, fp, 3, Precision::double_, 40);
    Transfer &tw = *t.whole, &tp = *t.part;
    auto dw = galerkin(*s.full(false), tw, Precision::double_, true);
    auto dp = galerkin(*s.full(true), tp, Precision::double_, true);
    ColorSpinorField xw(tw.coarse_lattice(), tw.coarse_param(Precision::double_)), yw = xw.like(Precision::double_);
    ColorSpinorField xp(tp.coarse_lattice(), tp.coarse_param(Precision::double_)), yp = xp.like(Precision::double_);
    fill_gaussian(xw, 7);
    fill_gaussian(xp, 7);
    dw->apply(yw, xw);
    dp->apply(yp, xp);
    EXPECT_LT(coarse_diff(yp, yw), 1e-13) << "grid " << grid[0] << grid[1] << grid[2] << grid[3];
    // The coarse operator is not trivially equal: it changed the vector.
    EXPECT_GT(coarse_diff(yp, xw), 1e-2);
    dw->apply(yw, xw, true);
    dp->apply(yp, xp, true);
    EXPECT_LT(coarse_diff(yp, yw), 1e-13) << "dagger, grid " << grid[0] << grid[1] << grid[2] << grid[3];
    CoarseLinear sw(dw, true, 0, Precision::double_), sp(dp, true, 0, Precision::double_);
    ColorSpinorField hw = sw.make_field(), hp = sp.make_field(), ow = sw.make_field(), op = sp.make_field();
    dw->prepare_source(hw, xw);
    dp->prepare_source(hp, xp);
    EXPECT_LT(coarse_diff(hp, hw), 1e-13) << "prepared source";
    sw.apply(ow, hw);
    sp.apply(op, hp);
    EXPECT_LT(coarse_diff(op, ow), 1e-13) << "even-odd operator";
    // The operator over a set of fields (the setup's null vectors solved together) on the grid
    // against the whole lattice's: one halo message per face for all fields; full, and even-odd
    // on parity `eo`.
    auto sets_agree = [&](const Transfer& t_w, CoarseOperator& d_w, const Transfer& t_p, CoarseOperator& d_p, Subset eo,
                          int count, int seed, const char* what) {
      for (bool full : {true, false}) {
        const Subset sub = full ? Subset::full : eo;
        auto make = [&](const Transfer& t, CoarseOperator& d) {
          return ColorSpinorField::make_set(t.coarse_lattice(), d.field_param(Precision::single, sub), count);
        };
        std::vector<ColorSpinorField> iw = make(t_w, d_w), ow_ = make(t_w, d_w), ip = make(t_p, d_p),
                                      op_ = make(t_p, d_p);
        for (int k = 0; k < count; ++k) {
          fill_gaussian(iw[k], seed + k);
          fill_gaussian(ip[k], seed + k);
        }
        d_w.apply_set(ow_, iw);
        d_p.apply_set(op_, ip);
        for (int k = 0; k < count; ++k)
          EXPECT_LT(coarse_diff(op_[k], ow_[k]), 1e-6) << (full ? "full" : "even-odd") << " " << what << ", field " << k
                                                       << ", grid " << grid[0] << grid[1] << grid[2] << grid[3];
        EXPECT_GT(coarse_diff(op_[0], iw[0]), 1e-3) << "the " << what << " changed nothing";
        if (full) continue;
        // The set's even-odd sources and full solutions (prepare_source_set, reconstruct_set),
        // whose hops cross ranks as the operator's do.
        auto make_full = [&](const Transfer& t, CoarseOperator& d) {
          return ColorSpinorField::make_set(t.coarse_lattice(), d.field_param(Precision::single, Subset::full), count);
        };
        std::vector<ColorSpinorField> bw = make_full(t_w, d_w), bp = make_full(t_p, d_p), xw_ = make_full(t_w, d_w),
                                      xp_ = make_full(t_p, d_p);
        for (int k = 0; k < count; ++k) {
          fill_gaussian(bw[k], seed + 20 + k);
          fill_gaussian(bp[k], seed + 20 + k);
        }
        d_w.prepare_source_set(ow_, bw);
        d_p.prepare_source_set(op_, bp);
        d_w.reconstruct_set(xw_, iw, bw);
        d_p.reconstruct_set(xp_, ip, bp);
        for (int k = 0; k < count; ++k) {
          EXPECT_LT(coarse_diff(op_[k], ow_[k]), 1e-6) << what << ", prepared source " << k;
          EXPECT_LT(coarse_diff(xp_[k], xw_[k]), 1e-6) << what << ", reconstructed solution " << k;
        }
      }
    };
    sets_agree(tw, *dw, tp, *dp, Subset::even, 3, 60, "operator on a set");
    // Single blocks, N = 16, over the halo against the whole lattice: a set of 11 (the team
    // kernel, which takes sets of at most 16) and one of 19 on tensor cores (SetMath::tf32x3,
    // forced on this small lattice; the whole lattice's in FP32). The 3 above have double
    // blocks: the FP32 thread kernel.
    {
      const TransferPair t8 = transfers(s, fp, 8, Precision::double_, 80);
      Transfer &tw8 = *t8.whole, &tp8 = *t8.part;
      auto dw8 = galerkin(*s.full(false), tw8, Precision::single, true);
      auto dp8 = galerkin(*s.full(true), tp8, Precision::single, true);
      sets_agree(tw8, *dw8, tp8, *dp8, Subset::odd, 11, 75, "set by the team kernel");
      dw8->set_math(SetMath::fp32);
      dp8->set_math(SetMath::tf32x3);
      sets_agree(tw8, *dw8, tp8, *dp8, Subset::odd, 19, 70, "set on tensor cores");
    }
    // The split stencil a coarse level's Galerkin product is built from (galerkin.h), whose
    // hops cross ranks like the operator's.
    {
      const SpinorParam cw = dw->field_param(Precision::double_, Subset::full);
      const SpinorParam cp = dp->field_param(Precision::double_, Subset::full);
      ColorSpinorField sw(tw.coarse_lattice(), cw), sp_(tp.coarse_lattice(), cp);
      std::vector<ColorSpinorField> fw = ColorSpinorField::make_set(tw.coarse_lattice(), cw, 4),
                                    fp_ = ColorSpinorField::make_set(tp.coarse_lattice(), cp, 4);
      ColorSpinorField* const faces_w[4] = {&fw[0], &fw[1], &fw[2], &fw[3]};
      ColorSpinorField* const faces_p[4] = {&fp_[0], &fp_[1], &fp_[2], &fp_[3]};
      dw->apply_split(sw, faces_w, xw, {2, 2, 2, 2});
      dp->apply_split(sp_, faces_p, xp, {2, 2, 2, 2});
      EXPECT_LT(coarse_diff(sp_, sw), 1e-13) << "split stencil: site";
      for (int mu = 0; mu < 4; ++mu) EXPECT_LT(coarse_diff(fp_[mu], fw[mu]), 1e-13) << "split stencil: face " << mu;
    }
    {  // and the fine Wilson-clover operator's (the level-0 Galerkin product)
      auto mw = s.full(false), mp = s.full(true);
      ColorSpinorField in_w = mw->make_field(), in_p = mp->make_field(), sw = mw->make_field(), sp_ = mp->make_field();
      std::vector<ColorSpinorField> fw = ColorSpinorField::make_set(s.whole, mw->field_param(), 4),
                                    fp_ = ColorSpinorField::make_set(s.part, mp->field_param(), 4);
      ColorSpinorField* const faces_w[4] = {&fw[0], &fw[1], &fw[2], &fw[3]};
      ColorSpinorField* const faces_p[4] = {&fp_[0], &fp_[1], &fp_[2], &fp_[3]};
      fill_gaussian(in_w, 17);
      fill_gaussian(in_p, 17);
      mw->apply_split(sw, faces_w, in_w, {2, 2, 2, 2});
      mp->apply_split(sp_, faces_p, in_p, {2, 2, 2, 2});
      auto fine_diff = [&](const ColorSpinorField& part, const ColorSpinorField& whole) {
        std::vector<Complex<double>> a, b;
        part.to_lexicographic(a);
        whole.to_lexicographic(b);
        return global_rel_diff(a, local_part(*s.part, b, 12));
      };
      EXPECT_LT(fine_diff(sp_, sw), 1e-13) << "Wilson-clover split: site";
      for (int mu = 0; mu < 4; ++mu) EXPECT_LT(fine_diff(fp_[mu], fw[mu]), 1e-13) << "Wilson-clover split: face " << mu;
    }
    // Prolongation across the split lattice.
    ColorSpinorField fw(s.whole, fp), fpart(s.part, fp);
    tw.prolongate(fw, xw);
    tp.prolongate(fpart, xp);
    std::vector<Complex<double>> a, b;
    fpart.to_lexicographic(a);
    fw.to_lexicographic(b);
    EXPECT_LT(global_rel_diff(a, local_part(*s.part, b, 12)), 1e-13);
    // Both transfers on fields of one parity (the even-odd solve's cycle): R of the odd part of
    // the prolongated field, P onto the odd sites, as on the whole lattice.
    SpinorParam odd = fp;
    odd.subset = Subset::odd;
    ColorSpinorField pw_odd(s.whole, odd), pp_odd(s.part, odd);
    pw_odd.copy_from(fw.parity(1));
    pp_odd.copy_from(fpart.parity(1));
    tw.restrict_to(yw, pw_odd);
    tp.restrict_to(yp, pp_odd);
    EXPECT_LT(coarse_diff(yp, yw), 1e-13) << "R of one parity";
    tw.prolongate(pw_odd, yw);
    tp.prolongate(pp_odd, yp);
    ColorSpinorField gw(s.whole, fp), gp(s.part, fp);  // compared as full fields, zero on the even sites
    gw.parity(1).copy_from(pw_odd);
    gp.parity(1).copy_from(pp_odd);
    gw.to_lexicographic(b);
    gp.to_lexicographic(a);
    EXPECT_LT(global_rel_diff(a, local_part(*s.part, b, 12)), 1e-13) << "P onto one parity";
  }
}

MultigridParam param(int levels) {
  MultigridParam p;
  p.levels = levels;
  for (int l = 0; l + 1 < levels; ++l) {
    LevelParam q;
    q.block = {2, 2, 2, 2};
    q.nvec = 6;
    q.setup_iterations = 30;
    p.level.push_back(q);
  }
  p.gather_sites = 0;  // every level spread over the ranks unless a test gathers it
  return p;
}

// The coarsest level's direct solve on the grid (its matrix gathered on every rank, each
// keeping the rows of its unknowns) gives the one-rank solve, and solves the system there:
// full and even-odd.
TEST(MgMpi, DirectCoarsestSolveOnTheGridEqualsOneRank) {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  {
    const Coords grid = grids_for(size).back();
    Split s(grid, Precision::single);
    const SpinorParam fp{4, 3, Precision::single, Subset::full, s.b};
    const TransferPair t = transfers(s, fp, 3, Precision::single, 60);
    Transfer &tw = *t.whole, &tp = *t.part;
    auto dw = galerkin(*s.full(false), tw, Precision::single, true);
    auto dp = galerkin(*s.full(true), tp, Precision::single, true);
    for (bool eo : {false, true}) {
      const std::string what = std::string(eo ? "even-odd" : "full") + ", grid " + std::to_string(grid[0]) +
                               std::to_string(grid[1]) + std::to_string(grid[2]) + std::to_string(grid[3]);
      CoarseLinear sw(dw, eo, 0, Precision::single), sp(dp, eo, 0, Precision::single);
      const DenseInverse iw(sw), ip(sp);
      EXPECT_EQ(ip.n(), iw.n()) << what;
      EXPECT_EQ(ip.ranks(), size) << what;
      ColorSpinorField bw = sw.make_field(), bp = sp.make_field(), xw = sw.make_field(), xp = sp.make_field();
      fill_gaussian(bw, 11);
      fill_gaussian(bp, 11);
      iw.apply(xw, bw);
      ip.apply(xp, bp);
      EXPECT_LT(coarse_diff(xp, xw), 1e-4) << what;
      EXPECT_GT(coarse_diff(xp, bw), 1e-3) << what << ": the solve changed nothing";
      ColorSpinorField r = sp.make_field();
      sp.apply(r, xp);
      blas::caxpby(blas::Cplx(-1), bp, blas::Cplx(1), r);
      EXPECT_LT(std::sqrt(blas::cdot_norms(r, r).xx / blas::cdot_norms(bp, bp).xx), 1e-4) << what << ": residual";
    }
  }
}

TEST(MgMpi, VerifyAndSolveOnTheGrid) {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const Coords grid = grids_for(size).back();
  Split single(grid, Precision::single, -0.1), dbl(grid, Precision::double_, -0.1);
  auto mg = std::make_shared<Multigrid>(single.full(true), param(size == 1 ? 3 : 2));
  mg->setup();
  const VerifyReport r = mg->verify();
  for (std::size_t l = 0; l < r.galerkin.size(); ++l) {
    EXPECT_LT(r.projector[l], 1e-5);
    EXPECT_LT(r.restrict_prolong[l], 1e-5);
    EXPECT_LT(r.galerkin[l], 1e-5);
  }
  MultigridPreconditioner K(mg);
  auto Mp = dbl.full(true), Mw = dbl.full(false);
  ColorSpinorField b = Mp->make_field(), x = Mp->make_field(), bw = Mw->make_field(), xw = Mw->make_field();
  fill_gaussian(b, 3);
  fill_gaussian(bw, 3);
  SolverParam sp;
  sp.type = SolverType::gcr;
  sp.tol = 1e-10;
  const SolverStats st = solve(*Mp, nullptr, &K, x, b, sp);
  EXPECT_TRUE(st.converged) << st.iterations << " " << st.true_residual;
  SolverParam bi;
  bi.type = SolverType::bicgstab;
  bi.tol = 1e-11;
  EXPECT_TRUE(solve(*Mw, nullptr, nullptr, xw, bw, bi).converged);
  std::vector<Complex<double>> a, w;
  x.to_lexicographic(a);
  xw.to_lexicographic(w);
  EXPECT_LT(global_rel_diff(a, local_part(*dbl.part, w, 12)), 1e-8);
  // The even-odd solve's cycle on one parity (halos in Mhat and the coarse levels) against the
  // full cycle on (f_p, 0), on the grid.
  auto schur = std::make_shared<WilsonCloverLinear>(single.op_part, true, SchurType::symmetric, 0);
  auto eo = std::make_shared<Multigrid>(single.full(true), param(size == 1 ? 3 : 2), nullptr, schur);
  eo->setup();
  ColorSpinorField f = single.full(true)->make_field(), xf = f.like(Precision::single);
  ColorSpinorField fe = f.parity(0), bhat = schur->make_field(), xe = schur->make_field();
  fill_gaussian(fe, 5);
  schur->prepare(bhat, f);
  eo->apply(xf, f);
  eo->apply_parity(xe, fe, bhat);
  EXPECT_EQ(eo->work(0)[3], 1);
  ColorSpinorField d = xe.like(Precision::single);
  d.copy_from(xf.parity(0));
  blas::caxpby(blas::Cplx(-1), xe, blas::Cplx(1), d);
  EXPECT_LT(std::sqrt(blas::cdot_norms(d, d).xx / blas::cdot_norms(xe, xe).xx), 2e-5);
}

// The null vectors saved from the hierarchy on the grid (-pc_latke_mg_save) and loaded into
// one on the whole lattice of a single rank (-pc_latke_mg_load) give the same transfer and
// coarse operator as the saved hierarchy, as does loading them back onto the grid; a file of
// another hierarchy, another format or none fails naming what differs.
TEST(MgMpi, NullVectorsSavedOnTheGridLoadOnOneRank) {
  int size = 1, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const Coords grid = grids_for(size).back();
  Split s(grid, Precision::single, -0.1);
  const std::string file = ::testing::TempDir() + "latke_mg_null_np" + std::to_string(size) + ".bin";
  auto saved = std::make_shared<Multigrid>(s.full(true), param(2));
  saved->setup();
  saved->save(file);
  auto whole = std::make_shared<Multigrid>(s.full(false), param(2));  // every rank reads the file alone
  whole->load(file);
  auto again = std::make_shared<Multigrid>(s.full(true), param(2));
  again->load(file);
  const Transfer& tp = saved->transfer(0);
  ColorSpinorField xp(tp.coarse_lattice(), tp.coarse_param(Precision::single)), yp = xp.like(Precision::single),
                                                                                ya = xp.like(Precision::single);
  ColorSpinorField xw(whole->transfer(0).coarse_lattice(), whole->transfer(0).coarse_param(Precision::single)),
      yw = xw.like(Precision::single);
  fill_gaussian(xp, 12);
  fill_gaussian(xw, 12);
  saved->coarse_operator(1).apply(yp, xp);
  whole->coarse_operator(1).apply(yw, xw);
  again->coarse_operator(1).apply(ya, xp);
  EXPECT_LT(coarse_diff(yp, yw), 1e-5) << "coarse operator, loaded on one rank";
  std::vector<Complex<double>> hp, ha;
  yp.to_lexicographic(hp);
  ya.to_lexicographic(ha);
  EXPECT_LT(global_rel_diff(hp, ha), 1e-6) << "coarse operator, loaded on the grid";
  ColorSpinorField fp(s.part, tp.fine_param(Precision::single)), fw(s.whole, tp.fine_param(Precision::single));
  tp.prolongate(fp, xp);
  whole->transfer(0).prolongate(fw, xw);
  std::vector<Complex<double>> a, b;
  fp.to_lexicographic(a);
  fw.to_lexicographic(b);
  EXPECT_LT(global_rel_diff(a, local_part(*s.part, b, 12)), 1e-6) << "prolongation, loaded on one rank";
  // Bad files: another null-vector count, another number of levels, not a null-space file, none.
  MultigridParam other = param(2);
  other.level[0].nvec = 4;
  test::expect_error([&] { Multigrid(s.full(true), other).load(file); },
                     "(same lattice, aggregates and null-vector counts needed)", "a file of 6 null vectors for 4");
  test::expect_error([&] { Multigrid(s.full(false), param(3)).load(file); },
                     "holds a hierarchy of 2 levels, the preconditioner has 3", "a file of 2 levels for 3");
  const std::string wrong = ::testing::TempDir() + "latke_mg_not_null_np" + std::to_string(size) + ".txt";
  if (rank == 0) {
    std::FILE* f = std::fopen(wrong.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("not a null space\n", f);
    std::fclose(f);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  test::expect_error([&] { Multigrid(s.full(true), param(2)).load(wrong); }, "not a Latke null-space file",
                     "a text file");
  test::expect_error([&] { Multigrid(s.full(true), param(2)).load(file + ".missing"); },
                     "cannot read a multigrid null-space file there", "a missing file");
  test::expect_error([&] { Multigrid(s.full(true), param(2)).load(::testing::TempDir()); }, "is a directory",
                     "a directory");
  // Damaged copies of the good file: cut short by 8 KB and by half, one byte of a vector
  // changed, bytes appended. Each is refused naming the damage, before any vector is used.
  std::string bytes;
  if (rank == 0) {
    std::ifstream in(file, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const std::string damaged = ::testing::TempDir() + "latke_mg_damaged_np" + std::to_string(size) + ".bin";
  const auto damage = [&](const std::string& content) {
    if (rank == 0) std::ofstream(damaged, std::ios::binary | std::ios::trunc) << content;
    MPI_Barrier(MPI_COMM_WORLD);
  };
  damage(bytes.substr(0, bytes.size() - 8192));
  test::expect_error([&] { Multigrid(s.full(true), param(2)).load(damaged); }, "the file is truncated",
                     "a file 8 KB short");
  damage(bytes.substr(0, bytes.size() / 2));
  test::expect_error([&] { Multigrid(s.full(true), param(2)).load(damaged); }, "the file is truncated",
                     "a file cut by half");
  damage(bytes + "extra");
  test::expect_error([&] { Multigrid(s.full(true), param(2)).load(damaged); }, "the file has trailing data",
                     "a file with bytes appended");
  std::string flipped = bytes;
  if (rank == 0) flipped[4096 + 8 * ((flipped.size() - 4096) / 16)] ^= 0x10;  // a double's lowest byte
  damage(flipped);
  test::expect_error([&] { Multigrid(s.full(true), param(2)).load(damaged); }, "checksum mismatch in transfer 0",
                     "a file with one byte changed");
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    std::remove(file.c_str());
    std::remove(wrong.c_str());
    std::remove(damaged.c_str());
  }
}

// Agglomeration onto every rank count that divides the grid's (1: the whole level on every
// rank): a field gathered from a group's parts is that part of the whole field, and scattered
// back it is the part again; the Galerkin operator gathered onto the copy's ranks is the one
// built on the whole lattice.
TEST(MgMpi, GatheredFieldsAndOperatorAreTheWholeOnes) {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (const Coords& grid : grids_for(size))
    for (int k = 1; k < size || k == 1; ++k) {
      if (size % k != 0) continue;
      const std::string what = "grid " + std::to_string(grid[0]) + std::to_string(grid[1]) + std::to_string(grid[2]) +
                               std::to_string(grid[3]) + " onto " + std::to_string(k);
      Split s(grid, Precision::single);
      const SpinorParam fp{4, 3, Precision::single, Subset::full, s.b};
      const TransferPair t = transfers(s, fp, 4, Precision::single, 20);
      Transfer &tw = *t.whole, &tp = *t.part;
      Agglomeration agg(tp.coarse_lattice(), s.b, k);
      EXPECT_EQ(agg.ranks(), k) << what;
      EXPECT_EQ(agg.copies(), size / k) << what;
      EXPECT_EQ(agg.onto()->size(), k) << what;
      EXPECT_EQ(agg.onto()->global(), tp.coarse_lattice()->global()) << what;
      for (Precision p : {Precision::double_, Precision::single}) {
        ColorSpinorField part(tp.coarse_lattice(), tp.coarse_param(p)), whole(agg.onto(), tp.coarse_param(p)),
            expect(agg.onto(), tp.coarse_param(p)), back(tp.coarse_lattice(), tp.coarse_param(p));
        fill_gaussian(part, 31);
        fill_gaussian(expect, 31);  // a function of the global site: this copy's part of the whole field
        agg.gather(whole, part);
        std::vector<Complex<double>> a, b;
        whole.to_lexicographic(a);
        expect.to_lexicographic(b);
        double worst = 0;
        for (std::size_t i = 0; i < a.size(); ++i)
          worst = std::max(worst, std::abs(a[i].re - b[i].re) + std::abs(a[i].im - b[i].im));
        EXPECT_EQ(worst, 0.0) << what << ": gathered " << to_string(p) << " field";
        agg.scatter(back, whole);
        a.clear();
        b.clear();
        part.to_lexicographic(a);
        back.to_lexicographic(b);
        EXPECT_EQ(global_rel_diff(b, a), 0.0) << what << ": scattered " << to_string(p) << " field";
      }
      // The operator: assembled on the parts and gathered, against the one assembled whole.
      auto dw = galerkin(*s.full(false), tw, Precision::single, true);
      auto dg = galerkin(*s.full(true), tp, Precision::single, true, GalerkinAssembly::automatic, &agg);
      EXPECT_EQ(dg->lattice()->size(), k) << what;
      ColorSpinorField xw(tw.coarse_lattice(), tw.coarse_param(Precision::single)), yw = xw.like(Precision::single);
      ColorSpinorField xg(agg.onto(), tp.coarse_param(Precision::single)), yg = xg.like(Precision::single);
      fill_gaussian(xw, 8);
      fill_gaussian(xg, 8);
      dw->apply(yw, xw);
      dg->apply(yg, xg);
      EXPECT_LT(coarse_diff(yg, yw), 1e-6) << what << ": gathered coarse operator";
      EXPECT_GT(coarse_diff(yg, xw), 1e-2) << what << ": the operator changed the field";
      CoarseLinear sw(dw, true, 1, Precision::single), sg(dg, true, 1, Precision::single);
      ColorSpinorField hw = sw.make_field(), hg = sg.make_field(), ow = sw.make_field(), og = sg.make_field();
      fill_gaussian(hw, 9);
      fill_gaussian(hg, 9);
      sw.apply(ow, hw);
      sg.apply(og, hg);
      EXPECT_LT(coarse_diff(og, ow), 1e-6) << what << ": gathered even-odd operator";
    }
}

/// K b for the preconditioner of `mg`, b Gaussian (a function of the global site), as the
/// whole lattice's values (gathered from the ranks where mg's fine level is spread).
std::vector<Complex<double>> apply_to_gaussian(Multigrid& mg, LinearOperator& fine) {
  ColorSpinorField b = fine.make_field(), x = fine.make_field();
  fill_gaussian(b, 44);
  mg.apply(x, b);
  std::vector<Complex<double>> h;
  x.to_lexicographic(h);
  return h;
}

/// Iterations of an MG-GCR solve to 1e-10 of d's double-precision operator, on the grid or on
/// the whole lattice, with mg as the preconditioner.
int mg_gcr_iterations(Multigrid& mg, Split& d, bool on_part) {
  MultigridPreconditioner K(std::shared_ptr<Multigrid>(&mg, [](Multigrid*) {}));
  auto M = d.full(on_part);
  ColorSpinorField b = M->make_field(), x = M->make_field();
  fill_gaussian(b, 3);
  SolverParam sp;
  sp.type = SolverType::gcr;
  sp.tol = 1e-10;
  const SolverStats st = solve(*M, nullptr, &K, x, b, sp);
  EXPECT_TRUE(st.converged);
  return st.iterations;
}

// Agglomeration gives the same preconditioner: from the same null vectors (saved from one
// hierarchy, loaded into the others), the cycle of a hierarchy whose coarse levels are gathered
// whole onto every rank equals, to rounding, the cycle of the spread hierarchy (2 levels: the
// local lattice allows no third spread) and of one rank's on the whole lattice (3 levels, which
// only the gathered hierarchy can have on the grid); an MG-GCR solve takes the same iterations
// within 2. Null vectors of gathered levels save as spread ones do. Where each level lives is
// reported, and rank counts it cannot honour fail naming the level.
TEST(MgMpi, AgglomeratedLevelsGiveTheSpreadPreconditioner) {
  int size = 1, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const Coords grid = grids_for(size).back();
  Split s(grid, Precision::single, -0.1);
  auto fine_part = s.full(true), fine_whole = s.full(false);
  const std::string tag = "_np" + std::to_string(size) + ".bin";
  const std::string file2 = ::testing::TempDir() + "latke_mg_agg2" + tag, file3 = ::testing::TempDir() + "latke_mg_agg3" + tag;
  // Two levels: spread, gathered, one rank.
  MultigridParam spread = param(2);
  spread.coarse_solver = CoarseSolverType::direct;
  MultigridParam gathered = spread;
  gathered.ranks = {0, 1};
  Multigrid a(fine_part, spread), g(fine_part, gathered), w(fine_whole, spread);
  a.setup();
  a.save(file2);
  g.load(file2);
  w.load(file2);
  EXPECT_EQ(g.info(1).copies, size > 1 ? size : 0);
  EXPECT_EQ(a.info(1).copies, 0);
  const std::vector<Complex<double>> ka = apply_to_gaussian(a, *fine_part), kg = apply_to_gaussian(g, *fine_part),
                                     kw = apply_to_gaussian(w, *fine_whole);
  EXPECT_LT(global_rel_diff(kg, ka), 1e-5) << "2 levels: gathered against spread";
  EXPECT_LT(global_rel_diff(kg, local_part(*s.part, kw, 12)), 1e-5) << "2 levels: gathered against one rank";
  EXPECT_LT(global_rel_diff(ka, local_part(*s.part, kw, 12)), 1e-5) << "2 levels: spread against one rank";
  if (size == 4) {  // gathered onto 2 ranks, two copies, its coarsest solve direct on those 2
    MultigridParam two = spread;
    two.ranks = {0, 2};
    Multigrid h(fine_part, two);
    h.load(file2);
    EXPECT_EQ(h.info(1).copies, 2);
    EXPECT_EQ(h.info(1).direct_ranks, 2);
    EXPECT_LT(global_rel_diff(apply_to_gaussian(h, *fine_part), ka), 1e-5) << "2 levels: onto 2 ranks against spread";
  }
  // Three levels: level 1 gathered by the automatic rule (a local coarse volume of at most
  // gather_sites), set up on the grid, its null vectors saved and loaded on one rank.
  MultigridParam three = param(3);
  three.coarse_solver = CoarseSolverType::direct;
  three.gather_sites = 512;
  if (size > 1) {
    MultigridParam spread3 = three;
    spread3.gather_sites = 0;
    test::expect_error([&] { Multigrid(fine_part, spread3); }, "does not fit its local lattice",
                       "three spread levels on the grid");
  }
  auto g3 = std::make_shared<Multigrid>(fine_part, three);
  g3->setup();
  g3->save(file3);
  auto w3 = std::make_shared<Multigrid>(fine_whole, three);
  w3->load(file3);
  auto again = std::make_shared<Multigrid>(fine_part, three);
  again->load(file3);
  for (int l = 1; l < 3; ++l) EXPECT_EQ(g3->info(l).copies, size > 1 ? size : 0) << "level " << l;
  EXPECT_EQ(g3->info(2).global, w3->info(2).global);
  const std::vector<Complex<double>> k3 = apply_to_gaussian(*g3, *fine_part), k3a = apply_to_gaussian(*again, *fine_part),
                                     k3w = apply_to_gaussian(*w3, *fine_whole);
  EXPECT_LT(global_rel_diff(k3, local_part(*s.part, k3w, 12)), 1e-5) << "3 levels: gathered against one rank";
  EXPECT_LT(global_rel_diff(k3a, k3), 1e-5) << "3 levels: saved and loaded on the grid";
  EXPECT_GT(global_rel_diff(k3, apply_to_gaussian(a, *fine_part)), 1e-4) << "3 levels differ from 2";
  // The V-cycle of the gathered hierarchy: below the fine level every level lives on one rank
  // (all of them on one GPU; gathered whole on several), so on CUDA its coarse corrections are
  // launched as one CUDA graph from the third cycle on, and the cycles stay one rank's.
  MultigridParam v = three;
  v.cycle = CycleType::vcycle;
  Multigrid v3(fine_part, v), v3w(fine_whole, v);
  v3.load(file3);
  v3w.load(file3);
  std::vector<Complex<double>> kv;
  for (int k = 0; k < 4; ++k) kv = apply_to_gaussian(v3, *fine_part);
  EXPECT_LT(global_rel_diff(kv, local_part(*s.part, apply_to_gaussian(v3w, *fine_whole), 12)), 1e-5)
      << "3 levels, V-cycle: gathered against one rank";
  EXPECT_EQ(v3.work(0)[5], fine_part->field_param().backend == Backend::cuda ? 2 : 0)
      << "coarse corrections launched as a CUDA graph";
  // MG-GCR: the same iterations within 2 on the grid and on one rank.
  Split d(grid, Precision::double_, -0.1);
  const int it_grid = mg_gcr_iterations(*g3, d, true), it_one = mg_gcr_iterations(*w3, d, false);
  EXPECT_LE(std::abs(it_grid - it_one), 2) << it_grid << " iterations on the grid, " << it_one << " on one rank";
  // Rank counts that cannot be honoured.
  if (size > 1) {
    MultigridParam some = param(2);
    some.ranks = {0, 3};  // not a divisor of 2 or 4
    test::expect_error([&] { Multigrid(fine_part, some); },
                       "multigrid level 1: 3 ranks; expected 0 (automatic) or a divisor of the level above's " +
                           std::to_string(size) + " ranks",
                       "gathering onto 3 ranks");
    MultigridParam below = three;
    below.ranks = {0, 1, size};
    test::expect_error([&] { Multigrid(fine_part, below); }, "multigrid level 2: " + std::to_string(size) + " ranks",
                       "a level below a gathered one spread again");
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    std::remove(file2.c_str());
    std::remove(file3.c_str());
  }
}

// Agglomeration in stages, by the automatic rule: on 8^3x16 over 4 ranks, level 1 (512 sites,
// 128 per rank spread) goes onto 2 ranks in two copies (at least gather_onto_sites = 256 sites
// each), where it is aggregated again, and level 2 (32 sites) goes whole onto each rank. From
// the same null vectors the preconditioner is the one rank's to rounding, an MG-GCR solve takes
// its iterations within 2, null vectors saved from this hierarchy load on one rank, the
// hierarchy rebuilt for another mass from its null vectors stays one rank's, and the cycle of a
// set of right-hand sides equals the cycle of each.
TEST(MgMpi, LevelsGatheredInStagesGiveTheOneRankPreconditioner) {
  int size = 1, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const Coords global{8, 8, 8, 16};
  const Coords grid = size == 4 ? Coords{2, 1, 1, 2} : size == 2 ? Coords{1, 1, 1, 2} : Coords{1, 1, 1, 1};
  Split s(grid, Precision::single, -0.1, global);
  auto fine_part = s.full(true), fine_whole = s.full(false);
  MultigridParam p = param(3);
  for (LevelParam& q : p.level) q.setup_iterations = 10;
  p.coarse_solver = CoarseSolverType::direct;
  p.gather_sites = 128;
  p.gather_onto_sites = 256;
  auto staged = std::make_shared<Multigrid>(fine_part, p);
  staged->setup();
  const std::string file = ::testing::TempDir() + "latke_mg_stages_np" + std::to_string(size) + ".bin";
  staged->save(file);
  auto one = std::make_shared<Multigrid>(fine_whole, p);
  one->load(file);
  if (size == 4) {
    EXPECT_EQ(staged->info(1).copies, 2);
    EXPECT_EQ(staged->info(1).local, (Coords{4, 4, 4, 4})) << "level 1 on 2 ranks (grid 1,1,1,2)";
    EXPECT_EQ(staged->info(2).copies, 4);
    EXPECT_EQ(staged->info(2).local, (Coords{2, 2, 2, 4})) << "level 2 whole on every rank";
  } else if (size == 2) {  // level 1 keeps 256 sites per rank: spread; level 2 whole on each rank
    EXPECT_EQ(staged->info(1).copies, 0);
    EXPECT_EQ(staged->info(2).copies, 2);
  }
  EXPECT_EQ(staged->info(2).global, one->info(2).global);
  const std::vector<Complex<double>> ks = apply_to_gaussian(*staged, *fine_part),
                                     kw = apply_to_gaussian(*one, *fine_whole);
  EXPECT_LT(global_rel_diff(ks, local_part(*s.part, kw, 12)), 1e-5) << "gathered in stages against one rank";
  Split d(grid, Precision::double_, -0.1, global);
  const int it_grid = mg_gcr_iterations(*staged, d, true), it_one = mg_gcr_iterations(*one, d, false);
  EXPECT_LE(std::abs(it_grid - it_one), 2) << it_grid << " iterations on the grid, " << it_one << " on one rank";
  // Rebuilt for another mass from the kept null vectors (update(), as -latke_kappas reuses a
  // setup): the gathered levels' operators assembled and gathered again, one rank's still.
  Split heavier(grid, Precision::single, 0.1, global);
  staged->update(heavier.full(true), nullptr, nullptr, nullptr, nullptr);
  one->update(heavier.full(false), nullptr, nullptr, nullptr, nullptr);
  const std::vector<Complex<double>> us = apply_to_gaussian(*staged, *heavier.full(true)),
                                     uw = apply_to_gaussian(*one, *heavier.full(false));
  EXPECT_LT(global_rel_diff(us, local_part(*s.part, uw, 12)), 1e-5) << "updated for another mass";
  EXPECT_GT(global_rel_diff(us, ks), 1e-3) << "the update changed the preconditioner";
  // A set of right-hand sides through one cycle (MatLatkeSolveMany's): each gathered level
  // all-gathers the set's parts in one exchange per group; the same fields as one at a time.
  auto schur = std::make_shared<WilsonCloverLinear>(s.op_part, true, SchurType::symmetric, 0);
  MultigridParam pv = p;
  pv.cycle = CycleType::vcycle;  // the set cycle's hierarchy
  Multigrid sets(fine_part, pv, nullptr, schur);
  sets.load(file);
  ASSERT_TRUE(sets.cycles_sets());
  const int n = 3;
  const SpinorParam sp = schur->field_param();
  std::vector<ColorSpinorField> fp = ColorSpinorField::make_set(s.part, sp, n),
                                bhat = ColorSpinorField::make_set(s.part, sp, n),
                                x = ColorSpinorField::make_set(s.part, sp, n);
  std::vector<ColorSpinorField> each;
  for (int k = 0; k < n; ++k) {
    ColorSpinorField f = fine_part->make_field();
    ColorSpinorField fpk = f.parity(0);
    fill_gaussian(fpk, 200 + k);
    fp[k].copy_from(fpk);
    schur->prepare(bhat[k], f);
    each.push_back(schur->make_field());
    sets.apply_parity(each[k], fp[k], bhat[k]);
  }
  sets.apply_parity_set(x, fp, bhat);
  for (int k = 0; k < n; ++k) {
    std::vector<Complex<double>> a, b;
    x[k].to_lexicographic(a);
    each[k].to_lexicographic(b);
    EXPECT_LT(global_rel_diff(a, b), 1e-5) << "field " << k << " of the set";
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) std::remove(file.c_str());
}

// The per-level profile (-pc_latke_mg_monitor) counts what each level did: with the V-cycle
// every level is visited once per cycle; the spread fine level exchanges halos and sums over
// the ranks, the levels gathered onto every rank exchange nothing and the first of them gathers
// its right-hand side; a level on one rank (each on one rank, the gathered ones on several)
// keeps its MR sums on the device and makes no global sum; stopping keeps the profile and
// stops counting.
TEST(MgMpi, ProfileCountsWhatEachLevelDoes) {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const Coords grid = grids_for(size).back();
  Split s(grid, Precision::single, -0.1);
  MultigridParam p = param(3);
  p.cycle = CycleType::vcycle;
  p.coarse_solver = CoarseSolverType::direct;
  p.gather_sites = 512;  // level 1 (64 sites per rank on 4 ranks, 256 on 2) gathered
  auto fine = s.full(true);
  Multigrid mg(fine, p);
  mg.setup();
  ColorSpinorField b = fine->make_field(), x = fine->make_field();
  fill_gaussian(b, 5);
  mg.apply(x, b);  // not profiled
  mg.set_profiling(true);
  for (int k = 0; k < 3; ++k) mg.apply(x, b);
  mg.set_profiling(false);
  mg.apply(x, b);  // not counted
  ASSERT_EQ(mg.profiled_cycles(), 3);
  const std::vector<LevelProfile>& pr = mg.profile();
  ASSERT_EQ(pr.size(), 3u);
  for (int l = 0; l < 3; ++l) {
    EXPECT_EQ(pr[l].visits, 3) << "level " << l;
    EXPECT_GT(pr[l].seconds, 0) << "level " << l;
    EXPECT_GT(pr[l].launches, 0) << "level " << l;
  }
  if (size > 1)
    EXPECT_GE(pr[0].reductions, 3 * p.level[0].post_smooth) << "MR on the spread level: one global sum per step";
  else
    EXPECT_EQ(pr[0].reductions, 0) << "MR on one rank: the sums stay on the device";
  EXPECT_EQ(pr[1].reductions, 0) << "level 1 is on one rank (gathered whole where there are several)";
  EXPECT_EQ(pr[2].reductions, 0);
  if (size > 1) {
    EXPECT_GT(pr[0].exchanges, 0) << "the spread fine level exchanges halos";
    EXPECT_GT(pr[1].gather_seconds, 0) << "the gathered level 1 gathers its right-hand side";
  } else {
    EXPECT_EQ(pr[0].exchanges, 0);
    EXPECT_EQ(pr[1].gather_seconds, 0);
  }
  EXPECT_EQ(pr[1].exchanges, 0) << "a gathered level exchanges no halo";
  EXPECT_EQ(pr[2].exchanges, 0);
  EXPECT_EQ(mg.info(1).copies, size > 1 ? size : 0);
}

}  // namespace
}  // namespace latke::mg
