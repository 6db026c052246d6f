/* SPDX-License-Identifier: Apache-2.0
 *
 * gnio DOCA compatibility layer. gnio is not affiliated with, sponsored or
 * endorsed by NVIDIA. This header implements an API compatible with part of
 * NVIDIA DOCA, written from public documentation and the call sites of
 * public samples (docs/doca-compat.md); it contains no text from NVIDIA SDK
 * headers. DOCA is a trademark of NVIDIA Corporation.
 *
 * Memory maps: a registered range. An RX queue given one with
 * doca_eth_rxq_set_pkt_buf checks its size; gnio places the frames in its
 * own packet memory (docs/doca-compat.md).
 */
#ifndef GNIO_COMPAT_DOCA_MMAP_H
#define GNIO_COMPAT_DOCA_MMAP_H

#include <stddef.h>
#include <stdint.h>

#include "doca_compat.h"
#include "doca_error.h"
#include "doca_types.h"

GNIO_DOCA_BEGIN_C

struct doca_mmap;
struct doca_dev;

doca_error_t doca_mmap_create(struct doca_mmap** mmap);
doca_error_t doca_mmap_destroy(struct doca_mmap* mmap);
doca_error_t doca_mmap_start(struct doca_mmap* mmap);
doca_error_t doca_mmap_stop(struct doca_mmap* mmap);
doca_error_t doca_mmap_add_dev(struct doca_mmap* mmap, struct doca_dev* dev);
doca_error_t doca_mmap_rm_dev(struct doca_mmap* mmap, struct doca_dev* dev);
doca_error_t doca_mmap_set_memrange(struct doca_mmap* mmap, void* addr, size_t len);
doca_error_t doca_mmap_set_dmabuf_memrange(struct doca_mmap* mmap, int dmabuf_fd, void* addr, size_t dmabuf_offset,
                                           size_t len);
doca_error_t doca_mmap_set_permissions(struct doca_mmap* mmap, uint32_t access_mask);
doca_error_t doca_mmap_get_memrange(const struct doca_mmap* mmap, void** addr, size_t* len);
doca_error_t doca_mmap_get_mkey(const struct doca_mmap* mmap, struct doca_dev* dev, uint32_t* mkey);

GNIO_DOCA_END_C

#endif
