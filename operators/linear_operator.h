// What Latke's native solvers and preconditioners apply: an operator on color-spinor fields of
// one shape and storage precision (full or one parity), with its adjoint. Operators
// (Wilson-clover in its full, even-odd and domain-local forms, staggered) implement it.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "src/core/error.h"
#include "src/fields/blas.h"
#include "src/fields/color_spinor_field.h"

namespace latke {

class LinearOperator {
 public:
  virtual ~LinearOperator() = default;
  /// @brief out = A in, or A^dag in.
  virtual void apply(ColorSpinorField& out, const ColorSpinorField& in, bool dagger = false) = 0;
  /// The shape, subset, precision and backend of the fields it acts on.
  virtual SpinorParam field_param() const = 0;
  virtual const std::shared_ptr<const Lattice>& lattice() const = 0;
  /// Flops of one application on this rank (QUDA's counting).
  virtual double flops() const = 0;
  /// "Wilson-clover even-odd (symmetric), single precision", for reports.
  virtual std::string describe() const = 0;

  /// @brief A zero field of the operator's shape.
  ColorSpinorField make_field() const { return ColorSpinorField(lattice(), field_param()); }

  /// @brief out = (A + sigma) in, for shifted systems (multi-shift and multi-mass solves).
  /// Operators that can fold the shift into their last kernel override this.
  virtual void apply_shifted(ColorSpinorField& out, const ColorSpinorField& in, double sigma) {
    apply(out, in);
    if (sigma != 0) blas::caxpby(blas::Cplx(sigma), in, blas::Cplx(1), out);
  }
  /// @brief out_k = A in_k for every field of two sets made by ColorSpinorField::make_set (of
  /// the operator's shape): field by field here; operators that read their coefficients once
  /// for the whole set override it (and applies_sets()).
  virtual void apply_set(std::vector<ColorSpinorField>& out, const std::vector<ColorSpinorField>& in) {
    require(out.size() == in.size(), "apply_set: sets of ", in.size(), " and ", out.size(),
            " fields; expected equal sizes");
    for (std::size_t k = 0; k < in.size(); ++k) apply(out[k], in[k]);
  }
  /// Whether apply_set runs in one pass over the operator for the whole set (so solving a set
  /// of systems together saves work rather than only moving it).
  virtual bool applies_sets() const { return false; }
  /// @brief Free the scratch fields that apply_set keeps between calls.
  virtual void release_set_scratch() {}
  /// Whether apply_split works: a nearest-neighbour stencil on full fields that can hand out
  /// its hops sorted by blocks (multigrid's Galerkin product, preconditioners/mg/galerkin.h).
  virtual bool splits() const { return false; }
  /// @brief A in split by blocks of extents `block` (each at least 2, dividing the local
  /// extents): site = the site term and the hops that stay inside a block; faces[mu] = the
  /// hops across the block boundaries in mu (forward on a block's last slice, backward on its
  /// first), zero elsewhere; so site + sum_mu faces[mu] = A in. Only when splits().
  virtual void apply_split(ColorSpinorField& site, ColorSpinorField* const faces[4], const ColorSpinorField& in,
                           const Coords& block) {
    (void)site, (void)faces, (void)in, (void)block;
    fail("apply_split: ", describe(), " cannot split its stencil");
  }
  /// Whether solve_blocks works: a domain-local operator that solves its blocks on chip.
  virtual bool solves_blocks() const { return false; }
  /// Whether solve_blocks works with half_pairs.
  virtual bool solves_block_pairs() const { return false; }
  /// Why it does not (empty when it does).
  virtual std::string why_no_block_pairs() const { return describe() + " has no block solver in FP16 pairs"; }
  /// @brief x = `steps` minimal-residual steps from zero on each block's system A_B x = b, on
  /// the blocks of colour `colour` (0 or 1, red-black over the global block grid; x zero on the
  /// others) or on all (-1). Only when solves_blocks(). half_pairs: in FP16 pair arithmetic
  /// where the operator has it (Wilson-clover in half precision), else an error.
  virtual void solve_blocks(ColorSpinorField& x, const ColorSpinorField& b, int steps, int colour, bool half_pairs) {
    (void)x, (void)b, (void)steps, (void)colour, (void)half_pairs;
    fail("solve_blocks: ", describe(), " does not solve its blocks on chip");
  }
  /// Whether sap_step (the domain-local form) or sap_boundary (the form with communication)
  /// works: Wilson-clover's symmetric even-odd operator (WilsonCloverOperator::sap_blocks).
  virtual bool solves_sap() const { return false; }
  /// @brief One colour step of Luscher's SAP with the residual kept on both parities, s_p =
  /// A_pp^-1 R_p and r_q: on the blocks of `colour`, `steps` MR steps on the Schur residual, the
  /// full block correction dx = omega X (both parities; the other colour's blocks untouched),
  /// acc_p += omega x_p, and the blocks' residual updated from MR's (WilsonCloverOperator::
  /// sap_blocks). first: r_q is zero; fresh_acc: acc_p is written, not added to. Only when
  /// solves_sap() on the domain-local form.
  virtual void sap_step(ColorSpinorField& s_p, ColorSpinorField& r_q, ColorSpinorField& acc_p, ColorSpinorField& dx,
                        int steps, int colour, double omega, bool first, bool fresh_acc, bool half_pairs) {
    (void)s_p, (void)r_q, (void)acc_p, (void)dx, (void)steps, (void)colour, (void)omega, (void)first, (void)fresh_acc,
        (void)half_pairs;
    fail("sap_step: ", describe(), " has no SAP step");
  }
  /// @brief The rest of the residual update after sap_step on the blocks of `colour`: the hops
  /// of dx that cross block boundaries (extents `block`). Only when solves_sap() on the form
  /// with communication.
  virtual void sap_boundary(ColorSpinorField& s_p, ColorSpinorField& r_q, const ColorSpinorField& dx,
                            const Coords& block, int colour) {
    (void)s_p, (void)r_q, (void)dx, (void)block, (void)colour;
    fail("sap_boundary: ", describe(), " has no SAP step");
  }
  /// Flops that a non-zero shift adds to one application on this rank (0 when it is fused).
  virtual double shift_flops() const {
    const SpinorParam p = field_param();
    return 4.0 * p.site_reals() * lattice()->volume_cb() * p.n_parity();
  }
};

/// A + sigma of an operator (sigma real), applied through A.apply_shifted.
class ShiftedOperator final : public LinearOperator {
 public:
  ShiftedOperator(LinearOperator& a, double sigma) : a_(a), sigma_(sigma) {}
  void apply(ColorSpinorField& out, const ColorSpinorField& in, bool dagger = false) override {
    if (!dagger) return a_.apply_shifted(out, in, sigma_);
    a_.apply(out, in, true);
    if (sigma_ != 0) blas::caxpby(blas::Cplx(sigma_), in, blas::Cplx(1), out);
  }
  SpinorParam field_param() const override { return a_.field_param(); }
  const std::shared_ptr<const Lattice>& lattice() const override { return a_.lattice(); }
  double flops() const override { return a_.flops() + (sigma_ != 0 ? a_.shift_flops() : 0.0); }
  std::string describe() const override { return a_.describe() + " + " + std::to_string(sigma_); }
  double sigma() const { return sigma_; }

 private:
  LinearOperator& a_;
  double sigma_;
};

/// The even-odd form of an operator M on fields of one parity p (a Schur complement Mhat),
/// with the maps between M's system and its own: Mhat x_p = bhat solves M x = b.
class SchurOperator : public LinearOperator {
 public:
  /// @brief bhat (parity p) from the full right-hand side b.
  virtual void prepare(ColorSpinorField& bhat, const ColorSpinorField& b) = 0;
  /// @brief The full solution x from x_p and the full right-hand side b.
  virtual void reconstruct(ColorSpinorField& x, const ColorSpinorField& x_p, const ColorSpinorField& b) = 0;
  /// @brief prepare for every field of a set (equal sizes); field by field unless the operator
  /// does a set in one pass.
  virtual void prepare_set(std::vector<ColorSpinorField>& bhat, const std::vector<ColorSpinorField>& b) {
    require(bhat.size() == b.size(), "prepare_set: sets of ", b.size(), " and ", bhat.size(),
            " fields; expected equal sizes");
    for (std::size_t k = 0; k < b.size(); ++k) prepare(bhat[k], b[k]);
  }
  /// @brief reconstruct for every field of a set (equal sizes); field by field unless the
  /// operator does a set in one pass.
  virtual void reconstruct_set(std::vector<ColorSpinorField>& x, const std::vector<ColorSpinorField>& x_p,
                               const std::vector<ColorSpinorField>& b) {
    require(x.size() == b.size() && x_p.size() == b.size(), "reconstruct_set: sets of ", x.size(), ", ", x_p.size(),
            " and ", b.size(), " fields; expected equal sizes");
    for (std::size_t k = 0; k < b.size(); ++k) reconstruct(x[k], x_p[k], b[k]);
  }
};

/// A^dag A (or A A^dag) of an operator: Hermitian positive definite, for CGNR and CGNE.
class NormalOperator final : public LinearOperator {
 public:
  NormalOperator(LinearOperator& a, bool a_adag) : a_(a), a_adag_(a_adag), tmp_(a.make_field()) {}
  void apply(ColorSpinorField& out, const ColorSpinorField& in, bool = false) override {
    a_.apply(tmp_, in, a_adag_);
    a_.apply(out, tmp_, !a_adag_);
  }
  SpinorParam field_param() const override { return a_.field_param(); }
  const std::shared_ptr<const Lattice>& lattice() const override { return a_.lattice(); }
  double flops() const override { return 2 * a_.flops(); }
  std::string describe() const override { return (a_adag_ ? "A A^dag of " : "A^dag A of ") + a_.describe(); }

 private:
  LinearOperator& a_;
  bool a_adag_;
  ColorSpinorField tmp_;
};

/// An operator built on first use: a mixed-precision solver's fallback precision, which most
/// solves never need (it would hold a second copy of the links).
class DeferredOperator final : public LinearOperator {
 public:
  explicit DeferredOperator(std::function<std::shared_ptr<LinearOperator>()> make) : make_(std::move(make)) {}
  void apply(ColorSpinorField& out, const ColorSpinorField& in, bool dagger = false) override {
    get().apply(out, in, dagger);
  }
  void apply_shifted(ColorSpinorField& out, const ColorSpinorField& in, double sigma) override {
    get().apply_shifted(out, in, sigma);
  }
  double shift_flops() const override { return get().shift_flops(); }
  SpinorParam field_param() const override { return get().field_param(); }
  const std::shared_ptr<const Lattice>& lattice() const override { return get().lattice(); }
  double flops() const override { return get().flops(); }
  std::string describe() const override { return get().describe(); }

 private:
  LinearOperator& get() const {
    if (!op_) op_ = make_();
    return *op_;
  }
  std::function<std::shared_ptr<LinearOperator>()> make_;
  mutable std::shared_ptr<LinearOperator> op_;
};

}  // namespace latke
