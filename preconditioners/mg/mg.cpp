// Adaptive multigrid (mg.h): verification, per-level reports and accessors. The setup:
// mg_setup.cpp; the cycle: mg_cycle.cpp; the parameters: mg_param.cpp; null-space files:
// null_space_file.cpp.
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

VerifyReport Multigrid::verify() {
  VerifyReport rep;
  for (int l = 0; l + 1 < levels(); ++l) {
    Level& L = *levels_[l];
    Level& C = *levels_[l + 1];
    Transfer& T = *L.transfer;
    ColorSpinorField f = L.op->make_field(), g = L.op->make_field(), c1 = C.op->make_field(), c2 = C.op->make_field();
    double worst = 0;
    for (const ColorSpinorField& v : T.vectors()) {
      restrict_down(l, c1, v);
      prolongate_up(l, f, c1);
      blas::caxpby(Cplx(1), v, Cplx(-1), f);
      worst = std::max(worst, std::sqrt(blas::cdot_norms(f, f).xx / blas::cdot_norms(v, v).xx));
    }
    rep.projector.push_back(worst);
    fill_gaussian(c1, 77 + l);
    prolongate_up(l, f, c1);
    restrict_down(l, c2, f);
    blas::caxpby(Cplx(1), c1, Cplx(-1), c2);
    rep.restrict_prolong.push_back(std::sqrt(blas::cdot_norms(c2, c2).xx / blas::cdot_norms(c1, c1).xx));
    // D_c x against R M P x
    C.op->apply(c2, c1);
    L.op->apply(g, f);
    ColorSpinorField c3 = C.op->make_field();
    restrict_down(l, c3, g);
    blas::caxpby(Cplx(1), c2, Cplx(-1), c3);
    rep.galerkin.push_back(std::sqrt(blas::cdot_norms(c3, c3).xx / blas::cdot_norms(c2, c2).xx));
    if (C.schur && l + 2 == levels()) {  // solve D_c x = b through Mhat, check with D_c
      ColorSpinorField bb = C.op->make_field(), xx = C.op->make_field(), bh = C.schur->make_field(),
                       xh = C.schur->make_field();
      fill_gaussian(bb, 91 + l);
      C.schur->prepare(bh, bb);
      coarsest_system_solve(l + 1, *C.schur, xh, bh, 1e-5, 2000);
      C.schur->reconstruct(xx, xh, bb);
      C.op->apply(c2, xx);
      blas::caxpby(Cplx(1), bb, Cplx(-1), c2);
      rep.even_odd.push_back(std::sqrt(blas::cdot_norms(c2, c2).xx / blas::cdot_norms(bb, bb).xx));
    }
  }
  return rep;
}

LevelInfo Multigrid::info(int l) const {
  const Level& L = *levels_[l];
  LevelInfo i;
  i.global = L.op->lattice()->global();
  i.local = L.op->lattice()->local();
  i.components = L.op->field_param().nspin * L.op->field_param().ncolor;
  i.nvec = L.transfer ? L.transfer->nvec() : 0;
  i.bytes = (L.coarse ? L.coarse->bytes() : 0) + (L.coarse_low ? L.coarse_low->bytes() : 0) +
            (L.transfer ? L.transfer->bytes() : 0);
  i.setup_seconds = L.setup_seconds;
  i.op = L.op->describe();
  i.setup_even_odd = L.transfer && setup_on_even_odd(l);
  i.setup_batch = L.transfer ? L.setup_batch : 0;
  i.setup_restricted = L.transfer ? L.setup_restricted : 0;
  int copies = 1;  // gathered here or above: the copies multiply
  for (int k = 1; k <= l; ++k)
    if (levels_[k]->gather) copies *= levels_[k]->gather->copies();
  i.copies = copies > 1 ? copies : 0;
  i.direct = L.direct != nullptr;
  i.direct_ranks = L.direct ? L.direct->ranks() : 0;
  i.condition = L.direct ? L.direct->condition() : 0.0;
  if (L.schwarz)
    i.schwarz = std::string(L.schwarz_even_odd ? "on the even-odd system" : "on the full system") + ", blocks " +
                L.schwarz->block_solves();
  return i;
}

const Transfer& Multigrid::transfer(int l) const {
  require(l >= 0 && l + 1 < levels() && levels_[l]->transfer, "multigrid: no transfer from level ", l);
  return *levels_[l]->transfer;
}

CoarseOperator& Multigrid::coarse_operator(int l) {
  require(l >= 1 && l < levels() && levels_[l]->coarse, "multigrid: no coarse operator on level ", l);
  return *levels_[l]->coarse;
}

void Multigrid::correct_below_level(int l) {
  require(l >= 0 && l + 1 < levels() && levels_.back()->op, "multigrid: no coarse correction below level ", l,
          " (levels 0 to ", levels() - 2, " after setup)");
  coarse_correction(l);
}

Agglomeration* Multigrid::agglomeration(int l) {
  require(l >= 1 && l < levels(), "multigrid: no level ", l, " to be gathered");
  return levels_[l]->gather.get();
}

std::vector<long> Multigrid::work(int l) const {
  const Level& L = *levels_[l];
  return {L.smooth_steps, L.solves,         L.solve_iterations, L.parity_cycles,
          L.set_cycles,   L.graph.launches, L.graph.recordings};
}

std::string MultigridPreconditioner::describe() const {
  std::ostringstream s;
  s << "multigrid, " << mg_->levels() << " levels, " << to_string(mg_->param().cycle);
  return s.str();
}

}  // namespace latke::mg
