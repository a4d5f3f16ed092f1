// The Wilson-clover Dirac operator on Latke fields, in every form a solver needs.
//
//   M psi(x) = A(x) psi(x) - 1/2 D_hop psi(x),       A(x) = (4 + m) + C_sw(x)
//   D_hop psi(x) = sum_mu [ (1 - gamma_mu) U_mu(x) psi(x + mu) + (1 + gamma_mu) U_mu(x - mu)^dag psi(x - mu) ]
//   C_sw(x) = c_sw (i/4) sum_{mu,nu} sigma_{mu nu} F_{mu nu}(x),  sigma_{mu nu} = (i/2)[gamma_mu, gamma_nu],
//   F_{mu nu}(x) = (1/8) (Q_{mu nu}(x) - Q_{mu nu}(x)^dag), Q_{mu nu} = sum of the four plaquette
//   leaves in the mu-nu plane at x (clover leaf).
// This is Sheikholeslami-Wohlert's term with Luscher et al.'s sign and normalisation:
// tree-level improvement is c_sw = 1 and published non-perturbative c_sw apply unchanged.
// kappa normalisation: kappa = 1 / (2 m + 8), M_kappa = 2 kappa M = 1 - kappa D_hop + 2 kappa C_sw
// (set the mass from kappa with mass_from_kappa and choose Normalisation::kappa). Every form
// below then uses A_kappa = 2 kappa A and M_eo = -kappa D_hop|eo in place of A and -1/2 D_hop:
// the full and asymmetric operators are 2 kappa times the mass-normalised ones, the
// symmetric one is the same. Gamma basis, phases, layouts: conventions.h.
// Boundary phases multiply the links of the last slice when a hop wraps (default: -1 in t);
// backward hops take the conjugate, so a phase must have modulus one. The clover term does
// not see them (they cancel in closed loops).
//
// Even-odd. With M_eo = -1/2 D_hop restricted to (even <- odd), and parity p the solved one:
//   asymmetric:  Mhat = A_pp - M_pq A_qq^-1 M_qp            (= A - 1/4 D A^-1 D)
//   symmetric:   Mhat = 1 - A_pp^-1 M_pq A_qq^-1 M_qp        (= A_pp^-1 times the asymmetric one)
// Solving M x = b:  x_p = Mhat^-1 bhat,  bhat = b_p - M_pq A_qq^-1 b_q (asymmetric; the
// symmetric form takes A_pp^-1 of that), and x_q = A_qq^-1 (b_q - M_qp x_p).
// Daggers by gamma_5-hermiticity: M^dag = gamma_5 M gamma_5, D_hop^dag swaps (1 -+ gamma_mu);
// Mhat_asym^dag = A_pp - M_pq^dag A_qq^-1 M_qp^dag; Mhat_sym^dag = 1 - M_pq^dag A_qq^-1 M_qp^dag A_pp^-1.
//
// Domain-local form (Schwarz blocks, multigrid smoothers): with block extents given, the
// rank's local volume is cut into blocks of those extents (aligned at the rank's origin) and
// every hop that leaves a block is dropped, as if the field were zero outside it (Dirichlet
// boundaries); nothing is communicated. A block extent equal to the global extent keeps that
// direction periodic. The clover term is the full one. Block extents must be even (so that
// even-odd works within blocks) and divide the local extents.
//
// Flops (QUDA's counting, so figures compare): hopping term 1320 per site, a clover block
// pair applied 504, an a*x+y on a spinor 48. Bytes: every link, neighbour spinor, clover
// and output word the kernel reads or writes once per site (see latke-bench).
#pragma once

#include <array>
#include <memory>
#include <vector>

#include "src/core/complex.h"
#include "src/core/halo.h"
#include "src/fields/clover_field.h"
#include "src/fields/color_spinor_field.h"
#include "src/fields/gauge_field.h"

namespace latke {

struct BlockGrid;

enum class SchurType { asymmetric, symmetric };

/// Mass normalisation M = (4 + m) - D/2 + C_sw, or kappa normalisation M_kappa = 2 kappa M.
enum class Normalisation { mass, kappa };

const char* to_string(Normalisation n);
/// @brief "mass" or "kappa".
Normalisation parse_normalisation(const std::string& name);

const char* to_string(SchurType t);
/// @brief "asymmetric" or "symmetric".
SchurType parse_schur_type(const std::string& name);

/// @brief m = 1/(2 kappa) - 4; kappa must be positive.
double mass_from_kappa(double kappa);

/// Parameters of the operator (operators/wilson_clover/wilson_clover.h gives the formula).
struct WilsonCloverParam {
  double mass = 0.0;
  double csw = 0.0;
  Normalisation normalisation = Normalisation::mass;
  std::array<Complex<double>, 4> boundary_phase{Complex<double>(1), Complex<double>(1), Complex<double>(1),
                                                Complex<double>(-1)};
  Precision precision = Precision::double_;
  Reconstruct reconstruct = Reconstruct::r18;
  Backend backend = Backend::cpu;
  std::array<int, 4> block{0, 0, 0, 0};  ///< domain-local block extents; zeros: the whole lattice
  /// Sets in half precision: the hopping sum and A^-1 in FP16 pair arithmetic, two fields per
  /// instruction (wilson_clover_kernel.h, DslashSetHalfPairKernel); good to about 1e-3, for
  /// smoothers. Single fields and the other precisions are unaffected.
  bool half_pairs = false;
};

/// Which work a hopping kernel launch does (see wilson_clover_kernel.h).
enum class Epilogue {
  plain,            ///< out = a h
  clover_inv,       ///< out = a A^-1 h
  clover_xpay,      ///< out = a h + A x
  clover_inv_xpay,  ///< out = x + a A^-1 h
  xpay,             ///< out = x + a h
};

class WilsonCloverOperator {
 public:
  /// @brief Build the operator from links on this rank's local volume (lexicographic host
  /// array, conventions.h): uploads the links in the operator's precision and reconstruction
  /// and computes A and A^-1 on the backend. Fails naming the site count when some A block
  /// is singular for this mass and c_sw.
  WilsonCloverOperator(std::shared_ptr<const Lattice> lattice, const std::vector<Complex<double>>& host_links,
                       const WilsonCloverParam& param);
  /// @brief The operator of `from`'s links (host_links: the links from was built from) in
  /// another precision, reconstruction or domain-local block. The links are converted from
  /// from's on the backend where from holds what this operator stores (a precision at least
  /// param's; 18 reals, or 12 for 12), else uploaded again (not checked for SU(3) again when
  /// from stores them as 12 reals; an upload converts and checks every link on the host). Where
  /// the mass, c_sw, normalisation and backend are from's and from's precision is at least
  /// param's, A and A^-1 are converted from from's on the backend instead of built again
  /// (building them gathers the extended links on the host; a multigrid solve asks for four
  /// precisions).
  WilsonCloverOperator(const WilsonCloverOperator& from, const std::vector<Complex<double>>& host_links,
                       const WilsonCloverParam& param);
  ~WilsonCloverOperator();

  const WilsonCloverParam& param() const { return param_; }
  const Lattice& lattice() const { return *lattice_; }
  const std::shared_ptr<const Lattice>& lattice_ptr() const { return lattice_; }

  /// @brief out = M in (or M^dag in) on full fields.
  void apply(ColorSpinorField& out, const ColorSpinorField& in, bool dagger = false);
  /// @brief out_p = Mhat in_p (or its dagger) on fields of parity p (the fields' subset).
  void apply_schur(ColorSpinorField& out, const ColorSpinorField& in, SchurType type, bool dagger = false);
  /// @brief out_k = Mhat in_k (not daggered) for two sets of parity-p fields made by
  /// ColorSpinorField::make_set, in one kernel per hopping term for the whole set (a warp reads
  /// each link and clover word once for 4 fields). On a lattice split over ranks the set's
  /// faces go in one exchange, its interior sites in that pass, and its boundary sites field by
  /// field. Keeps a scratch set and, split, the set's exchange (release_set_scratch).
  void apply_schur_set(std::vector<ColorSpinorField>& out, const std::vector<ColorSpinorField>& in, SchurType type);
  /// Whether apply_schur_set runs in one pass over the links (always).
  bool applies_sets() const { return true; }
  /// @brief Free apply_schur_set's scratch set and exchange buffers.
  void release_set_scratch() {
    set_tmp_.clear();
    set_halo_.reset();
    set_halo_count_ = 0;
  }
  /// @brief bhat (parity p) from the full source b.
  void prepare_source(ColorSpinorField& bhat, const ColorSpinorField& b, SchurType type);
  /// @brief The full solution x from x_p (parity p) and the full source b.
  void reconstruct(ColorSpinorField& x, const ColorSpinorField& x_p, const ColorSpinorField& b);

  /// @brief out_p = D_hop in_q (parity p from parity q): the bare hopping term, for tests.
  void hopping(ColorSpinorField& out, const ColorSpinorField& in, bool dagger = false);
  /// @brief out = A in or A^-1 in, site by site (full or parity fields).
  void clover(ColorSpinorField& out, const ColorSpinorField& in, bool inverse = false);

  /// @brief The fused kernel: out_p = epilogue(a, D_hop in_q, x_p), with halo exchange
  /// overlapped with the interior when the lattice is split.
  void dslash(ColorSpinorField& out, const ColorSpinorField& in, Epilogue e, double a,
              const ColorSpinorField* x, bool dagger);

  /// @brief M in split by blocks of extents `block` (multigrid aggregates; each at least 2 and
  /// dividing the local extent), for the Galerkin product (preconditioners/mg/galerkin.h):
  /// site = A in + the hops that stay inside a block, and faces[mu] = the hops across the
  /// block boundaries in mu (forward on a block's last slice, backward on its first), zero
  /// elsewhere; site + sum_mu faces[mu] = M in. Full fields; not for the domain-local form.
  void apply_split(ColorSpinorField& site, ColorSpinorField* const faces[4], const ColorSpinorField& in,
                   const Coords& block);

  /// Whether solve_blocks runs: the domain-local form, with blocks whose spinors fit in the
  /// shared memory of one team (src/core/launch_team.h) in the compute precision.
  bool solves_blocks() const;
  /// Whether solve_blocks runs with half_pairs: solves_blocks() in half precision, with a pair of
  /// blocks' spinors and links fitting one team's shared memory.
  bool solves_block_pairs() const;
  /// Why solve_blocks cannot run with half_pairs, with the numbers (empty when it can).
  std::string why_no_block_pairs() const;
  /// @brief x_p = `steps` minimal-residual steps from x = 0 on Mhat_B x = b on every block B
  /// (Mhat_B: the block's Schur complement of `type`, Dirichlet boundaries), each block kept on
  /// chip by one team for all its steps (wilson_clover_blocks.cpp). colour 0 or 1: only the
  /// blocks whose global block coordinates sum to that parity, x zero on the others; -1: all.
  /// half_pairs (half precision only): in FP16 arithmetic, two blocks of a colour per team in
  /// the two lanes of Half2, from pair copies of the links and clover in IEEE half made at the
  /// first such call; good to about 1e-3 of each block's norm.
  void solve_blocks(ColorSpinorField& x, const ColorSpinorField& b, SchurType type, int steps, int colour,
                    bool half_pairs = false);

  /// One colour step of Luscher's SAP on the full operator M, whose block solves run on the
  /// symmetric Schur complement (the residual is kept in full: s_p = A_pp^-1 R_p and R_q, both
  /// parities of a block's residual being what its solve needs).
  struct SapFields {
    ColorSpinorField* s_p = nullptr;    ///< A_pp^-1 R_p (parity p): read, and updated on the colour's blocks
    ColorSpinorField* r_q = nullptr;    ///< R_q (parity q): likewise
    ColorSpinorField* acc_p = nullptr;  ///< the corrections' sum, parity p: += omega x_p on the colour's blocks
    ColorSpinorField* dx = nullptr;     ///< full: the correction on the colour's blocks (the others untouched)
    double omega = 1;
    bool first = false;      ///< R_q is zero (no Schur residual to form, R_q not read)
    bool fresh_acc = false;  ///< acc_p not read but written (the colour's first step)
  };
  /// @brief On each block B of colour `colour` (0 or 1), with the block's system M_B X = R_B
  /// (Dirichlet boundaries): `steps` MR steps on Mhat_B x_p = bhat = s_p + hop A_pp^-1 D_pq
  /// A_qq^-1 R_q (the block's Schur residual), dx = (omega x_p, A_qq^-1 (R_q - omega M_qp x_p)),
  /// acc_p += omega x_p, and R_B becomes the residual R_B - M_B dx: s_p = (1 - omega) bhat +
  /// omega r_MR, from MR's own residual r_MR without applying M, and R_q = 0 (not written:
  /// sap_boundary overwrites r_q). What M dx adds outside B is sap_boundary's (the SAP of
  /// preconditioners/schwarz). With the blocks 2-coloured, R_q is zero outside B where bhat
  /// would read it, and the steps are the even-odd SAP's to rounding. One kernel, one team per
  /// block (or pair of blocks: half_pairs), as solve_blocks.
  void sap_blocks(const SapFields& f, int steps, int colour, bool half_pairs);
  /// Whether sap_blocks runs (solves_blocks(); symmetric Schur complement only).
  bool solves_sap() const { return solves_blocks(); }
  /// @brief out_p = out_p + a [A_pp^-1] D_hop in_q (add; or out_p = a D_hop in_q) over only the
  /// hops that cross the boundaries of blocks of extents `block` (aligned at the rank's origin; a
  /// block extent equal to the global one drops that dimension's hops), with communication
  /// where the lattice is split. skip_colour >= 0 (the SAP boundary update) takes add with
  /// clover_inv, or neither.
  void hop_across_blocks(ColorSpinorField& out, const ColorSpinorField& in, const Coords& block, double a, bool add,
                         bool clover_inv, int skip_colour = -1);

  /// @brief After sap_blocks on the blocks of `colour` (a proper 2-colouring), what M dx adds across the block
  /// boundaries (sap_blocks formed it within them): s_p -= A_pp^-1 (M dx)_p and r_q = -(M dx)_q
  /// (R_q being zero everywhere after a step) over the hops that cross a boundary of blocks of
  /// extents `block` (hop_across_blocks; the operator with communication, not the domain-local
  /// form).
  void sap_boundary(ColorSpinorField& s_p, ColorSpinorField& r_q, const ColorSpinorField& dx, const Coords& block,
                    int colour);

  /// kappa = 1/(2m + 8) of this operator's mass.
  double kappa() const;
  /// Whether this is the domain-local (blocked, Dirichlet, no communication) form.
  bool domain_local() const { return param_.block[0] > 0; }
  /// Whether the block solvers' copies hold each block in its temporal gauge (the blocks are
  /// shorter than the lattice in t, and LATKE_SCHWARZ_FRAME is not 0; wilson_clover_blocks.cpp,
  /// BlockFrame).
  bool block_frame() const;

  /// Bytes of links, clover and inverse held on the backend (with the block solvers' copies).
  std::size_t bytes() const;
  /// How halos move (peer-to-peer, CUDA-aware MPI, staged through host, or none) and how
  /// many bytes this rank sends per hopping-term application.
  std::string halo_description() const;

 private:
  void require_field(const ColorSpinorField& f, const char* what) const;
  /// Makes block_gauge_, block_clover_ and block_clover_inv_ for the blocks of grid.
  void make_block_major_fields(const BlockGrid& grid);
  /// Makes pair_table_, pair_links_, pair_clover_ and pair_clover_inv_ for the blocks of grid.
  void make_block_pair_fields(const BlockGrid& grid);
  /// solve_blocks without half_pairs; with sap, sap_blocks' step (x: sap->dx, b: sap->s_p).
  void solve_blocks_impl(ColorSpinorField& x, const ColorSpinorField& b, SchurType type, int steps, int colour,
                         const SapFields* sap);
  /// solve_blocks with half_pairs; likewise.
  void solve_block_pairs(ColorSpinorField& x, const ColorSpinorField& b, SchurType type, int steps, int colour,
                         const SapFields* sap);
  /// The hopping coefficient (1/2 or kappa) and the factor on A (1 or 2 kappa).
  double hop() const;
  double site_scale() const;
  /// dslash() restricted to the hops of a split (DslashRequest::split_block, split_dim).
  void dslash_split(ColorSpinorField& out, const ColorSpinorField& in, Epilogue e, double a, const ColorSpinorField* x,
                    bool dagger, const int* split_block, int split_dim, int skip_colour = -1);

  WilsonCloverOperator(std::shared_ptr<const Lattice> lattice, const std::vector<Complex<double>>& host_links,
                       const WilsonCloverParam& param, const WilsonCloverOperator* clover_from);

  std::shared_ptr<const Lattice> lattice_;
  WilsonCloverParam param_;
  GaugeField gauge_;
  CloverField clover_, clover_inv_;
  /// LATKE_SCHWARZ_FRAME (1, the default; 0 keeps the blocks' links as they are, to compare):
  /// whether block_frame() may hold.
  bool frame_on_ = true;
  /// LATKE_SCHWARZ_BOUNDARY_ORDER (colours, the default; sites, to compare): the threads of the
  /// SAP boundary update on one rank (DslashRequest::colour_order).
  bool boundary_by_colour_ = true;
  /// solve_blocks' copies of the links, clover and inverse in block-major site order (site i
  /// of parity p of block B at B n + i, n sites per block and parity), made at its first call,
  /// so that a team reads its block's fields as contiguous words; where block_frame(), in each
  /// block's temporal gauge, the t slot holding the gauge transform.
  std::unique_ptr<GaugeField> block_gauge_;
  std::unique_ptr<CloverField> block_clover_, block_clover_inv_;
  /// solve_blocks' copies for FP16 pairs: the blocks paired within each colour (pair_table_: two
  /// block indices per pair, an odd one out with itself), and the links, clover and inverse of
  /// both parities with site i of a pair's two blocks in the lanes of each Half2 (IEEE half),
  /// site pair P n + i, made at its first such call.
  Buffer pair_table_, pair_links_, pair_clover_, pair_clover_inv_;
  int pair_count_ = 0;
  std::unique_ptr<HaloExchange> halo_;
  std::unique_ptr<HaloExchange> set_halo_;  // apply_schur_set's on a split lattice, for set_halo_count_ fields
  int set_halo_count_ = 0;
  std::unique_ptr<ColorSpinorField> tmp_[2];  // parity scratch
  std::vector<ColorSpinorField> set_tmp_;     // apply_schur_set's parity-q set
};

}  // namespace latke
