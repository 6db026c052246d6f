// SPDX-License-Identifier: Apache-2.0
// The kernel bodies of bench/latency, shared by latency.cpp (the host side)
// and latency_launch.cpp (compiled by nvcc where CUDA is built, so the same
// bodies run as CUDA kernels and on the host executor).
#pragma once

#include <cstdint>

#include <gnio/device/rx.hpp>
#include <gnio/device/sem.hpp>
#include <gnio/kernel.hpp>

namespace latency {

// Frames of the ring test: Ethernet with a local experimental EtherType; the
// payload starts with a 64-bit sequence number. Timed frames carry
// k_ethertype_timed and are acknowledged; load frames only counted.
inline constexpr uint16_t k_ethertype_timed = 0x88b5;
inline constexpr uint16_t k_ethertype_load = 0x88b6;
inline constexpr uint32_t k_seq_off = 14;

struct ring_counts {
  uint64_t timed;  // timed frames acknowledged
  uint64_t load;   // load frames received
  uint64_t other;  // anything else
  uint64_t batches;
};

// Reports a timed frame's sequence number to the CPU through semaphore item
// `item`: in its custom bytes, marked ready with sem_set_status (release), or
// (relaxed) as the count of sem_set_ready_count, without a fence.
GNIO_HOST_DEVICE GNIO_FORCEINLINE void ack(const gnio::device::sem& s, uint32_t item, uint64_t seq, uint64_t idx,
                                           bool relaxed) noexcept {
  using namespace gnio::device;
  if (relaxed) {
    // Pairs with the host's sem_get_status_count(): status and count are one word.
    sem_set_ready_count(s, item, static_cast<uint32_t>(seq));
    return;
  }
  *sem_custom_as<uint64_t>(s, item) = seq;
  sem_set_packet_info(s, item, idx, 1);
  // Pairs with the acquire load of the status in the host's sem_get_status():
  // the sequence number is visible with it.
  sem_set_status(s, item, sem_status::ready);
}

// The ring test's consumer: recv<block>(ctx, ...) from one RX queue of a real
// port, and for each timed frame one semaphore item holding its sequence
// number, marked ready (what a persistent kernel does to report to the CPU).
struct ring_body {
  gnio::device::rxq q;
  gnio::device::sem s;
  ring_counts* counts;  // executor memory, read after the kernel returned
  uint32_t batch;
  uint64_t timeout_ns;
  // Acknowledge with sem_set_ready_count (the sequence number's low 32 bits
  // as the count, one store without a fence) instead of custom bytes, packet
  // info and sem_set_status's release store.
  bool relaxed_ack = false;

  GNIO_HOST_DEVICE void operator()(const gnio::device::exec_ctx& ctx) const {
    using namespace gnio::device;
    if (ctx.block != 0) return;
    uint64_t timed = 0, load = 0, other = 0, batches = 0;
    for (;;) {
      if (should_exit<scope::block>(ctx)) break;
      uint64_t first = 0;
      uint32_t num = 0;
      const gnio::status st = recv<scope::block>(ctx, q, batch, timeout_ns, &first, &num);
      if (st == gnio::status::shutdown) break;
      if (num == 0 || thread_rank() != 0) continue;
      ++batches;
      for (uint32_t i = 0; i < num; ++i) {
        // From the entry's inline headers when the queue has them (then no
        // read of the buffer), else from the buffer.
        const frame_ref p = pkt_frame(q, first + i);
        // The bytes first and the length check after, so that with inline
        // headers their loads do not wait for the entry's len (one read
        // across PCIe instead of two in a row). Bytes 12 to 21 are inside the
        // copy (at least 32 bytes) or the frame's slot (at least 64) even for
        // a shorter frame, whose bytes are then not used.
        const uint16_t et_bytes = static_cast<uint16_t>(p.at(12) << 8 | p.at(13));
        uint64_t seq = 0;
        for (uint32_t b = 0; b < 8; ++b) seq |= static_cast<uint64_t>(p.at(k_seq_off + b)) << (8 * b);
        const uint32_t len = p.len;
        const uint16_t et = len >= 14 ? et_bytes : 0;
        if (et == k_ethertype_timed && len >= k_seq_off + 8) {
          ack(s, static_cast<uint32_t>(timed), seq, first + i, relaxed_ack);
          ++timed;
        } else if (et == k_ethertype_load) {
          ++load;
        } else {
          ++other;
        }
      }
    }
    if (thread_rank() == 0) {
      release_all(q);
      counts->timed = timed;
      counts->load = load;
      counts->other = other;
      counts->batches = batches;
    }
  }
};

// The floor: a word in mapped host memory written by the CPU and echoed by
// the kernel into another word, without any ring protocol.
struct flag_body {
  const uint64_t* ping;  // host-visible, written by the CPU
  uint64_t* pong;        // host-visible, written by the kernel
  // Store *pong relaxed (no fence before it) rather than with release.
  bool relaxed = false;

  GNIO_HOST_DEVICE void operator()(const gnio::device::exec_ctx& ctx) const {
    using namespace gnio::device;
    if (ctx.block != 0 || thread_rank() != 0) return;
    uint64_t last = 0;
    uint32_t idle = 0;
    for (uint32_t round = 0;; ++round) {
      // The exit flag is one more read over PCIe: look at it now and then.
      if ((round & 1023u) == 0 && ctx.should_exit()) break;
      // Pairs with the CPU's release store of *ping.
      const uint64_t v = sys_atomic_ref<const uint64_t>(*ping).load(cuda::std::memory_order_acquire);
      if (v != last) {
        // Pairs with the CPU's acquire load of *pong (the word is the whole message).
        sys_atomic_ref<uint64_t>(*pong).store(
            v, relaxed ? cuda::std::memory_order_relaxed : cuda::std::memory_order_release);
        last = v;
        idle = 0;
      } else {
        idle_backoff(++idle, poll_policy::busy);  // never sleeps; on the host, yields now and then
      }
    }
  }
};

// The chain test: the consumer's side of the ring protocol done step by step
// by one thread, on a ring the CPU fills itself (no engine), each step timed
// on the executor's clock. The kernel goes `depth` steps before it
// acknowledges a completion:
//   1 owner  the owner word says the entry is new (the sequence number
//            acknowledged is then the ring index);
//   2 fence  + the system-scope acquire fence recv makes after it;
//   3 entry  + the entry's len and buf;
//   4 frame  + the frame's EtherType and sequence number (from its buffer,
//            or from the entry's inline copy when the ring has one: then
//            loaded with the entry's fields, and timed with them as frame);
//   5 acquire  the four steps with the owner word loaded with acquire on
//            every look, and no fence after it (the ordering the flag test's
//            kernel uses).
inline constexpr uint32_t chain_owner = 1, chain_fence = 2, chain_entry = 3, chain_frame = 4, chain_acquire = 5;

// One sample's steps, executor-clock nanoseconds (GPU cycles scaled by
// chain_clock's rate afterwards on the host).
struct chain_steps {
  uint64_t fence, entry, frame, ack;
};
// The GPU's cycle counter against its nanosecond timer, at the kernel's start
// and end, to turn cycles into nanoseconds (on the host both are ns).
struct chain_clock {
  uint64_t cycles0, ns0, cycles1, ns1;
};

// The executor's fine clock, read once v is available (on the GPU the
// volatile store waits for v's register, and the clock read issues after it).
GNIO_HOST_DEVICE GNIO_FORCEINLINE uint64_t cycles_after(uint64_t v) noexcept {
#if defined(__CUDA_ARCH__)
  __shared__ volatile uint64_t sink;
  sink = v;
  return clock64();
#else
  (void)v;
  return gnio::device::now_ns();
#endif
}

struct chain_body {
  gnio::device::rxq q;
  gnio::device::sem s;
  chain_steps* steps;  // executor memory, max_samples entries
  uint64_t max_samples;
  chain_clock* clock;  // executor memory
  uint32_t depth;
  bool relaxed_ack;

  GNIO_HOST_DEVICE void operator()(const gnio::device::exec_ctx& ctx) const {
    using namespace gnio::device;
    if (ctx.block != 0 || thread_rank() != 0) return;
    chain_clock clk{cycles_after(0), now_ns(), 0, 0};
    for (uint64_t idx = 0;; ++idx) {
      uint32_t polls = 0;
      bool stop = false;
      // Both pair with the release store of the owner word in backend::rx_ring_writer::publish().
      const auto ready = [&] { return depth == chain_acquire ? detail::ready_acquire(q, idx) : detail::ready(q, idx); };
      while (!ready()) {
        if ((++polls & 1023u) == 0 && ctx.should_exit()) {
          stop = true;
          break;
        }
        idle_backoff(polls, poll_policy::busy);  // never sleeps; on the host, yields
      }
      if (stop) break;
      const uint64_t c0 = cycles_after(0);
      uint64_t c1 = c0, c2 = c0, c3 = c0;
      uint64_t seq = idx;
      if (depth >= chain_fence && depth != chain_acquire) {
        // Pairs with the release store of the owner word in backend::
        // rx_ring_writer::publish(), as in recv.
        cuda::atomic_thread_fence(cuda::std::memory_order_acquire, cuda::thread_scope_system);
        c1 = c2 = c3 = cycles_after(0);
      }
      uint32_t len = 0, buf = 0;
      if (depth >= chain_entry) {
        const rx_cqe& e = q.cqe(idx);
        len = e.len;
        buf = e.buf;
        // With inline headers and the frame step to come, no clock read here:
        // it would hold the copy's loads back until len arrived. The entry's
        // and the copy's loads then count as one step, frame.
        if (q.inline_bytes == 0 || depth < chain_frame) c2 = c3 = cycles_after(uint64_t{len} ^ buf);
      }
      if (depth >= chain_frame) {
        // With inline headers the address does not depend on the entry's
        // fields: the loads go out with the entry's (as in ring_body).
        const uint8_t* f = q.inline_bytes != 0 ? q.inline_addr(idx) : q.pkts + buf;
        const uint16_t et_bytes = static_cast<uint16_t>(f[12] << 8 | f[13]);
        seq = 0;
        for (uint32_t b = 0; b < 8; ++b) seq |= static_cast<uint64_t>(f[k_seq_off + b]) << (8 * b);
        const uint16_t et = len >= k_seq_off + 8 ? et_bytes : 0;
        if (et != k_ethertype_timed) seq = ~uint64_t{0};  // the CPU counts a bad reply
        c3 = cycles_after(seq);
      }
      ack(s, static_cast<uint32_t>(idx), seq, idx, relaxed_ack);
      const uint64_t c4 = cycles_after(0);
      if (idx < max_samples) steps[idx] = chain_steps{c1 - c0, c2 - c1, c3 - c2, c4 - c3};
      // The entry's buffer back to the CPU (off the timed path: the next
      // frame comes an interval later).
      *q.next = idx + 1;
      release_all(q);
    }
    clk.cycles1 = cycles_after(0);
    clk.ns1 = now_ns();
    *clock = clk;
  }
};

[[nodiscard]] gnio::error launch_chain(gnio::kernel_runner& r, const gnio::launch_dims& d, const chain_body& b);
[[nodiscard]] gnio::error launch_ring(gnio::kernel_runner& r, const gnio::launch_dims& d, const ring_body& b);
[[nodiscard]] gnio::error launch_flag(gnio::kernel_runner& r, const gnio::launch_dims& d, const flag_body& b);

}  // namespace latency
