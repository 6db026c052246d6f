// SPDX-License-Identifier: Apache-2.0
// gnio pp, device side: counting. Counting follows what tshark counts per
// frame (tests/data/MANIFEST.tsv): a frame counts once for every protocol
// present in it, including the IP/UDP/TCP header quoted inside an ICMP
// error; DNS names and conversations go to tables the host reads; TCP
// streams and IP fragments are counted per message and per datagram. Past
// 500 lines: it is one role, the counting tshark's fields ask for, and each
// function is short.
#pragma once

#include "pp_device_base.hpp"

namespace gnio::pp {
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
GNIO_HOST_DEVICE inline void count_http_segment(const uint8_t* frame, uint32_t len, const device::parsed_pkt& p, C& c) {
  using namespace device;
  if (p.payload_len == 0 || frame == nullptr || !detail::fits(len, p.payload_off, p.payload_len)) return;
  switch (http_classify(frame + p.payload_off, p.payload_len)) {
    case http_kind::not_http: break;
    case http_kind::response: c.http_responses += 1; break;
    case http_kind::get:
      c.http_requests += 1;
      c.http_get += 1;
      break;
    case http_kind::head:
      c.http_requests += 1;
      c.http_head += 1;
      break;
    case http_kind::post:
      c.http_requests += 1;
      c.http_post += 1;
      break;
    default:
      c.http_requests += 1;
      c.http_other_requests += 1;
      break;
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
// gives those a udp.stream too). ip_bytes: the frame's outermost IP
// datagram (ip_datagram_bytes), for IPFIX's octetDeltaCount; ts_ns: its
// capture time (0: none), for the conversation's first and last seen.
template <class C>
GNIO_HOST_DEVICE inline void count_tunnel_conversations(const uint8_t* frame, uint32_t len, uint32_t wire_len,
                                                        uint64_t ts_ns, uint32_t ip_bytes, const device::parsed_pkt& p,
                                                        device::flow_entry* conv, uint32_t capacity, C& c) {
  using namespace device;
  if (conv == nullptr || capacity == 0) return;
  for (uint32_t i = 0; i < p.encap_count; ++i) {
    flow_key o{};
    if (!outer_udp_flow_key(frame, len, p, i, o)) continue;
    o.tunnel_id = 0;  // as count_conversation keys them
    const flow_update u{wire_len, ip_bytes, ts_ns, 0, 0};
    if (flow_table_update(conv, capacity, canonical_flow_key(o), u, k_table_max_probe) < 0) c.flow_table_full += 1;
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
                                                uint64_t ts_ns, uint32_t ip_bytes, device::flow_entry* conv,
                                                uint32_t capacity, C& c) {
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
  const flow_update u{wire_len, ip_bytes, ts_ns, 0, 0};
  if (flow_table_update(conv, capacity, canonical_flow_key(k), u, k_table_max_probe) < 0) c.flow_table_full += 1;
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
// The same for a frame whose headers may be in its completion entry
// (device::pkt_frame): read from there, and from the buffer only past them.
GNIO_HOST_DEVICE GNIO_PP_NOINLINE bool parse_frame(const device::frame_ref& f, device::parsed_pkt& p) {
  return device::parse(f, p);
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

// Every counter of one parsed frame, captured at ts_ns (0: unknown). With a
// stream table, HTTP and DNS over TCP are counted per message by
// count_stream: here (defer_stream false), or by the caller afterwards in
// arrival order (the CUDA kernel's ordered pass).
//
// Out of line on the GPU, like the parser, for the kernel loop's registers.
template <class C>
GNIO_HOST_DEVICE GNIO_PP_NOINLINE void count_packet(const uint8_t* frame, uint32_t len, uint32_t wire_len,
                                                    uint64_t ts_ns, const device::parsed_pkt& p,
                                                    device::flow_entry* conv, uint32_t conv_capacity, dns_entry* dns,
                                                    uint32_t dns_capacity, C& c, device::stream_table* st = nullptr,
                                                    bool defer_stream = false, uint64_t now = 0) {
  using namespace device;
  count_common(frame, len, wire_len, p, c);
  const uint32_t ip_bytes = conv != nullptr ? ip_datagram_bytes(p, frame, len, wire_len) : 0u;
  count_tunnel_conversations(frame, len, wire_len, ts_ns, ip_bytes, p, conv, conv_capacity, c);
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
  count_conversation(p, len, wire_len, ts_ns, ip_bytes, conv, conv_capacity, c);
}

// Counts a fragment: fed to the block's reassembly table (one thread per
// table, in arrival order). Until its datagram is complete a fragment counts
// as the IP (and tunnel) headers it shows, as tshark shows it; the fragment
// that completes it counts, once per protocol, what its frame and the whole
// datagram hold together (the datagram's UDP/TCP/ICMP, DNS, HTTP and its
// conversation), as tshark counts the frame that reassembles a datagram.
template <class C>
GNIO_HOST_DEVICE GNIO_PP_NOINLINE void count_fragment(const uint8_t* frame, uint32_t len, uint32_t wire_len,
                                                      uint64_t ts_ns, const device::parsed_pkt& p,
                                                      device::frag_table* ft, device::flow_entry* conv,
                                                      uint32_t conv_capacity, dns_entry* dns, uint32_t dns_capacity,
                                                      C& c) {
  using namespace device;
  frag_stats st{};
  const uint8_t* d = nullptr;
  uint32_t dlen = 0;
  const frag_result r =
      ft != nullptr ? frag_input(*ft, frame, len, p, now_ns(), st, &d, &dlen) : frag_result::not_fragment;
  c.frag_reassembled += st.reassembled;
  c.frag_timed_out += st.timed_out;
  c.frag_overlapping += st.overlapping;
  c.frag_duplicates += st.duplicates;
  c.frag_over_limit += st.over_limit;
  c.frag_bad += st.bad;
  if (r != frag_result::complete || d == nullptr) {
    count_packet(frame, len, wire_len, ts_ns, p, conv, conv_capacity, dns, dns_capacity, c);
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
  // The frame's IP bytes: the completing fragment's datagram on the wire.
  const uint32_t ip_bytes = conv != nullptr ? ip_datagram_bytes(p, frame, len, wire_len) : 0u;
  count_tunnel_conversations(frame, len, wire_len, ts_ns, ip_bytes, p, conv, conv_capacity, c);
  count_tunnel_conversations(d, dlen, wire_len, ts_ns, ip_bytes, q, conv, conv_capacity, c);
  // The datagram's flow with the identifier of the tunnel around it: m is q
  // with the fragment's encapsulations, now read as the whole datagram.
  m.is_fragment = false;
  m.malformed = q.malformed;
  m.error = q.error;
  m.encap_limit = q.encap_limit;
  count_conversation(m, dlen, wire_len, ts_ns, ip_bytes, conv, conv_capacity, c);
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
  count_fragment(f, len, wire, device::pkt_timestamp_ns(q, idx), p, ft, conv, conv_capacity, dns, dns_capacity, c);
}

// The hash of a TCP segment's connection, which the ordered pass groups by.
GNIO_HOST_DEVICE GNIO_PP_NOINLINE uint32_t connection_hash(const device::parsed_pkt& p) {
  device::flow_key k = device::make_flow_key(p);
  k.src_port = p.src_port;
  k.dst_port = p.dst_port;
  return static_cast<uint32_t>(device::flow_key_hash64(device::canonical_flow_key(k)));
}

}  // namespace gnio::pp
