// Latke's own options in the PETSc options database (-latke_backend, -latke_grid), and the
// start-up that every Latke program shares.
#pragma once

#include <string>

#include "latke/core/backend.h"
#include "latke/core/lattice.h"

namespace latke {

struct RunOptions {
  Backend backend = Backend::cpu;
  Coords grid{0, 0, 0, 0};  ///< all zeros: chosen by Lattice
};

/// @brief Read -latke_backend cpu|cuda (default: CUDA when a device exists) and
/// -latke_grid a,b,c,d from the PETSc options database, and activate the backend (one
/// device per rank of a node, round robin). PETSc must be initialized. Throws latke::Error.
RunOptions setup_from_options();

/// @brief A string option, or def when it is not set.
std::string option_string(const char* name, const std::string& def);
/// @brief An integer option, or def when not set; fails naming it when not an integer.
long option_int(const char* name, long def);
/// @brief A real option, or def when not set.
double option_real(const char* name, double def);
/// @brief Whether a flag is set (-name, or -name true/1).
bool option_flag(const char* name);

}  // namespace latke
