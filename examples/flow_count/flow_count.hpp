// SPDX-License-Identifier: Apache-2.0
// The persistent kernel of the classic first gnio program: receive from
// GPU-visible RX queues and count packets and bytes per 5-tuple flow in a hash
// table in executor memory. The same body runs as a CUDA kernel (one block per
// queue) and on the host executor (one thread per queue).
#pragma once

#include <gnio/device/pkt.hpp>
#include <gnio/device/rx.hpp>

namespace flow_count {

inline constexpr uint32_t max_queues = 64;

enum : uint32_t { slot_empty = 0, slot_busy = 1, slot_used = 2 };

struct flow_entry {
  uint32_t state;  // slot_*; written with release once the key is in place
  uint32_t pad;
  gnio::device::flow_key key;
  uint64_t packets;
  uint64_t bytes;
};

struct totals {
  uint64_t packets;
  uint64_t bytes;
  uint64_t malformed;
  uint64_t table_full;  // packets whose flow found no free slot (counted here, not in a flow)
};

template <class T>
using dev_atomic = cuda::atomic_ref<T, cuda::thread_scope_device>;

GNIO_HOST_DEVICE inline uint64_t key_hash(const gnio::device::flow_key& k) {
  // FNV-1a over the key bytes: cheap, and the table only needs spreading.
  const auto* b = reinterpret_cast<const uint8_t*>(&k);
  uint64_t h = 1469598103934665603ull;
  for (uint32_t i = 0; i < sizeof(k); ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

GNIO_HOST_DEVICE inline bool count_flow(flow_entry* table, uint32_t capacity, const gnio::device::flow_key& k,
                                        uint32_t bytes) {
  const uint32_t mask = capacity - 1;
  uint32_t idx = static_cast<uint32_t>(key_hash(k)) & mask;
  for (uint32_t probe = 0; probe < capacity; ++probe, idx = (idx + 1) & mask) {
    flow_entry& e = table[idx];
    dev_atomic<uint32_t> st(e.state);
    uint32_t s = st.load(cuda::std::memory_order_acquire);
    if (s == slot_empty) {
      uint32_t expected = slot_empty;
      if (st.compare_exchange_strong(expected, slot_busy, cuda::std::memory_order_acq_rel)) {
        e.key = k;
        // Pairs with the acquire loads of state below: the key is complete
        // before anyone compares against it.
        st.store(slot_used, cuda::std::memory_order_release);
        s = slot_used;
      } else {
        s = expected;
      }
    }
    while (s == slot_busy) s = st.load(cuda::std::memory_order_acquire);  // another thread is writing the key
    if (e.key == k) {
      dev_atomic<uint64_t>(e.packets).fetch_add(1, cuda::std::memory_order_relaxed);
      dev_atomic<uint64_t>(e.bytes).fetch_add(bytes, cuda::std::memory_order_relaxed);
      return true;
    }
  }
  return false;
}

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
    uint64_t packets = 0, nbytes = 0, malformed = 0, full = 0;
    for (;;) {
      if (should_exit<scope::block>(ctx)) break;
      uint64_t first = 0;
      uint32_t num = 0;
      gnio::status s = recv<scope::block>(rq, batch, 200'000, &first, &num);
      if (s == gnio::status::shutdown) break;
      for (uint32_t i = thread_rank(); i < num; i += block_threads()) {
        const uint8_t* p = pkt_addr(rq, first + i);
        const uint32_t len = pkt_len(rq, first + i);
        const uint32_t wire = pkt_wire_len(rq, first + i);
        parsed_pkt pp;
        if (!parse(p, len, pp) && pp.malformed) ++malformed;
        flow_key k = make_flow_key(pp);
        if (!count_flow(table, capacity, k, wire)) ++full;
        ++packets;
        nbytes += wire;
      }
    }
    if (thread_rank() == 0) release_all(rq);
    dev_atomic<uint64_t>(t.packets).fetch_add(packets, cuda::std::memory_order_relaxed);
    dev_atomic<uint64_t>(t.bytes).fetch_add(nbytes, cuda::std::memory_order_relaxed);
    dev_atomic<uint64_t>(t.malformed).fetch_add(malformed, cuda::std::memory_order_relaxed);
    dev_atomic<uint64_t>(t.table_full).fetch_add(full, cuda::std::memory_order_relaxed);
  }
};

}  // namespace flow_count
