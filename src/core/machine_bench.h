// Micro-benchmarks of a machine for the performance model (latke-bench machine, latke-scale
// model): what a kernel launch, a memory pass, a host-device copy, a halo exchange and a
// global sum cost here. Each is the median of repeated timings after a warm-up.
#pragma once

#include <mpi.h>

#include <cstddef>

#include "src/core/backend.h"
#include "src/core/lattice.h"

namespace latke {

/// @brief Microseconds per launch of an empty kernel, launches queued back to back.
double launch_latency_us(Backend b);
/// @brief GB/s of a kernel that reads `bytes` once (a sum of every word).
double read_bandwidth_gbs(Backend b, std::size_t bytes);
/// @brief GB/s of copies of `bytes` between pinned host memory and the device (both
/// directions); 0 on the CPU backend.
double host_device_gbs(Backend b, std::size_t bytes);

/// One halo exchange over a process grid as a stencil makes it, with empty kernels
/// (HaloExchange's begin, the pack and interior kernels, finish, the exterior kernel, end).
struct ExchangeTiming {
  double us = 0;          ///< microseconds per exchange, the slowest rank's
  std::size_t bytes = 0;  ///< bytes this rank sends per exchange
};
/// @brief Exchanges of faces of `face_bytes` in every split dimension of lat. Collective.
ExchangeTiming exchange_timing(const Lattice& lat, Backend b, std::size_t face_bytes);

/// @brief Microseconds of one global sum as the solvers make it: a device reduction read back
/// to the host, then MPI_Allreduce of one number over comm (the slowest rank's). Collective.
double global_sum_us(MPI_Comm comm, Backend b);

}  // namespace latke
