// SPDX-License-Identifier: Apache-2.0
// The flow table of flow_count (gnio/device/flow_table.hpp) fed the way
// flow_count's kernel feeds it: parse each frame, make its flow key, add it.
//
// Input: a sequence of frames, each a 2-byte big-endian length and that many
// bytes (a short last frame takes what is left). The table is small (64
// slots) so that it also fills up. Checks against a plain reference count:
// every packet lands in exactly one flow or is counted as table-full, a key
// is new exactly once, the per-flow packets and bytes add up to the totals,
// no key occupies two slots, and the canonical key of either direction is
// the same flow.
#include <gnio/device/flow_table.hpp>

#include <cstring>

#include "check.hpp"

using namespace gnio::device;

namespace {

constexpr uint32_t capacity = 64;
constexpr uint32_t max_frames = 64;

flow_entry table[capacity];

// Reference: distinct keys in arrival order and their counts.
struct ref_flow {
  flow_key key;
  uint64_t packets, bytes;
  bool in_table;
};
ref_flow ref[max_frames];

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::memset(table, 0, sizeof table);
  uint32_t num_ref = 0;
  uint64_t packets = 0, bytes = 0, full = 0, full_bytes = 0, fresh = 0;
  size_t pos = 0;
  for (uint32_t n = 0; n < max_frames && pos < size; ++n) {
    uint32_t flen = size - pos >= 2 ? (static_cast<uint32_t>(data[pos]) << 8 | data[pos + 1]) : 0;
    pos += size - pos >= 2 ? 2 : size - pos;
    if (flen > size - pos) flen = static_cast<uint32_t>(size - pos);
    const uint8_t* f = data + pos;
    pos += flen;

    parsed_pkt pp;
    (void)parse(f, flen, pp);
    const flow_key k = canonical_flow_key(make_flow_key(pp));
    // The other direction of the same conversation has the same canonical key.
    flow_key rev = make_flow_key(pp);
    for (uint32_t i = 0; i < 16; ++i) std::swap(rev.src[i], rev.dst[i]);
    std::swap(rev.src_port, rev.dst_port);
    GNIO_FUZZ_CHECK(canonical_flow_key(rev) == k);

    const uint32_t wire = flen + 4;  // as if the FCS were counted
    const int r = flow_table_add(table, capacity, k, wire);
    GNIO_FUZZ_CHECK(r >= -1 && r <= 1);
    ++packets;
    bytes += wire;

    uint32_t j = 0;
    while (j < num_ref && !(ref[j].key == k)) ++j;
    const bool known = j < num_ref;
    if (!known) ref[num_ref++] = ref_flow{k, 0, 0, false};
    ref_flow& rf = ref[j];
    if (r == 1) {
      GNIO_FUZZ_CHECK(!known);
      rf.in_table = true;
      ++fresh;
    } else if (r == 0) {
      GNIO_FUZZ_CHECK(known && rf.in_table);
    } else {
      // Full only when every slot holds another key.
      GNIO_FUZZ_CHECK(!rf.in_table && fresh == capacity);
      ++full;
      full_bytes += wire;
    }
    if (r >= 0) {
      ++rf.packets;
      rf.bytes += wire;
    }
  }

  uint64_t t_packets = 0, t_bytes = 0, used = 0;
  for (uint32_t i = 0; i < capacity; ++i) {
    const flow_entry& e = table[i];
    GNIO_FUZZ_CHECK(e.state == flow_slot_empty || e.state == flow_slot_used);
    if (e.state != flow_slot_used) {
      GNIO_FUZZ_CHECK(e.packets == 0 && e.bytes == 0);
      continue;
    }
    ++used;
    t_packets += e.packets;
    t_bytes += e.bytes;
    GNIO_FUZZ_CHECK(e.packets >= 1);
    for (uint32_t j = i + 1; j < capacity; ++j)
      GNIO_FUZZ_CHECK(!(table[j].state == flow_slot_used && table[j].key == e.key));
    uint32_t j = 0;
    while (j < num_ref && !(ref[j].key == e.key)) ++j;
    GNIO_FUZZ_CHECK(j < num_ref && ref[j].in_table);
    GNIO_FUZZ_CHECK(ref[j].packets == e.packets && ref[j].bytes == e.bytes);
  }
  GNIO_FUZZ_CHECK(used == fresh);
  GNIO_FUZZ_CHECK(t_packets + full == packets);
  GNIO_FUZZ_CHECK(t_bytes + full_bytes == bytes);
  for (uint32_t j = 0; j < num_ref; ++j) {
    if (!ref[j].in_table) GNIO_FUZZ_CHECK(ref[j].packets == 0);
  }
  return 0;
}
