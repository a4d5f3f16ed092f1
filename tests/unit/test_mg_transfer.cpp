// Adaptive multigrid on every backend this machine has (label mg): the transfer: R P = 1, P R a
// projector onto the basis, on one parity as on the full lattice, and the block
// orthonormalization; bad aggregates, null-vector and level counts. The backends are
// instantiated here for the tests of every test_mg_*.cpp.
#include "tests/unit/mg_test_support.h"

namespace latke::mg {
namespace {

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

// R and P of a set of fields (restrict_set, prolongate_set: the set cycle's transfers) against
// restrict_to and prolongate field by field: for a Wilson fine level with a half and a single
// basis (the set kernels, with groups of fields that the set does not fill), on one parity and
// on the full lattice, in single and double; and for a coarse-shaped level (the one-field
// kernels in one launch for the set), with a single and a half basis, fields in single and
// double, full and of one parity.
TEST_P(MgBackend, TransferOfASet) {
  struct Case {
    int nspin, ncolor;
    Precision packed, fields;
    bool parity;
  };
  const int n = 7;
  for (const Case& cs :
       {Case{4, 3, Precision::half, Precision::single, true}, Case{4, 3, Precision::single, Precision::double_, false},
        Case{4, 3, Precision::single, Precision::single, false},
        Case{2, 4, Precision::single, Precision::single, false}, Case{2, 4, Precision::half, Precision::single, true},
        Case{2, 6, Precision::single, Precision::double_, false}}) {
    SCOPED_TRACE(::testing::Message() << cs.nspin << " spins, basis " << to_string(cs.packed) << ", fields "
                                      << to_string(cs.fields) << (cs.parity ? ", odd parity" : ", full"));
    Problem pr(GetParam(), Precision::single, {4, 4, 8, 8});
    Transfer T(pr.lat, SpinorParam{cs.nspin, cs.ncolor, Precision::single, Subset::full, pr.backend}, {2, 2, 4, 2}, 3,
               1, cs.packed);
    random_basis(T, 5);
    SpinorParam fp = T.fine_param(cs.fields);
    if (cs.parity) fp.subset = Subset::odd;
    std::vector<ColorSpinorField> f = ColorSpinorField::make_set(pr.lat, fp, n),
                                  pf = ColorSpinorField::make_set(pr.lat, fp, n),
                                  c = ColorSpinorField::make_set(T.coarse_lattice(), T.coarse_param(cs.fields), n),
                                  rc = ColorSpinorField::make_set(T.coarse_lattice(), T.coarse_param(cs.fields), n);
    for (int k = 0; k < n; ++k) {
      fill_gaussian(f[k], 60 + k);
      fill_gaussian(c[k], 80 + k);
    }
    T.restrict_set(rc, f);
    T.prolongate_set(pf, c);
    for (int k = 0; k < n; ++k) {
      ColorSpinorField r1 = rc[k].like(cs.fields), p1 = pf[k].like(cs.fields);
      T.restrict_to(r1, f[k]);
      T.prolongate(p1, c[k]);
      EXPECT_LT(rel_diff(r1, rc[k]), cs.fields == Precision::double_ ? 1e-12 : 1e-6) << "field " << k;
      EXPECT_LT(rel_diff(p1, pf[k]), cs.fields == Precision::double_ ? 1e-12 : 1e-6) << "field " << k;
    }
  }
}

// The Galerkin product's R over a batch of columns (restrict_split_set) against restrict_split
// column by column: for a Wilson fine level (one pass over the basis for the batch) with a half
// and a single basis, fields in single and double, more vectors than one block of the kernel's
// threads and not a multiple of it; and for a coarse-shaped level (column by column). The faces
// are random on every site: R reads each only on its aggregate's two slices. With 96 vectors
// a team's shared memory holds the sums of fewer than 8 columns: the set goes in parts.
TEST_P(MgBackend, RestrictSplitOfASet) {
  struct Case {
    int nspin, ncolor, nvec;
    Precision packed, fields;
    int n;
  };
  for (const Case& cs :
       {Case{4, 3, 7, Precision::single, Precision::single, 3}, Case{4, 3, 6, Precision::half, Precision::single, 3},
        Case{4, 3, 5, Precision::single, Precision::double_, 3}, Case{2, 4, 3, Precision::single, Precision::single, 3},
        Case{4, 3, 96, Precision::single, Precision::single, 8}}) {
    const int n = cs.n;
    SCOPED_TRACE(::testing::Message() << cs.nspin << " spins, " << cs.nvec << " vectors, basis " << to_string(cs.packed)
                                      << ", fields " << to_string(cs.fields) << ", " << n << " columns");
    Problem pr(GetParam(), Precision::single, {4, 4, 8, 8});
    Transfer T(pr.lat, SpinorParam{cs.nspin, cs.ncolor, Precision::single, Subset::full, pr.backend}, {2, 2, 4, 2},
               cs.nvec, 1, cs.packed);
    random_basis(T, 7);
    const SpinorParam fp = T.fine_param(cs.fields), cp = T.coarse_param(cs.fields);
    std::vector<ColorSpinorField> site = ColorSpinorField::make_set(pr.lat, fp, n),
                                  face = ColorSpinorField::make_set(pr.lat, fp, 4 * n),
                                  got = ColorSpinorField::make_set(T.coarse_lattice(), cp, 9 * n);
    for (int c = 0; c < n; ++c) fill_gaussian(site[c], 90 + c);
    for (int i = 0; i < 4 * n; ++i) fill_gaussian(face[i], 100 + i);
    T.restrict_split_set(got, site, face);
    const double tol = cs.fields == Precision::double_ && cs.packed != Precision::half ? 1e-12 : 1e-6;
    for (int c = 0; c < n; ++c) {
      std::vector<ColorSpinorField> want = ColorSpinorField::make_set(T.coarse_lattice(), cp, 9),
                                    faces(face.begin() + 4 * c, face.begin() + 4 * c + 4);
      T.restrict_split(want, site[c], faces);
      for (int b = 0; b < 9; ++b)
        EXPECT_LT(rel_diff(want[b], got[9 * c + b]), tol) << "column " << c << ", block " << b;
    }
  }
}

// orthonormalize() is Gram-Schmidt within every (aggregate, chirality): against modified
// Gram-Schmidt (twice, in double) on the host, for a Wilson fine level and a coarse-shaped one
// (2 spins, 5 colors), with more vectors than one tile and one output chunk of the kernels, a
// single-precision basis, the fine level's 24 vectors and 96. A basis that is not of full rank
// on its aggregates (a vector that vanishes, or repeats another) is refused, naming how many
// (aggregate, chirality) pairs.
TEST_P(MgBackend, OrthonormalizeIsGramSchmidt) {
  Problem pr(GetParam(), Precision::double_, {4, 4, 4, 8});
  const Coords block{2, 2, 2, 4};
  struct Case {
    int nspin, ncolor, nvec;
    Precision p;
    double tol;
  };
  for (const Case& cs : {Case{4, 3, 10, Precision::double_, 1e-12}, Case{2, 5, 9, Precision::double_, 1e-12},
                         Case{4, 3, 10, Precision::single, 2e-5}, Case{4, 3, 24, Precision::double_, 1e-12},
                         Case{4, 3, 96, Precision::double_, 1e-11}}) {
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
