// SPDX-License-Identifier: Apache-2.0
// A lock-free open-addressing table of per-flow packet and byte counters in
// executor memory, shared by every thread of a kernel (or host threads).
#pragma once

#include <cuda/atomic>

#include "gnio/device/pkt.hpp"
#include "gnio/device/ring.hpp"        // dev_atomic_ref
#include "gnio/device/slot_table.hpp"  // flow_slot_*, slot_find_or_claim

namespace gnio::device {

// The search bound for tables a run may fill (flow_count's flow table, pp's
// conversation table): a key whose first flow_table_max_probe slots from its
// hash hold other keys is counted as table-full rather than walking every
// slot. Linear probing at 90 % load averages about 50 probes for a miss, so
// 64 keeps a nearly full table usable while a full one costs 64 probes per
// packet instead of `capacity`.
inline constexpr uint32_t flow_table_max_probe = 64;

struct flow_entry {
  uint32_t state;  // flow_slot_*; set to used with release once the key is in place
  uint32_t meta;   // flow_meta_* bits (flow_table_update's tcp_flags and vlan_meta)
  flow_key key;
  uint64_t packets;
  uint64_t bytes;  // frames on the wire
  // Kept by flow_table_update when given (0 from flow_table_add):
  uint64_t ip_bytes;  // the outermost IP datagrams (ip_datagram_bytes), IPFIX's octetDeltaCount
  uint64_t first_ns;  // capture time of the earliest packet, ns since the Unix epoch (0: none had one)
  uint64_t last_ns;   // capture time of the latest packet
};

// A packet's share of its flow_entry, for flow_table_update.
struct flow_update {
  uint32_t wire_bytes;  // the frame's length on the wire (flow_entry::bytes)
  uint32_t ip_bytes;    // ip_datagram_bytes (flow_entry::ip_bytes)
  uint64_t ts_ns;       // its capture timestamp (pkt_timestamp_ns); 0: none
  uint32_t tcp_flags;   // ORed into the meta word (flow_meta_tcp_flags)
  uint32_t
      vlan_meta;  // flow_meta_tagged | vid << flow_meta_vlan_shift, or 0: stored by the packet that claims the slot
};

// The bytes of a frame's outermost IP datagram, header and payload, as its
// header gives them (IPv4 total length, IPv6 40 + payload length), at most
// what the frame holds past the header on the wire: what IPFIX's
// octetDeltaCount counts (RFC 7012, IANA element 1) and softflowd exports,
// without the Ethernet header, VLAN tags and padding. For a tunnelled packet
// it is the outer datagram, which carries the inner one. 0 without IP.
GNIO_HOST_DEVICE inline uint32_t ip_datagram_bytes(const parsed_pkt& p, const uint8_t* frame, uint32_t len,
                                                   uint32_t wire_len) {
  uint32_t off = p.l3_off;
  l3_kind kind = p.l3;
  for (uint32_t i = 0; i < p.encap_count && i < max_encap; ++i) {
    if (p.encap[i].outer_l3 == l3_kind::ipv4 || p.encap[i].outer_l3 == l3_kind::ipv6) {
      off = p.encap[i].outer_l3_off;
      kind = p.encap[i].outer_l3;
      break;
    }
  }
  if (kind != l3_kind::ipv4 && kind != l3_kind::ipv6) return 0;
  if (off + 6u > len || off >= wire_len) return 0;
  const uint32_t field =
      uint32_t{frame[off + (kind == l3_kind::ipv4 ? 2u : 4u)]} << 8 | frame[off + (kind == l3_kind::ipv4 ? 3u : 5u)];
  const uint32_t n = kind == l3_kind::ipv4 ? field : 40u + field;
  const uint32_t room = wire_len - off;
  // 0 (IPv4 with TSO, an IPv6 jumbogram) or past the frame: what the frame holds.
  return n == 0 || (kind == l3_kind::ipv6 && field == 0) || n > room ? room : n;
}

// flow_entry::meta as flow_table_update fills it: the TCP flags (tcp_fin ..
// tcp_ns) of every packet of the flow ORed together, and the outer VLAN of
// the packet that created the entry (the VLAN is not part of the key).
enum : uint32_t {
  flow_meta_tcp_flags = 0x1ffu,
  flow_meta_vlan_shift = 16,
  flow_meta_vlan_mask = 0xfffu,
  flow_meta_tagged = 1u << 31,  // that packet carried a VLAN tag
};

// The flow tables' hash of a key: spreads keys over a table, nothing more
// (not keyed, not collision-resistant). The key's 44 bytes (no padding) are
// read as five 64-bit words and one 32-bit word, each mixed in with a
// multiply and a shift that folds the product's high bits down (so that
// differences in two words cannot cancel), and the result goes through
// MurmurHash3's 64-bit finalizer, so that every bit reaches the low bits a
// table's mask keeps. Six multiplies in a row instead of FNV-1a's 44: the
// hash is on every packet's path, three times for a TCP segment in gnio pp.
GNIO_HOST_DEVICE inline uint64_t flow_key_hash64(const flow_key& k) {
  uint32_t w[11];
  __builtin_memcpy(w, &k, sizeof k);
  constexpr uint64_t mul = 0x9e3779b97f4a7c15ull;  // odd: each step is a bijection of h
  uint64_t h = 0x243f6a8885a308d3ull;
  for (uint32_t i = 0; i < 10; i += 2) {
    h = (h ^ (w[i] | static_cast<uint64_t>(w[i + 1]) << 32)) * mul;
    h ^= h >> 29;
  }
  h = (h ^ w[10]) * mul;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}

// Both directions of a conversation map to one key: the smaller endpoint first.
GNIO_HOST_DEVICE inline flow_key canonical_flow_key(const flow_key& k) {
  const uint32_t alen = k.family == 6 ? 16u : 4u;
  int cmp = 0;
  for (uint32_t i = 0; i < alen && cmp == 0; ++i) cmp = static_cast<int>(k.src[i]) - static_cast<int>(k.dst[i]);
  if (cmp == 0) cmp = static_cast<int>(k.src_port) - static_cast<int>(k.dst_port);
  if (cmp <= 0) return k;
  flow_key r = k;
  for (uint32_t i = 0; i < 16; ++i) {
    r.src[i] = k.dst[i];
    r.dst[i] = k.src[i];
  }
  r.src_port = k.dst_port;
  r.dst_port = k.src_port;
  return r;
}

// slot_find_or_claim for a table keyed by flow_key: `capacity` (a power of
// two) entries of a type with `uint32_t state` (flow_slot_*) and `flow_key
// key` members, zeroed by the caller before first use; a slot is never given
// back. Returns the entry holding `k` (found or claimed; *fresh says which)
// or nullptr when the first `max_probe` slots from k's hash (every slot, by
// default) hold other keys. A table that a run may fill should bound the
// search, or every new key then walks the whole table; a bounded add stays
// within the bound, so a lookup with the same bound finds every key added.
// Threads may look up and claim concurrently; what an entry holds besides its
// key is the caller's to synchronise.
template <class Entry>
GNIO_HOST_DEVICE inline Entry* flow_slot_find_or_claim(Entry* table, uint32_t capacity, const flow_key& k, bool* fresh,
                                                       uint32_t max_probe = ~0u) {
  return slot_find_or_claim(
      table, capacity, flow_key_hash64(k), [&k](const Entry& e) { return e.key == k; }, [&k](Entry& e) { e.key = k; },
      fresh, max_probe);
}

// Adds one packet to the key's entry: packets and bytes (wire_bytes), an
// atomic add to ip_bytes, first_ns/last_ns kept as the minimum and maximum
// capture time with a relaxed load of each first, so that a packet in time
// order costs one atomic max and an earlier one (rare: another queue's or
// thread's packet) a compare-and-swap, and the meta word: tcp_flags ORed in
// (a relaxed load of the word, which shares the entry's cache line with the
// counters just added to, and an atomic OR only when the packet brings a flag
// the flow has not had yet), vlan_meta (flow_meta_tagged | vid <<
// flow_meta_vlan_shift, or 0) stored once by the packet that claimed the
// slot. Members of u left 0 cost nothing. Zeroed entries need no set-up: a
// first_ns of 0 means none yet. Returns 1 when the key was new, 0 when it
// existed, -1 when the table is full, or full for k within max_probe slots
// (the caller counts it).
GNIO_HOST_DEVICE inline int flow_table_update(flow_entry* table, uint32_t capacity, const flow_key& k,
                                              const flow_update& u, uint32_t max_probe = ~0u) {
  bool fresh = false;
  flow_entry* e = flow_slot_find_or_claim(table, capacity, k, &fresh, max_probe);
  if (e == nullptr) return -1;
  dev_atomic_ref<uint64_t>(e->packets).fetch_add(1, cuda::std::memory_order_relaxed);
  dev_atomic_ref<uint64_t>(e->bytes).fetch_add(u.wire_bytes, cuda::std::memory_order_relaxed);
  if (u.ip_bytes != 0) dev_atomic_ref<uint64_t>(e->ip_bytes).fetch_add(u.ip_bytes, cuda::std::memory_order_relaxed);
  if (u.ts_ns != 0) {
    dev_atomic_ref<uint64_t> last(e->last_ns), first(e->first_ns);
    if (last.load(cuda::std::memory_order_relaxed) < u.ts_ns) last.fetch_max(u.ts_ns, cuda::std::memory_order_relaxed);
    uint64_t cur = first.load(cuda::std::memory_order_relaxed);
    while ((cur == 0 || u.ts_ns < cur) && !first.compare_exchange_weak(cur, u.ts_ns, cuda::std::memory_order_relaxed,
                                                                       cuda::std::memory_order_relaxed)) {}
  }
  const uint32_t add = (u.tcp_flags & flow_meta_tcp_flags) | (fresh ? u.vlan_meta : 0u);
  if (add != 0) {
    dev_atomic_ref<uint32_t> meta(e->meta);
    if ((meta.load(cuda::std::memory_order_relaxed) & add) != add) meta.fetch_or(add, cuda::std::memory_order_relaxed);
  }
  return fresh ? 1 : 0;
}

// flow_table_update with packets and bytes only.
GNIO_HOST_DEVICE inline int flow_table_add(flow_entry* table, uint32_t capacity, const flow_key& k, uint32_t bytes,
                                           uint32_t max_probe = ~0u) {
  flow_update u{};
  u.wire_bytes = bytes;
  return flow_table_update(table, capacity, k, u, max_probe);
}

}  // namespace gnio::device
