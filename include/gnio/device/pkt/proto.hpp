// SPDX-License-Identifier: Apache-2.0
// Protocol constants, the parse result (parsed_pkt) and the parser's error
// codes. The decoders that fill parsed_pkt are in the other pkt/ headers.
#pragma once

#include <gnio/device/pkt/load.hpp>

namespace gnio::device {

enum : uint16_t {
  ethertype_ipv4 = 0x0800,
  ethertype_arp = 0x0806,
  ethertype_vlan = 0x8100,      // 802.1Q
  ethertype_qinq = 0x88a8,      // 802.1ad S-tag
  ethertype_qinq_old = 0x9100,  // pre-standard QinQ, still seen in the wild
  ethertype_ipv6 = 0x86dd,
  ethertype_rarp = 0x8035,
  ethertype_teb = 0x6558,      // transparent Ethernet bridging (GRE, GENEVE)
  ethertype_erspan2 = 0x88be,  // ERSPAN type I/II in GRE
  ethertype_erspan3 = 0x22eb,  // ERSPAN type III in GRE
  ethertype_mpls = 0x8847,
  ethertype_mpls_mc = 0x8848,
  ethertype_pppoe_disc = 0x8863,
  ethertype_pppoe_sess = 0x8864,
};

// UDP ports of the tunnels parse() decapsulates.
enum : uint16_t {
  udp_port_dns = 53,
  udp_port_l2tp = 1701,
  udp_port_gtpu = 2152,
  udp_port_vxlan = 4789,
  udp_port_geneve = 6081,
  udp_port_mpls = 6635,  // MPLS in UDP (RFC 7510)
};

enum : uint8_t {
  ipproto_hopopts = 0,
  ipproto_icmp = 1,
  ipproto_ipip = 4,  // IPv4 encapsulated
  ipproto_tcp = 6,
  ipproto_udp = 17,
  ipproto_ipv6 = 41,  // IPv6 encapsulated
  ipproto_routing = 43,
  ipproto_fragment = 44,
  ipproto_gre = 47,
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

inline constexpr uint32_t max_vlan_tags = 4;
inline constexpr uint32_t max_ipv6_ext_headers = 8;
// Encapsulations parse() walks into; deeper ones are left as payload
// (parsed_pkt::encap_limit).
inline constexpr uint32_t max_encap = 4;
// Label stack entries parse_mpls reads before giving up (tshark has no bound;
// stacks in real networks hold a handful).
inline constexpr uint32_t max_mpls_labels = 16;

enum class l3_kind : uint8_t { none = 0, ipv4, ipv6, arp, other };
enum class l4_kind : uint8_t { none = 0, udp, tcp, icmp, icmpv6, other };

// First problem found; parsing stops there except for truncated_payload,
// where every header was intact and only the capture ended early.
enum class pkt_error : uint8_t {
  none = 0,
  truncated_l2,        // Ethernet header, VLAN tag or loopback family cut
  too_many_vlan_tags,  // more than max_vlan_tags
  truncated_l3,        // fixed IP/ARP header or IPv4 options cut
  bad_ip_version,      // raw-IP link: first nibble neither 4 nor 6
  bad_ipv4_version,    // ethertype said IPv4, header disagrees
  bad_ipv6_version,
  bad_ihl,               // IHL < 5
  bad_total_length,      // IP length smaller than the headers it must hold
  truncated_ext_header,  // IPv6 extension header cut by the capture
  too_many_ext_headers,  // more than max_ipv6_ext_headers
  truncated_l4,          // L4 header does not fit in capture or datagram
  bad_tcp_offset,        // data offset < 5 or beyond the datagram
  bad_udp_length,        // < 8 or beyond the datagram
  truncated_payload,     // headers fine, capture shorter than IP length
  truncated_tunnel,      // a tunnel header (GRE, VXLAN, GENEVE, GTP-U, MPLS, PPPoE, L2TP) cut short
  too_many_mpls_labels,  // no bottom of stack within max_mpls_labels
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
    case pkt_error::truncated_tunnel: return "truncated_tunnel";
    case pkt_error::too_many_mpls_labels: return "too_many_mpls_labels";
  }
  return "unknown";
}

// ---------------------------------------------------------------------------
// Parse result
// ---------------------------------------------------------------------------

struct ipv4_fields {
  uint32_t src;  // host-order value of the address
  uint32_t dst;
  uint16_t total_length;
  uint16_t id;
  uint16_t frag_offset;  // in 8-byte units, as on the wire
  uint16_t checksum;     // as on the wire, not verified by parse()
  uint8_t ihl;           // 32-bit words
  uint8_t hdr_len;       // bytes, options included
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
  uint32_t frag_id;  // valid when has_frag_header
  uint16_t payload_length;
  uint16_t hdr_len;      // 40 + extension headers walked
  uint16_t frag_offset;  // 8-byte units
  uint8_t traffic_class;
  uint8_t hop_limit;
  uint8_t next_header;        // first one, in the fixed header
  uint8_t final_next_header;  // after the extension headers
  uint8_t ext_count;
  bool has_frag_header;
  bool mf;
  bool jumbo;  // payload_length 0 behind hop-by-hop: length from capture
};

struct arp_fields {
  uint16_t htype;
  uint16_t ptype;
  uint16_t op;  // 1 request, 2 reply
  uint8_t hlen;
  uint8_t plen;
  bool eth_ipv4;  // fields below valid only for Ethernet/IPv4 ARP
  uint8_t sha[6];
  uint8_t tha[6];
  uint32_t spa;  // host-order value
  uint32_t tpa;
};

struct tcp_fields {
  uint32_t seq;
  uint32_t ack;
  uint32_t ts_val;
  uint32_t ts_ecr;
  uint16_t flags;  // tcp_fin .. tcp_ns
  uint16_t window;
  uint16_t checksum;
  uint16_t urg_ptr;
  uint16_t mss;
  uint8_t hdr_len;  // data offset * 4, options included
  uint8_t wscale;
  uint8_t sack_blocks;  // blocks in a SACK option, if any
  bool has_mss;
  bool has_wscale;
  bool sack_permitted;
  bool has_timestamps;
  bool opt_error;  // an option of a known kind had a bad length (skipped by its length, as Linux
                   // does), or a length ran past the options (the walk stopped there)
};

struct icmp_fields {
  uint8_t type;
  uint8_t code;
  uint16_t checksum;
  uint32_t rest;  // id/seq for echo, MTU/pointer for errors
};

// An encapsulation parse() went through, outermost first.
enum class encap_kind : uint8_t { none = 0, ipip, gre, erspan, vxlan, geneve, gtpu, mpls, pppoe, l2tp };

GNIO_HOST_DEVICE inline const char* to_string(encap_kind k) {
  switch (k) {
    case encap_kind::none: return "none";
    case encap_kind::ipip: return "ipip";
    case encap_kind::gre: return "gre";
    case encap_kind::erspan: return "erspan";
    case encap_kind::vxlan: return "vxlan";
    case encap_kind::geneve: return "geneve";
    case encap_kind::gtpu: return "gtpu";
    case encap_kind::mpls: return "mpls";
    case encap_kind::pppoe: return "pppoe";
    case encap_kind::l2tp: return "l2tp";
  }
  return "unknown";
}

struct encap_layer {
  encap_kind kind;
  bool has_id;
  uint16_t off;           // offset of the encapsulating header (the outer IP header for ipip)
  uint16_t outer_l3_off;  // the IP header that carried it (0 and outer_l3 none for MPLS/PPPoE on Ethernet)
  l3_kind outer_l3;
  uint8_t outer_l4_proto;  // ipproto_udp for the UDP tunnels, ipproto_gre, or the ipip protocol
  uint16_t outer_l4_off;   // the outer UDP header (UDP tunnels)
  uint32_t id;             // VXLAN/GENEVE VNI, GTP-U TEID, GRE key, ERSPAN session, top MPLS label, PPPoE session,
                           // L2TP tunnel << 16 | session
};

// Protocols present at any depth of a frame (parsed_pkt::protos), the way
// tshark's frame counts see them: a frame counts once per protocol.
enum : uint32_t {
  proto_ipv4 = 1u << 0,
  proto_ipv6 = 1u << 1,
  proto_tcp = 1u << 2,
  proto_udp = 1u << 3,
  proto_icmp = 1u << 4,
  proto_icmpv6 = 1u << 5,
  proto_arp = 1u << 6,
  proto_vlan = 1u << 7,
  proto_gre = 1u << 8,
  proto_erspan = 1u << 9,
  proto_vxlan = 1u << 10,
  proto_geneve = 1u << 11,
  proto_gtpu = 1u << 12,
  proto_ipip = 1u << 13,
  proto_mpls = 1u << 14,
  proto_pppoe = 1u << 15,
  proto_l2tp = 1u << 16,
};

// Trivially copyable so it can sit in shared memory or be memcpy'd to the host.
//
// Tunnels: parse() walks through up to max_encap encapsulations (IP in IP,
// GRE and ERSPAN, VXLAN, GENEVE, GTP-U, MPLS, PPPoE session), records each in
// encap[], and the L3/L4 fields then describe the innermost packet. The L2
// fields describe the outermost Ethernet header (the one replies swap);
// protos has a bit for every protocol seen at any depth.
struct parsed_pkt {
  // L2 (the outermost Ethernet header; has_l2 false for raw IP)
  bool has_l2;
  uint8_t vlan_count;
  bool vlan_8021q;   // saw a 0x8100 tag
  bool vlan_8021ad;  // saw a 0x88a8 tag
  bool vlan_9100;    // saw a 0x9100 tag
  uint16_t dst_mac_off;
  uint16_t src_mac_off;
  uint16_t ethertype;   // after VLAN tags; synthesized for raw IP/loopback
  uint16_t outer_vlan;  // VID of first tag
  uint16_t inner_vlan;  // VID of second tag

  // L3
  l3_kind l3;
  uint16_t l3_off;
  uint8_t l4_proto;  // IPv4 protocol or IPv6 final next header
  bool is_fragment;  // any IPv4/IPv6 fragment, first one included
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

  // Encapsulations, outermost first; the L3/L4 fields above are the innermost.
  uint32_t protos;  // proto_* bits of every header decoded, at any depth
  uint8_t encap_count;
  bool encap_limit;  // a further encapsulation was left undecoded (max_encap)
  encap_layer encap[max_encap];

  bool malformed;
  pkt_error error;
};

namespace detail {

// Records the first problem of a parse; returns false for the caller to pass on.
// truncated_payload gives way to a header problem found later (inside a
// tunnel the capture cut short), so that it keeps meaning "every header was
// intact".
GNIO_HOST_DEVICE GNIO_FORCEINLINE bool fail(parsed_pkt& o, pkt_error e) {
  if (!o.malformed || o.error == pkt_error::truncated_payload) {
    o.malformed = true;
    o.error = e;
  }
  return false;
}

GNIO_HOST_DEVICE GNIO_FORCEINLINE void set_payload(parsed_pkt& o, uint32_t off, uint32_t end) {
  o.payload_off = static_cast<uint16_t>(off);
  o.payload_len = end > off ? end - off : 0;
}

// The parser's walk through a frame: each decoder names the header that
// follows it (next), where it starts (off) and where the bytes that can hold
// it end (end: the capture, or the carrying datagram if that ends first).
enum class layer : uint8_t {
  end = 0,
  ether,
  ethertype,
  ipv4,
  ipv6,
  ip_version,
  mpls,
  pppoe,
  gre,
  erspan2,
  erspan3,
  vxlan,
  geneve,
  gtpu,
  l2tp
};
// A step that decoded an encapsulation header also names it (push), and the
// parser records it in parsed_pkt::encap before walking into the inner packet.
struct cursor {
  layer next = layer::end;
  uint16_t ethertype = 0;  // for layer::ethertype
  uint32_t off = 0;
  uint32_t end = 0;
  encap_kind push = encap_kind::none;
  bool has_id = false;
  uint32_t id = 0;
  uint32_t hdr_off = 0;  // the encapsulation header
};

}  // namespace detail

}  // namespace gnio::device
