// Output files: writability checks, atomic text writes and removal of temporaries on interrupt.
#include "src/core/output_files.h"

#include <cstdlib>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "src/core/error.h"

namespace latke {

void collective_require(MPI_Comm comm, bool ok, const std::string& message) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const int mine = ok ? size : rank;
  int first = size;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == size) return;
  std::string m = rank == first ? message : std::string();
  std::uint64_t n = m.size();
  MPI_Bcast(&n, 1, MPI_UINT64_T, first, comm);
  m.resize(n);
  MPI_Bcast(m.data(), static_cast<int>(n), MPI_CHAR, first, comm);
  throw Error(m);
}

namespace {

/// Why path cannot be written, or "" when it can.
std::string unwritable(const std::string& path) {
  if (path.empty()) return "the file name is empty";
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return "it is a directory, expected a file name";
  const std::filesystem::path p(path);
  std::string dir = p.parent_path().string();
  if (dir.empty()) dir = ".";
  if (stat(dir.c_str(), &st) != 0) return "its directory " + dir + " does not exist";
  if (!S_ISDIR(st.st_mode)) return dir + " is not a directory";
  if (access(dir.c_str(), W_OK) != 0)
    return "its directory " + dir + " is not writable (" + std::strerror(errno) + ")";
  if (access(path.c_str(), F_OK) == 0 && access(path.c_str(), W_OK) != 0)
    return "the existing file is not writable (" + std::string(std::strerror(errno)) + ")";
  return "";
}

// The interrupt handler's table: fixed slots of C strings, so that the handler needs no
// allocation. A slot is in use while its flag is set.
constexpr int slots = 16;
constexpr std::size_t path_max = 1024;
struct Slot {
  std::atomic<bool> used{false};
  bool target_existed = false;
  char tmp[path_max] = {};
  char target[path_max] = {};
};
Slot table[slots];
std::atomic<bool> installed{false};

void say(const char* s) {
  const ssize_t ignored = write(STDERR_FILENO, s, std::strlen(s));
  (void)ignored;
}

extern "C" void on_interrupt(int sig) {
  for (Slot& s : table) {
    if (!s.used.load()) continue;
    unlink(s.tmp);
    say("latke: interrupted: removed the unfinished ");
    say(s.tmp);
    say(s.target_existed ? "; " : "; nothing was written to ");
    say(s.target);
    say(s.target_existed ? " is kept as it was\n" : "\n");
  }
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void install_handler() {
  bool expected = false;
  if (!installed.compare_exchange_strong(expected, true)) return;
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
}

}  // namespace

void require_writable(MPI_Comm comm, const std::string& path, const std::string& what) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const std::string why = rank == 0 ? unwritable(path) : std::string();
  collective_require(comm, why.empty(), what + " " + path + ": cannot write it: " + why);
}

std::string temporary_name(const std::string& path) {
  return path + ".tmp-" + std::to_string(static_cast<long>(getpid()));
}

InterruptCleanup::InterruptCleanup(const std::string& tmp, const std::string& target) {
  require(tmp.size() < path_max && target.size() < path_max, "the file name ", target, " is too long (at most ",
          path_max - 1, " characters)");
  install_handler();
  for (int i = 0; i < slots; ++i) {
    Slot& s = table[i];
    if (s.used.load()) continue;
    std::strncpy(s.tmp, tmp.c_str(), path_max - 1);
    std::strncpy(s.target, target.c_str(), path_max - 1);
    s.target_existed = access(target.c_str(), F_OK) == 0;
    s.used.store(true);
    slot_ = i;
    return;
  }
  // More writers at once than slots: the file is still written atomically, only not cleaned
  // up on an interrupt.
}

InterruptCleanup::~InterruptCleanup() { release(); }

void InterruptCleanup::release() {
  if (slot_ >= 0) table[slot_].used.store(false);
  slot_ = -1;
}

void write_text_atomically(const std::string& path, const std::string& text, const std::string& what) {
  const std::string tmp = temporary_name(path);
  InterruptCleanup cleanup(tmp, path);
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  require(fd >= 0, what, " ", path, ": cannot create ", tmp, " (", std::strerror(errno), ")");
  std::string why;
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      why = n < 0 ? std::strerror(errno) : "the file system took no more bytes";
      break;
    }
    done += static_cast<std::size_t>(n);
  }
  if (why.empty() && fsync(fd) != 0 && errno != EINVAL) why = std::string("fsync: ") + std::strerror(errno);
  if (close(fd) != 0 && why.empty()) why = std::string("close: ") + std::strerror(errno);
  if (why.empty()) {
    struct stat st {};
    if (stat(tmp.c_str(), &st) != 0 || static_cast<std::size_t>(st.st_size) != text.size())
      why = "it holds fewer bytes than were written";
  }
  if (why.empty() && std::rename(tmp.c_str(), path.c_str()) != 0)
    why = std::string("renaming it to ") + path + ": " + std::strerror(errno);
  if (!why.empty()) {
    std::remove(tmp.c_str());
    cleanup.release();
    fail(what, " ", path, ": writing ", tmp, " failed after ", done, " of ", text.size(), " bytes (", why, "); ",
         access(path.c_str(), F_OK) == 0 ? path + " is kept as it was" : path + " was not written");
  }
  cleanup.release();
}

std::string user_cache_dir(const std::string& what) {
  auto env = [](const char* name) -> const char* { return std::getenv(name); };
  if (const char* d = env("LATKE_CACHE_DIR")) return *d ? std::string(d) + "/" + what : std::string();
  if (const char* d = env("XDG_CACHE_HOME"); d && *d) return std::string(d) + "/latke/" + what;
  if (const char* d = env("HOME"); d && *d) return std::string(d) + "/.cache/latke/" + what;
  return "";
}

}  // namespace latke
