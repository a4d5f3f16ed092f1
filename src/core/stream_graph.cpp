// CUDA graphs of the compute stream's work (stream capture). Host-side CUDA runtime calls only.
#include "src/core/stream_graph.h"

#include "src/core/backend.h"
#include "src/core/error.h"

#ifdef LATKE_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace latke {

StreamGraph::~StreamGraph() { reset(); }

void StreamGraph::reset() {
#ifdef LATKE_HAVE_CUDA
  if (exec_) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec_));
#endif
  exec_ = nullptr;
  launches_ = 0;
}

bool StreamGraph::valid() const { return exec_ && !buffers_freed_since(mark_); }

bool StreamGraph::record(Backend b, const std::function<void()>& f) {
  reset();
#ifdef LATKE_HAVE_CUDA
  const Stream s = compute_stream();
  if (b != Backend::cuda || !s.handle) return false;
  const cudaStream_t stream = static_cast<cudaStream_t>(s.handle);
  const BufferMark mark = mark_buffers();
  const long launches = work_counters().launches;
  // Thread-local mode: an unsafe call from this thread (a synchronisation, a blocking copy)
  // fails and ends the capture, rather than being recorded wrongly.
  LATKE_CUDA_CALL(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  bool ran = true;
  try {
    f();
  } catch (...) {
    ran = false;
  }
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  // Nothing recorded has run: the launches f counted are counted by launch() instead.
  const long counted = work_counters().launches - launches;
  work_counters().launches = launches;
  const bool buffers_changed = buffer_allocations() != mark.allocations || buffers_freed_since(mark);
  if (!ran || ended != cudaSuccess || !graph || buffers_changed) {
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();  // the capture's error, if any: not the device's
    return false;
  }
  // The executable graph is all a launch needs: it does not refer to the recorded one.
  cudaGraphExec_t exec = nullptr;
  const bool made = cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess;
  cudaGraphDestroy(graph);
  if (!made) {
    cudaGetLastError();
    return false;
  }
  exec_ = exec;
  mark_ = mark;
  launches_ = counted;
  return true;
#else
  (void)b, (void)f;
  return false;
#endif
}

void StreamGraph::launch() {
  require(valid(), "StreamGraph::launch: no valid recording (record it again)");
#ifdef LATKE_HAVE_CUDA
  LATKE_CUDA_CALL(
      cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec_), static_cast<cudaStream_t>(compute_stream().handle)));
#endif
  work_counters().launches += launches_;
}

}  // namespace latke
