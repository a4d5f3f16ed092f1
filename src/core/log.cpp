// Latke's PETSc log events.
#include "src/core/log.h"

#include <petsclog.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "src/core/petsc_compat.h"
#include "src/core/backend.h"
#include "src/core/error.h"

#if defined(LATKE_HAVE_NVTX)
#include <nvtx3/nvToolsExt.h>
#endif

namespace latke {

namespace {
struct Events {
  bool registered = false;
  bool gpu_time = false;  ///< -log_view_gpu_time: PETSc reports GPU time per event
  PetscLogEvent id[static_cast<int>(LogEvent::count_)] = {};
  StagingCounters staging;
};
Events& events() {
  static Events e;
  return e;
}
bool logging_active() {
  PetscBool on = PETSC_FALSE;
  PetscLogIsActive(&on);
  return on == PETSC_TRUE;
}

/// GPU time of the open events that timed GPU work, innermost last. PETSc attributes to an
/// event the GPU time added between its begin and end, so each event adds its own time less
/// what the events nested in it added already.
struct GpuFrame {
  std::unique_ptr<Event> start, stop;
  double children = 0;  ///< seconds added by nested events
};
struct GpuFrames {
  std::vector<GpuFrame> frames;
  std::size_t depth = 0;
};
GpuFrames& gpu_frames() {
  static GpuFrames f;
  return f;
}
#if defined(PETSC_HAVE_DEVICE)
constexpr bool petsc_has_device = true;
#else
constexpr bool petsc_has_device = false;
#endif
const char* const* event_names() {
  static const char* const names[] = {
      "LatkeMatMult",    "LatkeDslash",      "LatkeClover",         "LatkeHalo",          "LatkeStage",
      "LatkeMGSetup",    "LatkeMGApply",     "LatkeMGSmooth0",      "LatkeMGSmooth1",     "LatkeMGSmooth2",
      "LatkeMGSmooth3",  "LatkeMGTransfer",  "LatkeMGCoarseOp",     "LatkeMGCoarseSolve", "LatkeMGNullVectors",
      "LatkeMGGalerkin", "LatkeMGGather",    "LatkeOpBuild",        "LatkeLinkUpload",    "LatkeSchwarzBlocks",
      "LatkeGaugeIO",    "LatkeGaugeUpdate", "LatkeContract",       "LatkeGcrOrtho",      "LatkeGcrDeflate",
      "LatkeSmear",      "LatkeGaugeFix",    "LatkeSchwarzBoundary"};
  static_assert(sizeof(names) / sizeof(names[0]) == static_cast<int>(LogEvent::count_), "a name per event");
  return names;
}
}  // namespace

void register_log_events() {
  Events& e = events();
  if (e.registered) return;
  PetscClassId cls = 0;
  const char* const* names = event_names();
  require(PetscClassIdRegister("Latke", &cls) == 0, "registering Latke's PETSc class id failed");
  for (int i = 0; i < static_cast<int>(LogEvent::count_); ++i)
    require(PetscLogEventRegister(names[i], cls, &e.id[i]) == 0, "registering PETSc log event ", names[i], " failed");
  PetscBool gpu_time = PETSC_FALSE;
  require(PetscOptionsHasName(nullptr, nullptr, "-log_view_gpu_time", &gpu_time) == 0, "reading -log_view_gpu_time failed");
  e.gpu_time = gpu_time == PETSC_TRUE;
  e.registered = true;
}

LogScope::LogScope(LogEvent ev, double flops, bool gpu_work) : event_(-1), gpu_work_(gpu_work) {
#if defined(LATKE_HAVE_NVTX)
  nvtxRangePushA(event_names()[static_cast<int>(ev)]);  // a no-op unless a profiler is attached
#endif
  Events& e = events();
  if (!e.registered) return;
  event_ = e.id[static_cast<int>(ev)];
  PetscLogEventBegin(event_, 0, 0, 0, 0);
  const bool on_gpu = gpu_work && compute_stream().handle;
  if (flops > 0) {
    // PETSc counts its argument as complex operations in complex builds (PETSC_FLOPS_PER_OP
    // real flops each); Latke's counts are real flops already.
    const double ops = flops / PETSC_FLOPS_PER_OP;
    if (on_gpu)
      petsc::compat::log_gpu_flops(ops);
    else
      PetscLogFlops(ops);
  }
  if (petsc_has_device && e.gpu_time && on_gpu && logging_active()) {
    GpuFrames& g = gpu_frames();
    if (g.frames.size() <= g.depth) g.frames.resize(g.depth + 1);
    GpuFrame& f = g.frames[g.depth++];
    if (!f.start) f.start = std::make_unique<Event>(), f.stop = std::make_unique<Event>();
    f.children = 0;
    f.start->record(compute_stream());
    gpu_timed_ = true;
  }
}

LogScope::~LogScope() {
#if defined(LATKE_HAVE_NVTX)
  nvtxRangePop();
#endif
  if (event_ < 0) return;
  try {
    if (gpu_timed_) {
      GpuFrames& g = gpu_frames();
      GpuFrame& f = g.frames[--g.depth];
      f.stop->record(compute_stream());
      const double seconds = Event::elapsed_ms(*f.start, *f.stop) * 1e-3;
      petsc::compat::log_gpu_time(std::max(0.0, seconds - f.children));
      if (g.depth > 0) g.frames[g.depth - 1].children += seconds;
    } else if (gpu_work_ && logging_active()) {
      synchronize(compute_stream());
    }
  } catch (const Error&) {
    // A failed kernel is reported by the next checked CUDA call, not from a destructor.
  }
  PetscLogEventEnd(event_, 0, 0, 0, 0);
}

bool log_synchronizes() { return events().registered && logging_active(); }

void count_staging(bool to_device, double bytes) {
  StagingCounters& s = events().staging;
  if (to_device) {
    ++s.copies_to_device;
    s.bytes_to_device += bytes;
    PetscLogCpuToGpu(bytes);
  } else {
    ++s.copies_to_host;
    s.bytes_to_host += bytes;
    PetscLogGpuToCpu(bytes);
  }
}

StagingCounters staging_counters() { return events().staging; }

}  // namespace latke
