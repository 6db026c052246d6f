/* SPDX-License-Identifier: Apache-2.0
 *
 * gnio DOCA compatibility layer. gnio is not affiliated with, sponsored or
 * endorsed by NVIDIA. This header implements an API compatible with part of
 * NVIDIA DOCA, written from public documentation and the call sites of
 * public samples (docs/doca-compat.md); it contains no text from NVIDIA SDK
 * headers. DOCA is a trademark of NVIDIA Corporation.
 *
 * Progress engines. gnio runs its engines on its own threads, so progress
 * has nothing to do; a progress engine can be created, progressed (0 events)
 * and destroyed.
 */
#ifndef GNIO_COMPAT_DOCA_PE_H
#define GNIO_COMPAT_DOCA_PE_H

#include <stdint.h>

#include "doca_compat.h"
#include "doca_error.h"

GNIO_DOCA_BEGIN_C

struct doca_pe;
struct doca_ctx;

doca_error_t doca_pe_create(struct doca_pe** pe);
doca_error_t doca_pe_destroy(struct doca_pe* pe);
/* Events handled: always 0. */
uint8_t doca_pe_progress(struct doca_pe* pe);
doca_error_t doca_pe_connect_ctx(struct doca_pe* pe, struct doca_ctx* ctx);

GNIO_DOCA_END_C

#endif
