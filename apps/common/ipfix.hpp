// SPDX-License-Identifier: Apache-2.0
// IPFIX flow export (RFC 7011; information elements from the IANA IPFIX
// registry, RFC 5102/7012): the message encoder, the tracker that turns
// snapshots of a flow table in executor memory into flow records with active
// and idle timeouts, and the UDP exporter that flow_count and `gnio pp` share.
// docs/ipfix.md says what every field means.
//
//   auto ex = gnio::ipfix::exporter::open(opts);          // bad HOST:PORT: an error, before the run
//   gnio::ipfix::flow_tracker t(domain, opts, layout);
//   t.scan(table_copy, now_ms, false, records);           // every --ipfix-scan-interval
//   ex->send(domain, records, layout, now_ms);
//   t.scan(final_table, now_ms, true, records);            // end of run: every flow flushed
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include <gnio/device/flow_table.hpp>
#include <gnio/status.hpp>

namespace CLI {
class App;
}

namespace gnio::ipfix {

inline constexpr uint16_t protocol_version = 10;  // RFC 7011 §3.1
inline constexpr uint16_t template_set_id = 2;    // RFC 7011 §3.3.2
inline constexpr uint16_t template_ipv4 = 256;    // data set IDs are >= 256
inline constexpr uint16_t template_ipv6 = 257;
inline constexpr size_t message_header_bytes = 16;
inline constexpr size_t set_header_bytes = 4;
// Messages stay below a 1500-byte MTU with IPv6 and UDP headers (RFC 7011
// §10.3.3: an exporter over UDP should not exceed the path MTU).
inline constexpr size_t default_max_message_bytes = 1400;
// Pacing (docs/ipfix.md): a UDP collector drops what its socket buffer cannot
// hold, and the sender never learns of it. Linux's default receive buffer
// (net.core.rmem_default, 208 KiB) holds about 92 datagrams of 1400 bytes, so
// a burst of 32 fits even when the collector is not scheduled for a while;
// nfcapd with its default buffer kept up with 4000 messages/s on a loaded
// 2-core machine, and the default is half that. A collector on this host is
// also watched: sending waits while its receive queue is long.
inline constexpr double default_rate_messages = 2000;
inline constexpr uint32_t pacing_burst_messages = 32;

// IANA IPFIX information element identifiers this exporter uses.
enum ie : uint16_t {
  ie_octet_delta_count = 1,
  ie_packet_delta_count = 2,
  ie_protocol_identifier = 4,
  ie_tcp_control_bits = 6,
  ie_source_transport_port = 7,
  ie_source_ipv4_address = 8,
  ie_destination_transport_port = 11,
  ie_destination_ipv4_address = 12,
  ie_source_ipv6_address = 27,
  ie_destination_ipv6_address = 28,
  ie_vlan_id = 58,
  ie_flow_end_reason = 136,
  ie_flow_start_milliseconds = 152,
  ie_flow_end_milliseconds = 153,
  ie_layer2_segment_id = 351,
  ie_layer2_octet_delta_count = 352,
};

// flowEndReason (IANA element 136).
enum class end_reason : uint8_t {
  idle_timeout = 1,
  active_timeout = 2,
  end_of_flow = 3,
  forced_end = 4,
  lack_of_resources = 5
};

struct field {
  uint16_t id;
  uint16_t length;
};

// Which optional elements the templates carry, and where the record times
// come from: flow_count's table keeps TCP flags, a VLAN ID, the tunnel
// identifier, the IP bytes and the first and last capture time per flow
// (flow_table_update); pp's conversation table keeps the IP bytes and the
// times but none of the others (its keys hold a tunnel's kind, not its ID).
struct layout {
  bool tcp_flags = true;
  bool vlan = true;
  bool tunnel_id = true;      // layer2SegmentId
  bool ip_octets = true;      // octetDeltaCount (IP bytes) next to layer2OctetDeltaCount (frame bytes)
  bool capture_times = true;  // flowStart/flowEnd from flow_entry::first_ns/last_ns rather than scan times
};

// One flow record, host order. Addresses are network order (IPv4 in the
// first 4 bytes).
struct record {
  uint8_t family = 4;  // 4 or 6
  uint8_t src[16]{};
  uint8_t dst[16]{};
  uint16_t src_port = 0, dst_port = 0;
  uint8_t proto = 0;
  uint16_t tcp_flags = 0;
  uint16_t vlan_id = 0;
  uint64_t layer2_segment_id = 0;
  uint64_t packets = 0;
  uint64_t octets = 0;                // octetDeltaCount: IP datagram bytes (flow_entry::ip_bytes)
  uint64_t layer2_octets = 0;         // layer2OctetDeltaCount: frame bytes on the wire (flow_entry::bytes)
  uint64_t start_ms = 0, end_ms = 0;  // milliseconds since the Unix epoch
  end_reason reason = end_reason::forced_end;
};

// The template of a family (4 or 6), in the order its records are encoded.
[[nodiscard]] std::vector<field> template_fields(uint8_t family, const layout& l);
[[nodiscard]] size_t record_bytes(uint8_t family, const layout& l);

// layer2SegmentId (351) for a flow key's tunnel: the IANA encoding puts the
// overlay type in the most significant byte (0x01 VXLAN) and the 24-bit
// segment ID in the low three bytes. Only VXLAN has a type code there; other
// tunnels give 0 (docs/ipfix.md).
[[nodiscard]] uint64_t layer2_segment_id(device::encap_kind kind, uint32_t id) noexcept;

// A message holding the template set with both templates (IPv4, IPv6).
// sequence: the domain's data records sent before it; export_s: seconds
// since the Unix epoch.
[[nodiscard]] std::vector<uint8_t> encode_template_message(uint32_t domain, uint32_t sequence, uint32_t export_s,
                                                           const layout& l);

// Packs records into messages of at most max_bytes, each with an IPv4 and/or
// an IPv6 data set (padded with zeros to a multiple of 4 bytes, the padding
// counted in the set length, RFC 7011 §3.3.1). *sequence is each message's
// sequence number and grows by its records. max_bytes must hold one record of
// each family.
[[nodiscard]] std::vector<std::vector<uint8_t>> encode_data_messages(uint32_t domain, uint32_t* sequence,
                                                                     uint32_t export_s, const layout& l,
                                                                     const std::vector<record>& records,
                                                                     size_t max_bytes = default_max_message_bytes);

// The command-line options both programs take (add_options registers them).
struct options {
  std::string collector;                         // HOST:PORT; empty: no export
  double active_timeout_s = 60;                  // a record at least this often for a flow that keeps sending
  double idle_timeout_s = 15;                    // a flow silent this long is exported and closed
  double scan_interval_s = 1;                    // how often the flow table is copied to the host and scanned
  double template_refresh_s = 60;                // templates resent this often (RFC 7011 §8.4, UDP)
  uint32_t domain = 1;                           // observation domain of the first GPU; the next GPUs count on
  double rate_messages = default_rate_messages;  // messages per second at most (0: unpaced)
  double flush_timeout_s = 5;                    // after a stop request, how long sending may still take
  size_t max_message_bytes = default_max_message_bytes;
};
void add_options(CLI::App& app, options& o);

// flow_entry::meta as flow_count's kernel fills it (gnio/device/flow_table.hpp).
[[nodiscard]] record record_of(const device::flow_entry& e, const layout& l);

// The export state of one flow: its counters at the last look, what records
// already carried, and the open record's first and last growth.
struct flow_state {
  uint64_t seen_packets = 0, seen_bytes = 0, seen_ip_bytes = 0;  // at the last look
  uint64_t sent_packets = 0, sent_bytes = 0, sent_ip_bytes = 0;  // in records already exported
  uint64_t start_ms = 0, last_ms = 0;                            // scan times: the timeouts' clock
  uint64_t sent_last_ns = 0;  // capture time of the last packet the records already exported counted
  bool open = false;
};

// Turns successive copies of one flow table (slots never move or empty) into
// records: counters that grew since the last record are exported when the
// flow has been idle idle_timeout_s, when its record has been open
// active_timeout_s, or on the final scan. The timeouts run on the scans'
// clock. With layout::capture_times the record's flowStart and flowEnd are
// capture times: the flow's first packet (a later record of the flow: the
// last packet of the record before it, as the table keeps no per-record
// first time) and its latest packet at this look; otherwise (packets
// without timestamps) flowStart is the scan that first saw the record's
// first packet and flowEnd the last scan that saw its counters grow.
class flow_tracker {
 public:
  flow_tracker() = default;
  flow_tracker(const options& o, const layout& l);
  // Appends the records due at now_ms to out; final: every open record.
  void scan(const device::flow_entry* table, size_t capacity, uint64_t now_ms, bool final, std::vector<record>& out);
  // One look at one flow whose state the caller keeps (flow_count's host
  // table, which holds flows by key while its device tables are given back):
  // e's cumulative counters grow the open record, and it is appended to out
  // when a timeout is due, as scan() does. `end` closes it now with that
  // reason (a flow given back: end_of_flow or idle_timeout; the end of the
  // run: forced_end); a record with nothing new is not sent.
  void observe(flow_state& s, const device::flow_entry& e, uint64_t now_ms, const end_reason* end,
               std::vector<record>& out) const;

 private:
  uint64_t active_ms_ = 60000, idle_ms_ = 15000;
  layout layout_{};
  std::unordered_map<uint32_t, flow_state> slots_;
};

// What an exporter sent, for the console and the JSON. Every record handed
// to send() is in exactly one of records_sent, records_failed and
// records_unsent. "Sent" means the kernel took the datagram: a collector that
// drops it (its socket buffer full) is not seen from here.
struct export_stats {
  uint64_t messages = 0, template_messages = 0, records = 0, bytes = 0;
  uint64_t records_sent = 0;
  uint64_t records_failed = 0;   // in datagrams that a send error refused
  uint64_t records_unsent = 0;   // left when the flush timeout passed after a stop request
  uint64_t messages_unsent = 0;  // their messages (templates included)
  uint64_t send_errors = 0;      // datagrams not sent (e.g. ECONNREFUSED after an ICMP port unreachable)
  uint64_t send_retries = 0;     // EAGAIN/ENOBUFS: waited for room in the socket buffer and sent again
  uint64_t paced_waits = 0;      // times the rate limit made a send wait
  uint64_t collector_waits = 0;  // times a collector on this host had a long receive queue and a send waited
  std::string last_error;
  [[nodiscard]] uint64_t records_lost() const noexcept { return records_failed + records_unsent; }
};

// A connected UDP socket to the collector, one message stream per domain.
class exporter {
 public:
  exporter() = default;
  exporter(exporter&& o) noexcept;
  exporter& operator=(exporter&& o) noexcept;
  exporter(const exporter&) = delete;
  exporter& operator=(const exporter&) = delete;
  ~exporter();

  // Resolves and connects; a bad HOST:PORT, a name that does not resolve, or
  // a bad option value is an invalid_value error naming the option.
  [[nodiscard]] static result<exporter> open(const options& o);
  // Sends the templates of domain now (and every template_refresh_s after, before data).
  void announce(uint32_t domain, const layout& l, uint64_t now_ms);
  // Sends records (the templates first when due), at most
  // options::rate_messages messages per second after a burst of
  // pacing_burst_messages: it waits (sleeps) for its turn. Send failures are
  // counted and the first of each kind printed on stderr with `program`'s
  // name; none is fatal.
  void send(uint32_t domain, const std::vector<record>& records, const layout& l, uint64_t now_ms);
  // Polled while send() waits: true once the program was asked to stop.
  // From the first true (or stopping()), sending may take flush_timeout_s
  // more; what is left then is counted as unsent, not sent.
  std::function<bool()> stop_requested;
  void stopping() noexcept;
  [[nodiscard]] const export_stats& stats() const noexcept { return stats_; }
  [[nodiscard]] const std::string& peer() const noexcept { return peer_; }
  [[nodiscard]] bool local_collector() const noexcept { return local_collector_; }
  std::string program = "gnio";

 private:
  // False when the message was not sent (counted as an error or as unsent).
  bool transmit(const std::vector<uint8_t>& msg, bool is_template, uint64_t records);
  // Wait for the rate limit's turn, or for room in the socket buffer. False
  // once the flush timeout after a stop request has passed.
  bool wait_turn();
  bool wait_writable();
  // A collector on this host: its socket's receive queue (/proc/net/udp) is
  // read every few messages, and sending waits while it is long, so that a
  // collector that is not scheduled for a while does not overflow.
  bool wait_collector();
  [[nodiscard]] int64_t collector_queue_bytes() const;
  [[nodiscard]] bool giving_up() noexcept;
  struct domain_state {
    uint32_t sequence = 0;
    uint64_t templates_ms = 0;
    bool announced = false;
  };
  int fd_ = -1;
  options opt_;
  std::string peer_;
  std::map<uint32_t, domain_state> domains_;
  std::map<int, uint64_t> errors_by_errno_;
  export_stats stats_;
  double tokens_ = pacing_burst_messages;  // messages that may go now
  int64_t tokens_ns_ = 0;                  // steady clock of the last refill
  int64_t give_up_ns_ = 0;                 // steady clock: nothing is sent after it (0: no stop yet)
  bool gave_up_ = false;
  bool local_collector_ = false;
  std::string proc_addr_, proc_port_;  // the collector's address and port as /proc/net/udp{,6} writes them
  uint32_t since_queue_check_ = 0;
};

// What a program holds: the exporter and one tracker per flow table, table i
// in observation domain options::domain + i.
class session {
 public:
  session() = default;
  // Not enabled when o.collector is empty; errors as exporter::open.
  [[nodiscard]] static result<session> open(const options& o, const layout& l, std::string program);
  [[nodiscard]] bool enabled() const noexcept { return enabled_; }
  // Sends the templates of tables 0..num_tables-1 and starts the scan clock.
  void start(uint32_t num_tables, uint64_t now);
  // True once scan_interval_s has passed since the last scan (then call scan for every table, then scanned()).
  [[nodiscard]] bool due(uint64_t now) const noexcept;
  void scan(uint32_t table, const device::flow_entry* entries, size_t capacity, uint64_t now, bool final);
  // flow_tracker::observe for one flow of table `table`; what is due waits
  // for flush(table, now), which sends it in that table's domain.
  void observe(uint32_t table, flow_state& s, const device::flow_entry& e, uint64_t now, const end_reason* end);
  void flush(uint32_t table, uint64_t now);
  void scanned(uint64_t now) noexcept { last_scan_ms_ = now; }
  // The program was asked to stop (a signal, --duration): what is still to
  // be sent gets --ipfix-flush-timeout. stop_requested as exporter's.
  void stopping() noexcept { ex_.stopping(); }
  void on_stop_request(std::function<bool()> f) { ex_.stop_requested = std::move(f); }
  [[nodiscard]] const export_stats& stats() const noexcept { return ex_.stats(); }
  // The one-line summary for the console, and the "ipfix" object of the JSON.
  [[nodiscard]] std::string summary() const;
  // For stderr: what was not sent and why, or "" when every record was sent.
  [[nodiscard]] std::string loss_warning() const;
  void add_json(nlohmann::json& j) const;

 private:
  bool enabled_ = false;
  options opt_;
  layout layout_;
  exporter ex_;
  std::vector<flow_tracker> trackers_;
  std::vector<record> pending_;
  uint64_t last_scan_ms_ = 0;
};

// Milliseconds since the Unix epoch (the clock flowStart/flowEnd use).
[[nodiscard]] uint64_t now_ms() noexcept;

// "--ipfix HOST:PORT" split: a bracketed IPv6 literal ("[::1]:4739") or a
// name/IPv4 before the last colon. False (with *why) when malformed or the
// port is not 1..65535.
[[nodiscard]] bool split_host_port(const std::string& text, std::string* host, uint16_t* port, std::string* why);

}  // namespace gnio::ipfix
