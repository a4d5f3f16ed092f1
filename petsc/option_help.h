// -help for the option groups a run does not read: a program calls these for the objects it
// does not make (latke-solve: the other operator, the native solver, the Schwarz
// preconditioner), so that -help lists every option Latke takes. Each reads its group with
// the defaults, as the object would, and discards the result; an error in the options is
// left to the run that uses them.
#pragma once

#include <mpi.h>

#include "src/core/error.h"

namespace latke::petsc {

/// @brief Run a group's reader for -help; an error in its options is left to the run that
/// uses them.
template <typename Read>
void read_for_help(const Read& read) {
  try {
    read();
  } catch (const Error&) {
  }
}

void wilson_clover_options_help(MPI_Comm comm, const char* prefix);
void staggered_options_help(MPI_Comm comm, const char* prefix);
void native_solver_options_help(MPI_Comm comm, const char* prefix);

}  // namespace latke::petsc
