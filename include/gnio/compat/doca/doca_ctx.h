/* SPDX-License-Identifier: Apache-2.0
 *
 * gnio DOCA compatibility layer. gnio is not affiliated with, sponsored or
 * endorsed by NVIDIA. This header implements an API compatible with part of
 * NVIDIA DOCA, written from public documentation and the call sites of
 * public samples (docs/doca-compat.md); it contains no text from NVIDIA SDK
 * headers. DOCA is a trademark of NVIDIA Corporation.
 *
 * Contexts: the lifecycle of a queue. Starting an RX queue's context creates
 * its gnio RX queue; the gnio port starts once its DOCA Flow rules are in
 * (or at once when the device has no DOCA Flow port).
 */
#ifndef GNIO_COMPAT_DOCA_CTX_H
#define GNIO_COMPAT_DOCA_CTX_H

#include "doca_compat.h"
#include "doca_error.h"
#include "doca_types.h"

GNIO_DOCA_BEGIN_C

struct doca_ctx;
struct doca_gpu;

enum doca_ctx_states {
  DOCA_CTX_STATE_IDLE = 0,
  DOCA_CTX_STATE_STARTING = 1,
  DOCA_CTX_STATE_RUNNING = 2,
  DOCA_CTX_STATE_STOPPING = 3,
};

doca_error_t doca_ctx_start(struct doca_ctx* ctx);
doca_error_t doca_ctx_stop(struct doca_ctx* ctx);
doca_error_t doca_ctx_get_state(const struct doca_ctx* ctx, enum doca_ctx_states* state);
doca_error_t doca_ctx_set_datapath_on_gpu(struct doca_ctx* ctx, struct doca_gpu* gpu_dev);
doca_error_t doca_ctx_set_user_data(struct doca_ctx* ctx, union doca_data user_data);
doca_error_t doca_ctx_get_user_data(const struct doca_ctx* ctx, union doca_data* user_data);

GNIO_DOCA_END_C

#endif
