// SPDX-License-Identifier: Apache-2.0
// The flow key of a parsed packet and the Toeplitz (RSS) hash NICs compute
// over it.
#pragma once

#include <gnio/device/pkt/proto.hpp>

namespace gnio::device {

// Explicit reserved bytes leave no padding, so keys can be compared or hashed
// as raw bytes by other code.
struct flow_key {
  uint8_t src[16];  // IPv4 in the first 4 bytes, network order, rest zero
  uint8_t dst[16];
  uint16_t src_port;  // 0 unless TCP/UDP and not a fragment
  uint16_t dst_port;
  uint8_t family;  // 4, 6, or 0 when the packet has no IP header
  uint8_t proto;
  encap_kind tunnel;  // the innermost encapsulation with an identifier, none if there is none
  uint8_t reserved;
  uint32_t tunnel_id;  // its identifier: VNI, TEID, GRE key, ERSPAN session, MPLS label, PPPoE session
};
// No padding: operator== and flow_key_hash64 read a key as eleven 32-bit words.
static_assert(sizeof(flow_key) == 44 && alignof(flow_key) == 4, "a flow key is eleven 32-bit words");

// Every byte of the two keys (reserved included, zero in every key
// make_flow_key builds), compared as eleven 32-bit words: the flow and stream
// tables compare a key at each slot they probe.
GNIO_HOST_DEVICE inline bool operator==(const flow_key& a, const flow_key& b) {
  uint32_t x[11], y[11];
  __builtin_memcpy(x, &a, sizeof a);
  __builtin_memcpy(y, &b, sizeof b);
  uint32_t d = 0;
  for (uint32_t i = 0; i < 11; ++i) d |= x[i] ^ y[i];
  return d == 0;
}

// The innermost packet's flow, with the identifier of the innermost tunnel
// that has one (flows of two tenants with the same addresses stay apart).
// Ports are zeroed for every fragment, first included, so that all pieces of
// a datagram land on the same queue (what NIC RSS does by hashing 2-tuples).
GNIO_HOST_DEVICE inline flow_key make_flow_key(const parsed_pkt& p) {
  flow_key k{};
  for (uint32_t i = p.encap_count; i-- > 0;) {
    if (p.encap[i].has_id) {
      k.tunnel = p.encap[i].kind;
      k.tunnel_id = p.encap[i].id;
      break;
    }
  }
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
    k.tunnel = encap_kind::none;
    k.tunnel_id = 0;
    return k;
  }
  k.proto = p.l4_proto;
  if ((p.l4 == l4_kind::tcp || p.l4 == l4_kind::udp) && !p.is_fragment) {
    k.src_port = p.src_port;
    k.dst_port = p.dst_port;
  }
  return k;
}

// The UDP conversation that carried encapsulation `layer` of p (a VXLAN,
// GENEVE, GTP-U or MPLS-in-UDP tunnel), read from the frame: its outer IP
// addresses and UDP ports, with the identifier of the tunnel around it, if
// any. False when that layer is not a UDP tunnel or its headers are not all
// in the frame.
GNIO_HOST_DEVICE inline bool outer_udp_flow_key(const uint8_t* frame, uint32_t len, const parsed_pkt& p, uint32_t layer,
                                                flow_key& k) {
  k = flow_key{};
  if (frame == nullptr || layer >= p.encap_count) return false;
  const encap_layer& e = p.encap[layer];
  if (e.outer_l4_proto != ipproto_udp || !detail::fits(len, e.outer_l4_off, 4)) return false;
  const uint32_t l3 = e.outer_l3_off;
  if (e.outer_l3 == l3_kind::ipv4 && detail::fits(len, l3, 20)) {
    k.family = 4;
    for (uint32_t i = 0; i < 4; ++i) {
      k.src[i] = frame[l3 + 12 + i];
      k.dst[i] = frame[l3 + 16 + i];
    }
  } else if (e.outer_l3 == l3_kind::ipv6 && detail::fits(len, l3, 40)) {
    k.family = 6;
    for (uint32_t i = 0; i < 16; ++i) {
      k.src[i] = frame[l3 + 8 + i];
      k.dst[i] = frame[l3 + 24 + i];
    }
  } else {
    return false;
  }
  k.proto = ipproto_udp;
  k.src_port = detail::rd16(frame + e.outer_l4_off);
  k.dst_port = detail::rd16(frame + e.outer_l4_off + 2);
  for (uint32_t i = layer; i-- > 0;) {
    if (p.encap[i].has_id) {
      k.tunnel = p.encap[i].kind;
      k.tunnel_id = p.encap[i].id;
      break;
    }
  }
  return true;
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

}  // namespace gnio::device
