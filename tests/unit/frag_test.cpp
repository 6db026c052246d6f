// SPDX-License-Identifier: Apache-2.0
// IPv4/IPv6 fragment reassembly (gnio/device/pkt/frag.hpp): datagrams built
// here, cut into fragments here, fed in every order and with duplicates,
// overlaps, gaps, timeouts and limits; the reassembled bytes must equal the
// datagram before it was cut. Then a scapy-made capture
// (tests/data/frag/make_frag.py) against the frames where tshark 4.0 shows a
// reassembled datagram (tests/data/frag/frag.tshark.tsv, checked against
// tshark itself where it is installed).
#include <gnio/device/pkt/frag.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/frames.hpp"
#include "support/process.hpp"

using namespace gnio::device;

namespace {

using bytes = std::vector<uint8_t>;

void put16(bytes& b, size_t at, uint32_t v) {
  b[at] = static_cast<uint8_t>(v >> 8);
  b[at + 1] = static_cast<uint8_t>(v);
}

// A DNS response with `answers` A records for "frag.example", as the payload of the datagrams below.
bytes dns_response(uint16_t id, uint32_t answers) {
  bytes m = {static_cast<uint8_t>(id >> 8), static_cast<uint8_t>(id), 0x85, 0x80, 0, 1, 0, 0, 0, 0, 0, 0};
  put16(m, 6, answers);
  const uint8_t qname[] = {4, 'f', 'r', 'a', 'g', 7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 0};
  m.insert(m.end(), qname, qname + sizeof qname);
  m.insert(m.end(), {0, 1, 0, 1});
  for (uint32_t i = 0; i < answers; ++i)
    m.insert(m.end(), {0xc0, 12, 0, 1, 0, 1, 0, 0, 1, 0x2c, 0, 4, 192, 0, 2, static_cast<uint8_t>(i)});
  return m;
}

// A whole IPv4/UDP datagram from port 53, checksums filled in.
bytes ipv4_udp(uint16_t id, const bytes& payload, const bytes& options = {}) {
  const uint32_t hl = 20 + static_cast<uint32_t>(options.size());
  bytes d(hl + 8 + payload.size());
  d[0] = static_cast<uint8_t>(0x40 | (hl / 4));
  put16(d, 2, static_cast<uint32_t>(d.size()));
  put16(d, 4, id);
  d[8] = 64;
  d[9] = ipproto_udp;
  const uint8_t src[] = {192, 0, 2, 53}, dst[] = {198, 51, 100, 7};
  std::copy(src, src + 4, d.begin() + 12);
  std::copy(dst, dst + 4, d.begin() + 16);
  std::copy(options.begin(), options.end(), d.begin() + 20);
  put16(d, 10, ipv4_header_checksum(d.data(), hl));
  uint8_t* u = d.data() + hl;
  put16(d, hl, 53);
  put16(d, hl + 2, 40001);
  put16(d, hl + 4, static_cast<uint32_t>(8 + payload.size()));
  std::copy(payload.begin(), payload.end(), d.begin() + hl + 8);
  const uint16_t c = l4_checksum_ipv4(0xc0000235u, 0xc6336407u, ipproto_udp, u, 8 + payload.size());
  put16(d, hl + 6, c == 0 ? 0xffff : c);
  return d;
}

// A whole IPv6/UDP datagram, optionally with an 8-byte hop-by-hop header first.
bytes ipv6_udp(const bytes& payload, bool hbh = false) {
  const uint32_t ext = hbh ? 8 : 0;
  bytes d(40 + ext + 8 + payload.size());
  d[0] = 0x60;
  put16(d, 4, static_cast<uint32_t>(d.size() - 40));
  d[6] = hbh ? ipproto_hopopts : ipproto_udp;
  d[7] = 64;
  d[8] = 0x20, d[9] = 0x01, d[10] = 0x0d, d[11] = 0xb8, d[23] = 0x53;
  d[24] = 0x20, d[25] = 0x01, d[26] = 0x0d, d[27] = 0xb8, d[39] = 0x07;
  if (hbh) {
    d[40] = ipproto_udp;
    d[41] = 0;
    d[42] = 1, d[43] = 4;  // PadN over the remaining 4 bytes
  }
  const uint32_t u = 40 + ext;
  put16(d, u, 53);
  put16(d, u + 2, 40001);
  put16(d, u + 4, static_cast<uint32_t>(8 + payload.size()));
  std::copy(payload.begin(), payload.end(), d.begin() + u + 8);
  const uint16_t c = l4_checksum_ipv6(d.data() + 8, d.data() + 24, ipproto_udp, d.data() + u, 8 + payload.size());
  put16(d, u + 6, c == 0 ? 0xffff : c);
  return d;
}

struct piece {
  uint32_t off, len;
  bool more;
};

std::vector<piece> cut(uint32_t total, uint32_t size) {
  std::vector<piece> out;
  for (uint32_t o = 0; o < total; o += size) out.push_back({o, std::min(size, total - o), o + size < total});
  return out;
}

bytes ether(const bytes& ip, uint16_t vlan = 0) {
  bytes f = {2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1};
  if (vlan) f.insert(f.end(), {0x81, 0x00, static_cast<uint8_t>(vlan >> 8), static_cast<uint8_t>(vlan)});
  const uint16_t et = (ip[0] >> 4) == 4 ? ethertype_ipv4 : ethertype_ipv6;
  f.insert(f.end(), {static_cast<uint8_t>(et >> 8), static_cast<uint8_t>(et)});
  f.insert(f.end(), ip.begin(), ip.end());
  return f;
}

// An IPv4 fragment of datagram d, in an Ethernet frame; `data` replaces its bytes when given.
bytes v4_frag(const bytes& d, piece p, const bytes* data = nullptr, uint16_t vlan = 0) {
  const uint32_t hl = (d[0] & 15u) * 4;
  bytes f(d.begin(), d.begin() + hl);
  if (data) f.insert(f.end(), data->begin(), data->end());
  else f.insert(f.end(), d.begin() + hl + p.off, d.begin() + hl + p.off + p.len);
  put16(f, 2, static_cast<uint32_t>(f.size()));
  put16(f, 6, (p.more ? 0x2000u : 0u) | (p.off / 8));
  put16(f, 10, 0);
  put16(f, 10, ipv4_header_checksum(f.data(), hl));
  return ether(f, vlan);
}

// An IPv6 fragment of datagram d (built by ipv6_udp): the Fragment header goes after the hop-by-hop header.
bytes v6_frag(const bytes& d, uint32_t id, piece p, const bytes* data = nullptr) {
  const bool hbh = d[6] == ipproto_hopopts;
  const uint32_t unfrag = hbh ? 48 : 40;
  bytes f(d.begin(), d.begin() + unfrag);
  f[hbh ? 40 : 6] = ipproto_fragment;
  f.insert(f.end(), {ipproto_udp, 0, static_cast<uint8_t>(p.off >> 8), static_cast<uint8_t>((p.off & 0xf8) | p.more),
                     static_cast<uint8_t>(id >> 24), static_cast<uint8_t>(id >> 16), static_cast<uint8_t>(id >> 8),
                     static_cast<uint8_t>(id)});
  if (data) f.insert(f.end(), data->begin(), data->end());
  else f.insert(f.end(), d.begin() + unfrag + p.off, d.begin() + unfrag + p.off + p.len);
  put16(f, 4, static_cast<uint32_t>(f.size() - 40));
  return ether(f);
}

// A table over its own memory, and a way to feed it frames.
struct table {
  std::vector<uint64_t> mem;
  frag_table t{};
  frag_stats st{};
  bytes last;  // the last reassembled datagram
  explicit table(uint32_t capacity = 16, uint32_t max_datagram = 2048, uint64_t timeout_ns = 1000) {
    mem.resize(frag_table_bytes(capacity, max_datagram) / 8 + 1);
    EXPECT_TRUE(frag_table_init(mem.data(), mem.size() * 8, capacity, max_datagram, timeout_ns, t));
  }
  frag_result feed(const bytes& frame, uint64_t now_ns = 0) {
    parsed_pkt p;
    (void)parse(frame.data(), static_cast<uint32_t>(frame.size()), p);
    const uint8_t* out = nullptr;
    uint32_t out_len = 0;
    const frag_result r =
        frag_input(t, frame.data(), static_cast<uint32_t>(frame.size()), p, now_ns, st, &out, &out_len);
    if (r == frag_result::complete) last.assign(out, out + out_len);
    else EXPECT_TRUE(out == nullptr && out_len == 0);
    return r;
  }
};

// The reassembled datagram parses as unfragmented UDP carrying DNS with a valid checksum.
void expect_parses(const bytes& d) {
  parsed_pkt p;
  ASSERT_TRUE(parse_l3(d.data(), static_cast<uint32_t>(d.size()), p)) << to_string(p.error);
  EXPECT_FALSE(p.is_fragment);
  EXPECT_EQ(p.l4, l4_kind::udp);
  EXPECT_TRUE(l4_checksum_ok(d.data(), static_cast<uint32_t>(d.size()), p));
  if (p.l3 == l3_kind::ipv4) EXPECT_TRUE(ipv4_checksum_ok(d.data(), static_cast<uint32_t>(d.size()), p));
  dns_header h;
  ASSERT_TRUE(dns_parse_header(d.data() + p.payload_off, p.payload_len, h));
  EXPECT_TRUE(dns_header_sane(h, p.payload_len));
}

// Feeds the fragments in the given order; the last must complete, the others not.
void expect_reassembles(const bytes& d, const std::vector<bytes>& frames, const std::vector<size_t>& order) {
  table tb;
  for (size_t i = 0; i < order.size(); ++i) {
    const frag_result r = tb.feed(frames[order[i]], i);
    ASSERT_EQ(r, i + 1 == order.size() ? frag_result::complete : frag_result::incomplete) << "fragment " << order[i];
  }
  EXPECT_EQ(tb.last, d);
  expect_parses(tb.last);
  EXPECT_EQ(tb.st.fragments, frames.size());
  EXPECT_EQ(tb.st.reassembled, 1u);
  EXPECT_EQ(tb.st.duplicates + tb.st.overlapping + tb.st.bad + tb.st.over_limit + tb.st.timed_out, 0u);
  EXPECT_EQ(frag_pending(tb.t), 0u);
}

std::vector<bytes> v4_frames(const bytes& d, uint32_t size) {
  std::vector<bytes> f;
  for (const piece& p : cut(static_cast<uint32_t>(d.size()) - (d[0] & 15u) * 4, size)) f.push_back(v4_frag(d, p));
  return f;
}
std::vector<bytes> v6_frames(const bytes& d, uint32_t id, uint32_t size) {
  const uint32_t unfrag = d[6] == ipproto_hopopts ? 48 : 40;
  std::vector<bytes> f;
  for (const piece& p : cut(static_cast<uint32_t>(d.size()) - unfrag, size)) f.push_back(v6_frag(d, id, p));
  return f;
}

std::vector<size_t> iota(size_t n) {
  std::vector<size_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = i;
  return v;
}

}  // namespace

TEST(frag, not_a_fragment_is_left_alone) {
  table tb;
  EXPECT_EQ(tb.feed(ether(ipv4_udp(1, dns_response(1, 2)))), frag_result::not_fragment);
  EXPECT_EQ(tb.feed(ether(ipv6_udp(dns_response(1, 2)))), frag_result::not_fragment);
  EXPECT_EQ(tb.st.fragments, 0u);
}

TEST(frag, ipv4_in_order_reverse_and_shuffled) {
  const bytes d = ipv4_udp(7, dns_response(7, 40));
  const auto f = v4_frames(d, 128);
  ASSERT_GE(f.size(), 5u);
  auto order = iota(f.size());
  expect_reassembles(d, f, order);
  std::reverse(order.begin(), order.end());
  expect_reassembles(d, f, order);
  std::mt19937 rng(42);
  for (int i = 0; i < 20; ++i) {
    std::shuffle(order.begin(), order.end(), rng);
    expect_reassembles(d, f, order);
  }
}

TEST(frag, ipv6_in_order_reverse_and_shuffled) {
  const bytes d = ipv6_udp(dns_response(9, 40));
  const auto f = v6_frames(d, 0xabcdef01, 96);
  auto order = iota(f.size());
  expect_reassembles(d, f, order);
  std::reverse(order.begin(), order.end());
  expect_reassembles(d, f, order);
  std::mt19937 rng(7);
  for (int i = 0; i < 20; ++i) {
    std::shuffle(order.begin(), order.end(), rng);
    expect_reassembles(d, f, order);
  }
}

TEST(frag, ipv4_options_are_kept) {
  // Record route with room for two addresses, then an end-of-list pad: 12 bytes.
  const bytes opts = {7, 11, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  const bytes d = ipv4_udp(11, dns_response(11, 20), opts);
  const auto f = v4_frames(d, 64);
  auto order = iota(f.size());
  std::reverse(order.begin(), order.end());
  expect_reassembles(d, f, order);
}

TEST(frag, ipv6_hop_by_hop_before_the_fragment_header) {
  const bytes d = ipv6_udp(dns_response(12, 20), true);
  const auto f = v6_frames(d, 77, 64);
  auto order = iota(f.size());
  std::rotate(order.begin(), order.begin() + 2, order.end());
  expect_reassembles(d, f, order);
}

TEST(frag, behind_a_vlan_tag) {
  const bytes d = ipv4_udp(13, dns_response(13, 20));
  std::vector<bytes> f;
  for (const piece& p : cut(static_cast<uint32_t>(d.size()) - 20, 80)) f.push_back(v4_frag(d, p, nullptr, 100));
  expect_reassembles(d, f, iota(f.size()));
}

TEST(frag, exact_duplicates_are_counted_and_dropped) {
  const bytes d = ipv4_udp(14, dns_response(14, 20));
  const auto f = v4_frames(d, 96);
  table tb;
  EXPECT_EQ(tb.feed(f[0]), frag_result::incomplete);
  EXPECT_EQ(tb.feed(f[0]), frag_result::dropped);
  EXPECT_EQ(tb.feed(f.back()), frag_result::incomplete);
  EXPECT_EQ(tb.feed(f.back()), frag_result::dropped);
  for (size_t i = 1; i + 1 < f.size(); ++i)
    EXPECT_EQ(tb.feed(f[i]), i + 2 == f.size() ? frag_result::complete : frag_result::incomplete);
  EXPECT_EQ(tb.last, d);
  EXPECT_EQ(tb.st.duplicates, 2u);
  EXPECT_EQ(tb.st.overlapping, 0u);
  EXPECT_EQ(tb.st.fragments, f.size() + 2);
}

TEST(frag, ipv4_overlap_keeps_the_bytes_received_first) {
  const bytes d = ipv4_udp(15, dns_response(15, 20));
  const uint32_t total = static_cast<uint32_t>(d.size()) - 20;
  {  // Same bytes, overlapping ranges: completes, counted as an overlap.
    table tb;
    EXPECT_EQ(tb.feed(v4_frag(d, {0, 96, true})), frag_result::incomplete);
    EXPECT_EQ(tb.feed(v4_frag(d, {64, 96, true})), frag_result::incomplete);
    EXPECT_EQ(tb.feed(v4_frag(d, {160, total - 160, false})), frag_result::complete);
    EXPECT_EQ(tb.last, d);
    EXPECT_EQ(tb.st.overlapping, 1u);
    EXPECT_EQ(tb.st.duplicates, 0u);
  }
  {  // Different bytes: those received first stay.
    const bytes junk(32, 0xee);
    table tb;
    EXPECT_EQ(tb.feed(v4_frag(d, {64, 32, true}, &junk)), frag_result::incomplete);
    EXPECT_EQ(tb.feed(v4_frag(d, {0, 96, true})), frag_result::incomplete);
    EXPECT_EQ(tb.feed(v4_frag(d, {96, total - 96, false})), frag_result::complete);
    EXPECT_EQ(tb.st.overlapping, 1u);
    bytes want = d;
    std::fill(want.begin() + 20 + 64, want.begin() + 20 + 96, 0xee);
    EXPECT_EQ(tb.last, want);
  }
}

TEST(frag, ipv6_overlap_drops_the_datagram) {
  const bytes d = ipv6_udp(dns_response(16, 20));
  const uint32_t total = static_cast<uint32_t>(d.size()) - 40;
  table tb;
  EXPECT_EQ(tb.feed(v6_frag(d, 5, {0, 96, true})), frag_result::incomplete);
  EXPECT_EQ(tb.feed(v6_frag(d, 5, {64, 96, true})), frag_result::dropped);
  EXPECT_EQ(tb.st.overlapping, 1u);
  EXPECT_EQ(frag_pending(tb.t), 0u);
  // What is still to come cannot complete: the dropped fragments are gone.
  EXPECT_EQ(tb.feed(v6_frag(d, 5, {160, total - 160, false})), frag_result::incomplete);
  EXPECT_EQ(tb.st.reassembled, 0u);
  EXPECT_EQ(frag_pending(tb.t), 1u);
}

TEST(frag, missing_fragment_times_out) {
  const bytes d = ipv4_udp(17, dns_response(17, 20));
  const auto f = v4_frames(d, 96);
  table tb(16, 2048, 1000);
  for (size_t i = 0; i < f.size(); ++i)
    if (i != 1) EXPECT_EQ(tb.feed(f[i], 100 + i), frag_result::incomplete);
  EXPECT_EQ(frag_pending(tb.t), 1u);
  frag_expire(tb.t, 1099, tb.st);  // 999 ns after the first fragment: not yet
  EXPECT_EQ(frag_pending(tb.t), 1u);
  frag_expire(tb.t, 1100, tb.st);
  EXPECT_EQ(frag_pending(tb.t), 0u);
  EXPECT_EQ(tb.st.timed_out, 1u);
  EXPECT_EQ(tb.st.reassembled, 0u);
}

TEST(frag, a_late_fragment_finds_its_datagram_expired) {
  const bytes d = ipv4_udp(18, dns_response(18, 20));
  const auto f = v4_frames(d, 96);
  table tb(16, 2048, 1000);
  for (size_t i = 0; i + 1 < f.size(); ++i) EXPECT_EQ(tb.feed(f[i], 0), frag_result::incomplete);
  // Looked at by the next fragment of the same datagram, the slot has expired: it starts over.
  EXPECT_EQ(tb.feed(f.back(), 1000), frag_result::incomplete);
  EXPECT_EQ(tb.st.timed_out, 1u);
  EXPECT_EQ(frag_pending(tb.t), 1u);
  // Within the timeout of the new start, the rest completes it.
  for (size_t i = 0; i + 1 < f.size(); ++i)
    EXPECT_EQ(tb.feed(f[i], 1500), i + 2 == f.size() ? frag_result::complete : frag_result::incomplete);
  EXPECT_EQ(tb.last, d);
}

TEST(frag, over_limit_datagram_too_long) {
  const bytes d = ipv4_udp(19, dns_response(19, 60));  // about 1000 bytes
  ASSERT_GT(d.size(), 512u);
  const auto f = v4_frames(d, 128);
  table tb(16, 512, 1000);
  size_t dropped = 0;
  for (const auto& x : f) dropped += tb.feed(x) == frag_result::dropped;
  EXPECT_EQ(tb.st.reassembled, 0u);
  EXPECT_GE(tb.st.over_limit, 1u);
  EXPECT_EQ(tb.st.over_limit, dropped);
  // A fragment past max_datagram drops what was held of its datagram.
  table t2(16, 512, 1000);
  EXPECT_EQ(t2.feed(f[0]), frag_result::incomplete);
  EXPECT_EQ(t2.feed(f.back()), frag_result::dropped);
  EXPECT_EQ(frag_pending(t2.t), 0u);
  EXPECT_EQ(t2.st.over_limit, 1u);
}

TEST(frag, over_limit_table_full_then_reused_after_timeout) {
  table tb(2, 2048, 1000);
  std::vector<bytes> d;
  for (uint16_t id = 1; id <= 3; ++id) d.push_back(ipv4_udp(id, dns_response(id, 20)));
  EXPECT_EQ(tb.feed(v4_frames(d[0], 96)[0], 0), frag_result::incomplete);
  EXPECT_EQ(tb.feed(v4_frames(d[1], 96)[0], 10), frag_result::incomplete);
  EXPECT_EQ(tb.feed(v4_frames(d[2], 96)[0], 20), frag_result::dropped);
  EXPECT_EQ(tb.st.over_limit, 1u);
  EXPECT_EQ(frag_pending(tb.t), 2u);
  // Once the first has expired, its slot takes the third datagram, which completes.
  const auto f = v4_frames(d[2], 96);
  for (size_t i = 0; i < f.size(); ++i)
    EXPECT_EQ(tb.feed(f[i], 1005), i + 1 == f.size() ? frag_result::complete : frag_result::incomplete);
  EXPECT_EQ(tb.last, d[2]);
  EXPECT_EQ(tb.st.timed_out, 1u);
  EXPECT_EQ(frag_pending(tb.t), 1u);
}

TEST(frag, inconsistent_fragments_are_bad) {
  const bytes d = ipv4_udp(20, dns_response(20, 20));
  const uint32_t total = static_cast<uint32_t>(d.size()) - 20;
  const bytes empty, odd(13, 1), some(16, 2);
  table tb;
  EXPECT_EQ(tb.feed(v4_frag(d, {0, 0, true}, &empty)), frag_result::dropped);      // no data
  EXPECT_EQ(tb.feed(v4_frag(d, {0, 13, true}, &odd)), frag_result::dropped);       // not a multiple of 8
  EXPECT_EQ(tb.feed(v4_frag(d, {65528, 16, true}, &some)), frag_result::dropped);  // past 65535
  EXPECT_EQ(tb.st.bad, 3u);
  EXPECT_EQ(frag_pending(tb.t), 0u);
  // A second last fragment with another end drops the datagram.
  EXPECT_EQ(tb.feed(v4_frag(d, {96, total - 96, false})), frag_result::incomplete);
  EXPECT_EQ(tb.feed(v4_frag(d, {8, 88, false})), frag_result::dropped);
  EXPECT_EQ(frag_pending(tb.t), 0u);
  // Data past the end a last fragment fixed.
  EXPECT_EQ(tb.feed(v4_frag(d, {8, 88, false})), frag_result::incomplete);
  EXPECT_EQ(tb.feed(v4_frag(d, {96, 96, true})), frag_result::dropped);
  EXPECT_EQ(tb.st.bad, 5u);
  // A truncated capture of a fragment.
  bytes cut_short = v4_frag(d, {0, 96, true});
  cut_short.resize(cut_short.size() - 10);
  EXPECT_EQ(tb.feed(cut_short), frag_result::dropped);
  EXPECT_EQ(tb.st.bad, 6u);
  EXPECT_EQ(tb.st.fragments, 8u);
}

TEST(frag, init_refuses_bad_layouts) {
  std::vector<uint64_t> mem(frag_table_bytes(4, 1500) / 8 + 1);
  frag_table t{};
  EXPECT_FALSE(frag_table_init(mem.data(), mem.size() * 8, 3, 1500, 1, t));
  EXPECT_FALSE(frag_table_init(mem.data(), mem.size() * 8, 4, 40, 1, t));
  EXPECT_FALSE(frag_table_init(mem.data(), frag_table_bytes(4, 1500) - 1, 4, 1500, 1, t));
  EXPECT_FALSE(frag_table_init(reinterpret_cast<uint8_t*>(mem.data()) + 1, mem.size() * 8 - 8, 4, 1500, 1, t));
  EXPECT_TRUE(frag_table_init(mem.data(), mem.size() * 8, 4, 1500, 1, t));
  EXPECT_EQ(frag_pending(t), 0u);
}

// ---------------------------------------------------------------------------
// The scapy-made capture against tshark
// ---------------------------------------------------------------------------

namespace {

// frame number -> "payload_length\tdns_id\tudp_checksum_status", from tshark's fields output.
std::map<uint32_t, std::string> read_tshark_lines(std::istream& in) {
  std::map<uint32_t, std::string> m;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream f(line);
    std::string num, v4len, v6len, id, status;
    std::getline(f, num, '\t');
    std::getline(f, v4len, '\t');
    std::getline(f, v6len, '\t');
    std::getline(f, id, '\t');
    std::getline(f, status, '\t');
    m[static_cast<uint32_t>(std::stoul(num))] = (v4len.empty() ? v6len : v4len) + "\t" + id + "\t" + status;
  }
  return m;
}

std::string frag_dir() { return gnio::test::data_path("frag"); }

constexpr const char* tshark_cmd =
    "tshark -n -r frag.pcap -o udp.check_checksum:TRUE -Y \"ip.reassembled.length || ipv6.reassembled.length\" "
    "-T fields -e frame.number -e ip.reassembled.length -e ipv6.reassembled.length -e dns.id -e udp.checksum.status";

}  // namespace

// Frames where reassembly completes, with the payload length, DNS id and
// whether the UDP checksum verifies, in tshark's terms, against what tshark
// recorded. Two frames differ on purpose (frag.hpp's overlap rules).
TEST(frag_capture, completes_where_tshark_reassembles) {
  std::ifstream rec(frag_dir() + "/frag.tshark.tsv");
  ASSERT_TRUE(rec) << frag_dir() << "/frag.tshark.tsv";
  const auto want = read_tshark_lines(rec);
  ASSERT_EQ(want.size(), 13u);
  const auto frames = gnio::test::read_pcap(frag_dir() + "/frag.pcap");
  ASSERT_EQ(frames.size(), 68u);

  table tb(64, 2048, 1000'000'000'000ull);
  std::map<uint32_t, std::string> got;
  for (size_t i = 0; i < frames.size(); ++i) {
    const frag_result r = tb.feed(frames[i], (i + 1) * 1'000'000'000ull);
    if (r != frag_result::complete) continue;
    parsed_pkt p;
    const bool ok = parse_l3(tb.last.data(), static_cast<uint32_t>(tb.last.size()), p);
    EXPECT_TRUE(ok) << "frame " << i + 1;
    // tshark's reassembled length: the bytes after the unfragmentable part (here, from the UDP header on).
    const uint32_t payload = static_cast<uint32_t>(tb.last.size()) - p.l4_off;
    char id[16];
    const uint8_t* dns = tb.last.data() + p.payload_off;
    std::snprintf(id, sizeof id, "0x%04x", p.payload_len >= 2 ? (dns[0] << 8 | dns[1]) : 0);
    const bool csum = l4_checksum_ok(tb.last.data(), static_cast<uint32_t>(tb.last.size()), p);
    got[static_cast<uint32_t>(i + 1)] = std::to_string(payload) + "\t" + id + "\t" + (csum ? "1" : "0");
  }
  // Frame 39 (case 8): tshark keeps the bytes of the lower offset, frag.hpp
  // those received first (junk), so the UDP checksum fails here.
  // Frame 52 (case 11): an IPv6 overlap, which RFC 5722 drops and tshark reassembles.
  std::map<uint32_t, std::string> expect = want;
  ASSERT_EQ(expect.count(39), 1u);
  ASSERT_EQ(expect.count(52), 1u);
  expect[39] = "413\t0x006c\t0";
  expect.erase(52);
  EXPECT_EQ(got, expect);
  EXPECT_EQ(tb.st.reassembled, 12u);
  EXPECT_EQ(tb.st.duplicates, 2u);   // cases 4 and 12
  EXPECT_EQ(tb.st.overlapping, 3u);  // cases 7, 8 and 11
  // Left pending: case 5 (a fragment missing) and the rest of case 11.
  EXPECT_EQ(frag_pending(tb.t), 2u);
  frag_expire(tb.t, ~0ull, tb.st);
  EXPECT_EQ(tb.st.timed_out, 2u);
}

// The recorded tshark output is what tshark says today.
TEST(frag_capture, recorded_tshark_output_is_current) {
  if (std::system("tshark --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "tshark not installed";
  std::ifstream rec(frag_dir() + "/frag.tshark.tsv");
  ASSERT_TRUE(rec);
  const auto want = read_tshark_lines(rec);
  const std::string cmd = "cd '" + frag_dir() + "' && " + tshark_cmd + " 2>/dev/null";
  FILE* f = popen(cmd.c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, f)) out.append(buf, n);
  ASSERT_EQ(pclose(f), 0) << cmd;
  std::istringstream in(out);
  EXPECT_EQ(read_tshark_lines(in), want);
}
