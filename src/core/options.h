// Latke's options in the PETSc options database, and the start-up every Latke program shares.
// Options are read in groups (a PetscOptionsBegin/End block each), so that -help lists every
// one with its default and meaning under the group's title, as PETSc's own options are.
#pragma once

#include <mpi.h>

#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "src/core/backend.h"
#include "src/core/lattice.h"

namespace latke {

/// @brief "a,b,..." as a list option is written, for messages about its values.
template <typename T>
std::string list_text(const std::vector<T>& v) {
  std::ostringstream s;
  for (std::size_t i = 0; i < v.size(); ++i) s << (i ? "," : "") << v[i];
  return s.str();
}

/// One group of options being read; handed to the body of read_options.
class OptionGroup {
 public:
  OptionGroup(void* items, std::string prefix) : items_(items), prefix_(std::move(prefix)) {}
  /// @brief A string option, or def when it is not set.
  std::string string(const char* name, const std::string& def, const char* help);
  /// @brief An integer option, or def when not set; text that is not an integer, or one
  /// outside PetscInt's range, fails naming the option.
  long integer(const char* name, long def, const char* help);
  /// @brief A real option, or def when not set; text that is not a number fails naming the
  /// option.
  double real(const char* name, double def, const char* help);
  /// @brief A comma-separated list of at most `max` reals (PetscOptionsRealArray), or def
  /// when not set; an item that is not a number, or too many, fails naming the option.
  std::vector<double> reals(const char* name, const std::vector<double>& def, const char* help, int max = 64);
  /// @brief A comma-separated list of at most `max` integers (PetscOptionsIntArray), or def
  /// when not set; an item that is not an integer, one outside PetscInt's range, or too many
  /// items fail naming the option and the item.
  std::vector<long> integers(const char* name, const std::vector<long>& def, const char* help, int max = 64);
  /// @brief Four positive integers X,Y,Z,T (PetscOptionsIntArray), or def when not set (def
  /// may be all zeros: "not given"); anything else fails naming the option and the item.
  Coords coords(const char* name, const Coords& def, const char* help);
  /// @brief A comma-separated list of at most `max` items, each one of `choices`
  /// (PetscOptionsStringArray; -help lists the choices), or def when not set; any other item
  /// fails naming the option, the item and the choices.
  std::vector<std::string> choice_list(const char* name, const std::vector<std::string>& def,
                                       const std::vector<std::string>& choices, const char* help, int max = 8);
  /// @brief One of `choices` (listed by -help), or def when not set; any other text fails
  /// naming the option, the value and the choices.
  std::string choice(const char* name, const std::string& def, const std::vector<std::string>& choices,
                     const char* help);
  /// @brief A flag (-name, or -name true|false), def when not given.
  bool flag(const char* name, bool def, const char* help);
  /// @brief Whether the user gave option `name` (read earlier in this group).
  bool given(const char* name) const { return given_.count(name) > 0; }

 private:
  void note(const char* name, int set);
  /// The text given for option `name` under the group's prefix, or null; full: its full name.
  const char* raw(const char* name, std::string& full) const;
  void* items_;
  std::string prefix_;
  std::set<std::string> given_;
};

/// @brief Read a group of options under `prefix` (may be empty) titled `title`: body reads
/// each option through the group. Errors thrown by body propagate after the group is closed.
void read_options(MPI_Comm comm, const std::string& prefix, const std::string& title,
                  const std::function<void(OptionGroup&)>& body);

struct RunOptions {
  Backend backend = Backend::cpu;
  Coords grid{0, 0, 0, 0};  ///< all zeros: chosen by Lattice
};

/// @brief Read -latke_backend cpu|cuda (default: CUDA when a device exists) and
/// -latke_grid a,b,c,d, register Latke's log events, and activate the backend (one device
/// per rank of a node, round robin; with a PETSc built with CUDA, PETSc's device). PETSc must
/// be initialized. Throws latke::Error.
RunOptions setup_from_options(MPI_Comm comm = MPI_COMM_WORLD);

/// @brief For Latke's programs, before PetscFinalize: unless -options_left is given (then
/// PETSc reports), name every option the run did not use, one warning line each on rank 0
/// (a misspelt or misplaced option is otherwise silently ignored); returns how many.
int warn_unused_options(const char* program);

}  // namespace latke
