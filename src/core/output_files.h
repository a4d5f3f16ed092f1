// Output files that never replace a good file with a bad one: checked for writability before
// the work that fills them, written under a temporary name and renamed over the target only
// when the write, its flush and its close all succeeded, and removed (temporaries only) when
// the process is interrupted. Errors are collective where the call is: every rank of the
// communicator gets the same message, so no rank waits in a collective for one that failed.
#pragma once

#include <mpi.h>

#include <string>

namespace latke {

/// @brief Throw, on every rank of comm, the message of the lowest-numbered rank whose `ok`
/// is false (the message of other ranks is ignored). Collective.
void collective_require(MPI_Comm comm, bool ok, const std::string& message);

/// @brief Check, before any work is done for it, that the output `path` (given as `what`,
/// e.g. "-latke_json") can be created or replaced: not a directory, its directory exists and
/// is writable. Rank 0 checks; every rank of comm throws the same message. Collective.
void require_writable(MPI_Comm comm, const std::string& path, const std::string& what);

/// @brief Write text to path through path.tmp-PID: written, flushed, synced and closed, its
/// size checked, then renamed over path. On any failure the temporary is removed, an existing
/// path is left as it was, and latke::Error names `what`, the path and the system's reason.
/// Not collective: call it on the rank that writes.
void write_text_atomically(const std::string& path, const std::string& text, const std::string& what);

/// @brief "path.tmp-PID": the temporary a writer of path uses.
std::string temporary_name(const std::string& path);

/// @brief A per-user cache directory for `what` (e.g. "gauge"), as the XDG base directories
/// place one: $LATKE_CACHE_DIR/what when that is set (empty: no cache, ""), else
/// $XDG_CACHE_HOME/latke/what, else $HOME/.cache/latke/what; "" where none of them is set.
/// Not created here.
std::string user_cache_dir(const std::string& what);

/// A temporary file that is removed when the process is interrupted (SIGINT, SIGTERM, SIGHUP)
/// before release(); the handler then says which file it removed and that the target was
/// kept as it was (or not written), and ends the process by the same signal. The first
/// registration installs the handler.
class InterruptCleanup {
 public:
  InterruptCleanup(const std::string& tmp, const std::string& target);
  ~InterruptCleanup();
  InterruptCleanup(const InterruptCleanup&) = delete;
  InterruptCleanup& operator=(const InterruptCleanup&) = delete;
  /// @brief The temporary is no longer this process's to remove (renamed, or removed).
  void release();

 private:
  int slot_ = -1;
};

}  // namespace latke
