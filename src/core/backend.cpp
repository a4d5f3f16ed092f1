// Backend selection, streams, events and device queries. Host-side CUDA runtime calls only;
// no kernels here, so this file is ordinary C++ in every build.
#include "src/core/backend.h"
#include "src/core/launch_team.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>

#include "src/core/error.h"

#ifdef LATKE_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace latke {

const char* to_string(Backend b) { return b == Backend::cuda ? "cuda" : "cpu"; }

Backend parse_backend(const std::string& name) {
  if (name == "cpu") return Backend::cpu;
  if (name == "cuda") return Backend::cuda;
  fail("unknown backend '", name, "': expected cpu or cuda");
}

bool cuda_compiled() {
#ifdef LATKE_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

void check_cuda(int err, const char* call, const char* file, int line) {
#ifdef LATKE_HAVE_CUDA
  if (err != cudaSuccess)
    fail("CUDA error in ", call, " at ", file, ":", line, ": ",
         cudaGetErrorString(static_cast<cudaError_t>(err)));
#else
  (void)err, (void)call, (void)file, (void)line;
#endif
}

int cuda_device_count() {
#ifdef LATKE_HAVE_CUDA
  // Asked once: the count cannot change within a process, and copies on hot paths (halo
  // exchanges) consult it.
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      cudaGetLastError();  // no driver or no device: clear the sticky error, report none
      return 0;
    }
    return n;
  }();
  return count;
#else
  return 0;
#endif
}

Backend default_backend() { return cuda_device_count() > 0 ? Backend::cuda : Backend::cpu; }

namespace {
struct CudaState {
  bool active = false;
  void* compute = nullptr;
  void* comm = nullptr;
  bool comm_priority = false;
  DeviceInfo info;
};
CudaState& cuda_state() {
  static CudaState s;
  return s;
}
}  // namespace

void activate_backend(Backend b, int local_rank) {
  if (b == Backend::cpu) return;
  if (!cuda_compiled())
    fail("backend cuda was asked for, but this build of Latke has no CUDA (configure with "
         "-DLATKE_ENABLE_CUDA=ON where nvcc is installed)");
  const int n = cuda_device_count();
  if (n == 0) fail("backend cuda was asked for, but no CUDA device is visible to this process");
#ifdef LATKE_HAVE_CUDA
  CudaState& s = cuda_state();
  if (s.active) return;
  const int dev = local_rank % n;
  LATKE_CUDA_CALL(cudaSetDevice(dev));
  cudaStream_t a, c;
  LATKE_CUDA_CALL(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  // The halo path (pack kernels, peer copies) on the highest priority the device has: its
  // blocks go ahead of the interior kernel's pending ones instead of waiting for its last wave.
  // LATKE_COMM_PRIORITY=0 keeps the default priority (for comparisons).
  int least = 0, greatest = 0;
  LATKE_CUDA_CALL(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  const char* prio = std::getenv("LATKE_COMM_PRIORITY");
  s.comm_priority = !(prio && std::string(prio) == "0") && greatest < least;
  LATKE_CUDA_CALL(cudaStreamCreateWithPriority(&c, cudaStreamNonBlocking, s.comm_priority ? greatest : least));
  s.compute = a;
  s.comm = c;
  cudaDeviceProp p;
  LATKE_CUDA_CALL(cudaGetDeviceProperties(&p, dev));
  s.info = DeviceInfo{p.name, p.multiProcessorCount, static_cast<std::size_t>(p.l2CacheSize), p.totalGlobalMem};
  s.active = true;
#else
  (void)local_rank;
#endif
}

Stream compute_stream() { return Stream{cuda_state().compute}; }
Stream comm_stream() { return Stream{cuda_state().comm}; }
bool comm_stream_prioritized() { return cuda_state().comm_priority; }
DeviceInfo device_info() { return cuda_state().info; }

std::size_t free_memory(Backend b) {
#ifdef LATKE_HAVE_CUDA
  if (b == Backend::cuda) {
    std::size_t free_b = 0, total_b = 0;
    LATKE_CUDA_CALL(cudaMemGetInfo(&free_b, &total_b));
    return free_b;
  }
#else
  (void)b;
#endif
  const long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<std::size_t>(pages) * static_cast<std::size_t>(page) : 0;
}

std::size_t team_shared_limit(Backend b) {
#ifdef LATKE_HAVE_CUDA
  if (b == Backend::cuda) {
    static const std::size_t limit = [] {
      int dev = 0, bytes = 0;
      LATKE_CUDA_CALL(cudaGetDevice(&dev));
      LATKE_CUDA_CALL(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
      return static_cast<std::size_t>(bytes);
    }();
    return limit;
  }
#else
  (void)b;
#endif
  return cpu_team_shared_bytes;
}

void synchronize(Backend b) {
#ifdef LATKE_HAVE_CUDA
  if (b == Backend::cuda) LATKE_CUDA_CALL(cudaDeviceSynchronize());
#else
  (void)b;
#endif
}

void synchronize(Stream s) {
#ifdef LATKE_HAVE_CUDA
  if (cuda_state().active) LATKE_CUDA_CALL(cudaStreamSynchronize(static_cast<cudaStream_t>(s.handle)));
#else
  (void)s;
#endif
}

Event::Event() {
#ifdef LATKE_HAVE_CUDA
  if (cuda_state().active) {
    cudaEvent_t e;
    LATKE_CUDA_CALL(cudaEventCreate(&e));
    handle_ = e;
  }
#endif
}

Event::~Event() {
#ifdef LATKE_HAVE_CUDA
  if (handle_) cudaEventDestroy(static_cast<cudaEvent_t>(handle_));
#endif
}

void Event::record(Stream s) {
#ifdef LATKE_HAVE_CUDA
  if (handle_)
    LATKE_CUDA_CALL(cudaEventRecord(static_cast<cudaEvent_t>(handle_), static_cast<cudaStream_t>(s.handle)));
#else
  (void)s;
#endif
}

void Event::wait(Stream s) const {
#ifdef LATKE_HAVE_CUDA
  if (handle_)
    LATKE_CUDA_CALL(cudaStreamWaitEvent(static_cast<cudaStream_t>(s.handle), static_cast<cudaEvent_t>(handle_), 0));
#else
  (void)s;
#endif
}

void Event::synchronize() const {
#ifdef LATKE_HAVE_CUDA
  if (handle_) LATKE_CUDA_CALL(cudaEventSynchronize(static_cast<cudaEvent_t>(handle_)));
#endif
}

double Event::elapsed_ms(const Event& start, const Event& stop) {
#ifdef LATKE_HAVE_CUDA
  require(start.handle_ && stop.handle_, "Event::elapsed_ms needs events of an active CUDA backend");
  LATKE_CUDA_CALL(cudaEventSynchronize(static_cast<cudaEvent_t>(stop.handle_)));
  float ms = 0;
  LATKE_CUDA_CALL(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start.handle_),
                                       static_cast<cudaEvent_t>(stop.handle_)));
  return ms;
#else
  (void)start, (void)stop;
  fail("Event::elapsed_ms needs the CUDA backend");
#endif
}

double time_per_call(Backend b, int n, const std::function<void()>& f) {
  f();
  synchronize(b);
  if (b == Backend::cuda) {
    Event e0, e1;
    e0.record(compute_stream());
    for (int i = 0; i < n; ++i) f();
    e1.record(compute_stream());
    return Event::elapsed_ms(e0, e1) / n;
  }
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / n;
}

}  // namespace latke
