// The coarse operator's blocks as its kernels see them, shared by the files that launch them
// (coarse_operator.cpp: storage and assembly; coarse_even_odd.cpp: X^-1 and Yhat;
// coarse_stencil.cpp: the stencil). Included only by those files.
#pragma once

#include "operators/coarse/coarse_operator.h"
#include "src/core/error.h"
#include "src/core/memory.h"

namespace latke::mg {

constexpr int n_blocks = CoarseOperator::n_blocks;


/// The blocks of both parities as kernels see them (column-major N x N complex blocks).
template <typename S>
struct BlockView {
  S* data = nullptr;
  float* scale = nullptr;  ///< half: largest |re|, |im| of each block
  int n = 0, vcb = 0;

  LATKE_HOST_DEVICE LATKE_INLINE long block(int parity, int x, int d) const {
    return (static_cast<long>(parity) * vcb + x) * n_blocks + d;
  }
  template <typename T>
  LATKE_HOST_DEVICE LATKE_INLINE Complex<T> get(long blk, int col, int row) const {
    const long i = 2 * (blk * n * n + static_cast<long>(col) * n + row);
    if constexpr (sizeof(S) == 2) {
      const T s = static_cast<T>(scale[blk]) * (T(1) / T(fixed_max));
      return Complex<T>(static_cast<T>(from_fixed(data[i])) * s, static_cast<T>(from_fixed(data[i + 1])) * s);
    } else {
      return Complex<T>(static_cast<T>(data[i]), static_cast<T>(data[i + 1]));
    }
  }
  template <typename T>
  LATKE_HOST_DEVICE LATKE_INLINE void set(long blk, int col, int row, Complex<T> z) const {
    static_assert(sizeof(S) != 2, "half blocks are written by the scaling kernel");
    const long i = 2 * (blk * n * n + static_cast<long>(col) * n + row);
    data[i] = static_cast<S>(z.re);
    data[i + 1] = static_cast<S>(z.im);
  }
};

template <typename S>
BlockView<S> view(const Buffer& data, const Buffer& scale, int n, int vcb) {
  BlockView<S> v;
  v.data = static_cast<S*>(data.data());
  v.scale = static_cast<float*>(scale.data());
  v.n = n;
  v.vcb = vcb;
  return v;
}

template <typename F>
void dispatch_vector(Precision p, F&& f) {
  require(p != Precision::half, "coarse-grid vectors are double or single, not half");
  if (p == Precision::double_)
    f(double{});
  else
    f(float{});
}

}  // namespace latke::mg
