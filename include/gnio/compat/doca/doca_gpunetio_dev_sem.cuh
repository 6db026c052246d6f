/* SPDX-License-Identifier: Apache-2.0
 *
 * gnio DOCA compatibility layer. gnio is not affiliated with, sponsored or
 * endorsed by NVIDIA. This header implements an API compatible with part of
 * NVIDIA DOCA, written from public documentation and the call sites of
 * public samples (docs/doca-compat.md); it contains no text from NVIDIA SDK
 * headers. DOCA is a trademark of NVIDIA Corporation.
 *
 * Device side of semaphores, for CUDA kernels (and the host executor, which
 * compiles the same code with the host compiler). Maps onto gnio's device
 * semaphore functions (include/gnio/device/sem.hpp): set_status is a
 * system-scope release store of the item's status and get_status an acquire
 * load, so what a thread wrote to the item's custom bytes before set_status
 * is visible to whoever (CPU or kernel) reads the status after it. Unlike
 * DOCA, the items always live in pinned host memory mapped for the GPU.
 * Device code never throws; a null semaphore, an index past the items or a
 * status DOCA does not name return DOCA_ERROR_INVALID_VALUE.
 */
#ifndef GNIO_COMPAT_DOCA_GPUNETIO_DEV_SEM_CUH
#define GNIO_COMPAT_DOCA_GPUNETIO_DEV_SEM_CUH

#include <stdint.h>

#include <gnio/device/sem.hpp>

#include "doca_error.h"
#include "doca_gpunetio.h"

/* What doca_gpu_semaphore_get_gpu_handle points to: gnio's kernel view of
 * the semaphore (items and custom bytes in host memory mapped for the GPU). */
struct doca_gpu_semaphore_gpu {
  gnio::device::sem s;
};

static_assert(static_cast<uint32_t>(DOCA_GPU_SEMAPHORE_STATUS_FREE) ==
                      static_cast<uint32_t>(gnio::device::sem_status::free) &&
                  static_cast<uint32_t>(DOCA_GPU_SEMAPHORE_STATUS_READY) ==
                      static_cast<uint32_t>(gnio::device::sem_status::ready) &&
                  static_cast<uint32_t>(DOCA_GPU_SEMAPHORE_STATUS_DONE) ==
                      static_cast<uint32_t>(gnio::device::sem_status::done) &&
                  static_cast<uint32_t>(DOCA_GPU_SEMAPHORE_STATUS_HOLD) ==
                      static_cast<uint32_t>(gnio::device::sem_status::hold) &&
                  static_cast<uint32_t>(DOCA_GPU_SEMAPHORE_STATUS_ERROR) ==
                      static_cast<uint32_t>(gnio::device::sem_status::error) &&
                  static_cast<uint32_t>(DOCA_GPU_SEMAPHORE_STATUS_EXIT) ==
                      static_cast<uint32_t>(gnio::device::sem_status::exit),
              "DOCA's semaphore statuses are gnio's sem_status values");

/* Marks item idx. Every write to the item's custom bytes made before this
 * call by the calling thread is published with it (sem_set_status's release
 * store pairs with the acquire load of doca_gpu_dev_semaphore_get_status or
 * doca_gpu_semaphore_get_status on the reading side). */
GNIO_HOST_DEVICE inline doca_error_t doca_gpu_dev_semaphore_set_status(struct doca_gpu_semaphore_gpu* semaphore_gpu,
                                                                       uint32_t idx,
                                                                       enum doca_gpu_semaphore_status status) {
  if (semaphore_gpu == nullptr || idx >= semaphore_gpu->s.num_items ||
      static_cast<uint32_t>(status) > static_cast<uint32_t>(DOCA_GPU_SEMAPHORE_STATUS_EXIT))
    return DOCA_ERROR_INVALID_VALUE;
  gnio::device::sem_set_status(semaphore_gpu->s, idx, static_cast<gnio::device::sem_status>(status));
  return DOCA_SUCCESS;
}

/* Reads item idx's status; the custom bytes the writer published with it
 * may be read after this call (sem_get_status's acquire load pairs with the
 * writer's release store in doca_gpu_dev_semaphore_set_status or
 * doca_gpu_semaphore_set_status). */
GNIO_HOST_DEVICE inline doca_error_t doca_gpu_dev_semaphore_get_status(
    const struct doca_gpu_semaphore_gpu* semaphore_gpu, uint32_t idx, enum doca_gpu_semaphore_status* status) {
  if (semaphore_gpu == nullptr || status == nullptr || idx >= semaphore_gpu->s.num_items)
    return DOCA_ERROR_INVALID_VALUE;
  *status = static_cast<enum doca_gpu_semaphore_status>(gnio::device::sem_get_status(semaphore_gpu->s, idx));
  return DOCA_SUCCESS;
}

/* The kernel's address of item idx's custom bytes; INVALID_VALUE where the
 * semaphore has none (doca_gpu_semaphore_set_custom_info was not called). */
GNIO_HOST_DEVICE inline doca_error_t doca_gpu_dev_semaphore_get_custom_info_addr(
    struct doca_gpu_semaphore_gpu* semaphore_gpu, uint32_t idx, void** custom_info) {
  if (semaphore_gpu == nullptr || custom_info == nullptr || idx >= semaphore_gpu->s.num_items ||
      semaphore_gpu->s.custom_bytes == 0)
    return DOCA_ERROR_INVALID_VALUE;
  *custom_info = gnio::device::sem_custom(semaphore_gpu->s, idx);
  return DOCA_SUCCESS;
}

#endif
