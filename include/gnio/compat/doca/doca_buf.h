/* SPDX-License-Identifier: Apache-2.0
 *
 * gnio DOCA compatibility layer. gnio is not affiliated with, sponsored or
 * endorsed by NVIDIA. This header implements an API compatible with part of
 * NVIDIA DOCA, written from public documentation and the call sites of
 * public samples (docs/doca-compat.md); it contains no text from NVIDIA SDK
 * headers. DOCA is a trademark of NVIDIA Corporation.
 *
 * CPU buffers. Buffers come from a doca_buf_pool (doca_buf_pool.h): a
 * buffer's data lies within its element, and the calls below read and move
 * it. doca_buf_chain_list answers DOCA_ERROR_NOT_SUPPORTED.
 */
#ifndef GNIO_COMPAT_DOCA_BUF_H
#define GNIO_COMPAT_DOCA_BUF_H

#include <stddef.h>
#include <stdint.h>

#include "doca_compat.h"
#include "doca_error.h"
#include "doca_types.h"

GNIO_DOCA_BEGIN_C

struct doca_buf;

doca_error_t doca_buf_set_data(struct doca_buf* buf, void* data, size_t data_len);
doca_error_t doca_buf_get_data(const struct doca_buf* buf, void** data);
doca_error_t doca_buf_get_data_len(const struct doca_buf* buf, size_t* data_len);
/* The data keeps its start; data_len past the element's end is
 * DOCA_ERROR_INVALID_VALUE. */
doca_error_t doca_buf_set_data_len(struct doca_buf* buf, size_t data_len);
doca_error_t doca_buf_chain_list(struct doca_buf* list1, struct doca_buf* list2);
/* At 0 the buffer goes back to its pool; refcount (may be NULL) gets the
 * count left. */
doca_error_t doca_buf_dec_refcount(struct doca_buf* buf, uint16_t* refcount);

GNIO_DOCA_END_C

#endif
