// Fused BLAS-1 on color-spinor fields, on either backend, for the native solvers: complex
// coefficients, updates fused with the norms the solvers need next, reductions summed in
// double in a fixed order (deterministic run to run). All fields of one call have the same
// shape and storage precision (double, single or half); arithmetic is in double for double
// storage and in single otherwise. Mixed precision goes through ColorSpinorField::copy_from.
// Flops (per complex number, for reports): caxpby 8, caxpbypcz 14, with a norm +2, a dot 4;
// the multi-vector forms 8 per vector (dot) and 8 per vector (axpy).
#pragma once

#include "latke/core/complex.h"
#include "latke/fields/color_spinor_field.h"

namespace latke::blas {

using Cplx = Complex<double>;

/// @brief y = a x + b y.
void caxpby(Cplx a, const ColorSpinorField& x, Cplx b, ColorSpinorField& y);
/// @brief y = a x + b y; returns |y|^2 summed over all ranks.
double caxpby_norm(Cplx a, const ColorSpinorField& x, Cplx b, ColorSpinorField& y);
/// @brief z = a x + b y + c z.
void caxpbypcz(Cplx a, const ColorSpinorField& x, Cplx b, const ColorSpinorField& y, Cplx c, ColorSpinorField& z);

struct DotNorms {
  Cplx dot;        ///< <x, y> = sum conj(x) y
  double xx = 0;   ///< |x|^2
  double yy = 0;   ///< |y|^2
};
/// @brief <x, y>, |x|^2 and |y|^2 in one pass, summed over all ranks.
DotNorms cdot_norms(const ColorSpinorField& x, const ColorSpinorField& y);

/// Vectors per pass of the multi-vector kernels below (more are done in several passes).
inline constexpr int multi_chunk = 8;

/// @brief out[i] = <x[i], y> for i < n, summed over all ranks: one pass over y and one
/// reduction (and one host synchronisation) per multi_chunk vectors, as Gram-Schmidt needs.
void cdot_multi(const ColorSpinorField* const* x, int n, const ColorSpinorField& y, Cplx* out);
/// @brief y += sum_i a[i] x[i] for i < n, in one pass over y per multi_chunk vectors.
void caxpy_multi(const Cplx* a, const ColorSpinorField* const* x, int n, ColorSpinorField& y);

}  // namespace latke::blas
