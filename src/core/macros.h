// Compiler glue shared by the CUDA and CPU builds of one kernel source.
#pragma once

#if defined(__CUDACC__)
#define LATKE_HOST_DEVICE __host__ __device__
#define LATKE_INLINE __forceinline__
#else
#define LATKE_HOST_DEVICE
#define LATKE_INLINE inline __attribute__((always_inline))
#endif

// LATKE_NO_UNROLL keeps a loop rolled, where one copy of its body matters more than the
// loop's overhead (kernels whose code would not fit the instruction cache).
#if defined(__CUDA_ARCH__)
#define LATKE_UNROLL _Pragma("unroll")
#define LATKE_NO_UNROLL _Pragma("unroll 1")
#elif defined(__CUDACC__)
#define LATKE_UNROLL  // host pass of nvcc: neither front end takes the other's pragma
#define LATKE_NO_UNROLL
#else
#define LATKE_UNROLL _Pragma("GCC unroll 16")
#define LATKE_NO_UNROLL _Pragma("GCC unroll 1")
#endif
