// SPDX-License-Identifier: Apache-2.0
// One place that decides host/device annotations for code shared by CUDA
// kernels and the host executor. Include this (directly or through any
// gnio/device header) before writing GNIO_HOST_DEVICE code.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define GNIO_HOST_DEVICE __host__ __device__
#define GNIO_DEVICE __device__
#define GNIO_FORCEINLINE __forceinline__
#else
#define GNIO_HOST_DEVICE
#define GNIO_DEVICE
#define GNIO_FORCEINLINE inline __attribute__((always_inline))
#endif

// True while compiling device code (the second nvcc pass); host code, including
// the host executor, sees 0.
#if defined(__CUDA_ARCH__)
#define GNIO_DEVICE_PASS 1
#else
#define GNIO_DEVICE_PASS 0
#endif

#define GNIO_VERSION_MAJOR 0
#define GNIO_VERSION_MINOR 1
#define GNIO_VERSION_PATCH 0
#define GNIO_VERSION_STRING "0.1.0"
