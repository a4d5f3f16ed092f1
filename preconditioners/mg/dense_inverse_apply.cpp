// The coarsest level's dense inverse applied (dense_inverse.h): a matrix-vector product in
// two passes. Compiled as CUDA where enabled.
#include "latke/core/complex.h"
#include "latke/core/error.h"
#include "latke/core/launch.h"
#include "preconditioners/mg/dense_inverse.h"

namespace latke::mg {

namespace {

/// parts[c][i] = sum over j of chunk c of A(i, j) in(j): one thread per (row, chunk), rows
/// fastest, so that a warp reads consecutive entries of the column-major matrix.
struct DenseMatvecPartsKernel {
  const Complex<float>* a;
  const Complex<float>* in[2];
  Complex<float>* parts;
  int n, per_block, chunks;
  LATKE_HOST_DEVICE void operator()(int idx, int) const {
    const int i = idx % n, c = idx / n;
    const int j0 = static_cast<int>(static_cast<long>(n) * c / chunks),
              j1 = static_cast<int>(static_cast<long>(n) * (c + 1) / chunks);
    float re = 0, im = 0;
    for (int j = j0; j < j1; ++j) {
      const Complex<float> m = a[static_cast<long>(j) * n + i];
      const Complex<float> v = in[j / per_block][j % per_block];
      re += m.re * v.re - m.im * v.im;
      im += m.re * v.im + m.im * v.re;
    }
    parts[static_cast<long>(c) * n + i] = Complex<float>(re, im);
  }
};

struct DenseSumKernel {
  const Complex<float>* parts;
  Complex<float>* out[2];
  int n, per_block, chunks;
  LATKE_HOST_DEVICE void operator()(int i, int) const {
    Complex<float> s;
    for (int c = 0; c < chunks; ++c) s += parts[static_cast<long>(c) * n + i];
    out[i / per_block][i % per_block] = s;
  }
};

}  // namespace

void DenseInverse::apply(ColorSpinorField& x, const ColorSpinorField& b) const {
  require(x.param().precision == param_.precision && b.param().precision == param_.precision &&
              x.n_parity() * x.lattice().volume_cb() * x.site_reals() / 2 == n_ &&
              b.n_parity() * b.lattice().volume_cb() * b.site_reals() / 2 == n_,
          "multigrid direct coarsest solve: fields not of the operator's shape");
  const auto* a = static_cast<const Complex<float>*>(inv_.data());
  auto* parts = static_cast<Complex<float>*>(parts_.data());
  const int blocks = b.n_parity();
  const Complex<float>* in[2] = {static_cast<const Complex<float>*>(b.block_data(0)),
                                 static_cast<const Complex<float>*>(b.block_data(blocks - 1))};
  Complex<float>* out[2] = {static_cast<Complex<float>*>(x.block_data(0)),
                            static_cast<Complex<float>*>(x.block_data(blocks - 1))};
  launch(param_.backend, DenseMatvecPartsKernel{a, {in[0], in[1]}, parts, n_, per_block_, chunks_}, {n_ * chunks_});
  launch(param_.backend, DenseSumKernel{parts, {out[0], out[1]}, n_, per_block_, chunks_}, {n_});
}

}  // namespace latke::mg
