// SPDX-License-Identifier: Apache-2.0
// The slot protocol of the lock-free open-addressing tables in executor
// memory (flow_table.hpp's flow tables, pkt/stream.hpp's connections, pp's
// DNS names), written once: find a key or claim a slot for it, shared by
// every thread of a kernel (or host threads).
#pragma once

#include <cuda/atomic>

#include "gnio/device/config.hpp"
#include "gnio/device/ring.hpp"  // dev_atomic_ref

namespace gnio::device {

// A slot's `uint32_t state`. A table starts zeroed (every slot empty); a
// thread claims a slot (empty or free -> busy), writes the key, publishes it
// (busy -> used, release). A used slot keeps its key while threads use the
// table; only a table that sweeps (stream_table_sweep) gives slots back, as
// free, while no other thread is in it.
enum : uint32_t { flow_slot_empty = 0, flow_slot_busy = 1, flow_slot_used = 2, flow_slot_free = 3 };

// Finds the entry whose key `match(entry)` accepts, or claims a slot for it,
// with linear probing over `capacity` (a power of two) entries of a type
// with a `uint32_t state` member, from slot `hash & (capacity - 1)`, at most
// `max_probe` slots (every slot, by default). `claim(entry)` writes the key
// into a slot this thread claimed, before it is published; the rest of the
// entry is as the table was zeroed or swept. `match` is called on published
// slots only. Returns the entry (found or claimed; *fresh says which) or
// nullptr when the first `max_probe` slots all hold other keys.
//
// The search reads slots in order until it finds the key or an empty slot (an
// add never went past one, so the key is not further on); free slots are
// searched past, and the first empty or free slot seen is the one claimed.
// A claim lost to another thread searches again from that slot: the slots
// before it hold other keys and keep them. A bounded add stays within the
// bound, so a lookup with the same bound finds every key added. Threads may
// look up and claim concurrently, the same key included (one claims, the
// others find it); what an entry holds besides its key is the caller's to
// synchronise.
template <class Entry, class Match, class Claim>
GNIO_HOST_DEVICE inline Entry* slot_find_or_claim(Entry* table, uint32_t capacity, uint64_t hash, Match match,
                                                  Claim claim, bool* fresh, uint32_t max_probe = ~0u) {
  if (fresh != nullptr) *fresh = false;
  if (table == nullptr || capacity == 0) return nullptr;
  const uint32_t mask = capacity - 1;
  const uint32_t probes = max_probe < capacity ? max_probe : capacity;
  const uint32_t home = static_cast<uint32_t>(hash) & mask;
  uint32_t from = 0;  // the slots before home + from hold other keys
  while (from < probes) {
    uint32_t take = probes, take_state = flow_slot_empty;  // the first empty or free slot seen
    for (uint32_t i = from; i < probes; ++i) {
      Entry& e = table[(home + i) & mask];
      dev_atomic_ref<uint32_t> st(e.state);
      // Acquire pairs with the release store of used below (by whichever
      // thread claimed the slot): the key is complete before it is compared.
      uint32_t s = st.load(cuda::std::memory_order_acquire);
      while (s == flow_slot_busy) s = st.load(cuda::std::memory_order_acquire);  // the key is being written
      if (s == flow_slot_used) {
        if (match(static_cast<const Entry&>(e))) return &e;
        continue;
      }
      if (take == probes) {
        take = i;
        take_state = s;
      }
      if (s == flow_slot_empty) break;
    }
    if (take == probes) return nullptr;
    Entry& e = table[(home + take) & mask];
    dev_atomic_ref<uint32_t> st(e.state);
    uint32_t expected = take_state;
    // acq_rel: the claim orders the key writes after it; a lost claim's
    // search reads the slot again with the acquire load above.
    if (st.compare_exchange_strong(expected, flow_slot_busy, cuda::std::memory_order_acq_rel)) {
      claim(e);
      // Pairs with the acquire loads of state above: the key is complete
      // before another thread compares against it.
      st.store(flow_slot_used, cuda::std::memory_order_release);
      if (fresh != nullptr) *fresh = true;
      return &e;
    }
    from = take;  // another thread took that slot (perhaps for this key): look at it again
  }
  return nullptr;
}

}  // namespace gnio::device
