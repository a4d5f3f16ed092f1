// Backends: where fields live and kernels run. The choice is made at run time (CUDA where a
// device exists, else CPU); a kernel source is the same for both (see launch.h).
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace latke {

enum class Backend { cpu, cuda };

/// @brief "cpu" or "cuda".
const char* to_string(Backend b);

/// @brief Parse "cpu" or "cuda"; anything else is an error naming the value.
Backend parse_backend(const std::string& name);

/// @brief Whether this build of Latke contains CUDA kernels.
bool cuda_compiled();

/// @brief Number of CUDA devices visible to this process (0 when none or not compiled).
int cuda_device_count();

/// @brief CUDA when compiled in and a device exists, else CPU.
Backend default_backend();

/// @brief Make b usable in this process: for CUDA, select device local_rank modulo the device
/// count (the rank on its node: round robin; or the device a CUDA PETSc chose) and create
/// streams. Fails clearly when CUDA is asked for and cannot be had.
void activate_backend(Backend b, int local_rank = 0);

/// An opaque CUDA stream (nullptr on the CPU backend).
struct Stream {
  void* handle = nullptr;
};

/// @brief The stream kernels run on by default.
Stream compute_stream();
/// @brief The stream that packing and halo copies run on, so they overlap with compute.
Stream comm_stream();
/// Whether the comm stream runs at the device's highest priority (LATKE_COMM_PRIORITY=0: not).
bool comm_stream_prioritized();

/// @brief Milliseconds per call of f over n calls (after one warm-up call): device events on
/// the compute stream on CUDA, the host clock on the CPU.
double time_per_call(Backend b, int n, const std::function<void()>& f);

/// @brief Block the host until all work queued on b (both streams) has finished.
void synchronize(Backend b);
/// @brief Block the host until work queued on s has finished.
void synchronize(Stream s);

/// An event in a stream's order; wait(): make another stream wait for it.
class Event {
 public:
  Event();
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record(Stream s);
  void wait(Stream s) const;
  /// Block the host until the work before the recorded point has finished.
  void synchronize() const;
  /// Milliseconds between two recorded events (host-synchronizing).
  static double elapsed_ms(const Event& start, const Event& stop);

 private:
  void* handle_ = nullptr;
};

/// Device properties that matter for tuning and reports.
struct DeviceInfo {
  std::string name;
  int sm_count = 0;
  std::size_t l2_bytes = 0;
  std::size_t global_bytes = 0;
};

/// @brief Properties of the active CUDA device (empty name on the CPU backend).
DeviceInfo device_info();
/// @brief Bytes free for new allocations on backend b: device memory on CUDA, available
/// physical memory on the CPU (0 when unknown).
std::size_t free_memory(Backend b);

/// @brief Throw latke::Error naming the CUDA call when err is not success.
void check_cuda(int err, const char* call, const char* file, int line);

}  // namespace latke

#define LATKE_CUDA_CALL(call) ::latke::check_cuda(static_cast<int>(call), #call, __FILE__, __LINE__)
