// SPDX-License-Identifier: Apache-2.0
// Tunnel headers the parser walks through: GRE (RFC 2784/2890, with key and
// sequence number) and ERSPAN types I, II and III inside it, VXLAN (RFC 7348),
// GENEVE (RFC 8926, options skipped), GTP-U (3GPP TS 29.281, extension
// headers skipped), MPLS label stacks (RFC 3032, also in UDP, RFC 7510),
// PPPoE sessions (RFC 2516) and L2TPv2 data messages (RFC 2661) carrying PPP. Each decoder checks its header against the bytes
// that can hold it, sets its proto_* bit, names the encapsulation (cursor::push)
// and where the inner packet starts; IP in IP is found by ip.hpp. Steps of the
// parser's walk (parse.hpp). A decoder moves the payload past its header only
// when the walk ends there: one that names an inner packet leaves the payload
// as it was, so that a walk stopped at max_encap keeps the whole fifth
// encapsulation, its header included, as the payload of the packet around it.
#pragma once

#include <gnio/device/pkt/proto.hpp>

namespace gnio::device {
namespace detail {

GNIO_HOST_DEVICE GNIO_FORCEINLINE void enter(cursor& c, encap_kind k, uint32_t hdr_off, bool has_id, uint32_t id,
                                             layer next, uint32_t off, uint32_t end, uint16_t et = 0) {
  c.next = next;
  c.ethertype = et;
  c.off = off;
  c.end = end;
  c.push = k;
  c.hdr_off = hdr_off;
  c.has_id = has_id;
  c.id = id;
}

// MPLS or PPPoE straight after an Ethernet header: until an inner IP packet
// is found, the frame's L3 is `other` (one inside a UDP tunnel keeps the
// carrying IP/UDP headers as its L3/L4).
GNIO_HOST_DEVICE GNIO_FORCEINLINE void reset_l3_other(parsed_pkt& o, uint32_t off, uint32_t end) {
  if (o.l3 != l3_kind::none) return;
  o.l3 = l3_kind::other;
  o.l3_off = static_cast<uint16_t>(off);
  set_payload(o, off, end);
}

// The layer an EtherType-valued protocol field names, for GRE and GENEVE.
GNIO_HOST_DEVICE GNIO_FORCEINLINE layer by_ethertype(uint16_t et) {
  return et == ethertype_teb ? layer::ether : layer::ethertype;
}

// GRE version 0. Version 1 (PPTP) and the obsolete routing bit are counted
// as GRE and not walked into.
GNIO_HOST_DEVICE inline void parse_gre(const pkt_view& v, uint32_t off, parsed_pkt& o, cursor& c) {
  if (!v.has(off, 4)) {
    fail(o, pkt_error::truncated_tunnel);
    return;
  }
  o.protos |= proto_gre;
  const uint8_t* p = v.data + off;
  const bool csum = (p[0] & 0x80) != 0, routing = (p[0] & 0x40) != 0, key = (p[0] & 0x20) != 0,
             seq = (p[0] & 0x10) != 0;
  const uint8_t version = p[1] & 0x07;
  if (version != 0 || routing) return;
  const uint16_t proto = rd16(p + 2);
  const uint32_t hl = 4u + (csum ? 4u : 0u) + (key ? 4u : 0u) + (seq ? 4u : 0u);
  if (!v.has(off, hl)) {
    fail(o, pkt_error::truncated_tunnel);
    return;
  }
  const uint32_t key_val = key ? rd32(p + 4 + (csum ? 4 : 0)) : 0;
  const uint32_t inner = off + hl;
  if (proto == ethertype_erspan2) {
    // Type II has a sequence number and an 8-byte ERSPAN header; type I
    // neither, the mirrored frame follows GRE directly.
    if (seq) c = cursor{layer::erspan2, 0, inner, v.len};
    else enter(c, encap_kind::erspan, off, false, 0, layer::ether, inner, v.len);
    return;
  }
  if (proto == ethertype_erspan3) {
    c = cursor{layer::erspan3, 0, inner, v.len};
    return;
  }
  enter(c, encap_kind::gre, off, key, key_val, by_ethertype(proto), inner, v.len, proto);
}

GNIO_HOST_DEVICE inline void parse_erspan(const pkt_view& v, uint32_t off, bool type3, parsed_pkt& o, cursor& c) {
  uint32_t hl = type3 ? 12u : 8u;
  if (!v.has(off, hl)) {
    fail(o, pkt_error::truncated_tunnel);
    return;
  }
  o.protos |= proto_erspan;
  const uint8_t* p = v.data + off;
  const uint32_t session = (static_cast<uint32_t>(p[2] & 0x03) << 8) | p[3];
  if (type3 && (p[11] & 0x01)) hl += 8;  // O: an 8-byte platform-specific subheader
  if (!v.has(off, hl)) {
    fail(o, pkt_error::truncated_tunnel);
    return;
  }
  // The GRE header before it (o.l4_off) is the encapsulation's start.
  enter(c, encap_kind::erspan, o.l4_off, true, session, layer::ether, off + hl, v.len);
}

GNIO_HOST_DEVICE inline void parse_vxlan(const pkt_view& v, uint32_t off, parsed_pkt& o, cursor& c) {
  if (!v.has(off, 8)) {
    fail(o, pkt_error::truncated_tunnel);
    return;
  }
  const uint8_t* p = v.data + off;
  // RFC 7348: the I flag is set. Without it this is other traffic on port
  // 4789 (a random UDP flow), not walked into, as Linux's VXLAN receive path
  // drops it.
  if ((p[0] & 0x08) == 0) return;
  o.protos |= proto_vxlan;
  enter(c, encap_kind::vxlan, off, true, rd32(p + 4) >> 8, layer::ether, off + 8, v.len);
}

GNIO_HOST_DEVICE inline void parse_geneve(const pkt_view& v, uint32_t off, parsed_pkt& o, cursor& c) {
  if (!v.has(off, 8)) {
    fail(o, pkt_error::truncated_tunnel);
    return;
  }
  const uint8_t* p = v.data + off;
  if ((p[0] >> 6) != 0) return;  // an unknown version: its header cannot be read
  // A protocol the parser walks into (Ethernet, IPv4, IPv6, MPLS); anything
  // else on port 6081 is left as UDP payload.
  const uint16_t proto = rd16(p + 2);
  if (proto != ethertype_teb && proto != ethertype_ipv4 && proto != ethertype_ipv6 && proto != ethertype_mpls &&
      proto != ethertype_mpls_mc)
    return;
  o.protos |= proto_geneve;
  const uint32_t hl = 8u + (p[0] & 0x3fu) * 4u;
  if (!v.has(off, hl)) {
    fail(o, pkt_error::truncated_tunnel);
    return;
  }
  enter(c, encap_kind::geneve, off, true, rd32(p + 4) >> 8, by_ethertype(proto), off + hl, v.len, proto);
}

// GTP-U version 1: a G-PDU (message type 255) carries an IPv4 or IPv6 packet;
// other messages (echo, error indication, end marker) carry none.
GNIO_HOST_DEVICE inline void parse_gtpu(const pkt_view& v, uint32_t off, parsed_pkt& o, cursor& c) {
  if (!v.has(off, 8)) {
    fail(o, pkt_error::truncated_tunnel);
    return;
  }
  const uint8_t* p = v.data + off;
  if ((p[0] >> 5) != 1 || !(p[0] & 0x10)) return;  // not GTP version 1 (GTP')
  o.protos |= proto_gtpu;
  const uint8_t type = p[1];
  const uint32_t end = min_u32(v.len, off + 8u + rd16(p + 2));
  uint32_t hl = 8;
  if (p[0] & 0x07) {  // E, S or PN: sequence number, N-PDU number, next extension type
    hl = 12;
    if (!v.has(off, hl)) {
      fail(o, pkt_error::truncated_tunnel);
      return;
    }
    uint8_t next = (p[0] & 0x04) ? p[11] : 0;
    // Each extension header is a multiple of 4 bytes (length byte != 0) and
    // ends with the next one's type, so the walk is bounded by the capture.
    while (next != 0) {
      if (!v.has(off + hl, 4)) {
        fail(o, pkt_error::truncated_tunnel);
        return;
      }
      const uint32_t el = static_cast<uint32_t>(v.data[off + hl]) * 4u;
      if (el == 0 || !v.has(off + hl, el)) {
        fail(o, pkt_error::truncated_tunnel);
        return;
      }
      next = v.data[off + hl + el - 1];
      hl += el;
    }
  }
  // Not walked into (not a G-PDU, or empty): the UDP payload stays as it is.
  if (type != 255 || off + hl >= end) return;
  enter(c, encap_kind::gtpu, off, true, rd32(p + 4), layer::ip_version, off + hl, end);
}

// An MPLS label stack; below the bottom label an IPv4 or IPv6 packet, as
// told by its first nibble (pseudowires are not decoded).
GNIO_HOST_DEVICE inline void parse_mpls(const pkt_view& v, uint32_t off, parsed_pkt& o, cursor& c) {
  // In UDP (port 6635) a stack must end with its bottom label inside the
  // datagram and carry IP to be taken for MPLS; other traffic on that port
  // stays UDP payload. After an MPLS EtherType it is MPLS whatever follows.
  const bool in_udp = o.l4 == l4_kind::udp;
  reset_l3_other(o, off, v.len);
  uint32_t cur = off, top = 0;
  for (uint32_t n = 0;; ++n) {
    if (n == max_mpls_labels || !v.has(cur, 4)) {
      if (in_udp) return;
      // After an MPLS EtherType the encapsulation is MPLS even when its
      // stack is longer than the bound or never ends: counted, as tshark
      // counts it, and malformed.
      o.protos |= proto_mpls;
      fail(o, n == max_mpls_labels ? pkt_error::too_many_mpls_labels : pkt_error::truncated_tunnel);
      return;
    }
    const uint32_t e = rd32(v.data + cur);
    if (n == 0) top = e >> 12;
    cur += 4;
    if (e & 0x100u) break;  // bottom of stack
  }
  // The IP version of what follows the stack (0: nothing follows).
  const uint8_t ver = v.has(cur, 1) ? static_cast<uint8_t>(v.data[cur] >> 4) : 0;
  const bool ip_inside = ver == 4 || ver == 6;
  if (in_udp && !ip_inside) return;
  o.protos |= proto_mpls;
  if (!ip_inside) {
    set_payload(o, cur, v.len);
    return;
  }
  enter(c, encap_kind::mpls, off, true, top, ver == 4 ? layer::ipv4 : layer::ipv6, cur, v.len);
}

// PPP's protocol field at off: two bytes, or one when the peers agreed on
// protocol field compression (RFC 1661 section 6.5: a protocol number's first
// byte is even and its last odd, so an odd first byte is a 1-byte field).
// IPv4 (0x0021) and IPv6 (0x0057) are walked into; off moves past the field.
GNIO_HOST_DEVICE GNIO_FORCEINLINE layer ppp_protocol(const pkt_view& v, uint32_t& off) {
  if (!v.has(off, 1)) return layer::end;
  uint16_t proto = v.data[off];
  if ((proto & 1u) != 0) {
    off += 1;
  } else {
    if (!v.has(off, 2)) return layer::end;
    proto = rd16(v.data + off);
    off += 2;
  }
  return proto == 0x0021 ? layer::ipv4 : proto == 0x0057 ? layer::ipv6 : layer::end;
}

// A PPPoE session frame: the 6-byte PPPoE header, then PPP's protocol field
// (ppp_protocol; LCP, IPCP and the rest end the walk).
GNIO_HOST_DEVICE inline void parse_pppoe(const pkt_view& v, uint32_t off, parsed_pkt& o, cursor& c) {
  reset_l3_other(o, off, v.len);
  // The header and a protocol field of one byte (odd) or two.
  if (!v.has(off, 7) || ((v.data[off + 6] & 1u) == 0 && !v.has(off, 8))) {
    fail(o, pkt_error::truncated_tunnel);
    return;
  }
  const uint8_t* p = v.data + off;
  if (p[0] != 0x11 || p[1] != 0) return;  // version 1, type 1, session data
  o.protos |= proto_pppoe;
  const uint32_t end = min_u32(v.len, off + 6u + rd16(p + 4));
  uint32_t inner = off + 6;
  const layer next = ppp_protocol(v, inner);
  if (next == layer::end) {
    set_payload(o, inner, end);
    return;
  }
  enter(c, encap_kind::pppoe, off, true, rd16(p + 2), next, inner, end);
}

// PPP after an optional address/control pair (0xff 0x03), then its protocol
// field (ppp_protocol).
GNIO_HOST_DEVICE GNIO_FORCEINLINE layer ppp_payload(const pkt_view& v, uint32_t& off) {
  if (v.has(off, 2) && v.data[off] == 0xff && v.data[off + 1] == 0x03) off += 2;
  return ppp_protocol(v, off);
}

// An L2TP version 2 data message (control messages, T set, carry no packet):
// optional length, tunnel and session ids, optional Ns/Nr and offset pad,
// then PPP.
GNIO_HOST_DEVICE inline void parse_l2tp(const pkt_view& v, uint32_t off, parsed_pkt& o, cursor& c) {
  if (!v.has(off, 2)) {
    fail(o, pkt_error::truncated_tunnel);
    return;
  }
  const uint16_t flags = rd16(v.data + off);
  if ((flags & 0x000f) != 2) return;  // L2TPv3 and others are not decoded
  o.protos |= proto_l2tp;
  if (flags & 0x8000) return;  // a control message
  uint32_t hl = 2u + ((flags & 0x4000) ? 2u : 0u) + 4u + ((flags & 0x0800) ? 4u : 0u);
  if (!v.has(off, hl + ((flags & 0x0200) ? 2u : 0u))) {
    fail(o, pkt_error::truncated_tunnel);
    return;
  }
  const uint32_t ids = rd32(v.data + off + hl - ((flags & 0x0800) ? 8u : 4u));
  if (flags & 0x0200) hl += 2u + rd16(v.data + off + hl);  // offset size, then that much padding
  if (!v.has(off, hl)) {
    fail(o, pkt_error::truncated_tunnel);
    return;
  }
  uint32_t inner = off + hl;
  const layer next = ppp_payload(v, inner);
  if (next == layer::end) return;  // LCP, IPCP, ...: the UDP payload stays as it is
  enter(c, encap_kind::l2tp, off, true, ids, next, inner, v.len);
}

// A UDP tunnel on its IANA port, source or destination. DNS on the other
// port wins, as tshark's lower-port-first rule gives it.
GNIO_HOST_DEVICE inline layer udp_tunnel(const parsed_pkt& o) {
  const uint16_t s = o.src_port, d = o.dst_port;
  if (s == udp_port_dns || d == udp_port_dns) return layer::end;
  auto on = [s, d](uint16_t port) { return s == port || d == port; };
  if (on(udp_port_vxlan)) return layer::vxlan;
  if (on(udp_port_geneve)) return layer::geneve;
  if (on(udp_port_gtpu)) return layer::gtpu;
  if (on(udp_port_mpls)) return layer::mpls;
  if (on(udp_port_l2tp)) return layer::l2tp;
  return layer::end;
}

}  // namespace detail
}  // namespace gnio::device
