// One kernel source, two backends. A kernel is a trivially copyable functor with
//   LATKE_HOST_DEVICE void operator()(int x_cb, int parity) const;
// launch() runs it over x_cb in [0, n) and the given parities: as a CUDA kernel (one thread
// per site, block size autotuned per functor type and size) or as an OpenMP loop.
// launch_reduce() is the same for a functor returning a value to be summed; the sum is
// accumulated in the functor's type (double-based) in a fixed order, so it is the same run
// to run on a given backend and size. launch_segmented_reduce() sums f(segment, i) over i
// for every segment at once (e.g. per Schwarz block) into an array on the backend, without
// synchronizing the host, also in a fixed order; launch_segmented_reduce_host returns them to
// the host.
//
// Files that launch kernels are compiled by nvcc in CUDA builds (CMake sets LANGUAGE CUDA on
// them); elsewhere only the CPU path exists.
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <typeinfo>
#include <vector>

#include "src/core/backend.h"
#include "src/core/error.h"
#include "src/core/macros.h"
#include "src/core/tune.h"
#include "src/core/work_counters.h"

#ifdef __CUDACC__
#include <cuda_runtime.h>
#endif

namespace latke {

/// Sites [0, n) of parities parity_begin .. parity_begin + n_parity - 1.
struct LaunchRange {
  int n = 0;
  int parity_begin = 0;
  int n_parity = 1;
};

namespace detail {
/// Scratch space for reduction partials (device and pinned host), grown on demand.
void* reduce_scratch_device(std::size_t bytes);
void* reduce_scratch_host(std::size_t bytes);
inline constexpr int reduce_block = 256;
inline constexpr int reduce_max_blocks = 1024;
/// Segmented reductions use at least this many CUDA blocks when the segments are long enough.
inline constexpr int segmented_min_blocks = 512;
/// Scratch for the chunk sums of segmented reductions, grown on demand; shared by all of them,
/// which must therefore run in one stream.
void* segmented_scratch_device(std::size_t bytes);
}  // namespace detail

#ifdef __CUDACC__
template <typename F>
__global__ void launch_kernel(const F f, int n, int parity_begin) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) f(i, parity_begin + static_cast<int>(blockIdx.y));
}

/// The sum of every thread's acc in a CUDA block of detail::reduce_block threads, in a fixed
/// order (a tree in shared memory); thread 0's return value.
template <typename T>
__device__ T block_sum(T acc) {
  __shared__ alignas(16) unsigned char smem_raw[detail::reduce_block * sizeof(T)];
  T* smem = reinterpret_cast<T*>(smem_raw);
  smem[threadIdx.x] = acc;
  __syncthreads();
  for (int w = detail::reduce_block / 2; w > 0; w /= 2) {
    if (static_cast<int>(threadIdx.x) < w) smem[threadIdx.x] += smem[threadIdx.x + w];
    __syncthreads();
  }
  return smem[0];
}

template <typename T, typename F>
__global__ void __launch_bounds__(detail::reduce_block)
    reduce_kernel(const F f, int n, int total, int parity_begin, T* partial) {
  T acc{};
  for (int l = blockIdx.x * blockDim.x + threadIdx.x; l < total; l += gridDim.x * blockDim.x)
    acc += f(l % n, parity_begin + l / n);
  const T sum = block_sum(acc);
  if (threadIdx.x == 0) partial[blockIdx.x] = sum;
}

/// CUDA block k reduces chunk k % split of segment k / split into out[k].
template <typename T, typename F>
__global__ void __launch_bounds__(detail::reduce_block)
    segmented_reduce_kernel(const F f, int length, int split, T* out) {
  const int seg = static_cast<int>(blockIdx.x) / split, chunk = static_cast<int>(blockIdx.x) % split;
  const int begin = static_cast<int>(static_cast<long long>(length) * chunk / split);
  const int end = static_cast<int>(static_cast<long long>(length) * (chunk + 1) / split);
  T acc{};
  for (int i = begin + threadIdx.x; i < end; i += blockDim.x) acc += f(seg, i);
  const T sum = block_sum(acc);
  if (threadIdx.x == 0) out[blockIdx.x] = sum;
}

/// out[seg] = the sum of partial[seg * split + 0 .. split - 1], CUDA block seg: thread t adds
/// partials t, t + blockDim, ..., then block_sum (a fixed order, and a few loads deep rather than
/// one thread's split dependent ones).
template <typename T>
__global__ void __launch_bounds__(detail::reduce_block) sum_chunks_kernel(const T* partial, int split, T* out) {
  const T* p = partial + static_cast<long long>(blockIdx.x) * split;
  T acc{};
  for (int c = threadIdx.x; c < split; c += blockDim.x) acc += p[c];
  const T sum = block_sum(acc);
  if (threadIdx.x == 0) out[blockIdx.x] = sum;
}
#endif

/// @brief Run f over the range on the host with OpenMP (for host-only functors too).
template <typename F>
void launch_cpu(const F& f, LaunchRange r) {
  for (int p = r.parity_begin; p < r.parity_begin + r.n_parity; ++p) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < r.n; ++i) f(i, p);
  }
}

/// @brief Run f over the range on backend b, in stream s (CUDA), asynchronously.
/// @param tunable false for kernels that are not idempotent (they update in place), which
///        must not be run repeatedly to time block sizes.
template <typename F>
void launch(Backend b, const F& f, LaunchRange r, Stream s = compute_stream(), bool tunable = true) {
  if (r.n <= 0 || r.n_parity <= 0) return;
  ++work_counters().launches;
  if (b == Backend::cpu) return launch_cpu(f, r);
#ifdef __CUDACC__
  const cudaStream_t stream = static_cast<cudaStream_t>(s.handle);
  auto run = [&](int block) {
    const dim3 grid((r.n + block - 1) / block, r.n_parity);
    launch_kernel<F><<<grid, block, 0, stream>>>(f, r.n, r.parity_begin);
  };
  // Per functor type: size -> block, and whether a tunable call chose it. A size taken untimed
  // for a call that may not be repeated stays open: the next tunable call of that size times it.
  struct Choice {
    int block = 0;
    bool final = false;
  };
  static std::map<long long, Choice> chosen;
  const long long size_key = static_cast<long long>(r.n) * 4 + r.n_parity;
  Choice& choice = chosen[size_key];
  int block = choice.block;
  if (block == 0 || (tunable && !choice.final)) {
    cudaFuncAttributes attr;
    LATKE_CUDA_CALL(cudaFuncGetAttributes(&attr, launch_kernel<F>));
    const std::string key =
        std::string(typeid(F).name()) + " n=" + std::to_string(r.n) + "x" + std::to_string(r.n_parity);
    const int known = tunable && tuning_enabled() ? tuned_block_size(key) : 0;  // e.g. from LATKE_RESOURCE_PATH
    block = std::min(known > 0 ? known : 128, attr.maxThreadsPerBlock);
    double best = -1;
    if (tunable && tuning_enabled() && known == 0) {
      cudaEvent_t e0, e1;
      LATKE_CUDA_CALL(cudaEventCreate(&e0));
      LATKE_CUDA_CALL(cudaEventCreate(&e1));
      for (int cand : {32, 64, 96, 128, 192, 256, 384, 512, 768, 1024}) {
        if (cand > attr.maxThreadsPerBlock) continue;
        run(cand);  // warm-up
        LATKE_CUDA_CALL(cudaEventRecord(e0, stream));
        for (int k = 0; k < 3; ++k) run(cand);
        LATKE_CUDA_CALL(cudaEventRecord(e1, stream));
        LATKE_CUDA_CALL(cudaEventSynchronize(e1));
        LATKE_CUDA_CALL(cudaGetLastError());
        float ms = 0;
        LATKE_CUDA_CALL(cudaEventElapsedTime(&ms, e0, e1));
        if (best < 0 || ms < best) { best = ms; block = cand; }
      }
      cudaEventDestroy(e0);
      cudaEventDestroy(e1);
    }
    choice = {block, tunable};
    if (known == 0) store_block_size(key, block, best / 3);  // best < 0: not timed (not kept in the file)
  }
  run(block);
  LATKE_CUDA_CALL(cudaGetLastError());
#else
  (void)s, (void)tunable;
  fail("kernel ", typeid(F).name(), " asked to run on CUDA, but its file was compiled without CUDA");
#endif
}

/// @brief Sum f(x_cb, parity) over the range on backend b; blocks until the sum is known.
template <typename T, typename F>
T launch_reduce(Backend b, const F& f, LaunchRange r, Stream s = compute_stream()) {
  const int total = r.n * r.n_parity;
  if (total <= 0) return T{};
  ++work_counters().launches;
  const int blocks = std::min(detail::reduce_max_blocks, (total + detail::reduce_block - 1) / detail::reduce_block);
  if (b == Backend::cpu) {
    std::vector<T> partial(blocks);
#pragma omp parallel for schedule(static)
    for (int c = 0; c < blocks; ++c) {
      T acc{};
      const long long begin = static_cast<long long>(total) * c / blocks;
      const long long end = static_cast<long long>(total) * (c + 1) / blocks;
      for (long long l = begin; l < end; ++l)
        acc += f(static_cast<int>(l % r.n), r.parity_begin + static_cast<int>(l / r.n));
      partial[c] = acc;
    }
    T sum{};
    for (const T& p : partial) sum += p;
    return sum;
  }
#ifdef __CUDACC__
  const cudaStream_t stream = static_cast<cudaStream_t>(s.handle);
  T* d_partial = static_cast<T*>(detail::reduce_scratch_device(blocks * sizeof(T)));
  T* h_partial = static_cast<T*>(detail::reduce_scratch_host(blocks * sizeof(T)));
  reduce_kernel<T, F><<<blocks, detail::reduce_block, 0, stream>>>(f, r.n, total, r.parity_begin, d_partial);
  LATKE_CUDA_CALL(cudaGetLastError());
  LATKE_CUDA_CALL(cudaMemcpyAsync(h_partial, d_partial, blocks * sizeof(T), cudaMemcpyDeviceToHost, stream));
  LATKE_CUDA_CALL(cudaStreamSynchronize(stream));
  T sum{};
  for (int c = 0; c < blocks; ++c) sum += h_partial[c];
  return sum;
#else
  (void)s;
  fail("reduction ", typeid(F).name(), " asked to run on CUDA, but its file was compiled without CUDA");
#endif
}

/// @brief out[seg] = sum over i in [0, length) of f(seg, i), for seg in [0, n_segments);
/// out is memory of backend b (device memory for CUDA). Queued in stream s, not waited for.
template <typename T, typename F>
void launch_segmented_reduce(Backend b, const F& f, int n_segments, int length, T* out, Stream s = compute_stream()) {
  if (n_segments <= 0) return;
  ++work_counters().launches;
  if (b == Backend::cpu) {
#pragma omp parallel for schedule(static)
    for (int seg = 0; seg < n_segments; ++seg) {
      T acc{};
      for (int i = 0; i < length; ++i) acc += f(seg, i);
      out[seg] = acc;
    }
    return;
  }
#ifdef __CUDACC__
  // A few long segments (large Schwarz blocks) would leave most SMs idle: cut each into
  // chunks reduced by one CUDA block each, then add each segment's chunks in a second pass.
  const cudaStream_t stream = static_cast<cudaStream_t>(s.handle);
  const int split = std::max(1, std::min((detail::segmented_min_blocks + n_segments - 1) / n_segments,
                                         length / (4 * detail::reduce_block)));
  if (split == 1) {
    segmented_reduce_kernel<T, F><<<n_segments, detail::reduce_block, 0, stream>>>(f, length, 1, out);
  } else {
    T* partial = static_cast<T*>(detail::segmented_scratch_device(sizeof(T) * n_segments * split));
    segmented_reduce_kernel<T, F><<<n_segments * split, detail::reduce_block, 0, stream>>>(f, length, split, partial);
    sum_chunks_kernel<T><<<n_segments, detail::reduce_block, 0, stream>>>(partial, split, out);
  }
  LATKE_CUDA_CALL(cudaGetLastError());
#else
  (void)s, (void)length, (void)out;
  fail("reduction ", typeid(F).name(), " asked to run on CUDA, but its file was compiled without CUDA");
#endif
}

/// @brief launch_segmented_reduce into host memory: out[seg] (host) for every segment;
/// blocks until the sums are known (one copy and one stream synchronisation for all segments,
/// as launch_reduce does for one sum).
template <typename T, typename F>
void launch_segmented_reduce_host(Backend b, const F& f, int n_segments, int length, T* out,
                                  Stream s = compute_stream()) {
  if (b == Backend::cpu || n_segments <= 0) return launch_segmented_reduce<T>(b, f, n_segments, length, out, s);
#ifdef __CUDACC__
  const cudaStream_t stream = static_cast<cudaStream_t>(s.handle);
  T* d = static_cast<T*>(detail::reduce_scratch_device(n_segments * sizeof(T)));
  T* h = static_cast<T*>(detail::reduce_scratch_host(n_segments * sizeof(T)));
  launch_segmented_reduce<T>(b, f, n_segments, length, d, s);
  LATKE_CUDA_CALL(cudaMemcpyAsync(h, d, n_segments * sizeof(T), cudaMemcpyDeviceToHost, stream));
  LATKE_CUDA_CALL(cudaStreamSynchronize(stream));
  std::copy(h, h + n_segments, out);
#else
  fail("reduction ", typeid(F).name(), " asked to run on CUDA, but its file was compiled without CUDA");
#endif
}

}  // namespace latke
