// SPDX-License-Identifier: Apache-2.0
// The persistent kernel of the classic first gnio program: receive from
// GPU-visible RX queues and count packets and bytes per 5-tuple flow in a hash
// table in executor memory. The same body runs as a CUDA kernel (one block per
// queue) and on the host executor (one thread per queue).
#pragma once

#include <gnio/device/flow_table.hpp>
#include <gnio/device/rx.hpp>

namespace flow_count {

inline constexpr uint32_t max_queues = 64;

using gnio::device::flow_entry;

struct totals {
  uint64_t packets;
  uint64_t bytes;
  uint64_t malformed;
  // These two are added to after every batch, not only at the end, so the
  // host's stats line can read them while the kernel runs.
  uint64_t table_full;  // packets whose flow found no slot within flow_table_max_probe (counted here, not in a flow)
  uint64_t slots_used;  // table slots this block claimed (new flows)
};

template <class T>
using dev_atomic = gnio::device::dev_atomic_ref<T>;

struct body {
  gnio::device::rxq q[max_queues];
  uint32_t num_queues;
  flow_entry* table;  // capacity entries, power of two, executor memory
  uint32_t capacity;
  totals* tot;        // one per block, executor memory
  uint32_t batch;     // max packets per recv

  GNIO_HOST_DEVICE void operator()(const gnio::device::exec_ctx& ctx) const {
    using namespace gnio::device;
    // Blocks beyond the queue count have nothing to do.
    if (ctx.block >= num_queues) return;
    const rxq& rq = q[ctx.block];
    totals& t = tot[ctx.block];
    uint64_t packets = 0, nbytes = 0, malformed = 0;
    for (;;) {
      if (should_exit<scope::block>(ctx)) break;
      uint64_t first = 0;
      uint32_t num = 0;
      gnio::status s = recv<scope::block>(ctx, rq, batch, 200'000, &first, &num);
      if (s == gnio::status::shutdown) break;
      uint64_t full = 0, claimed = 0;
      for (uint32_t i = thread_rank(); i < num; i += block_threads()) {
        const uint8_t* p = pkt_addr(rq, first + i);
        const uint32_t len = pkt_len(rq, first + i);
        const uint32_t wire = pkt_wire_len(rq, first + i);
        parsed_pkt pp;
        if (!parse(p, len, pp) && pp.malformed) ++malformed;
        flow_key k = make_flow_key(pp);
        // TCP flags and the outer VLAN go to the entry's meta word for IPFIX
        // export (flow_table_add_meta says what that costs).
        const uint32_t flags = pp.l4 == l4_kind::tcp ? pp.tcp.flags : 0u;
        const uint32_t vid = uint32_t{pp.outer_vlan} & flow_meta_vlan_mask;
        const uint32_t vlan = pp.vlan_count ? flow_meta_tagged | (vid << flow_meta_vlan_shift) : 0u;
        // A bounded search: a full table costs each new flow's packets
        // flow_table_max_probe probes, not a walk of every slot.
        const int added = flow_table_add_meta(table, capacity, k, wire, flags, vlan, flow_table_max_probe);
        if (added < 0) ++full;
        else if (added > 0) ++claimed;
        ++packets;
        nbytes += wire;
      }
      // Relaxed: the host's live read (the stats line) only needs each value
      // to come eventually; the final read follows the kernel's end, which
      // orders everything (runner wait/stop).
      if (full != 0) dev_atomic<uint64_t>(t.table_full).fetch_add(full, cuda::std::memory_order_relaxed);
      if (claimed != 0) dev_atomic<uint64_t>(t.slots_used).fetch_add(claimed, cuda::std::memory_order_relaxed);
    }
    if (thread_rank() == 0) release_all(rq);
    dev_atomic<uint64_t>(t.packets).fetch_add(packets, cuda::std::memory_order_relaxed);
    dev_atomic<uint64_t>(t.bytes).fetch_add(nbytes, cuda::std::memory_order_relaxed);
    dev_atomic<uint64_t>(t.malformed).fetch_add(malformed, cuda::std::memory_order_relaxed);
  }
};

}  // namespace flow_count
