// SPDX-License-Identifier: Apache-2.0
// The persistent kernel of the classic first gnio program: receive from
// GPU-visible RX queues and count packets and bytes per 5-tuple flow in a hash
// table in executor memory. The same body runs as a CUDA kernel (one block per
// queue) and on the host executor (one thread per queue).
#pragma once

#include <gnio/device/block.hpp>
#include <gnio/device/bpf.hpp>
#include <gnio/device/flow_table.hpp>
#include <gnio/device/rx.hpp>

namespace flow_count {

inline constexpr uint32_t max_queues = 64;

using gnio::device::flow_entry;

struct totals {
  uint64_t packets;
  uint64_t bytes;
  uint64_t malformed;
  // These are added to after every batch, not only at the end, so the
  // host's stats line and its table flips can read them while the kernel runs.
  uint64_t table_full;  // packets whose flow found no slot within flow_table_max_probe (counted here, not in a flow)
  uint64_t claimed[2];  // table slots this block claimed (new flows) in table[0] and table[1], over the run
  uint64_t filtered;    // packets --filter refused: not counted in packets, bytes or a flow
};

template <class T>
using dev_atomic = gnio::device::dev_atomic_ref<T>;
template <class T>
using sys_atomic = gnio::device::sys_atomic_ref<T>;

// The table flip (flow expiry, docs in run.hpp's flipper): the host and the
// blocks share this in memory both reach (mem_type::cpu_gpu). The host
// writes epoch; new packets go to table[epoch & 1]. Each block publishes in
// ack[block] the epoch it writes from then on, after every batch and after
// an empty recv too, and ack_idle when its body returns: once every block
// acks the new epoch (or is idle), no block writes the old table any more,
// and the host copies it, adds it to its own flow table and zeroes it.
// With each ack a block also publishes its totals::claimed, so that the
// host sees how full the table in use is without copying the totals (and
// the claims in a table it takes back are final by then).
inline constexpr uint64_t ack_idle = ~uint64_t{0};
struct flip_ctl {
  uint64_t epoch;
  uint64_t ack[max_queues];
  uint64_t claimed[max_queues][2];
};

// Thread 0's side of the flip: acks the epoch it read and reads it again, so
// that a flip it did not see is acked at once, never missed. seq_cst on both
// sides (the store to ack, then the load of epoch; the host's store to epoch,
// then its loads of ack, flipper::poll in run.hpp): either this block sees
// the new epoch, or the host sees this ack of the old one and waits. The
// store also releases this block's writes to the old table, which the
// barrier before it ordered (enter_epoch).
GNIO_HOST_DEVICE inline uint64_t announce_epoch(flip_ctl* c, uint32_t block) {
  sys_atomic<uint64_t> epoch(c->epoch), ack(c->ack[block]);
  uint64_t e = epoch.load(cuda::std::memory_order_seq_cst);
  for (;;) {
    ack.store(e, cuda::std::memory_order_seq_cst);
    const uint64_t again = epoch.load(cuda::std::memory_order_seq_cst);
    if (again == e) return e;
    e = again;
  }
}

// Thread 0 copies the block's claims (every thread's adds are done: the
// barrier before) to flip_ctl; relaxed, the ack after it releases them.
GNIO_HOST_DEVICE inline void publish_claims(flip_ctl* c, uint32_t block, totals& t) {
  for (uint32_t w = 0; w < 2; ++w)
    sys_atomic<uint64_t>(c->claimed[block][w])
        .store(dev_atomic<uint64_t>(t.claimed[w]).load(cuda::std::memory_order_relaxed),
               cuda::std::memory_order_relaxed);
}

// The epoch the whole block writes until its next call, after every thread
// finished the batch before (the barrier, then thread 0 announces).
GNIO_HOST_DEVICE inline uint64_t enter_epoch(flip_ctl* c, uint32_t block, totals& t) {
  GNIO_BLOCK_SHARED uint64_t s_epoch;
  gnio::device::
      sync_block();  // every thread's writes to the table and its claims are done, and everyone read the last s_epoch
  if (gnio::device::thread_rank() == 0) {
    publish_claims(c, block, t);
    s_epoch = announce_epoch(c, block);
  }
  gnio::device::sync_block();
  return s_epoch;
}

// The body returns: this block writes no table until it starts again.
GNIO_HOST_DEVICE inline void leave_epoch(flip_ctl* c, uint32_t block) {
  gnio::device::sync_block();  // every thread's writes to the table are done
  // Pairs with the host's seq_cst loads of ack (flipper::poll): the writes
  // before the barrier happen before an ack_idle it reads.
  if (gnio::device::thread_rank() == 0)
    sys_atomic<uint64_t>(c->ack[block]).store(ack_idle, cuda::std::memory_order_seq_cst);
}

struct body {
  gnio::device::rxq q[max_queues];
  uint32_t num_queues;
  flow_entry* table[2];  // capacity entries each, power of two, executor memory; table[1] null without flips
  uint32_t capacity;
  flip_ctl* flip;  // cpu_gpu memory; null: one table, never flipped (--flow-idle-timeout 0)
  totals* tot;     // one per block, executor memory
  uint32_t batch;  // max packets per recv
  // --filter, verified (gnio/device/bpf.hpp), in executor memory; no
  // instructions: every packet passes.
  gnio::device::bpf_prog filter;

  GNIO_HOST_DEVICE void operator()(const gnio::device::exec_ctx& ctx) const {
    using namespace gnio::device;
    // Blocks beyond the queue count have nothing to do.
    if (ctx.block >= num_queues) return;
    const rxq& rq = q[ctx.block];
    totals& t = tot[ctx.block];
    uint64_t packets = 0, nbytes = 0, malformed = 0, filtered = 0;
    uint64_t epoch = flip ? enter_epoch(flip, ctx.block, t) : 0;
    for (;;) {
      if (should_exit<scope::block>(ctx)) break;
      uint64_t first = 0;
      uint32_t num = 0;
      gnio::status s = recv<scope::block>(ctx, rq, batch, 200'000, &first, &num);
      if (s == gnio::status::shutdown) break;
      const uint32_t which = static_cast<uint32_t>(epoch & 1u);
      flow_entry* const tab = table[which];
      uint64_t full = 0, claimed = 0;
      for (uint32_t i = thread_rank(); i < num; i += block_threads()) {
        // The entry in one load; headers from the entry's inline copy when
        // the queue has one, else (on the GPU) from a copy of the frame's
        // first bytes made with one round of loads: the frame's buffer is
        // read only for headers that reach past either.
        const rx_cqe c = load_cqe(rq, first + i);
        frame_head head;
        const frame_ref f = pkt_frame_head(rq, first + i, c, head);
        const uint32_t len = f.len;
        const uint32_t wire = c.wire_len;
        if (!bpf_match(filter, f, wire)) {
          ++filtered;
          continue;
        }
        parsed_pkt pp;
        const uint8_t* p = nullptr;  // where pp's header offsets point
        if (!parse(f, pp, &p) && pp.malformed) ++malformed;
        flow_key k = make_flow_key(pp);
        // TCP flags and the outer VLAN go to the entry's meta word, the IP
        // bytes and the capture time to its own fields, for IPFIX export and
        // the flow rows (flow_table_update says what that costs).
        flow_update u{};
        u.wire_bytes = wire;
        u.ip_bytes = ip_datagram_bytes(pp, p, len, wire);
        u.ts_ns = c.ts_ns;
        u.tcp_flags = pp.l4 == l4_kind::tcp ? pp.tcp.flags : 0u;
        const uint32_t vid = uint32_t{pp.outer_vlan} & flow_meta_vlan_mask;
        u.vlan_meta = pp.vlan_count ? flow_meta_tagged | (vid << flow_meta_vlan_shift) : 0u;
        // A bounded search: a full table costs each new flow's packets
        // flow_table_max_probe probes, not a walk of every slot.
        const int added = flow_table_update(tab, capacity, k, u, flow_table_max_probe);
        if (added < 0) ++full;
        else if (added > 0) ++claimed;
        ++packets;
        nbytes += wire;
      }
      // Relaxed: the host's live read (the stats line) only needs each value
      // to come eventually; claimed[] reaches it through flip_ctl, published
      // with the next ack (enter_epoch); the final read follows the kernel's
      // end, which orders everything (runner wait/stop).
      if (full != 0) dev_atomic<uint64_t>(t.table_full).fetch_add(full, cuda::std::memory_order_relaxed);
      if (claimed != 0) dev_atomic<uint64_t>(t.claimed[which]).fetch_add(claimed, cuda::std::memory_order_relaxed);
      // Every round acks, an empty one (recv timed out) too: a quiet queue
      // holds a flip back one recv timeout at most.
      if (flip) epoch = enter_epoch(flip, ctx.block, t);
    }
    if (thread_rank() == 0) release_all(rq);
    if (flip) leave_epoch(flip, ctx.block);
    dev_atomic<uint64_t>(t.packets).fetch_add(packets, cuda::std::memory_order_relaxed);
    dev_atomic<uint64_t>(t.bytes).fetch_add(nbytes, cuda::std::memory_order_relaxed);
    dev_atomic<uint64_t>(t.malformed).fetch_add(malformed, cuda::std::memory_order_relaxed);
    dev_atomic<uint64_t>(t.filtered).fetch_add(filtered, cuda::std::memory_order_relaxed);
  }
};

}  // namespace flow_count
