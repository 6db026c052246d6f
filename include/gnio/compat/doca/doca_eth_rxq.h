/* SPDX-License-Identifier: Apache-2.0
 *
 * gnio DOCA compatibility layer. gnio is not affiliated with, sponsored or
 * endorsed by NVIDIA. This header implements an API compatible with part of
 * NVIDIA DOCA, written from public documentation and the call sites of
 * public samples (docs/doca-compat.md); it contains no text from NVIDIA SDK
 * headers. DOCA is a trademark of NVIDIA Corporation.
 *
 * Ethernet RX queues: one gnio RX queue each, created when the queue's
 * context starts. max_burst_size becomes the ring depth (rounded up to a
 * power of two), max_packet_size the slot size.
 */
#ifndef GNIO_COMPAT_DOCA_ETH_RXQ_H
#define GNIO_COMPAT_DOCA_ETH_RXQ_H

#include <stdint.h>

#include "doca_compat.h"
#include "doca_ctx.h"
#include "doca_error.h"
#include "doca_types.h"

GNIO_DOCA_BEGIN_C

struct doca_dev;
struct doca_devinfo;
struct doca_ctx;
struct doca_mmap;
struct doca_eth_rxq;

enum doca_eth_rxq_type {
  DOCA_ETH_RXQ_TYPE_CYCLIC = 0,
  DOCA_ETH_RXQ_TYPE_MANAGED_MEMPOOL = 1,
  DOCA_ETH_RXQ_TYPE_REGULAR = 2,
};

enum doca_eth_rxq_data_path_type {
  DOCA_ETH_RXQ_DATA_PATH_TYPE_CPU = 0,
  DOCA_ETH_RXQ_DATA_PATH_TYPE_GPU = 1,
};

doca_error_t doca_eth_rxq_create(struct doca_dev* dev, uint32_t max_burst_size, uint32_t max_packet_size,
                                 struct doca_eth_rxq** eth_rxq);
doca_error_t doca_eth_rxq_destroy(struct doca_eth_rxq* eth_rxq);
struct doca_ctx* doca_eth_rxq_as_doca_ctx(struct doca_eth_rxq* eth_rxq);
doca_error_t doca_eth_rxq_set_type(struct doca_eth_rxq* eth_rxq, enum doca_eth_rxq_type type);
doca_error_t doca_eth_rxq_set_pkt_buf(struct doca_eth_rxq* eth_rxq, struct doca_mmap* mmap, uint32_t mmap_offset,
                                      uint32_t mmap_len);
/* Bytes of packet memory a queue of this shape needs (gnio: depth x slot). */
doca_error_t doca_eth_rxq_estimate_packet_buf_size(enum doca_eth_rxq_type type, uint32_t rate_mbps,
                                                   uint16_t pkt_max_time_us, uint32_t max_packet_size,
                                                   uint32_t max_burst_size, uint8_t log_max_lro_pkt_sz,
                                                   uint16_t head_size, uint16_t tail_size, uint32_t* buf_size);
/* Gives the queue the number DOCA Flow RSS actions use for it (call after its
 * context started; before that, the number is its index on the device). */
doca_error_t doca_eth_rxq_apply_queue_id(struct doca_eth_rxq* eth_rxq, uint16_t queue_id);
doca_error_t doca_eth_rxq_cap_is_type_supported(const struct doca_devinfo* devinfo, enum doca_eth_rxq_type type,
                                                enum doca_eth_rxq_data_path_type data_path_type, uint8_t* is_supported);
doca_error_t doca_eth_rxq_cap_get_max_burst_size(const struct doca_devinfo* devinfo, uint32_t max_packet_size,
                                                 uint32_t* max_burst_size);
doca_error_t doca_eth_rxq_cap_get_max_packet_size(const struct doca_devinfo* devinfo, uint16_t* max_packet_size);

GNIO_DOCA_END_C

#endif
