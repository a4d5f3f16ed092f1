// Reading Latke's options from the PETSc options database.
#include "latke/core/options.h"

#include <petscsys.h>

#include "latke/core/error.h"

namespace latke {

namespace {
void check(PetscErrorCode ierr, const char* name) {
  require(ierr == 0, "reading option ", name, " failed (PETSc error ", static_cast<int>(ierr), ")");
}
}  // namespace

std::string option_string(const char* name, const std::string& def) {
  char buf[PETSC_MAX_PATH_LEN];
  PetscBool set = PETSC_FALSE;
  check(PetscOptionsGetString(nullptr, nullptr, name, buf, sizeof(buf), &set), name);
  return set ? std::string(buf) : def;
}

long option_int(const char* name, long def) {
  const std::string s = option_string(name, "");
  if (s.empty()) return def;
  std::size_t used = 0;
  long v = 0;
  try {
    v = std::stol(s, &used);
  } catch (const std::exception&) {
    fail("option ", name, " '", s, "': expected an integer");
  }
  require(used == s.size(), "option ", name, " '", s, "': expected an integer");
  return v;
}

double option_real(const char* name, double def) {
  const std::string s = option_string(name, "");
  if (s.empty()) return def;
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    fail("option ", name, " '", s, "': expected a number");
  }
  require(used == s.size(), "option ", name, " '", s, "': expected a number");
  return v;
}

bool option_flag(const char* name) {
  PetscBool set = PETSC_FALSE, value = PETSC_FALSE;
  check(PetscOptionsGetBool(nullptr, nullptr, name, &value, &set), name);
  return set && value;
}

RunOptions setup_from_options() {
  RunOptions o;
  const std::string b = option_string("-latke_backend", "");
  o.backend = b.empty() ? default_backend() : parse_backend(b);
  const std::string g = option_string("-latke_grid", "");
  if (!g.empty()) o.grid = parse_coords(g, "-latke_grid");
  int local_rank = 0;
  MPI_Comm node;
  MPI_Comm_split_type(PETSC_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &local_rank);
  MPI_Comm_free(&node);
  activate_backend(o.backend, local_rank);
  return o;
}

}  // namespace latke
