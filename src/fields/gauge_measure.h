// Observables of links held with a ghost layer (the generator's working field); the public
// entry point measure_gauge() in gauge_observables.h uploads host links and calls this.
#pragma once

#include "src/fields/extended_links.h"
#include "src/fields/gauge_observables.h"

namespace latke::gauge {

/// @brief Observables of links whose ghosts are up to date. Collective.
GaugeObservables measure(const ExtendedLinks& links);

}  // namespace latke::gauge
