// SPDX-License-Identifier: Apache-2.0
// Fragment reassembly (gnio/device/pkt/frag.hpp) fed the way a kernel body
// feeds it: parse each frame, hand it to frag_input with a clock that moves
// on.
//
// Input: a sequence of records, at most 256. A record whose first byte is
// even is a frame: a 2-byte big-endian length and that many bytes (a short
// last one takes what is left), parsed with parse(). An odd first byte is a
// fragment made here, so that datagrams actually complete: 7 more bytes give
// the family (IPv4, IPv6, IPv6 behind a hop-by-hop header), one of 4 ids,
// the offset and length in 8-byte units, MF, a byte to fill the data with
// (or, when 0, bytes that depend only on the position) and how far the clock
// moves. The table has 8 slots, max_datagram 1500, a 1000 ns timeout.
//
// Checks: nothing is read or written out of bounds (ASan); not_fragment
// exactly for frames that are no IPv4/IPv6 fragment; every completed
// datagram lies in the table's buffers, is at most max_datagram, and
// parse_l3 reads it as an unfragmented packet of its family whose length
// fields match it (an IPv4 header checksum that verifies); a made datagram
// (no L4 protocol) parses without error; the counters add up: each call
// adds 1 to fragments unless not_fragment, each dropped adds 1 to exactly one
// of duplicates, overlapping, over_limit and bad, each complete 1 to
// reassembled, an incomplete at most 1 to overlapping (IPv4); frag_pending
// never exceeds the capacity; expiring everything at the end empties the
// table and counts each pending datagram as timed out.
#include <gnio/device/pkt/frag.hpp>

#include <cstring>
#include <vector>

#include "check.hpp"

using namespace gnio::device;

namespace {

constexpr uint32_t capacity = 8;
constexpr uint32_t max_datagram = 1500;
constexpr uint64_t timeout_ns = 1000;
constexpr uint32_t max_records = 256;

alignas(64) uint8_t memory[1 << 17];
uint8_t frame[2048];

// Builds a fragment from 7 bytes of description into `frame`; returns its length.
uint32_t make_fragment(const uint8_t* r) {
  const uint32_t family = r[0] % 3;  // 0 IPv4, 1 IPv6, 2 IPv6 + hop-by-hop
  const uint32_t id = (r[0] >> 2) & 3;
  const uint32_t off = (static_cast<uint32_t>(r[1] & 0x1f) << 8 | r[2]) % 200 * 8;
  const uint32_t len = (r[3] % 40) * 8 + ((r[4] & 0x80) ? (r[4] & 7) : 0);  // sometimes not a multiple of 8
  const bool more = r[4] & 1;
  const uint8_t fill = r[5];
  uint8_t* f = frame;
  std::memset(f, 0, 14);
  f[0] = 2;
  f[6] = 2;
  uint32_t n = 14, data_at;
  if (family == 0) {
    put16(f + 12, ethertype_ipv4);
    uint8_t* h = f + 14;
    std::memset(h, 0, 20);
    h[0] = 0x45;
    put16(h + 2, 20 + len);
    put16(h + 4, 0x100 + id);
    put16(h + 6, (more ? 0x2000u : 0u) | (off / 8));
    h[8] = 64;
    h[9] = 253;  // experimental: parse_l3 decodes no L4 header
    h[12] = 10, h[15] = 1, h[16] = 10, h[19] = 2;
    put16(h + 10, ipv4_header_checksum(h, 20));
    data_at = 34;
  } else {
    put16(f + 12, ethertype_ipv6);
    uint8_t* h = f + 14;
    std::memset(h, 0, 40);
    h[0] = 0x60;
    h[7] = 64;
    h[8] = 0x20, h[23] = 1, h[24] = 0x20, h[39] = 2;
    uint32_t at = 54;
    if (family == 2) {
      h[6] = ipproto_hopopts;
      std::memset(f + at, 0, 8);
      f[at] = ipproto_fragment;
      f[at + 2] = 1, f[at + 3] = 4;
      at += 8;
    } else {
      h[6] = ipproto_fragment;
    }
    f[at] = ipproto_none;
    f[at + 1] = 0;
    put16(f + at + 2, off | (more ? 1u : 0u));
    f[at + 4] = 0xab, f[at + 5] = 0, f[at + 6] = 0, f[at + 7] = static_cast<uint8_t>(id);
    at += 8;
    put16(h + 4, at - 54 + len);
    data_at = at;
  }
  for (uint32_t i = 0; i < len; ++i) f[data_at + i] = fill ? fill : static_cast<uint8_t>((off + i) * 7 + id);
  n = data_at + len;
  return n;
}

bool l4_error(pkt_error e) {
  return e == pkt_error::none || e == pkt_error::truncated_l4 || e == pkt_error::bad_tcp_offset ||
         e == pkt_error::bad_udp_length;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  frag_table t{};
  GNIO_FUZZ_CHECK(frag_table_bytes(capacity, max_datagram) <= sizeof memory);
  GNIO_FUZZ_CHECK(frag_table_init(memory, sizeof memory, capacity, max_datagram, timeout_ns, t));
  frag_stats st{};
  uint64_t now = 1;
  size_t pos = 0;
  for (uint32_t n = 0; n < max_records && pos < size; ++n) {
    const uint8_t kind = data[pos++];
    uint32_t flen;
    bool made = false;
    if (kind & 1) {
      if (size - pos < 7) break;
      flen = make_fragment(data + pos);
      now += data[pos + 6] * 16u;  // up to about 4 timeouts per record
      pos += 7;
      made = true;
    } else {
      flen = size - pos >= 2 ? (static_cast<uint32_t>(data[pos]) << 8 | data[pos + 1]) : 0;
      pos += size - pos >= 2 ? 2 : size - pos;
      if (flen > size - pos) flen = static_cast<uint32_t>(size - pos);
      if (flen > sizeof frame) flen = sizeof frame;
      std::memcpy(frame, data + pos, flen);
      pos += flen;
      now += kind * 4u;
    }

    parsed_pkt p;
    (void)parse(frame, flen, p);
    const frag_stats before = st;
    const uint8_t* out = reinterpret_cast<const uint8_t*>(1);
    uint32_t out_len = 12345;
    const frag_result r = frag_input(t, frame, flen, p, now, st, &out, &out_len);

    const bool is_frag = p.is_fragment && (p.l3 == l3_kind::ipv4 || (p.l3 == l3_kind::ipv6 && p.ipv6.has_frag_header));
    GNIO_FUZZ_CHECK((r == frag_result::not_fragment) == !is_frag);
    GNIO_FUZZ_CHECK(st.timed_out >= before.timed_out);
    const uint64_t d_frag = st.fragments - before.fragments, d_done = st.reassembled - before.reassembled;
    const uint64_t d_dup = st.duplicates - before.duplicates, d_ovl = st.overlapping - before.overlapping;
    const uint64_t d_over = st.over_limit - before.over_limit, d_bad = st.bad - before.bad;
    GNIO_FUZZ_CHECK(d_frag == (r == frag_result::not_fragment ? 0u : 1u));
    GNIO_FUZZ_CHECK(d_done == (r == frag_result::complete ? 1u : 0u));
    if (r == frag_result::dropped) {
      GNIO_FUZZ_CHECK(d_dup + d_ovl + d_over + d_bad == 1);
    } else {
      GNIO_FUZZ_CHECK(d_dup + d_over + d_bad == 0);
      GNIO_FUZZ_CHECK(d_ovl == 0 || (d_ovl == 1 && p.l3 == l3_kind::ipv4 && r != frag_result::not_fragment));
    }
    GNIO_FUZZ_CHECK(frag_pending(t) <= capacity);

    if (r != frag_result::complete) {
      GNIO_FUZZ_CHECK(out == nullptr && out_len == 0);
      continue;
    }
    GNIO_FUZZ_CHECK(out_len <= max_datagram && out_len >= 20);
    GNIO_FUZZ_CHECK(out >= t.buffers && out + out_len <= memory + sizeof memory);
    parsed_pkt q;
    const bool ok = parse_l3(out, out_len, q);
    // A datagram that carries another IP packet (IP in IP, GRE) is walked
    // into: its own header is then the first encapsulation's.
    if (q.encap_count != 0) {
      GNIO_FUZZ_CHECK(q.encap[0].outer_l3 == p.l3 && q.encap[0].outer_l3_off == 0);
      continue;
    }
    GNIO_FUZZ_CHECK(q.l3 == p.l3);
    if (made) GNIO_FUZZ_CHECK(ok && !q.is_fragment && q.payload_off + q.payload_len == out_len);
    if (q.l3 == l3_kind::ipv4) {
      GNIO_FUZZ_CHECK(!q.is_fragment && l4_error(q.error));
      // The datagram's header is its first fragment's (RFC 791): the
      // completing fragment's options may differ unless it is that one.
      GNIO_FUZZ_CHECK(q.ipv4.total_length == out_len && q.ipv4.hdr_len >= 20);
      if (p.ipv4.frag_offset == 0) GNIO_FUZZ_CHECK(q.ipv4.hdr_len == p.ipv4.hdr_len);
      GNIO_FUZZ_CHECK(ipv4_checksum_ok(out, out_len, q));
      GNIO_FUZZ_CHECK(q.ipv4.src == p.ipv4.src && q.ipv4.dst == p.ipv4.dst && q.ipv4.id == p.ipv4.id);
    } else {
      GNIO_FUZZ_CHECK(q.ipv6.payload_length + 40u == out_len);
      GNIO_FUZZ_CHECK(std::memcmp(q.ipv6.src, p.ipv6.src, 16) == 0 && std::memcmp(q.ipv6.dst, p.ipv6.dst, 16) == 0);
      // Behind the removed Fragment header the payload may start with more
      // extension headers (another Fragment header even), which may be
      // broken; the fixed header and the length never are.
      GNIO_FUZZ_CHECK(q.error != pkt_error::truncated_l3 && q.error != pkt_error::truncated_payload);
    }
  }
  const uint32_t pending = frag_pending(t);
  const uint64_t timed_out = st.timed_out;
  frag_expire(t, ~0ull, st);
  GNIO_FUZZ_CHECK(frag_pending(t) == 0);
  GNIO_FUZZ_CHECK(st.timed_out == timed_out + pending);
  return 0;
}
