// The Wilson-clover operator seen by solvers and preconditioners (operators/linear_operator.h):
// the full operator M or an even-odd Schur complement, possibly domain-local.
#pragma once

#include <memory>
#include <sstream>

#include "src/core/error.h"
#include "operators/linear_operator.h"
#include "operators/wilson_clover/wilson_clover.h"

namespace latke {

class WilsonCloverLinear final : public SchurOperator {
 public:
  /// @param even_odd false: M on full fields; true: Mhat (schur) on fields of `parity`.
  WilsonCloverLinear(std::shared_ptr<WilsonCloverOperator> op, bool even_odd, SchurType schur, int parity)
      : op_(std::move(op)), even_odd_(even_odd), schur_(schur), parity_(parity) {}
  void apply(ColorSpinorField& out, const ColorSpinorField& in, bool dagger = false) override {
    if (even_odd_)
      op_->apply_schur(out, in, schur_, dagger);
    else
      op_->apply(out, in, dagger);
  }
  SpinorParam field_param() const override {
    const WilsonCloverParam& p = op_->param();
    return SpinorParam{4, 3, p.precision, even_odd_ ? (parity_ == 0 ? Subset::even : Subset::odd) : Subset::full,
                       p.backend};
  }
  const std::shared_ptr<const Lattice>& lattice() const override { return op_->lattice_ptr(); }
  double flops() const override {
    const double vcb = op_->lattice().volume_cb();
    return even_odd_ ? vcb * (2 * (1320 + 504) + 48) : 2 * vcb * (1320 + 504 + 48);
  }
  std::string describe() const override {
    std::ostringstream s;
    s << "Wilson-clover " << (even_odd_ ? std::string("even-odd (") + to_string(schur_) + ")" : std::string("full"))
      << ", " << to_string(op_->param().precision) << " precision";
    if (op_->domain_local())
      s << ", domain-local blocks " << op_->param().block[0] << "x" << op_->param().block[1] << "x"
        << op_->param().block[2] << "x" << op_->param().block[3]
        << (op_->solves_blocks() && op_->block_frame() ? ", each in its temporal gauge on chip" : "");
    return s.str();
  }
  void apply_set(std::vector<ColorSpinorField>& out, const std::vector<ColorSpinorField>& in) override {
    if (even_odd_) return op_->apply_schur_set(out, in, schur_);
    LinearOperator::apply_set(out, in);
  }
  bool applies_sets() const override { return even_odd_ && op_->applies_sets(); }
  void release_set_scratch() override { op_->release_set_scratch(); }
  /// Even-odd form only (the Schur complement's maps, wilson_clover.h).
  void prepare(ColorSpinorField& bhat, const ColorSpinorField& b) override {
    require(even_odd_, "prepare: the full Wilson-clover operator has no even-odd source");
    op_->prepare_source(bhat, b, schur_);
  }
  void reconstruct(ColorSpinorField& x, const ColorSpinorField& x_p, const ColorSpinorField& b) override {
    require(even_odd_, "reconstruct: the full Wilson-clover operator has no even-odd solution");
    op_->reconstruct(x, x_p, b);
  }
  bool splits() const override { return !even_odd_ && !op_->domain_local(); }
  void apply_split(ColorSpinorField& site, ColorSpinorField* const faces[4], const ColorSpinorField& in,
                   const Coords& block) override {
    require(splits(), "apply_split: ", describe(), " cannot split its stencil (expected the full operator)");
    op_->apply_split(site, faces, in, block);
  }
  bool solves_blocks() const override { return even_odd_ && op_->solves_blocks(); }
  bool solves_block_pairs() const override { return even_odd_ && op_->solves_block_pairs(); }
  std::string why_no_block_pairs() const override {
    return even_odd_ ? op_->why_no_block_pairs() : "the full operator's blocks are not solved on chip (even-odd only)";
  }
  void solve_blocks(ColorSpinorField& x, const ColorSpinorField& b, int steps, int colour, bool half_pairs) override {
    require(solves_blocks(), "solve_blocks: ", describe(), " does not solve its blocks on chip");
    op_->solve_blocks(x, b, schur_, steps, colour, half_pairs);
  }
  bool solves_sap() const override {
    return even_odd_ && schur_ == SchurType::symmetric && (!op_->domain_local() || op_->solves_sap());
  }
  void sap_step(ColorSpinorField& s_p, ColorSpinorField& r_q, ColorSpinorField& acc_p, ColorSpinorField& dx, int steps,
                int colour, double omega, bool first, bool fresh_acc, bool half_pairs) override {
    require(solves_sap() && op_->domain_local(), "sap_step: ", describe(), " has no SAP step");
    op_->sap_blocks(WilsonCloverOperator::SapFields{&s_p, &r_q, &acc_p, &dx, omega, first, fresh_acc}, steps, colour,
                    half_pairs);
  }
  void sap_boundary(ColorSpinorField& s_p, ColorSpinorField& r_q, const ColorSpinorField& dx, const Coords& block,
                    int colour) override {
    require(solves_sap() && !op_->domain_local(), "sap_boundary: ", describe(), " has no SAP boundary update");
    op_->sap_boundary(s_p, r_q, dx, block, colour);
  }
  WilsonCloverOperator& op() { return *op_; }

 private:
  std::shared_ptr<WilsonCloverOperator> op_;
  bool even_odd_;
  SchurType schur_;
  int parity_;
};

}  // namespace latke
