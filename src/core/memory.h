// Memory: device, pinned host and ordinary host buffers with unique ownership.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "src/core/backend.h"

namespace latke {

enum class MemoryKind { host, pinned, device };

/// @brief Where fields of backend b live.
inline MemoryKind memory_for(Backend b) { return b == Backend::cuda ? MemoryKind::device : MemoryKind::host; }

/// @brief Fail before allocating when bytes of host memory, needed for `what`, exceed what this
/// machine has available now; the message names both, and the GPU's free memory when there is one.
void require_host_memory(std::size_t bytes, const std::string& what);
/// @brief "Host: A GiB available of T GiB; GPU: F GiB free of G GiB" (the GPU part where one is active).
std::string memory_report();

/// Bytes held in Latke's own buffers (Buffer, owned), per MemoryKind (host, pinned, device):
/// now, and the most at any time since the process started (PETSc's vectors are not counted).
struct MemoryUse {
  std::size_t now[3] = {0, 0, 0};
  std::size_t peak[3] = {0, 0, 0};
};
MemoryUse memory_use();

/// What a CUDA graph (StreamGraph) needs to know of Latke's buffers: it holds the addresses of
/// the buffers its kernels use, so it is stale once any buffer that existed when it was recorded
/// has been freed. mark_buffers() marks every owned buffer that exists now as watched;
/// freeing a watched buffer advances the epoch.
struct BufferMark {
  long allocations = 0;  ///< owned buffers allocated since the process started, at the mark
  long epoch = 0;        ///< watched buffers freed since the process started, at the mark
};
BufferMark mark_buffers();
/// @brief Whether a buffer that existed at m has been freed since.
bool buffers_freed_since(const BufferMark& m);
/// @brief Owned buffers allocated since the process started.
long buffer_allocations();

/// An owned allocation; moves, never copies.
class Buffer {
 public:
  Buffer() = default;
  /// @brief Allocate bytes of the given kind; a failure names the size and what is free.
  Buffer(MemoryKind kind, std::size_t bytes);
  /// @brief A buffer over memory someone else owns (e.g. a PETSc Vec's array); not freed.
  static Buffer borrow(MemoryKind kind, void* data, std::size_t bytes);
  void* data() const { return ptr_.get(); }
  std::size_t bytes() const { return bytes_; }
  MemoryKind kind() const { return kind_; }

 private:
  struct Deleter {
    MemoryKind kind;
    bool owned;
    std::size_t bytes;  ///< counted in memory_use()
    long serial;        ///< its place among the allocations (buffers_freed_since)
    void operator()(void* p) const;
  };
  std::unique_ptr<void, Deleter> ptr_;
  std::size_t bytes_ = 0;
  MemoryKind kind_ = MemoryKind::host;
};

/// @brief Copy bytes between any two kinds of memory, ordered in stream s (synchronous for
/// pageable host memory, as CUDA makes it).
void copy_bytes(void* dst, const void* src, std::size_t bytes, Stream s = {});

/// Moves arrays between ordinary (pageable) host memory and the device through two pinned
/// chunks, so the host copy of one chunk (by all cores: one copies ~8 GB/s) overlaps the DMA
/// of the other. On the CPU backend, or without CUDA, it is a plain copy.
class PinnedStager {
 public:
  /// @brief dev <- host; queued in stream s (host memory may be reused on return).
  void upload(void* dev, const void* host, std::size_t bytes, Stream s);
  /// @brief host <- dev after the work queued in s; complete on return.
  void download(void* host, const void* dev, std::size_t bytes, Stream s);

 private:
  static constexpr std::size_t chunk_bytes = std::size_t(32) << 20;
  void ensure();
  Buffer chunk_[2];
  std::unique_ptr<Event> done_[2];
};

/// @brief Set bytes to zero on the memory of kind k, in stream s.
void zero_bytes(void* dst, std::size_t bytes, MemoryKind k, Stream s = {});

}  // namespace latke
