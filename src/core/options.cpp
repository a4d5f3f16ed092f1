// Reading Latke's options from the PETSc options database.
#include "src/core/options.h"

#include <petscsys.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <thread>
#if defined(_OPENMP)
#include <omp.h>
#endif

#include "src/core/error.h"
#include "src/core/log.h"
#include "src/core/petsc_compat.h"
#include "src/core/petsc_device.h"

namespace latke {

namespace {
void check(PetscErrorCode ierr, const char* name) {
  require(ierr == 0, "reading option ", name, " failed (PETSc error ", static_cast<int>(ierr), ")");
}
}  // namespace

void OptionGroup::note(const char* name, int set) {
  if (set) given_.insert(name);
}

std::string OptionGroup::string(const char* name, const std::string& def, const char* help) {
  char buf[PETSC_MAX_PATH_LEN];
  PetscBool set = PETSC_FALSE;
  check(PetscOptionsString_Private(static_cast<petsc::compat::OptionItems>(items_), name, help, "None", def.c_str(),
                                   buf, sizeof(buf), &set),
        name);
  note(name, set);
  return set ? std::string(buf) : def;
}

std::string OptionGroup::choice(const char* name, const std::string& def, const std::vector<std::string>& choices,
                                const char* help) {
  std::string full;
  if (const char* text = raw(name, full)) {
    bool known = false;
    std::string list;
    for (const std::string& c : choices) {
      known = known || c == text;
      list += (list.empty() ? "" : ", ") + c;
    }
    require(known, full, " '", text, "': expected one of ", list);
  }
  std::vector<const char*> names;
  for (const std::string& c : choices) names.push_back(c.c_str());
  PetscInt index = 0;
  PetscBool set = PETSC_FALSE;
  check(PetscOptionsEList_Private(static_cast<petsc::compat::OptionItems>(items_), name, help, "None", names.data(),
                                  static_cast<PetscInt>(names.size()), def.c_str(), &index, &set),
        name);
  note(name, set);
  return set ? choices[static_cast<std::size_t>(index)] : def;
}

const char* OptionGroup::raw(const char* name, std::string& full) const {
  full = "-" + prefix_ + (name[0] == '-' ? name + 1 : name);
  const char* value = nullptr;
  PetscBool found = PETSC_FALSE;
  check(PetscOptionsFindPair(nullptr, prefix_.empty() ? nullptr : prefix_.c_str(), name, &value, &found), name);
  return found ? value : nullptr;
}

long OptionGroup::integer(const char* name, long def, const char* help) {
  // PETSc's own conversion wraps values beyond PetscInt's range (2^32 + 1 becomes 1) and
  // names neither the option nor the range: the text is checked here first.
  std::string full;
  const char* text = raw(name, full);
  // PETSc's named values (PETSC_DEFAULT, PETSC_DECIDE, ...) are PETSc's to read, as for reals.
  if (text && std::strncmp(text, "PETSC_", 6) != 0) {
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(text, &end, 10);
    require(end != text && *end == 0, full, " '", text, "': expected an integer");
    require(errno != ERANGE && v >= PETSC_MIN_INT && v <= PETSC_MAX_INT, full, " ", text,
            ": out of range: expected an integer from ", PETSC_MIN_INT, " to ", PETSC_MAX_INT);
  }
  PetscInt v = static_cast<PetscInt>(def);
  PetscBool set = PETSC_FALSE;
  check(PetscOptionsInt_Private(static_cast<petsc::compat::OptionItems>(items_), name, help, "None", v, &v, &set,
                                PETSC_MIN_INT, PETSC_MAX_INT),
        name);
  note(name, set);
  return v;
}

double OptionGroup::real(const char* name, double def, const char* help) {
  std::string full;
  if (const char* text = raw(name, full)) {
    char* end = nullptr;
    std::strtod(text, &end);
    // PETSc also reads "PETSC_DEFAULT" and friends; those start with a letter other than a
    // number's, and PETSc checks them itself.
    const bool named = std::strncmp(text, "PETSC_", 6) == 0;
    require(named || (end != text && *end == 0), full, " '", text, "': expected a number");
  }
  PetscReal v = def;
  PetscBool set = PETSC_FALSE;
  check(petsc::compat::options_real(static_cast<petsc::compat::OptionItems>(items_), name, help, "None", v, &v, &set),
        name);
  note(name, set);
  return v;
}

std::vector<double> OptionGroup::reals(const char* name, const std::vector<double>& def, const char* help, int max) {
  std::string full;
  if (const char* text = raw(name, full)) {
    // PETSc reads an unparsable item as an error without naming it, and a list longer than
    // the array silently short: both are checked here first.
    int count = 0;
    for (const char* item = text;; ++count) {
      char* end = nullptr;
      std::strtod(item, &end);
      require(end != item && (*end == ',' || *end == 0), full, " '", text, "': item ", count + 1,
              " is not a number (expected a comma-separated list of numbers)");
      if (*end == 0) break;
      item = end + 1;
    }
    require(count < max, full, " '", text, "': ", count + 1, " numbers; expected at most ", max);
  }
  std::vector<PetscReal> v(max);
  PetscInt n = max;
  PetscBool set = PETSC_FALSE;
  check(PetscOptionsRealArray_Private(static_cast<petsc::compat::OptionItems>(items_), name, help, "None", v.data(), &n,
                                      &set),
        name);
  note(name, set);
  if (!set) return def;
  return std::vector<double>(v.begin(), v.begin() + n);
}

std::vector<long> OptionGroup::integers(const char* name, const std::vector<long>& def, const char* help, int max) {
  std::string full;
  if (const char* text = raw(name, full)) {
    // PETSc reads "a-b" as a range and an unparsable item as an error naming neither the
    // option nor the item, and stops silently at `max`: each item is checked here first.
    int count = 0;
    for (const char* item = text;; ++count) {
      errno = 0;
      char* end = nullptr;
      const long long v = std::strtoll(item, &end, 10);
      require(end != item && (*end == ',' || *end == 0), full, " '", text, "': item ", count + 1,
              " is not an integer (expected a comma-separated list of integers",
              end != item && *end == ':' ? "; ':' does not separate items, give one list" : "", ")");
      require(errno != ERANGE && v >= PETSC_MIN_INT && v <= PETSC_MAX_INT, full, " '", text, "': item ", count + 1,
              " is out of range: expected an integer from ", PETSC_MIN_INT, " to ", PETSC_MAX_INT);
      if (*end == 0) break;
      item = end + 1;
    }
    require(count < max, full, " '", text, "': ", count + 1, " integers; expected at most ", max);
  }
  std::vector<PetscInt> v(static_cast<std::size_t>(max));
  std::copy_n(def.begin(), std::min<std::size_t>(def.size(), v.size()), v.begin());
  PetscInt n = max;
  PetscBool set = PETSC_FALSE;
  check(PetscOptionsIntArray_Private(static_cast<petsc::compat::OptionItems>(items_), name, help, "None", v.data(), &n,
                                     &set),
        name);
  note(name, set);
  if (!set) return def;
  return std::vector<long>(v.begin(), v.begin() + n);
}

Coords OptionGroup::coords(const char* name, const Coords& def, const char* help) {
  std::string full;
  const char* text = raw(name, full);
  if (text) parse_coords(text, full);  // four positive integers, or an error naming the item
  const std::vector<long> v = integers(name, std::vector<long>(def.begin(), def.end()), help, 4);
  if (!given(name)) return def;
  return Coords{static_cast<int>(v[0]), static_cast<int>(v[1]), static_cast<int>(v[2]), static_cast<int>(v[3])};
}

std::vector<std::string> OptionGroup::choice_list(const char* name, const std::vector<std::string>& def,
                                                  const std::vector<std::string>& choices, const char* help, int max) {
  std::string list;
  for (const std::string& c : choices) list += (list.empty() ? "" : ", ") + c;
  const std::string with_choices = std::string(help) + " (each one of: " + list + ")";
  std::vector<char*> items(static_cast<std::size_t>(max), nullptr);
  PetscInt n = max;
  PetscBool set = PETSC_FALSE;
  check(PetscOptionsStringArray_Private(static_cast<petsc::compat::OptionItems>(items_), name, with_choices.c_str(),
                                        "None", items.data(), &n, &set),
        name);
  note(name, set);
  std::vector<std::string> out;
  for (PetscInt i = 0; i < n; ++i) {
    out.emplace_back(items[static_cast<std::size_t>(i)] ? items[static_cast<std::size_t>(i)] : "");
    PetscFree(items[static_cast<std::size_t>(i)]);
  }
  if (!set) return def;
  std::string full;
  const char* text = raw(name, full);
  require(!out.empty(), full, " '", text ? text : "", "': expected a comma-separated list of ", list);
  for (std::size_t i = 0; i < out.size(); ++i)
    require(std::find(choices.begin(), choices.end(), out[i]) != choices.end(), full, " '", text ? text : "",
            "': item ", i + 1, " '", out[i], "': expected one of ", list);
  return out;
}

bool OptionGroup::flag(const char* name, bool def, const char* help) {
  PetscBool v = def ? PETSC_TRUE : PETSC_FALSE, set = PETSC_FALSE;
  check(PetscOptionsBool_Private(static_cast<petsc::compat::OptionItems>(items_), name, help, "None", v, &v, &set),
        name);
  note(name, set);
  return v == PETSC_TRUE;
}

namespace {
// PetscOptionsBegin/End are macros for functions returning PetscErrorCode; exceptions from
// the body are held until the group is closed, so PETSc's state stays consistent.
PetscErrorCode read_group(MPI_Comm comm, const char* prefix, const char* title,
                          const std::function<void(OptionGroup&)>& body, std::exception_ptr& error) {
  PetscFunctionBeginUser;
  PetscOptionsBegin(comm, prefix, title, nullptr);
  if (!error) {
    OptionGroup group(PetscOptionsObject, prefix ? prefix : "");
    try {
      body(group);
    } catch (...) {
      error = std::current_exception();
    }
  }
  PetscOptionsEnd();
  PetscFunctionReturn(0);
}
}  // namespace

void read_options(MPI_Comm comm, const std::string& prefix, const std::string& title,
                  const std::function<void(OptionGroup&)>& body) {
  std::exception_ptr error;
  const PetscErrorCode ierr = read_group(comm, prefix.empty() ? nullptr : prefix.c_str(), title.c_str(), body, error);
  if (error) std::rethrow_exception(error);
  require(ierr == 0, "reading the options of '", title, "' failed (PETSc error ", static_cast<int>(ierr), ")");
}

namespace {

/// Without OMP_NUM_THREADS, a rank's OpenMP threads (host staging of PETSc's vectors, file I/O,
/// the CPU backend's kernels) are its node's cores shared among the node's ranks, and no more
/// than the cores it may run on. OpenMP's default, every core for every rank, oversubscribes a
/// node of several ranks, and its spinning threads slow the host copies by an order of
/// magnitude (docs/multi-gpu.md).
void share_cores(int ranks_on_node) {
#if defined(_OPENMP)
  if (std::getenv("OMP_NUM_THREADS") || ranks_on_node <= 1) return;
  const int visible = omp_get_num_procs();
  const unsigned hardware = std::thread::hardware_concurrency();
  const int share = static_cast<int>(hardware > 0 ? hardware : static_cast<unsigned>(visible)) / ranks_on_node;
  omp_set_num_threads(std::max(1, std::min(visible, share)));
#else
  (void)ranks_on_node;
#endif
}

}  // namespace

RunOptions setup_from_options(MPI_Comm comm) {
  RunOptions o;
  std::string b;
  read_options(comm, "", "Latke run options", [&](OptionGroup& opt) {
    b = opt.string("-latke_backend", "", "Backend: cpu or cuda (default: cuda when a GPU is visible)");
    o.grid = opt.coords("-latke_grid", o.grid, "Process grid a,b,c,d over x,y,z,t (default: chosen from the lattice)");
  });
  o.backend = b.empty() ? default_backend() : parse_backend(b);
  register_log_events();
  int local_rank = 0, local_ranks = 1;
  MPI_Comm node;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &local_rank);
  MPI_Comm_size(node, &local_ranks);
  MPI_Comm_free(&node);
  share_cores(local_ranks);
  // With a PETSc built with CUDA, Latke runs on PETSc's GPU (which -device_select_cuda picks;
  // by default PETSc's rank modulo the devices), so that PETSc's vectors are on Latke's device.
  int device = local_rank;
  if (o.backend == Backend::cuda && cuda_compiled()) {
    const int petsc_device = petsc::adopt_petsc_cuda_device();
    if (petsc_device >= 0) device = petsc_device;
  }
  activate_backend(o.backend, device);
  return o;
}

int warn_unused_options(const char* program) {
  PetscBool set = PETSC_FALSE;
  check(PetscOptionsHasName(nullptr, nullptr, "-options_left", &set), "-options_left");
  if (set) return 0;
  PetscInt n = 0;
  char** names = nullptr;
  char** values = nullptr;
  check(PetscOptionsLeftGet(nullptr, &n, &names, &values), "PetscOptionsLeftGet");
  for (PetscInt i = 0; i < n; ++i)
    check(PetscPrintf(PETSC_COMM_WORLD,
                      "%s: WARNING: option -%s%s%s was not used (misspelt, or for a solver, preconditioner or "
                      "operator this run does not make)\n",
                      program, names[i], values[i] ? " " : "", values[i] ? values[i] : ""),
          "PetscPrintf");
  check(PetscOptionsLeftRestore(nullptr, &n, &names, &values), "PetscOptionsLeftRestore");
  check(PetscOptionsSetValue(nullptr, "-options_left", "false"), "-options_left");  // reported once, here
  return static_cast<int>(n);
}

}  // namespace latke
