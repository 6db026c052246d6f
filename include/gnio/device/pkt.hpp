// SPDX-License-Identifier: Apache-2.0
// Header-only packet parsing shared by CUDA kernels and the host executor.
//
// Every read is bounds-checked against the captured length: hostile or
// truncated input is reported through parsed_pkt::malformed/error, never read
// past. Multi-byte fields are assembled from single byte loads because packet
// buffers carry no alignment guarantee (a 14-byte Ethernet header misaligns
// everything after it).
#pragma once

#include <gnio/device/config.hpp>

#include <cstdint>

namespace gnio::device {

using std::int32_t;
using std::uint16_t;
using std::uint32_t;
using std::uint64_t;
using std::uint8_t;

// ---------------------------------------------------------------------------
// Bounds-checked loads
// ---------------------------------------------------------------------------

struct pkt_view {
  const uint8_t* data;
  uint32_t len;

  // Written as two comparisons so off + n cannot wrap.
  GNIO_HOST_DEVICE GNIO_FORCEINLINE bool has(uint32_t off, uint32_t n) const {
    return off <= len && n <= len - off;
  }
};

namespace detail {

GNIO_HOST_DEVICE GNIO_FORCEINLINE bool fits(uint32_t len, uint32_t off, uint32_t n) {
  return off <= len && n <= len - off;
}
// Unchecked; callers have already proven the bytes are in range.
GNIO_HOST_DEVICE GNIO_FORCEINLINE uint16_t rd16(const uint8_t* p) {
  return static_cast<uint16_t>((static_cast<uint32_t>(p[0]) << 8) | p[1]);
}
GNIO_HOST_DEVICE GNIO_FORCEINLINE uint32_t rd32(const uint8_t* p) {
  return (static_cast<uint32_t>(p[0]) << 24) | (static_cast<uint32_t>(p[1]) << 16) |
         (static_cast<uint32_t>(p[2]) << 8) | static_cast<uint32_t>(p[3]);
}
GNIO_HOST_DEVICE GNIO_FORCEINLINE uint32_t min_u32(uint32_t a, uint32_t b) { return a < b ? a : b; }

}  // namespace detail

GNIO_HOST_DEVICE GNIO_FORCEINLINE bool load_u8(const pkt_view& v, uint32_t off, uint8_t& out) {
  if (!v.has(off, 1)) return false;
  out = v.data[off];
  return true;
}
GNIO_HOST_DEVICE GNIO_FORCEINLINE bool load_be16(const pkt_view& v, uint32_t off, uint16_t& out) {
  if (!v.has(off, 2)) return false;
  out = detail::rd16(v.data + off);
  return true;
}
GNIO_HOST_DEVICE GNIO_FORCEINLINE bool load_be32(const pkt_view& v, uint32_t off, uint32_t& out) {
  if (!v.has(off, 4)) return false;
  out = detail::rd32(v.data + off);
  return true;
}

// ---------------------------------------------------------------------------
// Constants
// ---------------------------------------------------------------------------

enum : uint16_t {
  ethertype_ipv4 = 0x0800,
  ethertype_arp = 0x0806,
  ethertype_vlan = 0x8100,   // 802.1Q
  ethertype_qinq = 0x88a8,   // 802.1ad S-tag
  ethertype_qinq_old = 0x9100,  // pre-standard QinQ, still seen in the wild
  ethertype_ipv6 = 0x86dd,
};

enum : uint8_t {
  ipproto_hopopts = 0,
  ipproto_icmp = 1,
  ipproto_tcp = 6,
  ipproto_udp = 17,
  ipproto_routing = 43,
  ipproto_fragment = 44,
  ipproto_esp = 50,
  ipproto_ah = 51,
  ipproto_icmpv6 = 58,
  ipproto_none = 59,
  ipproto_dstopts = 60,
};

enum : uint16_t {
  tcp_fin = 0x001,
  tcp_syn = 0x002,
  tcp_rst = 0x004,
  tcp_psh = 0x008,
  tcp_ack = 0x010,
  tcp_urg = 0x020,
  tcp_ece = 0x040,
  tcp_cwr = 0x080,
  tcp_ns = 0x100,
};

// pcap LINKTYPE_* values accepted by parse_link().
enum : uint32_t {
  linktype_null = 0,       // BSD loopback, host-order family
  linktype_ethernet = 1,
  linktype_raw = 101,      // raw IPv4/IPv6
  linktype_loop = 108,     // OpenBSD loopback, network-order family
  linktype_ipv4 = 228,
  linktype_ipv6 = 229,
};

inline constexpr uint32_t max_vlan_tags = 4;
inline constexpr uint32_t max_ipv6_ext_headers = 8;

enum class l3_kind : uint8_t { none = 0, ipv4, ipv6, arp, other };
enum class l4_kind : uint8_t { none = 0, udp, tcp, icmp, icmpv6, other };

// First problem found; parsing stops there except for truncated_payload,
// where every header was intact and only the capture ended early.
enum class pkt_error : uint8_t {
  none = 0,
  truncated_l2,          // Ethernet header, VLAN tag or loopback family cut
  too_many_vlan_tags,    // more than max_vlan_tags
  truncated_l3,          // fixed IP/ARP header or IPv4 options cut
  bad_ip_version,        // raw-IP link: first nibble neither 4 nor 6
  bad_ipv4_version,      // ethertype said IPv4, header disagrees
  bad_ipv6_version,
  bad_ihl,               // IHL < 5
  bad_total_length,      // IP length smaller than the headers it must hold
  truncated_ext_header,  // IPv6 extension header cut by the capture
  too_many_ext_headers,  // more than max_ipv6_ext_headers
  truncated_l4,          // L4 header does not fit in capture or datagram
  bad_tcp_offset,        // data offset < 5 or beyond the datagram
  bad_udp_length,        // < 8 or beyond the datagram
  truncated_payload,     // headers fine, capture shorter than IP length
  unsupported_link,      // parse_link(): unknown link type
};

GNIO_HOST_DEVICE inline const char* to_string(pkt_error e) {
  switch (e) {
    case pkt_error::none: return "none";
    case pkt_error::truncated_l2: return "truncated_l2";
    case pkt_error::too_many_vlan_tags: return "too_many_vlan_tags";
    case pkt_error::truncated_l3: return "truncated_l3";
    case pkt_error::bad_ip_version: return "bad_ip_version";
    case pkt_error::bad_ipv4_version: return "bad_ipv4_version";
    case pkt_error::bad_ipv6_version: return "bad_ipv6_version";
    case pkt_error::bad_ihl: return "bad_ihl";
    case pkt_error::bad_total_length: return "bad_total_length";
    case pkt_error::truncated_ext_header: return "truncated_ext_header";
    case pkt_error::too_many_ext_headers: return "too_many_ext_headers";
    case pkt_error::truncated_l4: return "truncated_l4";
    case pkt_error::bad_tcp_offset: return "bad_tcp_offset";
    case pkt_error::bad_udp_length: return "bad_udp_length";
    case pkt_error::truncated_payload: return "truncated_payload";
    case pkt_error::unsupported_link: return "unsupported_link";
  }
  return "unknown";
}

// ---------------------------------------------------------------------------
// Parse result
// ---------------------------------------------------------------------------

struct ipv4_fields {
  uint32_t src;           // host-order value of the address
  uint32_t dst;
  uint16_t total_length;
  uint16_t id;
  uint16_t frag_offset;   // in 8-byte units, as on the wire
  uint16_t checksum;      // as on the wire, not verified by parse()
  uint8_t ihl;            // 32-bit words
  uint8_t hdr_len;        // bytes, options included
  uint8_t tos;
  uint8_t ttl;
  uint8_t proto;
  bool df;
  bool mf;
  bool has_options;
};

struct ipv6_fields {
  uint8_t src[16];
  uint8_t dst[16];
  uint32_t flow_label;
  uint32_t frag_id;       // valid when has_frag_header
  uint16_t payload_length;
  uint16_t hdr_len;       // 40 + extension headers walked
  uint16_t frag_offset;   // 8-byte units
  uint8_t traffic_class;
  uint8_t hop_limit;
  uint8_t next_header;    // first one, in the fixed header
  uint8_t final_next_header;  // after the extension headers
  uint8_t ext_count;
  bool has_frag_header;
  bool mf;
  bool jumbo;             // payload_length 0 behind hop-by-hop: length from capture
};

struct arp_fields {
  uint16_t htype;
  uint16_t ptype;
  uint16_t op;            // 1 request, 2 reply
  uint8_t hlen;
  uint8_t plen;
  bool eth_ipv4;          // fields below valid only for Ethernet/IPv4 ARP
  uint8_t sha[6];
  uint8_t tha[6];
  uint32_t spa;           // host-order value
  uint32_t tpa;
};

struct tcp_fields {
  uint32_t seq;
  uint32_t ack;
  uint32_t ts_val;
  uint32_t ts_ecr;
  uint16_t flags;         // tcp_fin .. tcp_ns
  uint16_t window;
  uint16_t checksum;
  uint16_t urg_ptr;
  uint16_t mss;
  uint8_t hdr_len;        // data offset * 4, options included
  uint8_t wscale;
  uint8_t sack_blocks;    // blocks in a SACK option, if any
  bool has_mss;
  bool has_wscale;
  bool sack_permitted;
  bool has_timestamps;
  bool opt_error;         // an option of a known kind had a bad length (skipped by its length, as Linux
                          // does), or a length ran past the options (the walk stopped there)
};

struct icmp_fields {
  uint8_t type;
  uint8_t code;
  uint16_t checksum;
  uint32_t rest;          // id/seq for echo, MTU/pointer for errors
};

// Trivially copyable so it can sit in shared memory or be memcpy'd to the host.
struct parsed_pkt {
  // L2 (Ethernet only; has_l2 false for raw IP and loopback)
  bool has_l2;
  uint8_t vlan_count;
  bool vlan_8021q;        // saw a 0x8100 tag
  bool vlan_8021ad;       // saw a 0x88a8 tag
  bool vlan_9100;         // saw a 0x9100 tag
  uint16_t dst_mac_off;
  uint16_t src_mac_off;
  uint16_t ethertype;     // after VLAN tags; synthesized for raw IP/loopback
  uint16_t outer_vlan;    // VID of first tag
  uint16_t inner_vlan;    // VID of second tag

  // L3
  l3_kind l3;
  uint16_t l3_off;
  uint8_t l4_proto;       // IPv4 protocol or IPv6 final next header
  bool is_fragment;       // any IPv4/IPv6 fragment, first one included
  ipv4_fields ipv4;
  ipv6_fields ipv6;
  arp_fields arp;

  // L4 (l4 == none for non-first fragments)
  l4_kind l4;
  uint16_t l4_off;
  uint16_t src_port;
  uint16_t dst_port;
  uint16_t udp_length;
  uint16_t udp_checksum;
  tcp_fields tcp;
  icmp_fields icmp;

  // Bytes after the last parsed header, clamped to the IP datagram (drops
  // Ethernet padding) and to the UDP length.
  uint16_t payload_off;
  uint32_t payload_len;

  bool malformed;
  pkt_error error;
};

// ---------------------------------------------------------------------------
// Parsers
// ---------------------------------------------------------------------------

namespace detail {

GNIO_HOST_DEVICE GNIO_FORCEINLINE bool fail(parsed_pkt& o, pkt_error e) {
  if (!o.malformed) {
    o.malformed = true;
    o.error = e;
  }
  return false;
}

GNIO_HOST_DEVICE GNIO_FORCEINLINE void set_payload(parsed_pkt& o, uint32_t off, uint32_t end) {
  o.payload_off = static_cast<uint16_t>(off);
  o.payload_len = end > off ? end - off : 0;
}

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
      default:
        break;
    }
    i += olen;
  }
}

// ip_end is the declared datagram end; the capture may stop before it.
GNIO_HOST_DEVICE inline bool parse_l4(const pkt_view& v, uint32_t off, uint32_t ip_end, uint8_t proto,
                                      bool v6, parsed_pkt& o) {
  const uint32_t end = min_u32(v.len, ip_end);
  const uint8_t* p = v.data + off;
  o.l4_off = static_cast<uint16_t>(off);
  o.l4_proto = proto;

  if (proto == ipproto_tcp) {
    o.l4 = l4_kind::tcp;
    if (!fits(end, off, 20)) return fail(o, pkt_error::truncated_l4);
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
    if (!fits(v.len, off, hl)) return fail(o, pkt_error::truncated_l4);
    parse_tcp_options(p + 20, hl - 20, t);
    set_payload(o, off + hl, end);
    return true;
  }
  if (proto == ipproto_udp) {
    o.l4 = l4_kind::udp;
    if (!fits(end, off, 8)) return fail(o, pkt_error::truncated_l4);
    o.src_port = rd16(p);
    o.dst_port = rd16(p + 2);
    o.udp_length = rd16(p + 4);
    o.udp_checksum = rd16(p + 6);
    if (o.udp_length < 8 || !fits(ip_end, off, o.udp_length)) return fail(o, pkt_error::bad_udp_length);
    set_payload(o, off + 8, min_u32(end, off + o.udp_length));
    return true;
  }
  if ((proto == ipproto_icmp && !v6) || (proto == ipproto_icmpv6 && v6)) {
    o.l4 = v6 ? l4_kind::icmpv6 : l4_kind::icmp;
    // Every ICMP/ICMPv6 message carries at least 4 bytes after type/code/csum.
    if (!fits(end, off, 8)) return fail(o, pkt_error::truncated_l4);
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

GNIO_HOST_DEVICE GNIO_FORCEINLINE bool finish_ip(const pkt_view& v, uint32_t ip_end, bool ok, parsed_pkt& o) {
  if (ok && ip_end > v.len) return fail(o, pkt_error::truncated_payload);
  return ok;
}

GNIO_HOST_DEVICE inline bool parse_ipv4(const pkt_view& v, uint32_t off, parsed_pkt& o) {
  o.l3 = l3_kind::ipv4;
  o.l3_off = static_cast<uint16_t>(off);
  if (!fits(v.len, off, 20)) return fail(o, pkt_error::truncated_l3);
  const uint8_t* p = v.data + off;
  if ((p[0] >> 4) != 4) return fail(o, pkt_error::bad_ipv4_version);
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

  if (h.ihl < 5) return fail(o, pkt_error::bad_ihl);
  const uint32_t hl = h.hdr_len;
  if (!fits(v.len, off, hl)) return fail(o, pkt_error::truncated_l3);
  if (h.total_length < hl) return fail(o, pkt_error::bad_total_length);
  const uint32_t ip_end = off + h.total_length;

  if (h.frag_offset != 0) {
    // Later fragments carry only payload; the L4 header was in the first.
    o.l4 = l4_kind::none;
    o.l4_off = static_cast<uint16_t>(off + hl);
    set_payload(o, off + hl, min_u32(v.len, ip_end));
    return finish_ip(v, ip_end, true, o);
  }
  return finish_ip(v, ip_end, parse_l4(v, off + hl, ip_end, h.proto, false, o), o);
}

GNIO_HOST_DEVICE inline bool parse_ipv6(const pkt_view& v, uint32_t off, parsed_pkt& o) {
  o.l3 = l3_kind::ipv6;
  o.l3_off = static_cast<uint16_t>(off);
  if (!fits(v.len, off, 40)) return fail(o, pkt_error::truncated_l3);
  const uint8_t* p = v.data + off;
  if ((p[0] >> 4) != 6) return fail(o, pkt_error::bad_ipv6_version);
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
    if (nh != ipproto_hopopts && nh != ipproto_routing && nh != ipproto_fragment &&
        nh != ipproto_dstopts && nh != ipproto_ah) {
      break;
    }
    if (h.ext_count == max_ipv6_ext_headers) return fail(o, pkt_error::too_many_ext_headers);
    // Every extension header is at least 8 bytes long.
    if (!fits(ip_end, cur, 8)) return fail(o, pkt_error::bad_total_length);
    if (!fits(v.len, cur, 8)) return fail(o, pkt_error::truncated_ext_header);
    const uint8_t* q = v.data + cur;
    uint32_t ehl;
    if (nh == ipproto_fragment) {
      ehl = 8;
      const uint16_t fo = rd16(q + 2);
      h.has_frag_header = true;
      h.frag_offset = static_cast<uint16_t>(fo >> 3);
      h.mf = (fo & 1) != 0;
      h.frag_id = rd32(q + 4);
      o.is_fragment = true;
      later_fragment = h.frag_offset != 0;
    } else if (nh == ipproto_ah) {
      ehl = (static_cast<uint32_t>(q[1]) + 2) * 4;
    } else {
      ehl = (static_cast<uint32_t>(q[1]) + 1) * 8;
    }
    if (!fits(ip_end, cur, ehl)) return fail(o, pkt_error::bad_total_length);
    if (!fits(v.len, cur, ehl)) return fail(o, pkt_error::truncated_ext_header);
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
    return finish_ip(v, ip_end, true, o);
  }
  return finish_ip(v, ip_end, parse_l4(v, cur, ip_end, nh, true, o), o);
}

GNIO_HOST_DEVICE inline bool parse_arp(const pkt_view& v, uint32_t off, parsed_pkt& o) {
  o.l3 = l3_kind::arp;
  o.l3_off = static_cast<uint16_t>(off);
  if (!fits(v.len, off, 8)) return fail(o, pkt_error::truncated_l3);
  const uint8_t* p = v.data + off;
  arp_fields& a = o.arp;
  a.htype = rd16(p);
  a.ptype = rd16(p + 2);
  a.hlen = p[4];
  a.plen = p[5];
  a.op = rd16(p + 6);
  const uint32_t total = 8 + 2 * (static_cast<uint32_t>(a.hlen) + a.plen);
  if (!fits(v.len, off, total)) return fail(o, pkt_error::truncated_l3);
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
  return true;
}

GNIO_HOST_DEVICE inline bool parse_ethertype(const pkt_view& v, uint32_t off, uint16_t et, parsed_pkt& o) {
  o.ethertype = et;
  switch (et) {
    case ethertype_ipv4: return parse_ipv4(v, off, o);
    case ethertype_ipv6: return parse_ipv6(v, off, o);
    case ethertype_arp: return parse_arp(v, off, o);
    default:
      // Includes 802.3 length fields (< 0x600): LLC/SNAP is not decoded.
      o.l3 = l3_kind::other;
      o.l3_off = static_cast<uint16_t>(off);
      set_payload(o, off, v.len);
      return true;
  }
}

GNIO_HOST_DEVICE GNIO_FORCEINLINE bool is_loopback_v4(uint32_t fam) { return fam == 2; }
GNIO_HOST_DEVICE GNIO_FORCEINLINE bool is_loopback_v6(uint32_t fam) {
  // AF_INET6 differs per OS: 24 NetBSD/OpenBSD, 28 FreeBSD, 30 macOS.
  return fam == 24 || fam == 28 || fam == 30;
}

}  // namespace detail

// Ethernet II frame, with up to max_vlan_tags 802.1Q/802.1ad/0x9100 tags.
// Returns false when malformed; fields parsed before the problem stay valid.
GNIO_HOST_DEVICE inline bool parse(const uint8_t* data, uint32_t len, parsed_pkt& out) {
  out = parsed_pkt{};
  const pkt_view v{data, data ? len : 0u};
  if (!v.has(0, 14)) return detail::fail(out, pkt_error::truncated_l2);
  out.has_l2 = true;
  out.dst_mac_off = 0;
  out.src_mac_off = 6;
  uint16_t et = detail::rd16(data + 12);
  uint32_t off = 14;
  while (et == ethertype_vlan || et == ethertype_qinq || et == ethertype_qinq_old) {
    if (out.vlan_count == max_vlan_tags) return detail::fail(out, pkt_error::too_many_vlan_tags);
    if (!v.has(off, 4)) return detail::fail(out, pkt_error::truncated_l2);
    const uint16_t vid = detail::rd16(data + off) & 0x0fff;
    if (out.vlan_count == 0) out.outer_vlan = vid;
    else if (out.vlan_count == 1) out.inner_vlan = vid;
    if (et == ethertype_vlan) out.vlan_8021q = true;
    else if (et == ethertype_qinq) out.vlan_8021ad = true;
    else out.vlan_9100 = true;
    ++out.vlan_count;
    et = detail::rd16(data + off + 2);
    off += 4;
  }
  return detail::parse_ethertype(v, off, et, out);
}

// Starts at an IPv4 or IPv6 header (LINKTYPE_RAW); version picks the family.
GNIO_HOST_DEVICE inline bool parse_l3(const uint8_t* data, uint32_t len, parsed_pkt& out) {
  out = parsed_pkt{};
  const pkt_view v{data, data ? len : 0u};
  if (!v.has(0, 1)) {
    out.l3 = l3_kind::other;
    return detail::fail(out, pkt_error::truncated_l3);
  }
  switch (data[0] >> 4) {
    case 4: out.ethertype = ethertype_ipv4; return detail::parse_ipv4(v, 0, out);
    case 6: out.ethertype = ethertype_ipv6; return detail::parse_ipv6(v, 0, out);
    default:
      out.l3 = l3_kind::other;
      return detail::fail(out, pkt_error::bad_ip_version);
  }
}

// DLT_NULL / DLT_LOOP: 4-byte address family then the IP packet. The family
// is in the capturing host's byte order, so both orders are accepted (the
// valid values cannot collide).
GNIO_HOST_DEVICE inline bool parse_loopback(const uint8_t* data, uint32_t len, parsed_pkt& out) {
  out = parsed_pkt{};
  const pkt_view v{data, data ? len : 0u};
  if (!v.has(0, 4)) return detail::fail(out, pkt_error::truncated_l2);
  const uint32_t be = detail::rd32(data);
  const uint32_t le = (be >> 24) | ((be >> 8) & 0xff00u) | ((be << 8) & 0xff0000u) | (be << 24);
  if (detail::is_loopback_v4(be) || detail::is_loopback_v4(le)) {
    out.ethertype = ethertype_ipv4;
    return detail::parse_ipv4(v, 4, out);
  }
  if (detail::is_loopback_v6(be) || detail::is_loopback_v6(le)) {
    out.ethertype = ethertype_ipv6;
    return detail::parse_ipv6(v, 4, out);
  }
  out.l3 = l3_kind::other;
  out.l3_off = 4;
  detail::set_payload(out, 4, v.len);
  return true;
}

// Dispatch on a pcap link type.
GNIO_HOST_DEVICE inline bool parse_link(uint32_t linktype, const uint8_t* data, uint32_t len, parsed_pkt& out) {
  switch (linktype) {
    case linktype_ethernet: return parse(data, len, out);
    case linktype_null:
    case linktype_loop: return parse_loopback(data, len, out);
    case linktype_raw:
    case linktype_ipv4:
    case linktype_ipv6: return parse_l3(data, len, out);
    default:
      out = parsed_pkt{};
      return detail::fail(out, pkt_error::unsupported_link);
  }
}

// ---------------------------------------------------------------------------
// Flow key and RSS hash
// ---------------------------------------------------------------------------

// Explicit reserved bytes leave no padding, so keys can be compared or hashed
// as raw bytes by other code.
struct flow_key {
  uint8_t src[16];      // IPv4 in the first 4 bytes, network order, rest zero
  uint8_t dst[16];
  uint16_t src_port;    // 0 unless TCP/UDP and not a fragment
  uint16_t dst_port;
  uint8_t family;       // 4, 6, or 0 when the packet has no IP header
  uint8_t proto;
  uint8_t reserved[2];
};

GNIO_HOST_DEVICE inline bool operator==(const flow_key& a, const flow_key& b) {
  for (uint32_t i = 0; i < 16; ++i) {
    if (a.src[i] != b.src[i] || a.dst[i] != b.dst[i]) return false;
  }
  return a.src_port == b.src_port && a.dst_port == b.dst_port && a.family == b.family && a.proto == b.proto;
}

// Ports are zeroed for every fragment, first included, so that all pieces of
// a datagram land on the same queue (what NIC RSS does by hashing 2-tuples).
GNIO_HOST_DEVICE inline flow_key make_flow_key(const parsed_pkt& p) {
  flow_key k{};
  if (p.l3 == l3_kind::ipv4) {
    k.family = 4;
    for (uint32_t i = 0; i < 4; ++i) {
      k.src[i] = static_cast<uint8_t>(p.ipv4.src >> (24 - 8 * i));
      k.dst[i] = static_cast<uint8_t>(p.ipv4.dst >> (24 - 8 * i));
    }
  } else if (p.l3 == l3_kind::ipv6) {
    k.family = 6;
    for (uint32_t i = 0; i < 16; ++i) {
      k.src[i] = p.ipv6.src[i];
      k.dst[i] = p.ipv6.dst[i];
    }
  } else {
    return k;
  }
  k.proto = p.l4_proto;
  if ((p.l4 == l4_kind::tcp || p.l4 == l4_kind::udp) && !p.is_fragment) {
    k.src_port = p.src_port;
    k.dst_port = p.dst_port;
  }
  return k;
}

struct rss_key {
  uint8_t bytes[40];
};

// The Microsoft default RSS key (also the default of many NIC drivers), so
// hashes match the published RSS verification suite and NIC-computed values.
GNIO_HOST_DEVICE constexpr rss_key microsoft_rss_key() {
  return rss_key{{0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3,
                  0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3,
                  0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa}};
}

namespace detail {
// Streaming Toeplitz so the 36-byte input never has to be materialized.
struct toeplitz_state {
  const uint8_t* key;
  uint32_t window;
  uint32_t pos;
  uint32_t hash;

  GNIO_HOST_DEVICE GNIO_FORCEINLINE void feed(uint8_t b) {
    const uint8_t next = pos + 4 < 40 ? key[pos + 4] : 0;
    for (int bit = 7; bit >= 0; --bit) {
      if ((b >> bit) & 1) hash ^= window;
      window = (window << 1) | ((next >> bit) & 1u);
    }
    ++pos;
  }
  GNIO_HOST_DEVICE GNIO_FORCEINLINE void feed16(uint16_t v) {
    feed(static_cast<uint8_t>(v >> 8));
    feed(static_cast<uint8_t>(v));
  }
};
}  // namespace detail

// Toeplitz hash (Microsoft RSS spec). Inputs longer than 36 bytes run out of
// key; the extra bytes are hashed against zero key bits.
GNIO_HOST_DEVICE inline uint32_t toeplitz_hash(const rss_key& key, const uint8_t* in, uint32_t n) {
  detail::toeplitz_state s{key.bytes, detail::rd32(key.bytes), 0, 0};
  for (uint32_t i = 0; i < n; ++i) s.feed(in[i]);
  return s.hash;
}

// RSS hash of the flow: Toeplitz over src addr, dst addr, src port, dst port in
// network order, the exact NIC input. Zero ports add nothing to a Toeplitz
// hash, so non-TCP/UDP flows get the NIC's 2-tuple hash for free.
// symmetric: orders the endpoints first so both directions of a connection hash
// alike (then it equals the NIC's hash for only one of the directions).
GNIO_HOST_DEVICE inline uint32_t flow_hash(const flow_key& k, bool symmetric, const rss_key& key) {
  const uint32_t alen = k.family == 6 ? 16 : (k.family == 4 ? 4 : 0);
  if (alen == 0) return 0;
  bool swap = false;
  if (symmetric) {
    int cmp = 0;
    for (uint32_t i = 0; i < alen && cmp == 0; ++i) cmp = static_cast<int>(k.src[i]) - static_cast<int>(k.dst[i]);
    if (cmp == 0) cmp = static_cast<int>(k.src_port) - static_cast<int>(k.dst_port);
    swap = cmp > 0;
  }
  const uint8_t* a = swap ? k.dst : k.src;
  const uint8_t* b = swap ? k.src : k.dst;
  detail::toeplitz_state s{key.bytes, detail::rd32(key.bytes), 0, 0};
  for (uint32_t i = 0; i < alen; ++i) s.feed(a[i]);
  for (uint32_t i = 0; i < alen; ++i) s.feed(b[i]);
  s.feed16(swap ? k.dst_port : k.src_port);
  s.feed16(swap ? k.src_port : k.dst_port);
  return s.hash;
}

GNIO_HOST_DEVICE inline uint32_t flow_hash(const flow_key& k, bool symmetric = false) {
  const rss_key key = microsoft_rss_key();
  return flow_hash(k, symmetric, key);
}

// ---------------------------------------------------------------------------
// Internet checksum (RFC 1071 / RFC 1624)
// ---------------------------------------------------------------------------

// Adds bytes as big-endian 16-bit words to a 32-bit running sum. A trailing odd
// byte is padded with zero, so only the last chunk of a split buffer may be odd.
GNIO_HOST_DEVICE inline uint32_t csum_partial(const uint8_t* p, uint32_t n, uint32_t sum) {
  uint64_t acc = sum;
  uint32_t i = 0;
  // 2^16 == 1 (mod 0xffff), so 32-bit words sum correctly and fold later.
  for (; i + 4 <= n; i += 4) acc += detail::rd32(p + i);
  if (i + 2 <= n) {
    acc += detail::rd16(p + i);
    i += 2;
  }
  if (i < n) acc += static_cast<uint32_t>(p[i]) << 8;
  acc = (acc & 0xffffffffu) + (acc >> 32);
  acc = (acc & 0xffffffffu) + (acc >> 32);
  return static_cast<uint32_t>(acc);
}

// Folds to 16 bits and complements (like Linux csum_fold): the value to store.
GNIO_HOST_DEVICE GNIO_FORCEINLINE uint16_t csum_fold(uint32_t sum) {
  sum = (sum & 0xffffu) + (sum >> 16);
  sum = (sum & 0xffffu) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

// Over the header as it is: with the checksum field zeroed this yields the
// value to store; with it filled in, 0 means the header is valid.
GNIO_HOST_DEVICE inline uint16_t ipv4_header_checksum(const uint8_t* hdr, uint32_t hdr_len) {
  return csum_fold(csum_partial(hdr, hdr_len, 0));
}

GNIO_HOST_DEVICE GNIO_FORCEINLINE uint32_t pseudo_header_ipv4(uint32_t src, uint32_t dst, uint8_t proto,
                                                              uint32_t l4_len) {
  uint64_t s = (src >> 16) + (src & 0xffffu) + (dst >> 16) + (dst & 0xffffu) + proto + (l4_len >> 16) +
               (l4_len & 0xffffu);
  s = (s & 0xffffffffu) + (s >> 32);
  return static_cast<uint32_t>(s);
}

GNIO_HOST_DEVICE inline uint32_t pseudo_header_ipv6(const uint8_t* src, const uint8_t* dst, uint8_t proto,
                                                    uint32_t l4_len) {
  uint32_t s = csum_partial(src, 16, 0);
  s = csum_partial(dst, 16, s);
  const uint64_t t = static_cast<uint64_t>(s) + (l4_len >> 16) + (l4_len & 0xffffu) + proto;
  return static_cast<uint32_t>((t & 0xffffffffu) + (t >> 32));
}

// UDP/TCP include the pseudo-header; ICMP (proto 1) does not. Same convention
// as ipv4_header_checksum: 0 over a filled-in segment means valid. A computed
// UDP checksum of 0 must be sent as 0xffff (0 means "none").
GNIO_HOST_DEVICE inline uint16_t l4_checksum_ipv4(uint32_t src, uint32_t dst, uint8_t proto, const uint8_t* l4,
                                                  uint32_t l4_len) {
  const uint32_t seed = proto == ipproto_icmp ? 0u : pseudo_header_ipv4(src, dst, proto, l4_len);
  return csum_fold(csum_partial(l4, l4_len, seed));
}

// IPv6 always uses the pseudo-header, ICMPv6 included.
GNIO_HOST_DEVICE inline uint16_t l4_checksum_ipv6(const uint8_t* src, const uint8_t* dst, uint8_t proto,
                                                  const uint8_t* l4, uint32_t l4_len) {
  return csum_fold(csum_partial(l4, l4_len, pseudo_header_ipv6(src, dst, proto, l4_len)));
}

// RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'). Do not apply to a UDP checksum of 0.
GNIO_HOST_DEVICE GNIO_FORCEINLINE uint16_t csum_update16(uint16_t csum, uint16_t old_val, uint16_t new_val) {
  const uint32_t s = static_cast<uint32_t>(static_cast<uint16_t>(~csum)) +
                     static_cast<uint16_t>(~old_val) + new_val;
  return csum_fold(s);
}

GNIO_HOST_DEVICE GNIO_FORCEINLINE uint16_t csum_update32(uint16_t csum, uint32_t old_val, uint32_t new_val) {
  const uint32_t s = static_cast<uint32_t>(static_cast<uint16_t>(~csum)) +
                     static_cast<uint16_t>(~(old_val >> 16)) + static_cast<uint16_t>(~old_val) +
                     (new_val >> 16) + (new_val & 0xffffu);
  return csum_fold(s);
}

// Checks the IPv4 header checksum of a parsed packet; false if the packet is
// not IPv4 or the header was not fully captured.
GNIO_HOST_DEVICE inline bool ipv4_checksum_ok(const uint8_t* data, uint32_t len, const parsed_pkt& p) {
  if (data == nullptr || p.l3 != l3_kind::ipv4 || p.ipv4.hdr_len < 20) return false;
  if (!detail::fits(len, p.l3_off, p.ipv4.hdr_len)) return false;
  return ipv4_header_checksum(data + p.l3_off, p.ipv4.hdr_len) == 0;
}

// Checks the TCP/UDP/ICMP/ICMPv6 checksum of a well-formed, fully captured,
// unfragmented packet (false otherwise). An IPv4 UDP checksum of 0 ("not
// computed") counts as ok.
GNIO_HOST_DEVICE inline bool l4_checksum_ok(const uint8_t* data, uint32_t len, const parsed_pkt& p) {
  if (data == nullptr || p.malformed || p.is_fragment) return false;
  if (p.l4 != l4_kind::tcp && p.l4 != l4_kind::udp && p.l4 != l4_kind::icmp && p.l4 != l4_kind::icmpv6) {
    return false;
  }
  const uint32_t end = static_cast<uint32_t>(p.payload_off) + p.payload_len;
  if (end < p.l4_off || end > len) return false;
  const uint32_t l4_len = end - p.l4_off;
  const uint8_t* l4 = data + p.l4_off;
  if (p.l3 == l3_kind::ipv4) {
    if (p.l4 == l4_kind::udp && p.udp_checksum == 0) return true;
    return l4_checksum_ipv4(p.ipv4.src, p.ipv4.dst, p.l4_proto, l4, l4_len) == 0;
  }
  if (p.l3 == l3_kind::ipv6) return l4_checksum_ipv6(p.ipv6.src, p.ipv6.dst, p.l4_proto, l4, l4_len) == 0;
  return false;
}

// ---------------------------------------------------------------------------
// DNS
// ---------------------------------------------------------------------------

struct dns_header {
  uint16_t id;
  uint16_t flags;
  uint16_t qdcount;
  uint16_t ancount;
  uint16_t nscount;
  uint16_t arcount;
  uint8_t opcode;
  uint8_t rcode;
  bool qr;  // 1 = response
  bool aa;
  bool tc;
  bool rd;
  bool ra;
  bool z;   // reserved bit, must be 0
};

// Negative results of the name readers.
enum dns_status : int32_t {
  dns_err_truncated = -1,       // name runs past the message
  dns_err_label_too_long = -2,  // length byte 64..191 (> 63 or obsolete label type)
  dns_err_name_too_long = -3,   // > 255 bytes in wire form
  dns_err_too_many_hops = -4,   // compression pointers exceed the hop limit (loops)
  dns_err_bad_pointer = -5,     // pointer into the header or past the message
  dns_err_out_too_small = -6,
  dns_err_no_question = -7,
};

inline constexpr uint32_t dns_header_len = 12;
inline constexpr uint32_t dns_max_pointer_hops = 16;
inline constexpr uint32_t dns_max_name_len = 255;

GNIO_HOST_DEVICE inline bool dns_parse_header(const uint8_t* msg, uint32_t msg_len, dns_header& h) {
  h = dns_header{};
  if (msg == nullptr || msg_len < dns_header_len) return false;
  h.id = detail::rd16(msg);
  h.flags = detail::rd16(msg + 2);
  h.qdcount = detail::rd16(msg + 4);
  h.ancount = detail::rd16(msg + 6);
  h.nscount = detail::rd16(msg + 8);
  h.arcount = detail::rd16(msg + 10);
  h.qr = (h.flags & 0x8000) != 0;
  h.opcode = static_cast<uint8_t>((h.flags >> 11) & 0xf);
  h.aa = (h.flags & 0x0400) != 0;
  h.tc = (h.flags & 0x0200) != 0;
  h.rd = (h.flags & 0x0100) != 0;
  h.ra = (h.flags & 0x0080) != 0;
  h.z = (h.flags & 0x0040) != 0;
  h.rcode = static_cast<uint8_t>(h.flags & 0xf);
  return true;
}

// Heuristic "does this look like DNS", for telling DNS from other traffic on
// port 53: 1..16 questions, an assigned opcode, Z clear, and record counts
// that could fit in msg_len (question >= 5 bytes, RR >= 11 bytes).
GNIO_HOST_DEVICE inline bool dns_header_sane(const dns_header& h, uint32_t msg_len) {
  if (h.qdcount < 1 || h.qdcount > 16) return false;
  if (h.opcode == 3 || h.opcode > 6) return false;  // 0 query,1 iquery,2 status,4 notify,5 update,6 DSO
  if (h.z) return false;
  if (msg_len < dns_header_len) return false;
  const uint64_t need = static_cast<uint64_t>(h.qdcount) * 5 +
                        (static_cast<uint64_t>(h.ancount) + h.nscount + h.arcount) * 11;
  return need <= msg_len - dns_header_len;
}

namespace detail {

// dns_read_name and dns_read_name_labels: one walk over the labels, written
// either as dotted text (Labels = false) or as uncompressed wire labels
// (Labels = true: a length byte before each label, no root byte).
template <bool Labels>
GNIO_HOST_DEVICE inline int32_t dns_read_name_impl(const uint8_t* msg, uint32_t msg_len, uint32_t off, char* out,
                                                   uint32_t out_cap, uint32_t* end_off) {
  if (msg == nullptr) return dns_err_truncated;
  uint32_t pos = off;
  uint32_t hops = 0;
  uint32_t wire = 0;
  uint32_t olen = 0;
  uint32_t end = 0;
  bool jumped = false;
  // Terminates: without pointers pos strictly increases; pointers are capped
  // by the hop limit; total label bytes by the 255 limit.
  for (;;) {
    if (pos >= msg_len) return dns_err_truncated;
    const uint8_t c = msg[pos];
    if ((c & 0xc0) == 0xc0) {
      if (msg_len - pos < 2) return dns_err_truncated;
      if (++hops > dns_max_pointer_hops) return dns_err_too_many_hops;
      const uint32_t ptr = (static_cast<uint32_t>(c & 0x3f) << 8) | msg[pos + 1];
      if (!jumped) {
        end = pos + 2;
        jumped = true;
      }
      if (ptr < dns_header_len || ptr >= msg_len) return dns_err_bad_pointer;
      pos = ptr;
      continue;
    }
    if (c & 0xc0) return dns_err_label_too_long;
    if (c == 0) {
      if (!jumped) end = pos + 1;
      break;
    }
    wire += 1u + c;
    if (wire + 1 > dns_max_name_len) return dns_err_name_too_long;  // +1: root byte
    if (!detail::fits(msg_len, pos + 1, c)) return dns_err_truncated;
    // Dotted: a '.' between labels; labels: a length byte before each one.
    const uint32_t sep = Labels ? 1u : (olen != 0 ? 1u : 0u);
    if (out != nullptr) {
      const uint32_t need = olen + sep + c + 1u;  // +1: NUL
      if (need > out_cap) return dns_err_out_too_small;
      if (Labels) out[olen++] = static_cast<char>(c);
      else if (sep) out[olen++] = '.';
      for (uint32_t i = 0; i < c; ++i) out[olen + i] = static_cast<char>(msg[pos + 1 + i]);
    } else {
      olen += sep;
    }
    olen += c;
    pos += 1u + c;
  }
  if (olen == 0 && !Labels) {
    if (out != nullptr) {
      if (out_cap < 2) return dns_err_out_too_small;
      out[0] = '.';
    }
    olen = 1;
  }
  if (out != nullptr) {
    if (olen + 1 > out_cap) return dns_err_out_too_small;
    out[olen] = '\0';
  }
  if (end_off != nullptr) *end_off = end;
  return static_cast<int32_t>(olen);
}

}  // namespace detail

// Reads the (possibly compressed) name at off as dotted text. Label bytes are
// copied raw, so a label may itself contain '.' (or any byte, NUL included):
// where that matters, read the labels with dns_read_name_labels. The root
// name is ".".
// out may be null to only validate/measure (then out_cap is ignored); else the
// text is NUL-terminated. *end_off (if given) receives the offset just past the
// name at its original position. Returns the text length or a dns_status.
GNIO_HOST_DEVICE inline int32_t dns_read_name(const uint8_t* msg, uint32_t msg_len, uint32_t off, char* out,
                                              uint32_t out_cap, uint32_t* end_off = nullptr) {
  return detail::dns_read_name_impl<false>(msg, msg_len, off, out, out_cap, end_off);
}

// Like dns_read_name, but writes the name's labels uncompressed as on the
// wire (a length byte, then the label's bytes), without the root's 0 byte:
// "www.example.com" is "\3www\7example\3com" (16 bytes), the root name is
// empty (returns 0). Nothing is lost, so a printer can escape a '.' inside a
// label (as dig does). NUL-terminated when out is given; returns the length
// or a dns_status (dns_err_out_too_small: out holds the labels that fit;
// in a zeroed buffer, the first 0 where a length byte is due ends them).
GNIO_HOST_DEVICE inline int32_t dns_read_name_labels(const uint8_t* msg, uint32_t msg_len, uint32_t off, char* out,
                                                     uint32_t out_cap, uint32_t* end_off = nullptr) {
  return detail::dns_read_name_impl<true>(msg, msg_len, off, out, out_cap, end_off);
}

// First question's name as dotted text ("www.example.com", no trailing dot).
GNIO_HOST_DEVICE inline int32_t dns_qname(const uint8_t* msg, uint32_t msg_len, char* out, uint32_t out_cap) {
  dns_header h;
  if (!dns_parse_header(msg, msg_len, h)) return dns_err_truncated;
  if (h.qdcount == 0) return dns_err_no_question;
  return dns_read_name(msg, msg_len, dns_header_len, out, out_cap);
}

// Like dns_qname, plus QTYPE/QCLASS of the first question.
GNIO_HOST_DEVICE inline int32_t dns_first_question(const uint8_t* msg, uint32_t msg_len, char* out,
                                                   uint32_t out_cap, uint16_t& qtype, uint16_t& qclass) {
  dns_header h;
  if (!dns_parse_header(msg, msg_len, h)) return dns_err_truncated;
  if (h.qdcount == 0) return dns_err_no_question;
  uint32_t end = 0;
  const int32_t r = dns_read_name(msg, msg_len, dns_header_len, out, out_cap, &end);
  if (r < 0) return r;
  if (!detail::fits(msg_len, end, 4)) return dns_err_truncated;
  qtype = detail::rd16(msg + end);
  qclass = detail::rd16(msg + end + 2);
  return r;
}

// ---------------------------------------------------------------------------
// HTTP/1.x
// ---------------------------------------------------------------------------

enum class http_kind : uint8_t { not_http = 0, get, head, post, put, del, options, other_request, response };

namespace detail {
GNIO_HOST_DEVICE GNIO_FORCEINLINE bool starts_with(const uint8_t* p, uint32_t len, const char* s, uint32_t n) {
  if (len < n) return false;
  for (uint32_t i = 0; i < n; ++i) {
    if (p[i] != static_cast<uint8_t>(s[i])) return false;
  }
  return true;
}
GNIO_HOST_DEVICE GNIO_FORCEINLINE bool is_upper(uint8_t c) { return c >= 'A' && c <= 'Z'; }
inline constexpr uint32_t http_max_method = 20;
}  // namespace detail

// Classifies the first bytes of a TCP payload. Unknown all-caps tokens count as
// requests only when followed by an origin ("/...") or "*" target, to keep
// arbitrary text from matching.
GNIO_HOST_DEVICE inline http_kind http_classify(const uint8_t* p, uint32_t len) {
  using detail::starts_with;
  if (p == nullptr) return http_kind::not_http;
  if (starts_with(p, len, "HTTP/1.", 7)) {
    return (len >= 9 && p[7] >= '0' && p[7] <= '9' && p[8] == ' ') ? http_kind::response : http_kind::not_http;
  }
  if (starts_with(p, len, "GET ", 4)) return http_kind::get;
  if (starts_with(p, len, "HEAD ", 5)) return http_kind::head;
  if (starts_with(p, len, "POST ", 5)) return http_kind::post;
  if (starts_with(p, len, "PUT ", 4)) return http_kind::put;
  if (starts_with(p, len, "DELETE ", 7)) return http_kind::del;
  if (starts_with(p, len, "OPTIONS ", 8)) return http_kind::options;
  if (starts_with(p, len, "CONNECT ", 8) || starts_with(p, len, "PATCH ", 6) || starts_with(p, len, "TRACE ", 6)) {
    return http_kind::other_request;
  }
  uint32_t i = 0;
  while (i < len && i < detail::http_max_method && (detail::is_upper(p[i]) || p[i] == '-' || p[i] == '_')) ++i;
  if (i == 0 || i + 1 >= len || p[i] != ' ') return http_kind::not_http;
  return (p[i + 1] == '/' || p[i + 1] == '*') ? http_kind::other_request : http_kind::not_http;
}

// Copies the request target (up to space/CR/LF/end of data) into out, NUL-
// terminated, cut to out_cap - 1 bytes. *truncated (if given) is set when the
// copy was cut or the data ended before the target did. Returns the number of
// bytes written, -1 if not a request, -2 if the target is empty, -3 if out_cap
// is 0.
GNIO_HOST_DEVICE inline int32_t http_request_path(const uint8_t* p, uint32_t len, char* out, uint32_t out_cap,
                                                  bool* truncated = nullptr) {
  if (truncated != nullptr) *truncated = false;
  const http_kind k = http_classify(p, len);
  if (k == http_kind::not_http || k == http_kind::response) return -1;
  if (out == nullptr || out_cap == 0) return -3;
  uint32_t i = 0;
  while (i < len && p[i] != ' ') ++i;  // classify proved a space exists
  ++i;
  uint32_t start = i;
  while (i < len && p[i] != ' ' && p[i] != '\r' && p[i] != '\n') ++i;
  const uint32_t n = i - start;
  if (n == 0) {
    out[0] = '\0';
    return -2;
  }
  const uint32_t w = n < out_cap - 1 ? n : out_cap - 1;
  for (uint32_t j = 0; j < w; ++j) out[j] = static_cast<char>(p[start + j]);
  out[w] = '\0';
  if (truncated != nullptr) *truncated = (w < n) || (i == len);
  return static_cast<int32_t>(w);
}

}  // namespace gnio::device
