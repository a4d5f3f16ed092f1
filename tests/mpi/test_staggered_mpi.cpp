// Tier 4 for the staggered operators: on a process grid they equal the operator on one rank.
// Every rank also builds the whole lattice on MPI_COMM_SELF and compares its own part of the
// result. The grids split every direction (and several at once) into local extents of 4, the
// least the asqtad operator's three-hop Naik term allows; the naive operator is also run on
// local extents of 2, where asqtad must refuse with a clear error. Solves at many masses (both
// strategies, sloppy single) give the single-rank solutions.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <memory>
#include <vector>

#include "src/core/error.h"
#include "src/fields/random.h"
#include "solvers/solvers.h"
#include "operators/staggered/staggered.h"
#include "operators/staggered/staggered_linear.h"
#include "tests/support/mpi_compare.h"

namespace latke {
namespace {

using test::global_rel_diff;
using test::local_part;
using test::mpi_backend;

const Coords global_dims{8, 8, 8, 8};

/// Grids whose split dimensions have local extents of at least 4.
std::vector<Coords> grids_for(int n) {
  switch (n) {
    case 1:
      return {{1, 1, 1, 1}};
    case 2:
      return {{2, 1, 1, 1}, {1, 2, 1, 1}, {1, 1, 2, 1}, {1, 1, 1, 2}};
    case 4:
      return {{1, 1, 2, 2}, {2, 1, 1, 2}, {2, 2, 1, 1}, {1, 2, 2, 1}};
    case 8:
      return {{2, 2, 2, 1}, {1, 2, 2, 2}, {2, 2, 1, 2}, {2, 1, 2, 2}};
    default:
      return {};
  }
}

/// Grids with a local extent of 2 somewhere (naive only).
std::vector<Coords> thin_grids_for(int n) {
  switch (n) {
    case 4:
      return {{4, 1, 1, 1}, {1, 1, 1, 4}};
    case 8:
      return {{4, 1, 1, 2}, {1, 4, 2, 1}};
    default:
      return {};
  }
}

int world_size() {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

StaggeredParam params(StaggeredType t, Precision p, Reconstruct r) {
  StaggeredParam s;
  s.mass = 0.05;
  s.type = t;
  s.u0 = 0.87;
  s.boundary_phase[1] = Complex<double>(std::cos(0.7), std::sin(0.7));
  s.precision = p;
  s.reconstruct = r;
  s.backend = mpi_backend();
  return s;
}

/// The whole lattice, its thin links and asqtad links: made once per process.
struct Whole {
  std::shared_ptr<const Lattice> lat;
  std::vector<Complex<double>> thin;
  StaggeredLinks asqtad;
  static const Whole& get() {
    static Whole w = [] {
      Whole x;
      x.lat = std::make_shared<Lattice>(MPI_COMM_SELF, global_dims);
      x.thin = random_gauge(*x.lat, 2025);
      x.asqtad = asqtad_links(*x.lat, x.thin, AsqtadCoefficients::asqtad(0.87), mpi_backend());
      return x;
    }();
    return w;
  }
};

struct SplitProblem {
  std::shared_ptr<const Lattice> part;
  std::unique_ptr<StaggeredOperator> op_whole, op_part;
  StaggeredParam param;

  SplitProblem(const Coords& grid, StaggeredType t, Precision p, Reconstruct r) : param(params(t, p, r)) {
    const Whole& w = Whole::get();
    part = std::make_shared<Lattice>(MPI_COMM_WORLD, global_dims, grid);
    StaggeredLinks whole_links = t == StaggeredType::naive ? StaggeredLinks{w.thin, {}} : w.asqtad;
    StaggeredLinks part_links{local_part(*part, whole_links.fat, 36), {}};
    if (t == StaggeredType::asqtad) part_links.lng = local_part(*part, whole_links.lng, 36);
    op_whole = std::make_unique<StaggeredOperator>(w.lat, whole_links, param);
    op_part = std::make_unique<StaggeredOperator>(part, part_links, param);
  }
  ColorSpinorField field(const std::shared_ptr<const Lattice>& lat, Subset s) const {
    return ColorSpinorField(lat, SpinorParam{1, 3, param.precision, s, param.backend});
  }
  /// Run f(op, out, in) on both and compare this rank's part.
  template <typename F>
  double compare(Subset in_subset, Subset out_subset, F&& f) {
    const std::shared_ptr<const Lattice>& whole = Whole::get().lat;
    const std::vector<Complex<double>> src = random_spinor(*whole, 77, 1, 3);
    ColorSpinorField in_w = field(whole, in_subset), out_w = field(whole, out_subset);
    ColorSpinorField in_p = field(part, in_subset), out_p = field(part, out_subset);
    in_w.from_lexicographic(src);
    in_p.from_lexicographic(local_part(*part, src, 3));
    f(*op_whole, out_w, in_w);
    f(*op_part, out_p, in_p);
    std::vector<Complex<double>> rw(whole->volume() * 3), rp(part->volume() * 3);
    out_w.to_lexicographic(rw);
    out_p.to_lexicographic(rp);
    return global_rel_diff(rp, local_part(*part, rw, 3));
  }
};

std::string grid_text(const Coords& g) {
  return std::to_string(g[0]) + "x" + std::to_string(g[1]) + "x" + std::to_string(g[2]) + "x" + std::to_string(g[3]);
}

Subset other(Subset s) { return s == Subset::even ? Subset::odd : Subset::even; }

/// Every form in double on the grid: full M and M^dag, the normal operator and the fused
/// dslash with xpay on both parities.
void check_every_form(const Coords& g, StaggeredType t, Reconstruct r) {
  SplitProblem s(g, t, Precision::double_, r);
  const std::string where = "grid " + grid_text(g) + " " + to_string(t) + " recon " + to_string(r);
  for (bool dag : {false, true})
    EXPECT_LE(
        s.compare(Subset::full, Subset::full,
                  [&](StaggeredOperator& op, ColorSpinorField& o, const ColorSpinorField& i) { op.apply(o, i, dag); }),
        1e-13)
        << where << " full, dagger " << dag;
  for (Subset par : {Subset::even, Subset::odd}) {
    EXPECT_LE(s.compare(par, par,
                        [&](StaggeredOperator& op, ColorSpinorField& o, const ColorSpinorField& i) {
                          op.apply_normal(o, i);
                        }),
              1e-13)
        << where << " normal, parity " << (par == Subset::odd);
    EXPECT_LE(s.compare(Subset::full, par,
                        [&](StaggeredOperator& op, ColorSpinorField& o, const ColorSpinorField& i) {
                          const ColorSpinorField x = i.parity(par == Subset::odd), y = i.parity(par != Subset::odd);
                          op.dslash(o, y, -0.6, &x, 1.7);
                        }),
              1e-13)
        << where << " dslash with xpay, parity " << (par == Subset::odd);
  }
}

TEST(StaggeredMpi, FatteningMatchesSingleRank) {
  const Whole& w = Whole::get();
  for (const Coords& g : grids_for(world_size())) {
    Lattice part(MPI_COMM_WORLD, global_dims, g);
    const StaggeredLinks l =
        asqtad_links(part, local_part(part, w.thin, 36), AsqtadCoefficients::asqtad(0.87), mpi_backend());
    EXPECT_LE(global_rel_diff(l.fat, local_part(part, w.asqtad.fat, 36)), 1e-15) << "grid " << grid_text(g);
    EXPECT_LE(global_rel_diff(l.lng, local_part(part, w.asqtad.lng, 36)), 1e-15) << "grid " << grid_text(g);
  }
}

TEST(StaggeredMpi, EveryFormMatchesSingleRankInDouble) {
  const auto grids = grids_for(world_size());
  ASSERT_FALSE(grids.empty()) << "no process grids listed for " << world_size() << " ranks";
  for (const Coords& g : grids) {
    check_every_form(g, StaggeredType::naive, Reconstruct::r12);
    check_every_form(g, StaggeredType::asqtad, Reconstruct::r18);
    check_every_form(g, StaggeredType::asqtad, Reconstruct::r12);
  }
}

TEST(StaggeredMpi, ReducedPrecisionsMatchSingleRank) {
  for (const Coords& g : grids_for(world_size()))
    for (Precision p : {Precision::single, Precision::half}) {
      SplitProblem s(g, StaggeredType::asqtad, p, Reconstruct::r12);
      // Same arithmetic on both sides, so only the order of summation may differ.
      EXPECT_LE(s.compare(Subset::even, Subset::even,
                          [&](StaggeredOperator& op, ColorSpinorField& o, const ColorSpinorField& i) {
                            op.apply_normal(o, i);
                          }),
                p == Precision::single ? 1e-6 : 2e-3)
          << "grid " << grid_text(g) << " " << to_string(p);
    }
}

// Local extents of 2: the naive operator (halo depth 1) works; asqtad refuses clearly.
TEST(StaggeredMpi, LocalExtentTwo) {
  for (const Coords& g : thin_grids_for(world_size())) {
    check_every_form(g, StaggeredType::naive, Reconstruct::r18);
    std::string error;
    try {
      SplitProblem s(g, StaggeredType::asqtad, Precision::double_, Reconstruct::r18);
    } catch (const Error& e) {
      error = e.what();
    }
    int dim = 0;
    while (g[dim] != 4) ++dim;
    EXPECT_NE(error.find("local extent 2 in dimension " + std::to_string(dim) + " (lattice split over 4 ranks there)"),
              std::string::npos)
        << "grid " << grid_text(g) << ": " << error;
  }
}

// Multi-shift CG and the sequential strategy (iterations in single precision) on a process
// grid give the single-rank solutions within what the tolerance allows:
// |x - y| <= (|r_x| + |r_y|) / (4 m^2), the normal operator being >= 4 m^2.
TEST(StaggeredMpi, MultiMassMatchesSingleRank) {
  const auto grids = grids_for(world_size());
  ASSERT_FALSE(grids.empty());
  const Coords g = grids.front();
  const Whole& w = Whole::get();
  auto part = std::make_shared<Lattice>(MPI_COMM_WORLD, global_dims, g);
  const StaggeredLinks part_links{local_part(*part, w.asqtad.fat, 36), local_part(*part, w.asqtad.lng, 36)};
  const std::vector<double> masses{0.1, 0.15, 0.25, 0.4};
  const std::vector<double> shifts = staggered_mass_shifts(masses, 0.05);
  const std::vector<Complex<double>> src = random_spinor(*w.lat, 31, 1, 3);
  struct Side {
    std::shared_ptr<const Lattice> lat;
    std::unique_ptr<StaggeredLinear> a, s;
    std::unique_ptr<ColorSpinorField> b;
  };
  auto side = [&](std::shared_ptr<const Lattice> lat, const StaggeredLinks& l, const std::vector<Complex<double>>& v) {
    Side x{lat, nullptr, nullptr, nullptr};
    x.a = std::make_unique<StaggeredLinear>(
        std::make_shared<StaggeredOperator>(lat, l,
                                            params(StaggeredType::asqtad, Precision::double_, Reconstruct::r18)),
        true, 0);
    x.s = std::make_unique<StaggeredLinear>(
        std::make_shared<StaggeredOperator>(lat, l, params(StaggeredType::asqtad, Precision::single, Reconstruct::r18)),
        true, 0);
    x.b = std::make_unique<ColorSpinorField>(x.a->make_field());
    x.b->from_lexicographic(v);
    return x;
  };
  Side whole = side(w.lat, w.asqtad, src), split = side(part, part_links, local_part(*part, src, 3));
  const double bnorm = std::sqrt(norm2(*whole.b));
  for (MultiShiftStrategy strategy : {MultiShiftStrategy::multishift, MultiShiftStrategy::sequential}) {
    MultiShiftParam p;
    p.strategy = strategy;
    std::vector<ColorSpinorField> xw, xp;
    std::vector<ColorSpinorField*> pw, pp;
    for (std::size_t i = 0; i < masses.size(); ++i)
      xw.push_back(whole.a->make_field()), xp.push_back(split.a->make_field());
    for (std::size_t i = 0; i < masses.size(); ++i) pw.push_back(&xw[i]), pp.push_back(&xp[i]);
    const MultiShiftStats sw = solve_shifted(*whole.a, whole.s.get(), shifts, pw, *whole.b, p);
    const MultiShiftStats sp = solve_shifted(*split.a, split.s.get(), shifts, pp, *split.b, p);
    EXPECT_TRUE(sw.converged && sp.converged) << to_string(strategy);
    EXPECT_NEAR(sw.iterations, sp.iterations, 0.05 * sw.iterations + 2) << to_string(strategy);
    for (std::size_t i = 0; i < masses.size(); ++i) {
      std::vector<Complex<double>> hw(w.lat->volume() * 3), hp(part->volume() * 3);
      xw[i].to_lexicographic(hw);
      xp[i].to_lexicographic(hp);
      const std::vector<Complex<double>> want = local_part(*part, hw, 3);
      double d = 0, dsum = 0;
      for (std::size_t k = 0; k < hp.size(); ++k) d += norm2(hp[k] - want[k]);
      MPI_Allreduce(&d, &dsum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      const double bound =
          (sw.shifts[i].true_residual + sp.shifts[i].true_residual) * bnorm / (4 * masses[i] * masses[i]);
      EXPECT_LE(std::sqrt(dsum), 1.01 * bound)
          << to_string(strategy) << " grid " << grid_text(g) << " mass " << masses[i];
      EXPECT_LE(sp.shifts[i].true_residual, 1.001e-10);
    }
  }
}

}  // namespace
}  // namespace latke
