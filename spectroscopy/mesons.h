// Meson two-point correlators from a point-to-all (or wall-to-all) Wilson propagator.
//
// The propagator S(x) is a 12 x 12 spin-colour matrix per site, given as 12 full fields: column
// j = 3 s0 + c0 holds S(x)_{(s, c), (s0, c0)}, the solution of M psi = source of spin s0 and
// colour c0 (DeGrand-Rossi basis, include/latke/conventions.h). With gamma_5-hermiticity,
// S(0, x) = gamma_5 S(x, 0)^dag gamma_5, the zero-momentum correlator of O_G = psibar G psi is
//
//   C(t) = sum_xvec < O_snk(xvec, t) O_src(0)^dag >
//        = - sum_xvec Tr[ G_snk S(x) Gbar_src gamma_5 S(x)^dag gamma_5 ],   Gbar = gamma_4 G^dag gamma_4,
//
// the minus sign from the fermion loop, so that the pion (G = gamma_5 at both ends) is
// C_pi(t) = sum_xvec |S(x)|^2 > 0. t is counted from the source's time slice t0, modulo T
// (mesons see no sign from the antiperiodic boundary). Vector-like channels average the three
// spatial directions. Every gamma product here is a monomial matrix (one entry, a power of i,
// per row), so each site costs 16 x 9 complex products per term.
//
// At momentum p = 2 pi n / L (integer n, per spatial direction) the sum over xvec carries the phase
// e^{-i p.(xvec - xvec0)}, xvec0 the source's spatial site: C(t, p) = sum_xvec e^{-i p.(xvec - xvec0)}
// < O_snk(x) O_src(x0)^dag >, the state of momentum p. It is computed in two passes: each
// channel's term per site into a scratch array on the fields' backend, then one segmented
// reduction per momentum over it, so that many momenta cost little more than one. This needs a
// propagator from one site (point or smeared point): a noise wall's columns mix its sources.
//
// Channels (J^PC):
//   pion     0-+  gamma_5          / gamma_5            (P P)
//   pion_a4  0-+  gamma_4 gamma_5  / gamma_4 gamma_5    (A_4 A_4)
//   a4_pion       gamma_4 gamma_5  / gamma_5            (A_4 at the sink, P at the source: the PCAC
//                                                        relation d_4 <A_4 P> = 2 m_PCAC <P P>)
//   rho      1--  gamma_i          / gamma_i
//   a0       0++  1                / 1
//   a1       1++  gamma_i gamma_5  / gamma_i gamma_5
//   b1       1+-  gamma_j gamma_k  / gamma_j gamma_k    ((j, k) = (2, 3), (3, 1), (1, 2))
#pragma once

#include <array>
#include <string>
#include <vector>

#include "src/core/complex.h"
#include "src/fields/color_spinor_field.h"

namespace latke {

enum class MesonChannel { pion, pion_a4, a4_pion, rho, a0, a1, b1 };

inline constexpr int n_meson_channels = 7;

/// "pion", "pion_a4", "a4_pion", "rho", "a0", "a1", "b1".
const char* to_string(MesonChannel c);
/// @brief The channel named so; anything else is an error naming the value and the choices.
MesonChannel parse_meson_channel(const std::string& name);
/// Every channel, in the order of the enum.
std::vector<MesonChannel> all_meson_channels();

/// @brief The zero-momentum correlators C(t) of `channels` (above), t = 0 .. T-1 counted from
/// time slice t0: result[k][t] for channels[k], summed over all ranks (every rank gets them).
/// columns: the propagator's 12 columns (3 s0 + c0), full Wilson fields (4 spins, 3 colours) of
/// one lattice, precision and backend. Collective over the lattice's communicator. The sums
/// run on the fields' backend in a fixed order.
std::vector<std::vector<Complex<double>>> meson_correlators(const std::vector<const ColorSpinorField*>& columns, int t0,
                                                            const std::vector<MesonChannel>& channels);

/// @brief The correlators of `channels` at the integer momenta `momenta` (n_x, n_y, n_z; p_i =
/// 2 pi n_i / L_i), phases relative to the source site `source` (x, y, z, t; t is t0):
/// result[k][m][t] for channels[k] and momenta[m]. At n = 0 it equals meson_correlators() bit
/// for bit. Collective over the lattice's communicator.
std::vector<std::vector<std::vector<Complex<double>>>> meson_correlators(
    const std::vector<const ColorSpinorField*>& columns, const std::array<int, 4>& source,
    const std::vector<MesonChannel>& channels, const std::vector<std::array<int, 3>>& momenta);

/// @brief The same for a meson of two quarks (two hopping parameters, or two sources): the quark's
/// propagator `columns` (S_1) and the antiquark's `antiquark` (S_2), C(t) = -sum_xvec e^{-i p.(xvec -
/// xvec0)} Tr[G_snk S_1(x) Gbar_src gamma_5 S_2(x)^dag gamma_5]; with S_2 = S_1 it is the one above, bit for bit.
std::vector<std::vector<std::vector<Complex<double>>>> meson_correlators(
    const std::vector<const ColorSpinorField*>& columns, const std::vector<const ColorSpinorField*>& antiquark,
    const std::array<int, 4>& source, const std::vector<MesonChannel>& channels,
    const std::vector<std::array<int, 3>>& momenta);

/// @brief The correlators of `channels` at a wall sink: the propagator's columns summed over each
/// time slice first, S_w(t) = sum_xvec S(xvec, t) (a 12 x 12 matrix), then contracted as at one site,
/// C(t) = - Tr[G_snk S_w(t) Gbar_src gamma_5 S_w(t)^dag gamma_5]: result[k][t], t counted from t0.
/// With a (gauge-fixed) wall source this is the wall-wall correlator. Collective; every rank gets them.
std::vector<std::vector<Complex<double>>> meson_correlators_wall_sink(
    const std::vector<const ColorSpinorField*>& columns, int t0, const std::vector<MesonChannel>& channels);

/// @brief sum_xvec |psi(xvec, t)|^2 per global time slice t = 0 .. T-1 (not shifted), summed
/// over all ranks, for one full field. With the 12 columns of S it gives C_pi(t) another way
/// (the gamma_5-hermiticity identity C_pi = sum |S|^2 that tests check).
std::vector<double> timeslice_norms(const ColorSpinorField& psi);

}  // namespace latke
