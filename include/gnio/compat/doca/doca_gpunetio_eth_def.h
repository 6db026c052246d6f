/* SPDX-License-Identifier: Apache-2.0
 *
 * gnio DOCA compatibility layer. gnio is not affiliated with, sponsored or
 * endorsed by NVIDIA. This header implements an API compatible with part of
 * NVIDIA DOCA, written from public documentation and the call sites of
 * public samples (docs/doca-compat.md); it contains no text from NVIDIA SDK
 * headers. DOCA is a trademark of NVIDIA Corporation.
 *
 * Template arguments and flags of the device functions. The execution
 * scope picks gnio::device::scope (thread, warp or block); the resource
 * sharing mode decides whether a send takes the queue's producer lock (see
 * doca_gpunetio_dev_eth_txq.cuh); the sync scope, NIC handler and multicast
 * mode are accepted and have no effect on gnio.
 */
#ifndef GNIO_COMPAT_DOCA_GPUNETIO_ETH_DEF_H
#define GNIO_COMPAT_DOCA_GPUNETIO_ETH_DEF_H

#include <stdint.h>

#include "doca_compat.h"

GNIO_DOCA_BEGIN_C

enum doca_gpu_dev_eth_exec_scope {
  DOCA_GPUNETIO_ETH_EXEC_SCOPE_THREAD = 0,
  DOCA_GPUNETIO_ETH_EXEC_SCOPE_WARP = 1,
  DOCA_GPUNETIO_ETH_EXEC_SCOPE_BLOCK = 2,
};

enum doca_gpu_dev_eth_mcst_mode {
  DOCA_GPUNETIO_ETH_MCST_DISABLED = 0,
  DOCA_GPUNETIO_ETH_MCST_ENABLED = 1,
  DOCA_GPUNETIO_ETH_MCST_AUTO = 2,
};

enum doca_gpu_dev_eth_nic_handler {
  DOCA_GPUNETIO_ETH_NIC_HANDLER_AUTO = 0,
  DOCA_GPUNETIO_ETH_NIC_HANDLER_CPU_PROXY = 1,
  DOCA_GPUNETIO_ETH_NIC_HANDLER_GPU_SM_DB = 2,
};

/* Which per-packet attributes recv writes to its attribute array. */
enum doca_gpu_dev_eth_rx_attr {
  DOCA_GPUNETIO_ETH_RX_ATTR_NONE = 0,
  DOCA_GPUNETIO_ETH_RX_ATTR_TIMESTAMP = 1 << 0,
  DOCA_GPUNETIO_ETH_RX_ATTR_BYTES = 1 << 1,
  DOCA_GPUNETIO_ETH_RX_ATTR_ALL = (1 << 0) | (1 << 1),
};

/* Who else produces into the TX queue a send is made on: only this block
 * (CTA) or any thread of the GPU. */
enum doca_gpu_dev_eth_resource_sharing_mode {
  DOCA_GPUNETIO_ETH_RESOURCE_SHARING_MODE_GPU = 0,
  DOCA_GPUNETIO_ETH_RESOURCE_SHARING_MODE_CTA = 1,
};

enum doca_gpu_dev_eth_sync_scope {
  DOCA_GPUNETIO_ETH_SYNC_SCOPE_GPU = 0,
  DOCA_GPUNETIO_ETH_SYNC_SCOPE_CTA = 1,
};

/* DOCA_GPUNETIO_ETH_SEND_FLAG_NOTIFY: the send produces a completion that
 * the poll_completion calls count; sends without it produce none. */
enum doca_gpu_eth_send_flags {
  DOCA_GPUNETIO_ETH_SEND_FLAG_NONE = 0,
  DOCA_GPUNETIO_ETH_SEND_FLAG_NOTIFY = 1 << 0,
};

/* Which completion poll_completion reports (gnio consumes the same number
 * either way). */
enum doca_gpu_dev_eth_cq_poll {
  DOCA_GPUNETIO_ETH_CQ_POLL_ALL = 0,
  DOCA_GPUNETIO_ETH_CQ_POLL_LAST = 1,
};

/* B: wait until the completions are there; NB: report what is there now. */
enum doca_gpu_dev_eth_wait_flags {
  DOCA_GPUNETIO_ETH_WAIT_FLAG_B = 0,
  DOCA_GPUNETIO_ETH_WAIT_FLAG_NB = 1,
};

/* What a send reports back: the ring index of its descriptor. */
typedef uint64_t doca_gpu_dev_eth_ticket_t;

GNIO_DOCA_END_C

#define DOCA_GPUNETIO_ETH_WARP_SIZE 32

/* Forces a fresh load or store of x (a flag shared with the other side). */
#define DOCA_GPUNETIO_VOLATILE(x) (*(volatile __typeof__(x)*)&(x))

#endif
