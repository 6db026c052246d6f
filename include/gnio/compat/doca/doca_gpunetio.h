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
 *
 * Semaphores: a ring of items, each a status word and (optionally) custom
 * bytes, that a kernel fills and marks READY and the CPU (or another
 * kernel) reads and marks FREE. Each is a gnio::semaphore
 * (gnio/semaphore.hpp) in pinned host memory mapped for the GPU, whatever
 * memory type is asked for (docs/doca-compat.md).
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
struct doca_gpu_semaphore;
/* Defined for kernels in doca_gpunetio_dev_sem.cuh; opaque elsewhere. */
struct doca_gpu_semaphore_gpu;

/* An item's status; the values are gnio::device::sem_status's. */
enum doca_gpu_semaphore_status {
  DOCA_GPU_SEMAPHORE_STATUS_FREE = 0,  /* empty: the producer may fill it */
  DOCA_GPU_SEMAPHORE_STATUS_READY = 1, /* filled: the consumer may read it */
  DOCA_GPU_SEMAPHORE_STATUS_DONE = 2,  /* the consumer has handled it */
  DOCA_GPU_SEMAPHORE_STATUS_HOLD = 3,  /* being handled: do not refill */
  DOCA_GPU_SEMAPHORE_STATUS_ERROR = 4, /* handling it failed */
  DOCA_GPU_SEMAPHORE_STATUS_EXIT = 5,  /* the kernel should return */
};

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

/* Set the number of items (1 to 1048576) and the custom bytes per item (at
 * most 65536, each item's record 16-byte aligned) before the start; the
 * memory types are recorded only. Statuses start FREE and custom bytes 0. */
doca_error_t doca_gpu_semaphore_create(struct doca_gpu* gpu_dev, struct doca_gpu_semaphore** semaphore);
doca_error_t doca_gpu_semaphore_destroy(struct doca_gpu_semaphore* semaphore);
doca_error_t doca_gpu_semaphore_set_memory_type(struct doca_gpu_semaphore* semaphore, enum doca_gpu_mem_type mtype);
doca_error_t doca_gpu_semaphore_set_items_num(struct doca_gpu_semaphore* semaphore, uint32_t num_items);
doca_error_t doca_gpu_semaphore_set_custom_info(struct doca_gpu_semaphore* semaphore, uint32_t nbytes,
                                                enum doca_gpu_mem_type mtype);
doca_error_t doca_gpu_semaphore_start(struct doca_gpu_semaphore* semaphore);
doca_error_t doca_gpu_semaphore_stop(struct doca_gpu_semaphore* semaphore);
/* A pointer kernels may dereference; valid from the start until the stop. */
doca_error_t doca_gpu_semaphore_get_gpu_handle(struct doca_gpu_semaphore* semaphore,
                                               struct doca_gpu_semaphore_gpu** semaphore_gpu);
/* The CPU's side of the items (after the start): the status is read with
 * acquire and written with release, pairing with the kernel's calls in
 * doca_gpunetio_dev_sem.cuh; the custom address is the CPU's pointer. */
doca_error_t doca_gpu_semaphore_get_status(struct doca_gpu_semaphore* semaphore, uint32_t idx,
                                           enum doca_gpu_semaphore_status* status);
doca_error_t doca_gpu_semaphore_set_status(struct doca_gpu_semaphore* semaphore, uint32_t idx,
                                           enum doca_gpu_semaphore_status status);
doca_error_t doca_gpu_semaphore_get_custom_info_addr(struct doca_gpu_semaphore* semaphore, uint32_t idx,
                                                     void** custom_info);

GNIO_DOCA_END_C

#endif
