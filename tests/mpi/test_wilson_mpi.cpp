// Tier 4: the operator on a process grid equals the operator on one rank. Every rank also
// builds the whole lattice on MPI_COMM_SELF and compares its own part of the result; the
// grids for each rank count split every direction (and several at once).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <memory>
#include <vector>

#include "src/fields/random.h"
#include "tests/support/mpi_compare.h"
#include "operators/wilson_clover/wilson_clover.h"

namespace latke {
namespace {

using test::global_rel_diff;
using test::local_part;
using test::mpi_backend;

const Coords global_dims{8, 4, 4, 8};

std::vector<Coords> grids_for(int n) {
  switch (n) {
    case 1:
      return {{1, 1, 1, 1}};
    case 2:
      return {{2, 1, 1, 1}, {1, 2, 1, 1}, {1, 1, 2, 1}, {1, 1, 1, 2}};
    case 4:
      return {{4, 1, 1, 1}, {1, 1, 1, 4}, {1, 2, 2, 1}, {2, 1, 1, 2}, {1, 1, 2, 2}};
    case 8:
      return {{2, 2, 2, 1}, {1, 2, 2, 2}, {2, 1, 2, 2}, {2, 2, 1, 2}, {4, 1, 1, 2}};
    default:
      return {};
  }
}

WilsonCloverParam params(Backend b, Precision p, Reconstruct r) {
  WilsonCloverParam w;
  w.mass = -0.2;
  w.csw = 1.3;
  w.boundary_phase[1] = Complex<double>(std::cos(0.7), std::sin(0.7));
  w.precision = p;
  w.reconstruct = r;
  w.backend = b;
  return w;
}

struct SplitProblem {
  std::shared_ptr<const Lattice> whole, part;
  std::unique_ptr<WilsonCloverOperator> op_whole, op_part;
  Precision prec;

  /// half_pairs: the split operator's half sets in FP16 pair arithmetic (the whole one's in FP32).
  SplitProblem(const Coords& grid, Precision p, Reconstruct r, bool half_pairs = false) : prec(p) {
    const Backend b = mpi_backend();
    whole = std::make_shared<Lattice>(MPI_COMM_SELF, global_dims);
    part = std::make_shared<Lattice>(MPI_COMM_WORLD, global_dims, grid);
    const std::vector<Complex<double>> links = random_gauge(*whole, 2024);
    op_whole = std::make_unique<WilsonCloverOperator>(whole, links, params(b, p, r));
    WilsonCloverParam pp = params(b, p, r);
    pp.half_pairs = half_pairs;
    op_part = std::make_unique<WilsonCloverOperator>(part, local_part(*part, links, 36), pp);
  }
  ColorSpinorField field(const std::shared_ptr<const Lattice>& lat, Subset s) const {
    return ColorSpinorField(lat, SpinorParam{4, 3, prec, s, op_whole->param().backend});
  }
  /// Run f(op, out, in) on both and compare this rank's part.
  template <typename F>
  double compare(Subset in_subset, Subset out_subset, F&& f) {
    const std::vector<Complex<double>> src = random_spinor(*whole, 77);
    ColorSpinorField in_w = field(whole, in_subset), out_w = field(whole, out_subset);
    ColorSpinorField in_p = field(part, in_subset), out_p = field(part, out_subset);
    in_w.from_lexicographic(src);
    in_p.from_lexicographic(local_part(*part, src, 12));
    f(*op_whole, out_w, in_w);
    f(*op_part, out_p, in_p);
    std::vector<Complex<double>> rw(whole->volume() * 12), rp(part->volume() * 12);
    out_w.to_lexicographic(rw);
    out_p.to_lexicographic(rp);
    return global_rel_diff(rp, local_part(*part, rw, 12));
  }
};

std::string grid_text(const Coords& g) {
  return std::to_string(g[0]) + "x" + std::to_string(g[1]) + "x" + std::to_string(g[2]) + "x" + std::to_string(g[3]);
}

TEST(WilsonMpi, EveryFormMatchesSingleRankInDouble) {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const auto grids = grids_for(n);
  ASSERT_FALSE(grids.empty()) << "no process grids listed for " << n << " ranks";
  for (const Coords& g : grids)
    for (Reconstruct r : {Reconstruct::r18, Reconstruct::r12}) {
      SplitProblem s(g, Precision::double_, r);
      const std::string where = "grid " + grid_text(g) + " recon " + to_string(r);
      for (bool dag : {false, true}) {
        EXPECT_LE(s.compare(Subset::full, Subset::full,
                            [&](WilsonCloverOperator& op, ColorSpinorField& o, const ColorSpinorField& i) {
                              op.apply(o, i, dag);
                            }),
                  1e-13)
            << where << " full, dagger " << dag;
        for (SchurType t : {SchurType::asymmetric, SchurType::symmetric})
          for (Subset par : {Subset::even, Subset::odd})
            EXPECT_LE(s.compare(par, par,
                                [&](WilsonCloverOperator& op, ColorSpinorField& o, const ColorSpinorField& i) {
                                  op.apply_schur(o, i, t, dag);
                                }),
                      1e-13)
                << where << " " << to_string(t) << " parity " << (par == Subset::odd) << " dagger " << dag;
      }
    }
}

TEST(WilsonMpi, ReducedPrecisionsMatchSingleRank) {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  for (const Coords& g : grids_for(n))
    for (Precision p : {Precision::single, Precision::half}) {
      SplitProblem s(g, p, Reconstruct::r12);
      // Same arithmetic on both sides, so only the order of summation may differ.
      EXPECT_LE(s.compare(Subset::even, Subset::even,
                          [&](WilsonCloverOperator& op, ColorSpinorField& o, const ColorSpinorField& i) {
                            op.apply_schur(o, i, SchurType::symmetric, false);
                          }),
                p == Precision::single ? 1e-6 : 2e-3)
          << "grid " << grid_text(g) << " " << to_string(p);
    }
}

// A set of fields applied in one pass on the grid (the set's faces in one exchange, its
// boundary sites field by field) equals each field applied alone on one rank, in every
// precision (half also with the interior in FP16 pairs, each rank scaling by its own sites),
// both Schur forms: the multigrid setup's null vectors go through it.
TEST(WilsonMpi, SetsOnTheGridMatchSingleRank) {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const std::pair<Precision, bool> forms[] = {
      {Precision::double_, false}, {Precision::single, false}, {Precision::half, false}, {Precision::half, true}};
  for (const Coords& g : grids_for(n))
    for (const auto& [p, pairs] : forms) {
      SplitProblem s(g, p, Reconstruct::r12, pairs);
      ASSERT_TRUE(s.op_part->applies_sets());
      const int count = 5;
      const SpinorParam sp{4, 3, p, Subset::odd, mpi_backend()};
      for (SchurType t : {SchurType::asymmetric, SchurType::symmetric}) {
        std::vector<ColorSpinorField> in = ColorSpinorField::make_set(s.part, sp, count),
                                      out = ColorSpinorField::make_set(s.part, sp, count);
        for (int k = 0; k < count; ++k)
          in[k].from_lexicographic(local_part(*s.part, random_spinor(*s.whole, 300 + k), 12));
        s.op_part->apply_schur_set(out, in, t);
        for (int k = 0; k < count; ++k) {
          ColorSpinorField iw = s.field(s.whole, Subset::odd), ow = s.field(s.whole, Subset::odd);
          iw.from_lexicographic(random_spinor(*s.whole, 300 + k));
          s.op_whole->apply_schur(ow, iw, t, false);
          std::vector<Complex<double>> rw, rp;
          ow.to_lexicographic(rw);
          out[k].to_lexicographic(rp);
          EXPECT_LE(global_rel_diff(rp, local_part(*s.part, rw, 12)),
                    p == Precision::double_ ? 1e-13 : p == Precision::single ? 1e-6 : 2e-3)
              << "grid " << grid_text(g) << " " << to_string(p) << (pairs ? " (FP16 pairs) " : " ") << to_string(t)
              << " field " << k;
        }
      }
    }
}

}  // namespace
}  // namespace latke
