/* SPDX-License-Identifier: Apache-2.0
 *
 * gnio DOCA compatibility layer. gnio is not affiliated with, sponsored or
 * endorsed by NVIDIA. This header implements an API compatible with part of
 * NVIDIA DOCA, written from public documentation and the call sites of
 * public samples (docs/doca-compat.md); it contains no text from NVIDIA SDK
 * headers. DOCA is a trademark of NVIDIA Corporation.
 *
 * Buffer inventories: not supported by gnio (DOCA_ERROR_NOT_SUPPORTED).
 */
#ifndef GNIO_COMPAT_DOCA_BUF_INVENTORY_H
#define GNIO_COMPAT_DOCA_BUF_INVENTORY_H

#include <stddef.h>
#include <stdint.h>

#include "doca_buf.h"
#include "doca_compat.h"
#include "doca_error.h"

GNIO_DOCA_BEGIN_C

struct doca_buf_inventory;
struct doca_mmap;

doca_error_t doca_buf_inventory_create(size_t num_elements, struct doca_buf_inventory** buf_inventory);
doca_error_t doca_buf_inventory_destroy(struct doca_buf_inventory* inventory);
doca_error_t doca_buf_inventory_start(struct doca_buf_inventory* inventory);
doca_error_t doca_buf_inventory_stop(struct doca_buf_inventory* inventory);
doca_error_t doca_buf_inventory_buf_get_by_addr(struct doca_buf_inventory* inventory, struct doca_mmap* mmap,
                                                void* addr, size_t len, struct doca_buf** buf);

GNIO_DOCA_END_C

#endif
