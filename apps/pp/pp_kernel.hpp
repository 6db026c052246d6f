// SPDX-License-Identifier: Apache-2.0
// gnio pp, device side: the kernel body. One loop for both executors: a
// round takes block_threads() packets (one on the host executor), counts
// them (pp_count.hpp), sends their replies with one block-wide reservation
// (pp_reply.hpp), feeds fragments and TCP segments to their tables in
// arrival order, then flushes the block's counters; reports go to the
// block's semaphore item.
#pragma once

#include "pp_count.hpp"
#include "pp_device_base.hpp"
#include "pp_reply.hpp"

namespace gnio::pp {
// ---------------------------------------------------------------------------
// Counters and reports
// ---------------------------------------------------------------------------

// The block's counters for the current batch, one device::block_counter per
// field of counters (shared memory on the GPU, a local on the host executor),
// usable with every count_* function.
struct block_counters {
#define GNIO_PP_BLOCK_FIELD(name) device::block_counter name;
  GNIO_PP_COUNTERS(GNIO_PP_BLOCK_FIELD)
#undef GNIO_PP_BLOCK_FIELD
};
// zero_block_counters and flush_block_counters index both structs as arrays,
// counter k at word k, as the host does with counters.
static_assert(sizeof(block_counters) == num_counters * sizeof(device::block_counter) &&
                  sizeof(counters) == num_counters * sizeof(uint64_t),
              "block_counters and counters must be arrays of num_counters 64-bit words in the same order");

// Zeroes the block's counters at kernel start; a block barrier must follow
// before the first count.
GNIO_HOST_DEVICE inline void zero_block_counters(block_counters& s) {
  device::block_counters_zero(reinterpret_cast<device::block_counter*>(&s), num_counters);
}

// Moves the block's batch counts into its totals. Call after a block barrier
// that follows the last count of the batch; the next batch's counts come
// after recv's barriers, so the zeroing cannot race with them.
GNIO_HOST_DEVICE inline void flush_block_counters(block_counters& s, counters* total) {
  device::block_counters_flush(reinterpret_cast<device::block_counter*>(&s), reinterpret_cast<uint64_t*>(total),
                               num_counters);
}

// Writes a report of the block's counters into its semaphore item when the
// host has freed it. Returns false when the item is still busy (try later);
// true when written or when the semaphore cannot hold reports (then nothing
// is written). Called by one thread of the block.
GNIO_HOST_DEVICE inline bool try_report(const body& b, uint32_t block, bool final_report) {
  using namespace device;
  const sem& s = b.sem;
  if (s.items == nullptr || s.custom == nullptr || block >= s.num_items || s.custom_bytes < sizeof(report)) return true;
  // Acquire (inside sem_get_status) pairs with the host's release of free:
  // it has finished reading the previous report before we overwrite it.
  if (sem_get_status(s, block) != sem_status::free) return false;
  report* r = sem_custom_as<report>(s, block);
  r->block = block;
  r->final_report = final_report ? 1u : 0u;
  r->t_ns = now_ns();
  counters& src = b.ctr[block];
  // Relaxed loads pair with the relaxed fetch_adds of the flushes: a snapshot
  // need not be consistent across fields, only tear-free per field.
#define GNIO_PP_SNAP(name) r->c.name = dev_atomic_ref<uint64_t>(src.name).load(cuda::std::memory_order_relaxed);
  GNIO_PP_COUNTERS(GNIO_PP_SNAP)
#undef GNIO_PP_SNAP
  // Release (inside sem_set_status) pairs with the host's acquire of ready:
  // the report bytes above are visible when it sees ready.
  sem_set_status(s, block, sem_status::ready);
  return true;
}

// ---------------------------------------------------------------------------
// The steps of a round (every thread of the block calls each)
// ---------------------------------------------------------------------------

// Sends the round's replies with one reservation and one doorbell. Returns
// whether this thread's reply was sent in place (from its RX slot), which
// must complete before the next recv releases the slot.
GNIO_HOST_DEVICE GNIO_FORCEINLINE bool send_replies(const body& b, const device::txq& tq, const reply_plan& plan,
                                                    uint8_t* f, const device::parsed_pkt& p, device::poll_policy poll,
                                                    block_counters& c) {
  using namespace device;
  const bool want = plan.kind != reply_kind::none;
  uint64_t di = 0;
  uint32_t n = 0;
  const status ts = tx_block_reserve(tq, want, tx_timeout_ns, &di, &n, poll);
  bool inplace = false;
  if (want) {
    if (ts != status::success) {
      c.tx_failed += 1;
    } else if (plan.kind == reply_kind::icmp_inplace) {
      tx_prepare(tq, di, f, plan.len);
      count_sent(plan.kind, c);
      inplace = true;
    } else {
      uint8_t* out = tq.buf_addr(di);
      const uint32_t w = write_reply(plan, f, p, b.cfg, out, tq.stride);
      // w == 0 cannot happen after plan_reply sized it; a zero-length
      // descriptor is completed unsent by the backend (bad_addr).
      tx_prepare(tq, di, out, w);
      if (w) count_sent(plan.kind, c);
      else c.tx_failed += 1;
    }
  }
  tx_block_publish(tq, n);
  return inplace;
}

// Fragments, in arrival order, by one thread: the table is not shared. It
// re-reads each from its slot (count_fragment_at parses it again, out of
// line: a second parsed packet live in the loop would cost the kernel
// registers). The round's packets are first + 0 .. first + n - 1; is_frag
// is this thread's. Block-uniform: every thread takes part in the barriers or
// none does.
GNIO_HOST_DEVICE GNIO_FORCEINLINE void count_fragments(const body& b, const device::rxq& rq, uint64_t first, uint32_t n,
                                                       bool is_frag, device::frag_table* ft, block_counters& c) {
  using namespace device;
  if (!block_any(is_frag)) return;
  GNIO_BLOCK_SHARED uint8_t s_frag[k_max_block_threads];
  s_frag[thread_rank()] = is_frag ? 1 : 0;
  sync_block();
  if (thread_rank() == 0) {
    for (uint32_t j = 0; j < block_threads() && j < n; ++j)
      if (s_frag[j]) count_fragment_at(rq, first + j, ft, b.conv, b.conv_capacity, b.dns, b.dns_capacity, c);
  }
  sync_block();  // s_frag is rewritten by the next round
}

// TCP segments through their connections' framing, each connection's in
// arrival order. A segment's rank is the number of segments with its
// connection hash before it in the round; step k feeds the segments of rank
// k, each from its own thread with the packet it parsed, different
// connections at once. A round of distinct connections takes one step, a
// round of one connection a step per segment. (A hash collision puts two
// connections in one sequence: still each in order.)
GNIO_HOST_DEVICE GNIO_FORCEINLINE void count_segments(const body& b, bool is_seg, uint32_t conn_hash, const uint8_t* f,
                                                      uint32_t len, const device::parsed_pkt& p,
                                                      device::stream_table* stt, uint64_t batch_ns, block_counters& c) {
  using namespace device;
  if (!block_any(is_seg)) return;
  GNIO_BLOCK_SHARED uint32_t s_conn[k_max_block_threads];  // each thread's connection hash
  constexpr uint32_t k_no_conn = ~0u;                      // a thread without a segment
  s_conn[thread_rank()] = !is_seg ? k_no_conn : conn_hash == k_no_conn ? k_no_conn - 1 : conn_hash;
  sync_block();
  uint32_t rank = 0;
  if (is_seg) {
    const uint32_t h = s_conn[thread_rank()];
    for (uint32_t j = 0; j < thread_rank(); ++j) rank += s_conn[j] == h ? 1u : 0u;
  }
  for (uint32_t k = 0;; ++k) {
    if (is_seg && rank == k) count_stream(f, len, p, stt, b.dns, b.dns_capacity, c, batch_ns);
    // The barrier orders step k's writes to the table before step k + 1
    // reads them, and every read of s_conn before the next round rewrites it.
    if (!block_any(is_seg && rank > k)) break;
  }
}

// ---------------------------------------------------------------------------
// The kernel body
// ---------------------------------------------------------------------------

GNIO_HOST_DEVICE inline void body::operator()(const device::exec_ctx& ctx) const {
  using namespace device;
  // Uniform per block: a block without a role returns as a whole.
  if (ctx.block >= num_blocks || ctx.block >= max_blocks || ctr == nullptr) return;
  const block_role& br = blocks[ctx.block];
  const rxq& rq = br.rx;
  const txq& tq = br.tx;
  const bool can_tx = br.has_tx != 0;
  counters* const total = ctr + ctx.block;
  // This block's reassembly table: only one thread of the block touches it
  // (thread 0 on the GPU), in arrival order.
  frag_table* const ft = frag != nullptr ? frag + ctx.block : nullptr;
  // This block's TCP connections: a connection's segments are fed in
  // arrival order, one at a time (the ordered pass below on the GPU).
  stream_table* const stt = streams != nullptr ? streams + ctx.block : nullptr;
  uint64_t last_report = now_ns();
  GNIO_BLOCK_SHARED block_counters s_count;
  zero_block_counters(s_count);
  // The first barrier inside should_exit orders the zeroing before any count.

  for (;;) {
    if (should_exit<scope::block>(ctx)) break;
    if (thread_rank() == 0 && report_interval_ns != 0) {
      const uint64_t t = now_ns();
      if (t - last_report >= report_interval_ns && try_report(*this, ctx.block, false)) last_report = t;
    }
    uint64_t first = 0;
    uint32_t num = 0;
    const status s = recv<scope::block>(ctx, rq, batch, recv_timeout_ns, &first, &num);
    if (s == status::shutdown) break;
    if (num == 0) continue;  // same result in every thread: no divergence
    // The batch's time, for the stream table's entries and its sweep.
    const uint64_t batch_ns = stt != nullptr ? now_ns() : 0;
    // Up to k_sweep_per_batch quiet connections given back per batch (no
    // other thread is in the table now: recv's barriers are after the last
    // ordered pass, and the next one starts after a barrier below).
    constexpr uint32_t k_sweep_per_batch = 4;
    if (stt != nullptr && thread_rank() == 0) {
      const uint32_t freed = stream_table_sweep(*stt, batch_ns, k_sweep_per_batch);
      if (freed != 0) s_count.stream_reclaimed += freed;
    }
    // Rounds of block_threads() packets (one on the host executor); every
    // thread runs every round (num is block-uniform) so the block-wide calls
    // inside are never divergent.
    bool inplace = false;
    for (uint32_t base = 0; base < num; base += block_threads()) {
      const uint32_t i = base + thread_rank();
      const bool have = i < num;
      parsed_pkt p;
      reply_plan plan{reply_kind::none, 0, nullptr, 0};
      uint8_t* f = nullptr;         // the frame's buffer: replies are built in it
      const uint8_t* cf = nullptr;  // the bytes counted: the head copy when it holds the whole frame, else f
      frame_ref fr{};
      frame_head head;  // fr's copy of the frame's first bytes (pkt_frame_head), for this round
      uint32_t len = 0;
      bool is_frag = false, is_seg = false, passed = false;
      uint32_t conn_hash = 0, wire = 0;
      uint64_t ts_ns = 0;
      if (have) {
        const uint64_t idx = first + i;
        // The filter and the parser read headers from the entry's inline
        // copy when the queue has one; payloads and replies use the buffer.
        // The entry in one load, and on the GPU a copy of the frame's first
        // bytes made with one round of loads (pkt_frame_head).
        const rx_cqe c = load_cqe(rq, idx);
        fr = pkt_frame_head(rq, idx, c, head);
        f = rq.pkts + c.buf;
        // A frame wholly in the copy (64 bytes or less on the GPU) is
        // counted from it: the DNS, HTTP and TCP framing reads of its
        // payload are then the thread's own memory, not reads across PCIe.
        cf = fr.whole() ? fr.hdr : f;
        len = fr.len;
        wire = c.wire_len;
        ts_ns = c.ts_ns;
        // A frame the filter refuses is counted once, in filtered, and is
        // otherwise left alone: no class counts, no reply, no tables.
        passed = bpf_match(filter, fr, wire);
        if (!passed) s_count.filtered += 1;
      }
      if (passed) {
        parse_frame(fr, p);
        is_frag = ft != nullptr && reassemble_this(p, len);
        if (!is_frag) {
          count_packet(cf, len, wire, ts_ns, p, conv, conv_capacity, dns, dns_capacity, s_count, stt, true);
          is_seg = streamed(p, len, stt);
          // The ordered pass ranks a block's segments by connection; a block
          // of one thread (the host executor) has nothing to rank.
          if (is_seg && block_threads() > 1) conn_hash = connection_hash(p);
        }
        if (can_tx && !is_frag) plan = plan_reply(f, len, wire, p, cfg, pages, tq.stride);
      }
      if (can_tx && send_replies(*this, tq, plan, f, p, ctx.poll, s_count)) inplace = true;
      count_fragments(*this, rq, first + base, num - base, is_frag, ft, s_count);
      count_segments(*this, is_seg, conn_hash, cf, len, p, stt, batch_ns, s_count);
    }
    // Also the barrier after which every count of the batch is in.
    if (block_any(inplace)) {
      // In-place replies still sit in RX slots the next recv releases.
      if (thread_rank() == 0 && tx_wait(tq, tx_timeout_ns, ctx.poll) != status::success) s_count.tx_failed += 1;
      sync_block();  // thread 0's count before whichever thread flushes tx_failed
    }
    flush_block_counters(s_count, total);
  }

  if (thread_rank() == 0) {
    // Datagrams still waiting for fragments when the stream ended.
    if (ft != nullptr) {
      // Relaxed: a statistic, like the flushes; the final report below and
      // the host (after the kernel) read it.
      dev_atomic_ref<uint64_t>(total->frag_pending).fetch_add(frag_pending(*ft), cuda::std::memory_order_relaxed);
    }
    // Every batch was processed (and in-place replies completed) before the
    // loop ended, so every received slot may go back to the backend.
    release_all(rq);
    // The last flush of every thread happened before a block barrier this
    // thread has passed (inside should_exit or recv).
    const uint64_t t0 = now_ns();
    uint32_t polls = 0;
    while (!try_report(*this, ctx.block, true)) {
      if (now_ns() - t0 >= final_report_wait_ns) break;  // the host reads ctr at the end anyway
      idle_backoff(++polls);
    }
  }
}

}  // namespace gnio::pp
