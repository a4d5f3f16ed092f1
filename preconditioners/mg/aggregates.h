// What the transfer's kernels share (transfer.cpp: P and R; block_ortho.cpp: the block
// orthonormalisation): the aggregates and the basis as kernels see them. Included only by
// those files.
#pragma once

#include <vector>

#include "preconditioners/mg/transfer.h"
#include "src/core/error.h"
#include "src/core/indexing.h"

namespace latke::mg {

/// Aggregates as kernels see them: the fine and coarse local geometries and the block.
struct AggregateMap {
  LocalGeometry fine, coarse;
  int block[4];
  int block_volume;

  /// Fine site i (lexicographic within the block) of the aggregate at coarse coordinates cc.
  LATKE_HOST_DEVICE LATKE_INLINE int fine_site(const int (&cc)[4], int i, int (&fc)[4]) const {
    for (int mu = 0; mu < 4; ++mu) {
      fc[mu] = cc[mu] * block[mu] + i % block[mu];
      i /= block[mu];
    }
    return fine.full_index(fc);
  }
  /// The aggregate (coarse x_cb) holding fine coordinates fc, and its parity.
  LATKE_HOST_DEVICE LATKE_INLINE int coarse_site(const int (&fc)[4], int& parity) const {
    int cc[4];
    for (int mu = 0; mu < 4; ++mu) cc[mu] = fc[mu] / block[mu];
    parity = (cc[0] + cc[1] + cc[2] + cc[3]) & 1;
    return coarse.full_index(cc) >> 1;
  }
};

/// The basis as kernels see it: vector k, parity block b is RealArray at a fixed stride.
template <typename S>
struct BasisView {
  S* data;
  float* norm;
  long block_reals;  ///< reals per parity block of one vector
  int stride, lv;

  LATKE_HOST_DEVICE LATKE_INLINE RealArray<S> at(int k, int b) const {
    RealArray<S> a;
    a.data = data + (2L * k + b) * block_reals;
    a.norm = norm ? norm + (2L * k + b) * stride : nullptr;
    a.stride = stride;
    a.lv = lv;
    return a;
  }
};

template <typename S>
BasisView<S> basis_view(const std::vector<ColorSpinorField>& v) {
  const ColorSpinorField& f = v.front();
  BasisView<S> b;
  b.data = static_cast<S*>(f.block_data(0));
  b.norm = f.block_norm(0);
  b.block_reals = static_cast<long>(f.site_reals()) * f.lattice().volume_cb();
  b.stride = f.lattice().volume_cb();
  b.lv = vector_shift<S>(f.site_reals());
  return b;
}

inline AggregateMap aggregate_map(const Lattice& fine, const Lattice& coarse, const Coords& block) {
  AggregateMap m;
  m.fine = LocalGeometry::of(fine);
  m.coarse = LocalGeometry::of(coarse);
  m.block_volume = 1;
  for (int mu = 0; mu < 4; ++mu) {
    m.block[mu] = block[mu];
    m.block_volume *= block[mu];
  }
  return m;
}

/// f(S{}) for double or single; half is refused naming what.
template <typename F>
void dispatch_full(Precision p, const char* what, F&& f) {
  require(p != Precision::half, what, ": half precision is not supported here (double or single)");
  if (p == Precision::double_)
    f(double{});
  else
    f(float{});
}

}  // namespace latke::mg
