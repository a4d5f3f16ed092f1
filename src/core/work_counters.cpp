// Process-wide work counters (work_counters.h).
#include "src/core/work_counters.h"

#include <chrono>

#include "src/core/error.h"

namespace latke {

WorkCounters& work_counters() {
  static WorkCounters counters;
  return counters;
}

void global_sum(double* values, int n, MPI_Comm comm) {
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = MPI_Allreduce(MPI_IN_PLACE, values, n, MPI_DOUBLE, MPI_SUM, comm);
  require(rc == MPI_SUCCESS, "global sum of ", n, " numbers: MPI_Allreduce failed with code ", rc);
  WorkCounters& c = work_counters();
  ++c.reductions;
  c.reduction_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace latke
