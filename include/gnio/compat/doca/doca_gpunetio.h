/* SPDX-License-Identifier: Apache-2.0
 *
 * gnio DOCA compatibility layer. gnio is not affiliated with, sponsored or
 * endorsed by NVIDIA. This header implements an API compatible with part of
 * NVIDIA DOCA, written from public documentation and the call sites of
 * public samples (docs/doca-compat.md); it contains no text from NVIDIA SDK
 * headers. DOCA is a trademark of NVIDIA Corporation.
 *
 * The GPU context: doca_gpu_create opens the gnio::gpu with that PCIe bus id
 * ("ca:00.0" or "0000:ca:00.0"). gnio also accepts "host" there, for its
 * host executor (no GPU; tests and CPU-only runs).
 */
#ifndef GNIO_COMPAT_DOCA_GPUNETIO_H
#define GNIO_COMPAT_DOCA_GPUNETIO_H

#include <stddef.h>
#include <stdint.h>

#include "doca_compat.h"
#include "doca_error.h"
#include "doca_types.h"

GNIO_DOCA_BEGIN_C

struct doca_gpu;

doca_error_t doca_gpu_create(const char* gpu_bus_id, struct doca_gpu** gpu_dev);
doca_error_t doca_gpu_destroy(struct doca_gpu* gpu_dev);
/* memptr_gpu: the address kernels use; memptr_cpu (may be NULL): the CPU's,
 * NULL for DOCA_GPU_MEM_TYPE_GPU. Memory is zeroed. */
doca_error_t doca_gpu_mem_alloc(struct doca_gpu* gpu_dev, size_t size, size_t alignment, enum doca_gpu_mem_type mtype,
                                void** memptr_gpu, void** memptr_cpu);
doca_error_t doca_gpu_mem_free(struct doca_gpu* gpu_dev, void* memptr_gpu);
/* gnio registers no memory with a NIC through dmabuf: DOCA_ERROR_NOT_SUPPORTED,
 * and callers fall back to doca_mmap_set_memrange. */
doca_error_t doca_gpu_dmabuf_fd(struct doca_gpu* gpu_dev, void* memptr_gpu, size_t size, int* dmabuf_fd);

GNIO_DOCA_END_C

#endif
