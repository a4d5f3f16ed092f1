// What the multigrid tests share: a Wilson-clover problem on one rank, the light-quark
// problem the preconditioned-solve tests use, small hierarchies, and the backend fixture.
// One test binary (test_mg) holds test_mg_transfer.cpp, _coarse.cpp, _setup.cpp and _cycle.cpp.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "src/core/error.h"
#include "src/core/mma.h"
#include "src/fields/blas.h"
#include "src/fields/random.h"
#include "operators/coarse/dense_inverse.h"
#include "preconditioners/mg/galerkin.h"
#include "preconditioners/mg/mg.h"
#include "tests/support/backends.h"
#include "tests/support/expect_error.h"
#include "operators/wilson_clover/wilson_clover.h"
#include "operators/wilson_clover/wilson_clover_linear.h"

namespace latke::mg {

using test::available_backends;
using test::expect_error;

using blas::Cplx;

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
  /// The operator restricted to Dirichlet blocks of `block`, in precision q, full or even-odd
  /// (symmetric, parity 0, as LightProblem's hierarchy): what the Schwarz smoother's factory makes.
  std::shared_ptr<LinearOperator> local(const Coords& block, Precision q, bool even_odd = false) const {
    WilsonCloverParam w = param;
    w.block = block;
    w.precision = q;
    return std::make_shared<WilsonCloverLinear>(std::make_shared<WilsonCloverOperator>(lat, links, w), even_odd,
                                                SchurType::symmetric, 0);
  }
};

inline double rel_diff(const ColorSpinorField& a, const ColorSpinorField& b) {
  ColorSpinorField d = a.like(a.precision());
  d.copy_from(a);
  blas::caxpby(Cplx(-1), b, Cplx(1), d);
  return std::sqrt(blas::cdot_norms(d, d).xx / blas::cdot_norms(a, a).xx);
}

inline void random_basis(Transfer& T, std::uint64_t seed) {
  for (std::size_t k = 0; k < T.vectors().size(); ++k) fill_gaussian(T.vectors()[k], seed + k);
  T.orthonormalize();
}

class MgBackend : public ::testing::TestWithParam<Backend> {};

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
inline SolverStats mg_gcr(const std::shared_ptr<Multigrid>& mg, LinearOperator& M, ColorSpinorField& x,
                          const ColorSpinorField& b) {
  MultigridPreconditioner K(mg);
  SolverParam sp;
  sp.type = SolverType::gcr;
  sp.tol = 1e-10;
  sp.restart = 20;
  return solve(M, nullptr, &K, x, b, sp);
}

// GCR on the coarsest level: the direct solve (the default on one rank) is tested on its own
// (test_mg_cycle.cpp), where inverting the 2-level hierarchy's coarsest level would cost seconds per setup.
inline MultigridParam small_param(int levels) {
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

}  // namespace latke::mg
