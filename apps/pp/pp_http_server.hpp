// SPDX-License-Identifier: Apache-2.0
// gnio pp, device side: the HTTP server's part of the replies: which page a
// request asks for and the TCP segment that carries it.
#pragma once

#include "pp_device_base.hpp"

namespace gnio::pp {
// Length of the segment make_tcp_segment would build, or 0 when it cannot.
GNIO_HOST_DEVICE inline uint32_t tcp_segment_len(const device::parsed_pkt& req_p, uint32_t payload_len) {
  using namespace device;
  if (!req_p.has_l2 || req_p.l3 != l3_kind::ipv4 || req_p.l4 != l4_kind::tcp || req_p.malformed ||
      req_p.encap_count != 0)
    return 0;
  if (payload_len > max_tcp_payload) return 0;
  const uint32_t n = req_p.l3_off + 40u + payload_len;
  return n < min_frame ? min_frame : n;
}

// A TCP segment back to the sender of req (IPv4 only): Ethernet addresses
// swapped with src_mac as source (VLAN tags kept), a fresh IPv4 header (TTL
// 64, DF, id 0, checksum), ports swapped, the caller's seq/ack/flags, window
// 65535, no options, the payload, TCP checksum; zero-padded to 60 bytes.
// Returns the frame length, or 0 when req is not IPv4/TCP, payload_len >
// max_tcp_payload or cap is too small. flags are device::tcp_* bits.
GNIO_HOST_DEVICE inline uint32_t make_tcp_segment(const uint8_t* req, const device::parsed_pkt& req_p,
                                                  const uint8_t src_mac[6], uint8_t flags, uint32_t seq, uint32_t ack,
                                                  const uint8_t* payload, uint32_t payload_len, uint8_t* out,
                                                  uint32_t cap) {
  using namespace device;
  const uint32_t n = tcp_segment_len(req_p, payload_len);
  if (n == 0 || req == nullptr || out == nullptr || src_mac == nullptr || n > cap) return 0;
  if (payload_len != 0 && payload == nullptr) return 0;
  const uint32_t l3 = req_p.l3_off;
  for (uint32_t i = 0; i < 6; ++i) {
    out[i] = req[6 + i];
    out[6 + i] = src_mac[i];
  }
  for (uint32_t i = 12; i < l3; ++i) out[i] = req[i];  // VLAN tags and the IPv4 ethertype
  uint8_t* ip = out + l3;
  ip[0] = 0x45;
  ip[1] = 0;
  device::put16(ip + 2, static_cast<uint16_t>(40u + payload_len));
  device::put16(ip + 4, 0);
  device::put16(ip + 6, 0x4000);  // DF
  ip[8] = 64;
  ip[9] = ipproto_tcp;
  device::put16(ip + 10, 0);
  device::put32(ip + 12, req_p.ipv4.dst);
  device::put32(ip + 16, req_p.ipv4.src);
  device::put16(ip + 10, ipv4_header_checksum(ip, 20));
  uint8_t* t = ip + 20;
  device::put16(t, req_p.dst_port);
  device::put16(t + 2, req_p.src_port);
  device::put32(t + 4, seq);
  device::put32(t + 8, ack);
  t[12] = 5u << 4;
  t[13] = flags;
  device::put16(t + 14, 0xffff);
  device::put16(t + 16, 0);
  device::put16(t + 18, 0);
  for (uint32_t i = 0; i < payload_len; ++i) t[20 + i] = payload[i];
  device::put16(t + 16, l4_checksum_ipv4(req_p.ipv4.dst, req_p.ipv4.src, ipproto_tcp, t, 20u + payload_len));
  for (uint32_t i = l3 + 40u + payload_len; i < n; ++i) out[i] = 0;
  return n;
}

// The HTTP response to a request segment: the page (complete status line,
// headers and body) in one segment with FIN|PSH|ACK, seq = the request's ACK
// number, ack = request seq + its payload (+1 for a FIN in the request). The
// server's next sequence number after it is req ack + page_len + 1 (the FIN).
GNIO_HOST_DEVICE inline uint32_t make_http_response(const uint8_t* req, const device::parsed_pkt& p,
                                                    const app_config& cfg, const uint8_t* page, uint32_t page_len,
                                                    uint8_t* out, uint32_t cap) {
  using namespace device;
  if (p.l4 != l4_kind::tcp || p.malformed || p.is_fragment || !(p.tcp.flags & tcp_ack)) return 0;
  const uint32_t ack = p.tcp.seq + p.payload_len + ((p.tcp.flags & tcp_fin) ? 1u : 0u);
  return make_tcp_segment(req, p, cfg.mac, static_cast<uint8_t>(tcp_fin | tcp_psh | tcp_ack), p.tcp.ack, ack, page,
                          page_len, out, cap);
}

enum class reply_kind : uint8_t { none = 0, icmp_inplace, arp, http_index, http_second, http_404 };

// Which page a segment asks for: a GET to cfg.ip port 80 ("/" or
// "/index.html" -> index, pages.second_path -> second, anything else -> 404).
// none when the segment is not such a request or the page is missing or
// longer than max_tcp_payload.
GNIO_HOST_DEVICE inline reply_kind http_select_page(const uint8_t* frame, uint32_t len, const device::parsed_pkt& p,
                                                    const app_config& cfg, const http_pages& pages,
                                                    const uint8_t** page, uint32_t* page_len) {
  using namespace device;
  if (frame == nullptr || !cfg.http_server || cfg.ip == 0 || pages.data == nullptr) return reply_kind::none;
  if (p.l3 != l3_kind::ipv4 || p.l4 != l4_kind::tcp || p.malformed || p.is_fragment) return reply_kind::none;
  if (p.ipv4.dst != cfg.ip || p.dst_port != 80) return reply_kind::none;
  const uint16_t f = p.tcp.flags;
  if (!(f & tcp_ack) || (f & (tcp_syn | tcp_rst))) return reply_kind::none;
  if (p.payload_len == 0 || !detail::fits(len, p.payload_off, p.payload_len)) return reply_kind::none;
  const uint8_t* pl = frame + p.payload_off;
  if (http_classify(pl, p.payload_len) != http_kind::get) return reply_kind::none;
  // A path that does not fit (or whose request line is cut) is no page we
  // serve: it gets the 404. n <= path_cap - 1, so equals() reads at most
  // second_path[path_cap - 1].
  constexpr uint32_t path_cap = sizeof(http_pages::second_path);
  char path[path_cap];
  bool cut = false;
  uint32_t got = 0;
  const bool have = http_request_path(pl, p.payload_len, path, path_cap, &got, &cut) == http_error::none && !cut;
  const int32_t n = have ? static_cast<int32_t>(got) : -1;
  auto equals = [&](const char* s) {
    int32_t i = 0;
    for (; i < n; ++i)
      if (s[i] == '\0' || s[i] != path[i]) return false;
    return s[i] == '\0';
  };
  reply_kind k = reply_kind::http_404;
  uint32_t off = pages.missing_off, plen = pages.missing_len;
  if (n > 0 && (equals("/") || equals("/index.html"))) {
    k = reply_kind::http_index;
    off = pages.index_off;
    plen = pages.index_len;
  } else if (n > 0 && pages.second_path[0] != '\0' && equals(pages.second_path)) {
    k = reply_kind::http_second;
    off = pages.second_off;
    plen = pages.second_len;
  }
  if (plen == 0 || plen > max_tcp_payload) return reply_kind::none;
  *page = pages.data + off;
  *page_len = plen;
  return k;
}

}  // namespace gnio::pp
