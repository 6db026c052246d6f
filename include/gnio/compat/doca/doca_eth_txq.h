/* SPDX-License-Identifier: Apache-2.0
 *
 * gnio DOCA compatibility layer. gnio is not affiliated with, sponsored or
 * endorsed by NVIDIA. This header implements an API compatible with part of
 * NVIDIA DOCA, written from public documentation and the call sites of
 * public samples (docs/doca-compat.md); it contains no text from NVIDIA SDK
 * headers. DOCA is a trademark of NVIDIA Corporation.
 *
 * Ethernet TX queues: one gnio TX queue each, created when the queue's
 * context starts; max_burst_size becomes the ring depth (rounded up to a
 * power of two, at least 32, at most 32768). Kernels send through the handle of
 * doca_eth_txq_get_gpu_handle (doca_gpunetio_dev_eth_txq.cuh).
 */
#ifndef GNIO_COMPAT_DOCA_ETH_TXQ_H
#define GNIO_COMPAT_DOCA_ETH_TXQ_H

#include <stdint.h>

#include "doca_compat.h"
#include "doca_ctx.h"
#include "doca_error.h"
#include "doca_types.h"

GNIO_DOCA_BEGIN_C

struct doca_dev;
struct doca_devinfo;
struct doca_ctx;
struct doca_eth_txq;

enum doca_eth_txq_type {
  DOCA_ETH_TXQ_TYPE_REGULAR = 0,
};

enum doca_eth_txq_data_path_type {
  DOCA_ETH_TXQ_DATA_PATH_TYPE_CPU = 0,
  DOCA_ETH_TXQ_DATA_PATH_TYPE_GPU = 1,
};

/* NATIVE: the device honours send times (gnio: the port's tx_time is hold or
 * timestamp); NONE: it does not. */
enum doca_eth_wait_on_time_type {
  DOCA_ETH_WAIT_ON_TIME_TYPE_NONE = 0,
  DOCA_ETH_WAIT_ON_TIME_TYPE_NATIVE = 1,
};

doca_error_t doca_eth_txq_create(struct doca_dev* dev, uint32_t max_burst_size, struct doca_eth_txq** eth_txq);
doca_error_t doca_eth_txq_destroy(struct doca_eth_txq* eth_txq);
struct doca_ctx* doca_eth_txq_as_doca_ctx(struct doca_eth_txq* eth_txq);
/* REGULAR only. */
doca_error_t doca_eth_txq_set_type(struct doca_eth_txq* eth_txq, enum doca_eth_txq_type type);
/* Accepted before the start; gnio sends frames as the kernel wrote them and
 * computes no checksums (docs/doca-compat.md). */
doca_error_t doca_eth_txq_set_l3_chksum_offload(struct doca_eth_txq* eth_txq, uint8_t enable_l3_chksum);
doca_error_t doca_eth_txq_set_l4_chksum_offload(struct doca_eth_txq* eth_txq, uint8_t enable_l4_chksum);
/* Lets wait_send carry send times; NOT_SUPPORTED where the port has no
 * tx_time. */
doca_error_t doca_eth_txq_set_wait_on_time_offload(struct doca_eth_txq* eth_txq);
doca_error_t doca_eth_txq_cap_get_wait_on_time_offload_supported(const struct doca_devinfo* devinfo,
                                                                 enum doca_eth_wait_on_time_type* wait_on_time_mode);
/* The value a kernel passes to doca_gpu_dev_eth_txq_wait_send for a send at
 * CLOCK_REALTIME timestamp_ns: gnio's send times are that clock, so the
 * value is timestamp_ns itself. */
doca_error_t doca_eth_txq_calculate_timestamp(struct doca_eth_txq* eth_txq, uint64_t timestamp_ns,
                                              uint64_t* wait_on_time_value);
/* Kept for the caller; gnio numbers TX queues itself. */
doca_error_t doca_eth_txq_apply_queue_id(struct doca_eth_txq* eth_txq, uint16_t queue_id);

GNIO_DOCA_END_C

#endif
