// SPDX-License-Identifier: Apache-2.0
// gnio pp: what a run reports (pp_report.hpp).
#include "pp_report.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <set>

#include "app.hpp"
#include "cli.hpp"
#include "pp_device.hpp"

namespace gnio::pp {

namespace {

constexpr uint32_t k_top_dns = 20;  // DNS names the JSON lists

std::string conv_key(const device::flow_key& k) {
  const device::flow_key c = device::canonical_flow_key(k);
  return std::string(reinterpret_cast<const char*>(&c), sizeof c);
}

// pp's own families (docs/monitoring.md). The counters of pp.hpp are
// grouped into families whose extra label splits one kind of thing (DNS
// queries and responses, HTTP request methods, ...), so that a sum over a
// family's label counts each frame once where the counters do not overlap.
struct counter_metric {
  std::string_view counter;  // k_counter_names
  std::string_view family;
  std::string_view label;  // "" when the family has no label of its own
  std::string_view value;
};

constexpr counter_metric k_counter_metrics[] = {
    {"packets", "gnio_pp_packets_total", "", ""},
    {"bytes", "gnio_pp_bytes_total", "", ""},
    {"ipv4", "gnio_pp_protocol_packets_total", "protocol", "ipv4"},
    {"ipv6", "gnio_pp_protocol_packets_total", "protocol", "ipv6"},
    {"arp", "gnio_pp_protocol_packets_total", "protocol", "arp"},
    {"tcp", "gnio_pp_protocol_packets_total", "protocol", "tcp"},
    {"udp", "gnio_pp_protocol_packets_total", "protocol", "udp"},
    {"icmp", "gnio_pp_protocol_packets_total", "protocol", "icmp"},
    {"icmpv6", "gnio_pp_protocol_packets_total", "protocol", "icmpv6"},
    {"other", "gnio_pp_protocol_packets_total", "protocol", "other"},
    {"vlan", "gnio_pp_encap_packets_total", "encap", "vlan"},
    {"gre", "gnio_pp_encap_packets_total", "encap", "gre"},
    {"erspan", "gnio_pp_encap_packets_total", "encap", "erspan"},
    {"vxlan", "gnio_pp_encap_packets_total", "encap", "vxlan"},
    {"geneve", "gnio_pp_encap_packets_total", "encap", "geneve"},
    {"gtpu", "gnio_pp_encap_packets_total", "encap", "gtpu"},
    {"ipip", "gnio_pp_encap_packets_total", "encap", "ipip"},
    {"mpls", "gnio_pp_encap_packets_total", "encap", "mpls"},
    {"pppoe", "gnio_pp_encap_packets_total", "encap", "pppoe"},
    {"l2tp", "gnio_pp_encap_packets_total", "encap", "l2tp"},
    {"encap_limit", "gnio_pp_encap_too_deep_packets_total", "", ""},
    {"malformed", "gnio_pp_malformed_packets_total", "", ""},
    {"fragments", "gnio_pp_ip_fragments_total", "", ""},
    {"frag_reassembled", "gnio_pp_reassembly_datagrams_total", "result", "reassembled"},
    {"frag_timed_out", "gnio_pp_reassembly_datagrams_total", "result", "timed_out"},
    {"frag_overlapping", "gnio_pp_reassembly_refused_total", "reason", "overlapping"},
    {"frag_duplicates", "gnio_pp_reassembly_refused_total", "reason", "duplicate"},
    {"frag_over_limit", "gnio_pp_reassembly_refused_total", "reason", "over_limit"},
    {"frag_bad", "gnio_pp_reassembly_refused_total", "reason", "bad"},
    {"frag_pending", "gnio_pp_reassembly_pending_datagrams", "", ""},
    {"dns_queries", "gnio_pp_dns_packets_total", "kind", "query"},
    {"dns_responses", "gnio_pp_dns_packets_total", "kind", "response"},
    {"dns_names_dropped", "gnio_pp_dns_names_dropped_total", "", ""},
    {"udp_other", "gnio_pp_udp_other_packets_total", "", ""},
    {"http_requests", "", "", ""},  // the sum of the methods' series
    {"http_get", "gnio_pp_http_request_packets_total", "method", "GET"},
    {"http_head", "gnio_pp_http_request_packets_total", "method", "HEAD"},
    {"http_post", "gnio_pp_http_request_packets_total", "method", "POST"},
    {"http_other_requests", "gnio_pp_http_request_packets_total", "method", "other"},
    {"http_responses", "gnio_pp_http_response_packets_total", "", ""},
    {"http_request_messages", "gnio_pp_http_messages_total", "kind", "request"},
    {"http_response_messages", "gnio_pp_http_messages_total", "kind", "response"},
    {"tcp_syn", "gnio_pp_tcp_segments_total", "flags", "syn"},
    {"tcp_fin", "gnio_pp_tcp_segments_total", "flags", "fin"},
    {"tcp_rst", "gnio_pp_tcp_segments_total", "flags", "rst"},
    {"tcp_ack", "gnio_pp_tcp_segments_total", "flags", "ack"},
    {"tcp_other", "gnio_pp_tcp_segments_total", "flags", "other"},
    {"tcp_retransmitted", "gnio_pp_tcp_retransmitted_segments_total", "", ""},
    {"tcp_gaps", "gnio_pp_tcp_gap_segments_total", "", ""},
    {"stream_messages_dropped", "gnio_pp_stream_messages_dropped_total", "", ""},
    {"stream_table_full", "gnio_pp_stream_table_full_segments_total", "", ""},
    {"stream_reclaimed", "gnio_pp_stream_reclaimed_connections_total", "", ""},
    {"icmp_echo_req", "gnio_pp_icmp_packets_total", "type", "echo_request"},
    {"icmp_echo_reply", "gnio_pp_icmp_packets_total", "type", "echo_reply"},
    {"icmp_other", "gnio_pp_icmp_packets_total", "type", "other"},
    {"icmpv6_echo_req", "gnio_pp_icmpv6_packets_total", "type", "echo_request"},
    {"icmpv6_echo_reply", "gnio_pp_icmpv6_packets_total", "type", "echo_reply"},
    {"arp_requests", "gnio_pp_arp_packets_total", "op", "request"},
    {"arp_replies", "gnio_pp_arp_packets_total", "op", "reply"},
    {"icmp_echo_reply_sent", "gnio_pp_replies_sent_total", "reply", "icmp_echo_reply"},
    {"arp_replies_sent", "gnio_pp_replies_sent_total", "reply", "arp_reply"},
    {"http_pages_sent", "gnio_pp_replies_sent_total", "reply", "http_page"},
    {"http_404_sent", "gnio_pp_replies_sent_total", "reply", "http_404"},
    {"tx_failed", "gnio_pp_replies_failed_total", "", ""},
    {"flow_table_full", "gnio_pp_flow_table_full_packets_total", "", ""},
    {"filtered", "gnio_pp_filtered_packets_total", "", ""},
};

struct family_help {
  std::string_view family;
  std::string_view help;
};

constexpr family_help k_family_help[] = {
    {"gnio_pp_packets_total", "Frames the pp kernels processed (those --filter let through)."},
    {"gnio_pp_bytes_total", "Bytes of the frames the pp kernels processed, as long as they were on the wire."},
    {"gnio_pp_protocol_packets_total",
     "Processed frames with a header of the protocol at any depth; a frame counts under every protocol it carries "
     "(other: none of tcp, udp, icmp, icmpv6, arp)."},
    {"gnio_pp_encap_packets_total",
     "Processed frames with the encapsulation (or a VLAN tag) at any depth; erspan frames are also gre."},
    {"gnio_pp_encap_too_deep_packets_total",
     "Frames nested deeper than 4 encapsulations, whose fifth and what it carries were left undecoded."},
    {"gnio_pp_malformed_packets_total", "Frames the parser flagged: truncated, bad lengths or versions."},
    {"gnio_pp_ip_fragments_total", "Frames that were IPv4 or IPv6 fragments."},
    {"gnio_pp_reassembly_datagrams_total",
     "IP datagrams whose reassembly ended: completed, or dropped after 30 s without their last piece."},
    {"gnio_pp_reassembly_refused_total",
     "Fragments reassembly refused: overlapping held data, exact duplicates, over the table's limits, or "
     "contradicting their datagram."},
    {"gnio_pp_reassembly_pending_datagrams", "IP datagrams in reassembly now (at the end: left incomplete)."},
    {"gnio_pp_dns_packets_total", "Frames in which a DNS query or response completes."},
    {"gnio_pp_dns_names_dropped_total", "DNS query names that did not fit the name table."},
    {"gnio_pp_udp_other_packets_total", "UDP frames that are not DNS."},
    {"gnio_pp_http_request_packets_total", "Frames in which an HTTP/1.x request completes, by its method."},
    {"gnio_pp_http_response_packets_total", "Frames in which an HTTP/1.x response completes."},
    {"gnio_pp_http_messages_total",
     "HTTP/1.x messages that completed (three pipelined requests in one frame count three)."},
    {"gnio_pp_tcp_segments_total",
     "TCP segments by their flags: SYN, FIN or RST set, a pure ACK without payload, or anything else."},
    {"gnio_pp_tcp_retransmitted_segments_total", "TCP segments with data already seen, which were not read again."},
    {"gnio_pp_tcp_gap_segments_total", "TCP segments that came after a lost one."},
    {"gnio_pp_stream_messages_dropped_total",
     "Messages left uncounted because of a gap in their TCP stream or a short capture."},
    {"gnio_pp_stream_table_full_segments_total",
     "TCP segments whose connection found no room in the stream table (classified on their own)."},
    {"gnio_pp_stream_reclaimed_connections_total",
     "TCP connections given back to the stream table after they went quiet."},
    {"gnio_pp_icmp_packets_total", "ICMP messages by type: echo request (8), echo reply (0), or other."},
    {"gnio_pp_icmpv6_packets_total", "ICMPv6 echo requests (128) and replies (129)."},
    {"gnio_pp_arp_packets_total", "ARP requests (operation 1) and replies (operation 2)."},
    {"gnio_pp_replies_sent_total", "Replies the kernels sent: ICMP echo and ARP replies, HTTP pages and 404 pages."},
    {"gnio_pp_replies_failed_total", "Replies that could not be sent because the TX ring was full."},
    {"gnio_pp_flow_table_full_packets_total", "Frames that found the conversation table full."},
    {"gnio_pp_filtered_packets_total", "Frames the pp kernels took and --filter refused."},
};

// Checked at compile time: every counter has one entry, and every family
// its help.
#define GNIO_PP_NAME(name) #name,
constexpr std::string_view k_names[] = {GNIO_PP_COUNTERS(GNIO_PP_NAME)};
#undef GNIO_PP_NAME
consteval bool counter_metrics_complete() {
  if (std::size(k_counter_metrics) != num_counters) return false;
  for (std::string_view n : k_names) {
    int entries = 0;
    for (const auto& m : k_counter_metrics) entries += m.counter == n ? 1 : 0;
    if (entries != 1) return false;
  }
  for (const auto& m : k_counter_metrics) {
    bool found = m.family.empty();
    for (const auto& h : k_family_help) found = found || h.family == m.family;
    if (!found) return false;
  }
  return true;
}
static_assert(counter_metrics_complete(), "k_counter_metrics needs one entry per counter and a help per family");

// Every counter of pp.hpp in its family, per traffic class and GPU context,
// from the blocks' counters (the semaphore reports while running, the
// counter memory at the end) and the CPU thread's (class tcp_ctrl, gpu "cpu").
void add_pp_metrics(metrics::text& t, std::string_view port, const std::vector<counters>& per_block,
                    const pp_plan& plan, const counters* ctrl_c) {
  std::map<std::pair<std::string, std::string>, counters> groups;
  for (size_t blk = 0; blk < per_block.size(); ++blk)
    add_into(groups[{role_name(plan.blocks[blk].r), std::to_string(plan.blocks[blk].ctx)}], per_block[blk]);
  if (ctrl_c) add_into(groups[{"tcp_ctrl", "cpu"}], *ctrl_c);
  const std::string p(port);
  for (const auto& h : k_family_help) {
    const bool gauge = !h.family.ends_with("_total");
    t.family(h.family, gauge ? "gauge" : "counter", h.help);
    for (const counter_metric& m : k_counter_metrics) {
      if (m.family != h.family) continue;
      const auto i = static_cast<uint32_t>(std::find(std::begin(k_names), std::end(k_names), m.counter) - k_names);
      for (const auto& [k, c] : groups) {
        metrics::labels l{{"port", p}, {"class", k.first}, {"gpu", k.second}};
        if (!m.label.empty()) l.emplace_back(m.label, std::string(m.value));
        t.sample(l, at(c, i));
      }
    }
  }
}

struct dns_row {
  std::string name;
  uint64_t count;
};

// The totals the summary and the JSON show, from a run's outcome.
struct tally {
  counters total{};
  counters cls[4]{};  // by role
  counters tcp_with_ctrl{};
  std::vector<counters> per_ctx;
  // Conversations: a set of canonical keys, so one seen by several kernels
  // (or by a kernel and the CPU thread) counts once.
  size_t tcp_flows = 0, udp_flows = 0, tunnel_flows = 0;
  std::vector<dns_row> names;  // by count, most first
  // What each queue's kernel (or the CPU thread) took from it: the frames
  // that passed the filter and those it refused (filtered_q).
  std::vector<uint64_t> processed_q, filtered_q;
  uint64_t processed = 0, pending = 0, tx_bad_addr = 0, truncated = 0;
  int64_t unaccounted = 0;
};

std::vector<dns_row> dns_names(const std::vector<std::vector<dns_entry>>& tables) {
  std::vector<dns_row> names;
  std::map<std::string, uint64_t> by_name;
  for (const auto& table : tables)
    for (const auto& d : table)
      if (d.state == device::flow_slot_used)
        by_name[dns_name_text(std::string_view(d.name, std::min<uint32_t>(d.len, dns_name_bytes)))] += d.count;
  for (auto& [name, count] : by_name) names.push_back({name, count});
  std::stable_sort(names.begin(), names.end(), [](const dns_row& a, const dns_row& c) { return a.count > c.count; });
  return names;
}

tally count_up(const run_outcome& o) {
  tally t;
  const pp_plan& plan = *o.plan;
  for (uint32_t blk = 0; blk < plan.num_blocks; ++blk) {
    add_into(t.total, o.per_block[blk]);
    add_into(t.cls[static_cast<uint32_t>(plan.blocks[blk].r)], o.per_block[blk]);
  }
  add_into(t.total, o.ctrl);
  t.tcp_with_ctrl = t.cls[1];
  add_into(t.tcp_with_ctrl, o.ctrl);

  std::set<std::string> tcp_conv, udp_conv, in_tunnel;
  for (const auto& table : o.conv_tables)
    for (const auto& e : table) {
      if (e.state != device::flow_slot_used) continue;
      if (e.key.tunnel != device::encap_kind::none) in_tunnel.insert(conv_key(e.key));
      if (e.key.proto == device::ipproto_tcp) tcp_conv.insert(conv_key(e.key));
      else if (e.key.proto == device::ipproto_udp) udp_conv.insert(conv_key(e.key));
    }
  t.tcp_flows = tcp_conv.size();
  t.udp_flows = udp_conv.size();
  t.tunnel_flows = in_tunnel.size();
  t.names = dns_names(o.dns_tables);

  // Accounting per queue: pending = delivered - processed.
  const port_stats& st = o.st;
  t.processed_q = processed_per_queue(plan, st, o.per_block, o.ctrl);
  t.filtered_q.assign(st.rxq.size(), 0);
  for (size_t q = 0; q < plan.rxqs.size() && q < st.rxq.size(); ++q)
    t.filtered_q[q] =
        plan.rxqs[q].block >= 0 ? o.per_block[static_cast<uint32_t>(plan.rxqs[q].block)].filtered : o.ctrl.filtered;
  for (size_t q = 0; q < st.rxq.size(); ++q) {
    t.processed += t.processed_q[q];
    if (st.rxq[q].delivered > t.processed_q[q]) t.pending += st.rxq[q].delivered - t.processed_q[q];
  }
  t.unaccounted = static_cast<int64_t>(st.rx_frames) -
                  static_cast<int64_t>(t.processed + st.rx_missed + st.rx_unsteered + t.pending);
  for (const auto& q : st.txq) t.tx_bad_addr += q.bad_addr;
  for (const auto& q : st.rxq) t.truncated += q.truncated;
  t.per_ctx.resize(o.ctxs.size());
  for (uint32_t blk = 0; blk < plan.num_blocks; ++blk) add_into(t.per_ctx[plan.blocks[blk].ctx], o.per_block[blk]);
  return t;
}

// The console summary. Replies lost on the way out fail the run: returns 1
// then (and names the failure in *failure), else 0.
int print_summary(const run_outcome& o, const tally& t, const console& con, json* failure) {
  const options& opt = *o.opt;
  const port_stats& st = o.st;
  const counters& total = t.total;
  int rc = 0;
  if (opt.stats_interval > 0) {
    counters show[4] = {t.cls[0], t.tcp_with_ctrl, t.cls[2], t.cls[3]};
    con.out("{}", stats_line(o.seconds, o.since_last_line, show, o.prev_cls));
  }
  con.out(
      "pp: {} packets, {} bytes in {:.3f} s: ipv4 {} ipv6 {} tcp {} udp {} icmp {} icmpv6 {} arp {} vlan {} "
      "malformed {}\n",
      total.packets, total.bytes, o.seconds, total.ipv4, total.ipv6, total.tcp, total.udp, total.icmp, total.icmpv6,
      total.arp, total.vlan, total.malformed);
  con.out(
      "pp: dns queries/responses {}/{}, http requests/responses {}/{}, icmp echo req/reply/sent {}/{}/{}, "
      "tcp/udp flows {}/{}\n",
      total.dns_queries, total.dns_responses, total.http_requests, total.http_responses, total.icmp_echo_req,
      total.icmp_echo_reply, total.icmp_echo_reply_sent, t.tcp_flows, t.udp_flows);
  if (total.gre || total.vxlan || total.geneve || total.gtpu || total.ipip || total.mpls || total.pppoe || total.l2tp)
    con.out(
        "pp: tunnels: gre {} (erspan {}) vxlan {} geneve {} gtpu {} ipip {} mpls {} pppoe {} l2tp {}, flows in "
        "tunnels {}{}\n",
        total.gre, total.erspan, total.vxlan, total.geneve, total.gtpu, total.ipip, total.mpls, total.pppoe, total.l2tp,
        t.tunnel_flows,
        total.encap_limit
            ? fmt::format(", {} frame(s) nested deeper than {} left undecoded", total.encap_limit, device::max_encap)
            : std::string());
  if (total.arp_replies_sent || total.http_pages_sent || total.http_404_sent || o.synack_sent || o.finack_sent)
    con.out("pp: sent: arp replies {}, http pages {}, http 404 {}, syn-ack {}, fin-ack {}\n", total.arp_replies_sent,
            total.http_pages_sent, total.http_404_sent, o.synack_sent, o.finack_sent);
  // With --filter, processed counts the frames that passed it.
  con.out("pp: received {} = processed {}{} + missed {} + unsteered {} + pending {}{}\n", st.rx_frames,
          t.processed - total.filtered,
          opt.filter.empty() ? std::string() : fmt::format(" + filtered {}", total.filtered), st.rx_missed,
          st.rx_unsteered, t.pending,
          t.unaccounted == 0 ? "" : fmt::format("  (MISMATCH: {} unaccounted)", t.unaccounted));
  con.out("pp: engine {:.1f} ns/frame over {} lane(s)\n", gnio::engine_ns_per_frame(st), st.lanes.size());
  if (!opt.write.path.empty()) con.out("pp: wrote {} frame(s) to {}\n", o.written, printable(opt.write.path));
  if (st.rx_errors) con.out("pp: the source reported {} read error(s); see the warning above\n", st.rx_errors);
  if (st.rx_dropped)
    con.out(
        "pp: the source dropped {} frame(s) before the engine saw them (a kernel or device ring was full; not in "
        "received)\n",
        st.rx_dropped);
  if (st.tx_errors || total.tx_failed) {
    const std::string msg = fmt::format(
        "{} replies lost on TX: {} the port could not send (tx_errors; see the warnings above), {} could not be "
        "queued (tx_failed: TX ring full or frame too big)",
        st.tx_errors + total.tx_failed, st.tx_errors, total.tx_failed);
    warn("pp: {}\n", msg);
    set_error(failure, msg, "io_failed", "transmit");
    rc = 1;
  }
  if (const std::string w = gnio::cli::truncation_warning("pp", t.truncated, opt.rx_slot); !w.empty()) warn("{}", w);
  if (total.flow_table_full) con.out("pp: {} packets found the conversation table full\n", total.flow_table_full);
  // Their HTTP and DNS were counted per segment, not per message, so those
  // counts may differ from tshark's: said, with the option that helps.
  if (total.stream_table_full)
    con.out(
        "pp: {} TCP segment(s) found their block's table of {} connections full and were classified on their own, "
        "not per message (raise --tcp-streams)\n",
        total.stream_table_full, opt.tcp_streams);
  if (o.ipx->enabled()) con.out("pp: {}\n", o.ipx->summary());
  if (const std::string w = o.ipx->loss_warning(); !w.empty()) warn("pp: {}\n", w);
  if (total.packets == 0 && !o.stopped_early) con.out("pp: the port delivered no packets (empty capture?)\n");
  for (uint32_t i = 0; i < std::min<size_t>(5, t.names.size()); ++i)
    con.out("pp: dns #{} {} ({})\n", i + 1, t.names[i].name, t.names[i].count);
  // Per context: what its kernel processed.
  if (o.ctxs.size() > 1)
    for (uint32_t k = 0; k < o.ctxs.size(); ++k)
      con.out("pp: gpu {} {}{}: {} blocks, {} packets ({:.3f} Mpps)\n", k, o.ctxs[k].info.name,
              o.ctxs[k].info.bus_id.empty() ? "" : " (" + o.ctxs[k].info.bus_id + ")", o.ctxs[k].blocks.size(),
              t.per_ctx[k].packets, o.seconds > 0 ? t.per_ctx[k].packets / o.seconds / 1e6 : 0.0);
  return rc;
}

// The JSON's per_queue and per_class.
void add_queues_json(const run_outcome& o, const tally& t, json& j) {
  const std::vector<plan_rxq>& rxqs = o.plan->rxqs;
  json qs = json::array();
  json per_class = json::object();
  for (size_t q = 0; q < o.st.rxq.size() && q < rxqs.size(); ++q) {
    const auto& s = o.st.rxq[q];
    qs.push_back({{"class", rxqs[q].cls},
                  {"queue", q},
                  {"class_queue", rxqs[q].class_queue},
                  {"offered", s.offered},
                  {"delivered", s.delivered},
                  {"missed", s.missed},
                  {"truncated", s.truncated},
                  {"bytes", s.bytes},
                  {"processed", t.processed_q[q] - t.filtered_q[q]},
                  {"filtered", t.filtered_q[q]}});
    json& c = per_class[rxqs[q].cls];
    for (const char* k : {"offered", "delivered", "missed", "truncated", "processed", "filtered"})
      if (!c.contains(k)) c[k] = 0;
    c["queues"] = c.value("queues", 0) + 1;
    c["offered"] = c["offered"].get<uint64_t>() + s.offered;
    c["delivered"] = c["delivered"].get<uint64_t>() + s.delivered;
    c["missed"] = c["missed"].get<uint64_t>() + s.missed;
    c["truncated"] = c["truncated"].get<uint64_t>() + s.truncated;
    c["processed"] = c["processed"].get<uint64_t>() + t.processed_q[q] - t.filtered_q[q];
    c["filtered"] = c["filtered"].get<uint64_t>() + t.filtered_q[q];
  }
  // The counters each class's kernels (or the CPU thread) kept.
  for (int r = 0; r < 4; ++r) per_class[role_name(static_cast<role>(r))]["counters"] = counters_json(t.cls[r]);
  if (o.plan->ctrl) per_class["tcp_ctrl"]["counters"] = counters_json(o.ctrl);
  j["per_queue"] = qs;
  j["per_class"] = per_class;
}

json make_json(const run_outcome& o, const tally& t) {
  const options& opt = *o.opt;
  const port_stats& st = o.st;
  const gpu_info& info = o.ctxs.front().info;
  json j = json::object();
  j["command"] = opt.command;
  j["port"] = opt.port;
  j["poll"] = opt.poll;
  j["port_device"] = o.used_dev;
  j["inline_bytes"] = o.inline_bytes;
  j["executor"] = std::string(to_string(info.executor));
  j["device"] = info.name;
  j["gpu_bus_id"] = info.bus_id;
  j["queues"] = opt.queues;
  j["blocks"] = o.plan->num_blocks;
  j["gpus"] = static_cast<uint32_t>(o.ctxs.size());
  j["http_server"] = opt.http_server;
  j["reply_all"] = opt.reply_all;
  j["ip"] = o.cfg.ip ? ip_text(o.cfg.ip) : "";
  j["mac"] = mac_text(o.cfg.mac);
  j["seconds"] = o.seconds;
  j["stopped_early"] = o.stopped_early;
  j["time_out"] = false;
  for (uint32_t i = 0; i < num_counters; ++i) j[k_counter_names[i]] = at(t.total, i);
  j["tcp_flows"] = t.tcp_flows;
  j["udp_flows"] = t.udp_flows;
  j["tunnel_flows"] = t.tunnel_flows;
  o.ipx->add_json(j);
  j["tcp_synack_sent"] = o.synack_sent;
  j["tcp_finack_sent"] = o.finack_sent;
  j["received"] = st.rx_frames;
  // received = processed + filtered + missed + unsteered + pending.
  j["processed"] = t.processed - t.total.filtered;
  j["filter"] = opt.filter.empty() ? json(nullptr) : json(opt.filter);
  j["filter_pushed_down"] = o.filter_pushed_down;
  j["written"] = opt.write.path.empty() ? json(nullptr) : json(o.written);
  if (o.write_errno != 0) j["write_error"] = std::strerror(o.write_errno);
  j["missed"] = st.rx_missed;
  j["engine"] = gnio::app::engine_json(st);
  j["unsteered"] = st.rx_unsteered;
  j["pending"] = t.pending;
  j["unaccounted"] = t.unaccounted;
  j["source_errors"] = st.rx_errors;
  j["source_dropped"] = st.rx_dropped;
  j["engine_error"] = o.engine_err ? o.engine_err.what() : "";
  j["tx_frames"] = st.tx_frames;
  j["tx_errors"] = st.tx_errors;
  j["tx_bad_addr"] = t.tx_bad_addr;
  j["reports"] = o.reports;
  j["truncated"] = t.truncated;
  j["rx_slot"] = opt.rx_slot;
  j["tcp_streams"] = opt.tcp_streams;
  j["frag_table"] = opt.frag_table;
  j["final_reports"] = o.final_reports;
  j["mpps"] = o.seconds > 0 ? t.total.packets / o.seconds / 1e6 : 0.0;
  add_queues_json(o, t, j);
  json top = json::array();
  for (uint32_t i = 0; i < std::min<size_t>(k_top_dns, t.names.size()); ++i)
    top.push_back({{"name", t.names[i].name}, {"count", t.names[i].count}});
  j["top_dns"] = top;
  j["dns_names"] = t.names.size();
  json per_gpu = json::array();
  for (uint32_t k = 0; k < o.ctxs.size(); ++k) {
    const ctx_report& c = o.ctxs[k];
    const counters& pc = t.per_ctx[k];
    per_gpu.push_back({{"executor", std::string(to_string(c.info.executor))},
                       {"device", c.info.name},
                       {"bus_id", c.info.bus_id},
                       {"blocks", c.blocks},
                       {"queues", c.rx_ids},
                       {"packets", pc.packets},
                       {"mpps", o.seconds > 0 ? pc.packets / o.seconds / 1e6 : 0.0},
                       {"counters", counters_json(pc)}});
  }
  j["per_gpu"] = per_gpu;
  j["left_out"] = o.left_out;
  return j;
}

}  // namespace

const char* const k_counter_names[num_counters] = {
#define GNIO_PP_NAME(name) #name,
    GNIO_PP_COUNTERS(GNIO_PP_NAME)
#undef GNIO_PP_NAME
};

uint64_t& at(counters& c, uint32_t i) { return reinterpret_cast<uint64_t*>(&c)[i]; }
uint64_t at(const counters& c, uint32_t i) { return reinterpret_cast<const uint64_t*>(&c)[i]; }
void add_into(counters& dst, const counters& src) {
  for (uint32_t i = 0; i < num_counters; ++i) at(dst, i) += at(src, i);
}

json counters_json(const counters& c) {
  json o;
  for (uint32_t i = 0; i < num_counters; ++i) o[k_counter_names[i]] = at(c, i);
  return o;
}

void set_error(json* result, const std::string& message, std::string_view status, std::string_view step) {
  if (!result || result->contains("error")) return;
  (*result)["error"] = message;
  (*result)["error_status"] = std::string(status);
  (*result)["error_step"] = std::string(step);
}

int report_error(const error& e, std::string_view step, json* result) {
  const auto& d = describe(e.code());
  warn("pp: {}: {}\n", step, e.what());
  warn("pp: hint ({} layer): {}\n", to_string(d.where), d.next);
  set_error(result, e.what(), to_string(e.code()), step);
  return 1;
}

int bad_option(const std::string& what, json* result) {
  warn("pp: {}\n", what);
  set_error(result, what, "invalid_value", "options");
  return 2;
}

std::string ip_text(uint32_t host_order) {
  return fmt::format("{}.{}.{}.{}", host_order >> 24, (host_order >> 16) & 0xff, (host_order >> 8) & 0xff,
                     host_order & 0xff);
}

std::string mac_text(const uint8_t m[6]) {
  return fmt::format("{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", m[0], m[1], m[2], m[3], m[4], m[5]);
}

std::string stats_line(double t, double dt, const counters cls[4], const counters prev[4]) {
  auto gbps = [&](int i) { return dt > 0 ? (cls[i].bytes - prev[i].bytes) * 8.0 / dt / 1e9 : 0.0; };
  const counters& u = cls[0];
  const counters& tc = cls[1];
  const counters& ic = cls[2];
  const counters& a = cls[3];
  return fmt::format(
      "pp: {:.1f} s udp: {} pkts {:.2f} Gb/s dns q/r {}/{} | tcp: {} pkts {:.2f} Gb/s http req/resp {}/{} "
      "syn/fin/rst {}/{}/{} | icmp: {} pkts {:.2f} Gb/s echo req/reply/sent {}/{}/{} | arp: {} pkts "
      "req/reply/sent {}/{}/{} other {}\n",
      t, u.packets, gbps(0), u.dns_queries, u.dns_responses, tc.packets, gbps(1), tc.http_requests, tc.http_responses,
      tc.tcp_syn, tc.tcp_fin, tc.tcp_rst, ic.packets, gbps(2), ic.icmp_echo_req, ic.icmp_echo_reply,
      ic.icmp_echo_reply_sent, a.packets, a.arp_requests, a.arp_replies, a.arp_replies_sent, a.packets - a.arp);
}

json interval_json(double t, double dt, const counters cls[4], const counters prev[4]) {
  auto gbps = [&](int i) { return dt > 0 ? (cls[i].bytes - prev[i].bytes) * 8.0 / dt / 1e9 : 0.0; };
  const counters& u = cls[0];
  const counters& tc = cls[1];
  const counters& ic = cls[2];
  const counters& a = cls[3];
  return {
      {"t", t},
      {"dt", dt},
      {"udp",
       {{"packets", u.packets}, {"gbps", gbps(0)}, {"dns_queries", u.dns_queries}, {"dns_responses", u.dns_responses}}},
      {"tcp",
       {{"packets", tc.packets},
        {"gbps", gbps(1)},
        {"http_requests", tc.http_requests},
        {"http_responses", tc.http_responses},
        {"tcp_syn", tc.tcp_syn},
        {"tcp_fin", tc.tcp_fin},
        {"tcp_rst", tc.tcp_rst}}},
      {"icmp",
       {{"packets", ic.packets},
        {"gbps", gbps(2)},
        {"icmp_echo_req", ic.icmp_echo_req},
        {"icmp_echo_reply", ic.icmp_echo_reply},
        {"icmp_echo_reply_sent", ic.icmp_echo_reply_sent}}},
      {"arp",
       {{"packets", a.packets},
        {"arp_requests", a.arp_requests},
        {"arp_replies", a.arp_replies},
        {"arp_replies_sent", a.arp_replies_sent},
        {"other", a.packets - a.arp}}}};
}

std::string dns_name_text(std::string_view labels) {
  if (labels.size() == 1 && labels[0] == '\0') return ".";
  std::string out;
  size_t pos = 0;
  while (pos < labels.size()) {
    const size_t len = static_cast<unsigned char>(labels[pos++]);
    if (len == 0) break;  // a root byte inside: nothing follows it in a name
    if (!out.empty()) out += '.';
    // A label cut short (never written so by the device) prints what is there.
    for (size_t i = pos; i < pos + len && i < labels.size(); ++i) {
      const auto c = static_cast<unsigned char>(labels[i]);
      switch (c) {
        case '.':
        case '\\':
        case '"':
        case '(':
        case ')':
        case ';':
        case '@':
        case '$':
          out += '\\';
          out += static_cast<char>(c);
          break;
        default:
          if (c > 0x20 && c < 0x7f) out += static_cast<char>(c);
          else out += fmt::format("\\{:03d}", c);
      }
    }
    pos += len;
  }
  return out;
}

std::vector<uint64_t> processed_per_queue(const pp_plan& plan, const port_stats& st,
                                          const std::vector<counters>& per_block, const counters& ctrl) {
  std::vector<uint64_t> processed_q(st.rxq.size(), 0);
  for (size_t q = 0; q < plan.rxqs.size() && q < st.rxq.size(); ++q) {
    const counters& c = plan.rxqs[q].block >= 0 ? per_block[static_cast<uint32_t>(plan.rxqs[q].block)] : ctrl;
    processed_q[q] = c.packets + c.filtered;
  }
  return processed_q;
}

void publish_metrics(metrics::server& mx, const metrics_input& in, const std::vector<counters>& per_block,
                     const counters* ctrl_c, const port_stats& st, const std::vector<uint64_t>& processed_q,
                     bool engine_failed, bool final) {
  metrics::text t;
  std::vector<metrics::rxq_label> labels;
  std::vector<uint64_t> filtered_q(st.rxq.size(), 0);
  for (size_t q = 0; q < in.plan->rxqs.size(); ++q) {
    const auto& rq = in.plan->rxqs[q];
    labels.push_back(
        {rq.cls, rq.block >= 0 ? std::to_string(in.plan->blocks[static_cast<uint32_t>(rq.block)].ctx) : "cpu"});
    if (q < filtered_q.size())
      filtered_q[q] = rq.block >= 0 ? per_block[static_cast<uint32_t>(rq.block)].filtered
                      : ctrl_c      ? ctrl_c->filtered
                                    : 0;
  }
  const std::string port = metrics::port_label(in.opt->port);
  metrics::add_port(t, port, st, labels, processed_q, filtered_q, engine_failed);
  metrics::add_gpu_info_family(t);
  for (uint32_t k = 0; k < in.infos.size(); ++k)
    metrics::add_gpu_info(t, std::to_string(k), in.infos[k].name, in.infos[k].bus_id, to_string(in.infos[k].executor));
  add_pp_metrics(t, port, per_block, *in.plan, ctrl_c);
  t.family("gnio_pp_reports_total", "counter", "Semaphore reports the host read from the pp kernels.")
      .sample({}, in.reports);
  mx.publish(t, final);
}

int final_report(const run_outcome& o, const console& con, json* j, std::vector<uint64_t>* processed_q) {
  const tally t = count_up(o);
  json failure = o.failure;
  int rc = o.rc;
  if (print_summary(o, t, con, &failure) != 0) rc = 1;
  *j = make_json(o, t);
  if (t.unaccounted != 0) {
    set_error(&failure,
              fmt::format("{} frame(s) unaccounted: received != processed + filtered + missed + unsteered + pending",
                          t.unaccounted),
              "unexpected", "accounting");
    rc = 1;
  }
  if (o.engine_err) {
    set_error(&failure, o.engine_err.what(), to_string(o.engine_err.code()), "engine");
    rc = 1;
  }
  j->update(failure);
  *processed_q = t.processed_q;
  return rc;
}

}  // namespace gnio::pp
