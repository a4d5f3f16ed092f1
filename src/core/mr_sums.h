// The sums of one minimal-residual step, <Ar, r> and |Ar|^2, accumulated in double: what the
// Schwarz block solvers (streamed and on chip) reduce per block.
#pragma once

#include "src/core/macros.h"

namespace latke {

struct MrSums {
  double re = 0, im = 0, nn = 0;  ///< Re and Im of <Ar, r> = sum conj(Ar) r; |Ar|^2
  LATKE_HOST_DEVICE MrSums& operator+=(const MrSums& o) {
    re += o.re, im += o.im, nn += o.nn;
    return *this;
  }
};

}  // namespace latke
