// Compiler glue shared by the CUDA and CPU builds of one kernel source.
#pragma once

#if defined(__CUDACC__)
#define LATKE_HOST_DEVICE __host__ __device__
#define LATKE_INLINE __forceinline__
#else
#define LATKE_HOST_DEVICE
#define LATKE_INLINE inline __attribute__((always_inline))
#endif

#if defined(__CUDA_ARCH__)
#define LATKE_UNROLL _Pragma("unroll")
#elif defined(__CUDACC__)
#define LATKE_UNROLL  // host pass of nvcc: neither front end takes the other's pragma
#else
#define LATKE_UNROLL _Pragma("GCC unroll 16")
#endif
