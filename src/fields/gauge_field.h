// Gauge fields: four links per site in double, single or half storage, 18 or 12 reals per
// link (12: third row rebuilt), coalesced layout with block (mu, parity) — see accessors.h.
// Half precision scales by the largest stored link entry in the whole lattice (the first two
// rows with 12 reals; at most 1 for SU(3)).
#pragma once

#include <memory>
#include <vector>

#include "src/core/complex.h"
#include "src/core/lattice.h"
#include "src/core/memory.h"
#include "src/fields/accessors.h"
#include "src/fields/precision.h"

namespace latke {

struct GaugeParam {
  Precision precision = Precision::double_;
  Reconstruct reconstruct = Reconstruct::r18;
  Backend backend = Backend::cpu;
};

class GaugeField {
 public:
  GaugeField(std::shared_ptr<const Lattice> lattice, const GaugeParam& param);

  const Lattice& lattice() const { return *lattice_; }
  const GaugeParam& param() const { return param_; }
  Precision precision() const { return param_.precision; }
  Reconstruct reconstruct() const { return param_.reconstruct; }
  Backend backend() const { return param_.backend; }
  std::size_t bytes() const { return bytes_; }
  float scale() const { return scale_; }

  template <typename Store, Reconstruct R, typename Compute = typename compute_type<Store>::type>
  GaugeAccessor<Store, R, Compute> accessor() const {
    GaugeAccessor<Store, R, Compute> a;
    a.data = static_cast<Store*>(data_->data());
    a.scale = scale_;
    a.stride = lattice_->volume_cb();
    return a;
  }

  /// @brief Load links from a host array over the local volume in lexicographic order
  /// (conventions.h: [site][mu][row][col]). Reconstruct 12 checks that the links are SU(3)
  /// (to 1e-6) and fails naming the worst deviation otherwise, unless su3_checked says the
  /// caller has checked these links already.
  void from_lexicographic(const std::vector<Complex<double>>& host, bool su3_checked = false);
  /// @brief The links as a host array over the local volume (rows rebuilt for 12).
  void to_lexicographic(std::vector<Complex<double>>& host) const;
  /// @brief This field's links converted from another field of the same lattice and backend,
  /// on that backend (no host staging). `from` must hold what this field stores: a precision
  /// at least as high, and 18 reals unless this field stores 12 (its SU(3) check carries over).
  /// The result equals from_lexicographic of the links `from` was loaded from, bit for bit.
  void copy_from(const GaugeField& from);
  /// @brief Whether links stored as `from` can give links stored as `to` by copy_from (the
  /// same backend, a precision at least as high, 18 reals unless `to` stores 12).
  static bool converts(const GaugeParam& from, const GaugeParam& to);

 private:
  /// Convert between the host array and `stage`, a CPU field of the same layout.
  void convert(const GaugeField& stage, Complex<double>* host, bool to_field) const;

  std::shared_ptr<const Lattice> lattice_;
  GaugeParam param_;
  std::shared_ptr<Buffer> data_;
  std::size_t bytes_ = 0;
  float scale_ = 1.0f;
};

/// How far one link is from SU(3).
struct Su3Deviation {
  double unitarity = 0;  ///< the largest |(U U^dag - 1)_ij|
  double det = 0;        ///< |det U - 1|
  double worst() const { return unitarity > det ? unitarity : det; }
};
/// @brief The deviation of one link (9 entries, row by row) from SU(3); both parts are
/// infinite when an entry is not finite (so that a NaN link never looks like SU(3)).
Su3Deviation su3_link_deviation(const Complex<double>* u);

/// @brief Largest |U U^dag - 1| entry and |det U - 1| over the host links (this rank's);
/// infinite when a link has an entry that is not finite.
double su3_deviation(const std::vector<Complex<double>>& host_links);

}  // namespace latke
