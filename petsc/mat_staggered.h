// What other parts of Latke's PETSc face need to know about a staggered MATSHELL
// (mat_staggered.cpp): its operator's parameters, e.g. the mass that multi-mass solves shift.
#pragma once

#include "petsc/mat_shell.h"
#include "operators/staggered/staggered.h"

namespace latke::petsc {

/// @brief The parameters of the staggered operator behind a Latke matrix's shell; fails
/// naming the matrix's operator when it is not staggered (`what` names the caller).
const StaggeredParam& staggered_param(const ShellOperator& op, const char* what);

}  // namespace latke::petsc
