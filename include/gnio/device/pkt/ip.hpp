// SPDX-License-Identifier: Apache-2.0
// Network headers: IPv4 (options), IPv6 (extension headers, fragment header,
// jumbograms) and ARP. Each is a step of the parser's walk (parse.hpp): it
// fills parsed_pkt and names what follows in the cursor.
#pragma once

#include <gnio/device/pkt/l4.hpp>

namespace gnio::device {
namespace detail {

// Starting a new IP header: the L3/L4 summary describes the innermost packet,
// so what an outer header left there goes.
GNIO_HOST_DEVICE inline void reset_inner(parsed_pkt& o) {
  o.l3 = l3_kind::none;
  o.l3_off = 0;
  o.l4_proto = 0;
  o.is_fragment = false;
  o.ipv4 = ipv4_fields{};
  o.ipv6 = ipv6_fields{};
  o.arp = arp_fields{};
  o.l4 = l4_kind::none;
  o.l4_off = 0;
  o.src_port = 0;
  o.dst_port = 0;
  o.udp_length = 0;
  o.udp_checksum = 0;
  o.tcp = tcp_fields{};
  o.icmp = icmp_fields{};
  o.payload_off = 0;
  o.payload_len = 0;
}

GNIO_HOST_DEVICE GNIO_FORCEINLINE bool finish_ip(const pkt_view& v, uint32_t ip_end, bool ok, parsed_pkt& o) {
  if (ok && ip_end > v.len) return fail(o, pkt_error::truncated_payload);
  return ok;
}

// What an IP header's protocol leads to: another IP header or GRE (the
// parser walks into them), else the transport header parsed here. A
// fragment is never walked into: its inner headers are incomplete until
// reassembly (pkt/frag.hpp). UDP tunnels are found by the caller once the
// UDP header is parsed.
GNIO_HOST_DEVICE inline void ip_payload(const pkt_view& v, uint32_t off, uint32_t ip_end, uint8_t proto, bool v6,
                                        parsed_pkt& o, cursor& c) {
  if (!o.is_fragment && (proto == ipproto_ipip || proto == ipproto_ipv6 || proto == ipproto_gre)) {
    o.l4 = l4_kind::other;
    o.l4_off = static_cast<uint16_t>(off);
    o.l4_proto = proto;
    const uint32_t end = min_u32(v.len, ip_end);
    set_payload(o, off, end);
    finish_ip(v, ip_end, true, o);  // a capture cut short still shows what it holds
    if (proto == ipproto_gre) {
      c = cursor{layer::gre, 0, off, end};
    } else {
      o.protos |= proto_ipip;
      c = cursor{proto == ipproto_ipip ? layer::ipv4 : layer::ipv6, 0, off, end, encap_kind::ipip, false, 0, o.l3_off};
    }
    return;
  }
  finish_ip(v, ip_end, parse_l4(v, off, ip_end, proto, v6, o), o);
}

GNIO_HOST_DEVICE inline void parse_ipv4(const pkt_view& v, uint32_t off, parsed_pkt& o, cursor& c) {
  reset_inner(o);
  o.l3 = l3_kind::ipv4;
  o.l3_off = static_cast<uint16_t>(off);
  o.protos |= proto_ipv4;
  if (!v.has(off, 20)) {
    fail(o, pkt_error::truncated_l3);
    return;
  }
  const uint8_t* p = v.data + off;
  if ((p[0] >> 4) != 4) {
    fail(o, pkt_error::bad_ipv4_version);
    return;
  }
  ipv4_fields& h = o.ipv4;
  h.ihl = p[0] & 0x0f;
  h.hdr_len = static_cast<uint8_t>(h.ihl * 4);
  h.tos = p[1];
  h.total_length = rd16(p + 2);
  h.id = rd16(p + 4);
  const uint16_t fw = rd16(p + 6);
  h.df = (fw & 0x4000) != 0;
  h.mf = (fw & 0x2000) != 0;
  h.frag_offset = fw & 0x1fff;
  h.ttl = p[8];
  h.proto = p[9];
  h.checksum = rd16(p + 10);
  h.src = rd32(p + 12);
  h.dst = rd32(p + 16);
  h.has_options = h.ihl > 5;
  o.l4_proto = h.proto;
  o.is_fragment = h.mf || h.frag_offset != 0;

  if (h.ihl < 5) {
    fail(o, pkt_error::bad_ihl);
    return;
  }
  const uint32_t hl = h.hdr_len;
  if (!v.has(off, hl)) {
    fail(o, pkt_error::truncated_l3);
    return;
  }
  if (h.total_length < hl) {
    fail(o, pkt_error::bad_total_length);
    return;
  }
  const uint32_t ip_end = off + h.total_length;
  if (h.frag_offset != 0) {
    // Later fragments carry only payload; the L4 header was in the first.
    o.l4 = l4_kind::none;
    o.l4_off = static_cast<uint16_t>(off + hl);
    set_payload(o, off + hl, min_u32(v.len, ip_end));
    finish_ip(v, ip_end, true, o);
    return;
  }
  ip_payload(v, off + hl, ip_end, h.proto, false, o, c);
}

GNIO_HOST_DEVICE inline void parse_ipv6(const pkt_view& v, uint32_t off, parsed_pkt& o, cursor& c) {
  reset_inner(o);
  o.l3 = l3_kind::ipv6;
  o.l3_off = static_cast<uint16_t>(off);
  if (!v.has(off, 40)) {
    o.protos |= proto_ipv6;
    fail(o, pkt_error::truncated_l3);
    return;
  }
  const uint8_t* p = v.data + off;
  // tshark shows a header with the wrong version as data, not as IPv6.
  if ((p[0] >> 4) != 6) {
    fail(o, pkt_error::bad_ipv6_version);
    return;
  }
  o.protos |= proto_ipv6;
  ipv6_fields& h = o.ipv6;
  h.traffic_class = static_cast<uint8_t>(((p[0] & 0x0f) << 4) | (p[1] >> 4));
  h.flow_label = (static_cast<uint32_t>(p[1] & 0x0f) << 16) | rd16(p + 2);
  h.payload_length = rd16(p + 4);
  h.next_header = p[6];
  h.hop_limit = p[7];
  for (uint32_t i = 0; i < 16; ++i) {
    h.src[i] = p[8 + i];
    h.dst[i] = p[24 + i];
  }
  uint32_t ip_end = off + 40 + h.payload_length;
  if (h.payload_length == 0 && h.next_header == ipproto_hopopts) {
    // RFC 2675 jumbogram: the real length lives in a hop-by-hop option.
    h.jumbo = true;
    ip_end = v.len;
  }

  uint32_t cur = off + 40;
  uint8_t nh = h.next_header;
  bool later_fragment = false;
  for (;;) {
    if (nh != ipproto_hopopts && nh != ipproto_routing && nh != ipproto_fragment && nh != ipproto_dstopts &&
        nh != ipproto_ah) {
      break;
    }
    if (h.ext_count == max_ipv6_ext_headers) {
      fail(o, pkt_error::too_many_ext_headers);
      return;
    }
    // Every extension header is at least 8 bytes long.
    if (!fits(ip_end, cur, 8)) {
      fail(o, pkt_error::bad_total_length);
      return;
    }
    if (!v.has(cur, 8)) {
      fail(o, pkt_error::truncated_ext_header);
      return;
    }
    const uint8_t* q = v.data + cur;
    uint32_t ehl;
    if (nh == ipproto_fragment) {
      ehl = 8;
      const uint16_t fo = rd16(q + 2);
      h.has_frag_header = true;
      h.frag_offset = static_cast<uint16_t>(fo >> 3);
      h.mf = (fo & 1) != 0;
      h.frag_id = rd32(q + 4);
      // A fragment header with offset 0 and no more fragments (an "atomic
      // fragment", RFC 6946) is a whole datagram.
      o.is_fragment = h.frag_offset != 0 || h.mf;
      later_fragment = h.frag_offset != 0;
    } else if (nh == ipproto_ah) {
      ehl = (static_cast<uint32_t>(q[1]) + 2) * 4;
    } else {
      ehl = (static_cast<uint32_t>(q[1]) + 1) * 8;
    }
    if (!fits(ip_end, cur, ehl)) {
      fail(o, pkt_error::bad_total_length);
      return;
    }
    if (!v.has(cur, ehl)) {
      fail(o, pkt_error::truncated_ext_header);
      return;
    }
    nh = q[0];
    cur += ehl;
    ++h.ext_count;
    if (later_fragment) break;
  }
  h.hdr_len = static_cast<uint16_t>(cur - off);
  h.final_next_header = nh;
  o.l4_proto = nh;

  if (later_fragment) {
    o.l4 = l4_kind::none;
    o.l4_off = static_cast<uint16_t>(cur);
    set_payload(o, cur, min_u32(v.len, ip_end));
    finish_ip(v, ip_end, true, o);
    return;
  }
  ip_payload(v, cur, ip_end, nh, true, o, c);
}

GNIO_HOST_DEVICE inline void parse_arp(const pkt_view& v, uint32_t off, parsed_pkt& o) {
  reset_inner(o);
  o.l3 = l3_kind::arp;
  o.l3_off = static_cast<uint16_t>(off);
  o.protos |= proto_arp;
  if (!v.has(off, 8)) {
    fail(o, pkt_error::truncated_l3);
    return;
  }
  const uint8_t* p = v.data + off;
  arp_fields& a = o.arp;
  a.htype = rd16(p);
  a.ptype = rd16(p + 2);
  a.hlen = p[4];
  a.plen = p[5];
  a.op = rd16(p + 6);
  const uint32_t total = 8 + 2 * (static_cast<uint32_t>(a.hlen) + a.plen);
  if (!v.has(off, total)) {
    fail(o, pkt_error::truncated_l3);
    return;
  }
  if (a.htype == 1 && a.ptype == ethertype_ipv4 && a.hlen == 6 && a.plen == 4) {
    a.eth_ipv4 = true;
    for (uint32_t i = 0; i < 6; ++i) {
      a.sha[i] = p[8 + i];
      a.tha[i] = p[18 + i];
    }
    a.spa = rd32(p + 14);
    a.tpa = rd32(p + 24);
  }
  // Anything after the ARP body is Ethernet padding, not payload.
  set_payload(o, off + total, off + total);
}

}  // namespace detail
}  // namespace gnio::device
