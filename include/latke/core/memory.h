// Memory: device, pinned host and ordinary host buffers with unique ownership.
#pragma once

#include <cstddef>
#include <memory>

#include "latke/core/backend.h"

namespace latke {

enum class MemoryKind { host, pinned, device };

/// @brief Where fields of backend b live.
inline MemoryKind memory_for(Backend b) { return b == Backend::cuda ? MemoryKind::device : MemoryKind::host; }

/// An owned allocation; moves, never copies.
class Buffer {
 public:
  Buffer() = default;
  /// @brief Allocate bytes of the given kind; a failure names the size and what is free.
  Buffer(MemoryKind kind, std::size_t bytes);
  void* data() const { return ptr_.get(); }
  std::size_t bytes() const { return bytes_; }
  MemoryKind kind() const { return kind_; }

 private:
  struct Deleter {
    MemoryKind kind;
    void operator()(void* p) const;
  };
  std::unique_ptr<void, Deleter> ptr_;
  std::size_t bytes_ = 0;
  MemoryKind kind_ = MemoryKind::host;
};

/// @brief Copy bytes between any two kinds of memory, ordered in stream s (synchronous for
/// pageable host memory, as CUDA makes it).
void copy_bytes(void* dst, const void* src, std::size_t bytes, Stream s = {});

/// @brief Set bytes to zero on the memory of kind k, in stream s.
void zero_bytes(void* dst, std::size_t bytes, MemoryKind k, Stream s = {});

}  // namespace latke
