// SPDX-License-Identifier: Apache-2.0
// The Internet checksum (RFC 1071 / RFC 1624): partial sums, folding,
// pseudo-headers, incremental updates and the checks of a parsed packet.
#pragma once

#include <gnio/device/pkt/proto.hpp>

namespace gnio::device {

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
  uint64_t s =
      (src >> 16) + (src & 0xffffu) + (dst >> 16) + (dst & 0xffffu) + proto + (l4_len >> 16) + (l4_len & 0xffffu);
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
  const uint32_t s = static_cast<uint32_t>(static_cast<uint16_t>(~csum)) + static_cast<uint16_t>(~old_val) + new_val;
  return csum_fold(s);
}

GNIO_HOST_DEVICE GNIO_FORCEINLINE uint16_t csum_update32(uint16_t csum, uint32_t old_val, uint32_t new_val) {
  const uint32_t s = static_cast<uint32_t>(static_cast<uint16_t>(~csum)) + static_cast<uint16_t>(~(old_val >> 16)) +
                     static_cast<uint16_t>(~old_val) + (new_val >> 16) + (new_val & 0xffffu);
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

}  // namespace gnio::device
