// SPDX-License-Identifier: Apache-2.0
// l2fwd: the persistent-kernel counterpart of DPDK's l2fwd and of l2fwd-nv
// (DPDK + gpudev). Each block receives a batch from its RX queue, swaps the
// Ethernet source and destination addresses in place, and sends the frames
// back out from the RX slots themselves (no copy), in the order received.
// The same body runs as a CUDA kernel (one block per queue) and on the host
// executor (one thread per queue).
#pragma once

#include <gnio/device/bpf.hpp>
#include <gnio/device/flow_table.hpp>
#include <gnio/device/rx.hpp>
#include <gnio/device/tx.hpp>

namespace l2fwd {

inline constexpr uint32_t max_queues = 64;

struct totals {
  uint64_t packets;  // received
  uint64_t bytes;
  uint64_t forwarded;  // handed to the TX ring
  uint64_t tx_failed;  // the TX ring stayed full: dropped, counted here
  uint64_t filtered;   // refused by --filter: not forwarded, not in packets
};

struct body {
  gnio::device::rxq rx[max_queues];
  gnio::device::txq tx[max_queues];  // tx[i] sends what rx[i] received
  uint32_t num_queues;
  totals* tot;  // one per block, executor memory
  uint32_t batch;
  uint32_t swap_macs;  // 0: forward unchanged
  uint64_t tx_timeout_ns;
  // --filter, verified, in executor memory (no instructions: every frame passes).
  gnio::device::bpf_prog filter;

  GNIO_HOST_DEVICE void operator()(const gnio::device::exec_ctx& ctx) const {
    using namespace gnio::device;
    if (ctx.block >= num_queues) return;
    const rxq& rq = rx[ctx.block];
    const txq& tq = tx[ctx.block];
    uint64_t packets = 0, nbytes = 0, forwarded = 0, failed = 0, filtered = 0;
    for (;;) {
      if (should_exit<scope::block>(ctx)) break;
      uint64_t first = 0;
      uint32_t num = 0;
      const gnio::status s = recv<scope::block>(ctx, rq, batch, 200'000, &first, &num);
      if (s == gnio::status::shutdown) break;
      if (num == 0) continue;  // block-uniform: every thread takes the same path
      // Rounds of block_threads() frames; every thread runs every round, as
      // send<scope::block> needs, and frames leave in RX order.
      for (uint32_t base = 0; base < num; base += block_threads()) {
        const uint32_t i = base + thread_rank();
        bool have = i < num;
        uint8_t* f = nullptr;
        uint32_t len = 0;
        if (have) {
          f = pkt_addr(rq, first + i);
          len = pkt_len(rq, first + i);
          // A frame the filter refuses is not forwarded: this thread sits
          // the round's send out (send<scope::block> with nothing to send).
          if (!bpf_match(filter, f, len, pkt_wire_len(rq, first + i))) {
            have = false;
            ++filtered;
          }
        }
        if (have) {
          if (swap_macs && len >= 12) {
            for (int b = 0; b < 6; ++b) {
              const uint8_t t = f[b];
              f[b] = f[6 + b];
              f[6 + b] = t;
            }
          }
          ++packets;
          nbytes += pkt_wire_len(rq, first + i);
        }
        const gnio::status ts = send<scope::block>(tq, have, f, len, tx_timeout_ns);
        if (have) (ts == gnio::status::success ? forwarded : failed) += 1;
      }
      // The frames sit in RX slots that the next recv hands back to the
      // engine: wait until the backend has sent them.
      if (thread_rank() == 0) (void)tx_wait(tq, tx_timeout_ns, ctx.poll);
      sync_block();
    }
    if (thread_rank() == 0) release_all(rq);
    dev_atomic_ref<uint64_t>(tot[ctx.block].packets).fetch_add(packets, cuda::std::memory_order_relaxed);
    dev_atomic_ref<uint64_t>(tot[ctx.block].bytes).fetch_add(nbytes, cuda::std::memory_order_relaxed);
    dev_atomic_ref<uint64_t>(tot[ctx.block].forwarded).fetch_add(forwarded, cuda::std::memory_order_relaxed);
    dev_atomic_ref<uint64_t>(tot[ctx.block].tx_failed).fetch_add(failed, cuda::std::memory_order_relaxed);
    dev_atomic_ref<uint64_t>(tot[ctx.block].filtered).fetch_add(filtered, cuda::std::memory_order_relaxed);
  }
};

}  // namespace l2fwd
