// Buffers on the host, pinned host and device, and copies between them.
#include "src/core/memory.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "src/core/error.h"

#ifdef LATKE_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace latke {

namespace {
constexpr std::size_t host_alignment = 256;
}

namespace {
std::string gib(double bytes) {
  char t[32];
  std::snprintf(t, sizeof t, "%.1f GiB", bytes / 1073741824.0);
  return t;
}

/// MemAvailable and MemTotal of /proc/meminfo in bytes (0 where unknown).
void host_memory(double& available, double& total) {
  available = total = 0;
  std::FILE* f = std::fopen("/proc/meminfo", "r");
  if (!f) return;
  char key[64];
  double kb = 0;
  while (std::fscanf(f, "%63s %lf kB\n", key, &kb) == 2) {
    if (std::strcmp(key, "MemAvailable:") == 0) available = kb * 1024;
    if (std::strcmp(key, "MemTotal:") == 0) total = kb * 1024;
  }
  std::fclose(f);
}
}  // namespace

std::string memory_report() {
  double available = 0, total = 0;
  host_memory(available, total);
  std::string r = "host: " + gib(available) + " available of " + gib(total);
#ifdef LATKE_HAVE_CUDA
  std::size_t free_b = 0, total_b = 0;
  if (cuda_device_count() > 0 && cudaMemGetInfo(&free_b, &total_b) == cudaSuccess)
    r += "; GPU: " + gib(static_cast<double>(free_b)) + " free of " + gib(static_cast<double>(total_b));
#endif
  return r;
}

void require_host_memory(std::size_t bytes, const std::string& what) {
  double available = 0, total = 0;
  host_memory(available, total);
  require(available <= 0 || static_cast<double>(bytes) <= available, "out of host memory: ", what, " needs ",
          gib(static_cast<double>(bytes)), " per rank (", memory_report(), ")");
}

namespace {
std::atomic<std::size_t> held[3], most[3];
std::atomic<long> allocated{0};   // owned buffers so far (the last one's serial)
std::atomic<long> watched_to{0};  // buffers with serials up to this are watched (mark_buffers)
std::atomic<long> freed_watched{0};

void count_alloc(MemoryKind kind, std::size_t bytes) {
  const int k = static_cast<int>(kind);
  const std::size_t now = held[k].fetch_add(bytes) + bytes;
  std::size_t was = most[k].load();
  while (now > was && !most[k].compare_exchange_weak(was, now)) {
  }
}
}  // namespace

BufferMark mark_buffers() {
  const long now = allocated.load();
  long was = watched_to.load();
  while (now > was && !watched_to.compare_exchange_weak(was, now)) {
  }
  return BufferMark{now, freed_watched.load()};
}

bool buffers_freed_since(const BufferMark& m) { return freed_watched.load() != m.epoch; }

long buffer_allocations() { return allocated.load(); }

MemoryUse memory_use() {
  MemoryUse u;
  for (int k = 0; k < 3; ++k) u.now[k] = held[k].load(), u.peak[k] = most[k].load();
  return u;
}

Buffer::Buffer(MemoryKind kind, std::size_t bytes) : bytes_(bytes), kind_(kind) {
  void* p = nullptr;
  const std::size_t n = bytes == 0 ? host_alignment : bytes;
  switch (kind) {
    case MemoryKind::host:
      if (posix_memalign(&p, host_alignment, (n + host_alignment - 1) / host_alignment * host_alignment) != 0)
        throw OutOfMemory(detail::concat("out of host memory allocating ", bytes, " bytes (", memory_report(), ")"));
      break;
    case MemoryKind::pinned:
#ifdef LATKE_HAVE_CUDA
      if (cuda_device_count() > 0) {
        LATKE_CUDA_CALL(cudaMallocHost(&p, n));
        break;
      }
#endif
      if (posix_memalign(&p, host_alignment, (n + host_alignment - 1) / host_alignment * host_alignment) != 0)
        throw OutOfMemory(detail::concat("out of host memory allocating ", bytes, " bytes"));
      kind_ = MemoryKind::host;
      break;
    case MemoryKind::device:
#ifdef LATKE_HAVE_CUDA
      if (cudaMalloc(&p, n) != cudaSuccess) {
        cudaGetLastError();
        std::size_t free_b = 0, total_b = 0;
        cudaMemGetInfo(&free_b, &total_b);
        throw OutOfMemory(
            detail::concat("out of GPU memory: asked for ", bytes, " bytes, ", free_b, " of ", total_b, " bytes free"));
      }
#else
      fail("device memory asked for in a build without CUDA");
#endif
      break;
  }
  ptr_ = std::unique_ptr<void, Deleter>(p, Deleter{kind_, true, n, ++allocated});
  count_alloc(kind_, n);
}

Buffer Buffer::borrow(MemoryKind kind, void* data, std::size_t bytes) {
  Buffer b;
  b.ptr_ = std::unique_ptr<void, Deleter>(data, Deleter{kind, false, 0, 0});
  b.bytes_ = bytes;
  b.kind_ = kind;
  return b;
}

void Buffer::Deleter::operator()(void* p) const {
  if (!p || !owned) return;
  held[static_cast<int>(kind)].fetch_sub(bytes);
  if (serial <= watched_to.load()) ++freed_watched;
#ifdef LATKE_HAVE_CUDA
  if (kind == MemoryKind::device) { cudaFree(p); return; }
  if (kind == MemoryKind::pinned) { cudaFreeHost(p); return; }
#endif
  std::free(p);
}

void copy_bytes(void* dst, const void* src, std::size_t bytes, Stream s) {
  if (bytes == 0) return;
#ifdef LATKE_HAVE_CUDA
  if (cuda_device_count() > 0) {
    LATKE_CUDA_CALL(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, static_cast<cudaStream_t>(s.handle)));
    return;
  }
#endif
  (void)s;
  std::memcpy(dst, src, bytes);
}

namespace {
/// memcpy with the host's cores: one thread copies ~8 GB/s, below what PCIe DMA takes.
void parallel_memcpy(void* dst, const void* src, std::size_t bytes) {
  constexpr std::size_t piece = std::size_t(1) << 20;
  const long n = static_cast<long>((bytes + piece - 1) / piece);
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; ++i) {
    const std::size_t off = static_cast<std::size_t>(i) * piece;
    std::memcpy(static_cast<char*>(dst) + off, static_cast<const char*>(src) + off, std::min(piece, bytes - off));
  }
}
}  // namespace

void PinnedStager::ensure() {
  for (int i = 0; i < 2; ++i) {
    if (chunk_[i].bytes() == 0) chunk_[i] = Buffer(MemoryKind::pinned, chunk_bytes);
    if (!done_[i]) done_[i] = std::make_unique<Event>();
  }
}

void PinnedStager::upload(void* dev, const void* host, std::size_t bytes, Stream s) {
  if (!s.handle) {
    copy_bytes(dev, host, bytes, s);
    return;
  }
  ensure();
  const char* src = static_cast<const char*>(host);
  char* dst = static_cast<char*>(dev);
  for (std::size_t off = 0, i = 0; off < bytes; off += chunk_bytes, ++i) {
    const std::size_t n = std::min(chunk_bytes, bytes - off);
    done_[i % 2]->synchronize();  // the DMA that last read this chunk has finished
    parallel_memcpy(chunk_[i % 2].data(), src + off, n);
    copy_bytes(dst + off, chunk_[i % 2].data(), n, s);
    done_[i % 2]->record(s);
  }
}

void PinnedStager::download(void* host, const void* dev, std::size_t bytes, Stream s) {
  if (!s.handle) {
    copy_bytes(host, dev, bytes, s);
    return;
  }
  ensure();
  const char* src = static_cast<const char*>(dev);
  char* dst = static_cast<char*>(host);
  const std::size_t n_chunks = (bytes + chunk_bytes - 1) / chunk_bytes;
  auto queue = [&](std::size_t i) {
    const std::size_t off = i * chunk_bytes;
    copy_bytes(chunk_[i % 2].data(), src + off, std::min(chunk_bytes, bytes - off), s);
    done_[i % 2]->record(s);
  };
  for (std::size_t i = 0; i < std::min<std::size_t>(2, n_chunks); ++i) queue(i);
  for (std::size_t i = 0; i < n_chunks; ++i) {
    const std::size_t off = i * chunk_bytes;
    done_[i % 2]->synchronize();
    parallel_memcpy(dst + off, chunk_[i % 2].data(), std::min(chunk_bytes, bytes - off));
    if (i + 2 < n_chunks) queue(i + 2);
  }
}

void zero_bytes(void* dst, std::size_t bytes, MemoryKind k, Stream s) {
  if (bytes == 0) return;
#ifdef LATKE_HAVE_CUDA
  if (k == MemoryKind::device) {
    LATKE_CUDA_CALL(cudaMemsetAsync(dst, 0, bytes, static_cast<cudaStream_t>(s.handle)));
    return;
  }
#endif
  (void)k, (void)s;
  std::memset(dst, 0, bytes);
}

}  // namespace latke

#include "src/core/launch.h"

namespace latke::detail {

namespace {
struct Scratch {
  Buffer device, host, segmented;
};
Scratch& scratch() {
  static Scratch s;
  return s;
}
}  // namespace

void* reduce_scratch_device(std::size_t bytes) {
  Buffer& b = scratch().device;
  if (b.bytes() < bytes) b = Buffer(MemoryKind::device, std::max<std::size_t>(bytes, 1 << 16));
  return b.data();
}

void* segmented_scratch_device(std::size_t bytes) {
  Buffer& b = scratch().segmented;
  if (b.bytes() < bytes) b = Buffer(MemoryKind::device, std::max<std::size_t>(bytes, 1 << 16));
  return b.data();
}

void* reduce_scratch_host(std::size_t bytes) {
  Buffer& b = scratch().host;
  if (b.bytes() < bytes) b = Buffer(MemoryKind::pinned, std::max<std::size_t>(bytes, 1 << 16));
  return b.data();
}

}  // namespace latke::detail
