// The coarsest level's dense inverse applied (dense_inverse.h): one segmented reduction, a
// row of the inverse per segment. Compiled as CUDA where enabled.
#include "latke/core/complex.h"
#include "latke/core/error.h"
#include "latke/core/launch.h"
#include "preconditioners/mg/dense_inverse.h"

namespace latke::mg {

namespace {

/// Term j of row i of x = A^-1 b: A^-1(i, j) b(j), the row read contiguously.
struct DenseRowTerm {
  const Complex<float>* a;
  const Complex<float>* b;
  int n;
  LATKE_HOST_DEVICE Complex<float> operator()(int i, int j) const {
    const Complex<float> m = a[static_cast<long>(i) * n + j], v = b[j];
    return Complex<float>(m.re * v.re - m.im * v.im, m.re * v.im + m.im * v.re);
  }
};

}  // namespace

void DenseInverse::apply(ColorSpinorField& x, const ColorSpinorField& b) const {
  require(x.precision() == param_.precision && b.precision() == param_.precision &&
              x.bytes() == static_cast<std::size_t>(n_) * sizeof(Complex<float>) && b.bytes() == x.bytes(),
          "multigrid direct coarsest solve: fields not of the operator's shape");
  launch_segmented_reduce(param_.backend,
                          DenseRowTerm{static_cast<const Complex<float>*>(inv_.data()),
                                       static_cast<const Complex<float>*>(b.block_data(0)), n_},
                          n_, n_, static_cast<Complex<float>*>(x.block_data(0)));
}

}  // namespace latke::mg
