// Adaptive multigrid, on every backend this machine has: the transfer (R P = 1, P R a
// projector onto the basis), the Galerkin coarse operator against an explicit P^dag M P built
// column by column on the host, the coarse operator's adjoint and even-odd forms, the
// verify() identities, an MG-preconditioned GCR solve against the unpreconditioned one, and
// bad input. Label mg.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "latke/core/error.h"
#include "latke/core/mma.h"
#include "latke/fields/blas.h"
#include "latke/fields/random.h"
#include "preconditioners/mg/dense_inverse.h"
#include "preconditioners/mg/galerkin.h"
#include "preconditioners/mg/mg.h"
#include "support/backends.h"
#include "support/expect_error.h"
#include "wilson_clover/wilson_clover.h"
#include "wilson_clover/wilson_clover_linear.h"

namespace latke::mg {
namespace {

using test::available_backends;
using test::expect_error;

using blas::Cplx;

/// A Wilson-clover problem on one rank: random links, clover, a twisted boundary.
struct Problem {
  std::shared_ptr<const Lattice> lat;
  std::vector<Complex<double>> links;
  WilsonCloverParam param;
  std::shared_ptr<WilsonCloverOperator> op;
  Backend backend;

  Problem(Backend b, Precision p, Coords dims, double mass = 0.1, double spread = 0.3, MPI_Comm comm = MPI_COMM_SELF) {
    activate_backend(b);
    backend = b;
    lat = std::make_shared<Lattice>(comm, dims);
    links = random_gauge(*lat, 4321, spread);
    param.mass = mass;
    param.csw = 1.2;
    param.boundary_phase = {Complex<double>(1), Complex<double>(1), Complex<double>(std::cos(0.3), std::sin(0.3)),
                            Complex<double>(-1)};
    param.precision = p;
    param.backend = b;
    op = std::make_shared<WilsonCloverOperator>(lat, links, param);
  }
  std::shared_ptr<LinearOperator> full() {
    return std::make_shared<WilsonCloverLinear>(op, false, SchurType::symmetric, 0);
  }
  /// The full operator restricted to Dirichlet blocks of `block`, in precision q (what the
  /// Schwarz smoother's factory makes).
  std::shared_ptr<LinearOperator> local(const Coords& block, Precision q) const {
    WilsonCloverParam w = param;
    w.block = block;
    w.precision = q;
    return std::make_shared<WilsonCloverLinear>(std::make_shared<WilsonCloverOperator>(lat, links, w), false,
                                                SchurType::symmetric, 0);
  }
};

double rel_diff(const ColorSpinorField& a, const ColorSpinorField& b) {
  ColorSpinorField d = a.like(a.precision());
  d.copy_from(a);
  blas::caxpby(Cplx(-1), b, Cplx(1), d);
  return std::sqrt(blas::cdot_norms(d, d).xx / blas::cdot_norms(a, a).xx);
}

void random_basis(Transfer& T, std::uint64_t seed) {
  for (std::size_t k = 0; k < T.vectors().size(); ++k) fill_gaussian(T.vectors()[k], seed + k);
  T.orthonormalize();
}

class MgBackend : public ::testing::TestWithParam<Backend> {};

// R P = 1 on the coarse space and P R v = v for the basis vectors themselves, for a Wilson
// fine level (4 spins, 3 colors: P by whole sites) and a coarse one (2 spins, nvec colors:
// P by components; 3 colors make half-precision records that are not whole 16-byte words),
// with the basis packed in double, single and half precision.
TEST_P(MgBackend, TransferIdentities) {
  Problem pr(GetParam(), Precision::double_, {4, 4, 8, 8});
  struct Case {
    int nspin, ncolor;
    Precision packed;
    double tol;
  };
  for (const Case& cs : {Case{4, 3, Precision::double_, 1e-13}, Case{4, 3, Precision::single, 1e-6},
                         Case{4, 3, Precision::half, 3e-4}, Case{2, 3, Precision::double_, 1e-13},
                         Case{2, 3, Precision::half, 3e-4}, Case{2, 4, Precision::single, 1e-6},
                         Case{2, 4, Precision::half, 3e-4}}) {
    SCOPED_TRACE(::testing::Message() << cs.nspin << " spins, " << cs.ncolor << " colors, basis packed in "
                                      << to_string(cs.packed));
    Transfer T(pr.lat, SpinorParam{cs.nspin, cs.ncolor, Precision::double_, Subset::full, pr.backend}, {2, 2, 4, 2}, 3,
               1, cs.packed);
    random_basis(T, 11);
    ColorSpinorField c(T.coarse_lattice(), T.coarse_param(Precision::double_)), c2 = c.like(Precision::double_);
    fill_gaussian(c, 5);
    ColorSpinorField f(pr.lat, T.fine_param(Precision::double_));
    T.prolongate(f, c);
    T.restrict_to(c2, f);
    EXPECT_LT(rel_diff(c, c2), cs.tol);
    for (const ColorSpinorField& v : T.vectors()) {
      T.restrict_to(c2, v);
      T.prolongate(f, c2);
      EXPECT_LT(rel_diff(v, f), cs.tol);
    }
    // A random fine vector is not in the span: P R is a projection, not the identity, and
    // R (f - P R f) = 0.
    ColorSpinorField g = f.like(Precision::double_), h = f.like(Precision::double_);
    fill_gaussian(g, 9);
    T.restrict_to(c, g);
    T.prolongate(h, c);
    EXPECT_GT(rel_diff(g, h), 0.5);
    blas::caxpby(Cplx(1), g, Cplx(-1), h);
    T.restrict_to(c2, h);
    EXPECT_LT(std::sqrt(blas::cdot_norms(c2, c2).xx / blas::cdot_norms(c, c).xx), cs.tol);
  }
}

// A fine field of one parity: R of it is R of the full field that is zero on the other
// parity, and P onto it is that parity of P (bit for bit), with an even first block extent
// (R lists the parity's sites) and an odd one (R skips the other sites), for a Wilson fine
// level with a half basis and a coarse-shaped one.
TEST_P(MgBackend, TransferOnOneParity) {
  struct Case {
    Coords dims, block;
    int nspin, ncolor;
    Precision packed;
  };
  for (const Case& cs : {Case{{4, 4, 8, 8}, {2, 2, 4, 2}, 4, 3, Precision::half},
                         Case{{6, 4, 4, 4}, {3, 2, 2, 2}, 4, 3, Precision::single},
                         Case{{4, 4, 8, 8}, {2, 2, 4, 2}, 2, 4, Precision::single}}) {
    SCOPED_TRACE(::testing::Message() << cs.nspin << " spins, block " << cs.block[0] << "x" << cs.block[1] << "x"
                                      << cs.block[2] << "x" << cs.block[3]);
    Problem pr(GetParam(), Precision::single, cs.dims);
    Transfer T(pr.lat, SpinorParam{cs.nspin, cs.ncolor, Precision::single, Subset::full, pr.backend}, cs.block, 3, 1,
               cs.packed);
    random_basis(T, 21);
    ColorSpinorField f(pr.lat, T.fine_param(Precision::single)), zeroed = f.like(Precision::single),
                                                                 pf = f.like(Precision::single);
    ColorSpinorField c(T.coarse_lattice(), T.coarse_param(Precision::single)), c1 = c.like(Precision::single),
                                                                               c2 = c.like(Precision::single);
    fill_gaussian(f, 3);
    fill_gaussian(c, 4);
    T.prolongate(pf, c);
    for (int p = 0; p < 2; ++p) {
      SCOPED_TRACE(p == 0 ? "even" : "odd");
      SpinorParam pp = T.fine_param(Precision::single);
      pp.subset = p == 0 ? Subset::even : Subset::odd;
      ColorSpinorField fp(pr.lat, pp), q(pr.lat, pp);
      fp.copy_from(f.parity(p));
      zeroed.zero();
      zeroed.parity(p).copy_from(fp);
      T.restrict_to(c1, zeroed);
      T.restrict_to(c2, fp);
      EXPECT_LT(rel_diff(c1, c2), 1e-6);
      T.prolongate(q, c);
      EXPECT_EQ(rel_diff(q, pf.parity(p)), 0.0);
    }
  }
}

// orthonormalize() is Gram-Schmidt within every (aggregate, chirality): against modified
// Gram-Schmidt (twice, in double) on the host, for a Wilson fine level and a coarse-shaped one
// (2 spins, 5 colors), with more vectors than one tile and one output chunk of the kernels,
// and a single-precision basis. A basis that is not of full rank on its aggregates (a vector
// that vanishes, or repeats another) is refused, naming how many (aggregate, chirality) pairs.
TEST_P(MgBackend, OrthonormalizeIsGramSchmidt) {
  Problem pr(GetParam(), Precision::double_, {4, 4, 4, 8});
  const Coords block{2, 2, 2, 4};
  struct Case {
    int nspin, ncolor, nvec;
    Precision p;
    double tol;
  };
  for (const Case& cs : {Case{4, 3, 10, Precision::double_, 1e-12}, Case{2, 5, 9, Precision::double_, 1e-12},
                         Case{4, 3, 10, Precision::single, 2e-5}}) {
    SCOPED_TRACE(::testing::Message() << cs.nspin << " spins, " << cs.ncolor << " colors, " << cs.nvec << " vectors in "
                                      << to_string(cs.p));
    Transfer T(pr.lat, SpinorParam{cs.nspin, cs.ncolor, cs.p, Subset::full, pr.backend}, block, cs.nvec, 1, cs.p);
    const int nv = cs.nvec, nc = cs.nspin * cs.ncolor;
    std::vector<std::vector<Complex<double>>> v(nv), got(nv);
    for (int k = 0; k < nv; ++k) {
      fill_gaussian(T.vectors()[k], 40 + k);
      T.vectors()[k].to_lexicographic(v[k]);
    }
    T.orthonormalize();
    for (int k = 0; k < nv; ++k) T.vectors()[k].to_lexicographic(got[k]);
    // The elements (site x nc + component) of each (aggregate, chirality).
    const Lattice& cl = *T.coarse_lattice();
    std::vector<std::vector<long>> seg(2 * cl.volume());
    for (long x = 0; x < pr.lat->volume(); ++x) {
      const Coords c = pr.lat->coords_of(x);
      long a = 0;
      for (int mu = 3; mu >= 0; --mu) a = a * cl.local()[mu] + c[mu] / block[mu];
      for (int m = 0; m < nc; ++m) seg[2 * a + (m >= nc / 2)].push_back(x * nc + m);
    }
    double worst = 0;
    for (const std::vector<long>& el : seg) {
      std::vector<std::vector<Complex<double>>> q(nv, std::vector<Complex<double>>(el.size()));
      for (int k = 0; k < nv; ++k)
        for (std::size_t i = 0; i < el.size(); ++i) q[k][i] = v[k][el[i]];
      for (int pass = 0; pass < 2; ++pass)
        for (int k = 0; k < nv; ++k) {
          for (int j = 0; j < k; ++j) {
            Complex<double> d;
            for (std::size_t i = 0; i < el.size(); ++i) d += conj_mul(q[j][i], q[k][i]);
            for (std::size_t i = 0; i < el.size(); ++i) q[k][i] -= d * q[j][i];
          }
          double n = 0;
          for (const Complex<double>& z : q[k]) n += norm2(z);
          for (Complex<double>& z : q[k]) z *= 1 / std::sqrt(n);
        }
      for (int k = 0; k < nv; ++k)
        for (std::size_t i = 0; i < el.size(); ++i) worst = std::max(worst, std::sqrt(norm2(q[k][i] - got[k][el[i]])));
    }
    EXPECT_LT(worst, cs.tol);  // the vectors have norm 1 on each (aggregate, chirality)
  }
  const int pairs = 2 * static_cast<int>(pr.lat->volume() / (block[0] * block[1] * block[2] * block[3]));
  for (const bool vanishes : {true, false}) {
    Transfer T(pr.lat, SpinorParam{4, 3, Precision::single, Subset::full, pr.backend}, block, 3, 1);
    for (int k = 0; k < 3; ++k) fill_gaussian(T.vectors()[k], 60 + k);
    if (vanishes)
      T.vectors()[1].zero();
    else
      T.vectors()[2].copy_from(T.vectors()[0]);
    expect_error([&] { T.orthonormalize(); },
                 "not of full rank on " + std::to_string(pairs) + " (aggregate, chirality) pairs",
                 vanishes ? "a basis with a vanishing vector" : "a basis with a repeated vector");
  }
}

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
      const SpinorParam fp = dc->field_param(Precision::single, full ? Subset::full : Subset::even);
      std::vector<ColorSpinorField> in = ColorSpinorField::make_set(T.coarse_lattice(), fp, count),
                                    out = ColorSpinorField::make_set(T.coarse_lattice(), fp, count);
      for (int k = 0; k < count; ++k) fill_gaussian(in[k], 50 + k);
      dc->apply_set(out, in);
      ColorSpinorField one(T.coarse_lattice(), fp);
      for (int k = 0; k < count; ++k) {
        if (full)
          dc->apply(one, in[k]);
        else
          dc->apply_schur(one, in[k]);
        EXPECT_LT(rel_diff(one, out[k]), 2e-6) << "field " << k;
        EXPECT_GT(rel_diff(one, in[k]), 1e-3) << "field " << k << ": the operator left it as it was";
      }
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

// The set stencil on tensor cores (SetMath tf32x3; on the CPU the kernel's lane-by-lane
// emulation) equals the FP32 one: full and even-odd, N = 16, 13 fields (a last tile of 5) and
// 40 (a second warp's 32-field chunk). It keeps single's accuracy; the TF32 product alone (the
// split's hi parts, mma::to_tf32 on the inputs) is several times less accurate, so the test
// sees the split. Half blocks, N = 8 and a small lattice (automatic) take fp32.
TEST_P(MgBackend, SetStencilOnTensorCores) {
  Problem pr(GetParam(), Precision::double_, {4, 4, 8, 8});
  Transfer T(pr.lat, SpinorParam{4, 3, Precision::double_, Subset::full, pr.backend}, {2, 2, 2, 2}, 8, 1,
             Precision::double_);
  random_basis(T, 41);
  auto dc = galerkin(*pr.full(), T, Precision::single, true);
  EXPECT_EQ(dc->set_math(), mg::SetMath::fp32) << "automatic on a lattice of 32 sites per parity";
  for (int count : {13, 40}) {
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

/// The light-quark solve the preconditioned-solve tests share: 8^4, mass -0.2, the operator in
/// double (M) and single (ps, for the hierarchy), a Gaussian source.
struct LightProblem {
  Problem pr, ps;
  std::shared_ptr<LinearOperator> M;
  ColorSpinorField b;
  explicit LightProblem(Backend be)
      : pr(be, Precision::double_, {8, 8, 8, 8}, -0.2, 0.25),
        ps(be, Precision::single, {8, 8, 8, 8}, -0.2, 0.25),
        M(pr.full()),
        b(M->make_field()) {
    fill_gaussian(b, 8);
  }
  /// The hierarchy with parameters p on the single-precision operator and its even-odd form,
  /// set up (progress receives the setup's lines); fine_setup: the fine operator for a setup
  /// in a lower precision.
  std::shared_ptr<Multigrid> hierarchy(const MultigridParam& p,
                                       const std::function<void(const std::string&)>& progress = nullptr,
                                       std::shared_ptr<LinearOperator> fine_setup = nullptr) {
    auto mg = std::make_shared<Multigrid>(ps.full(), p, nullptr,
                                          std::make_shared<WilsonCloverLinear>(ps.op, true, SchurType::symmetric, 0),
                                          nullptr, std::move(fine_setup));
    mg->setup(progress);
    return mg;
  }
};

/// GCR(20) to 1e-10 preconditioned by the multigrid cycle.
SolverStats mg_gcr(const std::shared_ptr<Multigrid>& mg, LinearOperator& M, ColorSpinorField& x,
                   const ColorSpinorField& b) {
  MultigridPreconditioner K(mg);
  SolverParam sp;
  sp.type = SolverType::gcr;
  sp.tol = 1e-10;
  sp.restart = 20;
  return solve(M, nullptr, &K, x, b, sp);
}

// GCR on the coarsest level: the direct solve (the default on one rank) is tested on its own
// below, where inverting the 2-level hierarchy's coarsest level would cost seconds per setup.
MultigridParam small_param(int levels) {
  MultigridParam p;
  p.levels = levels;
  p.coarse_solver = CoarseSolverType::gcr;
  for (int l = 0; l + 1 < levels; ++l) {
    LevelParam q;
    q.block = {2, 2, 2, 2};
    q.nvec = 6;
    q.setup_iterations = 30;
    p.level.push_back(q);
  }
  return p;
}

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

// The fine level's inverse iteration on the even-odd system (the default) against the same
// steps on the full operator: the Schur complement's better conditioning takes the low modes
// further down, so the hierarchy built from few steps preconditions better (on this 8^4
// problem with 3 steps: 15 MG-GCR iterations against 17).
TEST_P(MgBackend, EvenOddSetup) {
  LightProblem lp(GetParam());
  auto& M = lp.M;
  const ColorSpinorField& b = lp.b;
  int iterations[2];
  ColorSpinorField x[2] = {M->make_field(), M->make_field()};
  for (int eo = 0; eo < 2; ++eo) {
    SCOPED_TRACE(eo ? "even-odd setup" : "full setup");
    MultigridParam p = small_param(2);
    p.setup_even_odd = eo == 1;
    p.level[0].setup_iterations = 3;
    auto mg = lp.hierarchy(p);
    EXPECT_EQ(mg->info(0).setup_even_odd, eo == 1);
    const VerifyReport r = mg->verify();
    EXPECT_LT(r.galerkin[0], 1e-5);
    const SolverStats st = mg_gcr(mg, *M, x[eo], b);
    ASSERT_TRUE(st.converged);
    iterations[eo] = st.iterations;
  }
  EXPECT_LT(rel_diff(x[0], x[1]), 1e-8);
  EXPECT_LT(iterations[1], iterations[0]) << "3 setup steps on the even-odd system: " << iterations[1]
                                          << " MG-GCR iterations; on the full system: " << iterations[0];
}

// The fine smoother in half precision (vectors and even-odd operator; QUDA's choice), then
// also the fine level's inverse iteration in half (mixed precision, reliable updates) on the
// even-odd and on the full system: MG-GCR still reaches the solution of the all-single
// hierarchy, in about as many iterations.
TEST_P(MgBackend, HalfPrecisionSmootherAndSetup) {
  Problem pr(GetParam(), Precision::double_, {8, 8, 8, 8}, -0.2, 0.25);
  Problem ps(GetParam(), Precision::single, {8, 8, 8, 8}, -0.2, 0.25);
  Problem ph(GetParam(), Precision::half, {8, 8, 8, 8}, -0.2, 0.25);
  auto M = pr.full();
  ColorSpinorField b = M->make_field();
  fill_gaussian(b, 8);
  int iterations[4];
  ColorSpinorField x[4] = {M->make_field(), M->make_field(), M->make_field(), M->make_field()};
  for (int c = 0; c < 4; ++c) {
    SCOPED_TRACE(c == 0   ? "single"
                 : c == 1 ? "half smoother"
                 : c == 2 ? "half smoother and even-odd setup"
                          : "half smoother and full setup");
    MultigridParam p = small_param(2);
    if (c >= 1) p.level[0].smoother_precision = Precision::half;
    if (c >= 2) p.level[0].setup_precision = Precision::half;
    p.setup_even_odd = c != 3;
    auto schur = std::make_shared<WilsonCloverLinear>(ps.op, true, SchurType::symmetric, 0);
    auto low = c >= 1 ? std::make_shared<WilsonCloverLinear>(ph.op, true, SchurType::symmetric, 0) : nullptr;
    auto setup = c >= 2 ? std::make_shared<WilsonCloverLinear>(ph.op, c == 2, SchurType::symmetric, 0) : nullptr;
    auto mg = std::make_shared<Multigrid>(ps.full(), p, nullptr, schur, low, setup);
    mg->setup();
    const SolverStats st = mg_gcr(mg, *M, x[c], b);
    ASSERT_TRUE(st.converged);
    iterations[c] = st.iterations;
    EXPECT_GT(mg->work(0)[0], 0);
    if (c > 0) {
      EXPECT_LT(rel_diff(x[0], x[c]), 1e-8);
      EXPECT_LE(iterations[c], iterations[0] + 3) << iterations[c] << " iterations, all single " << iterations[0];
    }
  }
}

// The inverse iteration of a coarse level in half (a copy of its blocks in half, reliable
// updates with the level's single operator): same solution, and a hierarchy as good within a
// few iterations as the one set up in single, on three levels.
TEST_P(MgBackend, CoarseLevelSetupInHalf) {
  LightProblem lp(GetParam());
  int iterations[2];
  ColorSpinorField x[2] = {lp.M->make_field(), lp.M->make_field()};
  for (int c = 0; c < 2; ++c) {
    SCOPED_TRACE(c == 0 ? "single setup" : "level 1 set up in half");
    MultigridParam p = small_param(3);
    p.setup_batch = 1;  // the half setup is the one-at-a-time path's
    if (c == 1) p.level[1].setup_precision = Precision::half;
    const SolverStats st = mg_gcr(lp.hierarchy(p), *lp.M, x[c], lp.b);
    ASSERT_TRUE(st.converged);
    iterations[c] = st.iterations;
  }
  EXPECT_LT(rel_diff(x[0], x[1]), 1e-8);
  EXPECT_GT(rel_diff(x[0], x[1]), 0) << "the same hierarchy: the half setup did not run";
  EXPECT_LE(iterations[1], iterations[0] + 3) << iterations[1] << " iterations, single setup " << iterations[0];
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

// BiCGstab over a set (bicgstab_set) on the even-odd coarse operator: every system reaches the
// tolerance on its true residual and agrees with the one-at-a-time solve; a system with a good
// initial guess stops early while the others go on; a zero right-hand side takes no iteration
// and keeps a zero solution.
TEST_P(MgBackend, BiCGstabOnASet) {
  // The coarse operator of a set-up hierarchy near the critical mass (a random basis would give
  // one close to its site blocks, solved in two steps).
  LightProblem lp(GetParam());
  std::shared_ptr<Multigrid> mg = lp.hierarchy(small_param(2));
  std::shared_ptr<CoarseOperator> dc(mg, &mg->coarse_operator(1));
  ASSERT_TRUE(dc->even_odd());
  CoarseLinear A(dc, true, 0, Precision::single);
  const auto coarse = A.lattice();
  const int count = 5;
  const SpinorParam fp = A.field_param();
  std::vector<ColorSpinorField> b = ColorSpinorField::make_set(coarse, fp, count),
                                x = ColorSpinorField::make_set(coarse, fp, count);
  for (int k = 0; k + 1 < count; ++k) fill_gaussian(b[k], 90 + k);
  blas::caxpby(Cplx(0), b[0], Cplx(3.0), b[1]);  // one system with a larger right-hand side (same relative tolerance)
  SolverParam sp;
  sp.tol = 1e-5;
  sp.max_iter = 1000;
  {  // system 3 starts from a guess good to 1e-3: it must stop long before the others
    SolverParam rough = sp;
    rough.tol = 1e-3;
    ASSERT_TRUE(solve(A, nullptr, nullptr, x[3], b[3], rough).converged);
  }
  const std::vector<SolverStats> st = bicgstab_set(
      [&](std::vector<ColorSpinorField>& o, const std::vector<ColorSpinorField>& i) { dc->apply_set(o, i); }, x, b, sp);
  ASSERT_EQ(static_cast<int>(st.size()), count);
  ColorSpinorField r = A.make_field(), x1 = A.make_field();
  for (int k = 0; k + 1 < count; ++k) {
    SCOPED_TRACE("system " + std::to_string(k));
    EXPECT_TRUE(st[k].converged);
    if (k < 3)
      EXPECT_GT(st[k].iterations, st[3].iterations) << "the system with the good guess took " << st[3].iterations;
    A.apply(r, x[k]);
    blas::caxpby(Cplx(1), b[k], Cplx(-1), r);
    const double res = std::sqrt(blas::cdot_norms(r, r).xx / blas::cdot_norms(b[k], b[k]).xx);
    EXPECT_LT(res, 2e-5);
    EXPECT_NEAR(res, st[k].true_residual, 1e-6);
    x1.zero();
    SolverParam one = sp;
    one.type = SolverType::bicgstab;
    ASSERT_TRUE(solve(A, nullptr, nullptr, x1, b[k], one).converged);
    EXPECT_LT(rel_diff(x1, x[k]), 1e-3);
  }
  EXPECT_EQ(st[count - 1].iterations, 0) << "the zero right-hand side";
  EXPECT_EQ(blas::cdot_norms(x[count - 1], x[count - 1]).xx, 0.0);
}

// The null vectors solved together (the default, setup_batch 32: the fine level's by the
// Wilson-clover even-odd operator over a set, the coarse levels' by the coarse operator's) and
// one at a time (setup_batch 1, in single): both hierarchies make MG-GCR converge to the same
// solution in about as many iterations, and the progress lines say the sets were solved together.
TEST_P(MgBackend, NullVectorsSolvedTogether) {
  LightProblem lp(GetParam());
  int iterations[2];
  ColorSpinorField x[2] = {lp.M->make_field(), lp.M->make_field()};
  for (int c = 0; c < 2; ++c) {
    SCOPED_TRACE(c == 0 ? "one at a time" : "together");
    MultigridParam p = small_param(3);
    p.setup_batch = c == 0 ? 1 : 32;
    int together = 0;
    auto mg = lp.hierarchy(
        p, [&](const std::string& line) { together += line.find("solved with 5 others") != std::string::npos; });
    EXPECT_EQ(together, c == 0 ? 0 : 12) << "the 6 null vectors of levels 0 and 1";
    EXPECT_EQ(mg->info(1).setup_batch, c == 0 ? 1 : 6);
    EXPECT_EQ(mg->info(0).setup_batch, c == 0 ? 1 : 6);
    const SolverStats st = mg_gcr(mg, *lp.M, x[c], lp.b);
    ASSERT_TRUE(st.converged);
    iterations[c] = st.iterations;
  }
  EXPECT_LT(rel_diff(x[0], x[1]), 1e-8);
  EXPECT_LE(iterations[1], iterations[0] + 3) << iterations[1] << " iterations, one at a time " << iterations[0];
}

// The fine level's null vectors solved together in half (setup_precision half, the default
// of pc_latke_mg): the Wilson-clover even-odd operator in half over the set, e accumulated in
// single with reliable updates in single. Against one at a time (setup_batch 1, half steps
// with reliable updates): both hierarchies make MG-GCR converge to the same solution in about
// as many iterations (without the set's reliable updates, 17 against 13), and the progress
// lines say which ran; level 1's sets (setup precision half too) stay in single.
TEST_P(MgBackend, NullVectorsTogetherInHalf) {
  LightProblem lp(GetParam());
  Problem ph(GetParam(), Precision::half, {8, 8, 8, 8}, -0.2, 0.25);
  int iterations[2];
  ColorSpinorField x[2] = {lp.M->make_field(), lp.M->make_field()};
  for (int c = 0; c < 2; ++c) {
    SCOPED_TRACE(c == 0 ? "one at a time" : "together");
    MultigridParam p = small_param(3);
    for (int l = 0; l < 2; ++l) p.level[l].setup_precision = Precision::half;
    p.level[1].smoother_precision = Precision::half;
    p.setup_batch = c == 0 ? 1 : 32;
    int together[2] = {0, 0};
    auto mg = lp.hierarchy(
        p,
        [&](const std::string& line) {
          for (int l = 0; l < 2; ++l)
            together[l] += line.rfind("level " + std::to_string(l) + ":", 0) == 0 &&
                           line.find("solved with 5 others, in half,") != std::string::npos;
        },
        std::make_shared<WilsonCloverLinear>(ph.op, true, SchurType::symmetric, 0));
    EXPECT_EQ(together[0], c == 0 ? 0 : 6) << "level 0's 6 null vectors";
    EXPECT_EQ(together[1], 0) << "level 1's sets in single";
    for (int l = 0; l < 2; ++l) EXPECT_EQ(mg->info(l).setup_batch, c == 0 ? 1 : 6);
    const SolverStats st = mg_gcr(mg, *lp.M, x[c], lp.b);
    ASSERT_TRUE(st.converged);
    iterations[c] = st.iterations;
  }
  EXPECT_LT(rel_diff(x[0], x[1]), 1e-8);
  EXPECT_LE(iterations[1], iterations[0] + 3) << iterations[1] << " iterations, one at a time " << iterations[0];
}

// The set BLAS on Wilson fields in half (site by site, a norm per site) and with an
// accumulator more precise than the update: equal to the same arithmetic field by field;
// BiCGstab over a half set with solutions accumulated in single solves the even-odd operator
// in half as far as half allows, and its true residual is the one computed again in double.
TEST_P(MgBackend, SetsInHalf) {
  Problem ph(GetParam(), Precision::half, {4, 4, 8, 8}, 0.02);
  const int count = 5;
  const SpinorParam hp{4, 3, Precision::half, Subset::even, ph.backend};
  SpinorParam sp = hp;
  sp.precision = Precision::single;
  std::vector<ColorSpinorField> x = ColorSpinorField::make_set(ph.lat, hp, count),
                                y = ColorSpinorField::make_set(ph.lat, hp, count),
                                z = ColorSpinorField::make_set(ph.lat, hp, count),
                                acc = ColorSpinorField::make_set(ph.lat, sp, count);
  std::vector<Cplx> a, b, c;
  for (int k = 0; k < count; ++k) {
    fill_gaussian(x[k], 60 + k);
    fill_gaussian(y[k], 70 + k);
    fill_gaussian(z[k], 80 + k);
    fill_gaussian(acc[k], 90 + k);
    a.push_back(Cplx(0.5 + k, -0.25 * k));
    b.push_back(Cplx(-1.0, 0.1 * k));
    c.push_back(Cplx(k % 2 ? 0.0 : 2.0, 1.0));
  }
  std::vector<ColorSpinorField> want, want_acc;
  for (int k = 0; k < count; ++k) {
    want.push_back(z[k].like(Precision::half));
    want[k].copy_from(z[k]);
    blas::caxpbypcz(a[k], x[k], b[k], y[k], c[k], want[k]);
    ColorSpinorField xs = x[k].like(Precision::single), ys = y[k].like(Precision::single);  // half values, exactly
    xs.copy_from(x[k]);
    ys.copy_from(y[k]);
    want_acc.push_back(acc[k].like(Precision::single));
    want_acc[k].copy_from(acc[k]);
    blas::caxpbypcz(a[k], xs, b[k], ys, c[k], want_acc[k]);
  }
  std::vector<double> norms(count), acc_norms(count);
  blas::caxpbypcz_set(a.data(), x, b.data(), &y, c.data(), z, norms.data());
  blas::caxpbypcz_set(a.data(), x, b.data(), &y, c.data(), acc, acc_norms.data());
  std::vector<blas::DotNorms> dn(count);
  blas::cdot_norms_set(x, z, dn.data());
  for (int k = 0; k < count; ++k) {
    SCOPED_TRACE("field " + std::to_string(k));
    EXPECT_LT(rel_diff(want[k], z[k]), 1e-6) << "caxpbypcz_set in half";
    EXPECT_NEAR(norms[k], blas::cdot_norms(z[k], z[k]).xx, 1e-3 * norms[k]) << "its norm (before rounding to half)";
    EXPECT_LT(rel_diff(want_acc[k], acc[k]), 1e-6) << "caxpbypcz_set into a single accumulator";
    const double w = blas::cdot_norms(acc[k], acc[k]).xx;
    EXPECT_NEAR(acc_norms[k], w, 1e-5 * w);
    const blas::DotNorms d = blas::cdot_norms(x[k], z[k]);
    EXPECT_LT(std::sqrt(norm2(dn[k].dot - d.dot) / (d.xx * d.yy)), 1e-12) << "cdot_norms_set in half";
    EXPECT_NEAR(dn[k].xx, d.xx, 1e-12 * d.xx);
    EXPECT_NEAR(dn[k].yy, d.yy, 1e-12 * d.yy);
  }
  expect_error([&] { blas::caxpbypcz_set(a.data(), acc, nullptr, nullptr, c.data(), z); },
               "the accumulator is in half, below its update's single", "a half accumulator of single updates");
  expect_error([&] { blas::cdot_norms_set(x, acc, dn.data()); }, "fields differ in precision",
               "cdot_norms_set of a half and a single set");

  // BiCGstab over the half set, x in single.
  WilsonCloverLinear A(ph.op, true, SchurType::symmetric, 0);
  ASSERT_TRUE(A.applies_sets());
  SolverParam p;
  p.tol = 2e-4;
  p.max_iter = 200;
  for (auto& f : acc) f.zero();
  const std::vector<SolverStats> st = bicgstab_set(
      [&](std::vector<ColorSpinorField>& o, const std::vector<ColorSpinorField>& i) { A.apply_set(o, i); }, acc, x, p);
  Problem pd(GetParam(), Precision::double_, {4, 4, 8, 8}, 0.02);
  WilsonCloverLinear D(pd.op, true, SchurType::symmetric, 0);
  ColorSpinorField xd = D.make_field(), bd = D.make_field(), r = D.make_field();
  for (int k = 0; k < count; ++k) {
    SCOPED_TRACE("system " + std::to_string(k));
    EXPECT_TRUE(st[k].converged) << st[k].true_residual << " after " << st[k].iterations << " iterations";
    EXPECT_GT(st[k].iterations, 5);
    xd.copy_from(acc[k]);
    bd.copy_from(x[k]);
    D.apply(r, xd);
    blas::caxpby(Cplx(1), bd, Cplx(-1), r);
    const double res = std::sqrt(blas::cdot_norms(r, r).xx / blas::cdot_norms(bd, bd).xx);
    EXPECT_LT(res, 1e-3);
    EXPECT_NEAR(res, st[k].true_residual, 3e-4);
  }
  // With reliable updates by the operator in single, the half steps go on to 1e-6, far below
  // what half alone reaches.
  Problem ps(GetParam(), Precision::single, {4, 4, 8, 8}, 0.02);
  WilsonCloverLinear S(ps.op, true, SchurType::symmetric, 0);
  std::vector<ColorSpinorField> bs = ColorSpinorField::make_set(ph.lat, sp, count);
  for (int k = 0; k < count; ++k) {
    bs[k].copy_from(x[k]);
    acc[k].zero();
  }
  const SetOperator precise = [&](std::vector<ColorSpinorField>& o, const std::vector<ColorSpinorField>& i) {
    S.apply_set(o, i);
  };
  p.tol = 1e-6;
  const std::vector<SolverStats> sr =
      bicgstab_set([&](std::vector<ColorSpinorField>& o, const std::vector<ColorSpinorField>& i) { A.apply_set(o, i); },
                   acc, x, p, &precise, &bs);
  for (int k = 0; k < count; ++k) {
    SCOPED_TRACE("system " + std::to_string(k) + ", reliable updates");
    EXPECT_TRUE(sr[k].converged) << sr[k].true_residual << " after " << sr[k].iterations << " iterations";
    xd.copy_from(acc[k]);
    bd.copy_from(x[k]);
    D.apply(r, xd);
    blas::caxpby(Cplx(1), bd, Cplx(-1), r);
    EXPECT_LT(std::sqrt(blas::cdot_norms(r, r).xx / blas::cdot_norms(bd, bd).xx), 3e-6);
  }
  expect_error([&] { bicgstab_set([&](auto& o, const auto& i) { A.apply_set(o, i); }, acc, x, p, &precise, &x); },
               "reliable updates need the solutions and the precise right-hand sides in one precision",
               "precise right-hand sides in half");
}

// Restricted starts (setup_restrict): level 1's null vectors start from level 0's restricted
// to it, which are near-null for the Galerkin operator already (|D_1 R v| = |R M v| <= |M v|
// for |R v| = |v|). Taken as they are (no step), level 1's first six are nearer null
// (|D_1 v| / |v| in the progress lines) than six grown from Gaussian starts by 30 steps; the
// two more that level 1 has (8 against level 0's 6) start Gaussian and take their steps; the
// hierarchy reaches the same solution in about as many iterations; the progress lines and
// info() name the restricted vectors.
TEST_P(MgBackend, RestrictedStartsOnCoarseLevels) {
  LightProblem lp(GetParam());
  double nullness[2] = {0, 0};
  int iterations[2];
  ColorSpinorField x[2] = {lp.M->make_field(), lp.M->make_field()};
  for (int c = 0; c < 2; ++c) {
    SCOPED_TRACE(c == 0 ? "Gaussian starts" : "restricted starts");
    MultigridParam p = small_param(3);
    p.setup_restrict = c == 1;
    p.level[1].nvec = 8;
    p.level[1].setup_restrict_iterations = 0;
    int restricted = 0, lines = 0, gaussian_steps = 0;
    auto mg = lp.hierarchy(p, [&](const std::string& line) {
      if (line.rfind("level 1: found null vector", 0) != 0) return;
      ++lines;
      const bool from_above = line.find("from the level above's, restricted; 0 bicgstab") != std::string::npos;
      restricted += from_above;
      if (lines > 6 && !from_above) {  // "(N bicgstab even-odd iterations ..."
        const std::size_t open = line.find('(');
        gaussian_steps += std::stoi(line.substr(open + 1)) > 0;
      }
      const std::size_t at = line.find("|M v|/|v| ");
      ASSERT_NE(at, std::string::npos) << line;
      if (lines <= 6) nullness[c] += std::stod(line.substr(at + 10));
    });
    EXPECT_EQ(lines, 8);
    EXPECT_EQ(restricted, c == 1 ? 6 : 0);
    EXPECT_EQ(gaussian_steps, 2) << "the vectors beyond level 0's count start Gaussian, with their steps";
    EXPECT_EQ(mg->info(1).setup_restricted, c == 1 ? 6 : 0);
    EXPECT_EQ(mg->info(0).setup_restricted, 0);
    const SolverStats st = mg_gcr(mg, *lp.M, x[c], lp.b);
    ASSERT_TRUE(st.converged);
    iterations[c] = st.iterations;
  }
  EXPECT_LT(rel_diff(x[0], x[1]), 1e-8);
  EXPECT_LT(nullness[1], nullness[0]) << "sum of |D_1 v| / |v| over level 1's first six vectors: restricted starts "
                                      << nullness[1] << ", Gaussian starts after 30 steps " << nullness[0];
  EXPECT_LE(iterations[1], iterations[0] + 2)
      << "restricted starts " << iterations[1] << ", Gaussian " << iterations[0];
}

// A refinement pass (on each level the inverse iteration rerun from the current vectors with
// GCR preconditioned by the current cycle, then a rebuild) after a short first pass: MG-GCR
// reaches the same solution in no more iterations than with the first pass alone, and the
// progress lines show every vector refined.
TEST_P(MgBackend, RefinementPass) {
  LightProblem lp(GetParam());
  int iterations[2];
  ColorSpinorField x[2] = {lp.M->make_field(), lp.M->make_field()};
  for (int c = 0; c < 2; ++c) {
    SCOPED_TRACE(c == 0 ? "first pass only" : "one refinement pass");
    MultigridParam p = small_param(2);
    p.level[0].setup_iterations = 3;
    p.setup_refine = c;
    int refined = 0;
    auto mg = lp.hierarchy(
        p, [&](const std::string& line) { refined += line.find("refined null vector") != std::string::npos; });
    EXPECT_EQ(refined, c == 0 ? 0 : 6);
    const SolverStats st = mg_gcr(mg, *lp.M, x[c], lp.b);
    ASSERT_TRUE(st.converged);
    iterations[c] = st.iterations;
  }
  EXPECT_LT(rel_diff(x[0], x[1]), 1e-8);
  // (On the 32^3x64 problem of docs/multigrid.md a pass after 20 or 30 first steps made the
  // hierarchy worse; this checks the pass runs and keeps a small problem's hierarchy working.)
  EXPECT_LE(iterations[1], iterations[0])
      << "refined: " << iterations[1] << " iterations, first pass only: " << iterations[0];
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
// instead of six the solve needs more iterations.
TEST_P(MgBackend, SchwarzSmoother) {
  LightProblem lp(GetParam());
  ColorSpinorField x0 = lp.M->make_field();
  const SolverStats mr = mg_gcr(lp.hierarchy(small_param(2)), *lp.M, x0, lp.b);
  ASSERT_TRUE(mr.converged);
  int iterations[2];
  for (int c = 0; c < 2; ++c) {
    MultigridParam p = small_param(2);
    p.level[0].smoother = SmootherType::schwarz;
    p.level[0].schwarz.block = {4, 4, 4, 4};
    p.level[0].schwarz.iterations = c == 0 ? 6 : 1;
    auto mg = std::make_shared<Multigrid>(lp.ps.full(), p,
                                          [&lp](const Coords& block, Precision q) { return lp.ps.local(block, q); });
    mg->setup();
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
}

// update(): the hierarchy of one mass rebuilt for another operator on the same gauge field
// keeps every null vector bit for bit (which are nearly as null there: nullness_growth near 1)
// and rebuilds the coarse operators (D_c = R M' P for the
// new M'); MG-GCR on the new operator then converges to its solution in about as many
// iterations as a hierarchy set up for it. The vectors of the lighter mass serve the heavier.
// Bad input: an update before any setup, and one for another lattice.
TEST_P(MgBackend, UpdateKeepsNullVectors) {
  LightProblem lp(GetParam());
  Problem heavy_d(GetParam(), Precision::double_, {8, 8, 8, 8}, -0.1, 0.25);
  Problem heavy(GetParam(), Precision::single, {8, 8, 8, 8}, -0.1, 0.25);
  const MultigridParam p = small_param(3);
  auto mg = lp.hierarchy(p);
  std::vector<std::vector<ColorSpinorField>> kept(2);
  for (int l = 0; l < 2; ++l)
    for (const ColorSpinorField& v : mg->transfer(l).vectors()) {
      kept[l].push_back(v.like(v.precision()));
      kept[l].back().copy_from(v);
    }
  EXPECT_LT(mg->nullness_growth(*heavy.full()), 1.1) << "another mass, the same gauge field";
  std::vector<std::string> lines;
  mg->update(heavy.full(), nullptr, std::make_shared<WilsonCloverLinear>(heavy.op, true, SchurType::symmetric, 0),
             nullptr, nullptr, [&](const std::string& s) { lines.push_back(s); });
  for (int l = 0; l < 2; ++l)
    for (std::size_t k = 0; k < kept[l].size(); ++k)
      EXPECT_EQ(rel_diff(kept[l][k], mg->transfer(l).vectors()[k]), 0) << "level " << l << " vector " << k;
  const VerifyReport r = mg->verify();  // against the new fine operator
  for (int l = 0; l < 2; ++l) EXPECT_LT(r.galerkin[l], 1e-5) << "level " << l;
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines.front().find("keeping its 6 null vectors"), std::string::npos) << lines.front();
  EXPECT_GT(mg->setup_seconds(), 0);

  auto M = heavy_d.full();
  ColorSpinorField x_kept = M->make_field(), x_new = M->make_field(), x_plain = M->make_field();
  SolverParam bi;
  bi.type = SolverType::bicgstab;
  bi.tol = 1e-11;
  ASSERT_TRUE(solve(*M, nullptr, nullptr, x_plain, lp.b, bi).converged);
  const SolverStats kept_st = mg_gcr(mg, *M, x_kept, lp.b);
  auto fresh = std::make_shared<Multigrid>(
      heavy.full(), p, nullptr, std::make_shared<WilsonCloverLinear>(heavy.op, true, SchurType::symmetric, 0));
  fresh->setup();
  const SolverStats new_st = mg_gcr(fresh, *M, x_new, lp.b);
  ASSERT_TRUE(kept_st.converged);
  ASSERT_TRUE(new_st.converged);
  EXPECT_LT(rel_diff(x_plain, x_kept), 1e-8);
  EXPECT_LE(kept_st.iterations, new_st.iterations + 2)
      << "kept null vectors " << kept_st.iterations << " iterations, a new setup " << new_st.iterations;

  auto none = std::make_shared<Multigrid>(heavy.full(), p);
  expect_error([&] { none->update(heavy.full(), nullptr, nullptr, nullptr, nullptr); }, "has not been set up",
               "an update before any setup");
  Problem other(GetParam(), Precision::single, {8, 8, 8, 16}, -0.1, 0.25);
  expect_error(
      [&] {
        mg->update(other.full(), nullptr, std::make_shared<WilsonCloverLinear>(other.op, true, SchurType::symmetric, 0),
                   nullptr, nullptr);
      },
      "the new fine operator acts on a 8x8x8x16 lattice", "an update for another lattice");
}

// update() with refresh steps, for another gauge field (of the same kind, another seed): the
// kept null vectors are staler there (nullness_growth) than for another mass; refreshed by a few
// inverse-iteration steps on the new operator, they change, and
// the coarse space then misses less of the new operator's lowest modes than with the vectors
// kept as they were; the hierarchy satisfies D_c = R M' P; MG-GCR converges to BiCGstab's
// solution in no more iterations than with the kept vectors. Bad input: negative steps, steps
// for more levels than have null vectors.
TEST_P(MgBackend, UpdateRefreshesNullVectors) {
  LightProblem lp(GetParam());
  const std::vector<Complex<double>> links = random_gauge(*lp.ps.lat, 99, 0.25);
  auto next_s = std::make_shared<WilsonCloverOperator>(lp.ps.lat, links, lp.ps.param);
  auto next_d = std::make_shared<WilsonCloverOperator>(lp.pr.lat, links, lp.pr.param);
  const auto full = [](const std::shared_ptr<WilsonCloverOperator>& op) {
    return std::make_shared<WilsonCloverLinear>(op, false, SchurType::symmetric, 0);
  };
  const auto schur = [](const std::shared_ptr<WilsonCloverOperator>& op) {
    return std::make_shared<WilsonCloverLinear>(op, true, SchurType::symmetric, 0);
  };
  const MultigridParam p = small_param(3);
  auto kept = lp.hierarchy(p), refreshed = lp.hierarchy(p);
  std::vector<ColorSpinorField> before;
  for (const ColorSpinorField& v : refreshed->transfer(0).vectors()) {
    before.push_back(v.like(v.precision()));
    before.back().copy_from(v);
  }
  EXPECT_GT(kept->nullness_growth(*full(next_s)), 1.25) << "another gauge field";
  kept->update(full(next_s), nullptr, schur(next_s), nullptr, nullptr);
  std::vector<std::string> lines;
  refreshed->update(full(next_s), nullptr, schur(next_s), nullptr, nullptr,
                    [&](const std::string& s) { lines.push_back(s); }, {10, 10});
  int refreshed_lines = 0;
  for (const std::string& s : lines) refreshed_lines += s.find("refreshed null vector") != std::string::npos;
  EXPECT_EQ(refreshed_lines, 2 * 6);
  // How much of the new operator's lowest modes the fine level's coarse space misses:
  // |(1 - P R) x| / |x| for x = M'^-3 b.
  auto M = full(next_d);
  ColorSpinorField x_plain = M->make_field();
  SolverParam bi;
  bi.type = SolverType::bicgstab;
  bi.tol = 1e-11;
  ASSERT_TRUE(solve(*M, nullptr, nullptr, x_plain, lp.b, bi).converged);
  ColorSpinorField low = x_plain.like(x_plain.precision()), rhs = x_plain.like(x_plain.precision());
  low.copy_from(x_plain);
  for (int i = 0; i < 2; ++i) {  // M'^-3 b: the lowest modes, amplified
    rhs.copy_from(low);
    blas::caxpby(Cplx(0), rhs, Cplx(1 / std::sqrt(blas::cdot_norms(rhs, rhs).xx)), rhs);
    ASSERT_TRUE(solve(*M, nullptr, nullptr, low, rhs, bi).converged);
  }
  const auto missed = [&](Multigrid& mg) {
    const Transfer& T = mg.transfer(0);
    ColorSpinorField x = T.vectors()[0].like(Precision::single), px = x.like(Precision::single);
    x.copy_from(low);
    ColorSpinorField c(T.coarse_lattice(), T.coarse_param(Precision::single));
    T.restrict_to(c, x);
    T.prolongate(px, c);
    return rel_diff(x, px);
  };
  for (std::size_t k = 0; k < before.size(); ++k)
    EXPECT_GT(rel_diff(before[k], refreshed->transfer(0).vectors()[k]), 1e-3) << "vector " << k << " was not refreshed";
  const double m_kept = missed(*kept), m_refreshed = missed(*refreshed);
  EXPECT_LT(m_refreshed, m_kept) << "|(1 - P R) x|/|x|: refreshed " << m_refreshed << ", kept " << m_kept;
  const VerifyReport r = refreshed->verify();
  for (int l = 0; l < 2; ++l) EXPECT_LT(r.galerkin[l], 1e-5) << "level " << l;

  ColorSpinorField x_kept = M->make_field(), x_refreshed = M->make_field();
  const SolverStats st_kept = mg_gcr(kept, *M, x_kept, lp.b), st_refreshed = mg_gcr(refreshed, *M, x_refreshed, lp.b);
  ASSERT_TRUE(st_kept.converged);
  ASSERT_TRUE(st_refreshed.converged);
  EXPECT_LT(rel_diff(x_plain, x_refreshed), 1e-8);
  EXPECT_LE(st_refreshed.iterations, st_kept.iterations)
      << "refreshed null vectors " << st_refreshed.iterations << " iterations, kept " << st_kept.iterations;

  expect_error(
      [&] {
        kept->update(full(next_s), nullptr, schur(next_s), nullptr, nullptr, nullptr, {5, -1});
      },
      "-1 refresh steps on level 1: expected 0 or more", "negative refresh steps");
  expect_error(
      [&] {
        kept->update(full(next_s), nullptr, schur(next_s), nullptr, nullptr, nullptr, {5, 5, 5});
      },
      "3 levels' refresh steps given: expected at most 2", "refresh steps for a level without null vectors");
}

INSTANTIATE_TEST_SUITE_P(Backends, MgBackend, ::testing::ValuesIn(available_backends()),
                         [](const auto& info) { return std::string(to_string(info.param)); });

TEST(MgBadInput, Aggregates) {
  activate_backend(Backend::cpu);
  auto lat = std::make_shared<Lattice>(MPI_COMM_SELF, Coords{8, 8, 8, 8});
  const SpinorParam fp{4, 3, Precision::single, Subset::full, Backend::cpu};
  expect_error([&] { Transfer T(lat, fp, {3, 2, 2, 2}, 4, 1, Precision::double_); },
               "extent 3 in dimension 0, which must be at least 2 and divide the local extent 8",
               "an aggregate not dividing the lattice");
  expect_error([&] { Transfer T(lat, fp, {8, 2, 2, 2}, 4, 1, Precision::double_); },
               "coarse local extent 1 in dimension 0", "an odd coarse extent");
  expect_error([&] { Transfer T(lat, fp, {2, 2, 2, 2}, 0, 1, Precision::double_); },
               "0 null vectors; expected at least 1", "zero null vectors");
  MultigridParam h = small_param(3);  // half smoothing off the even-odd system, or half setup without its operator
  h.level[1].smoother_precision = Precision::half;
  h.level[1].smooth_even_odd = false;
  expect_error([&] { check_param(h, *lat); },
               "multigrid level 1: smoother precision half: expected single, or half for MR on the level's even-odd "
               "system",
               "a half-precision smoother on level 1's full system");
  h = small_param(3);
  h.level[1].setup_precision = Precision::half;
  h.level[1].setup_solver = SolverType::mr;
  expect_error([&] { check_param(h, *lat); },
               "multigrid level 1: setup precision half: expected single, or half with a setup solver other than mr",
               "a half-precision MR setup on level 1");
  h = small_param(2);                        // MR has no mixed-precision form: a half setup with it is refused, as is
  h.level[0].setup_solver = SolverType::mr;  // a sloppy operator given to MR
  h.level[0].setup_precision = Precision::half;
  expect_error([&] { check_param(h, *lat); }, "with a setup solver other than mr", "a half-precision MR setup");
  expect_error(
      [&] {
        Problem ps(Backend::cpu, Precision::single, {4, 4, 4, 4}), ph(Backend::cpu, Precision::half, {4, 4, 4, 4});
        auto A = ps.full(), low = ph.full();
        ColorSpinorField b = A->make_field(), x = A->make_field();
        fill_gaussian(b, 3);
        SolverParam sp;
        sp.type = SolverType::mr;
        solve(*A, low.get(), nullptr, x, b, sp);
      },
      "MR iterates in the operator's precision only; it takes no sloppy operator", "MR with a sloppy operator");
  h = small_param(3);
  h.setup_batch = 33;
  expect_error([&] { check_param(h, *lat); }, "multigrid setup batch 33: expected 1 to 32 null vectors solved together",
               "a setup batch above set_max");
  h.setup_batch = 0;
  expect_error([&] { check_param(h, *lat); }, "multigrid setup batch 0: expected 1 to 32", "a setup batch of 0");
  h = small_param(3);
  h.level[1].setup_restrict_iterations = -1;
  expect_error([&] { check_param(h, *lat); },
               "multigrid level 1: -1 setup iterations for restricted starts; expected 0 or more",
               "negative steps for the restricted starts");
  h = small_param(2);
  h.level[0].smoother_precision = Precision::half;
  expect_error(
      [&] {
        Problem ps(Backend::cpu, Precision::single, {8, 8, 8, 8});
        Multigrid mg(ps.full(), h, nullptr, std::make_shared<WilsonCloverLinear>(ps.op, true, SchurType::symmetric, 0));
      },
      "smoothing in half precision needs the fine even-odd operator in single and in half",
      "a half-precision smoother without its operator");
  h = small_param(2);  // the setup solves the even-odd system: its half operator must be even-odd
  h.level[0].setup_precision = Precision::half;
  expect_error(
      [&] {
        Problem ps(Backend::cpu, Precision::single, {8, 8, 8, 8}), ph(Backend::cpu, Precision::half, {8, 8, 8, 8});
        Multigrid mg(ps.full(), h, nullptr, std::make_shared<WilsonCloverLinear>(ps.op, true, SchurType::symmetric, 0),
                     nullptr, ph.full());
      },
      "a setup: the fine operator given acts on half fields; expected one parity of the fine fields in half",
      "a full half-precision operator for the even-odd setup");
  expect_error([&] { parse_coarse_solver_type("lu"); },
               "unknown multigrid coarsest solver 'lu': expected auto, gcr or direct", "an unknown coarsest solver");
  MultigridParam p = small_param(4);  // 8^4 -> 4^4 -> 2^4 -> 1^4: too many levels
  expect_error([&] { check_param(p, *lat); }, "multigrid with 4 levels: level 2 aggregate 2,2,2,2 does not fit",
               "four levels on 8^4 with 2^4 aggregates");
}

}  // namespace
}  // namespace latke::mg
