// Clover fields: storage and precision conversion.
#include "src/fields/clover_field.h"

#include "src/core/error.h"
#include "src/core/launch.h"
#include "src/fields/color_spinor_field.h"

namespace latke {

CloverField::CloverField(std::shared_ptr<const Lattice> lattice, const CloverParam& param)
    : lattice_(std::move(lattice)), param_(param) {
  const std::size_t vcb = lattice_->volume_cb();
  const MemoryKind k = memory_for(param.backend);
  data_ = std::make_shared<Buffer>(k, 2 * 72 * vcb * real_bytes(param.precision));
  zero_bytes(data_->data(), data_->bytes(), k, compute_stream());
  if (param.precision == Precision::half) {
    norm_ = std::make_shared<Buffer>(k, 2 * 2 * vcb * sizeof(float));
    zero_bytes(norm_->data(), norm_->bytes(), k, compute_stream());
  }
}

std::size_t CloverField::bytes() const { return data_->bytes() + (norm_ ? norm_->bytes() : 0); }

void CloverField::copy_from(const CloverField& src) {
  require(src.backend() == backend(), "clover copy between backends ", to_string(src.backend()), " and ",
          to_string(backend()));
  dispatch_precision(src.precision(), [&](auto si) {
    dispatch_precision(precision(), [&](auto so) {
      using SI = decltype(si);
      using SO = decltype(so);
      for (int p = 0; p < 2; ++p)
        launch(backend(), SiteCopyKernel<SI, SO, 72, 2>{src.accessor<SI>(p).a, accessor<SO>(p).a},
               {lattice_->volume_cb()});
    });
  });
}

}  // namespace latke
