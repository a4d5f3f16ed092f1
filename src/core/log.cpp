// Latke's PETSc log events.
#include "latke/core/log.h"

#include <petsclog.h>

#include "latke/core/backend.h"
#include "latke/core/error.h"

namespace latke {

namespace {
struct Events {
  bool registered = false;
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
}  // namespace

void register_log_events() {
  Events& e = events();
  if (e.registered) return;
  PetscClassId cls = 0;
  const char* names[] = {"LatkeMatMult",   "LatkeDslash",    "LatkeClover",     "LatkeHalo",
                         "LatkeStage",     "LatkeMGSetup",   "LatkeMGApply",    "LatkeMGSmooth0",
                         "LatkeMGSmooth1", "LatkeMGSmooth2", "LatkeMGSmooth3",  "LatkeMGTransfer",
                         "LatkeMGCoarseOp", "LatkeMGCoarseSolve"};
  static_assert(sizeof(names) / sizeof(names[0]) == static_cast<int>(LogEvent::count_), "a name per event");
  require(PetscClassIdRegister("Latke", &cls) == 0, "registering Latke's PETSc class id failed");
  for (int i = 0; i < static_cast<int>(LogEvent::count_); ++i)
    require(PetscLogEventRegister(names[i], cls, &e.id[i]) == 0, "registering PETSc log event ", names[i], " failed");
  e.registered = true;
}

LogScope::LogScope(LogEvent ev, double flops, bool gpu_work) : event_(-1), gpu_work_(gpu_work) {
  Events& e = events();
  if (!e.registered) return;
  event_ = e.id[static_cast<int>(ev)];
  PetscLogEventBegin(event_, 0, 0, 0, 0);
  if (flops > 0) {
    // PETSc counts its argument as complex operations in complex builds (PETSC_FLOPS_PER_OP
    // real flops each); Latke's counts are real flops already.
    const double ops = flops / PETSC_FLOPS_PER_OP;
    if (gpu_work && compute_stream().handle)
      PetscLogGpuFlops(ops);
    else
      PetscLogFlops(ops);
  }
}

LogScope::~LogScope() {
  if (event_ < 0) return;
  if (gpu_work_ && logging_active()) {
    try {
      synchronize(compute_stream());
    } catch (const Error&) {
      // A failed kernel is reported by the next checked CUDA call, not from a destructor.
    }
  }
  PetscLogEventEnd(event_, 0, 0, 0, 0);
}

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
