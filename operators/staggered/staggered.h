// The staggered Dirac operator, naive and improved (asqtad form: fat and Naik links), on
// Latke fields, in every form a solver needs.
//
//   M chi(x) = 2m chi(x) + D chi(x)
//   D chi(x) = sum_mu eta_mu(x) [ V_mu(x) chi(x + mu) - V_mu(x - mu)^dag chi(x - mu)
//                                + W_mu(x) chi(x + 3mu) - W_mu(x - 3mu)^dag chi(x - 3mu) ]
// with eta_mu(x) = (-1)^(x_0 + ... + x_{mu-1}) (conventions.h). Naive: V = U (the gauge
// links), W = 0. D is anti-Hermitian (D^dag = -D), so M^dag = 2m - D; D maps each parity to
// the other. Boundary phases: a hop that wraps around the global lattice is multiplied by the
// phase of its direction, backward hops by its conjugate; the Naik hop x -> x + 3mu wraps when
// x_mu >= X_mu - 3 (conventions.h), so a phase must have modulus one.
//
// Factor convention: there is no 1/2. D is twice the textbook D_1/2 = (1/2) sum_mu eta_mu
// [U chi(x+mu) - U^dag chi(x-mu)] and the mass term is 2m, so M = 2 (m + D_1/2): masses mean
// what they mean in the textbook, and in the free field D^dag D = 4 sum_mu sin^2 p_mu (naive).
// MILC: this D is MILC's dslash (dslash_fn_site: fat and long links, forward hop minus
// adjoint backward hop, no 1/2) and M = 2m + D is MILC's (its CG solves 4m^2 - D_eo D_oe on
// even sites), with the same m; QUDA's staggered operators in MILC conventions are the same.
// MILC and QUDA fat and long link fields carry eta_mu(x) and the boundary phase multiplied
// in; Latke's links do not (the kernel applies both):
//   Latke link = eta_mu(x) * conj(phase, if the link wraps) * MILC link,
// where the fat link V_mu(x) wraps at x_mu = X_mu - 1 and the long link W_mu(x) at
// x_mu >= X_mu - 3. strip_milc_phases() converts links read from MILC or QUDA files.
//
// Asqtad links from thin links U, tadpole factor u0 (a path of L links divided by u0^(L-1)):
//   V_mu(x) = c_1 U_mu(x) + c_3/u0^2 sum_nu S3 + c_5/u0^4 sum_{nu,rho} S5
//             + c_7/u0^6 sum_{nu,rho,sigma} S7 + c_L/u0^4 sum_nu L5
//   W_mu(x) = c_N/u0^2 U_mu(x) U_mu(x + mu) U_mu(x + 2mu)
// where nu, rho, sigma run over the distinct signed directions orthogonal to mu (and to each
// other): S3 = U_nu(x) U_mu(x+nu) U_nu(x+mu)^dag (a backward step along -nu takes the adjoint
// of the link behind), S5 and S7 the staples of staples displaced along nu, rho (24 paths) and
// nu, rho, sigma (48 paths), L5 the staple displaced twice along nu (6 paths), and
//   c_1 = 5/8, c_3 = 1/16, c_5 = 1/64, c_7 = 1/384, c_L = -1/16, c_N = -1/24
// (c_1 = 1/8 of fat7 + 3/8 undoing the Lepage term's + 1/8 undoing the Naik term's free-field
// part). In the free field (unit links, u0 = 1) V = 9/8 and W = -1/24: D^dag D on a plane
// wave is 4 sum_mu (9/8 sin p_mu - 1/24 sin 3p_mu)^2. The Naik coefficient is negative in both
// conventions. MILC's table lists the staples as -1/16, +1/64, -1/384 because MILC fattens
// links with eta (and the boundary phase) multiplied in, and a path with an odd number of
// transverse excursions collects a -1 from the etas; with phase-free links the signs are +.
//
// Even-odd: M = [[2m, D_eo], [D_oe, 2m]]. On parity p (q the other) the normal operator is
//   A = 4m^2 - D_pq D_qp = 4m^2 + D_qp^dag D_qp   (Hermitian, positive definite for m > 0);
// M x = b is solved by A x_p = bhat with bhat = 2m b_p - D_pq b_q, then
// x_q = (b_q - D_qp x_p) / (2m).
//
// Storage: fat links (and naive links) at 18 reals; naive links at 12 as well (SU(3)); long
// links at 18, or at 12 when W = c X with X in SU(3) and one real c for the whole field
// (asqtad from SU(3) links: c = -1/(24 u0^2)): X is stored and the kernel multiplies by c.
// Fat links are not unitary and stay at 18. Halo exchange: color vectors, depth 3 (improved)
// or 1 (naive); links of backward hops that cross a rank boundary are exchanged once, at
// construction.
//
// Flops (QUDA's counting, so figures compare): improved 1146 per output site (16 complex 3x3
// matrix-vector products of 66 flops and 15 vector sums of 6), naive 570 (8 and 7); a fused
// out = a D in + b x adds 12.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "src/core/complex.h"
#include "src/core/halo.h"
#include "src/core/memory.h"
#include "src/fields/color_spinor_field.h"
#include "src/fields/gauge_field.h"

namespace latke {

enum class StaggeredType { naive, asqtad };

const char* to_string(StaggeredType t);
/// @brief "naive" or "asqtad"; anything else is an error naming the value.
StaggeredType parse_staggered_type(const std::string& name);

/// Path coefficients of fattening (staggered.h gives the paths). Phase-free convention:
/// staples positive.
struct AsqtadCoefficients {
  double one_link = 5.0 / 8.0;
  double three_staple = 1.0 / 16.0;
  double five_staple = 1.0 / 64.0;
  double seven_staple = 1.0 / 384.0;
  double lepage = -1.0 / 16.0;
  double naik = -1.0 / 24.0;

  /// @brief The asqtad coefficients with tadpole factor u0 (> 0): a path of L links divided
  /// by u0^(L-1).
  static AsqtadCoefficients asqtad(double u0 = 1.0);
};

/// Fat and long links over this rank's local volume, host, lexicographic as gauge fields
/// ([site][mu][row][col], conventions.h), without eta and boundary phases. Naive: `lng` is
/// empty and `fat` holds the gauge links.
struct StaggeredLinks {
  std::vector<Complex<double>> fat, lng;
};

/// @brief Asqtad fat and long links from this rank's thin links (host, lexicographic),
/// computed on `backend` in double precision, one thread per site, from the links extended by
/// two sites in every direction (gathered from the neighbouring ranks).
StaggeredLinks asqtad_links(const Lattice& lat, const std::vector<Complex<double>>& thin, const AsqtadCoefficients& c,
                            Backend backend);

/// @brief Turn fat (hop = 1) or long (hop = 3) links from MILC or QUDA files, which carry
/// eta_mu(x) and the boundary phase, into Latke's phase-free links, in place.
void strip_milc_phases(const Lattice& lat, std::vector<Complex<double>>& links,
                       const std::array<Complex<double>, 4>& boundary_phase, int hop);

/// Parameters of the operator (formula above).
struct StaggeredParam {
  double mass = 0.1;  ///< m >= 0 in M = 2m + D
  StaggeredType type = StaggeredType::asqtad;
  double u0 = 1.0;  ///< tadpole factor of asqtad fattening from thin links
  std::array<Complex<double>, 4> boundary_phase{Complex<double>(1), Complex<double>(1), Complex<double>(1),
                                                Complex<double>(-1)};
  Precision precision = Precision::double_;
  Reconstruct reconstruct = Reconstruct::r18;  ///< naive: the links; asqtad: the long links
  Backend backend = Backend::cpu;
};

/// @brief The checks an operator makes of its parameters on a lattice, alone (e.g. before
/// fattening): m >= 0, phases of modulus one, u0 > 0 and, for asqtad, extents of at least 4
/// and local extents of at least 3 (so 4) in split dimensions. Fails naming the value.
void check_staggered_param(const Lattice& lat, const StaggeredParam& param);

class StaggeredOperator {
 public:
  /// @brief From this rank's thin gauge links (host, lexicographic): naive uses them as V,
  /// asqtad fattens them (asqtad_links with tadpole factor param.u0) on the backend.
  StaggeredOperator(std::shared_ptr<const Lattice> lattice, const std::vector<Complex<double>>& thin_links,
                    const StaggeredParam& param);
  /// @brief From given links (e.g. fattened once and shared by operators of several
  /// precisions, or read from a file): naive takes links.fat only.
  StaggeredOperator(std::shared_ptr<const Lattice> lattice, const StaggeredLinks& links, const StaggeredParam& param);
  ~StaggeredOperator();

  const StaggeredParam& param() const { return param_; }
  const Lattice& lattice() const { return *lattice_; }
  const std::shared_ptr<const Lattice>& lattice_ptr() const { return lattice_; }
  bool improved() const { return param_.type == StaggeredType::asqtad; }

  /// @brief The shape of this operator's color vectors (one spin, three colors, its precision
  /// and backend) for a full field or one parity.
  SpinorParam field_param(Subset subset) const;

  /// @brief out = M in, or M^dag in = (2m - D) in, on full fields.
  void apply(ColorSpinorField& out, const ColorSpinorField& in, bool dagger = false);
  /// @brief out_p = (4m^2 + shift - D_pq D_qp) in_p on fields of parity p (self-adjoint); a
  /// shift costs nothing (it joins 4m^2 in the second kernel): the normal operator at mass m'
  /// is shift = 4(m'^2 - m^2).
  void apply_normal(ColorSpinorField& out, const ColorSpinorField& in, double shift = 0.0);
  /// @brief bhat_p = 2m b_p - D_pq b_q from the full source b (p: bhat's parity).
  void prepare_source(ColorSpinorField& bhat, const ColorSpinorField& b);
  /// @brief The full solution: x_p = x_p given, x_q = (b_q - D_qp x_p) / (2m). Needs m > 0.
  void reconstruct(ColorSpinorField& x, const ColorSpinorField& x_p, const ColorSpinorField& b);

  /// @brief The fused kernel: out_p = a D in_q + b x_p (x may be nullptr: out_p = a D in_q),
  /// parity fields, halo exchange overlapped with the interior when the lattice is split.
  /// D^dag = -D: pass -a for the adjoint.
  void dslash(ColorSpinorField& out, const ColorSpinorField& in, double a = 1.0, const ColorSpinorField* x = nullptr,
              double b = 0.0);

  /// @brief Change m (links untouched): solves at several masses share one operator.
  void set_mass(double mass);

  /// c of long links stored as c X, X in SU(3) (reconstruct 12); 1 when stored whole.
  double long_link_scale() const { return long_scale_; }
  /// QUDA's flops per output site of D: 1146 (improved) or 570 (naive).
  double dslash_flops_per_site() const { return improved() ? 1146.0 : 570.0; }
  /// Bytes of links (and ghost links) held on the backend.
  std::size_t bytes() const;
  /// How halos move and how many bytes this rank sends per application of D.
  std::string halo_description() const;

 private:
  void init(const StaggeredLinks& links);
  void require_field(const ColorSpinorField& f, const char* what) const;
  void build_ghost_links(const StaggeredLinks& links);

  std::shared_ptr<const Lattice> lattice_;
  StaggeredParam param_;
  std::unique_ptr<GaugeField> fat_, long_;
  double long_scale_ = 1.0;
  int depth_ = 1;
  /// Links of backward hops across a rank boundary, per split dimension: fat links of the
  /// rank behind's last slice, long links of its last three (see staggered_kernel.h).
  Buffer ghost_fat_[4], ghost_long_[4];
  std::unique_ptr<HaloExchange> halo_;
  std::unique_ptr<ColorSpinorField> tmp_[2];  // parity scratch
};

}  // namespace latke
