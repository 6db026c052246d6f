// SPDX-License-Identifier: Apache-2.0
// The flow table's slot protocol (gnio/device/flow_table.hpp) on the host:
// a bounded find-or-claim gives up after max_probe slots, a full table is
// reported (not walked), and every key a bounded add placed is found again.
// slot_find_or_claim (gnio/device/slot_table.hpp) with another key type:
// threads claiming the same keys at once place each key once.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <gnio/device/flow_table.hpp>
#include <gnio/device/slot_table.hpp>

namespace {

using gnio::device::flow_entry;
using gnio::device::flow_key;

flow_key key_of(uint32_t i) {
  flow_key k{};
  k.family = 4;
  k.proto = 17;
  k.src[0] = 10;
  k.src[1] = static_cast<uint8_t>(i >> 16);
  k.src[2] = static_cast<uint8_t>(i >> 8);
  k.src[3] = static_cast<uint8_t>(i);
  k.dst[0] = 192;
  k.dst[3] = 1;
  k.src_port = static_cast<uint16_t>(1024 + i % 50000);
  k.dst_port = 53;
  return k;
}

uint32_t home_slot(const flow_key& k, uint32_t capacity) {
  return static_cast<uint32_t>(gnio::device::flow_key_hash64(k)) & (capacity - 1);
}

uint32_t used_slots(const std::vector<flow_entry>& t) {
  uint32_t n = 0;
  for (const auto& e : t) n += e.state == gnio::device::flow_slot_used;
  return n;
}

// The hash the tables index by: keys that differ in one field land in
// slots as a uniform random choice would put them, and a key with one or two
// of its bits flipped hashes to other low bits (a table keeps only those).
TEST(FlowTable, KeyHashSpreadsKeysAndEveryBitReachesTheLowBits) {
  // 4096 flows of one /16 into 8192 slots: a uniform choice leaves
  // 8192 * (1 - e^-0.5) = 3223 slots in use on average, 3223 +- 30.
  constexpr uint32_t capacity = 8192, keys = 4096;
  std::vector<uint8_t> hit(capacity);
  uint32_t used = 0;
  for (uint32_t i = 0; i < keys; ++i) {
    const uint32_t s = home_slot(key_of(i), capacity);
    used += hit[s] == 0;
    hit[s] = 1;
  }
  EXPECT_GT(used, 3100u);
  EXPECT_LT(used, 3350u);

  // Every single-bit and two-bit change of a key moves its low 32 bits,
  // the single-bit ones by half of them on average (avalanche).
  flow_key base = key_of(12345);
  base.tunnel = gnio::device::encap_kind::vxlan;
  base.tunnel_id = 0x00abcdef;
  const uint64_t h0 = gnio::device::flow_key_hash64(base);
  auto flipped = [&base](std::initializer_list<uint32_t> bits) {
    flow_key k = base;
    auto* b = reinterpret_cast<uint8_t*>(&k);
    for (uint32_t bit : bits) b[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    return gnio::device::flow_key_hash64(k);
  };
  constexpr uint32_t nbits = sizeof(flow_key) * 8;
  uint64_t changed = 0;
  for (uint32_t i = 0; i < nbits; ++i) {
    const uint64_t d = (flipped({i}) ^ h0) & 0xffffffffu;
    ASSERT_NE(d, 0u) << "bit " << i;
    changed += static_cast<uint64_t>(__builtin_popcountll(d));
    for (uint32_t j = i + 1; j < nbits; ++j)
      ASSERT_NE((flipped({i, j}) ^ h0) & 0xffffffffu, 0u) << "bits " << i << " and " << j;
  }
  const double mean = static_cast<double>(changed) / nbits;
  EXPECT_GT(mean, 14.0);
  EXPECT_LT(mean, 18.0);
}

// The max_probe slots from a key's hash hold other keys and the next one is
// empty: the bounded search stops short of that empty slot (it looked at
// exactly max_probe slots), the unbounded one claims it.
TEST(FlowTable, BoundedSearchGivesUpAfterMaxProbeSlots) {
  constexpr uint32_t capacity = 1024;
  constexpr uint32_t max_probe = gnio::device::flow_table_max_probe;
  std::vector<flow_entry> t(capacity);
  const flow_key k = key_of(7);
  const uint32_t h = home_slot(k, capacity);
  for (uint32_t i = 0; i < max_probe; ++i) {
    flow_entry& e = t[(h + i) & (capacity - 1)];
    e.state = gnio::device::flow_slot_used;
    e.key = key_of(100000 + i);  // any other key: the search compares keys only
  }
  const uint32_t next = (h + max_probe) & (capacity - 1);

  bool fresh = true;
  EXPECT_EQ(gnio::device::flow_slot_find_or_claim(t.data(), capacity, k, &fresh, max_probe), nullptr);
  EXPECT_FALSE(fresh);
  EXPECT_EQ(t[next].state, gnio::device::flow_slot_empty);  // not claimed: the search stopped before it
  EXPECT_EQ(used_slots(t), max_probe);
  EXPECT_EQ(
      gnio::device::flow_table_update(t.data(), capacity, k, gnio::device::flow_update{60, 0, 0, 0, 0}, max_probe), -1);
  EXPECT_EQ(gnio::device::flow_table_add(t.data(), capacity, k, 60, max_probe), -1);
  EXPECT_EQ(t[next].state, gnio::device::flow_slot_empty);

  // One slot more and it fits.
  EXPECT_EQ(gnio::device::flow_slot_find_or_claim(t.data(), capacity, k, &fresh, max_probe + 1), &t[next]);
  EXPECT_TRUE(fresh);
}

// A table smaller than the bound is searched once round, never more.
TEST(FlowTable, AFullTableSmallerThanTheBoundIsSearchedOnce) {
  constexpr uint32_t capacity = 16;
  std::vector<flow_entry> t(capacity);
  for (uint32_t i = 0; i < 1000 && used_slots(t) < capacity; ++i)
    (void)gnio::device::flow_table_add(t.data(), capacity, key_of(i), 1, gnio::device::flow_table_max_probe);
  ASSERT_EQ(used_slots(t), capacity);
  EXPECT_EQ(gnio::device::flow_table_add(t.data(), capacity, key_of(5000), 1, gnio::device::flow_table_max_probe), -1);
}

// More keys than slots, each added twice, with the bound: a key's two adds
// agree (placed, then found; or full both times), so what is counted
// as full is exactly the packets of the keys with no slot, and every packet
// is in a slot or in that count.
TEST(FlowTable, BoundedAddsFindEveryPlacedKeyAndCountTheRestExactly) {
  constexpr uint32_t capacity = 4096, keys = 3 * capacity;
  std::vector<flow_entry> t(capacity);
  std::vector<int> first(keys);
  uint64_t full = 0, placed = 0;
  for (uint32_t i = 0; i < keys; ++i) {
    first[i] = gnio::device::flow_table_add(t.data(), capacity, key_of(i), 100, gnio::device::flow_table_max_probe);
    full += first[i] < 0;
    placed += first[i] > 0;
  }
  for (uint32_t i = 0; i < keys; ++i) {
    const int again =
        gnio::device::flow_table_add(t.data(), capacity, key_of(i), 100, gnio::device::flow_table_max_probe);
    EXPECT_EQ(again, first[i] < 0 ? -1 : 0) << "key " << i;
    full += again < 0;
  }
  EXPECT_EQ(placed, used_slots(t));
  EXPECT_EQ(full, 2 * (keys - placed));
  uint64_t packets = 0;
  for (const auto& e : t)
    if (e.state == gnio::device::flow_slot_used) {
      EXPECT_EQ(e.packets, 2u);
      EXPECT_EQ(e.bytes, 200u);
      packets += e.packets;
    }
  EXPECT_EQ(packets + full, 2u * keys);
  // Linear probing with a bound of 64 fills most of the table before it
  // turns keys away (a property of the hash and the bound, not of timing).
  EXPECT_GT(placed, capacity * 9 / 10);
}

// An entry keyed by a short name, as pp's DNS name table is.
struct name_entry {
  uint32_t state;
  uint32_t len;
  uint64_t hash;
  char name[16];
};

struct name_key {
  char bytes[16];
  uint32_t len;
};

name_key name_of(uint32_t i) {
  name_key k{};
  k.len = static_cast<uint32_t>(std::snprintf(k.bytes, sizeof k.bytes, "n%u", i));
  return k;
}

name_entry* add_name(std::vector<name_entry>& t, uint32_t i, bool* fresh, uint32_t max_probe) {
  // A weak hash (four names share each home slot) so that threads race for
  // the same slots and search past each other's keys.
  const name_key k = name_of(i);
  const uint64_t h = (i / 4) * 4;
  return gnio::device::slot_find_or_claim(
      t.data(), static_cast<uint32_t>(t.size()), h,
      [&](const name_entry& e) { return e.len == k.len && std::memcmp(e.name, k.bytes, k.len) == 0; },
      [&](name_entry& e) {
        e.len = k.len;
        e.hash = h;
        std::memcpy(e.name, k.bytes, k.len);
      },
      fresh, max_probe);
}

// Threads add the same names at once, each in its own order, some slots
// given back beforehand (flow_slot_free, as stream_table_sweep leaves them):
// every name is claimed by exactly one thread, lands in one slot, and every
// thread's lookups return that slot; names that found the bound full are
// full for every thread.
// Capture times: threads adding the packets of a few flows, each thread its
// share of every flow's timestamps out of order, leave each entry with the
// earliest and latest; a packet without a timestamp (0) leaves them alone,
// and flow_table_add records none.
TEST(FlowTable, FirstAndLastSeenAreTheEarliestAndLatestCaptureTimes) {
  constexpr uint32_t capacity = 64, flows = 8, per_flow = 4000, threads = 4;
  std::vector<flow_entry> t(capacity);
  std::vector<std::thread> ts;
  for (uint32_t th = 0; th < threads; ++th)
    ts.emplace_back([&, th] {
      for (uint32_t n = th; n < per_flow; n += threads)
        for (uint32_t f = 0; f < flows; ++f) {
          // Times from 1000 + f to 1000 + f + (per_flow - 1) * 10, in a scrambled order.
          const uint64_t ts_ns = 1000 + f + uint64_t{(n * 7919u) % per_flow} * 10;
          gnio::device::flow_update u{};
          u.wire_bytes = 60;
          u.ts_ns = n % 5 == 1 ? 0 : ts_ns;
          ASSERT_GE(gnio::device::flow_table_update(t.data(), capacity, key_of(f), u), 0);
        }
    });
  for (auto& x : ts) x.join();
  uint32_t seen = 0;
  for (const auto& e : t) {
    if (e.state != gnio::device::flow_slot_used) continue;
    ++seen;
    const uint64_t f = e.key.src_port - 1024u;
    EXPECT_EQ(e.packets, per_flow);
    uint64_t lo = UINT64_MAX, hi = 0;
    for (uint32_t n = 0; n < per_flow; ++n)
      if (n % 5 != 1) {
        lo = std::min<uint64_t>(lo, 1000 + f + uint64_t{(n * 7919u) % per_flow} * 10);
        hi = std::max<uint64_t>(hi, 1000 + f + uint64_t{(n * 7919u) % per_flow} * 10);
      }
    EXPECT_EQ(e.first_ns, lo) << "flow " << f;
    EXPECT_EQ(e.last_ns, hi) << "flow " << f;
  }
  EXPECT_EQ(seen, flows);

  std::vector<flow_entry> u(capacity);
  ASSERT_EQ(gnio::device::flow_table_add(u.data(), capacity, key_of(1), 60), 1);
  for (const auto& e : u)
    if (e.state == gnio::device::flow_slot_used) EXPECT_EQ(e.first_ns + e.last_ns, 0u);
}

TEST(SlotTable, ConcurrentClaimsOfOtherKeysPlaceEachKeyOnce) {
  constexpr uint32_t capacity = 1024, names = 900, threads = 4, max_probe = 64;
  std::vector<name_entry> t(capacity);
  for (uint32_t i = 0; i < capacity; i += 7) t[i].state = gnio::device::flow_slot_free;
  std::vector<std::vector<name_entry*>> got(threads, std::vector<name_entry*>(names));
  std::vector<std::atomic<uint32_t>> claims(names);
  std::atomic<bool> go{false};
  std::vector<std::thread> pool;
  for (uint32_t w = 0; w < threads; ++w)
    pool.emplace_back([&, w] {
      while (!go.load()) std::this_thread::yield();
      for (uint32_t round = 0; round < 2; ++round)
        for (uint32_t j = 0; j < names; ++j) {
          const uint32_t i = (w % 2 == 0) ? (j * 7 + w) % names : names - 1 - (j * 13 + w) % names;
          bool fresh = false;
          name_entry* e = add_name(t, i, &fresh, max_probe);
          if (fresh) claims[i].fetch_add(1);
          if (round == 0) got[w][i] = e;
          else EXPECT_EQ(e, got[w][i]) << "name " << i << ": the second lookup found another slot";
        }
    });
  go.store(true);
  for (auto& th : pool) th.join();

  uint32_t placed = 0;
  for (uint32_t i = 0; i < names; ++i) {
    for (uint32_t w = 1; w < threads; ++w) EXPECT_EQ(got[w][i], got[0][i]) << "name " << i;
    EXPECT_EQ(claims[i].load(), got[0][i] != nullptr ? 1u : 0u) << "name " << i;
    placed += got[0][i] != nullptr;
  }
  uint32_t used = 0;
  for (const auto& e : t) used += e.state == gnio::device::flow_slot_used;
  EXPECT_EQ(used, placed);  // no name took two slots
  EXPECT_GT(placed, names / 2);
  for (uint32_t i = 0; i < names; ++i) {
    if (got[0][i] == nullptr) continue;
    const name_key k = name_of(i);
    ASSERT_EQ(got[0][i]->len, k.len);
    EXPECT_EQ(std::memcmp(got[0][i]->name, k.bytes, k.len), 0);
  }
}

}  // namespace

// flow_table_update keeps the IP bytes and the earliest and latest capture
// time whatever order the packets come in, from threads at once too; a packet
// without a timestamp (0) leaves the times alone.
TEST(FlowTable, UpdateKeepsIpBytesAndTheFirstAndLastCaptureTime) {
  constexpr uint32_t capacity = 64;
  std::vector<flow_entry> t(capacity);
  const flow_key k = key_of(3);
  constexpr uint64_t t0 = 1'700'000'000'000'000'000ull;
  constexpr uint32_t threads = 4, per_thread = 2000;
  std::vector<std::thread> ts;
  for (uint32_t w = 0; w < threads; ++w)
    ts.emplace_back([&, w] {
      for (uint32_t i = 0; i < per_thread; ++i) {
        gnio::device::flow_update u{};
        u.wire_bytes = 74;
        u.ip_bytes = 60;
        // Each thread walks its own times backwards and forwards.
        u.ts_ns = i % 7 == 3 ? 0 : t0 + 1000 * ((i * 7919 + w * 31) % (threads * per_thread)) + 1;
        ASSERT_GE(gnio::device::flow_table_update(t.data(), capacity, k, u), 0);
      }
    });
  for (auto& th : ts) th.join();
  const flow_entry* e = nullptr;
  for (const auto& x : t)
    if (x.state == gnio::device::flow_slot_used) e = &x;
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->packets, uint64_t{threads} * per_thread);
  EXPECT_EQ(e->bytes, uint64_t{threads} * per_thread * 74);
  EXPECT_EQ(e->ip_bytes, uint64_t{threads} * per_thread * 60);
  uint64_t lo = ~uint64_t{0}, hi = 0;
  for (uint32_t w = 0; w < threads; ++w)
    for (uint32_t i = 0; i < per_thread; ++i) {
      if (i % 7 == 3) continue;
      const uint64_t v = t0 + 1000 * ((i * 7919 + w * 31) % (threads * per_thread)) + 1;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  EXPECT_EQ(e->first_ns, lo);
  EXPECT_EQ(e->last_ns, hi);
}

// The outermost IP datagram's length from its header, without the Ethernet
// header, VLAN tags and padding: what softflowd and IPFIX's octetDeltaCount
// count.
TEST(FlowTable, IpDatagramBytesSkipLayer2AndPadding) {
  // Ethernet, one 802.1Q tag, IPv4 with total length 28 (UDP with no
  // payload), padded to the 60-byte minimum frame.
  std::vector<uint8_t> f(60, 0);
  f[12] = 0x81;
  f[13] = 0x00;
  f[15] = 5;  // VID 5
  f[16] = 0x08;
  f[17] = 0x00;
  uint8_t* ip = f.data() + 18;
  ip[0] = 0x45;
  ip[3] = 28;
  ip[8] = 64;
  ip[9] = 17;
  ip[12] = 10;
  ip[15] = 1;
  ip[16] = 10;
  ip[19] = 2;
  uint8_t* udp = ip + 20;
  udp[1] = 53;
  udp[3] = 53;
  udp[5] = 8;
  gnio::device::parsed_pkt p{};
  (void)gnio::device::parse(f.data(), static_cast<uint32_t>(f.size()), p);
  ASSERT_EQ(p.l3, gnio::device::l3_kind::ipv4);
  EXPECT_EQ(gnio::device::ip_datagram_bytes(p, f.data(), 60, 64), 28u);  // wire 64: the FCS is not IP either
  // Not IP: 0.
  gnio::device::parsed_pkt none{};
  EXPECT_EQ(gnio::device::ip_datagram_bytes(none, f.data(), 60, 60), 0u);
}
