/* SPDX-License-Identifier: Apache-2.0
 *
 * gnio DOCA compatibility layer. gnio is not affiliated with, sponsored or
 * endorsed by NVIDIA. This header implements an API compatible with part of
 * NVIDIA DOCA, written from public documentation and the call sites of
 * public samples (docs/doca-compat.md); it contains no text from NVIDIA SDK
 * headers. DOCA is a trademark of NVIDIA Corporation.
 *
 * The GPU side of a TX queue: the handle kernels send through, and the
 * doorbell and completion placement options, which mean nothing on gnio
 * (its engine threads read the doorbell and write completions). Includes
 * <pthread.h>: programs run doca_eth_txq_gpu_cpu_proxy_progress on a thread
 * of their own and expect the declarations from here.
 */
#ifndef GNIO_COMPAT_DOCA_ETH_TXQ_GPU_DATA_PATH_H
#define GNIO_COMPAT_DOCA_ETH_TXQ_GPU_DATA_PATH_H

#include <pthread.h>

#include "doca_compat.h"
#include "doca_error.h"

GNIO_DOCA_BEGIN_C

struct doca_eth_txq;
/* Defined for kernels in doca_gpunetio_dev_eth_txq.cuh; opaque elsewhere. */
struct doca_gpu_eth_txq;

/* A pointer kernels may dereference; valid from doca_ctx_start until the
 * queue's context stops. */
doca_error_t doca_eth_txq_get_gpu_handle(const struct doca_eth_txq* eth_txq, struct doca_gpu_eth_txq** eth_txq_ext);
/* Completions are always polled by kernels on gnio: accepted, no effect. */
doca_error_t doca_eth_txq_gpu_set_completion_on_gpu(struct doca_eth_txq* eth_txq);
/* gnio's doorbell is always host memory its engine reads: accepted, no
 * effect (the kernel needs no CPU proxy). */
doca_error_t doca_eth_txq_gpu_set_uar_on_cpu(struct doca_eth_txq* eth_txq);
/* Nothing to progress: gnio's engine threads do it. Returns at once. */
doca_error_t doca_eth_txq_gpu_cpu_proxy_progress(struct doca_eth_txq* eth_txq);

GNIO_DOCA_END_C

#endif
