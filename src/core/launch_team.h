// Team kernels, one source for both backends: a functor
//   LATKE_HOST_DEVICE void operator()(const Team& team) const;
// runs once per team, n_teams teams. On CUDA a team is one thread block with `bytes` of
// dynamic shared memory (team.shared()); on the CPU it is one OpenMP iteration with a host
// buffer of the same size. The functor is written as phases over the team's items,
// team.for_each(n, g) (on CUDA strided over the block's threads, on the CPU a loop),
// separated by team.sync() (__syncthreads on CUDA, nothing on the CPU), and team.sum(n, g),
// which returns the sum of g(i) over [0, n) to every thread (fixed order for a given team
// size). For work that keeps its data on chip across many steps, e.g. a Schwarz block solve.
#pragma once

#include <cstddef>
#include <cstring>
#include <typeinfo>
#include <vector>

#include "src/core/backend.h"
#include "src/core/error.h"
#include "src/core/macros.h"
#include "src/core/work_counters.h"

#ifdef __CUDACC__
#include <cuda_runtime.h>
#endif

namespace latke {

/// Shared memory a team may use on the CPU backend: that of an H100's thread block, so that
/// the CPU takes the same decisions as the GPU path it tests.
inline constexpr std::size_t cpu_team_shared_bytes = 227 * 1024;

struct Team {
  int index;  ///< which team
  int rank;   ///< this thread within the team (0 on the CPU)
  int size;   ///< threads in the team (a power of two; 1 on the CPU)
  unsigned char* smem;
  unsigned char* scratch;  ///< team.sum's space: team_scratch_bytes, after the functor's bytes

  LATKE_HOST_DEVICE LATKE_INLINE unsigned char* shared() const { return smem; }
  template <typename G>
  LATKE_HOST_DEVICE LATKE_INLINE void for_each(int n, const G& g) const {
    LATKE_NO_UNROLL for (int i = rank; i < n; i += size) g(i);  // one copy of g: team bodies are large
  }
  LATKE_HOST_DEVICE LATKE_INLINE void sync() const {
#ifdef __CUDA_ARCH__
    __syncthreads();
#endif
  }
  /// The sum of g(i) over [0, n), returned to every thread of the team.
  template <typename T, typename G>
  LATKE_HOST_DEVICE LATKE_INLINE T sum(int n, const G& g) const {
    T acc{};
    LATKE_NO_UNROLL for (int i = rank; i < n; i += size) acc += g(i);
    return reduce(acc);
  }
  /// The sum of every thread's acc, returned to every thread of the team (fixed order for a
  /// given team size): each warp sums its lanes by shuffles, then one thread the warps' sums,
  /// one value per warp in the scratch space.
  template <typename T>
  LATKE_HOST_DEVICE LATKE_INLINE T reduce(T acc) const {
#ifdef __CUDA_ARCH__
    const int lanes = size < 32 ? size : 32;
    const unsigned mask = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1u;
    for (int w = lanes >> 1; w > 0; w >>= 1) acc += shuffle_down(acc, w, mask);
    T* s = reinterpret_cast<T*>(scratch);
    if (rank % 32 == 0) s[rank / 32] = acc;
    __syncthreads();
    if (rank == 0)
      for (int k = 1; k < size / lanes; ++k) s[0] += s[k];
    __syncthreads();
    acc = s[0];
    __syncthreads();
#endif
    return acc;
  }

#ifdef __CUDA_ARCH__
  /// v of the lane `delta` above, word by word (T trivially copyable, whole 32-bit words).
  template <typename T>
  __device__ static T shuffle_down(const T& v, int delta, unsigned mask) {
    static_assert(sizeof(T) % 4 == 0, "team reduce: a value of whole 32-bit words");
    unsigned w[sizeof(T) / 4];
    memcpy(w, &v, sizeof(T));
    for (int k = 0; k < static_cast<int>(sizeof(T) / 4); ++k) w[k] = __shfl_down_sync(mask, w[k], delta);
    T r;
    memcpy(&r, w, sizeof(T));
    return r;
  }
#endif
};

/// Scratch space that team.sum and team.reduce need for values of sum_bytes in a team of
/// `size` threads: one value per warp.
inline std::size_t team_scratch_bytes(int size, std::size_t sum_bytes) {
  return sum_bytes * static_cast<std::size_t>(size > 32 ? size / 32 : 1);
}

/// A functor may declare `static constexpr int team_threads, teams_per_sm;`: its kernel is then
/// compiled for teams of at most team_threads threads, teams_per_sm of them on an SM
/// (__launch_bounds__: the registers per thread are capped to fit).
template <typename F, typename = void>
struct TeamBounds {
  static constexpr bool given = false;
};
template <typename F>
struct TeamBounds<F, std::void_t<decltype(F::team_threads), decltype(F::teams_per_sm)>> {
  static constexpr bool given = true;
};

#ifdef __CUDACC__
template <typename F>
__global__ void team_kernel(const F f, std::size_t bytes) {
  extern __shared__ __align__(16) unsigned char team_smem[];
  f(Team{static_cast<int>(blockIdx.x), static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x), team_smem,
         team_smem + bytes});
}
template <typename F>
__global__ void __launch_bounds__(F::team_threads, F::teams_per_sm) team_kernel_bounded(const F f, std::size_t bytes) {
  extern __shared__ __align__(16) unsigned char team_smem[];
  f(Team{static_cast<int>(blockIdx.x), static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x), team_smem,
         team_smem + bytes});
}
#endif

/// @brief The most shared memory a team may ask for on backend b (the device's opt-in limit
/// on CUDA).
std::size_t team_shared_limit(Backend b);

/// @brief Run f for teams [0, n_teams) of `size` threads (a power of two; CUDA), each with
/// `bytes` of shared memory and room for team.sum over values of `sum_bytes`. Asynchronous
/// in stream s on CUDA.
template <typename F>
void launch_teams(Backend b, const F& f, int n_teams, int size, std::size_t bytes, std::size_t sum_bytes,
                  Stream s = compute_stream()) {
  if (n_teams <= 0) return;
  require(size > 0 && (size & (size - 1)) == 0, "team kernel ", typeid(F).name(), ": team size ", size,
          " is not a power of two");
  const std::size_t total = bytes + team_scratch_bytes(size, sum_bytes);
  require(total <= team_shared_limit(b), "team kernel ", typeid(F).name(), ": ", total,
          " bytes of shared memory per team; the limit is ", team_shared_limit(b));
  ++work_counters().launches;
  if (b == Backend::cpu) {
#pragma omp parallel
    {
      std::vector<unsigned char> buffer(total + 16);
      unsigned char* base = buffer.data();
#pragma omp for schedule(static)
      for (int t = 0; t < n_teams; ++t) f(Team{t, 0, 1, base, base + bytes});
    }
    return;
  }
#ifdef __CUDACC__
  static std::size_t raised = 48 * 1024;  // per functor type: the dynamic shared memory allowed so far
  auto kernel = [] {
    if constexpr (TeamBounds<F>::given)
      return team_kernel_bounded<F>;
    else
      return team_kernel<F>;
  }();
  if constexpr (TeamBounds<F>::given)
    require(size <= F::team_threads, "team kernel ", typeid(F).name(), ": teams of ", size, " threads; compiled for ",
            F::team_threads);
  if (total > raised) {
    LATKE_CUDA_CALL(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(total)));
    raised = total;
  }
  kernel<<<n_teams, size, total, static_cast<cudaStream_t>(s.handle)>>>(f, bytes);
  LATKE_CUDA_CALL(cudaGetLastError());
#else
  (void)s;
  fail("team kernel ", typeid(F).name(), " asked to run on CUDA, but its file was compiled without CUDA");
#endif
}

}  // namespace latke
