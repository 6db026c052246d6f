// SPDX-License-Identifier: Apache-2.0
// The packet parser: parse() for Ethernet frames and parse_l3() for packets
// that start at their IP header (a reassembled datagram, raw IP).
//
// Every read is bounds-checked against the captured length: hostile or
// truncated input is reported through parsed_pkt::malformed/error, never read
// past. The parser walks header by header (Ethernet, VLAN tags, IP, the
// transport header), and through up to max_encap encapsulations (ether.hpp,
// ip.hpp, l4.hpp, tunnel.hpp), so the L3/L4 fields of the result describe the
// innermost packet.
#pragma once

#include <gnio/device/pkt/ether.hpp>
#include <gnio/device/pkt/tunnel.hpp>

namespace gnio::device {
namespace detail {

// Records the encapsulation a step named and clears the L3/L4 summary for
// the packet inside. False when max_encap are recorded already: the walk
// stops and the rest stays payload (encap_limit).
GNIO_HOST_DEVICE inline bool push_encap(const cursor& c, parsed_pkt& o) {
  if (o.encap_count == max_encap) {
    o.encap_limit = true;
    return false;
  }
  encap_layer& e = o.encap[o.encap_count++];
  e.kind = c.push;
  e.has_id = c.has_id;
  e.id = c.id;
  e.off = static_cast<uint16_t>(c.hdr_off);
  // MPLS or PPPoE straight on Ethernet has no IP header around it.
  const bool carried_by_ip = o.l3 == l3_kind::ipv4 || o.l3 == l3_kind::ipv6;
  e.outer_l3 = carried_by_ip ? o.l3 : l3_kind::none;
  e.outer_l3_off = carried_by_ip ? o.l3_off : 0;
  e.outer_l4_proto = o.l4 == l4_kind::udp ? static_cast<uint8_t>(ipproto_udp) : o.l4_proto;
  e.outer_l4_off = o.l4_off;
  reset_inner(o);
  return true;
}

// The walk from the header c names. Terminates: every step either ends the
// walk or moves to a header inside the one it decoded, encapsulations are
// capped by max_encap, and each step is bounded itself (VLAN tags, IPv6
// extension headers, MPLS labels, GTP-U extensions by the bytes present).
// avail and short_read: as pkt_view's (a view of inline headers); the walk
// stops once a header reaches past avail.
GNIO_HOST_DEVICE inline bool parse_walk(const uint8_t* data, cursor c, parsed_pkt& o, uint32_t avail = 0xffffffffu,
                                        bool* short_read = nullptr) {
  constexpr uint32_t max_steps = 4 * (max_encap + 2);
  for (uint32_t step = 0; step < max_steps && c.next != layer::end; ++step) {
    if (short_read && *short_read) break;
    const pkt_view v{data, c.end, avail, short_read};
    if (c.push != encap_kind::none && !push_encap(c, o)) break;
    const layer k = c.next;
    const uint32_t off = c.off;
    const uint16_t et = c.ethertype;
    c = cursor{};
    switch (k) {
      case layer::ether: parse_ether(v, off, false, o, c); break;
      case layer::ethertype: parse_ethertype(v, off, et, o, c); break;
      case layer::ipv4: parse_ipv4(v, off, o, c); break;
      case layer::ipv6: parse_ipv6(v, off, o, c); break;
      case layer::ip_version:
        if (v.has(off, 1) && (v.data[off] >> 4) == 6) parse_ipv6(v, off, o, c);
        else parse_ipv4(v, off, o, c);  // anything else is reported as a bad IPv4 version
        break;
      case layer::mpls: parse_mpls(v, off, o, c); break;
      case layer::pppoe: parse_pppoe(v, off, o, c); break;
      case layer::gre: parse_gre(v, off, o, c); break;
      case layer::erspan2: parse_erspan(v, off, false, o, c); break;
      case layer::erspan3: parse_erspan(v, off, true, o, c); break;
      case layer::vxlan: parse_vxlan(v, off, o, c); break;
      case layer::geneve: parse_geneve(v, off, o, c); break;
      case layer::gtpu: parse_gtpu(v, off, o, c); break;
      case layer::l2tp: parse_l2tp(v, off, o, c); break;
      case layer::end: break;
    }
    // A whole UDP datagram (or one the capture cut short) on a tunnel port.
    const bool ip_step = k == layer::ipv4 || k == layer::ipv6 || k == layer::ip_version;
    if (ip_step && c.next == layer::end && o.l4 == l4_kind::udp && !o.is_fragment &&
        (!o.malformed || o.error == pkt_error::truncated_payload)) {
      const layer t = udp_tunnel(o);
      if (t != layer::end) c = cursor{t, 0, o.payload_off, o.payload_off + o.payload_len};
    }
  }
  return !o.malformed;
}

}  // namespace detail

// An Ethernet II frame, with up to max_vlan_tags 802.1Q/802.1ad/0x9100 tags
// and up to max_encap encapsulations inside. Returns false when malformed
// (out.error says why); fields parsed before the problem stay valid.
GNIO_HOST_DEVICE inline bool parse(const uint8_t* data, uint32_t len, parsed_pkt& out) {
  out = parsed_pkt{};
  const uint32_t n = data ? len : 0u;
  detail::cursor c{};
  detail::parse_ether(pkt_view{data, n}, 0, true, out, c);
  return detail::parse_walk(data, c, out);
}

// A frame whose headers may be in a completion's inline copy (frame_ref):
// parsed from that copy, and from the frame's buffer only when a header
// reaches past it (the result is the same as parse(f.data, f.len, out)).
// *base (when given) is where the result's offsets point for reading header
// bytes: f.hdr or f.data. Payload past the headers is at f.data.
GNIO_HOST_DEVICE inline bool parse(const frame_ref& f, parsed_pkt& out, const uint8_t** base = nullptr) {
  if (f.whole() || f.hdr == f.data) {
    if (base) *base = f.hdr;
    return parse(f.hdr, f.len, out);
  }
  out = parsed_pkt{};
  bool short_read = false;
  detail::cursor c{};
  detail::parse_ether(pkt_view{f.hdr, f.hdr ? f.len : 0u, f.hdr_len, &short_read}, 0, true, out, c);
  const bool ok = detail::parse_walk(f.hdr, c, out, f.hdr_len, &short_read);
  if (!short_read) {
    if (base) *base = f.hdr;
    return ok;
  }
  if (base) *base = f.data;
  return parse(f.data, f.len, out);
}

// A packet that starts at its IPv4 or IPv6 header; the version picks the
// family (ethertype is set to match). Returns false when malformed.
GNIO_HOST_DEVICE inline bool parse_l3(const uint8_t* data, uint32_t len, parsed_pkt& out) {
  out = parsed_pkt{};
  const uint32_t n = data ? len : 0u;
  if (n == 0) {
    out.l3 = l3_kind::other;
    return detail::fail(out, pkt_error::truncated_l3);
  }
  detail::cursor c{};
  switch (data[0] >> 4) {
    case 4:
      out.ethertype = ethertype_ipv4;
      c = detail::cursor{detail::layer::ipv4, 0, 0, n};
      break;
    case 6:
      out.ethertype = ethertype_ipv6;
      c = detail::cursor{detail::layer::ipv6, 0, 0, n};
      break;
    default: out.l3 = l3_kind::other; return detail::fail(out, pkt_error::bad_ip_version);
  }
  return detail::parse_walk(data, c, out);
}

}  // namespace gnio::device
