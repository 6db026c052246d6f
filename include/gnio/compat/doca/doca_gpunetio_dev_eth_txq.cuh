/* SPDX-License-Identifier: Apache-2.0
 *
 * gnio DOCA compatibility layer. gnio is not affiliated with, sponsored or
 * endorsed by NVIDIA. This header implements an API compatible with part of
 * NVIDIA DOCA, written from public documentation and the call sites of
 * public samples (docs/doca-compat.md); it contains no text from NVIDIA SDK
 * headers. DOCA is a trademark of NVIDIA Corporation.
 *
 * Device side of TX queues, for CUDA kernels (and the host executor, which
 * compiles the same code with the host compiler, where a block is one
 * thread). Maps onto gnio's device TX API (include/gnio/device/tx.hpp):
 *  - send / wait_send: every thread of the scope calls them with one frame;
 *    the scope reserves descriptors together (tx_block_reserve at block
 *    scope), each thread fills its own (tx_prepare_at: wait_send's time is
 *    the CLOCK_REALTIME nanoseconds doca_eth_txq_calculate_timestamp gave),
 *    and one doorbell publishes them. Unlike DOCA, a send waits for ring
 *    room. The ticket is the descriptor's ring index. The frame's address
 *    must lie in memory registered with the port (a started doca_mmap) or
 *    the queue completes it unsent and counts it (txq_stats::bad_addr).
 *  - Sharing mode GPU, and thread or warp scope, take the queue's producer
 *    lock, since gnio's queues have one producer at a time; block scope with
 *    sharing mode CTA (one block per queue) takes none.
 *  - Only sends flagged DOCA_GPUNETIO_ETH_SEND_FLAG_NOTIFY make completions:
 *    each takes the next number in the queue's notification ring (as deep as
 *    the queue), and poll_completion / poll_completion_at wait for the
 *    descriptor it names to complete (gnio completes descriptors in order).
 *  - The WQE calls are gnio descriptors: get_wqe_ptr gives the ring slot,
 *    wqe_prepare_send fills it, submit moves the producer index to prod and
 *    rings the doorbell.
 * Device code never throws; bad arguments return DOCA_ERROR_INVALID_VALUE.
 */
#ifndef GNIO_COMPAT_DOCA_GPUNETIO_DEV_ETH_TXQ_CUH
#define GNIO_COMPAT_DOCA_GPUNETIO_DEV_ETH_TXQ_CUH

#include <stdint.h>

#include <gnio/device/block.hpp>
#include <gnio/device/tx.hpp>

#include "doca_error.h"
#include "doca_gpunetio_eth_def.h"

namespace gnio::compat::doca {

/* One NOTIFY send: seq is its number + 1 (0: none yet), desc its descriptor. */
struct notify_entry {
  uint64_t seq;
  uint64_t desc;
};

/* Counters of a queue's handle, in executor memory. */
struct txq_counters {
  uint64_t notify_next; /* numbers handed to NOTIFY sends */
  uint64_t polled;      /* notifications poll_completion consumed */
  uint64_t lock;        /* producer lock: 1 while a scope produces */
  uint64_t reserved;
};

inline constexpr uint64_t wait_forever = ~uint64_t{0};

}  // namespace gnio::compat::doca

/* What doca_eth_txq_get_gpu_handle points to: gnio's queue view plus the
 * notification ring and counters (all in executor memory). */
struct doca_gpu_eth_txq {
  gnio::device::txq q;
  gnio::compat::doca::notify_entry* notify; /* num_notify entries */
  gnio::compat::doca::txq_counters* counters;
  uint32_t num_notify; /* power of two: the queue's depth */
  uint32_t reserved;
};

/* A send descriptor of the WQE calls: gnio's TX descriptor. */
struct doca_gpu_dev_eth_txq_wqe {
  gnio::device::tx_desc desc;
};

namespace gnio::compat::doca {

GNIO_HOST_DEVICE inline void lock_producer(const doca_gpu_eth_txq& t) noexcept {
  gnio::device::dev_atomic_ref<uint64_t> l(t.counters->lock);
  uint32_t polls = 0;
  uint64_t expected = 0;
  // Acquire pairs with the release store in unlock_producer: the previous
  // holder's producer index (*q.prod) and notification numbers are seen.
  while (!l.compare_exchange_weak(expected, 1, cuda::std::memory_order_acquire, cuda::std::memory_order_relaxed)) {
    expected = 0;
    gnio::device::idle_backoff(++polls);
  }
}

GNIO_HOST_DEVICE inline void unlock_producer(const doca_gpu_eth_txq& t) noexcept {
  // Pairs with the acquire in lock_producer.
  gnio::device::dev_atomic_ref<uint64_t>(t.counters->lock).store(0, cuda::std::memory_order_release);
}

/* Gives the NOTIFY send of descriptor desc the next notification number. */
GNIO_HOST_DEVICE inline void record_notify(const doca_gpu_eth_txq& t, uint64_t desc) noexcept {
  // Relaxed: it only hands out distinct numbers; the entry is published
  // by the release store of its seq below.
  const uint64_t n =
      gnio::device::dev_atomic_ref<uint64_t>(t.counters->notify_next).fetch_add(1, cuda::std::memory_order_relaxed);
  notify_entry& e = t.notify[n & (t.num_notify - 1u)];
  e.desc = desc;
  // Release pairs with the acquire load of seq in notify_done: desc is
  // written before a poller sees the number.
  gnio::device::dev_atomic_ref<uint64_t>(e.seq).store(n + 1, cuda::std::memory_order_release);
}

/* Whether notification n was made and its descriptor completed. An entry a
 * later notification overwrote (more than num_notify outstanding) is judged
 * by the later one's descriptor, which completes no earlier. */
GNIO_HOST_DEVICE inline bool notify_done(const doca_gpu_eth_txq& t, uint64_t n) noexcept {
  notify_entry& e = t.notify[n & (t.num_notify - 1u)];
  // Pairs with the release store in record_notify.
  const uint64_t seq = gnio::device::dev_atomic_ref<uint64_t>(e.seq).load(cuda::std::memory_order_acquire);
  if (seq < n + 1) return false;
  return gnio::device::tx_done(t.q) > e.desc;
}

/* One frame from one thread, its own reservation and doorbell; the caller
 * holds the producer lock where others may send on the queue too. */
GNIO_HOST_DEVICE inline void send_one(const doca_gpu_eth_txq& t, const void* frame, uint32_t len, uint64_t ts,
                                      bool notify, doca_gpu_dev_eth_ticket_t* ticket) noexcept {
  const gnio::device::txq& q = t.q;
  uint64_t idx = 0;
  (void)gnio::device::tx_reserve(q, 1, wait_forever, &idx);
  gnio::device::tx_prepare_at(q, idx, frame, len, ts);
  if (notify) record_notify(t, idx);
  if (ticket) *ticket = idx;
  gnio::device::tx_commit(q, 1);
  gnio::device::tx_doorbell(q);
}

/* One send per calling thread of the scope; ts 0 sends without a time. */
template <enum doca_gpu_dev_eth_resource_sharing_mode sharing, enum doca_gpu_dev_eth_exec_scope exec_scope>
GNIO_HOST_DEVICE inline void send_frames(const doca_gpu_eth_txq& t, uint64_t ts, uint64_t addr, uint32_t len,
                                         bool notify, doca_gpu_dev_eth_ticket_t* ticket) noexcept {
  const void* frame = reinterpret_cast<const void*>(addr);
#if defined(__CUDA_ARCH__)
  const gnio::device::txq& q = t.q;
  if constexpr (exec_scope == DOCA_GPUNETIO_ETH_EXEC_SCOPE_BLOCK) {
    constexpr bool locked = sharing == DOCA_GPUNETIO_ETH_RESOURCE_SHARING_MODE_GPU;
    if (locked && gnio::device::thread_rank() == 0) lock_producer(t);
    uint64_t idx = 0;
    uint32_t n = 0;
    // tx_block_reserve's barrier orders the lock before every thread's
    // use of the reservation.
    if (gnio::device::tx_block_reserve(q, true, wait_forever, &idx, &n) == gnio::status::success) {
      gnio::device::tx_prepare_at(q, idx, frame, len, ts);
      if (notify) record_notify(t, idx);
      if (ticket) *ticket = idx;
    }
    gnio::device::tx_block_publish(q, n);
    if (locked && gnio::device::thread_rank() == 0) unlock_producer(t);
  } else if constexpr (exec_scope == DOCA_GPUNETIO_ETH_EXEC_SCOPE_WARP) {
    const uint32_t mask = __activemask();
    const uint32_t lane = threadIdx.x & 31u;
    const uint32_t leader = __ffs(mask) - 1u;
    const uint32_t n = __popc(mask);
    uint64_t first = 0;
    if (lane == leader) {
      lock_producer(t);
      (void)gnio::device::tx_reserve(q, n, wait_forever, &first);
    }
    first = __shfl_sync(mask, first, leader);
    const uint64_t idx = first + __popc(mask & ((1u << lane) - 1u));
    gnio::device::tx_prepare_at(q, idx, frame, len, ts);
    if (notify) record_notify(t, idx);
    if (ticket) *ticket = idx;
    __syncwarp(mask);  // every lane's descriptor before the leader's doorbell
    if (lane == leader) {
      gnio::device::tx_commit(q, n);
      gnio::device::tx_doorbell(q);
      unlock_producer(t);
    }
    __syncwarp(mask);
  } else {
    lock_producer(t);
    send_one(t, frame, len, ts, notify, ticket);
    unlock_producer(t);
  }
#else
  // The host executor: every scope is this one thread. Blocks may run on
  // several CPU threads, so the lock is taken as on the GPU.
  constexpr bool locked =
      sharing == DOCA_GPUNETIO_ETH_RESOURCE_SHARING_MODE_GPU || exec_scope != DOCA_GPUNETIO_ETH_EXEC_SCOPE_BLOCK;
  if (locked) lock_producer(t);
  send_one(t, frame, len, ts, notify, ticket);
  if (locked) unlock_producer(t);
#endif
}

}  // namespace gnio::compat::doca

/* Sends the frame at addr (size bytes) from every calling thread of the
 * scope. mkey is accepted and unused (gnio has no memory keys). */
template <enum doca_gpu_dev_eth_resource_sharing_mode sharing = DOCA_GPUNETIO_ETH_RESOURCE_SHARING_MODE_GPU,
          enum doca_gpu_dev_eth_sync_scope sync_scope = DOCA_GPUNETIO_ETH_SYNC_SCOPE_GPU,
          enum doca_gpu_dev_eth_nic_handler nic_handler = DOCA_GPUNETIO_ETH_NIC_HANDLER_AUTO,
          enum doca_gpu_dev_eth_exec_scope exec_scope = DOCA_GPUNETIO_ETH_EXEC_SCOPE_THREAD>
GNIO_HOST_DEVICE inline void doca_gpu_dev_eth_txq_send(struct doca_gpu_eth_txq* txq, uint64_t addr, uint32_t mkey,
                                                       size_t size, enum doca_gpu_eth_send_flags flags,
                                                       doca_gpu_dev_eth_ticket_t* out_ticket) {
  (void)mkey;
  if (txq == nullptr) return;
  gnio::compat::doca::send_frames<sharing, exec_scope>(*txq, 0, addr, static_cast<uint32_t>(size),
                                                       (flags & DOCA_GPUNETIO_ETH_SEND_FLAG_NOTIFY) != 0, out_ticket);
}

/* As send, with a time before which the frame must not leave: wait_ts is
 * what doca_eth_txq_calculate_timestamp returned (CLOCK_REALTIME ns),
 * carried to gnio by tx_prepare_at; 0 sends at once. */
template <enum doca_gpu_dev_eth_resource_sharing_mode sharing = DOCA_GPUNETIO_ETH_RESOURCE_SHARING_MODE_GPU,
          enum doca_gpu_dev_eth_sync_scope sync_scope = DOCA_GPUNETIO_ETH_SYNC_SCOPE_GPU,
          enum doca_gpu_dev_eth_nic_handler nic_handler = DOCA_GPUNETIO_ETH_NIC_HANDLER_AUTO,
          enum doca_gpu_dev_eth_exec_scope exec_scope = DOCA_GPUNETIO_ETH_EXEC_SCOPE_THREAD>
GNIO_HOST_DEVICE inline void doca_gpu_dev_eth_txq_wait_send(struct doca_gpu_eth_txq* txq, uint64_t wait_ts,
                                                            uint64_t addr, uint32_t mkey, size_t size,
                                                            enum doca_gpu_eth_send_flags flags,
                                                            doca_gpu_dev_eth_ticket_t* out_ticket) {
  (void)mkey;
  if (txq == nullptr) return;
  gnio::compat::doca::send_frames<sharing, exec_scope>(*txq, wait_ts, addr, static_cast<uint32_t>(size),
                                                       (flags & DOCA_GPUNETIO_ETH_SEND_FLAG_NOTIFY) != 0, out_ticket);
}

/* Consumes num_cqe notifications in order. WAIT_FLAG_B waits for all of
 * them; NB takes those whose sends completed, up to num_cqe (possibly 0).
 * *num_completed gets how many were consumed. Called by one thread; polls
 * from several threads share the queue's notifications. */
template <enum doca_gpu_dev_eth_cq_poll cq_poll = DOCA_GPUNETIO_ETH_CQ_POLL_ALL,
          enum doca_gpu_dev_eth_resource_sharing_mode sharing = DOCA_GPUNETIO_ETH_RESOURCE_SHARING_MODE_GPU,
          enum doca_gpu_dev_eth_sync_scope sync_scope = DOCA_GPUNETIO_ETH_SYNC_SCOPE_GPU>
GNIO_HOST_DEVICE inline doca_error_t doca_gpu_dev_eth_txq_poll_completion(struct doca_gpu_eth_txq* txq,
                                                                          uint32_t num_cqe,
                                                                          enum doca_gpu_dev_eth_wait_flags wait_flags,
                                                                          uint32_t* num_completed) {
  namespace gd = gnio::compat::doca;
  if (txq == nullptr || num_completed == nullptr || num_cqe == 0 || num_cqe > txq->num_notify)
    return DOCA_ERROR_INVALID_VALUE;
  gnio::device::dev_atomic_ref<uint64_t> polled(txq->counters->polled);
  if (wait_flags == DOCA_GPUNETIO_ETH_WAIT_FLAG_B) {
    // Claims the numbers first, so concurrent pollers wait for
    // different notifications. Relaxed: what the numbers name is
    // published by each entry's seq (record_notify's release store,
    // acquired in notify_done).
    const uint64_t first = polled.fetch_add(num_cqe, cuda::std::memory_order_relaxed);
    for (uint64_t n = first; n < first + num_cqe; ++n) {
      uint32_t polls = 0;
      while (!gd::notify_done(*txq, n)) gnio::device::idle_backoff(++polls);
    }
    *num_completed = num_cqe;
    return DOCA_SUCCESS;
  }
  // Relaxed, as above: the CAS only keeps pollers from consuming a
  // notification twice; notify_done acquires what it names.
  uint64_t first = polled.load(cuda::std::memory_order_relaxed);
  for (;;) {
    uint32_t done = 0;
    while (done < num_cqe && gd::notify_done(*txq, first + done)) ++done;
    if (done == 0 || polled.compare_exchange_weak(first, first + done, cuda::std::memory_order_relaxed)) {
      *num_completed = done;
      return DOCA_SUCCESS;
    }
  }
}

/* Whether notification number cqe_idx (counted from 0 over the queue's
 * NOTIFY sends) completed: waits for it with WAIT_FLAG_B; with NB returns
 * DOCA_ERROR_AGAIN while it has not. Consumes nothing. */
template <enum doca_gpu_dev_eth_resource_sharing_mode sharing = DOCA_GPUNETIO_ETH_RESOURCE_SHARING_MODE_GPU,
          enum doca_gpu_dev_eth_sync_scope sync_scope = DOCA_GPUNETIO_ETH_SYNC_SCOPE_GPU>
GNIO_HOST_DEVICE inline doca_error_t doca_gpu_dev_eth_txq_poll_completion_at(
    struct doca_gpu_eth_txq* txq, uint64_t cqe_idx, enum doca_gpu_dev_eth_wait_flags wait_flags) {
  if (txq == nullptr) return DOCA_ERROR_INVALID_VALUE;
  uint32_t polls = 0;
  while (!gnio::compat::doca::notify_done(*txq, cqe_idx)) {
    if (wait_flags != DOCA_GPUNETIO_ETH_WAIT_FLAG_B) return DOCA_ERROR_AGAIN;
    gnio::device::idle_backoff(++polls);
  }
  return DOCA_SUCCESS;
}

/* The descriptor at ring position wqe_idx (taken modulo the ring). */
GNIO_HOST_DEVICE inline struct doca_gpu_dev_eth_txq_wqe* doca_gpu_dev_eth_txq_get_wqe_ptr(
    const struct doca_gpu_eth_txq* txq, uint16_t wqe_idx) {
  if (txq == nullptr) return nullptr;
  return reinterpret_cast<doca_gpu_dev_eth_txq_wqe*>(&txq->q.ring[wqe_idx & (txq->q.num_descs - 1u)]);
}

/* Fills the descriptor for a send of nbytes at addr. With NOTIFY the send
 * gets the next notification number; its full ring index is wqe_idx taken
 * after the last submitted producer index (the caller prepares at most a
 * ring ahead of it, as DOCA requires). */
GNIO_HOST_DEVICE inline doca_error_t doca_gpu_dev_eth_txq_wqe_prepare_send(const struct doca_gpu_eth_txq* txq,
                                                                           struct doca_gpu_dev_eth_txq_wqe* wqe_ptr,
                                                                           uint16_t wqe_idx, uint64_t addr,
                                                                           uint32_t mkey, uint32_t nbytes,
                                                                           enum doca_gpu_eth_send_flags flags) {
  (void)mkey;
  if (txq == nullptr || wqe_ptr == nullptr || nbytes == 0) return DOCA_ERROR_INVALID_VALUE;
  wqe_ptr->desc.addr = addr;
  wqe_ptr->desc.len = nbytes;
  wqe_ptr->desc.flags = 0;
  if ((flags & DOCA_GPUNETIO_ETH_SEND_FLAG_NOTIFY) != 0) {
    // Only this block's submitting thread writes *prod; the caller's
    // barrier after its submit orders that write before this read.
    const uint64_t base = *const_cast<const volatile uint64_t*>(txq->q.prod);
    const uint64_t idx = base + static_cast<uint16_t>(wqe_idx - static_cast<uint16_t>(base));
    gnio::compat::doca::record_notify(*txq, idx);
  }
  return DOCA_SUCCESS;
}

/* Makes every descriptor below prod part of the queue and rings the
 * doorbell (the producer index never moves back). */
template <enum doca_gpu_dev_eth_resource_sharing_mode sharing = DOCA_GPUNETIO_ETH_RESOURCE_SHARING_MODE_GPU,
          enum doca_gpu_dev_eth_sync_scope sync_scope = DOCA_GPUNETIO_ETH_SYNC_SCOPE_GPU,
          enum doca_gpu_dev_eth_nic_handler nic_handler = DOCA_GPUNETIO_ETH_NIC_HANDLER_AUTO>
GNIO_HOST_DEVICE inline void doca_gpu_dev_eth_txq_submit(struct doca_gpu_eth_txq* txq, uint64_t prod) {
  if (txq == nullptr) return;
  const gnio::device::txq& q = txq->q;
  if (prod > *q.prod) *q.prod = prod;
  // tx_doorbell's release store pairs with the backend's acquire of the
  // doorbell: the descriptors written before it are visible there.
  gnio::device::tx_doorbell(q);
}

/* This thread's lane in its warp (0 on the host executor). */
GNIO_HOST_DEVICE inline uint32_t doca_gpu_dev_eth_get_lane_id() { return gnio::device::lane_id(); }

#endif
