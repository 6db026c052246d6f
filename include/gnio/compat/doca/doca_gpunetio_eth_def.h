/* SPDX-License-Identifier: Apache-2.0
 *
 * gnio DOCA compatibility layer. gnio is not affiliated with, sponsored or
 * endorsed by NVIDIA. This header implements an API compatible with part of
 * NVIDIA DOCA, written from public documentation and the call sites of
 * public samples (docs/doca-compat.md); it contains no text from NVIDIA SDK
 * headers. DOCA is a trademark of NVIDIA Corporation.
 *
 * Template arguments of the device functions. Only the execution scope
 * changes what gnio does (thread, warp or block, as gnio::device::scope);
 * the others are accepted and have no effect on gnio.
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

GNIO_DOCA_END_C

/* Forces a fresh load or store of x (a flag shared with the other side). */
#define DOCA_GPUNETIO_VOLATILE(x) (*(volatile __typeof__(x) *)&(x))

#endif
