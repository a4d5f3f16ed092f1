// Adaptive multigrid on every backend this machine has (label mg): the coarse operator: the
// Galerkin product against an explicit P^dag M P built column by column on the host, its adjoint
// and even-odd forms, sets, the tensor-core stencil, storage precisions and the dense inverse.
#include "tests/unit/mg_test_support.h"

namespace latke::mg {
namespace {

// The coarse operator against P^dag M P assembled explicitly: each column M P e_j on the fine
// lattice, then P^dag by host dot products with the basis, against D_c e_j.
TEST_P(MgBackend, GalerkinAgainstExplicitProduct) {
  Problem pr(GetParam(), Precision::double_, {4, 4, 4, 4});
  const int nvec = 2;
  Transfer T(pr.lat, SpinorParam{4, 3, Precision::double_, Subset::full, pr.backend}, {2, 2, 2, 2}, nvec, 1,
             Precision::double_);
  random_basis(T, 3);
  auto M = pr.full();
  std::shared_ptr<CoarseOperator> dc = galerkin(*M, T, Precision::double_, false);
  const Lattice& cl = *T.coarse_lattice();
  const int n = 2 * nvec;
  const long csites = cl.volume(), fsites = pr.lat->volume();
  // Host copies of the basis (lexicographic: site, spin, color).
  std::vector<std::vector<Complex<double>>> v(nvec);
  for (int k = 0; k < nvec; ++k) T.vectors()[k].to_lexicographic(v[k]);
  auto coarse_of = [&](long fsite) {  // coarse lexicographic site of a fine one
    const Coords c = pr.lat->coords_of(fsite);
    return ((c[3] / 2 * cl.local()[2] + c[2] / 2) * cl.local()[1] + c[1] / 2) * cl.local()[0] + c[0] / 2;
  };
  ColorSpinorField e(T.coarse_lattice(), T.coarse_param(Precision::double_)), de = e.like(Precision::double_);
  ColorSpinorField pe(pr.lat, T.fine_param(Precision::double_)), mpe = pe.like(Precision::double_);
  std::vector<Complex<double>> unit(csites * n), host_mpe, host_de;
  double worst = 0, scale = 0;
  for (long a = 0; a < csites; ++a) {
    for (int j = 0; j < n; ++j) {
      std::fill(unit.begin(), unit.end(), Complex<double>());
      unit[a * n + j] = Complex<double>(1);
      e.from_lexicographic(unit);
      T.prolongate(pe, e);
      M->apply(mpe, pe);
      mpe.to_lexicographic(host_mpe);
      dc->apply(de, e);
      de.to_lexicographic(host_de);
      std::vector<Complex<double>> col(csites * n);
      for (long x = 0; x < fsites; ++x)
        for (int s = 0; s < 4; ++s)
          for (int c = 0; c < 3; ++c)
            for (int k = 0; k < nvec; ++k) {
              const int i = (s / 2) * nvec + k;  // coarse component: chirality, vector
              col[coarse_of(x) * n + i] += conj_mul(v[k][x * 12 + s * 3 + c], host_mpe[x * 12 + s * 3 + c]);
            }
      for (long i = 0; i < csites * n; ++i) {
        worst = std::max(worst, std::sqrt(norm2(col[i] - host_de[i])));
        scale = std::max(scale, std::sqrt(norm2(col[i])));
      }
    }
  }
  EXPECT_GT(scale, 0.1);
  EXPECT_LT(worst / scale, 1e-12);
}

// D_c^dag = Gamma_5 D_c Gamma_5 is the adjoint: <x, D y> = <D^dag x, y>; and the even-odd
// form solves the full system.
TEST_P(MgBackend, CoarseAdjointAndEvenOdd) {
  Problem pr(GetParam(), Precision::double_, {4, 4, 8, 8});
  Transfer T(pr.lat, SpinorParam{4, 3, Precision::double_, Subset::full, pr.backend}, {2, 2, 2, 2}, 3, 1,
             Precision::double_);
  random_basis(T, 21);
  auto dc = galerkin(*pr.full(), T, Precision::double_, true);
  ColorSpinorField x(T.coarse_lattice(), T.coarse_param(Precision::double_)),
      y = x.like(Precision::double_), dx = x.like(Precision::double_), dy = x.like(Precision::double_);
  fill_gaussian(x, 1);
  fill_gaussian(y, 2);
  dc->apply(dy, y);
  dc->apply(dx, x, true);
  const Cplx lhs_dot = blas::cdot_norms(x, dy).dot, rhs_dot = blas::cdot_norms(dx, y).dot;
  EXPECT_LT(std::sqrt(norm2(lhs_dot - rhs_dot) / norm2(lhs_dot)), 1e-13);
  // The dagger is not the operator itself (the test could not fail otherwise).
  dc->apply(dy, x);
  EXPECT_GT(rel_diff(dx, dy), 1e-3);
  // Even-odd: Mhat x_e = bhat with x_e the even part of the solution of D_c x = b.
  ColorSpinorField b = x.like(Precision::double_), xs = x.like(Precision::double_);
  fill_gaussian(xs, 3);
  dc->apply(b, xs);
  CoarseLinear schur(dc, true, 0, Precision::double_);
  ColorSpinorField bh = schur.make_field(), lhs = schur.make_field(), xe = schur.make_field();
  dc->prepare_source(bh, b);
  xe.copy_from(xs.parity(0));
  schur.apply(lhs, xe);
  EXPECT_LT(rel_diff(bh, lhs), 1e-12);
  ColorSpinorField rec = x.like(Precision::double_);
  dc->reconstruct(rec, xe, b);
  EXPECT_LT(rel_diff(xs, rec), 1e-12);
}

// apply_set over a set of `count` Gaussian fields (seeds from `seed`) equals apply (full) or
// apply_schur (even-odd) of each field, and changes it.
void expect_set_equals_fields(CoarseOperator& dc, const Transfer& T, int count, bool full, int seed) {
  const SpinorParam fp = dc.field_param(Precision::single, full ? Subset::full : Subset::even);
  std::vector<ColorSpinorField> in = ColorSpinorField::make_set(T.coarse_lattice(), fp, count),
                                out = ColorSpinorField::make_set(T.coarse_lattice(), fp, count);
  for (int k = 0; k < count; ++k) fill_gaussian(in[k], seed + k);
  dc.apply_set(out, in);
  ColorSpinorField one(T.coarse_lattice(), fp);
  for (int k = 0; k < count; ++k) {
    if (full)
      dc.apply(one, in[k]);
    else
      dc.apply_schur(one, in[k]);
    EXPECT_LT(rel_diff(one, out[k]), 2e-6) << "field " << k;
    EXPECT_GT(rel_diff(one, in[k]), 1e-3) << "field " << k << ": the operator left it as it was";
  }
}

// The coarse operator over a set of fields (apply_set, which the setup's BiCGstab over a set
// uses) equals the operator applied field by field: full and even-odd, blocks in double,
// single and half, 6 fields (not a multiple of the 4 a thread handles). The set BLAS equal
// their field-by-field forms. Fields that are not a set are refused.
TEST_P(MgBackend, CoarseOperatorOnASet) {
  Problem pr(GetParam(), Precision::double_, {4, 4, 8, 8});
  Transfer T(pr.lat, SpinorParam{4, 3, Precision::double_, Subset::full, pr.backend}, {2, 2, 2, 2}, 4, 1,
             Precision::double_);
  random_basis(T, 31);
  const int count = 6;
  for (Precision bp : {Precision::double_, Precision::single, Precision::half}) {
    SCOPED_TRACE(std::string("blocks in ") + to_string(bp));
    auto dc = galerkin(*pr.full(), T, bp, true);
    for (bool full : {true, false}) {
      SCOPED_TRACE(full ? "full operator" : "even-odd operator");
      expect_set_equals_fields(*dc, T, count, full, 50);
    }
  }
  // The set BLAS against field-by-field BLAS.
  auto dc = galerkin(*pr.full(), T, Precision::single, false);
  const SpinorParam fp = dc->field_param(Precision::single, Subset::full);
  std::vector<ColorSpinorField> x = ColorSpinorField::make_set(T.coarse_lattice(), fp, count),
                                y = ColorSpinorField::make_set(T.coarse_lattice(), fp, count),
                                z = ColorSpinorField::make_set(T.coarse_lattice(), fp, count);
  std::vector<ColorSpinorField> want;
  std::vector<Cplx> a, b, c;
  for (int k = 0; k < count; ++k) {
    fill_gaussian(x[k], 60 + k);
    fill_gaussian(y[k], 70 + k);
    fill_gaussian(z[k], 80 + k);
    a.push_back(Cplx(0.5 + k, -0.25 * k));
    b.push_back(Cplx(-1.0, 0.1 * k));
    c.push_back(Cplx(k % 2 ? 0.0 : 2.0, 1.0));
    want.push_back(z[k].like(Precision::single));
    want[k].copy_from(z[k]);
    blas::caxpbypcz(a[k], x[k], b[k], y[k], c[k], want[k]);
  }
  std::vector<double> norms(count);
  blas::caxpbypcz_set(a.data(), x, b.data(), &y, c.data(), z, norms.data());
  std::vector<blas::DotNorms> dn(count);
  blas::cdot_norms_set(x, z, dn.data());
  for (int k = 0; k < count; ++k) {
    EXPECT_LT(rel_diff(want[k], z[k]), 1e-6) << "caxpbypcz_set, field " << k;
    const double w = blas::cdot_norms(want[k], want[k]).xx;
    EXPECT_NEAR(norms[k], w, 1e-5 * w) << "its norm, field " << k;
    const blas::DotNorms d = blas::cdot_norms(x[k], z[k]);
    EXPECT_LT(std::sqrt(norm2(dn[k].dot - d.dot) / (d.xx * d.yy)), 1e-12) << "cdot_norms_set, field " << k;
    EXPECT_NEAR(dn[k].xx, d.xx, 1e-12 * d.xx);
    EXPECT_NEAR(dn[k].yy, d.yy, 1e-12 * d.yy);
  }
  // Fields out of a set's order (two allocations, the later first: they may lie next to each
  // other, but not in this order), or of double precision, are not a set.
  ColorSpinorField first(T.coarse_lattice(), fp), second(T.coarse_lattice(), fp);
  std::vector<ColorSpinorField> loose{second, first};
  std::vector<ColorSpinorField> two = ColorSpinorField::make_set(T.coarse_lattice(), fp, 2);
  expect_error([&] { dc->apply_set(two, loose); }, "the fields are not a set made by make_set",
               "apply_set on loose fields");
  expect_error([&] { blas::cdot_norms_set(loose, two, dn.data()); }, "the fields are not a set made by make_set",
               "cdot_norms_set on loose fields");
  SpinorParam dp = fp;
  dp.precision = Precision::double_;
  std::vector<ColorSpinorField> dset = ColorSpinorField::make_set(T.coarse_lattice(), dp, 2);
  expect_error([&] { dc->apply_set(dset, dset); }, "double fields; expected single precision",
               "apply_set on double fields");
}

// The even-odd source and solution over a set (prepare_source_set, reconstruct_set, which a
// set cycle's coarse levels take) equal prepare_source and reconstruct field by field: blocks in
// double, single and half, the set stencil in FP32 and (single blocks, N = 16) on tensor cores,
// either parity, 6 fields; through CoarseLinear too, which takes loose fields field by field.
TEST_P(MgBackend, EvenOddSourceAndSolutionOfASet) {
  Problem pr(GetParam(), Precision::double_, {4, 4, 8, 8});
  Transfer T(pr.lat, SpinorParam{4, 3, Precision::double_, Subset::full, pr.backend}, {2, 2, 2, 2}, 8, 1,
             Precision::double_);
  random_basis(T, 43);
  const int count = 6;
  for (Precision bp : {Precision::double_, Precision::single, Precision::half}) {
    auto dc = galerkin(*pr.full(), T, bp, true);
    for (mg::SetMath m : {mg::SetMath::fp32, mg::SetMath::tf32x3}) {
      dc->set_math(m);
      if (dc->set_math() != m) continue;
      for (int p : {0, 1}) {
        SCOPED_TRACE(std::string("blocks in ") + to_string(bp) + ", " + mg::to_string(m) + ", parity " +
                     std::to_string(p));
        const SpinorParam full = dc->field_param(Precision::single, Subset::full),
                          one = dc->field_param(Precision::single, p == 0 ? Subset::even : Subset::odd);
        std::vector<ColorSpinorField> b = ColorSpinorField::make_set(T.coarse_lattice(), full, count),
                                      x = ColorSpinorField::make_set(T.coarse_lattice(), full, count),
                                      bhat = ColorSpinorField::make_set(T.coarse_lattice(), one, count),
                                      xp = ColorSpinorField::make_set(T.coarse_lattice(), one, count);
        for (int k = 0; k < count; ++k) {
          fill_gaussian(b[k], 100 + k);
          fill_gaussian(xp[k], 120 + k);
        }
        dc->prepare_source_set(bhat, b);
        dc->reconstruct_set(x, xp, b);
        ColorSpinorField bh1(T.coarse_lattice(), one), x1(T.coarse_lattice(), full);
        for (int k = 0; k < count; ++k) {
          dc->prepare_source(bh1, b[k]);
          EXPECT_LT(rel_diff(bh1, bhat[k]), 2e-6) << "bhat of field " << k;
          EXPECT_GT(rel_diff(bh1, b[k].parity(p)), 1e-3) << "field " << k << ": bhat is b_p";
          dc->reconstruct(x1, xp[k], b[k]);
          EXPECT_LT(rel_diff(x1, x[k]), 2e-6) << "x of field " << k;
        }
        // CoarseLinear: the set in one pass, loose fields one by one; the same results.
        CoarseLinear A(dc, true, p, Precision::single);
        std::vector<ColorSpinorField> loose{bh1, ColorSpinorField(T.coarse_lattice(), one)};
        std::vector<ColorSpinorField> two{b[0], b[1]};
        A.prepare_set(loose, two);
        EXPECT_LT(rel_diff(loose[0], bhat[0]), 2e-6);
        EXPECT_LT(rel_diff(loose[1], bhat[1]), 2e-6);
      }
    }
  }
  auto dc = galerkin(*pr.full(), T, Precision::single, true);
  const SpinorParam full = dc->field_param(Precision::single, Subset::full);
  std::vector<ColorSpinorField> b = ColorSpinorField::make_set(T.coarse_lattice(), full, 2);
  expect_error([&] { dc->prepare_source_set(b, b); }, "expected a one-parity field",
               "prepare_source_set into full fields");
}

// The set stencil of a level-1-like operator (Nvec 24: blocks of N = 48) over sets of 12 and 16
// fields (the team kernel's 3 and 4 fields per thread) and 32 (SetStencilKernel), blocks in
// single and half, full and even-odd, equals the operator applied field by field.
TEST_P(MgBackend, SetStencilOfWideBlocks) {
  Problem pr(GetParam(), Precision::double_, {4, 4, 8, 8});
  Transfer T(pr.lat, SpinorParam{4, 3, Precision::double_, Subset::full, pr.backend}, {2, 2, 2, 2}, 24, 1,
             Precision::double_);
  random_basis(T, 37);
  for (Precision bp : {Precision::single, Precision::half}) {
    SCOPED_TRACE(std::string("blocks in ") + to_string(bp));
    auto dc = galerkin(*pr.full(), T, bp, true);
    for (int count : {12, 16, 32}) {
      for (bool full : {true, false}) {
        SCOPED_TRACE(std::to_string(count) + (full ? " fields, full operator" : " fields, even-odd operator"));
        expect_set_equals_fields(*dc, T, count, full, 150);
      }
    }
  }
}

// The set stencil on tensor cores (SetMath tf32x3; on the CPU the kernel's lane-by-lane
// emulation) equals the FP32 one: full and even-odd, N = 16, 21 fields (a last tile of 5) and
// 40 (a second warp's 32-field chunk); sets of at most 16 take the team kernel either way. It keeps single's accuracy;
// the TF32 product alone (the split's hi parts, mma::to_tf32 on the inputs) is several times less accurate, so the test
// sees the split. Half blocks, N = 8 and a small lattice (automatic) take fp32.
TEST_P(MgBackend, SetStencilOnTensorCores) {
  Problem pr(GetParam(), Precision::double_, {4, 4, 8, 8});
  Transfer T(pr.lat, SpinorParam{4, 3, Precision::double_, Subset::full, pr.backend}, {2, 2, 2, 2}, 8, 1,
             Precision::double_);
  random_basis(T, 41);
  auto dc = galerkin(*pr.full(), T, Precision::single, true);
  EXPECT_EQ(dc->set_math(), mg::SetMath::fp32) << "automatic on a lattice of 32 sites per parity";
  for (int count : {21, 40}) {
    for (bool full : {true, false}) {
      SCOPED_TRACE(std::to_string(count) + (full ? " fields, full operator" : " fields, even-odd operator"));
      const SpinorParam fp = dc->field_param(Precision::single, full ? Subset::full : Subset::odd);
      auto make = [&] { return ColorSpinorField::make_set(T.coarse_lattice(), fp, count); };
      std::vector<ColorSpinorField> in = make(), want = make(), got = make(), rounded = make(), coarse = make();
      for (int k = 0; k < count; ++k) fill_gaussian(in[k], 90 + k);
      dc->set_math(mg::SetMath::fp32);
      dc->apply_set(want, in);
      dc->set_math(mg::SetMath::tf32x3);
      ASSERT_EQ(dc->set_math(), mg::SetMath::tf32x3);
      dc->apply_set(got, in);
      // The inputs rounded to TF32: the split's hi parts, which one TF32 product would use.
      for (int k = 0; k < count; ++k) {
        std::vector<Complex<double>> h;
        in[k].to_lexicographic(h);
        for (auto& z : h)
          z = Complex<double>(mma::to_tf32(static_cast<float>(z.re)), mma::to_tf32(static_cast<float>(z.im)));
        rounded[k].from_lexicographic(h);
      }
      dc->set_math(mg::SetMath::fp32);
      dc->apply_set(coarse, rounded);
      for (int k = 0; k < count; ++k) {
        const double d = rel_diff(want[k], got[k]), d1 = rel_diff(want[k], coarse[k]);
        EXPECT_LT(d, 1e-6) << "field " << k;
        EXPECT_LT(5 * d, d1) << "field " << k << ": no more accurate than TF32 inputs";
        EXPECT_GT(rel_diff(want[k], in[k]), 1e-3) << "field " << k << ": the operator left it as it was";
      }
    }
  }
  auto dh = galerkin(*pr.full(), T, Precision::half, true);
  dh->set_math(mg::SetMath::tf32x3);
  EXPECT_EQ(dh->set_math(), mg::SetMath::fp32) << "half blocks";
  Transfer T4(pr.lat, SpinorParam{4, 3, Precision::double_, Subset::full, pr.backend}, {2, 2, 2, 2}, 4, 1,
              Precision::double_);
  random_basis(T4, 42);
  auto d4 = galerkin(*pr.full(), T4, Precision::single, true);
  d4->set_math(mg::SetMath::tf32x3);
  EXPECT_EQ(d4->set_math(), mg::SetMath::fp32) << "N = 8";
  EXPECT_EQ(mg::parse_set_math("tf32x3"), mg::SetMath::tf32x3);
  expect_error([] { mg::parse_set_math("tf32"); }, "set arithmetic 'tf32': expected automatic, fp32 or tf32x3",
               "an unknown set arithmetic");
}

// The Galerkin product from the operator's split stencil (2 Nvec applications) equals the one
// by probing (10 x 2 Nvec), on the fine Wilson-clover level and on a coarse level: the
// operator, its dagger and even-odd form, for N = 6 and 8. The split fields add up to the
// operator and none is empty.
TEST_P(MgBackend, GalerkinFromTheSplitStencil) {
  Problem pr(GetParam(), Precision::double_, {8, 8, 8, 8});
  auto M = pr.full();
  auto split_adds_up = [](LinearOperator& A, const Coords& block) {
    ASSERT_TRUE(A.splits()) << A.describe();
    ColorSpinorField x = A.make_field(), site = A.make_field(), want = A.make_field();
    std::vector<ColorSpinorField> face = ColorSpinorField::make_set(A.lattice(), A.field_param(), 4);
    ColorSpinorField* const faces[4] = {&face[0], &face[1], &face[2], &face[3]};
    fill_gaussian(x, 6);
    A.apply_split(site, faces, x, block);
    A.apply(want, x);
    for (int mu = 0; mu < 4; ++mu) {
      EXPECT_GT(std::sqrt(blas::cdot_norms(face[mu], face[mu]).xx), 1e-3) << A.describe() << ": face " << mu;
      blas::caxpby(Cplx(1), face[mu], Cplx(1), site);
    }
    EXPECT_LT(rel_diff(want, site), 1e-13) << A.describe();
  };
  auto same_operator = [](CoarseOperator& a, CoarseOperator& b, const std::string& what) {
    ColorSpinorField y(a.lattice(), a.field_param(Precision::double_, Subset::full)), u = y.like(Precision::double_),
                                                                                      v = y.like(Precision::double_);
    fill_gaussian(y, 8);
    for (bool dagger : {false, true}) {
      a.apply(u, y, dagger);
      b.apply(v, y, dagger);
      EXPECT_LT(rel_diff(u, v), 1e-12) << what << (dagger ? ", dagger" : "");
    }
    ColorSpinorField ye(a.lattice(), a.field_param(Precision::double_, Subset::even)), ue = ye.like(Precision::double_),
                                                                                       ve = ye.like(Precision::double_);
    ye.copy_from(y.parity(0));
    a.apply_schur(ue, ye);
    b.apply_schur(ve, ye);
    EXPECT_LT(rel_diff(ue, ve), 1e-12) << what << ", even-odd";
  };
  split_adds_up(*M, {2, 2, 2, 2});
  Transfer T0(pr.lat, SpinorParam{4, 3, Precision::double_, Subset::full, pr.backend}, {2, 2, 2, 2}, 4, 1,
              Precision::double_);
  random_basis(T0, 41);
  auto d1 = galerkin(*M, T0, Precision::double_, true);
  same_operator(*d1, *galerkin(*M, T0, Precision::double_, true, GalerkinAssembly::probing), "level 0 -> 1");
  CoarseLinear d1_full(d1, false, 0, Precision::double_);
  split_adds_up(d1_full, {2, 2, 2, 2});
  for (int nvec : {3, 4}) {
    Transfer T1(d1->lattice(), d1->field_param(Precision::double_, Subset::full), {2, 2, 2, 2}, nvec, 2,
                Precision::double_);
    random_basis(T1, 43 + nvec);
    same_operator(*galerkin(d1_full, T1, Precision::double_, true),
                  *galerkin(d1_full, T1, Precision::double_, true, GalerkinAssembly::probing),
                  "level 1 -> 2, N = " + std::to_string(2 * nvec));
  }
}

// The coarse operator stored in single and half precision against the one in double, with
// double and single vectors, full (and its dagger) and even-odd (Mhat, the prepared source,
// the reconstruction): for N = 6 and N = 8, where the stencil kernel gives each thread two and
// four rows of a block.
TEST_P(MgBackend, CoarseStoragePrecisions) {
  Problem pr(GetParam(), Precision::double_, {4, 4, 8, 8});
  auto M = pr.full();
  for (int nvec : {3, 4}) {
    Transfer T(pr.lat, SpinorParam{4, 3, Precision::double_, Subset::full, pr.backend}, {2, 2, 2, 2}, nvec, 1,
               Precision::double_);
    random_basis(T, 31);
    auto ref = galerkin(*M, T, Precision::double_, true);
    ColorSpinorField x(T.coarse_lattice(), T.coarse_param(Precision::double_));
    ColorSpinorField want = x.like(Precision::double_), got = x.like(Precision::double_);
    fill_gaussian(x, 4);
    CoarseLinear sref(ref, true, 0, Precision::double_);
    ColorSpinorField xe = sref.make_field(), want_e = sref.make_field(), got_e = sref.make_field();
    xe.copy_from(x.parity(0));
    for (Precision store : {Precision::single, Precision::half}) {
      auto dc = galerkin(*M, T, store, true);
      const double tol = store == Precision::single ? 1e-6 : 2e-4;
      for (Precision vec : {Precision::double_, Precision::single}) {
        SCOPED_TRACE(::testing::Message()
                     << "N = " << 2 * nvec << ", blocks in " << to_string(store) << ", vectors in " << to_string(vec));
        ColorSpinorField xv = x.like(vec), out = x.like(vec);
        xv.copy_from(x);
        for (bool dagger : {false, true}) {
          ref->apply(want, x, dagger);
          dc->apply(out, xv, dagger);
          got.copy_from(out);
          EXPECT_LT(rel_diff(want, got), tol) << (dagger ? "dagger" : "operator");
        }
        CoarseLinear s(dc, true, 0, vec);
        ColorSpinorField ev = s.make_field(), oe = s.make_field();
        ev.copy_from(xe);
        sref.apply(want_e, xe);
        s.apply(oe, ev);
        got_e.copy_from(oe);
        EXPECT_LT(rel_diff(want_e, got_e), tol) << "even-odd operator";
        ref->prepare_source(want_e, x);
        dc->prepare_source(oe, xv);
        got_e.copy_from(oe);
        EXPECT_LT(rel_diff(want_e, got_e), tol) << "prepared source";
        ref->reconstruct(want, xe, x);
        dc->reconstruct(out, ev, xv);
        got.copy_from(out);
        EXPECT_LT(rel_diff(want, got), tol) << "reconstruction";
      }
    }
    // in_half(): a finalized single operator copied to half blocks (the coarse levels' half
    // setup) acts as the half operator assembled directly; the original is left as it was.
    SCOPED_TRACE(::testing::Message() << "N = " << 2 * nvec << ", in_half()");
    auto single = galerkin(*M, T, Precision::single, true);
    auto half = single->in_half();
    EXPECT_EQ(half->precision(), Precision::half);
    ColorSpinorField xs = x.like(Precision::single), out = x.like(Precision::single);
    xs.copy_from(x);
    ref->apply(want, x);
    half->apply(out, xs);
    got.copy_from(out);
    const double e_half = rel_diff(want, got);
    EXPECT_LT(e_half, 2e-4) << "operator";
    single->apply(out, xs);
    got.copy_from(out);
    EXPECT_LT(rel_diff(want, got), 1e-6) << "the single original";
    EXPECT_GT(e_half, 10 * rel_diff(want, got)) << "the copy is not in half";
    CoarseLinear sh(half, true, 0, Precision::single);
    ColorSpinorField ev = sh.make_field(), oe = sh.make_field();
    ev.copy_from(xe);
    sref.apply(want_e, xe);
    sh.apply(oe, ev);
    got_e.copy_from(oe);
    EXPECT_LT(rel_diff(want_e, got_e), 2e-4) << "even-odd operator";
    EXPECT_THROW(half->in_half(), Error);
  }
}

// The one-field stencil with its blocks' columns split into segments (small levels, several
// threads per block and rows) gives what whole columns give, in every form it is applied in:
// the full operator and its dagger, the even-odd operator, the prepared source and the
// reconstruction, for single and half blocks, by the rule and as the autotuner chooses. The
// rule splits where the lattice leaves the device idle and keeps whole columns where it fills
// it.
TEST_P(MgBackend, StencilColumnSegmentsGiveWholeColumns) {
  EXPECT_EQ(column_split(256, 8, 64), 8);    // level 2 of 32^3x64 (4^3x8, N = 64): the hops
  EXPECT_EQ(column_split(256, 9, 64), 4);    // and the full operator
  EXPECT_EQ(column_split(16, 9, 64), 8);     // level 3 (2^3x4)
  EXPECT_EQ(column_split(4096, 8, 48), 1);   // level 1 (8^3x16, N = 48) fills the device
  EXPECT_EQ(column_split(16, 9, 64, 2), 2);  // at most `most`
  EXPECT_EQ(column_split(16, 9, 12), 1);     // fewer than 8 columns a segment: whole
  Problem pr(GetParam(), Precision::double_, {4, 4, 4, 8});
  auto M = pr.full();
  const int nvec = 16;  // N = 32: up to 4 segments of 8 columns
  Transfer T(pr.lat, SpinorParam{4, 3, Precision::double_, Subset::full, pr.backend}, {2, 2, 2, 2}, nvec, 1,
             Precision::double_);
  random_basis(T, 41);
  const long vcb = T.coarse_lattice()->volume_cb();
  ASSERT_EQ(column_split(vcb, 9, 2 * nvec), 4) << "the test lattice is not split";
  for (Precision store : {Precision::single, Precision::half}) {
    auto dc = galerkin(*M, T, store, true);
    const double tol = store == Precision::single ? 2e-6 : 2e-5;  // rounding order only
    ColorSpinorField x(T.coarse_lattice(), T.coarse_param(Precision::single));
    fill_gaussian(x, 5);
    CoarseLinear s(dc, true, 0, Precision::single);
    ColorSpinorField xe = s.make_field();
    xe.copy_from(x.parity(0));
    // Each form with whole columns (most = 1), then with segments.
    auto forms = [&](int most, bool tune) {
      dc->set_column_split(most, tune);
      std::vector<ColorSpinorField> r;
      for (bool dagger : {false, true}) {
        r.push_back(x.like(Precision::single));
        dc->apply(r.back(), x, dagger);
      }
      r.push_back(s.make_field());
      s.apply(r.back(), xe);
      r.push_back(s.make_field());
      dc->prepare_source(r.back(), x);
      r.push_back(x.like(Precision::single));
      dc->reconstruct(r.back(), xe, x);
      return r;
    };
    const std::vector<ColorSpinorField> whole = forms(1, false);
    for (int most : {2, 8, 0}) {  // 0: at most 8, the autotuner's choice (CUDA; the rule elsewhere)
      const std::vector<ColorSpinorField> split = forms(most > 0 ? most : 8, most == 0);
      const char* names[] = {"operator", "dagger", "even-odd operator", "prepared source", "reconstruction"};
      for (std::size_t i = 0; i < whole.size(); ++i) {
        SCOPED_TRACE(::testing::Message()
                     << to_string(store) << " blocks, "
                     << (most > 0 ? "at most " + std::to_string(most) + " segments, " : std::string("tuned, "))
                     << names[i]);
        EXPECT_GT(blas::cdot_norms(whole[i], whole[i]).xx, 0.0);
        EXPECT_LT(rel_diff(whole[i], split[i]), tol);
      }
    }
  }
}

// Gauss-Jordan elimination with partial pivoting, as the CUDA backend inverts the coarsest
// matrix, run on every backend: a random matrix with a zero diagonal (every column needs a
// row swap) times its inverse is the identity; the 1-norm is the largest column sum; a
// singular matrix is refused.
TEST_P(MgBackend, GaussJordanInverse) {
  const Backend b = GetParam();
  activate_backend(b);
  const int n = 37;
  std::vector<Complex<double>> a(n * n);
  std::uint64_t state = 88172645463325252ull;
  auto uniform = [&state] {  // xorshift64: a fixed matrix, whatever the platform's generators
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    return static_cast<double>(state >> 11) / 9007199254740992.0 - 0.5;
  };
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) a[j * n + i] = i == j ? Complex<double>(0) : Complex<double>(uniform(), uniform());
  double norm = 0;
  for (int j = 0; j < n; ++j) {
    double sum = 0;
    for (int i = 0; i < n; ++i) sum += std::sqrt(norm2(a[j * n + i]));
    norm = std::max(norm, sum);
  }
  Buffer m(memory_for(b), a.size() * sizeof(Complex<double>));
  copy_bytes(m.data(), a.data(), m.bytes());
  synchronize(b);
  auto* md = static_cast<Complex<double>*>(m.data());
  EXPECT_NEAR(norm1(b, md, n), norm, 1e-12 * norm);
  gauss_jordan_inverse(b, md, n);
  std::vector<Complex<double>> inv(a.size());
  copy_bytes(inv.data(), m.data(), m.bytes());
  synchronize(b);
  double worst = 0;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      Complex<double> s(0);
      for (int k = 0; k < n; ++k) s += a[k * n + i] * inv[j * n + k];
      worst = std::max(worst, std::sqrt(norm2(s - Complex<double>(i == j ? 1 : 0))));
    }
  EXPECT_LT(worst, 1e-10) << "|A A^-1 - 1|, largest entry";
  for (int i = 0; i < n; ++i) a[3 * n + i] = Complex<double>(0);  // column 3 vanishes
  copy_bytes(m.data(), a.data(), m.bytes());
  synchronize(b);
  expect_error([&] { gauss_jordan_inverse(b, md, n); }, "singular", "a singular matrix");
}

}  // namespace
}  // namespace latke::mg
