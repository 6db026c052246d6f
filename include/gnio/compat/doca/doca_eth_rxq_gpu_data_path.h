/* SPDX-License-Identifier: Apache-2.0
 *
 * gnio DOCA compatibility layer. gnio is not affiliated with, sponsored or
 * endorsed by NVIDIA. This header implements an API compatible with part of
 * NVIDIA DOCA, written from public documentation and the call sites of
 * public samples (docs/doca-compat.md); it contains no text from NVIDIA SDK
 * headers. DOCA is a trademark of NVIDIA Corporation.
 *
 * The GPU side of an RX queue: the handle kernels receive from.
 */
#ifndef GNIO_COMPAT_DOCA_ETH_RXQ_GPU_DATA_PATH_H
#define GNIO_COMPAT_DOCA_ETH_RXQ_GPU_DATA_PATH_H

#include "doca_compat.h"
#include "doca_error.h"

GNIO_DOCA_BEGIN_C

struct doca_eth_rxq;
/* Defined for kernels in doca_gpunetio_dev_eth_rxq.cuh; opaque elsewhere. */
struct doca_gpu_eth_rxq;

/* A pointer kernels may dereference; valid from doca_ctx_start until the
 * queue is destroyed. */
doca_error_t doca_eth_rxq_get_gpu_handle(const struct doca_eth_rxq* eth_rxq, struct doca_gpu_eth_rxq** eth_rxq_ext);
/* gnio needs no multicast QP on any GPU: accepted, no effect. */
doca_error_t doca_eth_rxq_gpu_enable_mcst_qp(struct doca_eth_rxq* eth_rxq);

GNIO_DOCA_END_C

#endif
