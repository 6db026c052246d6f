// SPDX-License-Identifier: Apache-2.0
// gnio pp device logic: the per-packet counting and reply builders on
// hand-built frames (checked with an independent checksum and with tshark
// where it is installed), and the whole kernel body on the host executor over
// the bundled captures, against tshark's counts in tests/data/MANIFEST.tsv.
#include <pcap/pcap.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <gnio/gnio.hpp>

#include "pp_app.hpp"
#include "pp_device.hpp"
#include "pp_launch.hpp"
#include "support/frames.hpp"
#include "support/process.hpp"

using namespace std::chrono_literals;
using gnio::device::parsed_pkt;
using gnio::pp::counters;
using bytes = std::vector<uint8_t>;
using gnio::test::read_pcap;

namespace {

// ---------------------------------------------------------------------------
// Frame building (independent of the code under test)
// ---------------------------------------------------------------------------

constexpr std::array<uint8_t, 6> k_mac_a{0x02, 0x00, 0x00, 0x00, 0x00, 0x0a};
constexpr std::array<uint8_t, 6> k_mac_b{0x02, 0x00, 0x00, 0x00, 0x00, 0x0b};
constexpr std::array<uint8_t, 6> k_mac_srv{0x02, 0x00, 0x00, 0x00, 0x00, 0x53};
constexpr uint32_t k_ip_a = 0x0a000001;    // 10.0.0.1
constexpr uint32_t k_ip_b = 0x0a000002;    // 10.0.0.2
constexpr uint32_t k_ip_srv = 0x0a000063;  // 10.0.0.99

void put16(bytes& b, uint16_t v) {
  b.push_back(static_cast<uint8_t>(v >> 8));
  b.push_back(static_cast<uint8_t>(v));
}
void put32(bytes& b, uint32_t v) {
  put16(b, static_cast<uint16_t>(v >> 16));
  put16(b, static_cast<uint16_t>(v));
}
uint16_t get16(const uint8_t* p) { return static_cast<uint16_t>((p[0] << 8) | p[1]); }
uint32_t get32(const uint8_t* p) { return (uint32_t{get16(p)} << 16) | get16(p + 2); }
void set16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}

// RFC 1071 one's-complement sum, written out bytewise (not pkt.hpp's).
uint16_t ones_sum(const uint8_t* p, size_t n, uint32_t seed = 0) {
  uint64_t s = seed;
  for (size_t i = 0; i < n; ++i) s += (i % 2 == 0) ? uint32_t{p[i]} << 8 : p[i];
  while (s >> 16) s = (s & 0xffff) + (s >> 16);
  return static_cast<uint16_t>(s);
}
uint16_t checksum(const uint8_t* p, size_t n, uint32_t seed = 0) {
  return static_cast<uint16_t>(~ones_sum(p, n, seed));
}
uint32_t pseudo(uint32_t src, uint32_t dst, uint8_t proto, size_t len) {
  return (src >> 16) + (src & 0xffff) + (dst >> 16) + (dst & 0xffff) + proto + static_cast<uint32_t>(len);
}

bytes eth(std::array<uint8_t, 6> dst, std::array<uint8_t, 6> src, uint16_t type, std::vector<uint16_t> vlans = {}) {
  bytes b(dst.begin(), dst.end());
  b.insert(b.end(), src.begin(), src.end());
  for (uint16_t vid : vlans) {
    put16(b, 0x8100);
    put16(b, vid);
  }
  put16(b, type);
  return b;
}

bytes ipv4(uint32_t src, uint32_t dst, uint8_t proto, const bytes& l4, uint16_t frag_word = 0x4000, uint8_t ttl = 64,
           uint16_t id = 0x1234) {
  bytes h;
  h.push_back(0x45);
  h.push_back(0);
  put16(h, static_cast<uint16_t>(20 + l4.size()));
  put16(h, id);
  put16(h, frag_word);
  h.push_back(ttl);
  h.push_back(proto);
  put16(h, 0);
  put32(h, src);
  put32(h, dst);
  set16(h.data() + 10, checksum(h.data(), 20));
  h.insert(h.end(), l4.begin(), l4.end());
  return h;
}

bytes udp(uint32_t src, uint32_t dst, uint16_t sport, uint16_t dport, const bytes& payload) {
  bytes u;
  put16(u, sport);
  put16(u, dport);
  put16(u, static_cast<uint16_t>(8 + payload.size()));
  put16(u, 0);
  u.insert(u.end(), payload.begin(), payload.end());
  uint16_t c = checksum(u.data(), u.size(), pseudo(src, dst, 17, u.size()));
  set16(u.data() + 6, c ? c : 0xffff);
  return u;
}

bytes tcp(uint32_t src, uint32_t dst, uint16_t sport, uint16_t dport, uint32_t seq, uint32_t ack, uint8_t flags,
          const bytes& payload) {
  bytes t;
  put16(t, sport);
  put16(t, dport);
  put32(t, seq);
  put32(t, ack);
  t.push_back(5 << 4);
  t.push_back(flags);
  put16(t, 29200);
  put16(t, 0);
  put16(t, 0);
  t.insert(t.end(), payload.begin(), payload.end());
  set16(t.data() + 16, checksum(t.data(), t.size(), pseudo(src, dst, 6, t.size())));
  return t;
}

bytes icmp(uint8_t type, uint8_t code, uint32_t rest, const bytes& payload) {
  bytes m{type, code, 0, 0};
  put32(m, rest);
  m.insert(m.end(), payload.begin(), payload.end());
  set16(m.data() + 2, checksum(m.data(), m.size()));
  return m;
}

bytes cat(bytes a, const bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
bytes text(const std::string& s) { return bytes(s.begin(), s.end()); }

bytes udp_frame(uint16_t sport, uint16_t dport, const bytes& payload, std::vector<uint16_t> vlans = {}) {
  return cat(eth(k_mac_b, k_mac_a, 0x0800, vlans),
             ipv4(k_ip_a, k_ip_b, 17, udp(k_ip_a, k_ip_b, sport, dport, payload)));
}
bytes tcp_frame(uint32_t src, uint32_t dst, uint16_t sport, uint16_t dport, uint32_t seq, uint32_t ack, uint8_t flags,
                const bytes& payload) {
  return cat(eth(k_mac_b, k_mac_a, 0x0800), ipv4(src, dst, 6, tcp(src, dst, sport, dport, seq, ack, flags, payload)));
}

// A DNS message with one question; responses carry one A record.
bytes dns_msg(uint16_t id, bool response, const std::vector<std::string>& labels) {
  bytes m;
  put16(m, id);
  put16(m, response ? 0x8180 : 0x0100);
  put16(m, 1);
  put16(m, response ? 1 : 0);
  put16(m, 0);
  put16(m, 0);
  for (const auto& l : labels) {
    m.push_back(static_cast<uint8_t>(l.size()));
    m.insert(m.end(), l.begin(), l.end());
  }
  m.push_back(0);
  put16(m, 1);
  put16(m, 1);
  if (response) {
    put16(m, 0xc00c);
    put16(m, 1);
    put16(m, 1);
    put32(m, 300);
    put16(m, 4);
    put32(m, 0x5db8d822);
  }
  return m;
}

parsed_pkt parse(const bytes& f) {
  parsed_pkt p;
  gnio::device::parse(f.data(), static_cast<uint32_t>(f.size()), p);
  return p;
}

counters count(const bytes& f, gnio::pp::dns_entry* dns = nullptr, uint32_t dns_cap = 0,
               gnio::device::flow_entry* conv = nullptr, uint32_t conv_cap = 0) {
  counters c{};
  const parsed_pkt p = parse(f);
  gnio::pp::count_packet(f.data(), static_cast<uint32_t>(f.size()), static_cast<uint32_t>(f.size()), 0, p, conv,
                         conv_cap, dns, dns_cap, c);
  return c;
}

// Names every non-zero counter, so a failure shows the whole picture.
std::string show(const counters& c) {
  std::ostringstream o;
#define GNIO_PP_SHOW(name) \
  if (c.name) o << #name "=" << c.name << " ";
  GNIO_PP_COUNTERS(GNIO_PP_SHOW)
#undef GNIO_PP_SHOW
  return o.str();
}

// ---------------------------------------------------------------------------
// tshark
// ---------------------------------------------------------------------------

bool have_tshark() {
  static const bool yes = std::system("tshark --version >/dev/null 2>&1") == 0;
  return yes;
}

std::string tmp_path(const std::string& tag) { return gnio::test::temp_path(("pp_" + tag).c_str()) + ".pcap"; }

void write_pcap(const std::string& path, const std::vector<bytes>& frames) {
  pcap_t* dead = pcap_open_dead(DLT_EN10MB, 65535);
  ASSERT_NE(dead, nullptr);
  pcap_dumper_t* d = pcap_dump_open(dead, path.c_str());
  ASSERT_NE(d, nullptr) << pcap_geterr(dead);
  uint32_t i = 0;
  for (const auto& f : frames) {
    pcap_pkthdr h{};
    h.ts.tv_sec = 1700000000 + i++;
    h.caplen = h.len = static_cast<uint32_t>(f.size());
    pcap_dump(reinterpret_cast<u_char*>(d), &h, f.data());
  }
  pcap_dump_close(d);
  pcap_close(dead);
}

// One line per frame, tab-separated fields, as tshark -T fields prints them.
std::vector<std::string> tshark_fields(const std::string& path, const std::string& opts,
                                       const std::vector<std::string>& fields) {
  std::string cmd = "tshark -n " + opts + " -r '" + path + "' -T fields";
  for (const auto& f : fields) cmd += " -e " + f;
  cmd += " 2>/dev/null";
  std::vector<std::string> lines;
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return lines;
  char buf[4096];
  std::string cur;
  while (fgets(buf, sizeof buf, f)) {
    cur += buf;
    if (!cur.empty() && cur.back() == '\n') {
      cur.pop_back();
      lines.push_back(cur);
      cur.clear();
    }
  }
  if (!cur.empty()) lines.push_back(cur);
  pclose(f);
  return lines;
}

// ---------------------------------------------------------------------------
// count_common and the protocol counters
// ---------------------------------------------------------------------------

TEST(pp_count, vlan_tagged_udp) {
  const bytes f = udp_frame(1000, 2000, text("hello"), {100});
  counters c{};
  const parsed_pkt p = parse(f);
  gnio::pp::count_common(f.data(), static_cast<uint32_t>(f.size()), 1000, p, c);
  EXPECT_EQ(c.packets, 1u);
  EXPECT_EQ(c.bytes, 1000u) << "bytes count the wire length, not the captured length";
  EXPECT_EQ(c.vlan, 1u);
  EXPECT_EQ(c.ipv4, 1u);
  EXPECT_EQ(c.udp, 1u);
  EXPECT_EQ(c.tcp + c.icmp + c.icmpv6 + c.arp + c.other + c.ipv6 + c.malformed + c.fragments, 0u) << show(c);
}

TEST(pp_count, ipv6_icmpv6_echo) {
  bytes f = eth(k_mac_b, k_mac_a, 0x86dd);
  bytes l4{128, 0, 0, 0, 0x12, 0x34, 0x00, 0x01, 'p', 'i', 'n', 'g'};
  bytes ip6{0x60, 0, 0, 0};
  put16(ip6, static_cast<uint16_t>(l4.size()));
  ip6.push_back(58);
  ip6.push_back(64);
  bytes addr(16, 0);  // fe80::1 -> fe80::2
  addr[0] = 0xfe;
  addr[1] = 0x80;
  addr[15] = 1;
  ip6 = cat(ip6, addr);
  addr[15] = 2;
  ip6 = cat(ip6, addr);
  f = cat(cat(f, ip6), l4);
  const counters c = count(f);
  EXPECT_EQ(c.ipv6, 1u);
  EXPECT_EQ(c.icmpv6, 1u);
  EXPECT_EQ(c.icmpv6_echo_req, 1u);
  EXPECT_EQ(c.ipv4 + c.icmp + c.udp + c.other, 0u) << show(c);
}

TEST(pp_count, icmp_port_unreachable_counts_the_quoted_udp) {
  // The quoted datagram: the original IPv4 header and its first 8 bytes.
  const bytes orig = ipv4(k_ip_b, k_ip_a, 17, udp(k_ip_b, k_ip_a, 5555, 53, dns_msg(7, false, {"example", "com"})));
  const bytes quote(orig.begin(), orig.begin() + 28);
  const bytes f = cat(eth(k_mac_b, k_mac_a, 0x0800), ipv4(k_ip_a, k_ip_b, 1, icmp(3, 3, 0, quote)));
  const counters c = count(f);
  EXPECT_EQ(c.ipv4, 1u) << "once per frame, quoted header or not";
  EXPECT_EQ(c.icmp, 1u);
  EXPECT_EQ(c.udp, 1u) << "tshark counts the quoted UDP header";
  EXPECT_EQ(c.icmp_other, 1u);
  EXPECT_EQ(c.udp_other + c.dns_queries + c.tcp + c.other, 0u)
      << "no DNS or UDP payload counters for a quote: " << show(c);

  // Quoted TCP counts tcp; a quote too short for 8 bytes of L4 counts nothing.
  const bytes torig = ipv4(k_ip_b, k_ip_a, 6, tcp(k_ip_b, k_ip_a, 40000, 80, 1, 0, 0x02, {}));
  const bytes tf = cat(eth(k_mac_b, k_mac_a, 0x0800),
                       ipv4(k_ip_a, k_ip_b, 1, icmp(11, 0, 0, bytes(torig.begin(), torig.begin() + 28))));
  EXPECT_EQ(count(tf).tcp, 1u);
  const bytes sf = cat(eth(k_mac_b, k_mac_a, 0x0800),
                       ipv4(k_ip_a, k_ip_b, 1, icmp(3, 3, 0, bytes(orig.begin(), orig.begin() + 24))));
  EXPECT_EQ(count(sf).udp, 0u);
  // An echo request carrying bytes that look like an IPv4 header is no error.
  const bytes ef = cat(eth(k_mac_b, k_mac_a, 0x0800), ipv4(k_ip_a, k_ip_b, 1, icmp(8, 0, 1, quote)));
  EXPECT_EQ(count(ef).udp, 0u);
}

TEST(pp_count, non_first_fragment_has_no_l4) {
  // Offset 185 * 8 bytes, more fragments: payload only, no UDP header.
  const bytes f = cat(eth(k_mac_b, k_mac_a, 0x0800), ipv4(k_ip_a, k_ip_b, 17, bytes(64, 0xab), 0x2000 | 185));
  const counters c = count(f);
  EXPECT_EQ(c.ipv4, 1u);
  EXPECT_EQ(c.fragments, 1u);
  EXPECT_EQ(c.other, 1u);
  EXPECT_EQ(c.udp + c.udp_other + c.dns_queries, 0u) << show(c);

  // The first fragment has the ports, but it counts as IP only until its
  // datagram is reassembled (count_fragment), as tshark shows it: no UDP, no
  // conversation, and its UDP length, which covers the whole datagram, is no
  // malformed header.
  std::vector<gnio::device::flow_entry> conv(16);
  const bytes first = cat(eth(k_mac_b, k_mac_a, 0x0800),
                          ipv4(k_ip_a, k_ip_b, 17, udp(k_ip_a, k_ip_b, 1000, 2000, bytes(64, 1)), 0x2000));
  const counters c1 = count(first, nullptr, 0, conv.data(), 16);
  EXPECT_EQ(c1.udp, 0u);
  EXPECT_EQ(c1.other, 1u);
  EXPECT_EQ(c1.malformed, 0u);
  EXPECT_EQ(c1.fragments, 1u);
  EXPECT_EQ(count(f, nullptr, 0, conv.data(), 16).flow_table_full, 0u);
  size_t used = 0;
  for (const auto& e : conv)
    if (e.state == gnio::device::flow_slot_used) ++used;
  EXPECT_EQ(used, 0u);
}

TEST(pp_count, arp_and_other) {
  bytes a = eth({0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, k_mac_a, 0x0806);
  bytes body{0, 1, 8, 0, 6, 4, 0, 1};
  body.insert(body.end(), k_mac_a.begin(), k_mac_a.end());
  put32(body, k_ip_a);
  body.insert(body.end(), 6, 0);
  put32(body, k_ip_b);
  a = cat(a, body);
  counters c = count(a);
  EXPECT_EQ(c.arp, 1u);
  EXPECT_EQ(c.arp_requests, 1u);
  EXPECT_EQ(c.other + c.ipv4, 0u);
  a[21] = 2;
  EXPECT_EQ(count(a).arp_replies, 1u);
  c = count(cat(eth(k_mac_b, k_mac_a, 0x88cc), bytes(46, 0)));  // LLDP
  EXPECT_EQ(c.other, 1u);
  EXPECT_EQ(c.arp + c.ipv4 + c.ipv6, 0u);
}

// ---------------------------------------------------------------------------
// DNS
// ---------------------------------------------------------------------------

TEST(pp_dns, queries_responses_and_top_names) {
  std::vector<gnio::pp::dns_entry> table(16);
  counters c{};
  auto add = [&](const bytes& f) {
    const counters k = count(f, table.data(), 16);
#define GNIO_PP_ADD(name) c.name += k.name;
    GNIO_PP_COUNTERS(GNIO_PP_ADD)
#undef GNIO_PP_ADD
  };
  add(udp_frame(40000, 53, dns_msg(1, false, {"www", "example", "com"})));
  add(udp_frame(40001, 53, dns_msg(2, false, {"www", "example", "com"})));
  add(udp_frame(40002, 53, dns_msg(3, false, {"gnio", "test"})));
  add(udp_frame(53, 40000, dns_msg(1, true, {"www", "example", "com"})));
  // mDNS: tshark decodes it into the same dns.* fields, so its query counts.
  add(udp_frame(5353, 5353, dns_msg(4, false, {"printer", "local"})));
  add(udp_frame(40003, 53, text("definitely not a DNS message")));
  add(udp_frame(40004, 8053, dns_msg(5, false, {"other", "port"})));  // no heuristics on other ports
  EXPECT_EQ(c.dns_queries, 4u);
  EXPECT_EQ(c.dns_responses, 1u);
  EXPECT_EQ(c.udp_other, 2u);
  EXPECT_EQ(c.udp, 7u);
  EXPECT_EQ(c.dns_names_dropped, 0u);
  std::map<std::string, uint64_t> names;
  for (const auto& e : table)
    if (e.state == gnio::device::flow_slot_used) {
      ASSERT_LT(e.len, gnio::pp::dns_name_bytes);
      names[gnio::pp::dns_name_text(std::string_view(e.name, e.len))] = e.count;
    }
  EXPECT_EQ(names, (std::map<std::string, uint64_t>{{"www.example.com", 2}, {"gnio.test", 1}, {"printer.local", 1}}));
}

TEST(pp_dns, full_table_drops_names_and_long_names_are_cut) {
  std::vector<gnio::pp::dns_entry> table(2);
  counters c{};
  for (const char* n : {"a", "b", "c"}) {
    const counters k = count(udp_frame(40000, 53, dns_msg(1, false, {n, "example"})), table.data(), 2);
    c.dns_queries += k.dns_queries;
    c.dns_names_dropped += k.dns_names_dropped;
  }
  EXPECT_EQ(c.dns_queries, 3u);
  EXPECT_EQ(c.dns_names_dropped, 1u);

  // Two labels of 63 bytes and one of 1: 131 bytes of wire labels, cut after
  // the last label that fits in 127 (the names are kept as wire labels).
  std::vector<gnio::pp::dns_entry> t2(4);
  const std::string l63(63, 'x');
  EXPECT_EQ(count(udp_frame(40000, 53, dns_msg(1, false, {l63, l63, "y"})), t2.data(), 4).dns_queries, 1u);
  size_t used = 0;
  for (const auto& e : t2)
    if (e.state == gnio::device::flow_slot_used) {
      ++used;
      EXPECT_EQ(gnio::pp::dns_name_text(std::string_view(e.name, e.len)), l63);
      EXPECT_EQ(e.len, 64u);
    }
  EXPECT_EQ(used, 1u);
}

TEST(pp_dns, pointer_loop_query_does_not_hang) {
  bytes m;
  put16(m, 9);
  put16(m, 0x0100);
  put16(m, 1);
  put16(m, 0);
  put16(m, 0);
  put16(m, 0);
  put16(m, 0xc00c);  // the name points at itself
  put16(m, 1);
  put16(m, 1);
  std::vector<gnio::pp::dns_entry> table(8);
  const auto t0 = std::chrono::steady_clock::now();
  const counters c = count(udp_frame(40000, 53, m), table.data(), 8);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
  EXPECT_EQ(c.dns_queries, 1u);
  for (const auto& e : table) EXPECT_EQ(e.state, gnio::device::flow_slot_empty);
}

TEST(pp_dns, dns_over_tcp_with_length_prefix) {
  const bytes q = dns_msg(5, false, {"tcp", "example"});
  bytes pl;
  put16(pl, static_cast<uint16_t>(q.size()));
  pl = cat(pl, q);
  std::vector<gnio::pp::dns_entry> table(8);
  counters c = count(tcp_frame(k_ip_a, k_ip_b, 40000, 53, 1, 1, 0x18, pl), table.data(), 8);
  EXPECT_EQ(c.dns_queries, 1u);
  EXPECT_EQ(c.tcp, 1u);
  EXPECT_EQ(c.http_requests, 0u);
  const bytes r = dns_msg(5, true, {"tcp", "example"});
  bytes rl;
  put16(rl, static_cast<uint16_t>(r.size()));
  c = count(tcp_frame(k_ip_b, k_ip_a, 53, 40000, 1, 1, 0x18, cat(rl, r)));
  EXPECT_EQ(c.dns_responses, 1u);
  // Without the prefix the bytes are no DNS message.
  EXPECT_EQ(count(tcp_frame(k_ip_a, k_ip_b, 40000, 53, 1, 1, 0x18, q)).dns_queries, 0u);
  bool found = false;
  for (const auto& e : table)
    found |= e.state == gnio::device::flow_slot_used &&
             gnio::pp::dns_name_text(std::string_view(e.name, e.len)) == "tcp.example";
  EXPECT_TRUE(found);
}

// ---------------------------------------------------------------------------
// TCP and HTTP
// ---------------------------------------------------------------------------

TEST(pp_tcp, flags) {
  auto c = [](uint8_t flags, const bytes& payload = {}) {
    return count(tcp_frame(k_ip_a, k_ip_b, 40000, 80, 100, 200, flags, payload));
  };
  EXPECT_EQ(c(0x02).tcp_syn, 1u);
  const counters synack = c(0x12);
  EXPECT_EQ(synack.tcp_syn, 1u);
  EXPECT_EQ(synack.tcp_ack, 0u) << "a SYN-ACK is no pure ACK";
  EXPECT_EQ(c(0x10).tcp_ack, 1u);
  const counters finack = c(0x11);
  EXPECT_EQ(finack.tcp_fin, 1u);
  EXPECT_EQ(finack.tcp_ack, 0u);
  EXPECT_EQ(c(0x04).tcp_rst, 1u);
  const counters data = c(0x18, text("some bytes"));
  EXPECT_EQ(data.tcp_other, 1u);
  EXPECT_EQ(data.tcp_ack + data.tcp_syn + data.tcp_fin + data.tcp_rst, 0u);
  EXPECT_EQ(data.http_requests + data.http_responses, 0u);
  EXPECT_EQ(c(0x10).tcp, 1u);
}

TEST(pp_tcp, http_classification) {
  auto c = [](const std::string& s, uint16_t port = 8000) {
    return count(tcp_frame(k_ip_a, k_ip_b, 40000, port, 100, 200, 0x18, text(s)));
  };
  counters k = c("GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(k.http_requests, 1u);
  EXPECT_EQ(k.http_get, 1u);
  k = c("POST /form HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
  EXPECT_EQ(k.http_requests, 1u);
  EXPECT_EQ(k.http_post, 1u);
  k = c("HEAD / HTTP/1.0\r\n\r\n");
  EXPECT_EQ(k.http_head, 1u);
  k = c("DELETE /x HTTP/1.1\r\n\r\n");
  EXPECT_EQ(k.http_other_requests, 1u);
  EXPECT_EQ(k.http_requests, 1u);
  k = c("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 80);
  EXPECT_EQ(k.http_responses, 1u);
  EXPECT_EQ(k.http_requests, 0u);
  k = c("HTTP/2 200\r\n");
  EXPECT_EQ(k.http_responses + k.http_requests, 0u);
}

// ---------------------------------------------------------------------------
// Replies
// ---------------------------------------------------------------------------

bytes echo_request(uint32_t src, uint32_t dst, uint16_t id, uint16_t seq, size_t payload = 56) {
  bytes pl(payload);
  for (size_t i = 0; i < payload; ++i) pl[i] = static_cast<uint8_t>(i * 7 + 3);
  return cat(eth(k_mac_srv, k_mac_a, 0x0800), ipv4(src, dst, 1, icmp(8, 0, (uint32_t{id} << 16) | seq, pl)));
}

TEST(pp_reply, icmp_echo_reply_in_place) {
  std::vector<bytes> replies;
  for (size_t n : {0u, 1u, 56u, 57u, 1472u}) {
    SCOPED_TRACE(n);
    bytes f = echo_request(k_ip_a, k_ip_srv, 0x4242, static_cast<uint16_t>(n), n);
    const bytes orig = f;
    const parsed_pkt p = parse(f);
    ASSERT_EQ(gnio::pp::make_icmp_echo_reply_inplace(f.data(), static_cast<uint32_t>(f.size()), p), f.size());
    EXPECT_TRUE(std::equal(f.begin(), f.begin() + 6, orig.begin() + 6));
    EXPECT_TRUE(std::equal(f.begin() + 6, f.begin() + 12, orig.begin()));
    EXPECT_EQ(get32(&f[26]), k_ip_srv);
    EXPECT_EQ(get32(&f[30]), k_ip_a);
    EXPECT_EQ(f[34], 0) << "type echo reply";
    EXPECT_EQ(f[35], 0);
    EXPECT_EQ(ones_sum(&f[14], 20), 0xffff) << "IPv4 header checksum valid";
    EXPECT_EQ(ones_sum(&f[34], f.size() - 34), 0xffff) << "ICMP checksum valid";
    EXPECT_TRUE(std::equal(f.begin() + 38, f.end(), orig.begin() + 38)) << "id, seq and data echoed";
    replies.push_back(f);
  }
  // Not applicable: the frame stays as it was.
  bytes reply = replies[0];
  EXPECT_EQ(gnio::pp::make_icmp_echo_reply_inplace(reply.data(), static_cast<uint32_t>(reply.size()), parse(reply)),
            0u);
  bytes cut = echo_request(k_ip_a, k_ip_srv, 1, 1);
  cut.resize(cut.size() - 10);  // capture shorter than the datagram
  const bytes cut0 = cut;
  EXPECT_EQ(gnio::pp::make_icmp_echo_reply_inplace(cut.data(), static_cast<uint32_t>(cut.size()), parse(cut)), 0u);
  EXPECT_EQ(cut, cut0);
  bytes bcast = echo_request(k_ip_a, 0xffffffff, 1, 1);
  EXPECT_EQ(gnio::pp::make_icmp_echo_reply_inplace(bcast.data(), static_cast<uint32_t>(bcast.size()), parse(bcast)),
            0u);

  if (!have_tshark()) GTEST_SKIP() << "tshark not installed: the independent checksum check above passed";
  const std::string path = tmp_path("icmp");
  write_pcap(path, replies);
  const auto lines =
      tshark_fields(path, "-o ip.check_checksum:TRUE", {"icmp.type", "ip.checksum.status", "icmp.checksum.status"});
  ASSERT_EQ(lines.size(), replies.size());
  for (const auto& l : lines) EXPECT_EQ(l, "0\t1\t1") << "type 0, IP checksum good, ICMP checksum good";
  std::filesystem::remove(path);
}

bytes arp_request(uint32_t target, std::vector<uint16_t> vlans = {}) {
  bytes a = eth({0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, k_mac_a, 0x0806, vlans);
  bytes body{0, 1, 8, 0, 6, 4, 0, 1};
  body.insert(body.end(), k_mac_a.begin(), k_mac_a.end());
  put32(body, k_ip_a);
  body.insert(body.end(), 6, 0);
  put32(body, target);
  a = cat(a, body);
  a.resize(60, 0);
  return a;
}

gnio::pp::app_config server_cfg() {
  gnio::pp::app_config cfg{};
  cfg.ip = k_ip_srv;
  std::copy(k_mac_srv.begin(), k_mac_srv.end(), cfg.mac);
  cfg.http_server = 1;
  return cfg;
}

TEST(pp_reply, arp_reply_fields) {
  const auto cfg = server_cfg();
  const bytes req = arp_request(k_ip_srv);
  uint8_t out[128];
  std::memset(out, 0xee, sizeof out);
  const uint32_t n = gnio::pp::make_arp_reply(req.data(), parse(req), cfg, out, sizeof out);
  ASSERT_EQ(n, 60u);
  bytes want = eth(k_mac_a, k_mac_srv, 0x0806);
  for (uint8_t b : {0, 1, 8, 0, 6, 4, 0, 2}) want.push_back(b);
  want.insert(want.end(), k_mac_srv.begin(), k_mac_srv.end());
  put32(want, k_ip_srv);
  want.insert(want.end(), k_mac_a.begin(), k_mac_a.end());
  put32(want, k_ip_a);
  want.resize(60, 0);
  EXPECT_EQ(bytes(out, out + n), want);
  EXPECT_EQ(out[60], 0xee) << "nothing written past the frame";

  // VLAN tags are kept.
  const bytes vreq = arp_request(k_ip_srv, {7});
  ASSERT_EQ(gnio::pp::make_arp_reply(vreq.data(), parse(vreq), cfg, out, sizeof out), 60u);
  EXPECT_EQ(get16(out + 12), 0x8100);
  EXPECT_EQ(get16(out + 14), 7);
  EXPECT_EQ(get16(out + 16), 0x0806);
  EXPECT_EQ(get16(out + 18 + 6), 2);

  // Not for us, a reply, too small a buffer.
  const bytes other = arp_request(k_ip_b);
  EXPECT_EQ(gnio::pp::make_arp_reply(other.data(), parse(other), cfg, out, sizeof out), 0u);
  bytes rep = req;
  rep[21] = 2;
  EXPECT_EQ(gnio::pp::make_arp_reply(rep.data(), parse(rep), cfg, out, sizeof out), 0u);
  EXPECT_EQ(gnio::pp::make_arp_reply(req.data(), parse(req), cfg, out, 59), 0u);
}

const std::string k_index =
    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 21\r\nConnection: close\r\n\r\n"
    "<h1>gnio pp</h1>\r\n\r\n\r\n";
const std::string k_second = "HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\nsecond";
const std::string k_missing = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

struct page_set {
  bytes data;
  gnio::pp::http_pages pages{};
  page_set() {
    data = cat(cat(text(k_index), text(k_second)), text(k_missing));
    pages.data = data.data();
    pages.index_off = 0;
    pages.index_len = static_cast<uint32_t>(k_index.size());
    pages.second_off = pages.index_len;
    pages.second_len = static_cast<uint32_t>(k_second.size());
    pages.missing_off = pages.second_off + pages.second_len;
    pages.missing_len = static_cast<uint32_t>(k_missing.size());
    std::strcpy(pages.second_path, "/second.html");
  }
};

bytes http_get(const std::string& path, uint32_t dst = k_ip_srv, uint16_t dport = 80, uint16_t sport = 40000) {
  return tcp_frame(k_ip_a, dst, sport, dport, 1000, 5000, 0x18,
                   text("GET " + path + " HTTP/1.1\r\nHost: 10.0.0.99\r\nUser-Agent: test\r\n\r\n"));
}

TEST(pp_reply, http_page_selection) {
  const auto cfg = server_cfg();
  page_set ps;
  auto pick = [&](const bytes& f) {
    const uint8_t* page = nullptr;
    uint32_t len = 0;
    const auto k =
        gnio::pp::http_select_page(f.data(), static_cast<uint32_t>(f.size()), parse(f), cfg, ps.pages, &page, &len);
    if (k != gnio::pp::reply_kind::none) {
      EXPECT_GE(page, ps.data.data());
      EXPECT_LE(page + len, ps.data.data() + ps.data.size());
    }
    return std::make_pair(k, std::string(page ? reinterpret_cast<const char*>(page) : "", len));
  };
  using gnio::pp::reply_kind;
  EXPECT_EQ(pick(http_get("/")), std::make_pair(reply_kind::http_index, k_index));
  EXPECT_EQ(pick(http_get("/index.html")), std::make_pair(reply_kind::http_index, k_index));
  EXPECT_EQ(pick(http_get("/second.html")), std::make_pair(reply_kind::http_second, k_second));
  EXPECT_EQ(pick(http_get("/second.html2")).first, reply_kind::http_404);
  EXPECT_EQ(pick(http_get("/second")).first, reply_kind::http_404);
  EXPECT_EQ(pick(http_get("/nothing/here")), std::make_pair(reply_kind::http_404, k_missing));
  EXPECT_EQ(pick(http_get("/" + std::string(200, 'a'))).first, reply_kind::http_404);
  EXPECT_EQ(pick(http_get("/", k_ip_b)).first, reply_kind::none) << "not our address";
  EXPECT_EQ(pick(http_get("/", k_ip_srv, 8080)).first, reply_kind::none) << "not port 80";
  const bytes post = tcp_frame(k_ip_a, k_ip_srv, 40000, 80, 1, 1, 0x18, text("POST / HTTP/1.1\r\n\r\n"));
  EXPECT_EQ(pick(post).first, reply_kind::none);
  auto off = cfg;
  off.http_server = 0;
  const bytes g = http_get("/");
  const uint8_t* page = nullptr;
  uint32_t len = 0;
  EXPECT_EQ(gnio::pp::http_select_page(g.data(), static_cast<uint32_t>(g.size()), parse(g), off, ps.pages, &page, &len),
            reply_kind::none);
}

TEST(pp_reply, http_response_segment) {
  const auto cfg = server_cfg();
  page_set ps;
  const bytes req = http_get("/");
  const parsed_pkt rp = parse(req);
  std::vector<uint8_t> out(2048, 0xee);
  const uint32_t n = gnio::pp::make_http_response(req.data(), rp, cfg, ps.pages.data, ps.pages.index_len, out.data(),
                                                  static_cast<uint32_t>(out.size()));
  ASSERT_EQ(n, 14u + 40u + k_index.size());
  out.resize(n);
  const parsed_pkt p = parse(out);
  ASSERT_FALSE(p.malformed);
  EXPECT_TRUE(std::equal(out.begin(), out.begin() + 6, k_mac_a.begin()));
  EXPECT_TRUE(std::equal(out.begin() + 6, out.begin() + 12, k_mac_srv.begin()));
  EXPECT_EQ(p.ipv4.src, k_ip_srv);
  EXPECT_EQ(p.ipv4.dst, k_ip_a);
  EXPECT_EQ(p.ipv4.ttl, 64);
  EXPECT_TRUE(p.ipv4.df);
  EXPECT_EQ(p.ipv4.id, 0);
  EXPECT_EQ(ones_sum(&out[14], 20), 0xffff);
  EXPECT_EQ(p.src_port, 80);
  EXPECT_EQ(p.dst_port, 40000);
  EXPECT_EQ(p.tcp.seq, 5000u) << "seq = the request's ACK number";
  EXPECT_EQ(p.tcp.ack, 1000u + rp.payload_len) << "ack = request seq + its payload";
  EXPECT_EQ(p.tcp.flags, 0x19) << "FIN|PSH|ACK";
  EXPECT_EQ(p.tcp.window, 0xffff);
  EXPECT_EQ(p.tcp.hdr_len, 20);
  EXPECT_EQ(ones_sum(&out[34], n - 34, pseudo(k_ip_srv, k_ip_a, 6, n - 34)), 0xffff) << "TCP checksum valid";
  EXPECT_EQ(std::string(out.begin() + 54, out.end()), k_index);

  // Too long a page, too small a buffer: refused.
  std::vector<uint8_t> big(1461, 'x');
  std::vector<uint8_t> buf(4096);
  EXPECT_EQ(gnio::pp::make_http_response(req.data(), rp, cfg, big.data(), 1461, buf.data(), 4096), 0u);
  EXPECT_EQ(gnio::pp::make_http_response(req.data(), rp, cfg, big.data(), 1460, buf.data(), 4096), 14u + 40u + 1460u);
  EXPECT_EQ(gnio::pp::make_http_response(req.data(), rp, cfg, big.data(), 1460, buf.data(), 1513), 0u);

  if (!have_tshark()) GTEST_SKIP() << "tshark not installed";
  const std::string path = tmp_path("http");
  write_pcap(path, {req, out});
  const auto lines = tshark_fields(
      path,
      "-o tcp.check_checksum:TRUE -o ip.check_checksum:TRUE "
      "-o tcp.relative_sequence_numbers:FALSE",
      {"http.response.code", "tcp.checksum.status", "ip.checksum.status", "tcp.seq", "tcp.ack", "http.request.method"});
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "\t1\t1\t1000\t5000\tGET");
  EXPECT_EQ(lines[1], "200\t1\t1\t5000\t" + std::to_string(1000 + rp.payload_len) + "\t");
  std::filesystem::remove(path);
}

TEST(pp_reply, tcp_segment_syn_ack_is_padded) {
  const auto cfg = server_cfg();
  const bytes syn = tcp_frame(k_ip_a, k_ip_srv, 40000, 80, 7777, 0, 0x02, {});
  uint8_t out[128];
  const uint32_t n =
      gnio::pp::make_tcp_segment(syn.data(), parse(syn), cfg.mac, 0x12, 123456, 7778, nullptr, 0, out, sizeof out);
  ASSERT_EQ(n, 60u) << "54 bytes of headers, padded to the Ethernet minimum";
  const parsed_pkt p = parse(bytes(out, out + n));
  EXPECT_FALSE(p.malformed);
  EXPECT_EQ(p.tcp.flags, 0x12);
  EXPECT_EQ(p.tcp.seq, 123456u);
  EXPECT_EQ(p.tcp.ack, 7778u);
  EXPECT_EQ(p.payload_len, 0u) << "padding is not payload";
  EXPECT_EQ(ones_sum(out + 34, 20, pseudo(k_ip_srv, k_ip_a, 6, 20)), 0xffff);
  EXPECT_EQ(out[54] | out[55] | out[59], 0);
  const bytes udp_req = udp_frame(1, 2, {});
  EXPECT_EQ(
      gnio::pp::make_tcp_segment(udp_req.data(), parse(udp_req), cfg.mac, 0x12, 1, 1, nullptr, 0, out, sizeof out), 0u);
}

// ---------------------------------------------------------------------------
// The kernel body on the host executor
// ---------------------------------------------------------------------------

const bool k_env = gnio::test::env_check({"GNIO_TEST_DATA_DIR"});

std::string data(const std::string& name) { return gnio::test::data_path(name); }

// MANIFEST.tsv rows by file.
std::map<std::string, gnio::test::manifest_row> manifest() {
  std::map<std::string, gnio::test::manifest_row> m;
  for (auto& r : gnio::test::read_manifest(data("MANIFEST.tsv"))) m[r["path"]] = r;
  return m;
}

template <class T>
T* as(const gnio::mem_block& b) {
  return static_cast<T*>(b.exec_ptr);
}

struct pp_run {
  counters total{};
  std::vector<counters> per_block;
  std::vector<gnio::pp::report> finals;  // the last report each block sent
  uint64_t periodic_reports = 0;
  std::map<std::string, uint64_t> dns_names;
  uint64_t tcp_conversations = 0, udp_conversations = 0;
  gnio::port_stats stats;
};

// The pp kernel with one RX queue per role (steering as the app sets it up),
// optionally a TX queue on the ICMP block.
// tx_blocks: bit b gives block b (role b) a TX queue of its own. pages: the
// HTTP responses, copied to executor memory.
pp_run run_pp(const std::string& dev, const gnio::pp::app_config& cfg, uint32_t tx_blocks,
              const page_set* pages = nullptr) {
  pp_run out;
  auto g = gnio::gpu::open("host");
  EXPECT_TRUE(g.ok()) << g.err().what();
  if (!g) return out;
  {
    auto pr = gnio::port::open(*g, dev);
    EXPECT_TRUE(pr.ok()) << pr.err().what();
    if (!pr) return out;
    gnio::port& port = *pr;
    gnio::pp::body b{};
    b.num_blocks = 4;
    b.cfg = cfg;
    b.batch = 8;
    b.report_interval_ns = 200'000;
    for (uint32_t i = 0; i < 4; ++i) {
      gnio::rxq_config rc;
      rc.num_descs = 64;
      auto q = port.create_rxq(rc);
      EXPECT_TRUE(q.ok()) << q.err().what();
      b.blocks[i].r = static_cast<gnio::pp::role>(i);
      b.blocks[i].rx = *port.rxq(*q);
    }
    for (uint32_t i = 0; i < 4; ++i) {
      if (!(tx_blocks & (1u << i))) continue;
      gnio::txq_config tc;
      tc.num_descs = 64;
      auto t = port.create_txq(tc);
      EXPECT_TRUE(t.ok()) << t.err().what();
      b.blocks[i].has_tx = 1;
      b.blocks[i].tx = *port.txq(*t);
    }
    gnio::mem_block page_mem;
    if (pages) {
      auto pm = g->alloc(pages->data.size(), gnio::mem_type::gpu);
      EXPECT_TRUE(pm.ok());
      page_mem = *pm;
      EXPECT_FALSE(g->copy_to_block(page_mem, 0, pages->data.data(), pages->data.size()));
      b.pages = pages->pages;
      b.pages.data = as<uint8_t>(page_mem);
    }
    using gnio::steering_rule;
    namespace d = gnio::device;
    EXPECT_FALSE(port.set_steering({steering_rule{d::rx_class_udp, {0}}, steering_rule{d::rx_class_tcp, {1}},
                                    steering_rule{d::rx_class_tcp_ctrl, {1}}, steering_rule{d::rx_class_icmp, {2}},
                                    steering_rule{d::rx_class_arp, {3}}, steering_rule{d::rx_class_other, {3}}}));
    constexpr uint32_t conv_cap = 1024, dns_cap = 256;
    auto ctr = g->alloc(sizeof(counters) * 4, gnio::mem_type::gpu);
    auto conv = g->alloc(sizeof(gnio::device::flow_entry) * conv_cap, gnio::mem_type::gpu);
    auto dns = g->alloc(sizeof(gnio::pp::dns_entry) * dns_cap, gnio::mem_type::gpu);
    auto sem = gnio::semaphore::create(*g, 4, sizeof(gnio::pp::report));
    EXPECT_TRUE(ctr.ok() && conv.ok() && dns.ok() && sem.ok());
    b.ctr = as<counters>(*ctr);
    b.conv = as<gnio::device::flow_entry>(*conv);
    b.conv_capacity = conv_cap;
    b.dns = as<gnio::pp::dns_entry>(*dns);
    b.dns_capacity = dns_cap;
    b.sem = sem->view();

    EXPECT_FALSE(port.start());
    auto runner = gnio::kernel_runner::create(*g, {&port});
    EXPECT_TRUE(runner.ok());
    gnio::launch_dims dims;
    dims.blocks = 4;
    EXPECT_FALSE(gnio::pp::launch(*runner, dims, b));

    // The host side of the reports: take READY items, keep the last one per block.
    out.finals.resize(4);
    const gnio::device::sem hs = sem->host_view();
    auto drain = [&] {
      for (uint32_t i = 0; i < 4; ++i) {
        if (gnio::device::sem_get_status(hs, i) != gnio::device::sem_status::ready) continue;
        const auto* r = gnio::device::sem_custom_as<gnio::pp::report>(hs, i);
        EXPECT_EQ(r->block, i);
        if (r->final_report) out.finals[i] = *r;
        else ++out.periodic_reports;
        gnio::device::sem_set_status(hs, i, gnio::device::sem_status::free);
      }
    };
    const auto end = std::chrono::steady_clock::now() + 30s;
    for (;;) {
      drain();
      auto w = runner->wait(100us);
      if (!w) break;
      EXPECT_EQ(w.code(), gnio::status::time_out) << w.what();
      if (w.code() != gnio::status::time_out || std::chrono::steady_clock::now() > end) {
        EXPECT_FALSE(runner->stop(5s));
        break;
      }
    }
    drain();
    EXPECT_FALSE(port.stop());
    out.stats = port.stats();

    out.per_block.resize(4);
    EXPECT_FALSE(g->copy_to_host(out.per_block.data(), *ctr, 0, sizeof(counters) * 4));
    for (const auto& c : out.per_block) {
#define GNIO_PP_SUM(name) out.total.name += c.name;
      GNIO_PP_COUNTERS(GNIO_PP_SUM)
#undef GNIO_PP_SUM
    }
    std::vector<gnio::device::flow_entry> flows(conv_cap);
    EXPECT_FALSE(g->copy_to_host(flows.data(), *conv, 0, conv->bytes));
    for (const auto& f : flows) {
      if (f.state != gnio::device::flow_slot_used) continue;
      out.tcp_conversations += f.key.proto == 6;
      out.udp_conversations += f.key.proto == 17;
    }
    std::vector<gnio::pp::dns_entry> names(dns_cap);
    EXPECT_FALSE(g->copy_to_host(names.data(), *dns, 0, dns->bytes));
    for (const auto& n : names)
      if (n.state == gnio::device::flow_slot_used)
        out.dns_names[gnio::pp::dns_name_text(std::string_view(n.name, n.len))] = n.count;

    *runner = {};
    EXPECT_FALSE(g->free(*ctr));
    EXPECT_FALSE(g->free(*conv));
    EXPECT_FALSE(g->free(*dns));
    *sem = {};
    if (pages) {
      EXPECT_FALSE(g->free(page_mem));
    }
    for (uint32_t i = 0; i < port.num_rxq(); ++i) EXPECT_FALSE(port.destroy_rxq(i));
    for (uint32_t i = 0; i < port.num_txq(); ++i) EXPECT_FALSE(port.destroy_txq(i));
    EXPECT_FALSE(port.close());
  }
  return out;
}

class pp_captures : public testing::TestWithParam<const char*> {};

// Where the kernel's count differs from tshark's on purpose: file, column,
// the kernel's value, and why.
struct count_exception {
  const char* file;
  const char* column;
  long value;
  const char* why;
};
const count_exception k_exceptions[] = {
    {"http.pcap", "http_responses", 3,
     "frame 36 is a spurious retransmission of frame 26, which starts with \"HTTP/1.1 200 OK\"; the kernel keeps no "
     "per-flow sequence state and counts it, tshark's TCP analysis does not hand retransmissions to HTTP"},
    {"http-ooo.pcap", "http_requests", 5,
     "five segments start with \"PUT /\"; tshark reassembles the out-of-order stream and completes one request, the "
     "kernel classifies each segment on its own"},
    {"malformed/dns-badlabel.pcap", "dns_responses", 0,
     "a fuzzed port-53 datagram (opcode 15, Z set, 64259 questions) fails dns_header_sane; tshark decodes anything "
     "on port 53 as DNS"},
    {"malformed/icmp-cksum-oobr-3.pcapng", "udp_streams", 0,
     "the only UDP header is quoted inside an ICMP error: it counts in udp (as for tshark) but the conversation "
     "table holds the frames' own 5-tuples, while tshark gives the quote a udp.stream"},
};

long expected(const std::string& file, const gnio::test::manifest_row& want, const char* column) {
  for (const auto& e : k_exceptions)
    if (file == e.file && std::string(column) == e.column) return e.value;
  return gnio::test::manifest_num(want, column);
}

// Every MANIFEST column the kernel counts, compared with tshark's numbers.
TEST_P(pp_captures, counts_match_tshark) {
  const std::string file = GetParam();
  const auto m = manifest();
  ASSERT_TRUE(m.count(file)) << file << " not in MANIFEST.tsv";
  const auto& want = m.at(file);
  const pp_run r = run_pp("pcap:file=" + data(file), gnio::pp::app_config{}, 0);
  const counters& c = r.total;
  SCOPED_TRACE(show(c));
  EXPECT_EQ(static_cast<long>(c.packets), expected(file, want, "packets"));
  EXPECT_EQ(static_cast<long>(c.ipv4), expected(file, want, "ipv4"));
  EXPECT_EQ(static_cast<long>(c.ipv6), expected(file, want, "ipv6"));
  EXPECT_EQ(static_cast<long>(c.tcp), expected(file, want, "tcp"));
  EXPECT_EQ(static_cast<long>(c.udp), expected(file, want, "udp"));
  EXPECT_EQ(static_cast<long>(c.icmp), expected(file, want, "icmp"));
  EXPECT_EQ(static_cast<long>(c.icmpv6), expected(file, want, "icmpv6"));
  EXPECT_EQ(static_cast<long>(c.arp), expected(file, want, "arp"));
  EXPECT_EQ(static_cast<long>(c.vlan), expected(file, want, "vlan"));
  EXPECT_EQ(static_cast<long>(c.dns_queries), expected(file, want, "dns_queries"));
  EXPECT_EQ(static_cast<long>(c.dns_responses), expected(file, want, "dns_responses"));
  EXPECT_EQ(static_cast<long>(c.http_requests), expected(file, want, "http_requests"));
  EXPECT_EQ(static_cast<long>(c.http_responses), expected(file, want, "http_responses"));
  EXPECT_EQ(static_cast<long>(c.icmp_echo_req), expected(file, want, "icmp_echo_req"));
  EXPECT_EQ(static_cast<long>(c.icmp_echo_reply), expected(file, want, "icmp_echo_reply"));
  EXPECT_EQ(static_cast<long>(r.tcp_conversations), expected(file, want, "tcp_streams"));
  EXPECT_EQ(static_cast<long>(r.udp_conversations), expected(file, want, "udp_streams"));
  // Internal consistency.
  EXPECT_EQ(c.packets, r.stats.rx_frames);
  // Every frame is in exactly one of the protocol groups below or in other;
  // a quoted header (ICMP errors) adds udp/tcp to an icmp frame.
  EXPECT_LE(c.packets, c.tcp + c.udp + c.icmp + c.icmpv6 + c.arp + c.other);
  EXPECT_EQ(c.flow_table_full + c.dns_names_dropped + c.tx_failed, 0u);
  // Each block's final report, when it came, carries its totals. It is
  // best effort: a block waits up to final_report_wait_ns for the host to
  // free its item, which a host thread starved of CPU (a sanitizer build on
  // a loaded machine) may not do in time, and the totals are read from the
  // counters after the kernel anyway.
  uint32_t finals = 0;
  for (uint32_t i = 0; i < 4; ++i) {
    if (r.finals[i].final_report != 1u) continue;
    ++finals;
    EXPECT_EQ(std::memcmp(&r.finals[i].c, &r.per_block[i], sizeof(counters)), 0) << "block " << i;
  }
  EXPECT_GE(finals, 1u) << "no block's final report arrived";
}

INSTANTIATE_TEST_SUITE_P(bundled, pp_captures,
                         testing::Values("dns_icmp.pcap", "http.pcap", "test_loopback.pcap", "QinQpacket.pcap",
                                         "test_ethernet.pcap", "test_dns.pcap", "dns_udp.pcap", "dnssec.pcap",
                                         "test.pcap", "truncated_dns.pcap", "truncated_dns_2.pcap", "dns_tcp.pcap",
                                         "dns-uri.pcap", "edns-opts.pcap", "dhcp-rfc4388.pcap", "print-flags.pcap",
                                         "http-brotli.pcapng", "http-ooo.pcap", "wireshark_http.pcap",
                                         "malformed/dns-badlabel.pcap", "malformed/icmp-cksum-oobr-3.pcapng",
                                         "malformed/ipv6-bad-version.pcap", "malformed/getname_2_read4_asan.pcap",
                                         "malformed/mptcp-dss-oobr.pcap", "malformed/heapoverflow-tcp_print.pcap"),
                         [](const testing::TestParamInfo<const char*>& i) {
                           std::string n = i.param;
                           for (auto& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

TEST(pp_body, dns_icmp_with_echo_replies) {
  const std::string out_path = tmp_path("echo_tx");
  gnio::pp::app_config cfg{};
  cfg.reply_all = 1;
  const pp_run r = run_pp("pcap:file=" + data("dns_icmp.pcap") + ",tx=" + out_path, cfg, 1u << 2);
  const counters& c = r.total;
  SCOPED_TRACE(show(c));
  EXPECT_EQ(c.packets, 32u);
  EXPECT_EQ(c.dns_queries, 5u);
  EXPECT_EQ(c.dns_responses, 5u);
  EXPECT_EQ(c.icmp_echo_req, 12u);
  EXPECT_EQ(c.icmp_echo_reply, 10u);
  EXPECT_EQ(c.icmp_echo_reply_sent, 12u);
  EXPECT_EQ(c.tx_failed, 0u);
  EXPECT_EQ(r.per_block[2].icmp_echo_reply_sent, 12u) << "the ICMP block answers";
  uint64_t names = 0;
  for (const auto& [n, k] : r.dns_names) names += k;
  EXPECT_EQ(names, 5u) << "every query's name is in the table";
  ASSERT_EQ(r.stats.txq.size(), 1u);
  EXPECT_EQ(r.stats.txq[0].sent, 12u);
  EXPECT_EQ(r.stats.txq[0].bad_addr, 0u);

  const auto sent = read_pcap(out_path);
  ASSERT_EQ(sent.size(), 12u);
  // Each reply is its request with addresses swapped and type 0.
  const auto in = read_pcap(data("dns_icmp.pcap"));
  std::vector<bytes> requests;
  for (const auto& f : in) {
    const parsed_pkt p = parse(f);
    if (p.l4 == gnio::device::l4_kind::icmp && p.icmp.type == 8) requests.push_back(f);
  }
  ASSERT_EQ(requests.size(), 12u);
  for (size_t i = 0; i < 12; ++i) {
    const bytes& q = requests[i];
    const bytes& a = sent[i];
    ASSERT_EQ(a.size(), q.size());
    EXPECT_TRUE(std::equal(a.begin(), a.begin() + 6, q.begin() + 6));
    EXPECT_EQ(get32(&a[26]), get32(&q[30]));
    EXPECT_EQ(get32(&a[30]), get32(&q[26]));
    EXPECT_EQ(a[34], 0);
    EXPECT_EQ(ones_sum(&a[14], 20), 0xffff);
    const uint16_t ip_len = get16(&a[16]);
    EXPECT_EQ(ones_sum(&a[34], ip_len - 20u), 0xffff);
  }
  if (have_tshark()) {
    const auto lines = tshark_fields(out_path, "-o ip.check_checksum:TRUE",
                                     {"icmp.type", "ip.checksum.status", "icmp.checksum.status"});
    ASSERT_EQ(lines.size(), 12u);
    for (const auto& l : lines) EXPECT_EQ(l, "0\t1\t1");
  }
  std::filesystem::remove(out_path);
}

TEST(pp_body, arp_and_http_replies_from_tx_buffers) {
  const std::string in_path = tmp_path("srv_in"), out_path = tmp_path("srv_out");
  const bytes get_index = http_get("/");
  // One connection per request, so that tshark sees three responses, not retransmissions.
  write_pcap(in_path, {arp_request(k_ip_srv), get_index, http_get("/second.html", k_ip_srv, 80, 40001),
                       http_get("/missing", k_ip_srv, 80, 40002), arp_request(k_ip_b), http_get("/", k_ip_b),
                       echo_request(k_ip_a, k_ip_srv, 1, 1)});
  page_set ps;
  // TX on the TCP and ARP blocks only: the echo request is counted, not answered.
  const pp_run r = run_pp("pcap:file=" + in_path + ",tx=" + out_path, server_cfg(), (1u << 1) | (1u << 3), &ps);
  const counters& c = r.total;
  SCOPED_TRACE(show(c));
  EXPECT_EQ(c.packets, 7u);
  EXPECT_EQ(c.arp_requests, 2u);
  EXPECT_EQ(c.arp_replies_sent, 1u);
  EXPECT_EQ(c.http_get, 4u);
  EXPECT_EQ(c.http_pages_sent, 2u);
  EXPECT_EQ(c.http_404_sent, 1u);
  EXPECT_EQ(c.icmp_echo_req, 1u);
  EXPECT_EQ(c.icmp_echo_reply_sent, 0u);
  EXPECT_EQ(c.tx_failed, 0u);
  EXPECT_EQ(r.per_block[3].arp_replies_sent, 1u);
  EXPECT_EQ(r.per_block[1].http_pages_sent, 2u);

  const auto sent = read_pcap(out_path);
  ASSERT_EQ(sent.size(), 4u);
  std::multiset<std::string> bodies;
  size_t arps = 0;
  for (const auto& f : sent) {
    const parsed_pkt p = parse(f);
    if (p.l3 == gnio::device::l3_kind::arp) {
      ++arps;
      EXPECT_EQ(p.arp.op, 2);
      EXPECT_EQ(p.arp.spa, k_ip_srv);
      EXPECT_EQ(p.arp.tpa, k_ip_a);
      continue;
    }
    ASSERT_EQ(p.l4, gnio::device::l4_kind::tcp);
    EXPECT_EQ(ones_sum(&f[34], f.size() - 34, pseudo(k_ip_srv, k_ip_a, 6, f.size() - 34)), 0xffff);
    bodies.insert(std::string(f.begin() + p.payload_off, f.begin() + p.payload_off + p.payload_len));
  }
  EXPECT_EQ(arps, 1u);
  EXPECT_EQ(bodies, (std::multiset<std::string>{k_index, k_second, k_missing}));
  if (have_tshark()) {
    const auto lines = tshark_fields(out_path, "-o tcp.check_checksum:TRUE",
                                     {"http.response.code", "tcp.checksum.status", "arp.opcode"});
    std::multiset<std::string> got(lines.begin(), lines.end());
    EXPECT_EQ(got, (std::multiset<std::string>{"200\t1\t", "200\t1\t", "404\t1\t", "\t\t2"}));
  }
  std::filesystem::remove(in_path);
  std::filesystem::remove(out_path);
}

}  // namespace
