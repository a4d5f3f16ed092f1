// Machine micro-benchmarks (machine_bench.h). Compiled by nvcc in CUDA builds (it launches
// kernels).
#include "src/core/machine_bench.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <vector>

#include "src/core/halo.h"
#include "src/core/launch.h"
#include "src/core/memory.h"

namespace latke {

namespace {

struct EmptyKernel {
  LATKE_HOST_DEVICE void operator()(int, int) const {}
};

struct SumKernel {
  const float* data;
  LATKE_HOST_DEVICE double operator()(int i, int) const {
    const float* v = data + 4 * i;
    return static_cast<double>(v[0]) + v[1] + v[2] + v[3];
  }
};

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

double launch_latency_us(Backend b) {
  std::vector<double> t;
  for (int r = 0; r < 7; ++r)
    t.push_back(1e3 * time_per_call(b, 200, [&] { launch(b, EmptyKernel{}, {1}, compute_stream(), false); }));
  return median(t);
}

double read_bandwidth_gbs(Backend b, std::size_t bytes) {
  bytes -= bytes % 16;
  Buffer buf(memory_for(b), bytes);
  zero_bytes(buf.data(), bytes, memory_for(b), compute_stream());
  const SumKernel k{static_cast<const float*>(buf.data())};
  const int n = static_cast<int>(bytes / 16);
  std::vector<double> t;
  for (int r = 0; r < 7; ++r) t.push_back(time_per_call(b, 5, [&] { (void)launch_reduce<double>(b, k, {n}); }));
  return bytes / (median(t) * 1e-3) / 1e9;
}

double host_device_gbs(Backend b, std::size_t bytes) {
  if (b != Backend::cuda) return 0;
  Buffer host(MemoryKind::pinned, bytes), dev(MemoryKind::device, bytes);
  std::vector<double> t;
  for (int r = 0; r < 7; ++r)
    t.push_back(time_per_call(b, 3, [&] {
      copy_bytes(dev.data(), host.data(), bytes, compute_stream());
      copy_bytes(host.data(), dev.data(), bytes, compute_stream());
    }));
  return 2.0 * bytes / (median(t) * 1e-3) / 1e9;
}

ExchangeTiming exchange_timing(const Lattice& lat, Backend b, std::size_t face_bytes) {
  std::array<std::size_t, 4> faces{};
  for (int mu = 0; mu < 4; ++mu) faces[mu] = lat.partitioned(mu) ? face_bytes : 0;
  HaloExchange halo(lat, b, faces);
  // As a stencil makes it (wilson_clover_launch_impl.h), with empty kernels: the pack kernel
  // on the comm stream, the interior on the compute stream, the host waiting for the faces,
  // the exterior kernel.
  auto once = [&] {
    halo.begin();
    launch(b, EmptyKernel{}, {1}, comm_stream(), false);
    launch(b, EmptyKernel{}, {1}, compute_stream(), false);
    halo.finish();
    launch(b, EmptyKernel{}, {1}, halo.exterior_stream(), false);
    halo.end();
  };
  for (int i = 0; i < 5; ++i) once();  // warm-up: peer mappings, signals
  std::vector<double> t;
  for (int r = 0; r < 7; ++r) {
    synchronize(b);
    MPI_Barrier(lat.comm());
    const double t0 = now_us();
    const int n = 50;
    for (int i = 0; i < n; ++i) once();
    synchronize(b);
    double us = (now_us() - t0) / n;
    MPI_Allreduce(MPI_IN_PLACE, &us, 1, MPI_DOUBLE, MPI_MAX, lat.comm());
    t.push_back(us);
  }
  return ExchangeTiming{median(t), halo.bytes_per_exchange()};
}

double global_sum_us(MPI_Comm comm, Backend b) {
  const std::size_t bytes = 4096 * 16;
  Buffer buf(memory_for(b), bytes);
  zero_bytes(buf.data(), bytes, memory_for(b), compute_stream());
  const SumKernel k{static_cast<const float*>(buf.data())};
  std::vector<double> t;
  for (int r = 0; r < 7; ++r) {
    synchronize(b);
    MPI_Barrier(comm);
    const double t0 = now_us();
    const int n = 100;
    for (int i = 0; i < n; ++i) {
      double s = launch_reduce<double>(b, k, {4096});
      MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_SUM, comm);
    }
    double us = (now_us() - t0) / n;
    MPI_Allreduce(MPI_IN_PLACE, &us, 1, MPI_DOUBLE, MPI_MAX, comm);
    t.push_back(us);
  }
  return median(t);
}

}  // namespace latke
