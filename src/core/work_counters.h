// Process-wide counts of the work whose cost is latency rather than bandwidth: kernel launches
// (every kernel goes through launch.h), global sums over the ranks (each one host
// synchronisation and one MPI_Allreduce), and halo exchanges with the host's time waiting in
// them and the bytes they sent. Profilers (the multigrid's per-level breakdown) take differences of snapshots.
#pragma once

#include <mpi.h>

namespace latke {

struct WorkCounters {
  long launches = 0;
  long reductions = 0;
  double reduction_seconds = 0;  ///< in MPI_Allreduce: the ranks waiting for each other included
  long exchanges = 0;
  double halo_seconds = 0;  ///< the host waiting in halo exchanges (HaloExchange::finish)
  double halo_bytes = 0;    ///< sent by this rank in them: both faces of every dimension exchanged
};

/// This process's counters since it started.
WorkCounters& work_counters();

/// @brief values[0 .. n) summed over the ranks of comm, in place; counted as one reduction.
void global_sum(double* values, int n, MPI_Comm comm);

}  // namespace latke
