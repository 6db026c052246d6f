// SPDX-License-Identifier: Apache-2.0
// gnio::device::parse and parse_l3 over arbitrary frames: Ethernet with VLAN
// stacks, IPv4 with options, IPv6 with extension headers, ARP, TCP with
// options, UDP, ICMP, and the tunnels inside (IP in IP, GRE/ERSPAN, VXLAN,
// GENEVE, GTP-U, MPLS, PPPoE); plus the flow key, RSS hash and checksum helpers that
// consume a parse result.
//
// Input: the frame itself (Ethernet). Every parse is checked for what its
// callers rely on: the result says malformed exactly when it returns false,
// every offset and the payload lie inside the buffer, header lengths agree
// with the fields they were computed from, encapsulations are recorded in
// order and within max_encap, and the raw-IP entry point decodes the same
// IP packet as the Ethernet one.
#include <gnio/device/flow_table.hpp>  // canonical_flow_key
#include <gnio/device/pkt.hpp>

#include <cstring>
#include <initializer_list>

#include "check.hpp"

using namespace gnio::device;

namespace {

const uint8_t* data_of_current = nullptr;  // the frame check_inside looks at

void check_inside(const parsed_pkt& p, uint32_t len) {
  GNIO_FUZZ_CHECK(p.malformed == (p.error != pkt_error::none));
  if (p.l3 != l3_kind::none) GNIO_FUZZ_CHECK(p.l3_off <= len);
  if (p.l4 != l4_kind::none) GNIO_FUZZ_CHECK(p.l4_off <= len);
  // The payload is set on success and on truncated_payload (headers intact).
  if (!p.malformed || p.error == pkt_error::truncated_payload) {
    GNIO_FUZZ_CHECK(p.payload_off <= len);
    GNIO_FUZZ_CHECK(p.payload_len <= len - p.payload_off);
    if (p.l4 != l4_kind::none) GNIO_FUZZ_CHECK(p.l4_off <= p.payload_off);
    if (p.l3 != l3_kind::none) GNIO_FUZZ_CHECK(p.l3_off <= p.payload_off);
  }
  if (p.has_l2) {
    GNIO_FUZZ_CHECK(len >= 14u);
    GNIO_FUZZ_CHECK(p.vlan_count <= max_vlan_tags);
    if (p.l3 != l3_kind::none && p.encap_count == 0) GNIO_FUZZ_CHECK(p.l3_off == 14u + 4u * p.vlan_count);
  }
  GNIO_FUZZ_CHECK(p.encap_count <= max_encap);
  if (p.encap_limit) GNIO_FUZZ_CHECK(p.encap_count == max_encap);
  uint32_t prev = 0;
  for (uint32_t i = 0; i < p.encap_count; ++i) {
    const encap_layer& e = p.encap[i];
    GNIO_FUZZ_CHECK(e.kind != encap_kind::none);
    GNIO_FUZZ_CHECK(e.off < len && e.off >= prev);  // outermost first
    if (e.outer_l3 != l3_kind::none) GNIO_FUZZ_CHECK(e.outer_l3_off <= e.off);
    if (p.l3 != l3_kind::none) GNIO_FUZZ_CHECK(p.l3_off > e.off);  // the inner packet is inside
    prev = e.off;
    flow_key o{};
    if (outer_udp_flow_key(data_of_current, len, p, i, o)) GNIO_FUZZ_CHECK(o.proto == ipproto_udp && o.family != 0);
  }
  if (p.l3 == l3_kind::ipv4 && p.error != pkt_error::truncated_l3 && p.error != pkt_error::bad_ipv4_version) {
    GNIO_FUZZ_CHECK(p.ipv4.hdr_len == p.ipv4.ihl * 4u);
    GNIO_FUZZ_CHECK(p.ipv4.has_options == (p.ipv4.ihl > 5));
    if (!p.malformed) {
      GNIO_FUZZ_CHECK(p.ipv4.ihl >= 5);
      GNIO_FUZZ_CHECK(p.ipv4.total_length >= p.ipv4.hdr_len);
      GNIO_FUZZ_CHECK(p.l3_off + p.ipv4.total_length <= len);
    }
  }
  if (p.l3 == l3_kind::ipv6 && !p.malformed) {
    GNIO_FUZZ_CHECK(p.ipv6.ext_count <= max_ipv6_ext_headers);
    GNIO_FUZZ_CHECK(p.ipv6.hdr_len >= 40u + 8u * p.ipv6.ext_count);
    GNIO_FUZZ_CHECK(p.l3_off + p.ipv6.hdr_len <= len);
    if (!p.ipv6.jumbo) GNIO_FUZZ_CHECK(p.l3_off + 40u + p.ipv6.payload_length <= len);
  }
  if (p.l4 == l4_kind::tcp && !p.malformed) {
    GNIO_FUZZ_CHECK(p.tcp.hdr_len >= 20 && p.tcp.hdr_len <= 60 && p.tcp.hdr_len % 4 == 0);
    GNIO_FUZZ_CHECK(p.payload_off == p.l4_off + p.tcp.hdr_len);
    GNIO_FUZZ_CHECK(p.tcp.sack_blocks <= 4);
  }
  if (p.l4 == l4_kind::udp && !p.malformed) {
    GNIO_FUZZ_CHECK(p.udp_length >= 8);
    GNIO_FUZZ_CHECK(p.payload_off == p.l4_off + 8);
    GNIO_FUZZ_CHECK(p.payload_len <= p.udp_length - 8u);
  }
  if (p.l3 == l3_kind::arp && !p.malformed) {
    GNIO_FUZZ_CHECK(p.payload_len == 0);
    GNIO_FUZZ_CHECK(p.l3_off + 8u + 2u * (p.arp.hlen + p.arp.plen) <= len);
  }
  if (p.is_fragment && !p.malformed) {
    // Later fragments carry no L4 header; the first may.
    const bool later = p.l3 == l3_kind::ipv4 ? p.ipv4.frag_offset != 0 : p.ipv6.frag_offset != 0;
    if (later) GNIO_FUZZ_CHECK(p.l4 == l4_kind::none);
  }
}

// The same IP packet decoded from another start must give the same answer,
// with every offset moved by the difference.
void check_same_ip(const parsed_pkt& a, const parsed_pkt& b, uint32_t shift) {
  GNIO_FUZZ_CHECK(a.l3 == b.l3);
  GNIO_FUZZ_CHECK(a.malformed == b.malformed);
  GNIO_FUZZ_CHECK(a.error == b.error);
  GNIO_FUZZ_CHECK(a.l4 == b.l4);
  GNIO_FUZZ_CHECK(a.l4_proto == b.l4_proto);
  GNIO_FUZZ_CHECK(a.is_fragment == b.is_fragment);
  GNIO_FUZZ_CHECK(a.src_port == b.src_port && a.dst_port == b.dst_port);
  if (!a.malformed || a.error == pkt_error::truncated_payload) {
    GNIO_FUZZ_CHECK(a.payload_len == b.payload_len);
    GNIO_FUZZ_CHECK(a.payload_off == b.payload_off + shift);
  }
  const flow_key ka = make_flow_key(a), kb = make_flow_key(b);
  GNIO_FUZZ_CHECK(ka == kb);
}

flow_key swapped(const flow_key& k) {
  flow_key r = k;
  std::memcpy(r.src, k.dst, 16);
  std::memcpy(r.dst, k.src, 16);
  r.src_port = k.dst_port;
  r.dst_port = k.src_port;
  return r;
}

// Scratch for the checksum round trip; frames longer than this skip it.
uint8_t scratch[4096];

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 0xffffffffu) return 0;
  const uint32_t len = static_cast<uint32_t>(size);
  parsed_pkt p;
  const bool ok = parse(data, len, p);
  GNIO_FUZZ_CHECK(ok == !p.malformed);
  data_of_current = data;
  check_inside(p, len);

  // The raw-IP start decodes the same packet. 802.3 lengths and unknown
  // EtherTypes have no IP packet to compare; a tunnel's inner packet is
  // bounded by the datagram that carries it, which parse_l3 cannot know.
  if (p.has_l2 && p.encap_count == 0 && (p.ethertype == ethertype_ipv4 || p.ethertype == ethertype_ipv6)) {
    const uint32_t off = p.l3_off;
    parsed_pkt r;
    const bool rok = parse_l3(data + off, len - off, r);
    GNIO_FUZZ_CHECK(rok == !r.malformed);
    data_of_current = data + off;
    check_inside(r, len - off);
    data_of_current = data;
    // parse_l3 chooses the family by the version nibble; it agrees with the
    // EtherType only when the header says what the EtherType said.
    const uint8_t want = p.ethertype == ethertype_ipv4 ? 4 : 6;
    if (len - off > 0 && (data[off] >> 4) == want) check_same_ip(p, r, off);
  }

  // Flow key: the symmetric hash and the canonical key ignore direction.
  const flow_key k = make_flow_key(p);
  const flow_key ks = swapped(k);
  GNIO_FUZZ_CHECK(flow_hash(k, true) == flow_hash(ks, true));
  const flow_key c1 = canonical_flow_key(k), c2 = canonical_flow_key(ks);
  GNIO_FUZZ_CHECK(c1 == c2);
  if (k.family == 0) GNIO_FUZZ_CHECK(flow_hash(k) == 0);

  // Checksums: never read outside, and filling in the IPv4 header checksum
  // makes it verify.
  (void)l4_checksum_ok(data, len, p);
  if (p.l3 == l3_kind::ipv4 && p.ipv4.ihl >= 5 && p.l3_off + p.ipv4.hdr_len <= len && len <= sizeof scratch) {
    std::memcpy(scratch, data, len);
    uint8_t* h = scratch + p.l3_off;
    h[10] = h[11] = 0;
    const uint16_t c = ipv4_header_checksum(h, p.ipv4.hdr_len);
    h[10] = static_cast<uint8_t>(c >> 8);
    h[11] = static_cast<uint8_t>(c);
    GNIO_FUZZ_CHECK(ipv4_checksum_ok(scratch, len, p));
  }
  return 0;
}
