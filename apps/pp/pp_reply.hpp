// SPDX-License-Identifier: Apache-2.0
// gnio pp, device side: replies built on the device and sent through the
// block's TX queue: ICMP echo replies (in place, in the RX slot), ARP replies
// for the configured address, and HTTP pages (pp_http_server.hpp).
#pragma once

#include "pp_device_base.hpp"
#include "pp_http_server.hpp"

namespace gnio::pp {
// ---------------------------------------------------------------------------
// Replies
// ---------------------------------------------------------------------------

// Turns an ICMPv4 echo request into its echo reply in place: Ethernet and IPv4
// addresses swapped, type 0, ICMP checksum updated incrementally (RFC 1624).
// The IPv4 checksum stays valid (swapping two words does not change the sum)
// and TTL is kept. Returns the frame length to send, or 0 (frame untouched)
// when the frame is not a complete, unfragmented echo request to a unicast
// address. A capture cut short (caplen < wire length) must be refused by the
// caller: the parser only sees the captured bytes.
GNIO_HOST_DEVICE inline uint32_t make_icmp_echo_reply_inplace(uint8_t* frame, uint32_t len,
                                                              const device::parsed_pkt& p) {
  using namespace device;
  // A tunneled request is not ours to answer: the reply would need the
  // tunnel's headers rebuilt too.
  if (frame == nullptr || !p.has_l2 || p.malformed || p.is_fragment || p.encap_count != 0) return 0;
  if (p.l3 != l3_kind::ipv4 || p.l4 != l4_kind::icmp || p.icmp.type != 8) return 0;
  const uint32_t l3 = p.l3_off, l4 = p.l4_off;
  if (!detail::fits(len, l3, p.ipv4.total_length) || !detail::fits(len, l4, 8)) return 0;
  // Swapping would make a group address the source of the reply.
  if (frame[0] & 1u) return 0;
  if (p.ipv4.dst >= 0xe0000000u) return 0;  // multicast, reserved, broadcast
  for (uint32_t i = 0; i < 6; ++i) {
    const uint8_t t = frame[i];
    frame[i] = frame[6 + i];
    frame[6 + i] = t;
  }
  uint8_t* ip = frame + l3;
  for (uint32_t i = 0; i < 4; ++i) {
    const uint8_t t = ip[12 + i];
    ip[12 + i] = ip[16 + i];
    ip[16 + i] = t;
  }
  uint8_t* icmp = frame + l4;
  const uint16_t old_word = static_cast<uint16_t>((icmp[0] << 8) | icmp[1]);
  icmp[0] = 0;
  const uint16_t new_word = static_cast<uint16_t>(icmp[1]);
  device::put16(icmp + 2, csum_update16(detail::rd16(icmp + 2), old_word, new_word));
  return len;
}

// Length of the ARP reply make_arp_reply would build, or 0 when the frame is
// not an Ethernet/IPv4 who-has for cfg.ip (from someone else).
GNIO_HOST_DEVICE inline uint32_t arp_reply_len(const device::parsed_pkt& p, const app_config& cfg) {
  using namespace device;
  if (!p.has_l2 || p.l3 != l3_kind::arp || p.malformed || p.encap_count != 0 || !p.arp.eth_ipv4 || p.arp.op != 1)
    return 0;
  if (cfg.ip == 0 || p.arp.tpa != cfg.ip) return 0;
  bool ours = true;  // our own announcement looped back
  for (uint32_t i = 0; i < 6; ++i) ours = ours && p.arp.sha[i] == cfg.mac[i];
  if (ours) return 0;
  const uint32_t n = p.l3_off + 28u;
  return n < min_frame ? min_frame : n;
}

// Builds the reply to a who-has for cfg.ip into out: Ethernet to the
// requester (VLAN tags kept), is-at cfg.mac, zero-padded to 60 bytes.
// Returns the frame length, or 0 when not applicable or cap is too small.
GNIO_HOST_DEVICE inline uint32_t make_arp_reply(const uint8_t* req, const device::parsed_pkt& p, const app_config& cfg,
                                                uint8_t* out, uint32_t cap) {
  const uint32_t n = arp_reply_len(p, cfg);
  if (n == 0 || req == nullptr || out == nullptr || n > cap) return 0;
  const uint32_t l3 = p.l3_off;
  for (uint32_t i = 0; i < 6; ++i) {
    out[i] = p.arp.sha[i];
    out[6 + i] = cfg.mac[i];
  }
  for (uint32_t i = 12; i < l3; ++i) out[i] = req[i];  // VLAN tags and the ARP ethertype
  uint8_t* a = out + l3;
  device::put16(a, 1);  // Ethernet
  device::put16(a + 2, device::ethertype_ipv4);
  a[4] = 6;
  a[5] = 4;
  device::put16(a + 6, 2);  // reply
  for (uint32_t i = 0; i < 6; ++i) {
    a[8 + i] = cfg.mac[i];
    a[18 + i] = p.arp.sha[i];
  }
  device::put32(a + 14, cfg.ip);
  device::put32(a + 24, p.arp.spa);
  for (uint32_t i = l3 + 28; i < n; ++i) out[i] = 0;
  return n;
}

struct reply_plan {
  reply_kind kind;
  uint32_t len;         // frame length to send
  const uint8_t* page;  // http kinds
  uint32_t page_len;
};

// Decides the reply to a counted frame. An ICMP echo reply is made here, in
// the RX slot (the frame is modified); ARP and HTTP replies are only sized
// here and written by write_reply once a TX buffer is reserved.
GNIO_HOST_DEVICE inline reply_plan plan_reply(uint8_t* frame, uint32_t len, uint32_t wire_len,
                                              const device::parsed_pkt& p, const app_config& cfg,
                                              const http_pages& pages, uint32_t tx_cap) {
  using namespace device;
  reply_plan r{reply_kind::none, 0, nullptr, 0};
  if (p.l4 == l4_kind::icmp) {
    if (len < wire_len) return r;  // cut capture: the reply would be cut too
    if (p.l3 != l3_kind::ipv4 || !(cfg.reply_all || (cfg.ip != 0 && p.ipv4.dst == cfg.ip))) return r;
    const uint32_t n = make_icmp_echo_reply_inplace(frame, len, p);
    if (n) r = {reply_kind::icmp_inplace, n, nullptr, 0};
    return r;
  }
  if (p.l3 == l3_kind::arp) {
    const uint32_t n = arp_reply_len(p, cfg);
    if (n && n <= tx_cap) r = {reply_kind::arp, n, nullptr, 0};
    return r;
  }
  if (p.l4 == l4_kind::tcp) {
    const uint8_t* page = nullptr;
    uint32_t page_len = 0;
    const reply_kind k = http_select_page(frame, len, p, cfg, pages, &page, &page_len);
    if (k == reply_kind::none) return r;
    const uint32_t n = tcp_segment_len(p, page_len);
    if (n && n <= tx_cap) r = {k, n, page, page_len};
  }
  return r;
}

// Writes a planned ARP/HTTP reply into out (a TX buffer of tx_cap bytes).
// Returns the frame length (plan.len when all is well) or 0.
GNIO_HOST_DEVICE inline uint32_t write_reply(const reply_plan& plan, const uint8_t* frame, const device::parsed_pkt& p,
                                             const app_config& cfg, uint8_t* out, uint32_t cap) {
  switch (plan.kind) {
    case reply_kind::arp: return make_arp_reply(frame, p, cfg, out, cap);
    case reply_kind::http_index:
    case reply_kind::http_second:
    case reply_kind::http_404: return make_http_response(frame, p, cfg, plan.page, plan.page_len, out, cap);
    default: return 0;
  }
}

template <class C>
GNIO_HOST_DEVICE GNIO_FORCEINLINE void count_sent(reply_kind k, C& c) {
  switch (k) {
    case reply_kind::icmp_inplace: c.icmp_echo_reply_sent += 1; break;
    case reply_kind::arp: c.arp_replies_sent += 1; break;
    case reply_kind::http_index:
    case reply_kind::http_second: c.http_pages_sent += 1; break;
    case reply_kind::http_404: c.http_404_sent += 1; break;
    default: break;
  }
}

}  // namespace gnio::pp
