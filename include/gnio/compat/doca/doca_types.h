/* SPDX-License-Identifier: Apache-2.0
 *
 * gnio DOCA compatibility layer. gnio is not affiliated with, sponsored or
 * endorsed by NVIDIA. This header implements an API compatible with part of
 * NVIDIA DOCA, written from public documentation and the call sites of
 * public samples (docs/doca-compat.md); it contains no text from NVIDIA SDK
 * headers. DOCA is a trademark of NVIDIA Corporation.
 */
#ifndef GNIO_COMPAT_DOCA_TYPES_H
#define GNIO_COMPAT_DOCA_TYPES_H

#include <stdint.h>
#include <stddef.h>

#include "doca_compat.h"

GNIO_DOCA_BEGIN_C

union doca_data {
  void* ptr;
  uint64_t u64;
};

/* Where doca_gpu_mem_alloc places memory, as gnio::mem_type says. */
enum doca_gpu_mem_type {
  DOCA_GPU_MEM_TYPE_GPU = 0,     /* GPU memory, CPU has no pointer */
  DOCA_GPU_MEM_TYPE_GPU_CPU = 1, /* GPU memory the CPU can also reach */
  DOCA_GPU_MEM_TYPE_CPU_GPU = 2, /* pinned host memory mapped for the GPU */
};

enum doca_access_flag {
  DOCA_ACCESS_FLAG_LOCAL_READ_ONLY = 0,
  DOCA_ACCESS_FLAG_LOCAL_READ_WRITE = 1 << 0,
  DOCA_ACCESS_FLAG_RDMA_READ = 1 << 1,
  DOCA_ACCESS_FLAG_RDMA_WRITE = 1 << 2,
  DOCA_ACCESS_FLAG_RDMA_ATOMIC = 1 << 3,
  DOCA_ACCESS_FLAG_PCI_READ_ONLY = 1 << 4,
  DOCA_ACCESS_FLAG_PCI_READ_WRITE = 1 << 5,
  DOCA_ACCESS_FLAG_PCI_RELAXED_ORDERING = 1 << 6,
};

enum doca_pci_func_type {
  DOCA_PCI_FUNC_TYPE_PF = 0,
  DOCA_PCI_FUNC_TYPE_VF = 1,
  DOCA_PCI_FUNC_TYPE_SF = 2,
};

GNIO_DOCA_END_C

#endif
