// The LatkeGauge handle of the C API (latke.h): a lattice and this rank's links.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "src/core/complex.h"
#include "src/core/lattice.h"

/// What a LatkeGauge handle holds: the lattice and this rank's links (host, lexicographic).
struct LatkeGaugeData {
  std::shared_ptr<const latke::Lattice> lattice;
  std::vector<latke::Complex<double>> links;
  std::string description;  ///< where it came from, for views
  /// Heat-bath passes of the quenched chain that made the links (Latke's generator: its sweeps;
  /// 0 for links from elsewhere); LatkeGaugeCreateEvolved continues the count.
  long heatbath_passes = 0;
  /// The coupling and seed LatkeGaugeCreateEvolved continues the chain with when given
  /// PETSC_DEFAULT: -latke_gauge_beta and -latke_gauge_seed as LatkeGaugeCreateFromOptions read
  /// them, or those an evolved gauge was evolved with; 0 and -1 (none) for links made otherwise.
  double chain_beta = 0;
  long chain_seed = -1;
  /// Largest deviation of a link from SU(3) over all ranks (su3_deviation), once asked for
  /// (-1: not yet): an operator with links of 12 reals by default needs it.
  mutable double su3_deviation = -1;
};
struct _p_LatkeGauge {
  std::shared_ptr<LatkeGaugeData> data;
};

