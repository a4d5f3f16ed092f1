// Clover fields: per site two 6x6 Hermitian chiral blocks (72 reals; accessors.h gives the
// packing), for the site term A = (4 + m) + C_sw or its inverse. Half precision: one norm per
// chiral block and site.
#pragma once

#include <memory>

#include "src/core/lattice.h"
#include "src/core/memory.h"
#include "src/fields/accessors.h"
#include "src/fields/precision.h"

namespace latke {

struct CloverParam {
  Precision precision = Precision::double_;
  Backend backend = Backend::cpu;
};

class CloverField {
 public:
  CloverField(std::shared_ptr<const Lattice> lattice, const CloverParam& param);

  const Lattice& lattice() const { return *lattice_; }
  Precision precision() const { return param_.precision; }
  Backend backend() const { return param_.backend; }
  std::size_t bytes() const;

  template <typename Store>
  CloverAccessor<Store> accessor(int parity) const {
    CloverAccessor<Store> a;
    const std::size_t vcb = lattice_->volume_cb();
    a.a.data = static_cast<Store*>(data_->data()) + parity * 72 * vcb;
    a.a.norm = norm_ ? static_cast<float*>(norm_->data()) + parity * 2 * vcb : nullptr;
    a.a.stride = static_cast<int>(vcb);
    return a;
  }

  /// @brief Copy from another clover field, converting precision.
  void copy_from(const CloverField& src);

 private:
  std::shared_ptr<const Lattice> lattice_;
  CloverParam param_;
  std::shared_ptr<Buffer> data_, norm_;
};

}  // namespace latke
