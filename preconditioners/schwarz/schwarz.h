// Additive (and multiplicative) Schwarz preconditioner on non-overlapping blocks with
// communication switched off: K r ~ omega * sum over blocks of (the block's operator)^-1 r,
// each block inverse approximated by a fixed number of minimal-residual (MR) steps from zero.
// On chip (the default where the block operator can, LinearOperator::solves_blocks): one
// kernel per application in which a team (CUDA thread block) owns a block and runs all its MR
// steps with the block's spinors in shared memory (operators/wilson_clover/
// wilson_clover_blocks.cpp), so the application reads the links, clover and right-hand side
// from DRAM once and writes the solution once. Streamed (on_chip off, or blocks too large for
// shared memory): all blocks of the rank advance together; per MR step, the domain-local
// operator over the whole rank (one hopping kernel per parity, hops leaving a block dropped),
// one kernel of block-local reductions (one CUDA block per Schwarz block, fixed order, no host
// synchronisation) and one update kernel that reads each block's step length on the device.
// Fields are in the preconditioner's storage precision (half by default; single arithmetic;
// on chip the steps keep the compute precision between them).
//
// Multiplicative (SAP): blocks are coloured red/black by the parity of their block
// coordinates; for each colour in turn the colour's blocks are solved from the current residual
// and their corrections added (Luscher's Schwarz alternating procedure). Where the operator
// has SAP steps (Wilson-clover, symmetric even-odd, blocks on chip: LinearOperator::sap_step)
// the residual is kept on both parities of the full operator M (an even-odd residual r_p is
// the full one (A_pp r_p, 0)), the block kernel solves each block's full system through its
// Schur complement and leaves the block's new residual behind, and only the hops of the
// correction that cross block boundaries are applied afterwards (sap_boundary: one hopping
// kernel per parity over the boundary hops; on a split lattice the halo carries the faces of
// one colour's corrections). This is the same preconditioner, to rounding, as recomputing the
// even-odd residual with the operator between colours, which it does otherwise (and with
// boundary_update off). Additive applies to all blocks at once from r = b.
//
// Cycles (Luscher's n_cy): the application repeats, each cycle from the residual
// b - A x of the sum x of the earlier cycles' corrections (for SAP with the boundary update the
// residual the colour steps leave, else the operator with communication), i.e. a Richardson
// iteration preconditioned by one cycle; every correction is weighted by omega.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "src/core/lattice.h"
#include "src/core/memory.h"
#include "solvers/solvers.h"

namespace latke {

enum class SchwarzType { additive, multiplicative };
const char* to_string(SchwarzType t);
/// @brief additive or multiplicative; anything else is an error naming the value.
SchwarzType parse_schwarz_type(const std::string& name);

/// The defaults are Luscher's SAP (multiplicative, 5 cycles of 4 MR steps) on blocks that a
/// team solves on chip: the fastest time to solution of the settings compared in
/// docs/solvers.md. The multigrid smoother has its own (schwarz_smoother_param).
struct SchwarzParam {
  Coords block{8, 4, 4, 4};
  int iterations = 4;  ///< MR steps per block per application (per colour for multiplicative)
  Precision precision = Precision::half;
  SchwarzType type = SchwarzType::multiplicative;
  double omega = 1.0;  ///< relaxation weight on each correction
  int cycles = 5;      ///< Schwarz cycles per application
  bool on_chip = true; ///< block solves in one kernel, blocks in shared memory, where the operator can
  bool adapt_block = true;  ///< block is a default: schwarz_block_for fits it to the local volume
  /// The block solves in FP16 pair arithmetic, two blocks per team (WilsonCloverOperator::
  /// solve_blocks; good to about 1e-3 of each block's norm): on CUDA where the blocks can (half
  /// precision, on chip, the pair's spinors and links fit a team's shared memory), never, or
  /// always (an error where they cannot; on the CPU FP16 is emulated, for tests).
  enum class HalfPairs { where_possible, off, on };
  HalfPairs half_pairs = HalfPairs::where_possible;
  /// Multiplicative: the residual between colours from the block kernel and the hops across
  /// block boundaries where the operator can and the colours are proper (above); off: from the
  /// operator with communication.
  bool boundary_update = true;
};

/// @brief The multigrid's fine-level smoother by default: one additive cycle on 4^4 blocks
/// (no communication; more smoothing is more smoothing steps).
inline SchwarzParam schwarz_smoother_param() {
  SchwarzParam p;
  p.block = Coords{4, 4, 4, 4};
  p.type = SchwarzType::additive;
  p.cycles = 1;
  return p;
}

/// @brief The block to use on `lat`: p.block, or where p.adapt_block each extent halved (down
/// to 2) until it divides the local extent, as the multigrid's default aggregates adapt.
Coords schwarz_block_for(const Lattice& lat, const SchwarzParam& p);

/// @brief Whether red-black block colours are a proper 2-colouring of `lat` (no two blocks of a
/// colour share a face, across the periodic boundaries too): every dimension has one block or an
/// even number of them. SAP's boundary update needs it (elsewhere the residual is recomputed).
bool schwarz_colours_proper(const Lattice& lat, const Coords& block);

/// @brief Whether the preconditioner needs the operator with communication (the `full` of
/// the constructor): multiplicative, or more than one cycle.
inline bool schwarz_needs_full_operator(const SchwarzParam& p) {
  return p.type == SchwarzType::multiplicative || p.cycles > 1;
}

class SchwarzPreconditioner final : public Preconditioner {
 public:
  /// @param local the domain-local operator (blocks of param.block) in param.precision.
  /// @param full the same operator with communication in param.precision (needed when
  ///        schwarz_needs_full_operator(param); may be null otherwise).
  SchwarzPreconditioner(std::shared_ptr<LinearOperator> local, std::shared_ptr<LinearOperator> full,
                        const SchwarzParam& param);
  /// The operator in param.precision for a block: domain-local for param.block, with
  /// communication for {0,0,0,0}.
  using OperatorFor = std::function<std::shared_ptr<LinearOperator>(const Coords& block)>;
  /// @param op gives the domain-local operator, and the full one where
  ///        schwarz_needs_full_operator(param).
  SchwarzPreconditioner(const OperatorFor& op, const SchwarzParam& param);
  ~SchwarzPreconditioner() override;
  /// @brief out = K in; double (or any precision) fields of the operator's shape.
  void apply(ColorSpinorField& out, const ColorSpinorField& in) override;
  /// @brief K in with `cycles` cycles instead of param().cycles: for SAP the same as that many
  /// one-cycle applications, each on the residual the previous ones left (x += K1 (in - A x)
  /// from x = 0), without the operator between them where the residual is updated across
  /// block boundaries. Multiplicative, or a preconditioner that has the full operator.
  void apply_cycles(ColorSpinorField& out, const ColorSpinorField& in, int cycles);
  std::string describe() const override;
  const SchwarzParam& param() const { return param_; }
  /// Blocks on this rank.
  int block_count() const { return n_blocks_; }
  /// The block operator, for views.
  std::string block_operator() const { return local_->describe(); }
  /// Domain-local operator applications per apply (for reports).
  long local_applications() const { return local_applications_; }
  /// Whether the block solves run on chip (one kernel per application and colour).
  bool on_chip() const { return on_chip_; }
  /// Whether they run in FP16 pairs (param().half_pairs where the blocks can).
  bool half_pairs() const { return half_pairs_; }
  /// Whether SAP's residual is updated across block boundaries only (param().boundary_update
  /// where the operators can).
  bool boundary_update() const { return boundary_update_; }
  /// How the blocks are solved, for views: "on chip in FP16 pairs", "on chip" or "streamed".
  const char* block_solves() const { return half_pairs_ ? "on chip in FP16 pairs" : on_chip_ ? "on chip" : "streamed"; }

 private:
  /// MR steps on all blocks of colour `colour` (-1: all), from x = 0, with r holding the
  /// right-hand side on entry; x receives the block solutions.
  void block_mr(int colour);

  std::shared_ptr<LinearOperator> local_, full_;
  SchwarzParam param_;
  int n_blocks_ = 0;
  bool on_chip_ = false;
  bool half_pairs_ = false;
  bool boundary_update_ = false;
  /// SAP with boundary updates: the residual's s_p = A_pp^-1 R_p is r_, the sum acc_; R_q and
  /// each colour's correction dx_[c] (full; zero on the other colour's blocks, always).
  void apply_boundary_sap(ColorSpinorField& out, const ColorSpinorField& in, int cycles);
  ColorSpinorField x_, r_, ar_, acc_;
  std::unique_ptr<ColorSpinorField> r_q_, dx_[2];
  Buffer sums_;
  long local_applications_ = 0;
};

/// @brief Check a block shape against a lattice: positive, even extents dividing the local
/// extents; fails naming the block, the dimension and the local extent.
void check_schwarz_block(const Lattice& lat, const Coords& block);

}  // namespace latke
