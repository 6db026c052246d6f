/* SPDX-License-Identifier: Apache-2.0
 *
 * gnio DOCA compatibility layer. gnio is not affiliated with, sponsored or
 * endorsed by NVIDIA. This header implements an API compatible with part of
 * NVIDIA DOCA, written from public documentation and the call sites of
 * public samples (docs/doca-compat.md); it contains no text from NVIDIA SDK
 * headers. DOCA is a trademark of NVIDIA Corporation.
 *
 * Device side of RX queues, for CUDA kernels (and the host executor, which
 * compiles the same code with the host compiler). Maps onto
 * gnio::device::recv<scope> (include/gnio/device/rx.hpp):
 *  - recv returns DOCA_SUCCESS with *num_rx_pkt = 0 when nothing came in
 *    time (gnio's again) or the backend ended the stream (shutdown);
 *  - max_rx_pkts 0 means as many as the ring holds;
 *  - each call releases the batch the previous call returned, so packets
 *    stay readable until the next recv on the queue, as in a cyclic queue;
 *  - with an attribute template argument, attr_out[i] gets the length and
 *    timestamp of packet *out_first_pkt_idx + i, written by the threads of
 *    the scope together before recv returns.
 */
#ifndef GNIO_COMPAT_DOCA_GPUNETIO_DEV_ETH_RXQ_CUH
#define GNIO_COMPAT_DOCA_GPUNETIO_DEV_ETH_RXQ_CUH

#include <stdint.h>

#include <gnio/device/rx.hpp>

#include "doca_error.h"
#include "doca_gpunetio_eth_def.h"

/* What doca_eth_rxq_get_gpu_handle points to: gnio's queue view. */
struct doca_gpu_eth_rxq {
  gnio::device::rxq q;
};

struct doca_gpu_dev_eth_rxq_attr {
  uint64_t timestamp_ns; /* receive (or capture) time, ns since the Unix epoch */
  uint32_t bytes;        /* bytes stored in the slot */
  uint32_t reserved;
};

namespace gnio::compat::doca {

GNIO_HOST_DEVICE GNIO_FORCEINLINE doca_error_t to_doca(gnio::status s) noexcept {
  return static_cast<doca_error_t>(static_cast<int32_t>(s));
}

template <enum doca_gpu_dev_eth_exec_scope S>
inline constexpr gnio::device::scope scope_of = S == DOCA_GPUNETIO_ETH_EXEC_SCOPE_THREAD ? gnio::device::scope::thread
                                                : S == DOCA_GPUNETIO_ETH_EXEC_SCOPE_WARP ? gnio::device::scope::warp
                                                                                         : gnio::device::scope::block;

/* This thread's rank in the scope and the scope's size. */
template <enum doca_gpu_dev_eth_exec_scope S>
GNIO_HOST_DEVICE GNIO_FORCEINLINE void rank_of(uint32_t& rank, uint32_t& size) noexcept {
#if defined(__CUDA_ARCH__)
  if constexpr (S == DOCA_GPUNETIO_ETH_EXEC_SCOPE_THREAD) {
    rank = 0, size = 1;
  } else if constexpr (S == DOCA_GPUNETIO_ETH_EXEC_SCOPE_WARP) {
    rank = threadIdx.x & 31u, size = 32;
  } else {
    rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    size = blockDim.x * blockDim.y * blockDim.z;
  }
#else
  rank = 0, size = 1;
#endif
}

}  // namespace gnio::compat::doca

template <enum doca_gpu_dev_eth_exec_scope exec_scope = DOCA_GPUNETIO_ETH_EXEC_SCOPE_THREAD,
          enum doca_gpu_dev_eth_mcst_mode mcst_mode = DOCA_GPUNETIO_ETH_MCST_DISABLED,
          enum doca_gpu_dev_eth_nic_handler nic_handler = DOCA_GPUNETIO_ETH_NIC_HANDLER_AUTO,
          enum doca_gpu_dev_eth_rx_attr rx_attr = DOCA_GPUNETIO_ETH_RX_ATTR_NONE>
GNIO_HOST_DEVICE inline doca_error_t doca_gpu_dev_eth_rxq_recv(struct doca_gpu_eth_rxq* rxq, uint32_t max_rx_pkts,
                                                               uint64_t timeout_ns, uint64_t* out_first_pkt_idx,
                                                               uint32_t* out_pkt_num,
                                                               struct doca_gpu_dev_eth_rxq_attr* attr_out = nullptr) {
  namespace gd = gnio::compat::doca;
  const gnio::device::rxq& q = rxq->q;
  uint64_t first = 0;
  uint32_t num = 0;
  const gnio::status s = gnio::device::recv<gd::scope_of<exec_scope>>(q, max_rx_pkts == 0 ? q.num_descs : max_rx_pkts,
                                                                      timeout_ns, &first, &num);
  if (s == gnio::status::again || s == gnio::status::shutdown) {
    num = 0;
  } else if (s != gnio::status::success) {
    return gd::to_doca(s);
  }
  if constexpr (rx_attr != DOCA_GPUNETIO_ETH_RX_ATTR_NONE) {
    if (attr_out != nullptr) {
      uint32_t rank = 0, size = 1;
      gd::rank_of<exec_scope>(rank, size);
      for (uint32_t i = rank; i < num; i += size) {
        const gnio::device::rx_cqe& c = q.cqe(first + i);
        if constexpr ((rx_attr & DOCA_GPUNETIO_ETH_RX_ATTR_BYTES) != 0) attr_out[i].bytes = c.len;
        if constexpr ((rx_attr & DOCA_GPUNETIO_ETH_RX_ATTR_TIMESTAMP) != 0) attr_out[i].timestamp_ns = c.ts_ns;
      }
#if defined(__CUDA_ARCH__)
      /* Every thread of the scope reads what the others wrote. */
      if constexpr (exec_scope == DOCA_GPUNETIO_ETH_EXEC_SCOPE_WARP) __syncwarp();
      else if constexpr (exec_scope == DOCA_GPUNETIO_ETH_EXEC_SCOPE_BLOCK) __syncthreads();
#endif
    }
  }
  *out_first_pkt_idx = first;
  *out_pkt_num = num;
  return DOCA_SUCCESS;
}

/* Address of the packet at ring index pkt_idx (as returned by recv). */
GNIO_HOST_DEVICE inline uint64_t doca_gpu_dev_eth_rxq_get_pkt_addr(const struct doca_gpu_eth_rxq* rxq,
                                                                   uint64_t pkt_idx) {
  return reinterpret_cast<uint64_t>(gnio::device::pkt_addr(rxq->q, pkt_idx));
}

/* gnio has no memory keys: 0. */
GNIO_HOST_DEVICE inline uint32_t doca_gpu_dev_eth_rxq_get_pkt_mkey(const struct doca_gpu_eth_rxq*) { return 0; }

#endif
