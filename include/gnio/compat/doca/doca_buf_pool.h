/* SPDX-License-Identifier: Apache-2.0
 *
 * gnio DOCA compatibility layer. gnio is not affiliated with, sponsored or
 * endorsed by NVIDIA. This header implements an API compatible with part of
 * NVIDIA DOCA, written from public documentation and the call sites of
 * public samples (docs/doca-compat.md); it contains no text from NVIDIA SDK
 * headers. DOCA is a trademark of NVIDIA Corporation.
 *
 * Buffer pools: num_elements buffers of element_size bytes laid one after
 * the other from the start of a started doca_mmap's range, for CPU code.
 * buf_alloc hands out a free one (data at its first byte, data length 0,
 * one reference); doca_buf_dec_refcount to 0 gives it back.
 */
#ifndef GNIO_COMPAT_DOCA_BUF_POOL_H
#define GNIO_COMPAT_DOCA_BUF_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "doca_buf.h"
#include "doca_compat.h"
#include "doca_error.h"

GNIO_DOCA_BEGIN_C

struct doca_buf_pool;
struct doca_mmap;

doca_error_t doca_buf_pool_create(size_t num_elements, size_t element_size, const struct doca_mmap* mmap,
                                  struct doca_buf_pool** buf_pool);
/* DOCA_ERROR_BAD_STATE while started. */
doca_error_t doca_buf_pool_destroy(struct doca_buf_pool* buf_pool);
/* The mmap must be started and hold num_elements * element_size bytes. */
doca_error_t doca_buf_pool_start(struct doca_buf_pool* buf_pool);
/* DOCA_ERROR_IN_USE while buffers are out. */
doca_error_t doca_buf_pool_stop(struct doca_buf_pool* buf_pool);
/* DOCA_ERROR_EMPTY when every buffer is out. */
doca_error_t doca_buf_pool_buf_alloc(struct doca_buf_pool* buf_pool, struct doca_buf** buf);

GNIO_DOCA_END_C

#endif
