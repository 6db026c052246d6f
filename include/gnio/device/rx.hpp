// SPDX-License-Identifier: Apache-2.0
// Receive from an RX queue at thread, warp or block scope.
//
//   uint64_t first; uint32_t num;
//   status s = recv<scope::warp>(rxq, 64, 100'000, &first, &num);
//   for (i = lane; i < num; i += 32) { uint8_t* p = rxq.pkt_addr(first + i); ... }
//
// Each call first releases the batch the previous call returned (publishes the
// consumer index), so a packet's bytes stay valid until the next recv on that
// queue: the buffers of released entries go back to the backend. Exactly one
// thread, warp or block may consume a queue.
#pragma once

#include "gnio/device/exec.hpp"
#include "gnio/device/pkt/load.hpp"
#include "gnio/device/status_code.hpp"

namespace gnio::device {

namespace detail {

GNIO_HOST_DEVICE GNIO_FORCEINLINE uint32_t load_owner(const rxq& q, uint64_t idx) noexcept {
  // Pairs with the release store of rx_cqe::owner in backend::rx_ring_writer::
  // publish(). On the GPU the load is relaxed and the acquire fence in the
  // thread-scope poll(), once per batch, orders the reads that follow (the
  // warp and block polls load with acquire: ready_acquire); on the
  // host executor the load itself acquires (as cheap as a plain load on x86),
  // which ThreadSanitizer sees, as it does not see fences.
#if defined(__CUDA_ARCH__)
  return sys_atomic_ref<const uint32_t>(q.cqe(idx).owner).load(cuda::std::memory_order_relaxed);
#else
  return sys_atomic_ref<const uint32_t>(q.cqe(idx).owner).load(cuda::std::memory_order_acquire);
#endif
}

GNIO_HOST_DEVICE GNIO_FORCEINLINE bool ready(const rxq& q, uint64_t idx) noexcept {
  return load_owner(q, idx) == rx_phase(idx, q.log2_descs);
}

// The owner word loaded with acquire: the entry's fields and bytes may be read
// right after it, without a fence. Pairs with the release store of rx_cqe::
// owner in backend::rx_ring_writer::publish(). The warp and block polls use
// it: each lane or thread loads one entry, so nothing waits for an earlier
// load of the same thread, and a lane's acquire reaches the others through the
// barrier after the poll. On the GPU a fence after a relaxed load cost 0.5 us
// more on the path of a lone packet (bench/latency --test chain, H200).
GNIO_HOST_DEVICE GNIO_FORCEINLINE bool ready_acquire(const rxq& q, uint64_t idx) noexcept {
  return sys_atomic_ref<const uint32_t>(q.cqe(idx).owner).load(cuda::std::memory_order_acquire) ==
         rx_phase(idx, q.log2_descs);
}

// Contiguous ready completions from `start`, at most `max`, as seen by one thread.
// Loads are issued eight at a time so a GPU thread polling host memory keeps
// several PCIe reads in flight.
GNIO_HOST_DEVICE GNIO_FORCEINLINE uint32_t count_ready_thread(const rxq& q, uint64_t start, uint32_t max) noexcept {
  uint32_t n = 0;
  while (n < max) {
    uint32_t chunk = max - n < 8u ? max - n : 8u;
    uint32_t own[8];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (uint32_t j = 0; j < 8; ++j)
      if (j < chunk) own[j] = load_owner(q, start + n + j);
    const uint64_t base = start + n;
    for (uint32_t j = 0; j < chunk; ++j) {
      if (own[j] != rx_phase(base + j, q.log2_descs)) return n;
      ++n;
    }
  }
  return n;
}

#if defined(__CUDA_ARCH__)
// Every lane polls one entry; the ballot's lowest clear bit ends the run.
__device__ GNIO_FORCEINLINE uint32_t count_ready_warp(const rxq& q, uint64_t start, uint32_t max) noexcept {
  uint32_t n = 0;
  const uint32_t lane = threadIdx.x & 31u;
  while (n < max) {
    bool r = (lane < max - n) && ready_acquire(q, start + n + lane);
    uint32_t mask = __ballot_sync(0xffffffffu, r);
    uint32_t run = (mask == 0xffffffffu) ? 32u : static_cast<uint32_t>(__ffs(~mask) - 1);
    n += run;
    if (run < 32u) break;
  }
  return n < max ? n : max;
}
#endif

GNIO_HOST_DEVICE GNIO_FORCEINLINE bool eos_set(const rxq& q) noexcept {
  // Pairs with the release store of *eos in backend::rx_ring_writer::
  // end_of_stream(), made after its last publish: a set flag means no
  // completion is still coming.
  return sys_atomic_ref<const uint32_t>(*q.eos).load(cuda::std::memory_order_acquire) != 0u;
}

GNIO_HOST_DEVICE GNIO_FORCEINLINE void publish_consumer(const rxq& q, uint64_t idx) noexcept {
  // Pairs with the acquire load of *cons in backend::rx_ring_writer::
  // consumed(): every read of the entries and buffers before idx happened
  // before the backend may reuse them.
  sys_atomic_ref<uint64_t>(*q.cons).store(idx, cuda::std::memory_order_release);
}

// How often an empty poll also looks at the end-of-stream flag, besides when
// the batch timeout expires: one more read across PCIe per look, so not on
// every empty poll, and the end of a stream is still seen within a few polls.
inline constexpr uint32_t eos_check_polls = 64;

// Poll loop run by the thread (or, on the GPU with Warp=true, the warp) that leads the recv.
template <bool Warp>
GNIO_HOST_DEVICE GNIO_FORCEINLINE status poll(const rxq& q, uint32_t max_pkts, uint64_t timeout_ns, uint64_t start,
                                              uint32_t* num, poll_policy policy) noexcept {
  // The clock is read only when it can matter: not for timeout 0, and not
  // once a full batch is there (a clock read costs tens of ns on a host in a VM).
  const uint64_t t0 = timeout_ns ? now_ns() : 0;
  uint32_t empty_polls = 0;
  uint32_t last_n = 0;
  for (;;) {
    uint32_t n;
#if defined(__CUDA_ARCH__)
    if constexpr (Warp) n = count_ready_warp(q, start, max_pkts);
    else n = count_ready_thread(q, start, max_pkts);
#else
    n = count_ready_thread(q, start, max_pkts);
#endif
    const bool expired = n < max_pkts && (timeout_ns == 0 || (now_ns() - t0) >= timeout_ns);
    // busy: a partial batch that did not grow since the last look is a burst
    // the producer has finished publishing (it publishes a burst at once);
    // it is returned now rather than at the timeout. latency: at first sight.
    const bool settled = n > 0 && ((policy == poll_policy::busy && n == last_n) || policy == poll_policy::latency);
    if (n >= max_pkts || (n > 0 && (expired || settled))) {
      *num = n;
      // Pairs with the release store of rx_cqe::owner in backend::
      // rx_ring_writer::publish(): entry fields and packet bytes written
      // before it are visible after this. A warp's lanes loaded the owner
      // words with acquire (ready_acquire) and need no fence.
      if constexpr (!Warp) cuda::atomic_thread_fence(cuda::std::memory_order_acquire, cuda::thread_scope_system);
      return status::success;
    }
    last_n = n;
    ++empty_polls;  // rounds without a batch: the backoff and the end-of-stream look go by them
    if (n == 0 && (expired || empty_polls % eos_check_polls == 0) && eos_set(q)) {
      // The backend finished; one more look closes the race with its last publish.
#if defined(__CUDA_ARCH__)
      if constexpr (Warp) n = count_ready_warp(q, start, max_pkts);
      else n = count_ready_thread(q, start, max_pkts);
#else
      n = count_ready_thread(q, start, max_pkts);
#endif
      *num = n;
      // As above: the thread-scope poll loaded relaxed and fences; a warp's lanes loaded with acquire.
      if constexpr (!Warp) cuda::atomic_thread_fence(cuda::std::memory_order_acquire, cuda::thread_scope_system);
      return n ? status::success : status::shutdown;
    }
    if (expired) {
      *num = 0;
      return status::again;
    }
    idle_backoff(empty_polls, policy);
  }
}

#if defined(__CUDA_ARCH__)
// recv at block scope. Every thread of the block looks at one entry per
// round, the next blockDim.x after the ready run found so far, so a batch of
// B entries takes B / blockDim.x rounds rather than B / 32 rounds of one
// warp. Entries stay ready until this block releases them, so the run only
// grows and is never looked at twice. Thread 0 keeps the clock and decides.
__device__ GNIO_FORCEINLINE status recv_block(const rxq& q, uint32_t max_pkts, uint64_t timeout_ns, uint64_t* first,
                                              uint32_t* num, poll_policy policy) noexcept {
  __shared__ uint64_t s_start;
  __shared__ uint32_t s_num;            // ready run from s_start, so far
  __shared__ uint32_t s_first_missing;  // this round: offset of the first entry not ready
  __shared__ int32_t s_status;          // -1 while polling
  const uint32_t tid = threadIdx.x;
  if (tid == 0) {
    const uint64_t start = *q.next;
    publish_consumer(q, start);
    s_start = start;
    s_num = 0;
    s_status = -1;
  }
  uint64_t t0 = 0;
  if (tid == 0) t0 = now_ns();
  uint32_t empty_polls = 0;
  bool eos_seen = false;  // thread 0's
  for (;;) {
    __syncthreads();  // thread 0's writes to s_* are visible; everyone is past the previous round
    const uint64_t start = s_start;
    const uint32_t have = s_num;
    const uint32_t width = max_pkts - have < blockDim.x ? max_pkts - have : blockDim.x;
    if (tid == 0) s_first_missing = width;
    __syncthreads();
    if (tid < width && !ready_acquire(q, start + have + tid)) atomicMin(&s_first_missing, tid);
    __syncthreads();
    if (tid == 0) {
      const uint32_t run = s_first_missing;
      const uint32_t n = have + run;
      s_num = n;
      // The whole window was ready and the batch is not full: look further at once.
      if (!(run == width && n < max_pkts)) {
        const bool expired = (now_ns() - t0) >= timeout_ns;
        // busy: a partial batch that did not grow this round is a burst the
        // producer has finished publishing; return it now (see poll()).
        // latency: at first sight.
        const bool settled = n > 0 && ((policy == poll_policy::busy && run == 0) || policy == poll_policy::latency);
        ++empty_polls;
        if (n >= max_pkts || (n > 0 && (expired || eos_seen || settled))) {
          s_status = static_cast<int32_t>(status::success);
        } else if (n == 0 && eos_seen) {
          s_status = static_cast<int32_t>(status::shutdown);
        } else if (n == 0 && (expired || empty_polls % eos_check_polls == 0) && eos_set(q)) {
          // The backend finished; one more round closes the race with its last publish.
          eos_seen = true;
        } else if (expired && n == 0) {
          s_status = static_cast<int32_t>(status::again);
        }
      }
    }
    __syncthreads();
    const int32_t st = s_status;
    if (st >= 0) {
      // Every entry of the batch was seen ready by some thread's acquire load
      // of its owner word (ready_acquire, pairing with the release store in
      // backend::rx_ring_writer::publish()), before the barrier above: its
      // fields and packet bytes are visible to the whole block.
      const uint32_t n = st == static_cast<int32_t>(status::again) ? 0u : s_num;
      if (tid == 0) *q.next = start + n;
      *first = start;
      *num = n;
      // Nobody may reuse the shared slots before every thread has read them.
      __syncthreads();
      return static_cast<status>(st);
    }
    if (tid == 0) idle_backoff(empty_polls, policy);
  }
}
#endif

template <scope S>
GNIO_HOST_DEVICE GNIO_FORCEINLINE status recv(const rxq& q, uint32_t max_pkts, uint64_t timeout_ns, uint64_t* first,
                                              uint32_t* num, poll_policy policy) noexcept {
  if (max_pkts == 0) max_pkts = 1;
  if (max_pkts > q.num_descs) max_pkts = q.num_descs;
#if defined(__CUDA_ARCH__)
  if constexpr (S == scope::thread) {
    const uint64_t start = *q.next;
    publish_consumer(q, start);
    status s = poll<false>(q, max_pkts, timeout_ns, start, num, policy);
    *first = start;
    *q.next = start + *num;
    return s;
  } else if constexpr (S == scope::warp) {
    const uint32_t lane = threadIdx.x & 31u;
    uint64_t start = 0;
    if (lane == 0) {
      start = *q.next;
      publish_consumer(q, start);
    }
    start = __shfl_sync(0xffffffffu, start, 0);
    status s = poll<true>(q, max_pkts, timeout_ns, start, num, policy);
    __syncwarp();
    if (lane == 0) *q.next = start + *num;
    *first = start;
    return s;
  } else {
    return recv_block(q, max_pkts, timeout_ns, first, num, policy);
  }
#else
  // Host executor: one thread is the whole warp and block.
  const uint64_t start = *q.next;
  publish_consumer(q, start);
  status s = poll<false>(q, max_pkts, timeout_ns, start, num, policy);
  *first = start;
  *q.next = start + *num;
  return s;
#endif
}

}  // namespace detail

// Receives up to max_pkts packets, waiting at most timeout_ns for the batch to
// fill (0: return at once with what is ready). On success [*first, *first +
// *num) are ring indices of received packets, *num >= 1. Returns again when
// nothing arrived in time and shutdown when the backend ended the stream and
// every packet was received. All threads of the scope must call it together
// and get the same result. Polls with poll_policy::adaptive.
template <scope S>
GNIO_HOST_DEVICE status recv(const rxq& q, uint32_t max_pkts, uint64_t timeout_ns, uint64_t* first,
                             uint32_t* num) noexcept {
  return detail::recv<S>(q, max_pkts, timeout_ns, first, num, poll_policy::adaptive);
}

// recv as the launch sees it, for a body that runs in every launch mode:
// polls with ctx.poll, and in the per-burst modes (the host launched the
// kernel because a burst is ready) does not wait (timeout 0) and counts the
// batch, so that the next should_exit<S>(ctx) ends this launch.
template <scope S>
GNIO_HOST_DEVICE status recv(const exec_ctx& ctx, const rxq& q, uint32_t max_pkts, uint64_t timeout_ns, uint64_t* first,
                             uint32_t* num) noexcept {
  if (ctx.one_batch()) {
    ++ctx.batches;
    timeout_ns = 0;
  }
  return detail::recv<S>(q, max_pkts, timeout_ns, first, num, ctx.poll);
}

// Releases every packet received so far (publishes the consumer index), for a
// kernel about to return. Call from one thread of the consuming scope.
GNIO_HOST_DEVICE GNIO_FORCEINLINE void release_all(const rxq& q) noexcept { detail::publish_consumer(q, *q.next); }

// Packet accessors for an index returned by recv. pkt_addr reads the buffer
// the completion names (rx_cqe::buf).
GNIO_HOST_DEVICE GNIO_FORCEINLINE uint8_t* pkt_addr(const rxq& q, uint64_t idx) noexcept { return q.pkt_addr(idx); }
GNIO_HOST_DEVICE GNIO_FORCEINLINE uint32_t pkt_len(const rxq& q, uint64_t idx) noexcept { return q.cqe(idx).len; }
GNIO_HOST_DEVICE GNIO_FORCEINLINE uint32_t pkt_wire_len(const rxq& q, uint64_t idx) noexcept {
  return q.cqe(idx).wire_len;
}
GNIO_HOST_DEVICE GNIO_FORCEINLINE uint64_t pkt_timestamp_ns(const rxq& q, uint64_t idx) noexcept {
  return q.cqe(idx).ts_ns;
}
GNIO_HOST_DEVICE GNIO_FORCEINLINE uint32_t pkt_rss_hash(const rxq& q, uint64_t idx) noexcept {
  return q.cqe(idx).rss_hash;
}
GNIO_HOST_DEVICE GNIO_FORCEINLINE uint16_t pkt_class(const rxq& q, uint64_t idx) noexcept { return q.cqe(idx).cls; }

namespace detail {
// The frame of entry c (index idx) on a queue with inline headers: its
// first bytes are the entry's copy, the rest the buffer at data.
GNIO_HOST_DEVICE GNIO_FORCEINLINE frame_ref inline_frame(const rxq& q, uint64_t idx, const rx_cqe& c,
                                                         const uint8_t* data) noexcept {
  return frame_ref{q.inline_addr(idx), c.len < q.inline_bytes ? c.len : q.inline_bytes, data, c.len, q.inline_bytes};
}
}  // namespace detail

// The frame for header-only work: on a queue with inline headers
// (rxq::inline_bytes) its first bytes are the entry's copy, read with the
// entry and without touching the buffer, which is read only past them; on
// any other queue, the buffer. parse(frame_ref, ...) and bpf_match take it.
GNIO_HOST_DEVICE GNIO_FORCEINLINE frame_ref pkt_frame(const rxq& q, uint64_t idx) noexcept {
  const rx_cqe& c = q.cqe(idx);
  const uint8_t* data = q.pkts + c.buf;
  if (q.inline_bytes == 0) return whole_frame(data, c.len);
  return detail::inline_frame(q, idx, c, data);
}

// A frame's first bytes in the thread's own memory (pkt_frame_head).
struct frame_head {
  static constexpr uint32_t bytes = 64;
  alignas(16) uint8_t b[bytes];
};

// The completion entry idx, whole. On the GPU it is loaded as the two
// 16-byte halves of its 32-byte sector, both issued at once, rather than a
// load per field where each could be a read across PCIe of its own. Valid
// for an index recv returned (the entry is the consumer's until released).
GNIO_HOST_DEVICE GNIO_FORCEINLINE rx_cqe load_cqe(const rxq& q, uint64_t idx) noexcept {
#if defined(__CUDA_ARCH__)
  static_assert(sizeof(rx_cqe) == 32 && alignof(rx_cqe) >= 16, "two 16-byte loads");
  const uint4* p = reinterpret_cast<const uint4*>(&q.cqe(idx));
  const uint4 lo = p[0], hi = p[1];
  rx_cqe c;
  __builtin_memcpy(&c, &lo, 16);
  __builtin_memcpy(reinterpret_cast<uint8_t*>(&c) + 16, &hi, 16);
  return c;
#else
  return q.cqe(idx);
#endif
}

// pkt_frame for an entry already loaded (load_cqe), with, on the GPU, the
// frame's first frame_head::bytes bytes copied into h by four 16-byte loads
// issued together: the parser's header reads, each of which depends on the
// one before (the EtherType, then the IP header, then the ports), are then
// reads of the thread's own memory instead of one read across PCIe after
// another. Made when the queue has no inline copy and the frame starts on a
// 16-byte boundary (frames in a queue's own area start on 64-byte ones).
// Whole 16-byte chunks are read: up to 15 bytes past the end of a frame
// shorter than the copy, inside its slot or buffer (a slot is at least 64
// bytes, a pool buffer larger), never past its chunk or page. h must
// outlive the frame_ref. On the host executor, as pkt_frame.
GNIO_HOST_DEVICE GNIO_FORCEINLINE frame_ref pkt_frame_head(const rxq& q, uint64_t idx, const rx_cqe& c,
                                                           frame_head& h) noexcept {
  const uint8_t* data = q.pkts + c.buf;
  if (q.inline_bytes != 0) return detail::inline_frame(q, idx, c, data);
#if defined(__CUDA_ARCH__)
  if ((reinterpret_cast<uintptr_t>(data) & 15u) == 0) {
    const uint4* src = reinterpret_cast<const uint4*>(data);
    uint4* dst = reinterpret_cast<uint4*>(h.b);
    const uint32_t chunks = c.len >= frame_head::bytes ? frame_head::bytes / 16u : (c.len + 15u) / 16u;
    uint4 v[frame_head::bytes / 16u];
#pragma unroll
    for (uint32_t i = 0; i < frame_head::bytes / 16u; ++i)
      if (i < chunks) v[i] = src[i];
#pragma unroll
    for (uint32_t i = 0; i < frame_head::bytes / 16u; ++i)
      if (i < chunks) dst[i] = v[i];
    return frame_ref{h.b, c.len < frame_head::bytes ? c.len : frame_head::bytes, data, c.len, frame_head::bytes};
  }
#else
  (void)h;
#endif
  return whole_frame(data, c.len);
}

}  // namespace gnio::device
