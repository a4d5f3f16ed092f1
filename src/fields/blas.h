// Fused BLAS-1 on color-spinor fields, on either backend, for the native solvers: complex
// coefficients, updates fused with the norms the solvers need next, reductions summed in
// double in a fixed order (deterministic run to run). All fields of one call have the same
// shape and storage precision (double, single or half); arithmetic is in double for double
// storage and in single otherwise. Mixed precision goes through ColorSpinorField::copy_from,
// except for the accumulators (caxpy_promote, caxpbypz_promote, multishift_update's solutions).
// Flops (per complex number, for reports): caxpby 8, caxpbypcz 14, with a norm +2, a dot 4;
// the multi-vector forms 8 per vector (dot) and 8 per vector (axpy); multishift_update 10 per shift;
// the set forms as their one-field forms, per field.
#pragma once

#include <vector>

#include "src/core/complex.h"
#include "src/fields/color_spinor_field.h"

namespace latke::blas {

using Cplx = Complex<double>;

/// @brief y = a x + b y.
void caxpby(Cplx a, const ColorSpinorField& x, Cplx b, ColorSpinorField& y);
/// @brief y = a x + b y; returns |y|^2 summed over all ranks.
double caxpby_norm(Cplx a, const ColorSpinorField& x, Cplx b, ColorSpinorField& y);
/// @brief z = a x + b y + c z.
void caxpbypcz(Cplx a, const ColorSpinorField& x, Cplx b, const ColorSpinorField& y, Cplx c, ColorSpinorField& z);

/// @brief z += a x, where z may be stored more precisely than x (same shape otherwise): the
/// partial solution of a mixed-precision solver, kept in single when its updates are in half.
void caxpy_promote(Cplx a, const ColorSpinorField& x, ColorSpinorField& z);
/// @brief z += a x + b y, x and y in one precision and z in the same or a higher one.
void caxpbypz_promote(Cplx a, const ColorSpinorField& x, Cplx b, const ColorSpinorField& y, ColorSpinorField& z);

struct DotNorms {
  Cplx dot;        ///< <x, y> = sum conj(x) y
  double xx = 0;   ///< |x|^2
  double yy = 0;   ///< |y|^2
};
/// @brief <x, y>, |x|^2 and |y|^2 in one pass, summed over all ranks.
DotNorms cdot_norms(const ColorSpinorField& x, const ColorSpinorField& y);

/// The sums of cdot_norms as a reduction leaves them in the backend's memory.
struct DotNormSum {
  double re = 0, im = 0, xx = 0, yy = 0;  ///< <x, y> = sum conj(x) y; |x|^2; |y|^2
  LATKE_HOST_DEVICE DotNormSum& operator+=(const DotNormSum& o) {
    re += o.re, im += o.im, xx += o.xx, yy += o.yy;
    return *this;
  }
};
/// @brief Minimal-residual steps with no host synchronisation, for fields of a one-rank
/// lattice (a global sum would need the host): cdot_norms_to(s, r, sums) leaves <s, r>, |s|^2
/// and |r|^2 of s = A r in `sums` (memory of the fields' backend: device memory for CUDA), and
/// mr_update_from reads them there: x += a r and, where update_r, r -= a s, with a = omega
/// <s, r> / |s|^2 (0 where |s|^2 is not positive, which leaves x and r as they are). The host
/// only queues the kernels, so it can run ahead of the device through a cycle of them.
void cdot_norms_to(const ColorSpinorField& x, const ColorSpinorField& y, DotNormSum* sums);
void mr_update_from(double omega, const DotNormSum* sums, ColorSpinorField& r, const ColorSpinorField& s,
                    ColorSpinorField& x, bool update_r);
/// @brief y = a x + b y, then <z, y>, |z|^2 and |y|^2 of the new y, in one pass and one host
/// synchronisation (BiCGstab's residual update with the next iteration's <rhat, r>). The sums
/// are of y as computed, before it is rounded to its storage.
DotNorms caxpby_cdot_norms(Cplx a, const ColorSpinorField& x, Cplx b, ColorSpinorField& y, const ColorSpinorField& z);

/// Vectors per pass of the multi-vector kernels below (more are done in several passes).
inline constexpr int multi_chunk = 8;

/// @brief out[i] = <x[i], y> for i < n, summed over all ranks: one pass over y and one
/// reduction (and one host synchronisation) per multi_chunk vectors, as Gram-Schmidt needs.
void cdot_multi(const ColorSpinorField* const* x, int n, const ColorSpinorField& y, Cplx* out);
/// @brief xy[i] = <x[i], y> and xz[i] = <x[i], z> for i < n, summed over all ranks in one global
/// sum: one pass over y and z per multi_chunk / 2 vectors (GCR's Gram-Schmidt products and its
/// new direction's overlap with the residual at once).
void cdot_multi_pair(const ColorSpinorField* const* x, int n, const ColorSpinorField& y, const ColorSpinorField& z,
                     Cplx* xy, Cplx* xz);
/// @brief y += sum_i a[i] x[i] for i < n, in one pass over y per multi_chunk vectors; y may be
/// stored more precisely than the x (an accumulator, as for caxpy_promote).
void caxpy_multi(const Cplx* a, const ColorSpinorField* const* x, int n, ColorSpinorField& y);

/// Outputs per pass of combine_multi.
inline constexpr int combine_chunk = 8;
/// @brief y[l] = sum_i a[l n + i] x[i] for i < n and l < m (y overwritten; no y may be an x):
/// many combinations of the same vectors at once, each pass reading multi_chunk x once for
/// combine_chunk outputs (GCR's deflated restarts form the kept directions so). Single and
/// double fields; others are formed output by output with caxpy_multi.
void combine_multi(const Cplx* a, const ColorSpinorField* const* x, int n, ColorSpinorField* const* y, int m);

/// Fields per call of the set forms below.
inline constexpr int set_max = 32;
/// @brief Multi-right-hand-side form: for every field k of sets made by
/// ColorSpinorField::make_set (one shape, at most set_max fields), z_k = a[k] x_k + b[k] y_k +
/// c[k] z_k (no y term when y is null), in one pass over the sets; with norms non-null,
/// norms[k] = |z_k|^2 summed over all ranks (one host synchronisation). x and y share a
/// precision; z may be stored more precisely (an accumulator). Half-precision sets and
/// accumulators: Wilson or staggered fields only.
void caxpbypcz_set(const Cplx* a, const std::vector<ColorSpinorField>& x, const Cplx* b,
                   const std::vector<ColorSpinorField>* y, const Cplx* c, std::vector<ColorSpinorField>& z,
                   double* norms = nullptr);
/// @brief One minimal-residual step's two updates in one pass: x += a r and r -= a s (s = A r),
/// fields of one shape and precision.
void mr_update(Cplx a, ColorSpinorField& r, const ColorSpinorField& s, ColorSpinorField& x);
/// Whether fields like f may meet fields of another precision in the set forms (caxpby_set_to's
/// w, MrSetEnds::into, caxpbypcz_set's accumulator; half sets): Wilson and staggered sites.
bool mixed_precision_sets(const ColorSpinorField& f);
/// @brief w_k = a[k] x_k + b[k] y_k over sets of Wilson or staggered fields, x and y of one
/// precision and w of any (a smoother's residual formed in single and stored in half, in one
/// pass). w is written, not read.
void caxpby_set_to(const Cplx* a, const std::vector<ColorSpinorField>& x, const Cplx* b,
                   const std::vector<ColorSpinorField>& y, std::vector<ColorSpinorField>& w);
/// Where a set's minimal-residual update stands among a smoother's steps, so that the first and
/// the last fuse with the passes around them. x_zero: x is zero before the update, so it is
/// written, not read (no zeroing pass). into (the last update: r is not updated): the update's x
/// is added to these fields, into_k += x_k + a[k] r_k, and x is not written (no copy out of the
/// smoother's precision, no separate sum); a set laid out as x, as precise or more (Wilson or
/// staggered fields where more).
struct MrSetEnds {
  bool x_zero = false;
  std::vector<ColorSpinorField>* into = nullptr;
};
/// @brief One minimal-residual step's two updates over sets of one shape and precision, in one
/// pass: x_k += a[k] r_k and r_k -= a[k] s_k (s_k = A r_k); with ends.into, the last update as
/// MrSetEnds says. Half-precision sets: Wilson or staggered fields only.
void mr_update_set(const Cplx* a, std::vector<ColorSpinorField>& r, const std::vector<ColorSpinorField>& s,
                   std::vector<ColorSpinorField>& x, MrSetEnds ends = {});
/// @brief out[k] = <x_k, y_k>, |x_k|^2, |y_k|^2 for the fields of two sets of one precision (as
/// caxpbypcz_set), summed over all ranks: one pass and one host synchronisation for the whole set.
void cdot_norms_set(const std::vector<ColorSpinorField>& x, const std::vector<ColorSpinorField>& y, DotNorms* out);
/// @brief The set forms of cdot_norms_to and mr_update_from (one-rank lattices): sums[k] for
/// field k, left in the backend's memory and read there by the update.
void cdot_norms_set_to(const std::vector<ColorSpinorField>& x, const std::vector<ColorSpinorField>& y,
                       DotNormSum* sums);
void mr_update_set_from(double omega, const DotNormSum* sums, std::vector<ColorSpinorField>& r,
                        const std::vector<ColorSpinorField>& s, std::vector<ColorSpinorField>& x, bool update_r,
                        MrSetEnds ends = {});

/// @brief cdot_multi_pair for a set of systems (GCR over a set): x[i] are n sets of directions
/// laid out as y and z (make_set; single or double, one precision); for every field k whose bit
/// is set in `active`, xy[k n + i] = <x[i][k], y[k]> and xz[k n + i] = <x[i][k], z[k]>, summed
/// over all ranks. One pass over the active fields and one host synchronisation per
/// multi_chunk / 2 directions for the whole set, and one global sum; the other fields are not read.
void cdot_multi_pair_set(const std::vector<ColorSpinorField>* const* x, int n, const std::vector<ColorSpinorField>& y,
                         const std::vector<ColorSpinorField>& z, unsigned active, Cplx* xy, Cplx* xz);
/// @brief caxpy_multi for a set of systems: y[k] += sum_i a[k n + i] x[i][k] for i < n and every
/// field k whose bit is set in `active` (x[i] sets laid out as y, one precision, single or
/// double), one pass per multi_chunk directions; the other fields are left alone.
void caxpy_multi_set(const Cplx* a, const std::vector<ColorSpinorField>* const* x, int n,
                     std::vector<ColorSpinorField>& y, unsigned active);
/// Whether the two forms above take sets of these fields (single or double).
bool multi_set_forms(const ColorSpinorField& f);

/// Shifts one multishift_update kernel handles; more are done in several passes.
inline constexpr int multishift_max = 8;
/// @brief The multi-shift CG update of every shift k in one pass over r (r read once):
/// x_k += alpha_k p_k, then p_k = zeta_k r + beta_k p_k, with real coefficients. All fields of
/// one shape and precision, except that the solutions x may be stored more precisely (all in one
/// precision); x and p hold one field per shift (distinct fields).
void multishift_update(const ColorSpinorField& r, const std::vector<ColorSpinorField*>& x,
                       const std::vector<ColorSpinorField*>& p, const std::vector<double>& alpha,
                       const std::vector<double>& zeta, const std::vector<double>& beta);

}  // namespace latke::blas
