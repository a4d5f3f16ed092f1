// What Latke's native solvers and preconditioners apply: an operator on color-spinor fields of
// one shape and storage precision (full or one parity), with its adjoint. Operators
// (Wilson-clover in its full, even-odd and domain-local forms, staggered) implement it.
#pragma once

#include <memory>
#include <string>

#include "latke/fields/color_spinor_field.h"

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
};

/// The even-odd form of an operator M on fields of one parity p (a Schur complement Mhat),
/// with the maps between M's system and its own: Mhat x_p = bhat solves M x = b.
class SchurOperator : public LinearOperator {
 public:
  /// @brief bhat (parity p) from the full right-hand side b.
  virtual void prepare(ColorSpinorField& bhat, const ColorSpinorField& b) = 0;
  /// @brief The full solution x from x_p and the full right-hand side b.
  virtual void reconstruct(ColorSpinorField& x, const ColorSpinorField& x_p, const ColorSpinorField& b) = 0;
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

}  // namespace latke
