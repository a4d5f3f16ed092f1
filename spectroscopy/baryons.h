// Nucleon two-point correlators from a point-source Wilson propagator (degenerate u and d).
//
// Interpolator N = eps_abc (u_a^T Gamma d_b) u_c with Gamma = C gamma_5, C = gamma_2 gamma_4 the
// charge conjugation of the DeGrand-Rossi basis (C gamma_mu C^-1 = -gamma_mu^T, checked at run
// time), and Nbar = eps_a'b'c' (dbar_b' Gbar ubar_a'^T) ubar_c', Gbar = gamma_4 Gamma^dag gamma_4.
// Wick's theorem with S^{aa'} the 4x4 spin block of colours (a, a') of the 12x12 propagator S(x)
// (columns 3 s0 + c0, mesons.h) gives the spin matrix
//
//   G(x) = eps_abc eps_a'b'c' ( S^{cc'} Tr[M^{bb'} (S^{aa'})^T] - S^{ca'} (M^{bb'})^T S^{ac'} ),
//   M^{bb'} = Gamma S^{bb'} Gbar,
//
// the first term from u_a with ubar_a' and u_c with ubar_c', the second (with the sign of one
// exchange of fermions) from u_a with ubar_c' and u_c with ubar_a'. The correlators are
//
//   C_+(t) = sum_xvec e^{-i p.(xvec - xvec0)} Tr[(1 + gamma_4)/2 G(x)]   (nucleon: positive parity forward)
//   C_-(t) = the same with (1 - gamma_4)/2                             (its negative-parity partner forward)
//
// t counted from the source's slice t0. A baryon is three quarks: where the sink lies before t0
// on the lattice (t0 + t >= T), the three propagators have each crossed the time boundary once,
// and the correlator is multiplied by conj(z)^3 (z the boundary phase of time hops; -1 by
// default) so that it is the correlator of a source at the origin: C_+(t) ~ A e^{-m_N t} for
// small t, and ~ -A' e^{-m_N* (T - t)} near T with antiperiodic quarks (the negative-parity
// state propagating backwards, with the boundary's sign). The momentum projection is that of
// contraction.h; spatial boundary phases must be 1.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "src/core/complex.h"
#include "src/fields/color_spinor_field.h"

namespace latke {

enum class BaryonChannel { nucleon, nucleon_minus };

inline constexpr int n_baryon_channels = 2;

/// "nucleon", "nucleon_minus".
const char* to_string(BaryonChannel c);

/// @brief The nucleon correlators (above) of both parity projections at the integer momenta
/// (p_i = 2 pi n_i / L_i): result[k][m][t] for channel k (BaryonChannel's order) and momentum m,
/// every rank gets them. columns: the propagator's 12 columns of a point (or smeared point)
/// source at `source` (x, y, z, t0); boundary_phase: the phase of hops across each direction's
/// boundary, as the operator applied it (spatial ones must be 1). Collective.
std::vector<std::vector<std::vector<Complex<double>>>> nucleon_correlators(
    const std::vector<const ColorSpinorField*>& columns, const std::array<int, 4>& source,
    const std::array<Complex<double>, 4>& boundary_phase, const std::vector<std::array<int, 3>>& momenta);

/// @brief Both projections at a wall sink: the columns summed over each time slice, S_w(t) =
/// sum_xvec S(xvec, t), then contracted as at one site (each of the three quarks summed over the
/// sink's slice): result[k][t], t from t0. With a gauge-fixed wall source, the wall-wall nucleon.
std::vector<std::vector<Complex<double>>> nucleon_correlators_wall_sink(
    const std::vector<const ColorSpinorField*>& columns, int t0, const std::array<Complex<double>, 4>& boundary_phase);

}  // namespace latke
