// What every contraction of a propagator shares (mesons.h, baryons.h): its 12 columns checked and
// read, and the last step, time-slice sums of a per-site density with momentum phases. A
// contraction writes one complex number per local site to an array on the fields' backend; the
// projection sums it over each time slice at every momentum, one segmented reduction per
// momentum, all of a call's queued and collected on the host once.
#pragma once

#include <array>
#include <vector>

#include "latke/conventions.h"
#include "src/core/backend.h"
#include "src/core/complex.h"
#include "src/core/indexing.h"
#include "src/core/lattice.h"
#include "src/core/macros.h"
#include "src/fields/color_spinor_field.h"

namespace latke {

// ---- gamma algebra on the host (integer entries, conventions.h) ------------------------------

SpinMatrix spin_identity();
SpinMatrix spin_mul(const SpinMatrix& a, const SpinMatrix& b);
SpinMatrix spin_dagger(const SpinMatrix& a);
SpinMatrix spin_transpose(const SpinMatrix& a);

/// A spin matrix with one non-zero entry per row (every product of gammas), for kernels: the
/// entry of row a is (re[a], im[a]) at column col[a].
struct Monomial {
  int col[4];
  double re[4], im[4];
  LATKE_HOST_DEVICE Complex<double> value(int row) const { return Complex<double>(re[row], im[row]); }
};

/// @brief m as a Monomial; a matrix with an empty row or two entries in one row is an error naming `what`.
Monomial monomial(const SpinMatrix& m, const char* what);

/// @brief Checks that `columns` are a propagator's 12 columns (3 s0 + c0): full Wilson fields (4
/// spins, 3 colours) of one lattice, precision and backend; errors name `what`.
void check_propagator(const std::vector<const ColorSpinorField*>& columns, const char* what);

/// The (x_cb, parity) of site i of local time slice t (lexicographic, x fastest): the sites of the
/// segmented reductions over time slices.
LATKE_HOST_DEVICE LATKE_INLINE void slice_site(const LocalGeometry& g, int t, int i, int& x_cb, int& parity) {
  const int lex = t * g.L[0] * g.L[1] * g.L[2] + i;
  int c[4];
  parity = g.lex_coords(lex, c);
  x_cb = lex >> 1;
}

/// The accessor of f's sites of parity `parity` (full fields hold both).
template <typename Store>
SpinorAccessor<Store, 3, 4> parity_accessor(const ColorSpinorField& f, int parity) {
  return f.accessor<Store, 3, 4>(f.block_parity(0) == parity ? 0 : 1);
}

/// @brief The propagator's columns summed over each time slice, S_w(t) = sum_xvec S(xvec, t), on
/// the fields' backend and over all ranks: result[(t * 12 + row) * 12 + column] for global t, row
/// 3 s + c (sink) and column 3 s0 + c0 (source). What wall sinks contract. Collective.
std::vector<Complex<double>> propagator_slice_sums(const std::vector<const ColorSpinorField*>& columns);

/// @brief Queues, for each momentum m (integers n; p_i = 2 pi n_i / L_i) and each local time slice
/// t, out[m Lt + t] = sum over the slice's sites x of e^{-i p.(xvec - xvec0)} density(x), xvec0 =
/// the source's spatial site, Lt = the local time extent. density (one complex number per local
/// site, lexicographic, x fastest) and out are memory of backend b; nothing is waited for
/// (slices_on_host collects). The phase's argument is reduced modulo L in integers, so it is
/// exact on any volume.
void project_slices(Backend b, const Lattice& lat, const Complex<double>* density, const std::array<int, 4>& source,
                    const std::vector<std::array<int, 3>>& momenta, Complex<double>* out);

/// @brief blocks of Lt local-slice sums (memory of the fields' backend, from project_slices), once
/// the work queued before is done, as result[block T + t_global] summed over all ranks. Collective.
std::vector<Complex<double>> slices_on_host(const Lattice& lat, const Complex<double>* sums, int blocks);

/// @brief Checks a source site and momenta against the lattice (|n_i| <= L_i / 2), naming `what`.
void check_source_and_momenta(const Lattice& lat, const std::array<int, 4>& source,
                              const std::vector<std::array<int, 3>>& momenta, const char* what);

}  // namespace latke
