// SPDX-License-Identifier: Apache-2.0
// Transmit through a TX queue: the NIC-like steps reserve -> prepare -> commit
// -> doorbell, and send<Scope>() which wraps them. Exactly one thread, warp or
// block may produce into a queue.
#pragma once

#include "gnio/device/block.hpp"
#include "gnio/device/exec.hpp"
#include "gnio/device/status_code.hpp"

namespace gnio::device {

GNIO_HOST_DEVICE GNIO_FORCEINLINE uint64_t tx_done(const txq& q) noexcept {
  // Pairs with the release store of *done in backend::tx_ring_reader::
  // release(): the descriptors and buffers below it are free to reuse.
  return sys_atomic_ref<const uint64_t>(*q.done).load(cuda::std::memory_order_acquire);
}

// The completion index the producer loaded last (txq::prod[1], executor
// memory): every descriptor below it is free, and stays free until the
// producer itself reuses it, so a reservation that fits below it needs no
// load across PCIe.
GNIO_HOST_DEVICE GNIO_FORCEINLINE uint64_t& tx_done_seen(const txq& q) noexcept { return q.prod[1]; }

// Free descriptors as of the completion index loaded last: no load across PCIe.
GNIO_HOST_DEVICE GNIO_FORCEINLINE uint32_t tx_space_seen(const txq& q) noexcept {
  return q.num_descs - static_cast<uint32_t>(*q.prod - tx_done_seen(q));
}

// Free descriptors right now (single producer view): loads the completion index.
GNIO_HOST_DEVICE GNIO_FORCEINLINE uint32_t tx_space(const txq& q) noexcept {
  tx_done_seen(q) = tx_done(q);
  return tx_space_seen(q);
}

// Reserves n descriptors, waiting up to timeout_ns for the backend to complete
// older ones (polling by `policy`, as recv does). Called by one thread (the
// scope's leader). On success *first is the ring index of the first reserved
// descriptor; returns full on timeout. Looks at the backend's completion
// index only when the last one loaded leaves too little room.
GNIO_HOST_DEVICE inline status tx_reserve(const txq& q, uint32_t n, uint64_t timeout_ns, uint64_t* first,
                                          poll_policy policy = poll_policy::adaptive) noexcept {
  if (n == 0 || n > q.num_descs) return status::invalid_value;
  if (tx_space_seen(q) < n) {
    const uint64_t t0 = now_ns();
    uint32_t polls = 0;
    while (tx_space(q) < n) {
      if (now_ns() - t0 >= timeout_ns) return status::full;
      idle_backoff(++polls, policy);
    }
  }
  *first = *q.prod;
  return status::success;
}

// Fills descriptor idx, with a time before which the frame must not leave.
// addr is an executor address: a TX buffer (q.buf_addr(idx)) or an RX slot
// for an in-place reply; not_before_ns is CLOCK_REALTIME nanoseconds (UTC
// since the epoch; gnio::tx_clock_ns() reads it on the host), 0 for none.
// Frames leave in descriptor order, so a frame waiting for its time also
// holds back the frames after it. What each backend does with the time is in
// its capabilities (port_caps::tx_time): the engine holds the frame until
// then, or a capture file gets the frame with that timestamp.
GNIO_HOST_DEVICE GNIO_FORCEINLINE void tx_prepare_at(const txq& q, uint64_t idx, const void* addr, uint32_t len,
                                                     uint64_t not_before_ns) noexcept {
  const uint32_t slot = static_cast<uint32_t>(idx & (q.num_descs - 1u));
  tx_desc& d = q.ring[slot];
  d.addr = reinterpret_cast<uint64_t>(addr);
  d.len = len;
  if (not_before_ns != 0 && q.times != nullptr) {
    q.times[slot] = not_before_ns;  // published with the descriptor by tx_doorbell's release store
    d.flags = tx_desc_flag_not_before;
  } else {
    d.flags = 0;
  }
}

// Fills descriptor idx with no time: the frame leaves as soon as the backend
// can send it.
GNIO_HOST_DEVICE GNIO_FORCEINLINE void tx_prepare(const txq& q, uint64_t idx, const void* addr, uint32_t len) noexcept {
  tx_prepare_at(q, idx, addr, len, 0);
}

// Makes n prepared descriptors part of the next doorbell. Leader only.
GNIO_HOST_DEVICE GNIO_FORCEINLINE void tx_commit(const txq& q, uint32_t n) noexcept { *q.prod += n; }

// Tells the backend about every committed descriptor. Leader only, after the
// scope's barrier so all descriptors and frame bytes are written.
GNIO_HOST_DEVICE GNIO_FORCEINLINE void tx_doorbell(const txq& q) noexcept {
  // Pairs with the acquire load of *doorbell in backend::tx_ring_reader::
  // peek(): the descriptors and frame bytes written before this are visible
  // to it.
  sys_atomic_ref<uint64_t>(*q.doorbell).store(*q.prod, cuda::std::memory_order_release);
}

// Waits until every descriptor committed so far has completed (polling by
// `policy`: a reply sent in place is waited for before the next recv).
GNIO_HOST_DEVICE inline status tx_wait(const txq& q, uint64_t timeout_ns,
                                       poll_policy policy = poll_policy::adaptive) noexcept {
  const uint64_t t0 = now_ns();
  uint32_t polls = 0;
  while (tx_done(q) < *q.prod) {
    if (now_ns() - t0 >= timeout_ns) return status::time_out;
    idle_backoff(++polls, policy);
  }
  return status::success;
}

// Block-wide TX in two phases, so that a thread learns its descriptor (and so
// its TX buffer) before it writes the frame: tx_block_reserve counts the
// block's wanting threads in thread order and reserves for them together;
// each thread that got a descriptor writes its frame and calls tx_prepare;
// then tx_block_publish commits *n_out descriptors with one doorbell. Every
// thread of the block calls both, in order (on the host executor the block is
// one thread and this is tx_reserve of one descriptor). Returns success for a
// wanting thread that holds descriptor *idx; full for every other thread: a
// thread that did not want one, or one left without (the ring stayed full
// for timeout_ns, or the block wanted more descriptors than the ring has: the
// frames past the ring's size get none).
GNIO_HOST_DEVICE inline status tx_block_reserve(const txq& q, bool want, uint64_t timeout_ns, uint64_t* idx,
                                                uint32_t* n_out, poll_policy policy = poll_policy::adaptive) noexcept {
#if defined(__CUDA_ARCH__)
  __shared__ uint64_t s_first;
  __shared__ uint32_t s_n;
  uint32_t n = 0;
  const uint32_t rank = block_count_before(want, &n);
  if (threadIdx.x == 0) {
    const uint32_t take = n < q.num_descs ? n : q.num_descs;
    s_n = take != 0 && tx_reserve(q, take, timeout_ns, &s_first, policy) == status::success ? take : 0u;
  }
  __syncthreads();  // thread 0's reservation before anyone reads it
  *idx = s_first + rank;
  *n_out = s_n;
  // Nobody writes s_first or s_n again before tx_block_publish's barrier,
  // which every thread reaches only after these reads.
  return want && rank < s_n ? status::success : status::full;
#else
  *n_out = 0;
  if (!want || tx_reserve(q, 1, timeout_ns, idx, policy) != status::success) return status::full;
  *n_out = 1;
  return status::success;
#endif
}

// The second phase of tx_block_reserve: after every thread prepared its
// descriptor, one doorbell for the n the reservation returned.
GNIO_HOST_DEVICE inline void tx_block_publish(const txq& q, uint32_t n) noexcept {
  // Every thread's descriptor and frame bytes before the leader's doorbell
  // (whose release store pairs with the backend's acquire of the doorbell).
  sync_block();
  if (thread_rank() == 0 && n != 0) {
    tx_commit(q, n);
    tx_doorbell(q);
  }
}

// Sends one frame per participating thread (valid == true) at the given
// scope: reserve for all of them, each writes its descriptor, one doorbell.
// Every thread of the scope must call it. Returns full when the ring stayed
// full for timeout_ns (nothing of this call is sent then). At block scope
// (built on tx_block_reserve / tx_block_publish) the result is each thread's
// own: full for a frame that got no descriptor, which also happens to the
// frames past the ring's size when the block sends more frames than the ring
// has descriptors (the others are sent); success otherwise.
template <scope S>
GNIO_HOST_DEVICE status send(const txq& q, bool valid, const void* frame, uint32_t len, uint64_t timeout_ns) noexcept {
#if defined(__CUDA_ARCH__)
  if constexpr (S == scope::thread) {
    if (!valid) return status::success;
    uint64_t first;
    status s = tx_reserve(q, 1, timeout_ns, &first);
    if (s != status::success) return s;
    tx_prepare(q, first, frame, len);
    tx_commit(q, 1);
    tx_doorbell(q);
    return status::success;
  } else if constexpr (S == scope::warp) {
    const uint32_t lane = threadIdx.x & 31u;
    const uint32_t mask = __ballot_sync(0xffffffffu, valid);
    if (mask == 0) return status::success;
    const uint32_t n = __popc(mask);
    uint64_t first = 0;
    int32_t st = 0;
    if (lane == 0) st = static_cast<int32_t>(tx_reserve(q, n, timeout_ns, &first));
    st = __shfl_sync(0xffffffffu, st, 0);
    first = __shfl_sync(0xffffffffu, first, 0);
    if (st != 0) return static_cast<status>(st);
    if (valid) tx_prepare(q, first + __popc(mask & ((1u << lane) - 1u)), frame, len);
    __syncwarp();  // descriptors of every lane before the leader's doorbell
    if (lane == 0) {
      tx_commit(q, n);
      tx_doorbell(q);
    }
    __syncwarp();
    return status::success;
  } else {
    // Ranks follow thread order, so frames leave in the order of the threads
    // that hold them (a forwarder must not reorder a flow).
    uint64_t idx = 0;
    uint32_t n = 0;
    const status mine = tx_block_reserve(q, valid, timeout_ns, &idx, &n);
    if (mine == status::success) tx_prepare(q, idx, frame, len);
    tx_block_publish(q, n);
    return !valid || mine == status::success ? status::success : status::full;
  }
#else
  if (!valid) return status::success;
  uint64_t first;
  status s = tx_reserve(q, 1, timeout_ns, &first);
  if (s != status::success) return s;
  tx_prepare(q, first, frame, len);
  tx_commit(q, 1);
  tx_doorbell(q);
  return status::success;
#endif
}

}  // namespace gnio::device
