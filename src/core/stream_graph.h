// CUDA graphs of work queued on the compute stream: a sequence of small kernels recorded once
// and then launched as one graph, so that the host's launch cost is paid once per sequence and
// not once per kernel (what bounds the coarse levels of a multigrid cycle). The multigrid's
// coarse corrections use it (docs/multigrid.md).
#pragma once

#include <functional>

#include "src/core/backend.h"
#include "src/core/memory.h"
#include "src/core/work_counters.h"

namespace latke {

/// A recording of the work a function queues on the compute stream, launched again as a whole.
/// What it records must be kernels and copies in the compute stream only, on buffers that
/// outlive the graph: no host synchronisation, no other stream, no allocation. Whatever else f
/// does on the host is done once, while recording, except that the kernel launches it counts
/// (work_counters) are counted by each launch() instead.
class StreamGraph {
 public:
  StreamGraph() = default;
  ~StreamGraph();
  StreamGraph(const StreamGraph&) = delete;
  StreamGraph& operator=(const StreamGraph&) = delete;

  /// @brief Record what f queues on the compute stream (its kernels do not run). Returns false,
  /// and keeps no graph, when f did something a graph cannot hold (synchronised, allocated a
  /// buffer, used another stream: CUDA then ends the capture with an error, which is cleared);
  /// for a backend other than CUDA always false (f is not called).
  bool record(Backend b, const std::function<void()>& f);
  /// @brief Whether a recording is held and every buffer that existed when it was made still does.
  bool valid() const;
  /// @brief Launch the recording in the compute stream (asynchronously), as f would have queued it.
  void launch();
  /// @brief Drop the recording.
  void reset();

 private:
  void* exec_ = nullptr;  ///< cudaGraphExec_t
  BufferMark mark_;
  long launches_ = 0;  ///< kernels the recording counted
};

}  // namespace latke
