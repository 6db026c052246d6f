// SPDX-License-Identifier: Apache-2.0
// Host-side tests for gnio/device/pkt.hpp. Frames are built byte by byte and
// checksums cross-checked against a naive RFC 1071 oracle and published values.
#include <gnio/device/pkt.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <ostream>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace {

namespace gd = gnio::device;
using bytes = std::vector<uint8_t>;

// What a DNS name reader returned: the error and, on success, the length.
struct name_read {
  gd::dns_error error;
  uint32_t len;
};
bool operator==(const name_read& a, const name_read& b) {
  return a.error == b.error && (a.error != gd::dns_error::none || a.len == b.len);
}
std::ostream& operator<<(std::ostream& os, const name_read& r) { return os << gd::to_string(r.error) << ", " << r.len; }
name_read ok(uint32_t n) { return {gd::dns_error::none, n}; }
name_read err(gd::dns_error e) { return {e, 0}; }
name_read read_name(const uint8_t* m, uint32_t len, uint32_t off, char* out, uint32_t cap, uint32_t* end = nullptr) {
  uint32_t n = 0;
  const gd::dns_error e = gd::dns_read_name(m, len, off, out, cap, &n, end);
  return {e, n};
}
name_read read_labels(const uint8_t* m, uint32_t len, uint32_t off, char* out, uint32_t cap, uint32_t* end = nullptr) {
  uint32_t n = 0;
  const gd::dns_error e = gd::dns_read_name_labels(m, len, off, out, cap, &n, end);
  return {e, n};
}
name_read qname_of(const uint8_t* m, uint32_t len, char* out, uint32_t cap) {
  uint32_t n = 0;
  const gd::dns_error e = gd::dns_qname(m, len, out, cap, &n);
  return {e, n};
}
name_read first_question(const uint8_t* m, uint32_t len, char* out, uint32_t cap, uint16_t& qt, uint16_t& qc) {
  uint32_t n = 0;
  const gd::dns_error e = gd::dns_first_question(m, len, out, cap, &n, qt, qc);
  return {e, n};
}

static_assert(std::is_trivially_copyable_v<gd::parsed_pkt>);
static_assert(std::is_trivially_copyable_v<gd::flow_key>);
static_assert(sizeof(gd::flow_key) == 44 && std::has_unique_object_representations_v<gd::flow_key>,
              "flow_key must have no padding");

// ---- builders ---------------------------------------------------------------

void put8(bytes& b, uint32_t v) { b.push_back(static_cast<uint8_t>(v)); }
void put16(bytes& b, uint32_t v) {
  b.push_back(static_cast<uint8_t>(v >> 8));
  b.push_back(static_cast<uint8_t>(v));
}
void put32(bytes& b, uint32_t v) {
  put16(b, v >> 16);
  put16(b, v & 0xffff);
}
void append(bytes& b, const bytes& x) { b.insert(b.end(), x.begin(), x.end()); }
void append(bytes& b, std::initializer_list<uint8_t> x) { b.insert(b.end(), x.begin(), x.end()); }
void append(bytes& b, const std::string& s) { b.insert(b.end(), s.begin(), s.end()); }

// Deliberately naive RFC 1071 oracle, independent of the code under test.
uint16_t ref_csum(const bytes& b, uint32_t seed = 0) {
  uint64_t s = seed;
  for (size_t i = 0; i < b.size(); i += 2) {
    uint32_t w = static_cast<uint32_t>(b[i]) << 8;
    if (i + 1 < b.size()) w |= b[i + 1];
    s += w;
  }
  while (s >> 16) s = (s & 0xffff) + (s >> 16);
  return static_cast<uint16_t>(~s & 0xffff);
}
uint32_t ref_pseudo4(uint32_t src, uint32_t dst, uint8_t proto, uint32_t len) {
  return (src >> 16) + (src & 0xffff) + (dst >> 16) + (dst & 0xffff) + proto + len;
}
uint32_t ref_pseudo6(const bytes& src, const bytes& dst, uint8_t proto, uint32_t len) {
  uint32_t s = 0;
  for (size_t i = 0; i < 16; i += 2)
    s += (static_cast<uint32_t>(src[i]) << 8 | src[i + 1]) + (static_cast<uint32_t>(dst[i]) << 8 | dst[i + 1]);
  return s + proto + (len >> 16) + (len & 0xffff);
}

constexpr uint32_t kSrc4 = 0xc0a8010a;  // 192.168.1.10
constexpr uint32_t kDst4 = 0x5db8d822;  // 93.184.216.34
const bytes kSrc6 = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01};
const bytes kDst6 = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02};

bytes eth_hdr(uint16_t et) {
  bytes b = {0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb};
  put16(b, et);
  return b;
}

bytes ipv4_hdr(uint8_t proto, uint32_t l4_len, const bytes& opts = {}, uint16_t frag = 0x4000, uint32_t src = kSrc4,
               uint32_t dst = kDst4) {
  bytes h;
  const uint32_t hl = 20 + static_cast<uint32_t>(opts.size());
  put8(h, 0x40 | (hl / 4));
  put8(h, 0);
  put16(h, hl + l4_len);
  put16(h, 0xbeef);
  put16(h, frag);
  put8(h, 64);
  put8(h, proto);
  put16(h, 0);
  put32(h, src);
  put32(h, dst);
  append(h, opts);
  const uint16_t c = ref_csum(h);
  h[10] = static_cast<uint8_t>(c >> 8);
  h[11] = static_cast<uint8_t>(c);
  return h;
}

bytes ipv6_hdr(uint8_t nh, uint32_t payload_len) {
  bytes h;
  put32(h, 0x60000000u | (0x2au << 20) | 0x12345);  // tc 0x2a, flow label 0x12345
  put16(h, payload_len);
  put8(h, nh);
  put8(h, 64);
  append(h, kSrc6);
  append(h, kDst6);
  return h;
}

bytes tcp_seg(const bytes& opts, const std::string& payload, uint16_t flags, uint32_t src = kSrc4,
              uint32_t dst = kDst4) {
  bytes t;
  put16(t, 43210);
  put16(t, 80);
  put32(t, 0x01020304);
  put32(t, 0xa0b0c0d0);
  const uint32_t hl = 20 + static_cast<uint32_t>(opts.size());
  put8(t, (hl / 4) << 4);
  put8(t, flags);
  put16(t, 65535);
  put16(t, 0);
  put16(t, 0);
  append(t, opts);
  append(t, payload);
  const uint16_t c = ref_csum(t, ref_pseudo4(src, dst, 6, static_cast<uint32_t>(t.size())));
  t[16] = static_cast<uint8_t>(c >> 8);
  t[17] = static_cast<uint8_t>(c);
  return t;
}

bytes udp_dgram(uint16_t sport, uint16_t dport, const bytes& payload) {
  bytes u;
  put16(u, sport);
  put16(u, dport);
  put16(u, 8 + static_cast<uint32_t>(payload.size()));
  put16(u, 0);
  append(u, payload);
  return u;
}
void fill_udp_csum4(bytes& u) {
  const uint16_t c = ref_csum(u, ref_pseudo4(kSrc4, kDst4, 17, static_cast<uint32_t>(u.size())));
  u[6] = static_cast<uint8_t>(c >> 8);
  u[7] = static_cast<uint8_t>(c);
}
void fill_udp_csum6(bytes& u) {
  const uint16_t c = ref_csum(u, ref_pseudo6(kSrc6, kDst6, 17, static_cast<uint32_t>(u.size())));
  u[6] = static_cast<uint8_t>(c >> 8);
  u[7] = static_cast<uint8_t>(c);
}

// Linux-style SYN options: MSS 1460, SACK-permitted, timestamps, NOP, WS 7.
const bytes kSynOpts = {0x02, 0x04, 0x05, 0xb4, 0x04, 0x02, 0x08, 0x0a, 0x00, 0x00,
                        0x12, 0x34, 0x00, 0x00, 0x00, 0x00, 0x01, 0x03, 0x03, 0x07};
const std::string kHttpGet = "GET /index.html?q=1 HTTP/1.1\r\nHost: example.com\r\n\r\n";

bytes tcp4_frame(const bytes& opts = kSynOpts, const std::string& payload = kHttpGet) {
  bytes f = eth_hdr(0x0800);
  const bytes t = tcp_seg(opts, payload, gd::tcp_psh | gd::tcp_ack);
  append(f, ipv4_hdr(6, static_cast<uint32_t>(t.size())));
  append(f, t);
  return f;
}

// DNS query for www.example.com A IN, id 0x1234, RD set.
bytes dns_query() {
  return {0x12, 0x34, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 3,    'w',  'w',  'w', 7,
          'e',  'x',  'a',  'm',  'p',  'l',  'e',  3,    'c',  'o',  'm',  0,    0x00, 0x01, 0x00, 0x01};
}

bool parse(const bytes& f, gd::parsed_pkt& p) { return gd::parse(f.data(), static_cast<uint32_t>(f.size()), p); }

// ---- loads --------------------------------------------------------------------

TEST(PktLoad, BoundsChecked) {
  const uint8_t b[5] = {0x12, 0x34, 0x56, 0x78, 0x9a};
  const gd::pkt_view v{b, 5};
  uint16_t s = 0;
  uint32_t w = 0;
  uint8_t c = 0;
  EXPECT_TRUE(gd::load_be16(v, 0, s));
  EXPECT_EQ(s, 0x1234);
  EXPECT_TRUE(gd::load_be16(v, 3, s));
  EXPECT_EQ(s, 0x789a);
  EXPECT_FALSE(gd::load_be16(v, 4, s));
  EXPECT_TRUE(gd::load_be32(v, 1, w));
  EXPECT_EQ(w, 0x3456789au);
  EXPECT_FALSE(gd::load_be32(v, 2, w));
  EXPECT_FALSE(gd::load_be32(v, 0xfffffffeu, w));  // off + n would wrap
  EXPECT_TRUE(gd::load_u8(v, 4, c));
  EXPECT_EQ(c, 0x9a);
  EXPECT_FALSE(gd::load_u8(v, 5, c));
  EXPECT_FALSE(v.has(6, 0));
  EXPECT_TRUE(v.has(5, 0));
}

// ---- checksums -----------------------------------------------------------------

TEST(PktChecksum, Ipv4HeaderPublishedVector) {
  // The worked example from Wikipedia "IPv4 header checksum": 0xb861.
  bytes h = {0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
             0x00, 0x00, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7};
  EXPECT_EQ(gd::ipv4_header_checksum(h.data(), 20), 0xb861);
  h[10] = 0xb8;
  h[11] = 0x61;
  EXPECT_EQ(gd::ipv4_header_checksum(h.data(), 20), 0);
}

TEST(PktChecksum, IcmpEchoRequestKnownFrame) {
  // Windows-style ping: echo id 1 seq 1 with the 32-byte alphabet payload has
  // the well-known ICMP checksum 0x4d5a.
  bytes f = eth_hdr(0x0800);
  const bytes ip = {0x45, 0x00, 0x00, 0x3c, 0x1c, 0x46, 0x00, 0x00, 0x80, 0x01,
                    0x4c, 0xb9, 0xc0, 0xa8, 0x01, 0x0a, 0x08, 0x08, 0x08, 0x08};
  append(f, ip);
  bytes icmp = {0x08, 0x00, 0x4d, 0x5a, 0x00, 0x01, 0x00, 0x01};
  append(icmp, std::string("abcdefghijklmnopqrstuvwabcdefghi"));
  append(f, icmp);
  ASSERT_EQ(f.size(), 74u);

  gd::parsed_pkt p;
  ASSERT_TRUE(parse(f, p)) << gd::to_string(p.error);
  EXPECT_FALSE(p.malformed);
  EXPECT_EQ(p.l3, gd::l3_kind::ipv4);
  EXPECT_EQ(p.ipv4.src, 0xc0a8010au);
  EXPECT_EQ(p.ipv4.dst, 0x08080808u);
  EXPECT_EQ(p.ipv4.ttl, 128);
  EXPECT_EQ(p.ipv4.checksum, 0x4cb9);
  EXPECT_EQ(p.ipv4.total_length, 60);
  EXPECT_EQ(p.l4, gd::l4_kind::icmp);
  EXPECT_EQ(p.icmp.type, 8);
  EXPECT_EQ(p.icmp.code, 0);
  EXPECT_EQ(p.icmp.checksum, 0x4d5a);
  EXPECT_EQ(p.icmp.rest, 0x00010001u);
  EXPECT_EQ(p.payload_off, 42);
  EXPECT_EQ(p.payload_len, 32u);
  EXPECT_TRUE(gd::ipv4_checksum_ok(f.data(), static_cast<uint32_t>(f.size()), p));
  EXPECT_TRUE(gd::l4_checksum_ok(f.data(), static_cast<uint32_t>(f.size()), p));

  // Recompute both from zeroed fields and compare with the published values.
  bytes ipz(ip);
  ipz[10] = ipz[11] = 0;
  EXPECT_EQ(gd::ipv4_header_checksum(ipz.data(), 20), 0x4cb9);
  bytes icz(icmp);
  icz[2] = icz[3] = 0;
  EXPECT_EQ(gd::l4_checksum_ipv4(0xc0a8010a, 0x08080808, 1, icz.data(), static_cast<uint32_t>(icz.size())), 0x4d5a);

  f[60] ^= 1;  // corrupt payload
  ASSERT_TRUE(parse(f, p));
  EXPECT_FALSE(gd::l4_checksum_ok(f.data(), static_cast<uint32_t>(f.size()), p));
}

TEST(PktChecksum, PartialChunksAndOddLengths) {
  std::mt19937 rng(7);
  for (int it = 0; it < 200; ++it) {
    bytes b(rng() % 300);
    for (auto& x : b) x = static_cast<uint8_t>(rng());
    const uint32_t n = static_cast<uint32_t>(b.size());
    EXPECT_EQ(gd::csum_fold(gd::csum_partial(b.data(), n, 0)), ref_csum(b));
    const uint32_t cut = (n / 2) & ~1u;  // even split point
    const uint32_t s = gd::csum_partial(b.data(), cut, 0);
    EXPECT_EQ(gd::csum_fold(gd::csum_partial(b.data() + cut, n - cut, s)), ref_csum(b));
  }
  const uint8_t odd[3] = {0x01, 0x02, 0x03};
  EXPECT_EQ(gd::csum_fold(gd::csum_partial(odd, 3, 0)), static_cast<uint16_t>(~(0x0102 + 0x0300)));
}

TEST(PktChecksum, IncrementalMatchesRecompute) {
  bytes f = tcp4_frame();
  gd::parsed_pkt p;
  ASSERT_TRUE(parse(f, p));
  uint8_t* ip = f.data() + p.l3_off;
  uint8_t* tcp = f.data() + p.l4_off;

  // TTL decrement (16-bit word ttl|proto).
  const uint16_t old_w = static_cast<uint16_t>(ip[8] << 8 | ip[9]);
  ip[8] = static_cast<uint8_t>(ip[8] - 1);
  const uint16_t new_w = static_cast<uint16_t>(ip[8] << 8 | ip[9]);
  const uint16_t upd = gd::csum_update16(p.ipv4.checksum, old_w, new_w);
  ip[10] = ip[11] = 0;
  EXPECT_EQ(upd, gd::ipv4_header_checksum(ip, 20));
  ip[10] = static_cast<uint8_t>(upd >> 8);
  ip[11] = static_cast<uint8_t>(upd);

  // SNAT: rewrite the source address in the IP header and TCP pseudo-header.
  const uint32_t new_src = 0x0a000001;
  const uint16_t ip_c = gd::csum_update32(upd, kSrc4, new_src);
  const uint16_t tcp_c = gd::csum_update32(p.tcp.checksum, kSrc4, new_src);
  for (int i = 0; i < 4; ++i) ip[12 + i] = static_cast<uint8_t>(new_src >> (24 - 8 * i));
  ip[10] = static_cast<uint8_t>(ip_c >> 8);
  ip[11] = static_cast<uint8_t>(ip_c);
  tcp[16] = static_cast<uint8_t>(tcp_c >> 8);
  tcp[17] = static_cast<uint8_t>(tcp_c);
  ASSERT_TRUE(parse(f, p));
  EXPECT_TRUE(gd::ipv4_checksum_ok(f.data(), static_cast<uint32_t>(f.size()), p));
  EXPECT_TRUE(gd::l4_checksum_ok(f.data(), static_cast<uint32_t>(f.size()), p));

  // Random 16-bit edits on random data.
  std::mt19937 rng(11);
  for (int it = 0; it < 5000; ++it) {
    bytes b(2 + 2 * (rng() % 30));
    for (auto& x : b) x = static_cast<uint8_t>(rng());
    const uint16_t c0 = ref_csum(b);
    const size_t w = 2 * (rng() % (b.size() / 2));
    const uint16_t ov = static_cast<uint16_t>(b[w] << 8 | b[w + 1]);
    const uint16_t nv = static_cast<uint16_t>(rng());
    b[w] = static_cast<uint8_t>(nv >> 8);
    b[w + 1] = static_cast<uint8_t>(nv);
    ASSERT_EQ(gd::csum_update16(c0, ov, nv), ref_csum(b)) << it;
  }
}

// ---- Ethernet / VLAN ------------------------------------------------------------

TEST(PktParse, TcpWithOptionsAndHttp) {
  const bytes f = tcp4_frame();
  gd::parsed_pkt p;
  ASSERT_TRUE(parse(f, p)) << gd::to_string(p.error);
  EXPECT_TRUE(p.has_l2);
  EXPECT_EQ(p.dst_mac_off, 0);
  EXPECT_EQ(p.src_mac_off, 6);
  EXPECT_EQ(p.ethertype, 0x0800);
  EXPECT_EQ(p.vlan_count, 0);
  EXPECT_EQ(p.l3_off, 14);
  EXPECT_EQ(p.ipv4.hdr_len, 20);
  EXPECT_FALSE(p.ipv4.has_options);
  EXPECT_TRUE(p.ipv4.df);
  EXPECT_FALSE(p.is_fragment);
  EXPECT_EQ(p.l4, gd::l4_kind::tcp);
  EXPECT_EQ(p.l4_off, 34);
  EXPECT_EQ(p.src_port, 43210);
  EXPECT_EQ(p.dst_port, 80);
  EXPECT_EQ(p.tcp.seq, 0x01020304u);
  EXPECT_EQ(p.tcp.ack, 0xa0b0c0d0u);
  EXPECT_EQ(p.tcp.flags, gd::tcp_psh | gd::tcp_ack);
  EXPECT_EQ(p.tcp.hdr_len, 40);
  EXPECT_EQ(p.tcp.window, 65535);
  EXPECT_TRUE(p.tcp.has_mss);
  EXPECT_EQ(p.tcp.mss, 1460);
  EXPECT_TRUE(p.tcp.sack_permitted);
  EXPECT_TRUE(p.tcp.has_timestamps);
  EXPECT_EQ(p.tcp.ts_val, 0x1234u);
  EXPECT_EQ(p.tcp.ts_ecr, 0u);
  EXPECT_TRUE(p.tcp.has_wscale);
  EXPECT_EQ(p.tcp.wscale, 7);
  EXPECT_FALSE(p.tcp.opt_error);
  EXPECT_EQ(p.payload_off, 74);
  EXPECT_EQ(p.payload_len, kHttpGet.size());
  EXPECT_TRUE(gd::l4_checksum_ok(f.data(), static_cast<uint32_t>(f.size()), p));

  const uint8_t* pl = f.data() + p.payload_off;
  EXPECT_EQ(gd::http_classify(pl, p.payload_len), gd::http_kind::get);
  char path[64];
  uint32_t path_len = 0;
  EXPECT_EQ(gd::http_request_path(pl, p.payload_len, path, sizeof path, &path_len), gd::http_error::none);
  EXPECT_EQ(path_len, 15u);
  EXPECT_STREQ(path, "/index.html?q=1");
}

TEST(PktParse, TcpBadOptionsAndOffsets) {
  // SACK option with impossible length 3, then a length that overruns.
  gd::parsed_pkt p;
  bytes f = tcp4_frame({0x01, 0x05, 0x03, 0x00}, "");
  ASSERT_TRUE(parse(f, p));  // option garbage is flagged, not fatal
  EXPECT_TRUE(p.tcp.opt_error);
  f = tcp4_frame({0x02, 0x08, 0x05, 0xb4}, "");
  ASSERT_TRUE(parse(f, p));
  EXPECT_TRUE(p.tcp.opt_error);
  EXPECT_FALSE(p.tcp.has_mss);

  f = tcp4_frame({}, "abcd");
  f[14 + 20 + 12] = 0x40;  // data offset 4
  EXPECT_FALSE(parse(f, p));
  EXPECT_EQ(p.error, gd::pkt_error::bad_tcp_offset);
  f[14 + 20 + 12] = 0xf0;  // 60 bytes, beyond the 24-byte segment
  EXPECT_FALSE(parse(f, p));
  EXPECT_EQ(p.error, gd::pkt_error::bad_tcp_offset);
}

TEST(PktParse, EthernetPaddingClampedToIpLength) {
  bytes f = eth_hdr(0x0800);
  bytes u = udp_dgram(1111, 2222, {'h', 'i'});
  fill_udp_csum4(u);
  append(f, ipv4_hdr(17, static_cast<uint32_t>(u.size())));
  append(f, u);
  f.resize(60, 0);  // minimum Ethernet frame
  gd::parsed_pkt p;
  ASSERT_TRUE(parse(f, p)) << gd::to_string(p.error);
  EXPECT_EQ(p.l4, gd::l4_kind::udp);
  EXPECT_EQ(p.udp_length, 10);
  EXPECT_EQ(p.payload_off, 42);
  EXPECT_EQ(p.payload_len, 2u);
  EXPECT_TRUE(gd::l4_checksum_ok(f.data(), static_cast<uint32_t>(f.size()), p));
}

TEST(PktParse, UdpLengthChecks) {
  bytes f = eth_hdr(0x0800);
  bytes u = udp_dgram(1, 2, {1, 2, 3, 4, 5, 6});
  append(f, ipv4_hdr(17, static_cast<uint32_t>(u.size())));
  append(f, u);
  gd::parsed_pkt p;
  ASSERT_TRUE(parse(f, p));
  f[14 + 20 + 5] = 7;  // UDP length < 8
  EXPECT_FALSE(parse(f, p));
  EXPECT_EQ(p.error, gd::pkt_error::bad_udp_length);
  f[14 + 20 + 5] = 15;  // beyond the datagram
  EXPECT_FALSE(parse(f, p));
  EXPECT_EQ(p.error, gd::pkt_error::bad_udp_length);
  f[14 + 20 + 5] = 10;  // shorter than the datagram: payload follows UDP
  ASSERT_TRUE(parse(f, p));
  EXPECT_EQ(p.payload_len, 2u);
}

TEST(PktParse, SingleVlan) {
  bytes f = eth_hdr(0x8100);
  append(f, {0x20, 0x64});  // PCP 1, VID 100
  put16(f, 0x0800);
  const bytes t = tcp_seg({}, "x", gd::tcp_syn);
  append(f, ipv4_hdr(6, static_cast<uint32_t>(t.size())));
  append(f, t);
  gd::parsed_pkt p;
  ASSERT_TRUE(parse(f, p)) << gd::to_string(p.error);
  EXPECT_EQ(p.vlan_count, 1);
  EXPECT_TRUE(p.vlan_8021q);
  EXPECT_FALSE(p.vlan_8021ad);
  EXPECT_EQ(p.outer_vlan, 100);
  EXPECT_EQ(p.ethertype, 0x0800);
  EXPECT_EQ(p.l3_off, 18);
  EXPECT_EQ(p.l4_off, 38);
  EXPECT_EQ(p.tcp.flags, gd::tcp_syn);
  EXPECT_EQ(p.payload_len, 1u);
}

TEST(PktParse, QinQ) {
  for (uint16_t outer_tpid : {uint16_t{0x88a8}, uint16_t{0x9100}}) {
    bytes f = eth_hdr(outer_tpid);
    put16(f, 0x000a);  // S-VID 10
    put16(f, 0x8100);
    put16(f, 0xe014);  // PCP 7, C-VID 20
    put16(f, 0x0800);
    bytes u = udp_dgram(53, 5353, {});
    append(f, ipv4_hdr(17, static_cast<uint32_t>(u.size())));
    append(f, u);
    gd::parsed_pkt p;
    ASSERT_TRUE(parse(f, p)) << gd::to_string(p.error);
    EXPECT_EQ(p.vlan_count, 2);
    EXPECT_EQ(p.outer_vlan, 10);
    EXPECT_EQ(p.inner_vlan, 20);
    EXPECT_TRUE(p.vlan_8021q);
    EXPECT_EQ(p.vlan_8021ad, outer_tpid == 0x88a8);
    EXPECT_EQ(p.vlan_9100, outer_tpid == 0x9100);
    EXPECT_EQ(p.ethertype, 0x0800);
    EXPECT_EQ(p.l3_off, 22);
    EXPECT_EQ(p.l4, gd::l4_kind::udp);
    EXPECT_EQ(p.payload_len, 0u);
  }
}

TEST(PktParse, TooManyVlanTags) {
  bytes f = eth_hdr(0x8100);
  for (uint32_t i = 0; i < gd::max_vlan_tags; ++i) {
    put16(f, i + 1);
    put16(f, 0x8100);
  }
  put16(f, 99);
  put16(f, 0x0800);
  f.resize(f.size() + 40, 0);
  gd::parsed_pkt p;
  EXPECT_FALSE(parse(f, p));
  EXPECT_EQ(p.error, gd::pkt_error::too_many_vlan_tags);
}

TEST(PktParse, Ipv4OptionsCarryingDns) {
  bytes f = eth_hdr(0x0800);
  bytes u = udp_dgram(40000, 53, dns_query());
  fill_udp_csum4(u);
  append(f, ipv4_hdr(17, static_cast<uint32_t>(u.size()), {0x94, 0x04, 0x00, 0x00}));  // Router Alert
  append(f, u);
  gd::parsed_pkt p;
  ASSERT_TRUE(parse(f, p)) << gd::to_string(p.error);
  EXPECT_EQ(p.ipv4.ihl, 6);
  EXPECT_EQ(p.ipv4.hdr_len, 24);
  EXPECT_TRUE(p.ipv4.has_options);
  EXPECT_EQ(p.l4_off, 38);
  EXPECT_EQ(p.dst_port, 53);
  EXPECT_TRUE(gd::ipv4_checksum_ok(f.data(), static_cast<uint32_t>(f.size()), p));
  EXPECT_TRUE(gd::l4_checksum_ok(f.data(), static_cast<uint32_t>(f.size()), p));
  char name[256];
  EXPECT_EQ(qname_of(f.data() + p.payload_off, p.payload_len, name, sizeof name), ok(15));
  EXPECT_STREQ(name, "www.example.com");

  bytes bad = f;
  bad[14] = 0x44;  // IHL 4
  EXPECT_FALSE(parse(bad, p));
  EXPECT_EQ(p.error, gd::pkt_error::bad_ihl);
  bad = f;
  bad[14] = 0x65;
  EXPECT_FALSE(parse(bad, p));
  EXPECT_EQ(p.error, gd::pkt_error::bad_ipv4_version);
  bad = f;
  bad[16] = 0;
  bad[17] = 20;  // total length below the 24-byte header
  EXPECT_FALSE(parse(bad, p));
  EXPECT_EQ(p.error, gd::pkt_error::bad_total_length);
}

TEST(PktParse, Ipv4Fragments) {
  bytes u = udp_dgram(1000, 2000, bytes(24, 0xab));
  // First fragment: MF set, offset 0 -> L4 header present.
  bytes f = eth_hdr(0x0800);
  append(f, ipv4_hdr(17, static_cast<uint32_t>(u.size()), {}, 0x2000));
  append(f, u);
  gd::parsed_pkt p;
  ASSERT_TRUE(parse(f, p)) << gd::to_string(p.error);
  EXPECT_TRUE(p.is_fragment);
  EXPECT_TRUE(p.ipv4.mf);
  EXPECT_EQ(p.l4, gd::l4_kind::udp);
  EXPECT_EQ(p.src_port, 1000);
  gd::flow_key k1 = gd::make_flow_key(p);
  EXPECT_EQ(k1.src_port, 0);  // fragments hash on the 2-tuple

  // Later fragment: offset 185 (1480 bytes) -> no L4 header, not malformed.
  bytes g = eth_hdr(0x0800);
  append(g, ipv4_hdr(17, 24, {}, 185));
  append(g, bytes(24, 0xcd));
  ASSERT_TRUE(parse(g, p)) << gd::to_string(p.error);
  EXPECT_FALSE(p.malformed);
  EXPECT_TRUE(p.is_fragment);
  EXPECT_FALSE(p.ipv4.mf);
  EXPECT_EQ(p.ipv4.frag_offset, 185);
  EXPECT_EQ(p.l4, gd::l4_kind::none);
  EXPECT_EQ(p.l4_proto, 17);
  EXPECT_EQ(p.src_port, 0);
  EXPECT_EQ(p.payload_off, 34);
  EXPECT_EQ(p.payload_len, 24u);
  EXPECT_TRUE(gd::make_flow_key(p) == k1);
  EXPECT_FALSE(gd::l4_checksum_ok(g.data(), static_cast<uint32_t>(g.size()), p));
}

TEST(PktParse, Arp) {
  bytes f = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0x00, 0x00, 0x00, 0x00,
             0x01, 0x08, 0x06, 0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01,  // Eth/IPv4, request
             0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0xc0, 0xa8, 0x01, 0x01,        // sender
             0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xc0, 0xa8, 0x01, 0x02};       // target
  f.resize(60, 0);
  gd::parsed_pkt p;
  ASSERT_TRUE(parse(f, p)) << gd::to_string(p.error);
  EXPECT_EQ(p.l3, gd::l3_kind::arp);
  EXPECT_EQ(p.l4, gd::l4_kind::none);
  EXPECT_TRUE(p.arp.eth_ipv4);
  EXPECT_EQ(p.arp.op, 1);
  const uint8_t sha[6] = {0x02, 0, 0, 0, 0, 0x01};
  EXPECT_EQ(std::memcmp(p.arp.sha, sha, 6), 0);
  EXPECT_EQ(p.arp.spa, 0xc0a80101u);
  EXPECT_EQ(p.arp.tpa, 0xc0a80102u);
  EXPECT_EQ(p.payload_len, 0u);
  EXPECT_EQ(gd::make_flow_key(p).family, 0);

  bytes cut(f.begin(), f.begin() + 14 + 27);
  EXPECT_FALSE(parse(cut, p));
  EXPECT_EQ(p.error, gd::pkt_error::truncated_l3);
}

TEST(PktParse, UnknownEthertypeIsNotMalformed) {
  bytes f = eth_hdr(0x88cc);  // LLDP
  f.resize(60, 0);
  gd::parsed_pkt p;
  ASSERT_TRUE(parse(f, p));
  EXPECT_EQ(p.l3, gd::l3_kind::other);
  EXPECT_EQ(p.ethertype, 0x88cc);
  EXPECT_EQ(p.payload_off, 14);
  EXPECT_EQ(p.payload_len, 46u);
}

// ---- IPv6 -------------------------------------------------------------------------

bytes ipv6_ext_frame(uint16_t frag_field, const bytes& l4) {
  bytes ext;
  append(ext, {43, 0, 0x01, 0x04, 0, 0, 0, 0});  // hop-by-hop, PadN
  append(ext, {44, 2, 4, 0, 0, 0, 0, 0});        // routing, 24 bytes
  append(ext, bytes(16, 0x11));
  append(ext, {17, 0});  // fragment
  put16(ext, frag_field);
  put32(ext, 0xdeadbeef);
  bytes f = eth_hdr(0x86dd);
  append(f, ipv6_hdr(0, static_cast<uint32_t>(ext.size() + l4.size())));
  append(f, ext);
  append(f, l4);
  return f;
}

TEST(PktParse, Ipv6ExtensionHeaders) {
  bytes u = udp_dgram(5000, 6000, {'a', 'b', 'c'});
  const bytes f = ipv6_ext_frame(0x0001, u);  // offset 0, M=1
  gd::parsed_pkt p;
  ASSERT_TRUE(parse(f, p)) << gd::to_string(p.error);
  EXPECT_EQ(p.l3, gd::l3_kind::ipv6);
  EXPECT_EQ(p.ipv6.traffic_class, 0x2a);
  EXPECT_EQ(p.ipv6.flow_label, 0x12345u);
  EXPECT_EQ(p.ipv6.hop_limit, 64);
  EXPECT_EQ(p.ipv6.next_header, 0);
  EXPECT_EQ(p.ipv6.ext_count, 3);
  EXPECT_EQ(p.ipv6.final_next_header, 17);
  EXPECT_EQ(p.ipv6.hdr_len, 80);
  EXPECT_TRUE(p.ipv6.has_frag_header);
  EXPECT_TRUE(p.ipv6.mf);
  EXPECT_EQ(p.ipv6.frag_offset, 0);
  EXPECT_EQ(p.ipv6.frag_id, 0xdeadbeefu);
  EXPECT_TRUE(p.is_fragment);
  EXPECT_EQ(p.l4, gd::l4_kind::udp);
  EXPECT_EQ(p.l4_off, 94);
  EXPECT_EQ(p.src_port, 5000);
  EXPECT_EQ(p.payload_len, 3u);
  EXPECT_EQ(std::memcmp(p.ipv6.src, kSrc6.data(), 16), 0);
  EXPECT_EQ(std::memcmp(p.ipv6.dst, kDst6.data(), 16), 0);

  // Non-first fragment: offset 100 -> no L4.
  const bytes g = ipv6_ext_frame(100 << 3, bytes(16, 0x77));
  ASSERT_TRUE(parse(g, p)) << gd::to_string(p.error);
  EXPECT_EQ(p.l4, gd::l4_kind::none);
  EXPECT_EQ(p.l4_proto, 17);
  EXPECT_EQ(p.ipv6.frag_offset, 100);
  EXPECT_EQ(p.payload_off, 94);
  EXPECT_EQ(p.payload_len, 16u);
}

TEST(PktParse, Ipv6UdpChecksumAndAh) {
  bytes u = udp_dgram(5353, 5353, {'m', 'd', 'n', 's', '!'});
  fill_udp_csum6(u);
  bytes ah = {17, 4, 0, 0};  // AH: (4 + 2) * 4 = 24 bytes
  put32(ah, 0x100);          // SPI
  put32(ah, 1);              // seq
  append(ah, bytes(12, 0));  // ICV
  bytes f = eth_hdr(0x86dd);
  append(f, ipv6_hdr(51, static_cast<uint32_t>(ah.size() + u.size())));
  append(f, ah);
  append(f, u);
  gd::parsed_pkt p;
  ASSERT_TRUE(parse(f, p)) << gd::to_string(p.error);
  EXPECT_EQ(p.ipv6.ext_count, 1);
  EXPECT_EQ(p.l4_off, 14 + 40 + 24);
  EXPECT_EQ(p.l4, gd::l4_kind::udp);
  EXPECT_TRUE(gd::l4_checksum_ok(f.data(), static_cast<uint32_t>(f.size()), p));
  bytes uz(u);
  const uint16_t want = static_cast<uint16_t>(uz[6] << 8 | uz[7]);
  uz[6] = uz[7] = 0;
  EXPECT_EQ(gd::l4_checksum_ipv6(kSrc6.data(), kDst6.data(), 17, uz.data(), static_cast<uint32_t>(uz.size())), want);
  f.back() ^= 0x40;
  ASSERT_TRUE(parse(f, p));
  EXPECT_FALSE(gd::l4_checksum_ok(f.data(), static_cast<uint32_t>(f.size()), p));
}

TEST(PktParse, Ipv6Icmpv6AndNoNextHeader) {
  bytes icmp = {128, 0, 0, 0, 0x12, 0x34, 0x00, 0x01, 'p', 'i', 'n', 'g'};  // echo request
  const uint16_t c = ref_csum(icmp, ref_pseudo6(kSrc6, kDst6, 58, static_cast<uint32_t>(icmp.size())));
  icmp[2] = static_cast<uint8_t>(c >> 8);
  icmp[3] = static_cast<uint8_t>(c);
  bytes f = eth_hdr(0x86dd);
  append(f, ipv6_hdr(58, static_cast<uint32_t>(icmp.size())));
  append(f, icmp);
  gd::parsed_pkt p;
  ASSERT_TRUE(parse(f, p));
  EXPECT_EQ(p.l4, gd::l4_kind::icmpv6);
  EXPECT_EQ(p.icmp.type, 128);
  EXPECT_EQ(p.payload_len, 4u);
  EXPECT_TRUE(gd::l4_checksum_ok(f.data(), static_cast<uint32_t>(f.size()), p));

  bytes g = eth_hdr(0x86dd);
  append(g, ipv6_hdr(59, 0));
  ASSERT_TRUE(parse(g, p));
  EXPECT_EQ(p.l4, gd::l4_kind::none);
  EXPECT_EQ(p.payload_len, 0u);
}

TEST(PktParse, Ipv6TooManyExtHeaders) {
  const uint32_t n = gd::max_ipv6_ext_headers + 1;
  bytes ext;
  for (uint32_t i = 0; i < n; ++i) append(ext, {static_cast<uint8_t>(i + 1 < n ? 60 : 59), 0, 1, 4, 0, 0, 0, 0});
  bytes f = eth_hdr(0x86dd);
  append(f, ipv6_hdr(60, static_cast<uint32_t>(ext.size())));
  append(f, ext);
  gd::parsed_pkt p;
  EXPECT_FALSE(parse(f, p));
  EXPECT_TRUE(p.malformed);
  EXPECT_EQ(p.error, gd::pkt_error::too_many_ext_headers);

  // Exactly the limit is fine.
  bytes ext8(ext.begin(), ext.begin() + 8 * (n - 1));
  ext8[8 * (n - 2)] = 59;
  bytes g = eth_hdr(0x86dd);
  append(g, ipv6_hdr(60, static_cast<uint32_t>(ext8.size())));
  append(g, ext8);
  ASSERT_TRUE(parse(g, p)) << gd::to_string(p.error);
  EXPECT_EQ(p.ipv6.ext_count, gd::max_ipv6_ext_headers);
}

TEST(PktParse, Ipv6ExtHeaderBeyondPayloadLength) {
  bytes f = ipv6_ext_frame(0x0001, udp_dgram(1, 2, {}));
  f[14 + 4] = 0;
  f[14 + 5] = 16;  // payload length covers only HBH + half of routing
  gd::parsed_pkt p;
  EXPECT_FALSE(parse(f, p));
  EXPECT_EQ(p.error, gd::pkt_error::bad_total_length);
}

// ---- other link types ---------------------------------------------------------------

// Other link types (loopback, raw IP, Linux cooked) are turned into Ethernet
// frames by the pcap backend; parse_l3 starts at an IP header.
TEST(PktParse, RawIp) {
  const bytes t = tcp_seg({}, "hello", gd::tcp_ack);
  bytes ip = ipv4_hdr(6, static_cast<uint32_t>(t.size()));
  append(ip, t);
  gd::parsed_pkt p;
  ASSERT_TRUE(gd::parse_l3(ip.data(), static_cast<uint32_t>(ip.size()), p));
  EXPECT_FALSE(p.has_l2);
  EXPECT_EQ(p.l3_off, 0);
  EXPECT_EQ(p.l4_off, 20);
  EXPECT_EQ(p.payload_len, 5u);
  bytes v6 = ipv6_hdr(17, 8);
  append(v6, udp_dgram(7, 9, {}));
  ASSERT_TRUE(gd::parse_l3(v6.data(), static_cast<uint32_t>(v6.size()), p));
  EXPECT_EQ(p.l3, gd::l3_kind::ipv6);
  EXPECT_EQ(p.ethertype, 0x86dd);

  bytes junk = {0x55, 0, 0, 0};
  EXPECT_FALSE(gd::parse_l3(junk.data(), 4, p));
  EXPECT_EQ(p.error, gd::pkt_error::bad_ip_version);
  EXPECT_FALSE(gd::parse_l3(nullptr, 0, p));
}

// ---- truncation -------------------------------------------------------------------

// Every prefix is copied into an exactly-sized heap buffer, so an over-read
// trips AddressSanitizer.
template <typename Fn>
void for_each_prefix(const bytes& f, Fn&& fn) {
  for (size_t cut = 0; cut < f.size(); ++cut) {
    const bytes b(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(cut));
    gd::parsed_pkt p;
    const bool ok = gd::parse(b.data(), static_cast<uint32_t>(cut), p);
    EXPECT_EQ(ok, !p.malformed);
    EXPECT_LE(static_cast<uint64_t>(p.payload_off) + p.payload_len, cut);
    fn(cut, ok, p);
  }
}

TEST(PktTruncation, TcpIpv4EveryLength) {
  const bytes f = tcp4_frame();
  const size_t l4 = 34, l7 = 74;
  for_each_prefix(f, [&](size_t cut, bool ok, const gd::parsed_pkt& p) {
    ASSERT_FALSE(ok) << cut;
    ASSERT_TRUE(p.malformed) << cut;
    gd::pkt_error want = gd::pkt_error::truncated_payload;
    if (cut < 14) want = gd::pkt_error::truncated_l2;
    else if (cut < l4) want = gd::pkt_error::truncated_l3;
    else if (cut < l7) want = gd::pkt_error::truncated_l4;
    EXPECT_EQ(p.error, want) << "cut=" << cut << " got " << gd::to_string(p.error);
    if (want == gd::pkt_error::truncated_payload) {
      // Headers still usable: the snaplen case.
      EXPECT_EQ(p.l4, gd::l4_kind::tcp);
      EXPECT_EQ(p.dst_port, 80);
      EXPECT_EQ(p.payload_off, l7);
      EXPECT_EQ(p.payload_len, cut - l7);
    }
  });
}

TEST(PktTruncation, OtherFramesNeverOverread) {
  std::vector<bytes> frames;
  frames.push_back(ipv6_ext_frame(0x0001, udp_dgram(1, 2, {1, 2, 3})));
  {
    bytes f = eth_hdr(0x88a8);
    append(f, {0, 10, 0x81, 0x00, 0, 20, 0x08, 0x00});
    bytes u = udp_dgram(1, 53, dns_query());
    append(f, ipv4_hdr(17, static_cast<uint32_t>(u.size()), {0x94, 0x04, 0, 0}));
    append(f, u);
    frames.push_back(f);
  }
  {
    bytes f = eth_hdr(0x0800);
    append(f, {0x45, 0, 0, 28, 0, 0, 0, 0, 64, 1, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 8, 0, 0, 0, 0, 1, 0, 1});
    f.resize(60, 0);  // padded: prefixes >= 42 parse cleanly
    frames.push_back(f);
  }
  for (const bytes& f : frames) {
    size_t clean = 0;
    for_each_prefix(f, [&](size_t cut, bool ok, const gd::parsed_pkt& p) {
      if (ok) {
        ++clean;
        EXPECT_GE(cut, 42u);
        EXPECT_EQ(p.l4, gd::l4_kind::icmp);
      }
    });
    if (f.size() != 60) {
      EXPECT_EQ(clean, 0u);
    }
  }
}

// ---- flow key / RSS -----------------------------------------------------------------

gd::flow_key key4(const uint8_t (&src)[4], uint16_t sp, const uint8_t (&dst)[4], uint16_t dp) {
  gd::flow_key k{};
  k.family = 4;
  k.proto = 6;
  std::memcpy(k.src, src, 4);
  std::memcpy(k.dst, dst, 4);
  k.src_port = sp;
  k.dst_port = dp;
  return k;
}

TEST(PktFlow, ToeplitzMicrosoftVectors) {
  // From the Microsoft "Verifying the RSS Hash Calculation" suite.
  struct v4 {
    uint8_t dst[4];
    uint16_t dp;
    uint8_t src[4];
    uint16_t sp;
    uint32_t l3, l4;
  };
  const v4 t4[] = {{{161, 142, 100, 80}, 1766, {66, 9, 149, 187}, 2794, 0x323e8fc2, 0x51ccc178},
                   {{65, 69, 140, 83}, 4739, {199, 92, 111, 2}, 14230, 0xd718262a, 0xc626b0ea},
                   {{12, 22, 207, 184}, 38024, {24, 19, 198, 95}, 12898, 0xd2d0a5de, 0x5c2b394a},
                   {{209, 142, 163, 6}, 2217, {38, 27, 205, 30}, 48228, 0x82989176, 0xafc7327f},
                   {{202, 188, 127, 2}, 1303, {153, 39, 163, 191}, 44251, 0x5d1809c5, 0x10e828a2}};
  for (const v4& t : t4) {
    gd::flow_key k = key4(t.src, t.sp, t.dst, t.dp);
    EXPECT_EQ(gd::flow_hash(k, false), t.l4);
    k.src_port = k.dst_port = 0;
    EXPECT_EQ(gd::flow_hash(k, false), t.l3);
  }
  const uint8_t in[12] = {66, 9, 149, 187, 161, 142, 100, 80, 0x0a, 0xea, 0x06, 0xe6};
  EXPECT_EQ(gd::toeplitz_hash(gd::microsoft_rss_key(), in, 12), 0x51ccc178u);

  gd::flow_key k6{};
  k6.family = 6;
  k6.proto = 6;
  const uint8_t s6[16] = {0x3f, 0xfe, 0x25, 0x01, 0x02, 0x00, 0x1f, 0xff, 0, 0, 0, 0, 0, 0, 0, 0x07};
  const uint8_t d6[16] = {0x3f, 0xfe, 0x25, 0x01, 0x02, 0x00, 0x00, 0x03, 0, 0, 0, 0, 0, 0, 0, 0x01};
  std::memcpy(k6.src, s6, 16);
  std::memcpy(k6.dst, d6, 16);
  k6.src_port = 2794;
  k6.dst_port = 1766;
  EXPECT_EQ(gd::flow_hash(k6), 0x40207d3du);
  k6.src_port = k6.dst_port = 0;
  EXPECT_EQ(gd::flow_hash(k6), 0x2cc18cd5u);
}

TEST(PktFlow, KeyFromPacketAndSymmetry) {
  const bytes f = tcp4_frame();
  gd::parsed_pkt p;
  ASSERT_TRUE(parse(f, p));
  const gd::flow_key k = gd::make_flow_key(p);
  EXPECT_EQ(k.family, 4);
  EXPECT_EQ(k.proto, 6);
  const uint8_t s[4] = {192, 168, 1, 10};
  EXPECT_EQ(std::memcmp(k.src, s, 4), 0);
  for (int i = 4; i < 16; ++i) EXPECT_EQ(k.src[i], 0);
  EXPECT_EQ(k.src_port, 43210);
  EXPECT_EQ(k.dst_port, 80);

  gd::flow_key r = k;
  std::memcpy(r.src, k.dst, 16);
  std::memcpy(r.dst, k.src, 16);
  r.src_port = k.dst_port;
  r.dst_port = k.src_port;
  EXPECT_FALSE(r == k);
  EXPECT_TRUE(r != k);
  gd::flow_key k2 = k;
  EXPECT_TRUE(k2 == k);
  EXPECT_NE(gd::flow_hash(k, false), gd::flow_hash(r, false));
  EXPECT_EQ(gd::flow_hash(k, true), gd::flow_hash(r, true));
  // Symmetric hash equals the plain hash of one of the two directions.
  const uint32_t h = gd::flow_hash(k, true);
  EXPECT_TRUE(h == gd::flow_hash(k, false) || h == gd::flow_hash(r, false));

  gd::parsed_pkt q;
  bytes v6 = ipv6_ext_frame(0x0000, udp_dgram(1234, 53, {}));  // atomic fragment
  ASSERT_TRUE(parse(v6, q));
  const gd::flow_key k6 = gd::make_flow_key(q);
  EXPECT_EQ(k6.family, 6);
  EXPECT_EQ(k6.proto, 17);
  EXPECT_EQ(std::memcmp(k6.src, kSrc6.data(), 16), 0);

  // Symmetric hashing over random pairs.
  std::mt19937 rng(3);
  for (int i = 0; i < 1000; ++i) {
    gd::flow_key a{};
    a.family = (i & 1) ? 6 : 4;
    for (auto& x : a.src) x = static_cast<uint8_t>(rng());
    for (auto& x : a.dst) x = static_cast<uint8_t>(rng() & 3);
    if (a.family == 4) {
      std::memset(a.src + 4, 0, 12);
      std::memset(a.dst + 4, 0, 12);
    }
    a.src_port = static_cast<uint16_t>(rng());
    a.dst_port = static_cast<uint16_t>(rng());
    gd::flow_key b = a;
    std::memcpy(b.src, a.dst, 16);
    std::memcpy(b.dst, a.src, 16);
    std::swap(b.src_port, b.dst_port);
    ASSERT_EQ(gd::flow_hash(a, true), gd::flow_hash(b, true));
  }
}

// ---- DNS ---------------------------------------------------------------------------

name_read qname(const bytes& m, char* out, uint32_t cap) {
  return qname_of(m.data(), static_cast<uint32_t>(m.size()), out, cap);
}

TEST(PktDns, HeaderAndQuery) {
  const bytes m = dns_query();
  gd::dns_header h;
  ASSERT_TRUE(gd::dns_parse_header(m.data(), static_cast<uint32_t>(m.size()), h));
  EXPECT_EQ(h.id, 0x1234);
  EXPECT_FALSE(h.qr);
  EXPECT_EQ(h.opcode, 0);
  EXPECT_TRUE(h.rd);
  EXPECT_EQ(h.qdcount, 1);
  EXPECT_EQ(h.ancount, 0);
  EXPECT_TRUE(gd::dns_header_sane(h, static_cast<uint32_t>(m.size())));
  EXPECT_FALSE(gd::dns_parse_header(m.data(), 11, h));

  char name[256];
  EXPECT_EQ(qname(m, name, sizeof name), ok(15));
  EXPECT_STREQ(name, "www.example.com");
  uint16_t qt = 0, qc = 0;
  EXPECT_EQ(first_question(m.data(), static_cast<uint32_t>(m.size()), name, sizeof name, qt, qc), ok(15));
  EXPECT_EQ(qt, 1);
  EXPECT_EQ(qc, 1);
  EXPECT_EQ(first_question(m.data(), static_cast<uint32_t>(m.size()) - 1, name, sizeof name, qt, qc),
            err(gd::dns_error::truncated));
  EXPECT_EQ(qname(m, name, 16), ok(15));  // exactly fits with NUL
  EXPECT_EQ(qname(m, name, 15), err(gd::dns_error::out_too_small));
  EXPECT_EQ(qname_of(m.data(), static_cast<uint32_t>(m.size()), nullptr, 0), ok(15));  // measure only
}

TEST(PktDns, Sanity) {
  gd::dns_header h{};
  h.qdcount = 1;
  EXPECT_TRUE(gd::dns_header_sane(h, 17));
  EXPECT_FALSE(gd::dns_header_sane(h, 16));  // question cannot fit
  h.qdcount = 0;
  EXPECT_FALSE(gd::dns_header_sane(h, 512));
  h.opcode = 1;  // an inverse query asks with no question (RFC 1035 6.4), as tshark decodes it
  EXPECT_TRUE(gd::dns_header_sane(h, 512));
  h.opcode = 0;
  h.qdcount = 17;
  EXPECT_FALSE(gd::dns_header_sane(h, 512));
  h.qdcount = 1;
  h.opcode = 3;
  EXPECT_FALSE(gd::dns_header_sane(h, 512));
  h.opcode = 0;
  h.z = true;
  EXPECT_FALSE(gd::dns_header_sane(h, 512));
  h.z = false;
  h.ancount = 60000;
  EXPECT_FALSE(gd::dns_header_sane(h, 512));
}

TEST(PktHttp, Http2PrefaceIsNotARequest) {
  const std::string preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  const auto* p = reinterpret_cast<const uint8_t*>(preface.data());
  EXPECT_EQ(gd::http_classify(p, static_cast<uint32_t>(preface.size())), gd::http_kind::not_http);
  const std::string other = "PROPFIND /dav HTTP/1.1\r\n";  // other methods still count
  EXPECT_EQ(gd::http_classify(reinterpret_cast<const uint8_t*>(other.data()), static_cast<uint32_t>(other.size())),
            gd::http_kind::other_request);
}

TEST(PktDns, CompressionPointerInAnswer) {
  bytes m = dns_query();
  m[2] = 0x81;  // response
  m[3] = 0x80;
  m[7] = 1;  // ancount
  const uint32_t ans = static_cast<uint32_t>(m.size());
  append(m, {0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0x0e, 0x10, 0, 4, 93, 184, 216, 34});
  // A second name: "cdn" + pointer to "example.com" at offset 16.
  const uint32_t second = static_cast<uint32_t>(m.size());
  append(m, {3, 'c', 'd', 'n', 0xc0, 16});
  char name[256];
  uint32_t end = 0;
  EXPECT_EQ(read_name(m.data(), static_cast<uint32_t>(m.size()), ans, name, sizeof name, &end), ok(15));
  EXPECT_STREQ(name, "www.example.com");
  EXPECT_EQ(end, ans + 2);
  EXPECT_EQ(read_name(m.data(), static_cast<uint32_t>(m.size()), second, name, sizeof name, &end), ok(15));
  EXPECT_STREQ(name, "cdn.example.com");
  EXPECT_EQ(end, second + 6);
}

TEST(PktDns, LabelsKeepEveryByteAndFollowPointers) {
  bytes m = dns_query();
  m[2] = 0x81;
  m[3] = 0x80;
  m[7] = 1;
  // A second name whose first label holds '.', NUL and 0xff, then a pointer
  // to "example.com" at offset 16.
  const uint32_t second = static_cast<uint32_t>(m.size());
  append(m, {4, 'a', '.', 0, 0xff, 0xc0, 16});
  char out[64];
  uint32_t end = 0;
  ASSERT_EQ(read_labels(m.data(), static_cast<uint32_t>(m.size()), second, out, sizeof out, &end), ok(17));
  EXPECT_EQ(std::string(out, 17), std::string("\4a.\0\xff\7example\3com", 17));
  EXPECT_EQ(out[17], '\0');
  EXPECT_EQ(end, second + 7);
  // The dotted reader gives the same bytes with '.' between labels (the
  // label's own '.' is then indistinguishable).
  EXPECT_EQ(read_name(m.data(), static_cast<uint32_t>(m.size()), second, out, sizeof out), ok(16));
  EXPECT_EQ(std::string(out, 16), std::string("a.\0\xff.example.com", 16));
  // Too small: only whole labels are written.
  char small[10] = {};
  EXPECT_EQ(read_labels(m.data(), static_cast<uint32_t>(m.size()), second, small, sizeof small),
            err(gd::dns_error::out_too_small));
  EXPECT_EQ(std::string(small, 6), std::string("\4a.\0\xff\0", 6));
  // The root name has no labels.
  const bytes root = {0};
  EXPECT_EQ(read_labels(root.data(), 1, 0, out, sizeof out), ok(0));
  EXPECT_EQ(read_name(root.data(), 1, 0, out, sizeof out), ok(1));
  EXPECT_STREQ(out, ".");
}

bytes dns_with_name(const bytes& name) {
  bytes m = {0xab, 0xcd, 0x01, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0};
  append(m, name);
  append(m, {0, 1, 0, 1});
  return m;
}

TEST(PktDns, PointerLoopsTerminate) {
  char name[256];
  // Self-loop.
  EXPECT_EQ(qname(dns_with_name({0xc0, 0x0c}), name, sizeof name), err(gd::dns_error::too_many_hops));
  // Two-pointer cycle: 12 -> 14 -> 12.
  EXPECT_EQ(qname(dns_with_name({0xc0, 0x0e, 0xc0, 0x0c}), name, sizeof name), err(gd::dns_error::too_many_hops));
  // Cycle that also emits a label each round.
  EXPECT_EQ(qname(dns_with_name({1, 'a', 0xc0, 0x0c}), name, sizeof name), err(gd::dns_error::too_many_hops));
  // Long labels in a cycle hit the 255 limit before the hop limit.
  bytes big = {63};
  append(big, bytes(63, 'x'));
  append(big, {0xc0, 0x0c});
  EXPECT_EQ(qname(dns_with_name(big), name, sizeof name), err(gd::dns_error::name_too_long));
  // Pointers into the header or past the end.
  EXPECT_EQ(qname(dns_with_name({0xc0, 0x05}), name, sizeof name), err(gd::dns_error::bad_pointer));
  EXPECT_EQ(qname(dns_with_name({0xc3, 0xff}), name, sizeof name), err(gd::dns_error::bad_pointer));
  // Pointer cut in half.
  const bytes half = {0xab, 0xcd, 0x01, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0xc0};
  EXPECT_EQ(qname(half, name, sizeof name), err(gd::dns_error::truncated));
}

TEST(PktDns, LabelAndNameLimits) {
  char name[300];
  bytes l63 = {63};
  append(l63, bytes(63, 'a'));
  l63.push_back(0);
  EXPECT_EQ(qname(dns_with_name(l63), name, sizeof name), ok(63));

  bytes l64 = {64};
  append(l64, bytes(64, 'a'));
  l64.push_back(0);
  EXPECT_EQ(qname(dns_with_name(l64), name, sizeof name), err(gd::dns_error::label_too_long));
  EXPECT_EQ(qname(dns_with_name({0x80, 0}), name, sizeof name), err(gd::dns_error::label_too_long));

  // 63+63+63+61 labels: 255 bytes on the wire, the maximum.
  bytes max;
  for (uint8_t l : {63, 63, 63, 61}) {
    max.push_back(l);
    append(max, bytes(l, 'b'));
  }
  max.push_back(0);
  ASSERT_EQ(max.size(), 255u);
  EXPECT_EQ(qname(dns_with_name(max), name, sizeof name), ok(253));
  EXPECT_EQ(std::strlen(name), 253u);
  bytes over;  // 63+63+63+62: 256 bytes on the wire
  for (uint8_t l : {63, 63, 63, 62}) {
    over.push_back(l);
    append(over, bytes(l, 'b'));
  }
  over.push_back(0);
  ASSERT_EQ(over.size(), 256u);
  max = over;
  EXPECT_EQ(qname(dns_with_name(max), name, sizeof name), err(gd::dns_error::name_too_long));

  EXPECT_EQ(qname(dns_with_name({0}), name, sizeof name), ok(1));  // root
  EXPECT_STREQ(name, ".");
  bytes unterminated = {0xab, 0xcd, 0x01, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 3, 'w', 'w', 'w'};
  EXPECT_EQ(qname(unterminated, name, sizeof name), err(gd::dns_error::truncated));
  bytes cut_label = {0xab, 0xcd, 0x01, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 5, 'w', 'w'};
  EXPECT_EQ(qname(cut_label, name, sizeof name), err(gd::dns_error::truncated));
  bytes noq = dns_query();
  noq[5] = 0;
  EXPECT_EQ(qname(noq, name, sizeof name), err(gd::dns_error::no_question));
  EXPECT_EQ(qname_of(nullptr, 0, name, sizeof name), err(gd::dns_error::truncated));
}

// ---- HTTP --------------------------------------------------------------------------

gd::http_kind classify(const std::string& s) {
  return gd::http_classify(reinterpret_cast<const uint8_t*>(s.data()), static_cast<uint32_t>(s.size()));
}

TEST(PktHttp, Classify) {
  EXPECT_EQ(classify("GET / HTTP/1.1\r\n"), gd::http_kind::get);
  EXPECT_EQ(classify("HEAD /x HTTP/1.0\r\n"), gd::http_kind::head);
  EXPECT_EQ(classify("POST /api HTTP/1.1\r\n"), gd::http_kind::post);
  EXPECT_EQ(classify("PUT /a HTTP/1.1\r\n"), gd::http_kind::put);
  EXPECT_EQ(classify("DELETE /a HTTP/1.1\r\n"), gd::http_kind::del);
  EXPECT_EQ(classify("OPTIONS * HTTP/1.1\r\n"), gd::http_kind::options);
  EXPECT_EQ(classify("PATCH /a HTTP/1.1\r\n"), gd::http_kind::other_request);
  EXPECT_EQ(classify("CONNECT example.com:443 HTTP/1.1\r\n"), gd::http_kind::other_request);
  EXPECT_EQ(classify("PROPFIND /dav HTTP/1.1\r\n"), gd::http_kind::other_request);
  EXPECT_EQ(classify("HTTP/1.1 200 OK\r\n"), gd::http_kind::response);
  EXPECT_EQ(classify("HTTP/1.0 404 Not Found\r\n"), gd::http_kind::response);
  EXPECT_EQ(classify("HTTP/2 200\r\n"), gd::http_kind::not_http);
  EXPECT_EQ(classify("HELLO world"), gd::http_kind::not_http);
  EXPECT_EQ(classify("get / HTTP/1.1"), gd::http_kind::not_http);
  EXPECT_EQ(classify("GET"), gd::http_kind::not_http);
  EXPECT_EQ(classify(""), gd::http_kind::not_http);
  EXPECT_EQ(classify(std::string("\x16\x03\x01\x02\x00", 5)), gd::http_kind::not_http);  // TLS
  EXPECT_EQ(gd::http_classify(nullptr, 10), gd::http_kind::not_http);
}

TEST(PktHttp, RequestPath) {
  // The length written, or the error.
  auto path = [](const std::string& s, char* out, uint32_t cap, bool* tr) -> std::variant<uint32_t, gd::http_error> {
    uint32_t n = 0;
    const gd::http_error e = gd::http_request_path(reinterpret_cast<const uint8_t*>(s.data()),
                                                   static_cast<uint32_t>(s.size()), out, cap, &n, tr);
    if (e != gd::http_error::none) return e;
    return n;
  };
  using R = std::variant<uint32_t, gd::http_error>;
  char out[32];
  bool tr = true;
  EXPECT_EQ(path("GET /a/b?c=d HTTP/1.1\r\n", out, sizeof out, &tr), R(8u));
  EXPECT_STREQ(out, "/a/b?c=d");
  EXPECT_FALSE(tr);
  EXPECT_EQ(path("DELETE /items/7 HTTP/1.1\r\n", out, sizeof out, &tr), R(8u));
  EXPECT_STREQ(out, "/items/7");
  EXPECT_EQ(path("GET /0123456789abcdef HTTP/1.1", out, 8, &tr), R(7u));
  EXPECT_STREQ(out, "/012345");
  EXPECT_TRUE(tr);
  EXPECT_EQ(path("GET /partial", out, sizeof out, &tr), R(8u));  // segment ends mid-target
  EXPECT_STREQ(out, "/partial");
  EXPECT_TRUE(tr);
  EXPECT_EQ(path("HTTP/1.1 200 OK\r\n", out, sizeof out, &tr), R(gd::http_error::not_request));
  EXPECT_EQ(path("GET  HTTP/1.1", out, sizeof out, &tr), R(gd::http_error::empty_target));
  EXPECT_EQ(path("GET / HTTP/1.1", out, 0, &tr), R(gd::http_error::no_room));
  EXPECT_EQ(path("GET / HTTP/1.1", out, 1, &tr), R(0u));
  EXPECT_STREQ(out, "");
  EXPECT_TRUE(tr);
}

// ---- tunnels -------------------------------------------------------------------------

// An inner IPv4/TCP packet (the one tcp4_frame carries), without Ethernet.
bytes inner_tcp4() {
  const bytes t = tcp_seg({}, "hi", gd::tcp_psh | gd::tcp_ack);
  bytes ip = ipv4_hdr(6, static_cast<uint32_t>(t.size()), {}, 0x4000, 0xc6336401, 0xc6336402);
  append(ip, t);
  return ip;
}

// An outer Ethernet/IPv4/UDP frame to dport carrying payload.
bytes udp4_frame(uint16_t sport, uint16_t dport, const bytes& payload) {
  bytes f = eth_hdr(0x0800);
  const bytes u = udp_dgram(sport, dport, payload);
  append(f, ipv4_hdr(17, static_cast<uint32_t>(u.size())));
  append(f, u);
  return f;
}

bytes inner_eth(uint16_t et, const bytes& l3) {
  bytes e = {0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2};
  put16(e, et);
  append(e, l3);
  return e;
}

void expect_inner_tcp(const gd::parsed_pkt& p) {
  EXPECT_EQ(p.l3, gd::l3_kind::ipv4);
  EXPECT_EQ(p.ipv4.src, 0xc6336401u);
  EXPECT_EQ(p.l4, gd::l4_kind::tcp);
  EXPECT_EQ(p.dst_port, 80);
  EXPECT_EQ(p.payload_len, 2u);
  EXPECT_TRUE(p.protos & gd::proto_tcp);
}

TEST(PktTunnel, VxlanWithInnerVlanStack) {
  bytes vx = {0x08, 0, 0, 0, 0x12, 0x34, 0x56, 0};  // VNI 0x123456
  bytes tagged = {0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x88, 0xa8, 0, 5, 0x81, 0x00, 0, 6, 0x08, 0x00};
  append(tagged, inner_tcp4());
  append(vx, tagged);
  const bytes f = udp4_frame(54321, gd::udp_port_vxlan, vx);
  gd::parsed_pkt p;
  ASSERT_TRUE(gd::parse(f.data(), static_cast<uint32_t>(f.size()), p)) << gd::to_string(p.error);
  ASSERT_EQ(p.encap_count, 1u);
  EXPECT_EQ(p.encap[0].kind, gd::encap_kind::vxlan);
  EXPECT_TRUE(p.encap[0].has_id);
  EXPECT_EQ(p.encap[0].id, 0x123456u);
  EXPECT_EQ(p.encap[0].outer_l3, gd::l3_kind::ipv4);
  EXPECT_EQ(p.encap[0].outer_l3_off, 14u);
  EXPECT_EQ(p.encap[0].outer_l4_off, 34u);
  expect_inner_tcp(p);
  EXPECT_EQ(p.protos & (gd::proto_udp | gd::proto_vxlan | gd::proto_vlan | gd::proto_ipv4),
            gd::proto_udp | gd::proto_vxlan | gd::proto_vlan | gd::proto_ipv4);
  EXPECT_EQ(p.vlan_count, 0u) << "the L2 fields are the outer frame's";
  const gd::flow_key k = gd::make_flow_key(p);
  EXPECT_EQ(k.tunnel, gd::encap_kind::vxlan);
  EXPECT_EQ(k.tunnel_id, 0x123456u);
  EXPECT_EQ(k.dst_port, 80);
  gd::flow_key o{};
  ASSERT_TRUE(gd::outer_udp_flow_key(f.data(), static_cast<uint32_t>(f.size()), p, 0, o));
  EXPECT_EQ(o.dst_port, gd::udp_port_vxlan);
  EXPECT_EQ(o.tunnel, gd::encap_kind::none);
  // Cut inside the VXLAN header: the outer headers stand, the tunnel header
  // is short (which outranks the outer datagram's truncated_payload).
  gd::parsed_pkt q;
  EXPECT_FALSE(gd::parse(f.data(), 14 + 20 + 8 + 4, q));
  EXPECT_EQ(q.error, gd::pkt_error::truncated_tunnel);
  EXPECT_EQ(q.l4, gd::l4_kind::udp);
  EXPECT_EQ(q.encap_count, 0u);
}

TEST(PktTunnel, GreWithKeyAndSequenceAndErspan) {
  // GRE, K and S set, protocol IPv4.
  bytes gre = {0x30, 0x00, 0x08, 0x00, 0, 0, 0x01, 0x02, 0, 0, 0, 9};
  append(gre, inner_tcp4());
  bytes f = eth_hdr(0x0800);
  append(f, ipv4_hdr(47, static_cast<uint32_t>(gre.size())));
  append(f, gre);
  gd::parsed_pkt p;
  ASSERT_TRUE(gd::parse(f.data(), static_cast<uint32_t>(f.size()), p)) << gd::to_string(p.error);
  ASSERT_EQ(p.encap_count, 1u);
  EXPECT_EQ(p.encap[0].kind, gd::encap_kind::gre);
  EXPECT_EQ(p.encap[0].id, 0x0102u);
  EXPECT_EQ(p.encap[0].outer_l4_proto, gd::ipproto_gre);
  expect_inner_tcp(p);
  EXPECT_TRUE(p.protos & gd::proto_gre);
  EXPECT_FALSE(p.protos & gd::proto_udp);

  // ERSPAN type II: GRE with S, protocol 0x88be, 8-byte header, session 0x123.
  bytes es = {0x10, 0x00, 0x88, 0xbe, 0, 0, 0, 1, 0x10, 0x00, 0x01, 0x23, 0, 0, 0, 0};
  append(es, inner_eth(0x0800, inner_tcp4()));
  bytes g = eth_hdr(0x0800);
  append(g, ipv4_hdr(47, static_cast<uint32_t>(es.size())));
  append(g, es);
  ASSERT_TRUE(gd::parse(g.data(), static_cast<uint32_t>(g.size()), p)) << gd::to_string(p.error);
  ASSERT_EQ(p.encap_count, 1u);
  EXPECT_EQ(p.encap[0].kind, gd::encap_kind::erspan);
  EXPECT_EQ(p.encap[0].id, 0x123u);
  EXPECT_TRUE((p.protos & gd::proto_erspan) && (p.protos & gd::proto_gre));
  expect_inner_tcp(p);
  // GRE version 1 (PPTP) is counted, not walked into.
  bytes f1 = f;
  f1[14 + 20 + 1] = 0x01;
  ASSERT_TRUE(gd::parse(f1.data(), static_cast<uint32_t>(f1.size()), p));
  EXPECT_EQ(p.encap_count, 0u);
  EXPECT_TRUE(p.protos & gd::proto_gre);
  EXPECT_EQ(p.l4, gd::l4_kind::other);
}

TEST(PktTunnel, GtpuWithExtensionHeaders) {
  // Version 1, PT, E: seq/N-PDU/next = 0x85 (PDU session container), one
  // 4-byte extension, then IPv4.
  const bytes ip = inner_tcp4();
  bytes g = {0x34, 0xff, 0, 0, 0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 0x85, 1, 0x10, 0x09, 0};
  const uint32_t len = static_cast<uint32_t>(g.size() - 8 + ip.size());
  g[2] = static_cast<uint8_t>(len >> 8);
  g[3] = static_cast<uint8_t>(len);
  append(g, ip);
  const bytes f = udp4_frame(gd::udp_port_gtpu, gd::udp_port_gtpu, g);
  gd::parsed_pkt p;
  ASSERT_TRUE(gd::parse(f.data(), static_cast<uint32_t>(f.size()), p)) << gd::to_string(p.error);
  ASSERT_EQ(p.encap_count, 1u);
  EXPECT_EQ(p.encap[0].kind, gd::encap_kind::gtpu);
  EXPECT_EQ(p.encap[0].id, 0xdeadbeefu);
  expect_inner_tcp(p);
  // An extension whose length byte is 0 cannot be walked past.
  bytes bad = f;
  bad[14 + 20 + 8 + 12] = 0;
  EXPECT_FALSE(gd::parse(bad.data(), static_cast<uint32_t>(bad.size()), p));
  EXPECT_EQ(p.error, gd::pkt_error::truncated_tunnel);
  EXPECT_TRUE(p.protos & gd::proto_gtpu);
  // An echo request (type 1) carries no packet.
  bytes echo = {0x32, 0x01, 0, 4, 0, 0, 0, 0, 0, 1, 0, 0};
  const bytes fe = udp4_frame(40000, gd::udp_port_gtpu, echo);
  ASSERT_TRUE(gd::parse(fe.data(), static_cast<uint32_t>(fe.size()), p));
  EXPECT_EQ(p.encap_count, 0u);
  EXPECT_TRUE(p.protos & gd::proto_gtpu);
}

TEST(PktTunnel, MplsStackPppoeAndIpInIp) {
  // Two labels (16, 17 with bottom of stack) over IPv4.
  bytes m = eth_hdr(gd::ethertype_mpls);
  append(m, {0x00, 0x01, 0x00, 0x40, 0x00, 0x01, 0x11, 0x40});
  append(m, inner_tcp4());
  gd::parsed_pkt p;
  ASSERT_TRUE(gd::parse(m.data(), static_cast<uint32_t>(m.size()), p)) << gd::to_string(p.error);
  ASSERT_EQ(p.encap_count, 1u);
  EXPECT_EQ(p.encap[0].kind, gd::encap_kind::mpls);
  EXPECT_EQ(p.encap[0].id, 16u) << "the top label";
  EXPECT_EQ(p.encap[0].outer_l3, gd::l3_kind::none);
  expect_inner_tcp(p);
  // No bottom of stack within the limit.
  bytes deep = eth_hdr(gd::ethertype_mpls);
  for (uint32_t i = 0; i < gd::max_mpls_labels + 1; ++i) append(deep, {0x00, 0x01, 0x00, 0x40});
  EXPECT_FALSE(gd::parse(deep.data(), static_cast<uint32_t>(deep.size()), p));
  EXPECT_EQ(p.error, gd::pkt_error::too_many_mpls_labels);
  EXPECT_TRUE(p.protos & gd::proto_mpls) << "the encapsulation is counted even over the bound, as tshark counts it";
  // A stack that runs to the end of the frame without a bottom label: MPLS too.
  bytes open_stack = eth_hdr(gd::ethertype_mpls);
  append(open_stack, {0x00, 0x01, 0x00, 0x40, 0x00, 0x01, 0x10, 0x40});
  EXPECT_FALSE(gd::parse(open_stack.data(), static_cast<uint32_t>(open_stack.size()), p));
  EXPECT_EQ(p.error, gd::pkt_error::truncated_tunnel);
  EXPECT_TRUE(p.protos & gd::proto_mpls);
  // Nine labels (tshark reads any number; the bound is 16) over IPv4.
  bytes nine = eth_hdr(gd::ethertype_mpls);
  for (uint32_t i = 0; i < 9; ++i) append(nine, {0x00, 0x01, static_cast<uint8_t>(i == 8 ? 0x01 : 0x00), 0x40});
  append(nine, inner_tcp4());
  ASSERT_TRUE(gd::parse(nine.data(), static_cast<uint32_t>(nine.size()), p)) << gd::to_string(p.error);
  expect_inner_tcp(p);

  // PPPoE session 0x0042 carrying IPv4.
  const bytes ip = inner_tcp4();
  bytes s = eth_hdr(gd::ethertype_pppoe_sess);
  append(s, {0x11, 0x00, 0x00, 0x42});
  put16(s, static_cast<uint32_t>(ip.size() + 2));
  append(s, {0x00, 0x21});
  append(s, ip);
  ASSERT_TRUE(gd::parse(s.data(), static_cast<uint32_t>(s.size()), p)) << gd::to_string(p.error);
  ASSERT_EQ(p.encap_count, 1u);
  EXPECT_EQ(p.encap[0].kind, gd::encap_kind::pppoe);
  EXPECT_EQ(p.encap[0].id, 0x42u);
  expect_inner_tcp(p);
  // Protocol field compression (RFC 1661 6.5): a 1-byte 0x21 is IPv4.
  bytes pfc = eth_hdr(gd::ethertype_pppoe_sess);
  append(pfc, {0x11, 0x00, 0x00, 0x42});
  put16(pfc, static_cast<uint32_t>(ip.size() + 1));
  append(pfc, {0x21});
  append(pfc, ip);
  ASSERT_TRUE(gd::parse(pfc.data(), static_cast<uint32_t>(pfc.size()), p)) << gd::to_string(p.error);
  ASSERT_EQ(p.encap_count, 1u);
  EXPECT_EQ(p.encap[0].kind, gd::encap_kind::pppoe);
  expect_inner_tcp(p);
  // LCP inside PPPoE: the frame stays L3 `other`.
  bytes lcp = eth_hdr(gd::ethertype_pppoe_sess);
  append(lcp, {0x11, 0x00, 0x00, 0x42, 0x00, 0x06, 0xc0, 0x21, 1, 1, 0, 4});
  ASSERT_TRUE(gd::parse(lcp.data(), static_cast<uint32_t>(lcp.size()), p));
  EXPECT_EQ(p.l3, gd::l3_kind::other);
  EXPECT_TRUE(p.protos & gd::proto_pppoe);

  // IPv4 in IPv6 (next header 4).
  bytes v6 = eth_hdr(0x86dd);
  append(v6, ipv6_hdr(gd::ipproto_ipip, static_cast<uint32_t>(ip.size())));
  append(v6, ip);
  ASSERT_TRUE(gd::parse(v6.data(), static_cast<uint32_t>(v6.size()), p)) << gd::to_string(p.error);
  ASSERT_EQ(p.encap_count, 1u);
  EXPECT_EQ(p.encap[0].kind, gd::encap_kind::ipip);
  EXPECT_EQ(p.encap[0].outer_l3, gd::l3_kind::ipv6);
  EXPECT_FALSE(p.encap[0].has_id);
  EXPECT_EQ(p.protos & (gd::proto_ipv4 | gd::proto_ipv6 | gd::proto_ipip),
            gd::proto_ipv4 | gd::proto_ipv6 | gd::proto_ipip);
  expect_inner_tcp(p);
  EXPECT_EQ(gd::make_flow_key(p).tunnel, gd::encap_kind::none);
}

// Wraps an IPv4 packet in max_encap IPv4-in-IPv4 layers and Ethernet.
bytes ipip_depth_limit_frame(const bytes& ip_in) {
  bytes ip = ip_in;
  for (uint32_t i = 0; i < gd::max_encap; ++i) {
    bytes outer = ipv4_hdr(gd::ipproto_ipip, static_cast<uint32_t>(ip.size()));
    append(outer, ip);
    ip = outer;
  }
  bytes f = eth_hdr(0x0800);
  append(f, ip);
  return f;
}

TEST(PktTunnel, AnEncapsulationPastTheLimitStaysWhollyPayload) {
  // The innermost decoded packet is UDP to the MPLS-in-UDP port, carrying a
  // label and an IPv4 packet: the fifth encapsulation. Its labels stay in
  // the UDP payload, which starts right after the UDP header.
  bytes mpls = {0x00, 0x01, 0x01, 0x40};
  append(mpls, inner_tcp4());
  const bytes u = udp_dgram(1000, gd::udp_port_mpls, mpls);
  bytes ip = ipv4_hdr(17, static_cast<uint32_t>(u.size()));
  append(ip, u);
  bytes f = ipip_depth_limit_frame(ip);
  gd::parsed_pkt p;
  ASSERT_TRUE(gd::parse(f.data(), static_cast<uint32_t>(f.size()), p)) << gd::to_string(p.error);
  EXPECT_TRUE(p.encap_limit);
  EXPECT_EQ(p.encap_count, gd::max_encap);
  ASSERT_EQ(p.l4, gd::l4_kind::udp);
  EXPECT_EQ(p.payload_off, p.l4_off + 8u);
  EXPECT_EQ(p.payload_len, mpls.size());
  EXPECT_EQ(p.payload_off + p.payload_len, f.size());

  // GRE as the fifth: the payload is the GRE header and what it carries.
  bytes gre = {0x00, 0x00, 0x08, 0x00};
  append(gre, inner_tcp4());
  ip = ipv4_hdr(gd::ipproto_gre, static_cast<uint32_t>(gre.size()));
  append(ip, gre);
  f = ipip_depth_limit_frame(ip);
  ASSERT_TRUE(gd::parse(f.data(), static_cast<uint32_t>(f.size()), p)) << gd::to_string(p.error);
  EXPECT_TRUE(p.encap_limit);
  EXPECT_EQ(p.l4, gd::l4_kind::other);
  EXPECT_EQ(p.l4_proto, gd::ipproto_gre);
  EXPECT_EQ(p.payload_off, p.l4_off);
  EXPECT_EQ(p.payload_len, gre.size());
}

TEST(PktTunnel, DepthIsBoundedAndFragmentsAreNotWalkedInto) {
  // max_encap + 1 IPv4-in-IPv4 layers around TCP.
  bytes ip = inner_tcp4();
  for (uint32_t i = 0; i < gd::max_encap + 1; ++i) {
    bytes outer = ipv4_hdr(gd::ipproto_ipip, static_cast<uint32_t>(ip.size()));
    append(outer, ip);
    ip = outer;
  }
  bytes f = eth_hdr(0x0800);
  append(f, ip);
  gd::parsed_pkt p;
  ASSERT_TRUE(gd::parse(f.data(), static_cast<uint32_t>(f.size()), p)) << gd::to_string(p.error);
  EXPECT_EQ(p.encap_count, gd::max_encap);
  EXPECT_TRUE(p.encap_limit);
  EXPECT_EQ(p.l3, gd::l3_kind::ipv4);
  EXPECT_EQ(p.l4_proto, gd::ipproto_ipip) << "the innermost decoded header still carries IP";
  EXPECT_FALSE(p.protos & gd::proto_tcp);
  // A first fragment of a VXLAN datagram: UDP ports parsed, nothing counted
  // as UDP and nothing decapsulated until it is reassembled.
  bytes vx = {0x08, 0, 0, 0, 0, 0, 1, 0};
  append(vx, inner_eth(0x0800, inner_tcp4()));
  const bytes u = udp_dgram(1000, gd::udp_port_vxlan, vx);
  bytes fr = eth_hdr(0x0800);
  append(fr, ipv4_hdr(17, static_cast<uint32_t>(u.size()), {}, 0x2000));  // MF, offset 0
  append(fr, u);
  ASSERT_TRUE(gd::parse(fr.data(), static_cast<uint32_t>(fr.size()), p)) << gd::to_string(p.error);
  EXPECT_TRUE(p.is_fragment);
  EXPECT_EQ(p.l4, gd::l4_kind::udp);
  EXPECT_EQ(p.encap_count, 0u);
  EXPECT_FALSE(p.protos & gd::proto_udp);
}

TEST(PktTunnel, GeneveWithOptionsCarryingIpv6) {
  // Version 0, 8 bytes of options, protocol IPv6, VNI 7.
  bytes gv = {0x02, 0x00, 0x86, 0xdd, 0, 0, 7, 0, 0x01, 0x02, 0x03, 0x01, 0xaa, 0xbb, 0xcc, 0xdd};
  bytes v6 = ipv6_hdr(17, 8 + 4);
  append(v6, udp_dgram(5000, 5001, {1, 2, 3, 4}));
  append(gv, v6);
  const bytes f = udp4_frame(1234, gd::udp_port_geneve, gv);
  gd::parsed_pkt p;
  ASSERT_TRUE(gd::parse(f.data(), static_cast<uint32_t>(f.size()), p)) << gd::to_string(p.error);
  ASSERT_EQ(p.encap_count, 1u);
  EXPECT_EQ(p.encap[0].kind, gd::encap_kind::geneve);
  EXPECT_EQ(p.encap[0].id, 7u);
  EXPECT_EQ(p.l3, gd::l3_kind::ipv6);
  EXPECT_EQ(p.l4, gd::l4_kind::udp);
  EXPECT_EQ(p.dst_port, 5001);
  EXPECT_EQ(p.payload_len, 4u);
  // DNS on the other port wins (tshark tries the lower port first).
  const bytes d = udp4_frame(gd::udp_port_geneve, 53, dns_query());
  ASSERT_TRUE(gd::parse(d.data(), static_cast<uint32_t>(d.size()), p));
  EXPECT_EQ(p.encap_count, 0u);
  EXPECT_EQ(p.dst_port, 53);
}

// ---- fuzz-ish ------------------------------------------------------------------------

TEST(PktFuzz, RandomAndMutatedBuffers) {
  std::vector<bytes> seeds = {tcp4_frame(), ipv6_ext_frame(0x0001, udp_dgram(1, 53, dns_query())),
                              ipv6_ext_frame(8 << 3, bytes(8, 1))};
  {
    bytes f = eth_hdr(0x88a8);
    append(f, {0, 10, 0x81, 0x00, 0, 20, 0x08, 0x00});
    bytes u = udp_dgram(1, 53, dns_query());
    append(f, ipv4_hdr(17, static_cast<uint32_t>(u.size()), {0x94, 0x04, 0, 0}));
    append(f, u);
    seeds.push_back(f);
  }
  std::mt19937 rng(12345);
  char name[256];
  char path[64];
  uint64_t parsed_ok = 0, dns_ok = 0;
  for (int it = 0; it < 100000; ++it) {
    bytes b;
    if (it % 3 == 0) {
      b.resize(rng() % 200);
      for (auto& x : b) x = static_cast<uint8_t>(rng());
    } else {
      b = seeds[rng() % seeds.size()];
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int k = 0; k < flips; ++k) b[rng() % b.size()] = static_cast<uint8_t>(rng());
      if (rng() % 2) b.resize(rng() % (b.size() + 1));
    }
    b.shrink_to_fit();
    const uint32_t n = static_cast<uint32_t>(b.size());
    gd::parsed_pkt p;
    const bool ok = gd::parse(b.data(), n, p);
    ASSERT_EQ(ok, !p.malformed);
    ASSERT_LE(static_cast<uint64_t>(p.payload_off) + p.payload_len, n);
    if (ok) {
      ++parsed_ok;
      ASSERT_LE(p.l3_off, n);
      if (p.l4 == gd::l4_kind::tcp || p.l4 == gd::l4_kind::udp) {
        ASSERT_LE(p.l4_off + 8u, n);
      }
      (void)gd::make_flow_key(p);
      (void)gd::flow_hash(gd::make_flow_key(p), (it & 1) != 0);
      (void)gd::l4_checksum_ok(b.data(), n, p);
      (void)gd::http_classify(b.data() + p.payload_off, p.payload_len);
      uint32_t path_len = 0;
      (void)gd::http_request_path(b.data() + p.payload_off, p.payload_len, path, sizeof path, &path_len);
    }
    (void)gd::ipv4_checksum_ok(b.data(), n, p);
    (void)gd::parse_l3(b.data(), n, p);

    // DNS: raw buffer, and the UDP payload of the parsed seed.
    const name_read r = qname_of(b.data(), n, name, sizeof name);
    if (r.error == gd::dns_error::none) {
      ++dns_ok;
      ASSERT_LE(r.len, 254u);
      ASSERT_EQ(name[r.len], '\0');
    }
    if (ok && p.payload_off <= n) {
      const name_read r2 = qname_of(b.data() + p.payload_off, p.payload_len, name, sizeof name);
      if (r2.error == gd::dns_error::none) {
        ASSERT_EQ(name[r2.len], '\0');
      }
    }
    gd::dns_header h;
    if (gd::dns_parse_header(b.data(), n, h)) (void)gd::dns_header_sane(h, n);
  }
  // Sanity that the mutator reaches deep paths, not just early rejects.
  EXPECT_GT(parsed_ok, 1000u);
  EXPECT_GT(dns_ok, 0u);
}

}  // namespace
