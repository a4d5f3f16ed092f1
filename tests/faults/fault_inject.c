/* fault_inject.so: an LD_PRELOAD library for the faults tier. It makes writes to files under
 * one directory fail as a full disk does, or hang as a stuck file system does, so that the
 * tests can see what Latke's programs do then. Only file writes through the C library's
 * write family are affected (Latke's own writers, PETSc's binary viewer, MPI-IO).
 *
 *   LATKE_FAULT_FULL=DIR        writes to files under DIR fail with ENOSPC once
 *   LATKE_FAULT_FULL_AFTER=N    N bytes (default 0) have been written to them by this process
 *   LATKE_FAULT_HANG=DIR        writes to files under DIR block forever (until a signal ends
 *                               the process), after LATKE_FAULT_FULL_AFTER bytes likewise
 *   LATKE_FAULT_RANK=R          only in MPI rank R (OMPI_COMM_WORLD_RANK, PMI_RANK)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

static long long written;

static int this_rank_faults(void) {
  const char *want = getenv("LATKE_FAULT_RANK");
  if (!want) return 1;
  const char *rank = getenv("OMPI_COMM_WORLD_RANK");
  if (!rank) rank = getenv("PMI_RANK");
  return rank && atoi(rank) == atoi(want);
}

/* Whether fd is a file under dir. */
static int under(int fd, const char *dir) {
  char link[64], path[PATH_MAX];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, path, sizeof path - 1);
  if (n <= 0) return 0;
  path[n] = 0;
  const size_t len = strlen(dir);
  return strncmp(path, dir, len) == 0 && (path[len] == '/' || path[len] == 0);
}

/* -1 with errno set when this write of n bytes to fd is to fail; otherwise the number of
 * bytes it may write (all of them, or those left before the limit). */
static ssize_t allowed(int fd, size_t n) {
  const char *full = getenv("LATKE_FAULT_FULL"), *hang = getenv("LATKE_FAULT_HANG");
  const char *dir = full ? full : hang;
  if (!dir || !this_rank_faults() || !under(fd, dir)) return (ssize_t)n;
  const char *after = getenv("LATKE_FAULT_FULL_AFTER");
  const long long limit = after ? atoll(after) : 0;
  if (written + (long long)n <= limit) {
    written += (long long)n;
    return (ssize_t)n;
  }
  if (!full)
    for (;;) pause();
  const long long left = limit > written ? limit - written : 0;
  written += left;
  if (left > 0) return (ssize_t)left;
  errno = ENOSPC;
  return -1;
}

#define REAL(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))

ssize_t write(int fd, const void *buf, size_t n) {
  const ssize_t ok = allowed(fd, n);
  return ok < 0 ? -1 : REAL(write)(fd, buf, (size_t)ok);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
  const ssize_t ok = allowed(fd, n);
  return ok < 0 ? -1 : REAL(pwrite)(fd, buf, (size_t)ok, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off) {
  const ssize_t ok = allowed(fd, n);
  return ok < 0 ? -1 : REAL(pwrite64)(fd, buf, (size_t)ok, off);
}

static size_t total(const struct iovec *iov, int cnt) {
  size_t n = 0;
  for (int i = 0; i < cnt; ++i) n += iov[i].iov_len;
  return n;
}

/* Vector writes that may not go whole are written as far as allowed through write(). */
static ssize_t partial_v(int fd, const struct iovec *iov, int cnt, size_t ok, off_t off, int positioned) {
  size_t done = 0;
  for (int i = 0; i < cnt && done < ok; ++i) {
    size_t len = iov[i].iov_len;
    if (len > ok - done) len = ok - done;
    const ssize_t w = positioned ? REAL(pwrite)(fd, iov[i].iov_base, len, off + (off_t)done)
                                 : REAL(write)(fd, iov[i].iov_base, len);
    if (w < 0) return done ? (ssize_t)done : -1;
    done += (size_t)w;
  }
  return (ssize_t)done;
}

ssize_t writev(int fd, const struct iovec *iov, int cnt) {
  const size_t n = total(iov, cnt);
  const ssize_t ok = allowed(fd, n);
  if (ok < 0) return -1;
  return (size_t)ok == n ? REAL(writev)(fd, iov, cnt) : partial_v(fd, iov, cnt, (size_t)ok, 0, 0);
}

ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off) {
  const size_t n = total(iov, cnt);
  const ssize_t ok = allowed(fd, n);
  if (ok < 0) return -1;
  return (size_t)ok == n ? REAL(pwritev)(fd, iov, cnt, off) : partial_v(fd, iov, cnt, (size_t)ok, off, 1);
}
