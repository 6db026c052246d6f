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

// The ring test's consumer: recv<block>(ctx, ...) from one RX queue of a real
// port, and for each timed frame one semaphore item holding its sequence
// number, marked ready (what a persistent kernel does to report to the CPU).
struct ring_body {
  gnio::device::rxq q;
  gnio::device::sem s;
  ring_counts* counts;  // executor memory, read after the kernel returned
  uint32_t batch;
  uint64_t timeout_ns;

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
        const uint32_t len = p.len;
        const uint16_t et = len >= 14 ? static_cast<uint16_t>(p.at(12) << 8 | p.at(13)) : 0;
        if (et == k_ethertype_timed && len >= k_seq_off + 8) {
          uint64_t seq = 0;
          for (uint32_t b = 0; b < 8; ++b) seq |= static_cast<uint64_t>(p.at(k_seq_off + b)) << (8 * b);
          const uint32_t item = static_cast<uint32_t>(timed);
          *sem_custom_as<uint64_t>(s, item) = seq;
          sem_set_packet_info(s, item, first + i, 1);
          // Pairs with the acquire load of the status in the host's
          // sem_get_status(): the sequence number is visible with it.
          sem_set_status(s, item, sem_status::ready);
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
        // Pairs with the CPU's acquire load of *pong.
        sys_atomic_ref<uint64_t>(*pong).store(v, cuda::std::memory_order_release);
        last = v;
        idle = 0;
      } else {
        idle_backoff(++idle, poll_policy::busy);  // never sleeps; on the host, yields now and then
      }
    }
  }
};

[[nodiscard]] gnio::error launch_ring(gnio::kernel_runner& r, const gnio::launch_dims& d, const ring_body& b);
[[nodiscard]] gnio::error launch_flag(gnio::kernel_runner& r, const gnio::launch_dims& d, const flag_body& b);

}  // namespace latency
