// SPDX-License-Identifier: Apache-2.0
// TCP stream framing (gnio/device/pkt/stream.hpp): one connection fed a
// sequence of segments through tcp_stream_feed.
//
// Input: a first byte whose low bit picks DNS (server port 53) or HTTP (port
// 80), then segments, each a 6-byte head and its payload:
//   byte 0: bit 0 direction, bit 1 SYN, bit 2 FIN, bit 3 RST, bit 4 no ACK
//   bytes 1-2: big-endian signed offset of the sequence number from the one
//              the direction expects (0: in order)
//   bytes 3-4: big-endian payload length (a short last one takes what is left)
//   byte 5: how many payload bytes the capture lost at the end (cut to the length)
// Each frame is its own allocation of exactly the captured bytes, so that a
// read past it is an ASan report. Checks: the per-method counts add up; HTTP
// and DNS counts stay in their mode; what one segment completes is bounded by
// its bytes (one message in progress plus one per minimum message size) and
// so is the total by the bytes fed; reported DNS query positions lie inside
// the captured payload and hold at least a header; at most one of
// retransmitted, gap and out of window; and a byte copy of the connection
// fed the same segment gives the same events and state (nothing depends on
// where the entry lives).
#include <gnio/device/pkt/stream.hpp>

#include <cstdlib>
#include <cstring>

#include "check.hpp"

using namespace gnio::device;

namespace {

constexpr uint32_t max_segments = 256;
constexpr uint32_t min_http_msg = 6;  // "GET \n\n"
constexpr uint32_t min_dns_msg = 14;  // a prefix and a header

bool same_events(const stream_events& a, const stream_events& b) { return std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const bool dns = (data[0] & 1) != 0;
  size_t pos = 1;
  static tcp_conn c, copy;
  std::memset(&c, 0, sizeof c);
  uint32_t next[2] = {1000, 5000};
  uint64_t fed = 0, http_msgs = 0, dns_msgs = 0;
  for (uint32_t n = 0; n < max_segments && pos + 6 <= size; ++n) {
    const uint8_t* h = data + pos;
    pos += 6;
    const uint32_t d = h[0] & 1u;
    uint16_t flags = (h[0] & 0x10) ? 0 : tcp_ack;
    if (h[0] & 0x02) flags |= tcp_syn;
    if (h[0] & 0x04) flags |= tcp_fin;
    if (h[0] & 0x08) flags |= tcp_rst;
    const int16_t delta = static_cast<int16_t>(static_cast<uint16_t>(h[1] << 8 | h[2]));
    uint32_t plen = static_cast<uint32_t>(h[3]) << 8 | h[4];
    if (plen > size - pos) plen = static_cast<uint32_t>(size - pos);
    const uint32_t lost = h[5] < plen ? h[5] : plen;
    const uint32_t cap = plen - lost;

    parsed_pkt p{};
    p.l3 = l3_kind::ipv4;
    p.l4 = l4_kind::tcp;
    p.l4_proto = 6;
    p.src_port = d == 0 ? 40000 : (dns ? 53 : 80);
    p.dst_port = d == 0 ? (dns ? 53 : 80) : 40000;
    p.tcp.hdr_len = 20;
    p.tcp.flags = flags;
    p.tcp.seq = next[d] + static_cast<uint32_t>(static_cast<int32_t>(delta));
    p.payload_off = 20;
    p.payload_len = plen;
    const uint32_t len = 20 + cap;
    auto* frame = static_cast<uint8_t*>(std::malloc(len));
    std::memset(frame, 0, 20);
    if (cap > 0) std::memcpy(frame + 20, data + pos, cap);
    pos += plen;
    next[d] = p.tcp.seq + plen + ((flags & (tcp_syn | tcp_fin)) ? 1u : 0u);

    std::memcpy(&copy, &c, sizeof c);
    stream_events ev, ev2;
    tcp_stream_feed(c, d, p, frame, len, ev);
    tcp_stream_feed(copy, d, p, frame, len, ev2);
    GNIO_FUZZ_CHECK(same_events(ev, ev2));
    GNIO_FUZZ_CHECK(std::memcmp(&c, &copy, sizeof c) == 0);

    GNIO_FUZZ_CHECK(!ev.not_fed);
    GNIO_FUZZ_CHECK(ev.http_requests == ev.http_get + ev.http_head + ev.http_post + ev.http_other_requests);
    GNIO_FUZZ_CHECK(int(ev.retransmitted) + int(ev.gap) + int(ev.out_of_window) <= 1);
    const uint64_t seg_http = uint64_t{ev.http_requests} + ev.http_responses;
    const uint64_t seg_dns = uint64_t{ev.dns_queries} + ev.dns_responses;
    if (dns) {
      GNIO_FUZZ_CHECK(seg_http == 0);
      GNIO_FUZZ_CHECK(seg_dns <= 1 + cap / min_dns_msg);
    } else {
      GNIO_FUZZ_CHECK(seg_dns == 0 && ev.num_dns_query_starts == 0);
      GNIO_FUZZ_CHECK(seg_http <= 1 + cap / min_http_msg);
    }
    GNIO_FUZZ_CHECK(ev.num_dns_query_starts <= stream_max_events);
    for (uint32_t i = 0; i < ev.num_dns_query_starts; ++i) {
      GNIO_FUZZ_CHECK(ev.dns_query_off[i] >= 20 && ev.dns_query_len[i] >= dns_header_len);
      GNIO_FUZZ_CHECK(ev.dns_query_off[i] + uint64_t{ev.dns_query_len[i]} <= len);
      GNIO_FUZZ_CHECK((frame[ev.dns_query_off[i] + 2] & 0x80) == 0);  // a query
      if (i > 0) GNIO_FUZZ_CHECK(ev.dns_query_off[i] >= ev.dns_query_off[i - 1] + ev.dns_query_len[i - 1] + 2);
    }
    std::free(frame);
    fed += plen;
    http_msgs += seg_http;
    dns_msgs += seg_dns;
    GNIO_FUZZ_CHECK(http_msgs * min_http_msg <= fed);
    GNIO_FUZZ_CHECK(dns_msgs * min_dns_msg <= fed);
    for (const tcp_dir_state& s : c.dir)
      GNIO_FUZZ_CHECK(s.line_len <= stream_line_cap || s.phase == stream_phase::http_line ||
                      s.phase == stream_phase::http_trailer);
  }
  return 0;
}
