// SPDX-License-Identifier: Apache-2.0
// gnio pp: the persistent kernel body and its per-packet logic. Everything
// here is GNIO_HOST_DEVICE so that the same code runs as a CUDA kernel (one
// block per RX queue) and on the host executor (one thread per queue), and so
// that the unit tests can call each step on hand-built frames.
//
// Counting follows what tshark counts per frame (tests/data/MANIFEST.tsv):
// a frame counts once for every protocol present in it, including the IP/UDP/
// TCP header quoted inside an ICMP error. Replies (ICMP echo, ARP, HTTP) are
// built on the device and sent through the block's TX queue.
#pragma once

#include <gnio/device/block.hpp>
#include <gnio/device/flow_table.hpp>
#include <gnio/device/pkt.hpp>
#include <gnio/device/pkt/frag.hpp>
#include <gnio/device/pkt/stream.hpp>
#include <gnio/device/rx.hpp>
#include <gnio/device/sem.hpp>
#include <gnio/device/tx.hpp>

#include "pp.hpp"

namespace gnio::pp {

// Largest TCP payload a reply frame may carry: one 1500-byte IPv4 MTU minus
// 20 bytes of IPv4 and 20 of TCP header. The host keeps pages below it.
inline constexpr uint32_t max_tcp_payload = 1460;
// Minimum Ethernet frame without FCS; built frames are zero-padded to it.
inline constexpr uint32_t min_frame = 60;
// How long a block waits for TX descriptors or completions before giving up
// on a reply (counted in tx_failed).
inline constexpr uint64_t tx_timeout_ns = 500'000'000ull;
// How long the final report waits for the host to free the block's item.
inline constexpr uint64_t final_report_wait_ns = 100'000'000ull;
inline constexpr uint64_t recv_timeout_ns = 100'000;
// Most threads a CUDA block may have (the kernel's per-round shared arrays
// are this long; pp's --threads allows fewer).
inline constexpr uint32_t k_max_block_threads = 1024;
// Slots the conversation and DNS name tables search from a key's hash: a
// table that fills up (more conversations than it holds) then costs each new
// key a bounded search, counted in flow_table_full / dns_names_dropped,
// rather than a walk of the whole table per packet.
inline constexpr uint32_t k_table_max_probe = gnio::device::flow_table_max_probe;  // shared with flow_count

// Out of line in device code (to bound the kernel's registers), an ordinary
// inline function elsewhere.
#if defined(__CUDACC__)
#define GNIO_PP_NOINLINE __noinline__
#else
#define GNIO_PP_NOINLINE inline
#endif

namespace detail {

using device::detail::fits;
using device::detail::rd16;
using device::detail::rd32;
using device::fnv1a64;

// Whether the parser filled in the L4 header fields (ports, TCP seq/flags,
// ICMP type). A truncated_l4 error means it did not, except for TCP whose
// 20-byte base header was all there and only its options were cut by the
// capture.
GNIO_HOST_DEVICE inline bool l4_fields_ok(const device::parsed_pkt& p, uint32_t len) {
  using namespace device;
  if (!(p.malformed && p.error == pkt_error::truncated_l4)) return true;
  if (p.l4 != l4_kind::tcp) return false;
  uint32_t ip_end = len;
  if (p.l3 == l3_kind::ipv4) ip_end = p.l3_off + uint32_t{p.ipv4.total_length};
  else if (p.l3 == l3_kind::ipv6 && !p.ipv6.jumbo) ip_end = p.l3_off + 40u + p.ipv6.payload_length;
  return fits(ip_end < len ? ip_end : len, p.l4_off, 20);
}

}  // namespace detail

// ---------------------------------------------------------------------------
// Counting
// ---------------------------------------------------------------------------

// Protocol of the L4 header quoted in an ICMP (types 3, 4, 5, 11, 12) or
// ICMPv6 (types 1-4) error, as tshark decodes it: the quoted IP header must be
// complete and followed by at least 8 bytes of L4 (RFC 792's minimum quote),
// and must not be a non-first fragment. Returns 0 when nothing is decoded.
// ICMPv6: the quoted IPv6 header's next header is taken as is (extension
// headers inside a quote are not walked).
GNIO_HOST_DEVICE inline uint8_t icmp_quoted_l4_proto(const uint8_t* frame, uint32_t len, const device::parsed_pkt& p) {
  using namespace device;
  if (frame == nullptr || !detail::l4_fields_ok(p, len)) return 0;
  // payload_off/payload_len cover the captured bytes after the 8-byte ICMP
  // header, clamped to the datagram.
  const uint32_t off = p.payload_off;
  const uint32_t n = p.payload_len;
  if (!detail::fits(len, off, n)) return 0;
  const uint8_t* q = frame + off;
  if (p.l4 == l4_kind::icmp) {
    const uint8_t t = p.icmp.type;
    if (t != 3 && t != 4 && t != 5 && t != 11 && t != 12) return 0;
    if (n < 20 || (q[0] >> 4) != 4) return 0;
    const uint32_t hl = (q[0] & 0x0fu) * 4u;
    if (hl < 20 || n < hl + 8) return 0;
    const uint16_t frag = static_cast<uint16_t>(detail::rd16(q + 6) & 0x1fffu);
    if (frag != 0) return 0;
    return q[9];
  }
  if (p.l4 == l4_kind::icmpv6) {
    const uint8_t t = p.icmp.type;
    if (t < 1 || t > 4) return 0;
    if (n < 48 || (q[0] >> 4) != 6) return 0;
    return q[6];
  }
  return 0;
}

// Per-frame counters every packet gets: packets/bytes (wire length), and
// once for every protocol present at any depth (parsed_pkt::protos), as
// tshark counts frames: a VXLAN frame carrying TCP counts in udp, tcp and
// vxlan. A fragment's transport header counts only once its datagram is
// reassembled (count_reassembled), as tshark shows fragments as IP only.
template <class C>
GNIO_HOST_DEVICE inline void count_common(const uint8_t* frame, uint32_t len, uint32_t wire_len,
                                          const device::parsed_pkt& p, C& c) {
  using namespace device;
  c.packets += 1;
  c.bytes += wire_len;
  const uint32_t pr = p.protos;
  if (pr & proto_vlan) c.vlan += 1;
  if (p.malformed) c.malformed += 1;
  if (p.is_fragment) c.fragments += 1;
  if (pr & proto_ipv4) c.ipv4 += 1;
  if (pr & proto_ipv6) c.ipv6 += 1;
  bool tcp = (pr & proto_tcp) != 0;
  bool udp = (pr & proto_udp) != 0;
  const bool icmp = (pr & proto_icmp) != 0;
  const bool icmpv6 = (pr & proto_icmpv6) != 0;
  const bool arp = (pr & proto_arp) != 0;
  if (p.l4 == l4_kind::icmp || p.l4 == l4_kind::icmpv6) {
    const uint8_t q = icmp_quoted_l4_proto(frame, len, p);
    if (q == ipproto_tcp) tcp = true;
    if (q == ipproto_udp) udp = true;
  }
  if (tcp) c.tcp += 1;
  if (udp) c.udp += 1;
  if (icmp) c.icmp += 1;
  if (icmpv6) c.icmpv6 += 1;
  if (arp) c.arp += 1;
  if (!(tcp || udp || icmp || icmpv6 || arp)) c.other += 1;
  if (pr & proto_gre) c.gre += 1;
  if (pr & proto_erspan) c.erspan += 1;
  if (pr & proto_vxlan) c.vxlan += 1;
  if (pr & proto_geneve) c.geneve += 1;
  if (pr & proto_gtpu) c.gtpu += 1;
  if (pr & proto_ipip) c.ipip += 1;
  if (pr & proto_mpls) c.mpls += 1;
  if (pr & proto_pppoe) c.pppoe += 1;
  if (pr & proto_l2tp) c.l2tp += 1;
  if (p.encap_limit) c.encap_limit += 1;
}

// Adds one occurrence of a DNS name to the table (device::slot_find_or_claim
// on the name's FNV-1a hash, at most k_table_max_probe slots from the hash).
// Returns 1 when the name was new, 0 when it existed, -1 when the table is
// full (for this name).
GNIO_HOST_DEVICE inline int dns_table_add(dns_entry* table, uint32_t capacity, const char* name, uint32_t n) {
  if (n >= dns_name_bytes) return -1;
  const uint64_t h = detail::fnv1a64(name, n);
  auto match = [h, name, n](const dns_entry& e) {
    if (e.hash != h || e.len != n) return false;
    for (uint32_t i = 0; i < n; ++i)
      if (e.name[i] != name[i]) return false;
    return true;
  };
  auto claim = [h, name, n](dns_entry& e) {
    e.hash = h;
    e.len = n;
    for (uint32_t i = 0; i < n; ++i) e.name[i] = name[i];
    e.name[n] = '\0';
  };
  bool fresh = false;
  dns_entry* e = device::slot_find_or_claim(table, capacity, h, match, claim, &fresh, k_table_max_probe);
  if (e == nullptr) return -1;
  // Relaxed: a statistic; the host reads it after the kernel ended.
  device::dev_atomic_ref<uint64_t>(e->count).fetch_add(1, cuda::std::memory_order_relaxed);
  return fresh ? 1 : 0;
}

// Reads the first question's name of the DNS query message `msg`, whose
// header `h` the caller parsed (dns_parse_header), into the table, as wire
// labels (dns_read_name_labels: any byte may be in a label; the host prints
// it escaped with dns_name_text). Names longer than dns_name_bytes - 1 are
// cut at a label boundary; names that cannot be read (truncated, pointer
// loops, bad labels) are skipped. The root name is kept as one 0 byte.
template <class C>
GNIO_HOST_DEVICE inline void dns_count_name(const device::dns_header& h, const uint8_t* msg, uint32_t msg_len,
                                            dns_entry* table, uint32_t capacity, C& c) {
  if (table == nullptr || capacity == 0 || h.qdcount == 0) return;
  char name[dns_name_bytes];
  uint32_t n = 0;
  // out_too_small leaves the complete labels that fit: the name cut there.
  const device::dns_error e =
      device::dns_read_name_labels(msg, msg_len, device::dns_header_len, name, dns_name_bytes, &n);
  if (e != device::dns_error::none && e != device::dns_error::out_too_small) return;
  if (e == device::dns_error::out_too_small && n == 0) return;
  if (n == 0) {
    name[0] = 0;  // the root: one 0 byte
    n = 1;
  }
  if (dns_table_add(table, capacity, name, n) < 0) c.dns_names_dropped += 1;
}

// DNS-format messages over UDP port 53, 5353 (mDNS) or 5355 (LLMNR), which
// tshark decodes into the same dns.* fields, or over TCP port 53 (2-byte
// length prefix, then the message; count_stream frames them per message when
// there is a stream table). The header must pass dns_header_sane against the
// length the sender declared (UDP length or the TCP prefix), so a capture cut
// short still counts, as it does for tshark; an mDNS message may have no
// question (an announcement) when it has records. Returns true when the frame
// was counted as DNS.
//
// Out of line on the GPU: taking the parsed packet by reference there keeps
// it in local memory (L1) rather than in registers, which brings the kernel
// from 128 to 80 registers per thread without spills, so that a block may
// have up to 768 threads (512 otherwise).
template <class C>
GNIO_HOST_DEVICE GNIO_PP_NOINLINE bool count_dns(const uint8_t* frame, uint32_t len, const device::parsed_pkt& p,
                                                 dns_entry* table, uint32_t capacity, C& c) {
  using namespace device;
  if (frame == nullptr || !detail::l4_fields_ok(p, len)) return false;
  if (p.l4 != l4_kind::udp && p.l4 != l4_kind::tcp) return false;
  auto on = [&p](uint16_t port) { return p.src_port == port || p.dst_port == port; };
  const bool dns53 = on(53);
  const bool multicast = p.l4 == l4_kind::udp && !dns53 && (on(5353) || on(5355));
  if (!dns53 && !multicast) return false;
  if (!detail::fits(len, p.payload_off, p.payload_len)) return false;
  const uint8_t* msg = frame + p.payload_off;
  uint32_t cap_len = p.payload_len;  // bytes we can read
  uint32_t decl_len = 0;             // bytes the sender says the message has
  if (p.l4 == l4_kind::udp) {
    decl_len = p.udp_length >= 8 ? p.udp_length - 8u : 0u;
  } else {
    if (cap_len < 2 + dns_header_len) return false;
    decl_len = detail::rd16(msg);
    msg += 2;
    cap_len -= 2;
  }
  // Read no further than the message (a TCP segment may carry a second one);
  // a capture cut short is read as far as it goes.
  if (decl_len < cap_len) cap_len = decl_len;
  dns_header h;
  if (!dns_parse_header(msg, cap_len, h)) return false;
  if (!dns_header_sane(h, decl_len)) {
    // mDNS announcements carry records and no question, and an mDNS query
    // may ask more than 16 questions at once (RFC 6762 5.3): checked as one
    // question in what the others leave (5 bytes at least each).
    dns_header q = h;
    q.qdcount = 1;
    const uint32_t more = h.qdcount > 1 ? (h.qdcount - 1u) * 5u : 0u;
    const bool mdns = multicast && (h.qdcount != 0 || (h.ancount | h.nscount | h.arcount) != 0) &&
                      decl_len >= dns_header_len + 5u + more && dns_header_sane(q, decl_len - more);
    if (!mdns) return false;
  }
  if (h.qr) {
    c.dns_responses += 1;
  } else {
    c.dns_queries += 1;
    dns_count_name(h, msg, cap_len, table, capacity, c);
  }
  return true;
}

// HTTP classified on one TCP segment on its own: a payload that starts with
// a request method or "HTTP/1.x " counts.
template <class C>
GNIO_HOST_DEVICE inline void count_http_segment(const uint8_t* frame, uint32_t len, const device::parsed_pkt& p,
                                                C& c) {
  using namespace device;
  if (p.payload_len == 0 || frame == nullptr || !detail::fits(len, p.payload_off, p.payload_len)) return;
  switch (http_classify(frame + p.payload_off, p.payload_len)) {
    case http_kind::not_http: break;
    case http_kind::response: c.http_responses += 1; break;
    case http_kind::get: c.http_requests += 1; c.http_get += 1; break;
    case http_kind::head: c.http_requests += 1; c.http_head += 1; break;
    case http_kind::post: c.http_requests += 1; c.http_post += 1; break;
    default: c.http_requests += 1; c.http_other_requests += 1; break;
  }
}

// TCP flag counters and, per segment (per_segment_http), HTTP: a segment
// whose payload starts with a request method or "HTTP/1.x " counts, on any
// port (tshark also needs a known port or its heuristics). Pure ACK: ACK set,
// no payload, no SYN/FIN/RST. With a stream table, count_stream counts HTTP
// per message instead.
template <class C>
GNIO_HOST_DEVICE inline void count_tcp(const uint8_t* frame, uint32_t len, const device::parsed_pkt& p, bool is_dns,
                                       C& c, bool per_segment_http = true) {
  using namespace device;
  if (p.l4 != l4_kind::tcp || !detail::l4_fields_ok(p, len)) return;
  const uint16_t f = p.tcp.flags;
  const bool syn = (f & tcp_syn) != 0, fin = (f & tcp_fin) != 0, rst = (f & tcp_rst) != 0;
  const bool pure_ack = (f & tcp_ack) && !syn && !fin && !rst && p.payload_len == 0;
  if (syn) c.tcp_syn += 1;
  if (fin) c.tcp_fin += 1;
  if (rst) c.tcp_rst += 1;
  if (pure_ack) c.tcp_ack += 1;
  if (!syn && !fin && !rst && !pure_ack) c.tcp_other += 1;
  if (per_segment_http && !is_dns) count_http_segment(frame, len, p, c);
}

template <class C>
GNIO_HOST_DEVICE inline void count_icmp(const device::parsed_pkt& p, C& c) {
  using namespace device;
  if (p.l4 == l4_kind::icmp) {
    // A truncated header has no valid type: it counts as other. (The length
    // argument matters only for TCP.)
    const bool ok = detail::l4_fields_ok(p, ~0u);
    if (ok && p.icmp.type == 8) c.icmp_echo_req += 1;
    else if (ok && p.icmp.type == 0) c.icmp_echo_reply += 1;
    else c.icmp_other += 1;
  } else if (p.l4 == l4_kind::icmpv6 && detail::l4_fields_ok(p, ~0u)) {
    if (p.icmp.type == 128) c.icmpv6_echo_req += 1;
    else if (p.icmp.type == 129) c.icmpv6_echo_reply += 1;
  }
}

template <class C>
GNIO_HOST_DEVICE inline void count_arp(const device::parsed_pkt& p, C& c) {
  using namespace device;
  if (p.l3 != l3_kind::arp || (p.malformed && p.error == pkt_error::truncated_l3)) return;
  if (p.arp.op == 1) c.arp_requests += 1;
  else if (p.arp.op == 2) c.arp_replies += 1;
}

// The UDP conversation of every UDP tunnel a frame came through (tshark
// gives those a udp.stream too).
template <class C>
GNIO_HOST_DEVICE inline void count_tunnel_conversations(const uint8_t* frame, uint32_t len, uint32_t wire_len,
                                                        const device::parsed_pkt& p, device::flow_entry* conv,
                                                        uint32_t capacity, C& c) {
  using namespace device;
  if (conv == nullptr || capacity == 0) return;
  for (uint32_t i = 0; i < p.encap_count; ++i) {
    flow_key o{};
    if (!outer_udp_flow_key(frame, len, p, i, o)) continue;
    o.tunnel_id = 0;  // as count_conversation keys them
    if (flow_table_add(conv, capacity, canonical_flow_key(o), wire_len, k_table_max_probe) < 0) c.flow_table_full += 1;
  }
}

// One conversation per TCP/UDP 5-tuple of the innermost packet, both
// directions together, as tshark's streams count them. A tunnel's identifier
// may differ per direction (an L2TP session id is the receiver's; a VXLAN or
// GENEVE overlay may use one VNI each way), so a conversation keys on the kind
// of tunnel it came through, not on the identifier (flow_count's directional
// flows key on both). A first fragment carries the ports and counts for its
// datagram; later fragments do not count (they have no ports).
template <class C>
GNIO_HOST_DEVICE inline void count_conversation(const device::parsed_pkt& p, uint32_t len, uint32_t wire_len,
                                                device::flow_entry* conv, uint32_t capacity, C& c) {
  using namespace device;
  if (conv == nullptr || capacity == 0) return;
  if (p.l4 != l4_kind::tcp && p.l4 != l4_kind::udp) return;
  if (!detail::l4_fields_ok(p, len)) return;
  flow_key k = make_flow_key(p);
  // make_flow_key zeroes the ports of every fragment (for RSS); the first one
  // has them and they name the conversation.
  k.src_port = p.src_port;
  k.dst_port = p.dst_port;
  k.tunnel_id = 0;
  if (flow_table_add(conv, capacity, canonical_flow_key(k), wire_len, k_table_max_probe) < 0) c.flow_table_full += 1;
}

// SSDP (UDP port 1900): HTTP messages in UDP datagrams, one per datagram,
// which tshark counts in its http.request and http.response fields too: its
// M-SEARCH requests and their responses (tshark does not mark a NOTIFY as a
// request, so neither does this).
template <class C>
GNIO_HOST_DEVICE inline void count_ssdp(const uint8_t* frame, uint32_t len, const device::parsed_pkt& p, C& c) {
  using namespace device;
  if (frame == nullptr || p.l4 != l4_kind::udp || (p.src_port != 1900 && p.dst_port != 1900)) return;
  if (p.payload_len == 0 || !detail::fits(len, p.payload_off, p.payload_len)) return;
  const uint8_t* m = frame + p.payload_off;
  const http_kind k = http_classify(m, p.payload_len);
  if (k == http_kind::response) {
    c.http_responses += 1;
    c.http_response_messages += 1;
  } else if (k == http_kind::other_request && device::detail::starts_with(m, p.payload_len, "M-SEARCH ", 9)) {
    c.http_requests += 1;
    c.http_other_requests += 1;
    c.http_request_messages += 1;
  }
}

// The parser, out of line in the kernel: inlined, its walk through tunnels
// would add its registers to every thread of the kernel's loop.
GNIO_HOST_DEVICE GNIO_PP_NOINLINE bool parse_frame(const uint8_t* f, uint32_t len, device::parsed_pkt& p) {
  return device::parse(f, len, p);
}

// Whether a frame is an IP fragment to reassemble: one the capture holds
// whole. A fragment the capture cut short can never be part of a datagram;
// it counts as what it shows (its transport header, for a first fragment),
// as tshark does.
GNIO_HOST_DEVICE inline bool reassemble_this(const device::parsed_pkt& p, uint32_t len) {
  using namespace device;
  if (!p.is_fragment) return false;
  if (p.l3 == l3_kind::ipv4) return p.l3_off + uint32_t{p.ipv4.total_length} <= len;
  if (p.l3 == l3_kind::ipv6) return !p.ipv6.jumbo && p.l3_off + 40u + p.ipv6.payload_length <= len;
  return false;
}

// Whether count_stream has a segment to follow: a TCP header the parser
// filled in, and a table to follow it in.
GNIO_HOST_DEVICE inline bool streamed(const device::parsed_pkt& p, uint32_t len, const device::stream_table* st) {
  return st != nullptr && st->slots != nullptr && p.l4 == device::l4_kind::tcp && detail::l4_fields_ok(p, len) &&
         !reassemble_this(p, len);
}

// HTTP and DNS over TCP, per message, as tshark counts them: the segment is
// fed to its connection's framing (pkt/stream.hpp), and a frame counts in
// http_requests (and its method), http_responses, dns_queries or
// dns_responses when a message of that kind completes in it (tshark's frame
// counts; http_request_messages and http_response_messages count the
// messages). Segments of one connection must come in arrival order from one
// thread at a time (the kernel's ordered pass; the block owns the table). A
// full table falls back to per-segment classification (stream_table_full).
template <class C>
GNIO_HOST_DEVICE GNIO_PP_NOINLINE void count_stream(const uint8_t* frame, uint32_t len, const device::parsed_pkt& p,
                                                    device::stream_table* st, dns_entry* dns, uint32_t dns_capacity,
                                                    C& c, uint64_t now) {
  using namespace device;
  if (!streamed(p, len, st)) return;
  flow_key k = make_flow_key(p);
  k.src_port = p.src_port;
  k.dst_port = p.dst_port;
  const flow_key canon = canonical_flow_key(k);
  tcp_conn* conn = stream_table_find_or_add(*st, canon, nullptr);
  if (conn == nullptr) {
    c.stream_table_full += 1;
    const bool is_dns = count_dns(frame, len, p, dns, dns_capacity, c);
    if (!is_dns) count_http_segment(frame, len, p, c);
    return;
  }
  conn->last_ns = now;
  stream_events ev;
  tcp_stream_feed(*conn, stream_dir(k, canon), p, frame, len, ev);
  if (ev.http_requests != 0) c.http_requests += 1;
  if (ev.http_get != 0) c.http_get += 1;
  if (ev.http_head != 0) c.http_head += 1;
  if (ev.http_post != 0) c.http_post += 1;
  if (ev.http_other_requests != 0) c.http_other_requests += 1;
  if (ev.http_responses != 0) c.http_responses += 1;
  c.http_request_messages += ev.http_requests;
  c.http_response_messages += ev.http_responses;
  if (ev.dns_queries != 0) c.dns_queries += 1;
  if (ev.dns_responses != 0) c.dns_responses += 1;
  for (uint32_t i = 0; i < ev.num_dns_query_starts && i < stream_max_events; ++i) {
    if (!detail::fits(len, ev.dns_query_off[i], ev.dns_query_len[i])) continue;
    // The framing reported the query on its QR bit alone (and parses its own
    // copy of the header when the message ends): qdcount is read here.
    const uint8_t* msg = frame + ev.dns_query_off[i];
    dns_header h;
    if (!dns_parse_header(msg, ev.dns_query_len[i], h)) continue;
    dns_count_name(h, msg, ev.dns_query_len[i], dns, dns_capacity, c);
  }
  if (ev.retransmitted) c.tcp_retransmitted += 1;
  if (ev.gap) c.tcp_gaps += 1;
  c.stream_messages_dropped += ev.messages_dropped;
}

// Every counter of one parsed frame. With a stream table, HTTP and DNS over
// TCP are counted per message by count_stream: here (defer_stream false), or
// by the caller afterwards in arrival order (the CUDA kernel's ordered pass).
//
// Out of line on the GPU, like the parser, for the kernel loop's registers.
template <class C>
GNIO_HOST_DEVICE GNIO_PP_NOINLINE void count_packet(const uint8_t* frame, uint32_t len, uint32_t wire_len,
                                          const device::parsed_pkt& p, device::flow_entry* conv, uint32_t conv_capacity,
                                          dns_entry* dns, uint32_t dns_capacity, C& c,
                                          device::stream_table* st = nullptr, bool defer_stream = false,
                                          uint64_t now = 0) {
  using namespace device;
  count_common(frame, len, wire_len, p, c);
  count_tunnel_conversations(frame, len, wire_len, p, conv, conv_capacity, c);
  count_arp(p, c);
  // A fragment held for reassembly shows only its IP header (the parser left
  // its transport protocol out of protos): nothing above IP counts until the
  // datagram is whole (count_fragment).
  if (reassemble_this(p, len)) return;
  const bool stream = streamed(p, len, st);
  const bool is_dns = !stream && count_dns(frame, len, p, dns, dns_capacity, c);
  if (p.l4 == l4_kind::udp && !is_dns) {
    c.udp_other += 1;
    count_ssdp(frame, len, p, c);
  }
  count_tcp(frame, len, p, is_dns, c, !stream);
  if (stream && !defer_stream) count_stream(frame, len, p, st, dns, dns_capacity, c, now);
  count_icmp(p, c);
  count_conversation(p, len, wire_len, conv, conv_capacity, c);
}

// Counts a fragment: fed to the block's reassembly table (one thread per
// table, in arrival order). Until its datagram is complete a fragment counts
// as the IP (and tunnel) headers it shows, as tshark shows it; the fragment
// that completes it counts, once per protocol, what its frame and the whole
// datagram hold together (the datagram's UDP/TCP/ICMP, DNS, HTTP and its
// conversation), as tshark counts the frame that reassembles a datagram.
template <class C>
GNIO_HOST_DEVICE GNIO_PP_NOINLINE void count_fragment(const uint8_t* frame, uint32_t len, uint32_t wire_len,
                                                      const device::parsed_pkt& p, device::frag_table* ft,
                                                      device::flow_entry* conv, uint32_t conv_capacity,
                                                      dns_entry* dns, uint32_t dns_capacity, C& c) {
  using namespace device;
  frag_stats st{};
  const uint8_t* d = nullptr;
  uint32_t dlen = 0;
  const frag_result r = ft != nullptr ? frag_input(*ft, frame, len, p, now_ns(), st, &d, &dlen) : frag_result::not_fragment;
  c.frag_reassembled += st.reassembled;
  c.frag_timed_out += st.timed_out;
  c.frag_overlapping += st.overlapping;
  c.frag_duplicates += st.duplicates;
  c.frag_over_limit += st.over_limit;
  c.frag_bad += st.bad;
  if (r != frag_result::complete || d == nullptr) {
    count_packet(frame, len, wire_len, p, conv, conv_capacity, dns, dns_capacity, c);
    return;
  }
  parsed_pkt q;
  (void)parse_l3(d, dlen, q);
  // The frame, counted once: its own headers' protocols and the datagram's,
  // the tunnels it came through (their identifiers name the inner flow).
  parsed_pkt m = q;
  m.protos |= p.protos;
  m.is_fragment = true;
  m.malformed = p.malformed || q.malformed;
  m.error = p.malformed ? p.error : q.error;
  m.encap_limit = p.encap_limit || q.encap_limit;
  if (q.encap_count == 0) {
    m.encap_count = p.encap_count;
    for (uint32_t i = 0; i < p.encap_count; ++i) m.encap[i] = p.encap[i];
  }
  count_common(d, dlen, wire_len, m, c);
  const bool is_dns = count_dns(d, dlen, q, dns, dns_capacity, c);
  if (q.l4 == l4_kind::udp && !is_dns) c.udp_other += 1;
  count_tcp(d, dlen, q, is_dns, c);
  count_icmp(q, c);
  count_tunnel_conversations(frame, len, wire_len, p, conv, conv_capacity, c);
  count_tunnel_conversations(d, dlen, wire_len, q, conv, conv_capacity, c);
  // The datagram's flow with the identifier of the tunnel around it: m is q
  // with the fragment's encapsulations, now read as the whole datagram.
  m.is_fragment = false;
  m.malformed = q.malformed;
  m.error = q.error;
  m.encap_limit = q.encap_limit;
  count_conversation(m, dlen, wire_len, conv, conv_capacity, c);
}

// The kernel's fragment pass (one thread takes a round's fragments) re-reads
// a frame from its RX slot: parsed here, out of line, so that the kernel
// holds no second copy of the parser.
template <class C>
GNIO_HOST_DEVICE GNIO_PP_NOINLINE void count_fragment_at(const device::rxq& q, uint64_t idx, device::frag_table* ft,
                                                         device::flow_entry* conv, uint32_t conv_capacity,
                                                         dns_entry* dns, uint32_t dns_capacity, C& c) {
  const uint8_t* f = device::pkt_addr(q, idx);
  const uint32_t len = device::pkt_len(q, idx), wire = device::pkt_wire_len(q, idx);
  device::parsed_pkt p;
  parse_frame(f, len, p);
  count_fragment(f, len, wire, p, ft, conv, conv_capacity, dns, dns_capacity, c);
}


// The hash of a TCP segment's connection, which the ordered pass groups by.
GNIO_HOST_DEVICE GNIO_PP_NOINLINE uint32_t connection_hash(const device::parsed_pkt& p) {
  device::flow_key k = device::make_flow_key(p);
  k.src_port = p.src_port;
  k.dst_port = p.dst_port;
  return static_cast<uint32_t>(device::flow_key_hash64(device::canonical_flow_key(k)));
}

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
  device::put16(a, 1);       // Ethernet
  device::put16(a + 2, device::ethertype_ipv4);
  a[4] = 6;
  a[5] = 4;
  device::put16(a + 6, 2);   // reply
  for (uint32_t i = 0; i < 6; ++i) {
    a[8 + i] = cfg.mac[i];
    a[18 + i] = p.arp.sha[i];
  }
  device::put32(a + 14, cfg.ip);
  device::put32(a + 24, p.arp.spa);
  for (uint32_t i = l3 + 28; i < n; ++i) out[i] = 0;
  return n;
}

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

struct reply_plan {
  reply_kind kind;
  uint32_t len;          // frame length to send
  const uint8_t* page;   // http kinds
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

// ---------------------------------------------------------------------------
// Counters and reports
// ---------------------------------------------------------------------------

// The block's counters for the current batch, one device::block_counter per
// field of counters (shared memory on the GPU, a local on the host executor),
// usable with every count_* function.
struct block_counters {
#define GNIO_PP_BLOCK_FIELD(name) device::block_counter name;
  GNIO_PP_COUNTERS(GNIO_PP_BLOCK_FIELD)
#undef GNIO_PP_BLOCK_FIELD
};
// zero_block_counters and flush_block_counters index both structs as arrays,
// counter k at word k, as the host does with counters.
static_assert(sizeof(block_counters) == num_counters * sizeof(device::block_counter) &&
                  sizeof(counters) == num_counters * sizeof(uint64_t),
              "block_counters and counters must be arrays of num_counters 64-bit words in the same order");

// Zeroes the block's counters at kernel start; a block barrier must follow
// before the first count.
GNIO_HOST_DEVICE inline void zero_block_counters(block_counters& s) {
  device::block_counters_zero(reinterpret_cast<device::block_counter*>(&s), num_counters);
}

// Moves the block's batch counts into its totals. Call after a block barrier
// that follows the last count of the batch; the next batch's counts come
// after recv's barriers, so the zeroing cannot race with them.
GNIO_HOST_DEVICE inline void flush_block_counters(block_counters& s, counters* total) {
  device::block_counters_flush(reinterpret_cast<device::block_counter*>(&s), reinterpret_cast<uint64_t*>(total),
                               num_counters);
}

// Writes a report of the block's counters into its semaphore item when the
// host has freed it. Returns false when the item is still busy (try later);
// true when written or when the semaphore cannot hold reports (then nothing
// is written). Called by one thread of the block.
GNIO_HOST_DEVICE inline bool try_report(const body& b, uint32_t block, bool final_report) {
  using namespace device;
  const sem& s = b.sem;
  if (s.items == nullptr || s.custom == nullptr || block >= s.num_items || s.custom_bytes < sizeof(report)) return true;
  // Acquire (inside sem_get_status) pairs with the host's release of free:
  // it has finished reading the previous report before we overwrite it.
  if (sem_get_status(s, block) != sem_status::free) return false;
  report* r = sem_custom_as<report>(s, block);
  r->block = block;
  r->final_report = final_report ? 1u : 0u;
  r->t_ns = now_ns();
  counters& src = b.ctr[block];
  // Relaxed loads pair with the relaxed fetch_adds of the flushes: a snapshot
  // need not be consistent across fields, only tear-free per field.
#define GNIO_PP_SNAP(name) \
  r->c.name = dev_atomic_ref<uint64_t>(src.name).load(cuda::std::memory_order_relaxed);
  GNIO_PP_COUNTERS(GNIO_PP_SNAP)
#undef GNIO_PP_SNAP
  // Release (inside sem_set_status) pairs with the host's acquire of ready:
  // the report bytes above are visible when it sees ready.
  sem_set_status(s, block, sem_status::ready);
  return true;
}

// ---------------------------------------------------------------------------
// The kernel body
// ---------------------------------------------------------------------------

GNIO_HOST_DEVICE inline void body::operator()(const device::exec_ctx& ctx) const {
  using namespace device;
  // Uniform per block: a block without a role returns as a whole.
  if (ctx.block >= num_blocks || ctx.block >= max_blocks || ctr == nullptr) return;
  const block_role& br = blocks[ctx.block];
  const rxq& rq = br.rx;
  const txq& tq = br.tx;
  const bool can_tx = br.has_tx != 0;
  counters* const total = ctr + ctx.block;
  // This block's reassembly table: only one thread of the block touches it
  // (thread 0 on the GPU), in arrival order.
  frag_table* const ft = frag != nullptr ? frag + ctx.block : nullptr;
  // This block's TCP connections: a connection's segments are fed in
  // arrival order, one at a time (the ordered pass below on the GPU).
  stream_table* const stt = streams != nullptr ? streams + ctx.block : nullptr;
  uint64_t last_report = now_ns();
  GNIO_BLOCK_SHARED block_counters s_count;
  zero_block_counters(s_count);
  // The first barrier inside should_exit orders the zeroing before any count.

  for (;;) {
    if (should_exit<scope::block>(ctx)) break;
    if (thread_rank() == 0 && report_interval_ns != 0) {
      const uint64_t t = now_ns();
      if (t - last_report >= report_interval_ns && try_report(*this, ctx.block, false)) last_report = t;
    }
    uint64_t first = 0;
    uint32_t num = 0;
    const status s = recv<scope::block>(ctx, rq, batch, recv_timeout_ns, &first, &num);
    if (s == status::shutdown) break;
    if (num == 0) continue;  // same result in every thread: no divergence
    // The batch's time, for the stream table's entries and its sweep.
    const uint64_t batch_ns = stt != nullptr ? now_ns() : 0;
    // Up to k_sweep_per_batch quiet connections given back per batch (no
    // other thread is in the table now: recv's barriers are after the last
    // ordered pass, and the next one starts after a barrier below).
    constexpr uint32_t k_sweep_per_batch = 4;
    if (stt != nullptr && thread_rank() == 0) {
      const uint32_t freed = stream_table_sweep(*stt, batch_ns, k_sweep_per_batch);
      if (freed != 0) s_count.stream_reclaimed += freed;
    }
    // Rounds of block_threads() packets (one on the host executor); every
    // thread runs every round (num is block-uniform) so the block-wide calls
    // inside are never divergent.
    bool inplace = false;
    for (uint32_t base = 0; base < num; base += block_threads()) {
      const uint32_t i = base + thread_rank();
      const bool have = i < num;
      parsed_pkt p;
      reply_plan plan{reply_kind::none, 0, nullptr, 0};
      uint8_t* f = nullptr;
      uint32_t len = 0;
      bool is_frag = false, is_seg = false;
      uint32_t conn_hash = 0;
      if (have) {
        const uint64_t idx = first + i;
        f = pkt_addr(rq, idx);
        len = pkt_len(rq, idx);
        const uint32_t wire = pkt_wire_len(rq, idx);
        parse_frame(f, len, p);
        is_frag = ft != nullptr && reassemble_this(p, len);
        if (!is_frag) {
          count_packet(f, len, wire, p, conv, conv_capacity, dns, dns_capacity, s_count, stt, true);
          is_seg = streamed(p, len, stt);
          if (is_seg) conn_hash = connection_hash(p);
        }
        if (can_tx && !is_frag) plan = plan_reply(f, len, wire, p, cfg, pages, tq.stride);
      }
      // Replies, with one reservation and one doorbell for the round.
      if (can_tx) {
        const bool want = plan.kind != reply_kind::none;
        uint64_t di = 0;
        uint32_t n = 0;
        const status ts = tx_block_reserve(tq, want, tx_timeout_ns, &di, &n, ctx.poll);
        if (want) {
          if (ts != status::success) {
            s_count.tx_failed += 1;
          } else if (plan.kind == reply_kind::icmp_inplace) {
            tx_prepare(tq, di, f, plan.len);
            count_sent(plan.kind, s_count);
            inplace = true;
          } else {
            uint8_t* out = tq.buf_addr(di);
            const uint32_t w = write_reply(plan, f, p, cfg, out, tq.stride);
            // w == 0 cannot happen after plan_reply sized it; a zero-length
            // descriptor is completed unsent by the backend (bad_addr).
            tx_prepare(tq, di, out, w);
            if (w) count_sent(plan.kind, s_count);
            else s_count.tx_failed += 1;
          }
        }
        tx_block_publish(tq, n);
      }
      // Fragments, in arrival order, by one thread: the table is not shared.
      // It re-reads each from its slot (count_fragment_at parses it again,
      // out of line: a second parsed packet live here would cost the kernel
      // registers). Block-uniform: every thread takes part in the barriers or
      // none does.
      if (block_any(is_frag)) {
        GNIO_BLOCK_SHARED uint8_t s_frag[k_max_block_threads];
        s_frag[thread_rank()] = is_frag ? 1 : 0;
        sync_block();
        if (thread_rank() == 0) {
          for (uint32_t j = 0; j < block_threads() && base + j < num; ++j) {
            if (s_frag[j]) count_fragment_at(rq, first + base + j, ft, conv, conv_capacity, dns, dns_capacity, s_count);
          }
        }
        sync_block();  // s_frag is rewritten by the next round
      }
      // TCP segments through their connections' framing, each connection's
      // in arrival order. A segment's rank is the number of segments with
      // its connection hash before it in the round; step k feeds the
      // segments of rank k, each from its own thread with the packet it
      // parsed above, different connections at once. A round of distinct
      // connections takes one step, a round of one connection a step per
      // segment. (A hash collision puts two connections in one sequence:
      // still each in order.)
      if (block_any(is_seg)) {
        GNIO_BLOCK_SHARED uint32_t s_conn[k_max_block_threads];  // each thread's connection hash
        constexpr uint32_t k_no_conn = ~0u;                       // a thread without a segment
        s_conn[thread_rank()] = !is_seg ? k_no_conn : conn_hash == k_no_conn ? k_no_conn - 1 : conn_hash;
        sync_block();
        uint32_t rank = 0;
        if (is_seg) {
          const uint32_t h = s_conn[thread_rank()];
          for (uint32_t j = 0; j < thread_rank(); ++j) rank += s_conn[j] == h ? 1u : 0u;
        }
        for (uint32_t k = 0;; ++k) {
          if (is_seg && rank == k) count_stream(f, len, p, stt, dns, dns_capacity, s_count, batch_ns);
          // The barrier orders step k's writes to the table before step
          // k + 1 reads them, and every read of s_conn before the next
          // round rewrites it.
          if (!block_any(is_seg && rank > k)) break;
        }
      }
    }
    // Also the barrier after which every count of the batch is in.
    if (block_any(inplace)) {
      // In-place replies still sit in RX slots the next recv releases.
      if (thread_rank() == 0 && tx_wait(tq, tx_timeout_ns, ctx.poll) != status::success) s_count.tx_failed += 1;
      sync_block();  // thread 0's count before whichever thread flushes tx_failed
    }
    flush_block_counters(s_count, total);
  }

  if (thread_rank() == 0) {
    // Datagrams still waiting for fragments when the stream ended.
    if (ft != nullptr) {
      // Relaxed: a statistic, like the flushes; the final report below and
      // the host (after the kernel) read it.
      dev_atomic_ref<uint64_t>(total->frag_pending).fetch_add(frag_pending(*ft), cuda::std::memory_order_relaxed);
    }
    // Every batch was processed (and in-place replies completed) before the
    // loop ended, so every received slot may go back to the backend.
    release_all(rq);
    // The last flush of every thread happened before a block barrier this
    // thread has passed (inside should_exit or recv).
    const uint64_t t0 = now_ns();
    uint32_t polls = 0;
    while (!try_report(*this, ctx.block, true)) {
      if (now_ns() - t0 >= final_report_wait_ns) break;  // the host reads ctr at the end anyway
      idle_backoff(++polls);
    }
  }
}

}  // namespace gnio::pp
