// The coarse-grid operator of adaptive multigrid: a nearest-neighbour stencil of dense
// N x N blocks (N = 2 Nvec: two chiralities of Nvec colors) on a coarse lattice,
//
//   (D_c e)(a) = X(a) e(a) + sum_mu [ Y_{+mu}(a) e(a + mu) + Y_{-mu}(a) e(a - mu) ],
//
// assembled as the Galerkin product R M P of the level above (galerkin.h). Boundary phases
// and everything else of the fine operator are inside the blocks; hops wrap periodically
// and cross ranks through a halo exchange of whole coarse sites, overlapped with the block
// products that read no ghost.
//
// Even-odd on coarse levels, with Yhat_d(a) = X(a)^-1 Y_d(a) computed once:
//   Mhat_pp = 1 - Yhat_pq Yhat_qp                       (on fields of parity p)
//   bhat_p  = X_pp^-1 b_p - Yhat_pq X_qq^-1 b_q,        x_q = X_qq^-1 b_q - Yhat_qp x_p
// so that Mhat x_p = bhat_p solves D_c x = b (Mhat = X_pp^-1 times the Schur complement).
//
// Daggers by the coarse gamma_5 = diag(+1 on chirality 0, -1 on chirality 1): the Galerkin
// product of a gamma_5-Hermitian operator with a chirality-split basis is Gamma_5-Hermitian,
// D_c^dag = Gamma_5 D_c Gamma_5.
//
// Storage: blocks in double, single or half (16-bit with one scale per block), layout per
// parity [site][d][column][row] with d = 2 mu + (0: forward, 1: backward) and d = 8 the site
// block, so that R consecutive rows of a column are one aligned word. Vectors in double or
// single. The stencil runs in two passes: one thread per (site, block, R rows; R = 4 when 4
// divides N, else 2; on small levels also per segment of the block's columns, as many as the
// autotuner chooses) for the block products, then one per (site, row) summing them (coarse
// lattices are small). Over a set of fields (apply_set) it runs in one pass instead, so that a
// block is read about once for the whole set: up to 16 single-precision fields (a propagator's
// columns in the cycles) by one team of threads per site, which streams the site's blocks through
// shared memory while it multiplies; larger sets (the multigrid setup's null vectors, solved
// together) by one thread per (site, R rows, 1 or 2 fields) through all nine blocks, or, with
// single blocks, N a multiple of 16 and a lattice large enough, on tensor cores by default
// (SetMath), one warp per (site, 16 rows, 32 fields).
//
// Flops (for reports): 8 N^2 per site for each block applied.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "src/core/halo.h"
#include "src/core/lattice.h"
#include "src/core/memory.h"
#include "src/fields/color_spinor_field.h"
#include "operators/linear_operator.h"

namespace latke::mg {

/// How apply_set multiplies single-precision blocks by a set of more than 16 vectors when N is a
/// multiple of 16 (otherwise, and for double or half blocks, always fp32; sets of at most 16
/// single-precision vectors take the team kernel, in FP32): on the CUDA cores in FP32, or on
/// tensor cores as TF32 products of split operands (tf32x3: three products each, nearly FP32's
/// accuracy). automatic: tf32x3 on CUDA where the lattice gives a set of 32 at least 1024 warps,
/// else fp32 (on the CPU the tensor-core kernel is emulated lane by lane, for tests).
enum class SetMath { automatic, fp32, tf32x3 };
/// @brief automatic, fp32 or tf32x3; anything else is an error naming `what` (the option) and the value.
SetMath parse_set_math(const std::string& name, const std::string& what = "set arithmetic");
const char* to_string(SetMath m);

/// @brief The rule for the column segments of the one-field stencil's first pass
/// (coarse_stencil.cpp; where the autotuner does not choose them): a power of two, at most
/// `most`, that gives a lattice of volume_cb sites per parity about one full occupancy of a
/// large GPU in threads, each segment at least 8 of the N = n columns; 1 where the lattice
/// alone fills the device.
int column_split(long volume_cb, int n_parts, int n, int most = 8);

/// Scratch of the coarse stencil's first pass, grown on demand, the most column segments it
/// may split a block into, and whether it times the candidates (else column_split's rule).
struct PartsScratch {
  Buffer* buffer;
  Backend backend;
  int most;
  bool tune;
  /// At least `bytes` of the backend's memory (the buffer reallocated when smaller).
  void* get(std::size_t bytes) const;
};

class CoarseOperator {
 public:
  static constexpr int n_blocks = 9;  ///< 8 hops and the site block, per site

  /// @param nvec colors per chirality (N = 2 nvec); blocks stored in `precision` (all zero).
  CoarseOperator(std::shared_ptr<const Lattice> lattice, int nvec, Precision precision, Backend backend);
  ~CoarseOperator();

  /// @brief A copy of this finalized operator with its blocks stored in half (the setup's
  /// inverse iteration on coarse levels runs on it, its reliable updates on this one). Fails
  /// unless this operator is finalized and stored in double or single. schur_only (an
  /// even-odd operator's): only the even-odd blocks, half the memory, for a smoother that
  /// applies Mhat alone; the copy's apply, apply_split and full apply_set then fail.
  std::shared_ptr<CoarseOperator> in_half(bool schur_only = false) const;

  /// @brief Before finalize: the same operator on `onto`, the same global lattice on fewer
  /// ranks (down to one, a communicator of its own), with the assembled blocks of the ranks of
  /// `group` (those whose parts make up this rank's part of `onto`; all of this operator's
  /// ranks when onto is on one) gathered into it (multigrid agglomeration). Collective over
  /// `group`; the ranks of a group get the same blocks. The copy is not finalized.
  std::shared_ptr<CoarseOperator> gathered(std::shared_ptr<const Lattice> onto, MPI_Comm group) const;

  const std::shared_ptr<const Lattice>& lattice() const { return lattice_; }
  int nvec() const { return nvec_; }
  int n() const { return 2 * nvec_; }
  Precision precision() const { return precision_; }
  Backend backend() const { return backend_; }
  /// Fields the operator acts on: 2 spins x nvec colors, in precision p, full or one parity.
  SpinorParam field_param(Precision p, Subset subset) const;

  /// @brief out = D_c in, or D_c^dag in (full fields, double or single).
  void apply(ColorSpinorField& out, const ColorSpinorField& in, bool dagger = false);
  /// @brief The operator on `in` split for the Galerkin product of the next level (galerkin.h),
  /// with aggregates of extents `block` on this lattice: site(x) = X(x) in(x) plus the hops
  /// into x from its own aggregate, and faces[mu](x) = Y_{+mu}(x) in(x + mu) on the last slice
  /// of x's aggregate in mu plus Y_{-mu}(x) in(x - mu) on its first slice, zero elsewhere. So
  /// site + sum_mu faces[mu] = D_c in. Full fields, double or single.
  void apply_split(ColorSpinorField& site, ColorSpinorField* const faces[4], const ColorSpinorField& in,
                   const Coords& block);
  /// @brief out[k] = D_c in[k] (full fields) or Mhat in[k] (fields of one parity; needs
  /// finalize(true)) for every k, on two sets of single-precision fields made by
  /// ColorSpinorField::make_set, of equal size: one pass over the blocks (per parity) for the
  /// whole set, each block read about once rather than once per field. The multigrid setup
  /// solves a level's null vectors together through it.
  void apply_set(std::vector<ColorSpinorField>& out, const std::vector<ColorSpinorField>& in);
  /// @brief How apply_set multiplies (SetMath): automatic resolves by the backend and the
  /// lattice, and blocks that are not single or N not a multiple of 16 always take fp32.
  void set_math(SetMath m);
  SetMath set_math() const { return set_math_; }
  /// @brief The most column segments the one-field stencil splits its blocks into on small
  /// levels (1: whole columns, one thread per block and rows), and whether the autotuner
  /// chooses among 1, 2, .. most by timing each form of the stencil at its first call (CUDA;
  /// the tune cache keeps the choice) rather than column_split's rule. The default: at most 8,
  /// tuned; LATKE_COARSE_SPLIT=k sets k and the rule (to compare: 1 keeps whole columns).
  void set_column_split(int most, bool tune = false);
  /// @brief out_p = Mhat in_p on fields of one parity; needs prepare_even_odd().
  void apply_schur(ColorSpinorField& out, const ColorSpinorField& in);
  /// @brief bhat (parity p, the field's) from the full source b; needs prepare_even_odd().
  void prepare_source(ColorSpinorField& bhat, const ColorSpinorField& b);
  /// @brief The full solution from x_p and the full source b; needs prepare_even_odd().
  void reconstruct(ColorSpinorField& x, const ColorSpinorField& x_p, const ColorSpinorField& b);
  /// @brief prepare_source for a set: sets (make_set) of single-precision fields, b full and
  /// bhat of one parity; one pass over the blocks per step for the whole set, as apply_set.
  void prepare_source_set(std::vector<ColorSpinorField>& bhat, const std::vector<ColorSpinorField>& b);
  /// @brief reconstruct for a set: x and b sets of full fields, x_p of one parity (single
  /// precision, make_set); one pass over the blocks per step for the whole set.
  void reconstruct_set(std::vector<ColorSpinorField>& x, const std::vector<ColorSpinorField>& x_p,
                       const std::vector<ColorSpinorField>& b);

  /// @brief Assembly (galerkin.cpp): block d, column col of every site of probe class
  /// `target` (probe_classes.h) taken from the coarse field `values` (row r of the block =
  /// component r of the site).
  void set_column(int d, int col, const ColorSpinorField& values, int target);
  /// @brief After assembly: store the blocks in the operator's precision (half: scaled),
  /// and, when even_odd, compute X^-1 and Yhat = X^-1 Y. Fails naming the site count when
  /// some X(a) is singular.
  void finalize(bool even_odd);
  bool even_odd() const { return even_odd_; }
  /// Seconds finalize took (the even-odd blocks and the storage conversion), device work included.
  double finalize_seconds() const { return finalize_seconds_; }

  /// Flops of one application on this rank: full operator or Mhat.
  double flops(bool schur) const;
  /// Bytes of blocks on the backend.
  std::size_t bytes() const;
  std::string halo_description() const;

 private:
  struct Links {
    Buffer data, scale;
  };
  struct Unassembled {};
  /// An operator with no blocks yet and no assembly buffer (in_half fills it).
  CoarseOperator(std::shared_ptr<const Lattice> lattice, int nvec, Precision precision, Backend backend, Unassembled);
  /// Blocks `src` stored in `from` (double or single) copied to half, one scale per block;
  /// queued, not waited for.
  Links half_copy(const Links& src, Precision from) const;
  /// The halo exchange of the set stencil's faces for `count` single-precision fields; null on one rank.
  HaloExchange* set_halo(int count);
  /// The halo exchange for vectors of real_bytes per real (slot 0 double, 1 single); null on one rank.
  HaloExchange* halo_for(int slot, std::size_t real_bytes);
  /// Scratch for the stencil's per-block parts (volume_cb x 9 x segments x n complex numbers).
  PartsScratch parts() { return PartsScratch{&parts_, backend_, split_most_, split_tune_}; }
  /// A scratch field per vector precision (slot 0 double, 1 single) and subset.
  ColorSpinorField& scratch(int slot, Precision p, Subset subset);
  void require_field(const ColorSpinorField& f, const char* what, bool full) const;
  /// Fails for a copy that holds only the even-odd blocks (in_half(true)), naming what needed the others.
  void require_full_blocks(const char* what) const;
  /// Fields of a set: single precision, one subset, laid out as make_set lays them out.
  void require_set(const std::vector<ColorSpinorField>& set, const char* what, bool full) const;

  std::shared_ptr<const Lattice> lattice_;
  int nvec_;
  Precision precision_;
  Backend backend_;
  bool even_odd_ = false;
  SetMath set_math_;
  int split_most_;
  bool split_tune_;
  double finalize_seconds_ = 0;
  Links assembly_;  ///< double or single blocks while assembling (freed by finalize unless used)
  Precision assembly_precision_;
  Links links_;                            ///< Y and X in precision_
  Links hat_;                              ///< Yhat and X^-1 in precision_ (even-odd)
  std::unique_ptr<HaloExchange> halo_[2];  ///< by vector precision: double, single
  std::unique_ptr<ColorSpinorField> scratch_[2][3];
  Buffer parts_;
  std::unique_ptr<HaloExchange> set_halo_;  ///< apply_set's, for set_halo_count_ fields
  int set_halo_count_ = 0;
  std::vector<ColorSpinorField> set_scratch_;       ///< apply_set's and reconstruct_set's parity-q fields (even-odd)
  std::vector<ColorSpinorField> set_full_scratch_;  ///< prepare_source_set's full fields
};

/// The coarse operator as a LinearOperator: D_c on full fields or Mhat on one parity, with
/// vectors in the given precision.
class CoarseLinear final : public SchurOperator {
 public:
  CoarseLinear(std::shared_ptr<CoarseOperator> op, bool even_odd, int parity, Precision vectors);
  void apply(ColorSpinorField& out, const ColorSpinorField& in, bool dagger = false) override;
  SpinorParam field_param() const override;
  const std::shared_ptr<const Lattice>& lattice() const override { return op_->lattice(); }
  double flops() const override { return op_->flops(even_odd_); }
  std::string describe() const override;
  void prepare(ColorSpinorField& bhat, const ColorSpinorField& b) override { op_->prepare_source(bhat, b); }
  void reconstruct(ColorSpinorField& x, const ColorSpinorField& x_p, const ColorSpinorField& b) override {
    op_->reconstruct(x, x_p, b);
  }
  /// In one pass for sets of single-precision vectors; field by field otherwise.
  void prepare_set(std::vector<ColorSpinorField>& bhat, const std::vector<ColorSpinorField>& b) override;
  void reconstruct_set(std::vector<ColorSpinorField>& x, const std::vector<ColorSpinorField>& x_p,
                       const std::vector<ColorSpinorField>& b) override;
  /// The coarse operator's apply_set (single-precision vectors).
  void apply_set(std::vector<ColorSpinorField>& out, const std::vector<ColorSpinorField>& in) override {
    op_->apply_set(out, in);
  }
  bool applies_sets() const override { return vectors_ == Precision::single; }
  bool splits() const override { return !even_odd_; }
  void apply_split(ColorSpinorField& site, ColorSpinorField* const faces[4], const ColorSpinorField& in,
                   const Coords& block) override;
  CoarseOperator& op() { return *op_; }

 private:
  std::shared_ptr<CoarseOperator> op_;
  bool even_odd_;
  int parity_;
  Precision vectors_;
};

}  // namespace latke::mg
