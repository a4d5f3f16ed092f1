// Assembling the Galerkin coarse operator (galerkin.h): from the operator's split stencil, or
// by probing.
#include "preconditioners/mg/galerkin.h"

#include <algorithm>
#include <vector>

#include "operators/coarse/probe_classes.h"
#include "src/core/backend.h"
#include "src/core/error.h"

namespace latke::mg {

namespace {

/// The blocks from 2 Nvec split applications (the operator splits its stencil). The columns go
/// in batches of up to 8 (as many as a quarter of the free memory holds, five fields of the
/// level each): each column's split application alone, then R of the batch's outputs
/// (Transfer::restrict_split_set: on a Wilson fine level one pass over the basis for the batch,
/// which otherwise each column reads whole; elsewhere column by column).
void assemble_split(LinearOperator& fine, const Transfer& T, CoarseOperator& op) {
  const SpinorParam fp = fine.field_param();
  ColorSpinorField f = fine.make_field();
  const std::size_t spare = free_memory(fp.backend) / 4;
  const int batch = static_cast<int>(std::clamp<std::size_t>(spare / (5 * f.bytes()), 1, std::min(8, op.n())));
  std::vector<ColorSpinorField> site = ColorSpinorField::make_set(fine.lattice(), fp, batch),
                                face = ColorSpinorField::make_set(fine.lattice(), fp, 4 * batch);
  // The nine blocks' columns: the hops (2 mu: forward, 2 mu + 1: backward) and the site block (8).
  std::vector<ColorSpinorField> blocks =
      ColorSpinorField::make_set(T.coarse_lattice(), T.coarse_param(fp.precision), 9 * batch);
  for (int c0 = 0; c0 < op.n(); c0 += batch) {
    const int m = std::min(batch, op.n() - c0);
    for (int c = 0; c < m; ++c) {
      ColorSpinorField* const faces[4] = {&face[4 * c], &face[4 * c + 1], &face[4 * c + 2], &face[4 * c + 3]};
      T.prolongate_unit(f, c0 + c, probe_all);
      fine.apply_split(site[c], faces, f, T.block());
    }
    std::vector<ColorSpinorField> s(site.begin(), site.begin() + m), fc(face.begin(), face.begin() + 4 * m),
        out(blocks.begin(), blocks.begin() + 9 * m);
    T.restrict_split_set(out, s, fc);  // one pass over the basis for the batch's outputs
    for (int c = 0; c < m; ++c)
      for (int b = 0; b < 9; ++b) op.set_column(b, c0 + c, out[9 * c + b], probe_all);
  }
}

/// The blocks from 10 x 2 Nvec probes (any operator).
void assemble_by_probing(LinearOperator& fine, const Transfer& T, CoarseOperator& op) {
  const Precision vp = fine.field_param().precision;
  ColorSpinorField rc(T.coarse_lattice(), T.coarse_param(vp)), rc2(T.coarse_lattice(), T.coarse_param(vp));
  ColorSpinorField f = fine.make_field(), g = fine.make_field();
  auto probe = [&](int col, int cls) {
    T.prolongate_unit(f, col, cls);
    fine.apply(g, f);
  };
  for (int col = 0; col < op.n(); ++col) {
    for (int cls = 0; cls < 2; ++cls) {  // site blocks X: aggregates of one colour
      probe(col, cls);
      T.restrict_to(rc, g);
      op.set_column(8, col, rc, cls);
    }
    for (int mu = 0; mu < 4; ++mu) {
      for (int q = 0; q < 2; ++q) {  // sources: coordinate mu of parity q; targets: the others
        probe(col, 2 + 2 * mu + q);
        const int target = 2 + 2 * mu + (1 - q);
        // last slice: the forward hop into a + mu; first slice: the backward hop into a - mu
        T.restrict_faces(rc, rc2, g, mu);
        op.set_column(2 * mu, col, rc, target);
        op.set_column(2 * mu + 1, col, rc2, target);
      }
    }
  }
}

}  // namespace

std::shared_ptr<CoarseOperator> galerkin(LinearOperator& fine, const Transfer& T, Precision precision, bool even_odd,
                                         GalerkinAssembly how, const Agglomeration* onto) {
  const SpinorParam fp = fine.field_param();
  require(fp.subset == Subset::full,
          "multigrid: the coarse operator is built from the full operator of the level above");
  require(fp.precision != Precision::half,
          "multigrid: the coarse operator is assembled from a double or single "
          "precision operator of the level above, not half");
  auto op = std::make_shared<CoarseOperator>(T.coarse_lattice(), T.nvec(), precision, fp.backend);
  if (how == GalerkinAssembly::automatic && fine.splits())
    assemble_split(fine, T, *op);
  else
    assemble_by_probing(fine, T, *op);
  if (onto) op = op->gathered(onto->onto(), onto->group());
  op->finalize(even_odd);
  return op;
}

}  // namespace latke::mg
