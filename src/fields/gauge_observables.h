// Gauge observables, computed by kernels on the backend from links with a ghost layer:
//   plaquette            <Re tr U_P> / 3 over all 6 V plaquettes U_P = U_mu(x) U_nu(x+mu)
//                        U_mu(x+nu)^dag U_nu(x)^dag, mu < nu; spatial: nu < 3 (the 3 planes
//                        not containing t); temporal: nu = 3
//   polyakov             (1/V_s) sum over spatial sites of tr(prod_t U_t(x, t)) / 3, with
//                        the product ordered t = 0, 1, ..., T-1 along the whole lattice
//   link_trace           <Re tr U_mu(x)> / 3 over all 4 V links (NERSC's LINK_TRACE)
//   unitarity            largest |U U^dag - 1| entry or |det U - 1| over all links
// Sums are accumulated in double in a fixed order; for a given process grid and backend they
// are the same run to run.
#pragma once

#include <vector>

#include "src/core/backend.h"
#include "src/core/complex.h"
#include "src/core/lattice.h"

namespace latke {

struct GaugeObservables {
  double plaquette = 0;
  double plaquette_spatial = 0;
  double plaquette_temporal = 0;
  Complex<double> polyakov;
  double link_trace = 0;
  double unitarity = 0;
};

/// @brief The observables of links given as a host array over this rank's local volume
/// (conventions.h layout), computed on backend b. Collective over the lattice's ranks.
GaugeObservables measure_gauge(const Lattice& lat, const std::vector<Complex<double>>& links, Backend b = Backend::cpu);

/// @brief The Wilson gauge action S = beta sum_P (1 - Re tr U_P / 3) of a field of global
/// volume V with average plaquette p: beta 6 V (1 - p).
double wilson_action(const Lattice& lat, double beta, double plaquette);

}  // namespace latke
