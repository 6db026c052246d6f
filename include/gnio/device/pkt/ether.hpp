// SPDX-License-Identifier: Apache-2.0
// Ethernet II headers with their VLAN tags (802.1Q, 802.1ad, 0x9100), and
// the EtherType dispatch every decoder that carries an EtherType uses (an
// Ethernet header, GRE, GENEVE). Steps of the parser's walk (parse.hpp).
#pragma once

#include <gnio/device/pkt/ip.hpp>

namespace gnio::device {
namespace detail {

// The header an EtherType names. ARP (and RARP, which tshark's ARP
// dissector also decodes) ends the walk here; EtherTypes the parser does not
// decode (802.3 length fields < 0x600 included: LLC/SNAP is not decoded)
// leave the rest as payload of an `other` L3.
GNIO_HOST_DEVICE inline void parse_ethertype(const pkt_view& v, uint32_t off, uint16_t et, parsed_pkt& o, cursor& c) {
  o.ethertype = et;
  switch (et) {
    case ethertype_ipv4: c = cursor{layer::ipv4, 0, off, v.len}; return;
    case ethertype_ipv6: c = cursor{layer::ipv6, 0, off, v.len}; return;
    case ethertype_arp: parse_arp(v, off, o); return;
    case ethertype_mpls:
    case ethertype_mpls_mc: c = cursor{layer::mpls, 0, off, v.len}; return;
    case ethertype_pppoe_sess: c = cursor{layer::pppoe, 0, off, v.len}; return;
    default:
      reset_inner(o);
      if (et == ethertype_rarp) o.protos |= proto_arp;
      o.l3 = l3_kind::other;
      o.l3_off = static_cast<uint16_t>(off);
      set_payload(o, off, v.len);
      return;
  }
}

// An Ethernet header at off with up to max_vlan_tags tags. The outermost
// one (outer) fills the L2 fields of parsed_pkt; one inside a tunnel only
// marks proto_vlan when tagged.
GNIO_HOST_DEVICE inline void parse_ether(const pkt_view& v, uint32_t off, bool outer, parsed_pkt& o, cursor& c) {
  if (!v.has(off, 14)) {
    fail(o, outer ? pkt_error::truncated_l2 : pkt_error::truncated_tunnel);
    return;
  }
  if (outer) {
    o.has_l2 = true;
    o.dst_mac_off = static_cast<uint16_t>(off);
    o.src_mac_off = static_cast<uint16_t>(off + 6);
  }
  uint16_t et = rd16(v.data + off + 12);
  uint32_t cur = off + 14;
  uint32_t tags = 0;
  while (et == ethertype_vlan || et == ethertype_qinq || et == ethertype_qinq_old) {
    if (tags == max_vlan_tags) {
      fail(o, pkt_error::too_many_vlan_tags);
      return;
    }
    if (!v.has(cur, 4)) {
      fail(o, pkt_error::truncated_l2);
      return;
    }
    o.protos |= proto_vlan;
    if (outer) {
      const uint16_t vid = rd16(v.data + cur) & 0x0fff;
      if (o.vlan_count == 0) o.outer_vlan = vid;
      else if (o.vlan_count == 1) o.inner_vlan = vid;
      if (et == ethertype_vlan) o.vlan_8021q = true;
      else if (et == ethertype_qinq) o.vlan_8021ad = true;
      else o.vlan_9100 = true;
      ++o.vlan_count;
    }
    ++tags;
    et = rd16(v.data + cur + 2);
    cur += 4;
  }
  parse_ethertype(v, cur, et, o, c);
}

}  // namespace detail
}  // namespace gnio::device
