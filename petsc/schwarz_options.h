// The Schwarz preconditioner's options (-pc_latke_schwarz_*), shared by the PETSc PC and the
// native solvers' -latke_solver_pc schwarz.
#pragma once

#include <mpi.h>

#include "preconditioners/schwarz/schwarz.h"

namespace latke {

/// @brief p overridden by -<prefix>pc_latke_schwarz_{block,iterations,precision,type,omega,cycles};
/// bad values fail naming the option.
SchwarzParam schwarz_param_from_options(MPI_Comm comm, const char* prefix, SchwarzParam p);

}  // namespace latke
