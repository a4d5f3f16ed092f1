// What one application of the Wilson-clover hopping term needs, and the per-precision entry
// points that launch it (instantiated by wilson_clover_{double,single,half}.cpp, so that
// CMake's list of those files is the list of precisions built; wilson_clover_launch_impl.h
// has the bodies).
#pragma once

#include "operators/stencil_faces.h"
#include "operators/wilson_clover/wilson_clover.h"

namespace latke::wilson {

/// DslashRequest::split_dim: the hops across block boundaries in every dimension.
constexpr int split_across_blocks = 4;

/// Everything one hopping-term application needs, precision-independent.
struct DslashRequest : StencilFields {
  const GaugeField* gauge;
  const CloverField* clover;  ///< for clover epilogues
  const WilsonCloverParam* param;
  Epilogue epilogue;
  double a;
  bool dagger;
  /// The stencil split by blocks of these extents (WilsonCloverOperator::apply_split): with
  /// split_dim < 0 only the hops that stay inside a block, with split_across_blocks those that
  /// cross a block boundary in any dimension whose block is not the global extent, else only
  /// those that cross a block boundary in split_dim. nullptr: the whole stencil.
  const int* split_block = nullptr;
  int split_dim = -1;
  /// With split_across_blocks: the sites of the blocks of this colour (global block
  /// coordinates' parity; -1 none) are known to have no hop into the input's support (SAP's
  /// boundary update): left unchanged by the clover_inv_xpay epilogue, zeroed by the plain one,
  /// on one rank (the only two epilogues taken with it there).
  int skip_colour = -1;
  /// With skip_colour: threads over the sites colour by colour where the blocks allow
  /// (BlockBoundaryKernel); false: in site order.
  bool colour_order = true;
  /// A set of this many fields (ColorSpinorField::make_set; out, in and x are field 0 of
  /// theirs), applied in one pass over the links and clover; on a split lattice halo is made
  /// for the whole set (stencil_faces.h: set_face_region).
  int count = 1;
};

template <typename Store>
void launch_dslash(const DslashRequest& rq);
template <typename Store>
void launch_clover(ColorSpinorField& out, const ColorSpinorField& in, const CloverField& clover);

}  // namespace latke::wilson
