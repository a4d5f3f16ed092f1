// Gauge-covariant smearing of quark fields on time slices, for smeared sources and sinks:
// N steps of
//   wuppertal   psi <- (psi + alpha H psi) / (1 + 6 alpha)          (Gusken, Nucl. Phys. Proc.
//                                                                     Suppl. 17 (1990) 361)
//   gaussian    psi <- psi + (omega^2 / (4 N)) (H psi - 6 psi)       ((1 + omega^2/(4N) Laplacian)^N,
//                                                                     a Gaussian of width ~omega)
// with the spatial hopping term H psi(x) = sum_{i=1..3} [U_i(x) psi(x+i) + U_i(x-i)^dag psi(x-i)]
// (spin-diagonal; U usually APE- or stout-smeared spatial links, link_smearing.h). Each step
// maps a time slice to itself and is Hermitian (H is), so a smeared-source propagator smeared
// at the sink, K M^-1 K, keeps gamma_5-hermiticity and contracts as a point one (mesons.h).
// Both steps keep sum_x psi(x) over a slice when U = 1 (H then sums to 6 times it).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "src/core/backend.h"
#include "src/core/complex.h"
#include "src/core/lattice.h"
#include "src/fields/color_spinor_field.h"

namespace latke {

namespace gauge {
class ExtendedLinks;
class ExtendedSites;
}  // namespace gauge

enum class QuarkSmearingType { none, wuppertal, gaussian };

struct QuarkSmearing {
  QuarkSmearingType type = QuarkSmearingType::none;
  int steps = 0;
  double alpha = 0;  ///< wuppertal: alpha (> 0); gaussian: omega, the width in lattice units (> 0)
};

/// "none", "wuppertal", "gaussian".
const char* to_string(QuarkSmearingType t);

/// Applies one smearing to full Wilson fields (4 spins, 3 colours) of one lattice and backend.
class QuarkSmearer {
 public:
  /// @param links this rank's links (host, conventions.h layout), smeared or not; the spatial
  ///        ones are kept on the backend.
  QuarkSmearer(const Lattice& lat, Backend backend, const std::vector<Complex<double>>& links, const QuarkSmearing& p);
  ~QuarkSmearer();
  QuarkSmearer(const QuarkSmearer&) = delete;
  QuarkSmearer& operator=(const QuarkSmearer&) = delete;

  /// @brief psi smeared in place (computed in double, stored in psi's precision); with t >= 0
  /// only global time slice t (the others are left as they are: a source on slice t is smeared
  /// whole at 1/T of the cost). Collective.
  void apply(ColorSpinorField& psi, int t = -1);
  const QuarkSmearing& param() const { return p_; }

 private:
  const Lattice& lat_;
  Backend backend_;
  QuarkSmearing p_;
  std::unique_ptr<gauge::ExtendedLinks> links_;
  std::unique_ptr<gauge::ExtendedSites> a_, b_;
};

}  // namespace latke
