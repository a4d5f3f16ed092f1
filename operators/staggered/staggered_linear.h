// The staggered operator seen by solvers (operators/linear_operator.h): M on full fields, or the
// even-odd normal operator 4m^2 - D_pq D_qp on fields of one parity (self-adjoint), whose
// shifts (the normal operator at other masses) are fused into its second kernel.
#pragma once

#include <memory>
#include <string>

#include "operators/linear_operator.h"
#include "operators/staggered/staggered.h"

namespace latke {

class StaggeredLinear final : public LinearOperator {
 public:
  /// @param normal false: M on full fields; true: the normal operator on fields of `parity`.
  StaggeredLinear(std::shared_ptr<StaggeredOperator> op, bool normal, int parity)
      : op_(std::move(op)), normal_(normal), parity_(parity) {}
  void apply(ColorSpinorField& out, const ColorSpinorField& in, bool dagger = false) override {
    if (normal_)
      op_->apply_normal(out, in);
    else
      op_->apply(out, in, dagger);
  }
  void apply_shifted(ColorSpinorField& out, const ColorSpinorField& in, double sigma) override {
    if (normal_)
      op_->apply_normal(out, in, sigma);
    else
      LinearOperator::apply_shifted(out, in, sigma);
  }
  double shift_flops() const override { return normal_ ? 0.0 : LinearOperator::shift_flops(); }
  SpinorParam field_param() const override {
    return op_->field_param(normal_ ? (parity_ == 0 ? Subset::even : Subset::odd) : Subset::full);
  }
  const std::shared_ptr<const Lattice>& lattice() const override { return op_->lattice_ptr(); }
  double flops() const override {
    const double vcb = op_->lattice().volume_cb(), d = op_->dslash_flops_per_site();
    return normal_ ? vcb * (2 * d + 12) : 2 * vcb * (d + 12);
  }
  std::string describe() const override {
    return std::string(op_->improved() ? "asqtad" : "naive") + " staggered " + (normal_ ? "normal operator" : "M") +
           ", " + to_string(op_->param().precision) + " precision";
  }
  StaggeredOperator& op() { return *op_; }

 private:
  std::shared_ptr<StaggeredOperator> op_;
  bool normal_;
  int parity_;
};

}  // namespace latke
