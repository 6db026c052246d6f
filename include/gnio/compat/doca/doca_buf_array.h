/* SPDX-License-Identifier: Apache-2.0
 *
 * gnio DOCA compatibility layer. gnio is not affiliated with, sponsored or
 * endorsed by NVIDIA. This header implements an API compatible with part of
 * NVIDIA DOCA, written from public documentation and the call sites of
 * public samples (docs/doca-compat.md); it contains no text from NVIDIA SDK
 * headers. DOCA is a trademark of NVIDIA Corporation.
 *
 * Buffer arrays: num_elem fixed-size elements laid one after the other in
 * a started doca_mmap's range, from start_offset, so a kernel can address
 * element i (doca_gpunetio_dev_buf.cuh). gnio builds the element table in
 * the target GPU's memory at the start; the mmap's range is read then, so
 * the mmap may be stopped or destroyed before the array is stopped.
 */
#ifndef GNIO_COMPAT_DOCA_BUF_ARRAY_H
#define GNIO_COMPAT_DOCA_BUF_ARRAY_H

#include <stddef.h>
#include <stdint.h>

#include "doca_compat.h"
#include "doca_error.h"

GNIO_DOCA_BEGIN_C

struct doca_buf_arr;
/* Defined for kernels in doca_gpunetio_dev_buf.cuh; opaque elsewhere. */
struct doca_gpu_buf_arr;
struct doca_gpu;
struct doca_mmap;

doca_error_t doca_buf_arr_create(size_t num_elem, struct doca_buf_arr** buf_arr);
doca_error_t doca_buf_arr_destroy(struct doca_buf_arr* buf_arr);
doca_error_t doca_buf_arr_set_params(struct doca_buf_arr* buf_arr, struct doca_mmap* mmap, size_t elem_size,
                                     uint64_t start_offset);
doca_error_t doca_buf_arr_set_target_gpu(struct doca_buf_arr* buf_arr, struct doca_gpu* gpu_handler);
doca_error_t doca_buf_arr_start(struct doca_buf_arr* buf_arr);
doca_error_t doca_buf_arr_stop(struct doca_buf_arr* buf_arr);
/* A pointer kernels may dereference; valid from the start until the stop. */
doca_error_t doca_buf_arr_get_gpu_handle(const struct doca_buf_arr* buf_arr, struct doca_gpu_buf_arr** gpu_buf_arr);

GNIO_DOCA_END_C

#endif
