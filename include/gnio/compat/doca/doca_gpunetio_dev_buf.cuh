/* SPDX-License-Identifier: Apache-2.0
 *
 * gnio DOCA compatibility layer. gnio is not affiliated with, sponsored or
 * endorsed by NVIDIA. This header implements an API compatible with part of
 * NVIDIA DOCA, written from public documentation and the call sites of
 * public samples (docs/doca-compat.md); it contains no text from NVIDIA SDK
 * headers. DOCA is a trademark of NVIDIA Corporation.
 *
 * Device side of buffer arrays, for CUDA kernels (and the host executor).
 * doca_buf_arr_start writes a table of the elements, one doca_gpu_buf each
 * (address and memory key), into the target GPU's memory: get_buf is an
 * index into it, get_addr and get_mkey read the entry. The memory key is
 * the array's mmap's number (doca_mmap_get_mkey) in network byte order, the
 * form the send calls take; gnio's sends ignore it. Device code never
 * throws; a null argument or an index past the elements return
 * DOCA_ERROR_INVALID_VALUE.
 */
#ifndef GNIO_COMPAT_DOCA_GPUNETIO_DEV_BUF_CUH
#define GNIO_COMPAT_DOCA_GPUNETIO_DEV_BUF_CUH

#include <stdint.h>

#include <gnio/device/config.hpp>

#include "doca_buf_array.h"
#include "doca_error.h"

/* One element of a buffer array. */
struct doca_gpu_buf {
  uint64_t addr; /* the element's first byte, as kernels address it */
  uint32_t mkey; /* the mmap's key, network byte order */
  uint32_t reserved;
};

/* What doca_buf_arr_get_gpu_handle points to. */
struct doca_gpu_buf_arr {
  struct doca_gpu_buf* bufs; /* num_elem entries, right after this struct */
  uint64_t num_elem;
};

/* Element buf_idx (0 .. num_elem - 1). */
GNIO_HOST_DEVICE inline doca_error_t doca_gpu_dev_buf_get_buf(const struct doca_gpu_buf_arr* buf_arr_gpu,
                                                              uint64_t buf_idx, struct doca_gpu_buf** buf) {
  if (buf_arr_gpu == nullptr || buf == nullptr || buf_idx >= buf_arr_gpu->num_elem) return DOCA_ERROR_INVALID_VALUE;
  *buf = buf_arr_gpu->bufs + buf_idx;
  return DOCA_SUCCESS;
}

GNIO_HOST_DEVICE inline doca_error_t doca_gpu_dev_buf_get_addr(const struct doca_gpu_buf* buf, uintptr_t* addr) {
  if (buf == nullptr || addr == nullptr) return DOCA_ERROR_INVALID_VALUE;
  *addr = static_cast<uintptr_t>(buf->addr);
  return DOCA_SUCCESS;
}

GNIO_HOST_DEVICE inline doca_error_t doca_gpu_dev_buf_get_mkey(const struct doca_gpu_buf* buf, uint32_t* mkey) {
  if (buf == nullptr || mkey == nullptr) return DOCA_ERROR_INVALID_VALUE;
  *mkey = buf->mkey;
  return DOCA_SUCCESS;
}

#endif
