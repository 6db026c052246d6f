// SPDX-License-Identifier: Apache-2.0
// IPFIX encoding (RFC 7011 §3) and the flow tracker (ipfix.hpp).
#include "ipfix.hpp"

#include <algorithm>
#include <cstring>

namespace gnio::ipfix {

namespace {

void put8(std::vector<uint8_t>& b, uint8_t v) { b.push_back(v); }
void put16(std::vector<uint8_t>& b, uint16_t v) {
  b.push_back(static_cast<uint8_t>(v >> 8));
  b.push_back(static_cast<uint8_t>(v));
}
void put32(std::vector<uint8_t>& b, uint32_t v) {
  put16(b, static_cast<uint16_t>(v >> 16));
  put16(b, static_cast<uint16_t>(v));
}
void put64(std::vector<uint8_t>& b, uint64_t v) {
  put32(b, static_cast<uint32_t>(v >> 32));
  put32(b, static_cast<uint32_t>(v));
}
void set16(std::vector<uint8_t>& b, size_t at, uint16_t v) {
  b[at] = static_cast<uint8_t>(v >> 8);
  b[at + 1] = static_cast<uint8_t>(v);
}

// RFC 7011 §3.1: version, length (patched when the message is complete),
// export time, sequence number, observation domain.
void put_header(std::vector<uint8_t>& b, uint32_t export_s, uint32_t sequence, uint32_t domain) {
  put16(b, protocol_version);
  put16(b, 0);
  put32(b, export_s);
  put32(b, sequence);
  put32(b, domain);
}

void put_record(std::vector<uint8_t>& b, const record& r, const layout& l) {
  const size_t alen = r.family == 6 ? 16 : 4;
  b.insert(b.end(), r.src, r.src + alen);
  b.insert(b.end(), r.dst, r.dst + alen);
  put16(b, r.src_port);
  put16(b, r.dst_port);
  put8(b, r.proto);
  if (l.tcp_flags) put16(b, r.tcp_flags);
  if (l.vlan) put16(b, r.vlan_id);
  if (l.tunnel_id) put64(b, r.layer2_segment_id);
  put64(b, r.packets);
  if (l.ip_octets) put64(b, r.octets);
  put64(b, r.layer2_octets);
  put64(b, r.start_ms);
  put64(b, r.end_ms);
  put8(b, static_cast<uint8_t>(r.reason));
}

}  // namespace

std::vector<field> template_fields(uint8_t family, const layout& l) {
  std::vector<field> f;
  if (family == 6) {
    f.push_back({ie_source_ipv6_address, 16});
    f.push_back({ie_destination_ipv6_address, 16});
  } else {
    f.push_back({ie_source_ipv4_address, 4});
    f.push_back({ie_destination_ipv4_address, 4});
  }
  f.push_back({ie_source_transport_port, 2});
  f.push_back({ie_destination_transport_port, 2});
  f.push_back({ie_protocol_identifier, 1});
  if (l.tcp_flags) f.push_back({ie_tcp_control_bits, 2});  // RFC 7125: two octets
  if (l.vlan) f.push_back({ie_vlan_id, 2});
  if (l.tunnel_id) f.push_back({ie_layer2_segment_id, 8});
  f.push_back({ie_packet_delta_count, 8});
  if (l.ip_octets) f.push_back({ie_octet_delta_count, 8});  // RFC 7012: IP header and payload
  f.push_back({ie_layer2_octet_delta_count, 8});            // the frames: Ethernet header to payload, no FCS
  f.push_back({ie_flow_start_milliseconds, 8});
  f.push_back({ie_flow_end_milliseconds, 8});
  f.push_back({ie_flow_end_reason, 1});
  return f;
}

size_t record_bytes(uint8_t family, const layout& l) {
  size_t n = 0;
  for (const field& f : template_fields(family, l)) n += f.length;
  return n;
}

uint64_t layer2_segment_id(device::encap_kind kind, uint32_t id) noexcept {
  if (kind == device::encap_kind::vxlan) return (uint64_t{0x01} << 56) | (id & 0xffffffu);
  return 0;
}

std::vector<uint8_t> encode_template_message(uint32_t domain, uint32_t sequence, uint32_t export_s, const layout& l) {
  std::vector<uint8_t> b;
  put_header(b, export_s, sequence, domain);
  const size_t set_at = b.size();
  put16(b, template_set_id);
  put16(b, 0);
  for (const uint16_t id : {template_ipv4, template_ipv6}) {
    const auto fields = template_fields(id == template_ipv6 ? 6 : 4, l);
    put16(b, id);
    put16(b, static_cast<uint16_t>(fields.size()));
    for (const field& f : fields) {
      put16(b, f.id);  // enterprise bit 0: IANA elements
      put16(b, f.length);
    }
  }
  set16(b, set_at + 2, static_cast<uint16_t>(b.size() - set_at));
  set16(b, 2, static_cast<uint16_t>(b.size()));
  return b;
}

std::vector<std::vector<uint8_t>> encode_data_messages(uint32_t domain, uint32_t* sequence, uint32_t export_s,
                                                       const layout& l, const std::vector<record>& records,
                                                       size_t max_bytes) {
  std::vector<std::vector<uint8_t>> out;
  // Records of one family are contiguous: one set per family in a message.
  std::vector<const record*> order;
  order.reserve(records.size());
  for (const record& r : records) order.push_back(&r);
  std::stable_sort(order.begin(), order.end(), [](const record* a, const record* b) { return a->family < b->family; });

  std::vector<uint8_t> msg;
  uint32_t in_msg = 0;
  size_t set_at = 0;
  uint8_t set_family = 0;
  const auto close_set = [&] {
    if (set_family == 0) return;
    while ((msg.size() - set_at) % 4 != 0) msg.push_back(0);  // RFC 7011 §3.3.1 padding
    set16(msg, set_at + 2, static_cast<uint16_t>(msg.size() - set_at));
    set_family = 0;
  };
  const auto close_msg = [&] {
    if (msg.empty()) return;
    close_set();
    set16(msg, 2, static_cast<uint16_t>(msg.size()));
    out.push_back(std::move(msg));
    msg.clear();
    *sequence += in_msg;
    in_msg = 0;
  };
  for (const record* r : order) {
    const size_t rb = record_bytes(r->family, l);
    const auto padded = [](size_t n) { return (n + 3) / 4 * 4; };
    // The size once this record is in, with its set's padding.
    size_t need = 0;
    if (msg.empty()) need = message_header_bytes + padded(set_header_bytes + rb);
    else if (set_family != r->family) need = padded(msg.size()) + padded(set_header_bytes + rb);
    else need = set_at + padded(msg.size() - set_at + rb);
    if (!msg.empty() && need > max_bytes) close_msg();
    if (msg.empty()) put_header(msg, export_s, *sequence, domain);
    if (set_family != r->family) {
      close_set();
      set_at = msg.size();
      put16(msg, r->family == 6 ? template_ipv6 : template_ipv4);
      put16(msg, 0);
      set_family = r->family;
    }
    put_record(msg, *r, l);
    ++in_msg;
  }
  close_msg();
  return out;
}

record record_of(const device::flow_entry& e, const layout& l) {
  record r;
  r.family = e.key.family == 6 ? 6 : 4;
  std::memcpy(r.src, e.key.src, 16);
  std::memcpy(r.dst, e.key.dst, 16);
  r.src_port = e.key.src_port;
  r.dst_port = e.key.dst_port;
  r.proto = e.key.proto;
  if (l.tcp_flags) r.tcp_flags = static_cast<uint16_t>(e.meta & device::flow_meta_tcp_flags);
  if (l.vlan && (e.meta & device::flow_meta_tagged))
    r.vlan_id = static_cast<uint16_t>((e.meta >> device::flow_meta_vlan_shift) & device::flow_meta_vlan_mask);
  if (l.tunnel_id) r.layer2_segment_id = layer2_segment_id(e.key.tunnel, e.key.tunnel_id);
  return r;
}

flow_tracker::flow_tracker(const options& o, const layout& l)
    : active_ms_(static_cast<uint64_t>(o.active_timeout_s * 1000)),
      idle_ms_(static_cast<uint64_t>(o.idle_timeout_s * 1000)),
      layout_(l) {}

void flow_tracker::scan(const device::flow_entry* table, size_t capacity, uint64_t now, bool final,
                        std::vector<record>& out) {
  const end_reason forced = end_reason::forced_end;
  for (size_t i = 0; i < capacity; ++i) {
    const device::flow_entry& e = table[i];
    // Frames without an IP header (ARP, ...) have no IPFIX flow key here.
    if (e.state != device::flow_slot_used || (e.key.family != 4 && e.key.family != 6)) continue;
    observe(slots_[static_cast<uint32_t>(i)], e, now, final ? &forced : nullptr, out);
  }
}

void flow_tracker::observe(flow_state& s, const device::flow_entry& e, uint64_t now, const end_reason* end,
                           std::vector<record>& out) const {
  if (e.key.family != 4 && e.key.family != 6) return;
  // A copy taken while the kernel runs may hold a packet's count without
  // its bytes yet: either counter growing is growth, caught up next scan.
  if (e.packets > s.seen_packets || e.bytes > s.seen_bytes || e.ip_bytes > s.seen_ip_bytes) {
    if (!s.open) {
      s.open = true;
      s.start_ms = now;
    }
    s.last_ms = now;
    s.seen_packets = e.packets;
    s.seen_bytes = e.bytes;
    s.seen_ip_bytes = e.ip_bytes;
  }
  if (!s.open) return;
  end_reason why{};
  if (end != nullptr) why = *end;
  else if (now - s.last_ms >= idle_ms_) why = end_reason::idle_timeout;
  else if (now - s.start_ms >= active_ms_) why = end_reason::active_timeout;
  else return;
  record r = record_of(e, layout_);
  r.packets = s.seen_packets - s.sent_packets;
  r.octets = s.seen_ip_bytes - s.sent_ip_bytes;
  r.layer2_octets = s.seen_bytes - s.sent_bytes;
  r.start_ms = s.start_ms;
  r.end_ms = s.last_ms;
  if (layout_.capture_times && e.first_ns != 0 && e.last_ns >= e.first_ns) {
    const uint64_t start_ns = s.sent_packets == 0 || s.sent_last_ns == 0 ? e.first_ns : s.sent_last_ns;
    r.start_ms = start_ns / 1'000'000;
    r.end_ms = e.last_ns / 1'000'000;
    s.sent_last_ns = e.last_ns;
  }
  r.reason = why;
  out.push_back(r);
  s.sent_packets = s.seen_packets;
  s.sent_bytes = s.seen_bytes;
  s.sent_ip_bytes = s.seen_ip_bytes;
  s.open = false;
}

}  // namespace gnio::ipfix
