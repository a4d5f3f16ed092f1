// The Galerkin coarse operator D_c = R M P of one multigrid level, assembled on the backend
// by probing: for each coarse column j and each of ten classes of aggregates, the fine
// operator is applied to P e_j with e_j the unit vector j on the class's aggregates only,
// and R (restricted to the right fine sites) picks out the blocks:
//   - classes "parity 0" and "parity 1" (aggregates of one checkerboard colour): on those
//     aggregates R(M P e_j) = X(a) e_j, since no neighbour of a has the same colour;
//   - classes "coordinate mu even" and "coordinate mu odd": on an aggregate a of the other
//     class, the fine sites on a's last slice in mu receive only the forward hop from
//     a + mu, and those on its first slice only the backward hop from a - mu (every other
//     neighbour of those sites is in a class that is zero), so R over those sites gives
//     Y_{+mu}(a) e_j and Y_{-mu}(a) e_j.
// This needs only M, P and R (so it serves every level, fine Wilson-clover and coarse alike)
// and coarse extents that are even (aggregates at least 2 wide, so the two slices differ):
// 10 x 2 Nvec applications of M.
//
// Latke's own operators (Wilson-clover full, coarse full) can instead hand out their hops
// sorted by where they land (LinearOperator::apply_split): with the input P e_j on every
// aggregate at once, the site term and the hops that stay inside an aggregate go to one field,
// and each direction's hops that leave it to a field of its own (forward hops on an
// aggregate's last slice, backward on its first). R of the first gives column j of X, R over
// the slices of the others column j of Y_{+mu} and Y_{-mu}: 2 Nvec split applications (the
// Wilson-clover one is five masked hopping kernels, the coarse one one stencil) instead of
// 10 x 2 Nvec probes, and the same blocks (the same products, added in another order).
#pragma once

#include <memory>

#include "operators/coarse/coarse_operator.h"
#include "operators/linear_operator.h"
#include "preconditioners/mg/agglomerate.h"
#include "preconditioners/mg/transfer.h"

namespace latke::mg {

/// How galerkin() assembles: from the split stencil when the operator splits, else by probing
/// (automatic); or by probing whatever the operator (for tests that compare the two).
enum class GalerkinAssembly { automatic, probing };

/// @brief D_c = R M P with M the full operator `fine` (on fields of T's fine shape), stored in
/// `precision`; even_odd: also prepare the even-odd form. Probe vectors are in the fine
/// operator's precision (double or single). With `onto` (the coarse level agglomerated onto
/// fewer ranks), the assembled blocks are gathered onto its copy of the level before the even-odd
/// form is prepared (CoarseOperator::gathered).
std::shared_ptr<CoarseOperator> galerkin(LinearOperator& fine, const Transfer& T, Precision precision, bool even_odd,
                                         GalerkinAssembly how = GalerkinAssembly::automatic,
                                         const Agglomeration* onto = nullptr);

}  // namespace latke::mg
