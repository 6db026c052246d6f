// SPDX-License-Identifier: Apache-2.0
// Transport headers: TCP (with its options), UDP, ICMP and ICMPv6.
#pragma once

#include <gnio/device/pkt/proto.hpp>

namespace gnio::device {
namespace detail {

GNIO_HOST_DEVICE inline void parse_tcp_options(const uint8_t* q, uint32_t n, tcp_fields& t) {
  uint32_t i = 0;
  // n <= 40 and every step consumes >= 1 byte, so this is bounded.
  while (i < n) {
    const uint8_t kind = q[i];
    if (kind == 0) break;  // end of list
    if (kind == 1) {       // NOP
      ++i;
      continue;
    }
    if (n - i < 2) {
      t.opt_error = true;
      break;
    }
    const uint8_t olen = q[i + 1];
    if (olen < 2 || olen > n - i) {
      t.opt_error = true;
      break;
    }
    const uint8_t* o = q + i;
    switch (kind) {
      case 2:
        if (olen == 4) {
          t.has_mss = true;
          t.mss = rd16(o + 2);
        } else {
          t.opt_error = true;
        }
        break;
      case 3:
        if (olen == 3) {
          t.has_wscale = true;
          t.wscale = o[2];
        } else {
          t.opt_error = true;
        }
        break;
      case 4:
        if (olen == 2) t.sack_permitted = true;
        else t.opt_error = true;
        break;
      case 5:
        if ((olen - 2) % 8 == 0) t.sack_blocks = static_cast<uint8_t>((olen - 2) / 8);
        else t.opt_error = true;
        break;
      case 8:
        if (olen == 10) {
          t.has_timestamps = true;
          t.ts_val = rd32(o + 2);
          t.ts_ecr = rd32(o + 6);
        } else {
          t.opt_error = true;
        }
        break;
      default: break;
    }
    i += olen;
  }
}

// ip_end is the declared datagram end; the capture may stop before it.
GNIO_HOST_DEVICE inline bool parse_l4(const pkt_view& v, uint32_t off, uint32_t ip_end, uint8_t proto, bool v6,
                                      parsed_pkt& o) {
  const uint32_t end = min_u32(v.len, ip_end);
  const uint8_t* p = v.data + off;
  o.l4_off = static_cast<uint16_t>(off);
  o.l4_proto = proto;

  // A first fragment's L4 header is parsed for its ports. Its protocol
  // counts (protos) only when the capture cut the fragment short: a whole
  // fragment waits for the rest of its datagram (reassembly, pkt/frag.hpp),
  // while one the capture cut can never be reassembled and is decoded as it
  // is, as tshark does.
  const bool whole = !o.is_fragment || ip_end > v.len;
  if (proto == ipproto_tcp) {
    o.l4 = l4_kind::tcp;
    if (whole) o.protos |= proto_tcp;
    if (!fits(end, off, 20) || !v.has(off, 20)) return fail(o, pkt_error::truncated_l4);
    tcp_fields& t = o.tcp;
    o.src_port = rd16(p);
    o.dst_port = rd16(p + 2);
    t.seq = rd32(p + 4);
    t.ack = rd32(p + 8);
    const uint32_t hl = static_cast<uint32_t>(p[12] >> 4) * 4;
    t.flags = static_cast<uint16_t>(((p[12] & 1u) << 8) | p[13]);
    t.window = rd16(p + 14);
    t.checksum = rd16(p + 16);
    t.urg_ptr = rd16(p + 18);
    t.hdr_len = static_cast<uint8_t>(hl);
    if (hl < 20 || !fits(ip_end, off, hl)) return fail(o, pkt_error::bad_tcp_offset);
    if (!v.has(off, hl)) return fail(o, pkt_error::truncated_l4);
    parse_tcp_options(p + 20, hl - 20, t);
    set_payload(o, off + hl, end);
    return true;
  }
  if (proto == ipproto_udp) {
    o.l4 = l4_kind::udp;
    if (whole) o.protos |= proto_udp;
    if (!fits(end, off, 8) || !v.has(off, 8)) return fail(o, pkt_error::truncated_l4);
    o.src_port = rd16(p);
    o.dst_port = rd16(p + 2);
    o.udp_length = rd16(p + 4);
    o.udp_checksum = rd16(p + 6);
    // A first fragment holds only the start of the datagram its UDP length
    // covers; the length is checked once it is reassembled. One the capture
    // cut short is never reassembled and is read as far as it goes, as
    // tshark reads it (its UDP dissector checks no fragment's length).
    if (o.udp_length < 8 || (!o.is_fragment && !fits(ip_end, off, o.udp_length)))
      return fail(o, pkt_error::bad_udp_length);
    set_payload(o, off + 8, min_u32(end, off + o.udp_length));
    return true;
  }
  if ((proto == ipproto_icmp && !v6) || (proto == ipproto_icmpv6 && v6)) {
    o.l4 = v6 ? l4_kind::icmpv6 : l4_kind::icmp;
    if (whole) o.protos |= v6 ? proto_icmpv6 : proto_icmp;
    // Every ICMP/ICMPv6 message carries at least 4 bytes after type/code/csum.
    if (!fits(end, off, 8) || !v.has(off, 8)) return fail(o, pkt_error::truncated_l4);
    o.icmp.type = p[0];
    o.icmp.code = p[1];
    o.icmp.checksum = rd16(p + 2);
    o.icmp.rest = rd32(p + 4);
    set_payload(o, off + 8, end);
    return true;
  }
  o.l4 = proto == ipproto_none ? l4_kind::none : l4_kind::other;
  set_payload(o, off, end);
  return true;
}

}  // namespace detail
}  // namespace gnio::device
