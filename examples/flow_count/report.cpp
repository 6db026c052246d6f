// SPDX-License-Identifier: Apache-2.0
// flow_count: everything after the loop (run.hpp): the flows merged from
// every table, the console lines, the JSON, the final metrics.
#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <ctime>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "run.hpp"

namespace flow_count::host {

using gnio::app::say;
using gnio::app::warn;

namespace {

std::string addr_text(const gnio::device::flow_key& k, const uint8_t* a) {
  char buf[INET6_ADDRSTRLEN] = "-";
  if (k.family == 4) inet_ntop(AF_INET, a, buf, sizeof buf);
  else if (k.family == 6) inet_ntop(AF_INET6, a, buf, sizeof buf);
  return buf;
}

// A capture time as RFC 3339 UTC with nanoseconds: "2004-05-13T10:17:07.311224000Z".
std::string time_text(uint64_t ns) {
  const time_t s = static_cast<time_t>(ns / 1'000'000'000u);
  std::tm tm{};
  gmtime_r(&s, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:09}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, ns % 1'000'000'000u);
}

// A capture time of day for the console table: "10:17:07.311224" (UTC), "-" for none.
std::string time_of_day(uint64_t ns) {
  if (ns == 0) return "-";
  const std::string t = time_text(ns);
  return t.substr(11, 15);
}

std::string proto_text(uint8_t p, uint8_t family) {
  if (family == 0) return "non-ip";
  switch (p) {
    case 6: return "tcp";
    case 17: return "udp";
    case 1: return "icmp";
    case 58: return "icmpv6";
    default: return std::to_string(p);
  }
}

// What the run ended with, put together step by step.
struct results {
  unsigned signals_at_stop = 0;
  double seconds = 0;
  gnio::launch_stats ls;
  gnio::port_stats ps;
  gnio::error engine_err;
  std::vector<flow_count::flow_row> flows;
  std::unordered_map<std::string, size_t> index;  // each live flow in `flows` by its key's bytes
  std::vector<flow_count::totals> totals;         // per queue
  flow_count::totals sum{};
  uint64_t slots_used = 0, slots_claimed = 0, flows_expired = 0, ended_end_of_flow = 0, ended_idle = 0, flips = 0,
           flip_stalls = 0;
  std::vector<const flow_count::flow_row*> used;  // into flows, most packets first
  size_t tcp_conversations = 0, udp_conversations = 0;
  gnio::accounting acc;
  uint64_t truncated = 0;
};

}  // namespace

json flow_row_json(const flow_count::flow_row& f) {
  json row = {{"proto", proto_text(f.e.key.proto, f.e.key.family)},
              {"family", f.e.key.family},
              {"src", addr_text(f.e.key, f.e.key.src)},
              {"dst", addr_text(f.e.key, f.e.key.dst)},
              {"src_port", f.e.key.src_port},
              {"dst_port", f.e.key.dst_port},
              {"packets", f.e.packets},
              {"bytes", f.e.bytes},
              {"ip_bytes", f.e.ip_bytes}};
  if (f.e.key.proto == 6 && f.e.key.family) row["tcp_flags"] = f.e.meta & gnio::device::flow_meta_tcp_flags;
  if (f.e.meta & gnio::device::flow_meta_tagged)
    row["vlan"] = (f.e.meta >> gnio::device::flow_meta_vlan_shift) & gnio::device::flow_meta_vlan_mask;
  if (f.end != flow_count::flow_end::live) row["expired"] = flow_count::to_string(f.end);
  if (f.e.key.tunnel != gnio::device::encap_kind::none) {
    row["tunnel"] = gnio::device::to_string(f.e.key.tunnel);
    row["tunnel_id"] = f.e.key.tunnel_id;
  }
  // Capture times, when the port gave its packets one.
  if (f.e.first_ns != 0) {
    row["first_seen_ns"] = f.e.first_ns;
    row["last_seen_ns"] = f.e.last_ns;
    row["first_seen"] = time_text(f.e.first_ns);
    row["last_seen"] = time_text(f.e.last_ns);
  }
  return row;
}

void stream_finished(const run_state& st, gpu_ctx& c) {
  if (!st.jsonl || !c.expiry) return;
  const auto& done = c.expiry->finished();
  for (; c.streamed < done.size(); ++c.streamed) st.jsonl->line("flow", flow_row_json(done[c.streamed]));
}

namespace {

// The time and the launches, into the JSON.
void end_run(run_state& st, results& r) {
  // A stop signal from here on came while the results were being put
  // together: it cuts the flow rows short (the one that stopped the run, if
  // any, came before).
  r.signals_at_stop = st.sig.count();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - st.t0).count();
  st.j["seconds"] = r.seconds;
  st.j["stopped_early"] = st.stopped_early;
  for (size_t k = 0; k < st.ctxs.size(); ++k) {
    const auto one = st.s->runner(k).stats();
    r.ls.launches += one.launches;
    r.ls.packets += one.packets;
    r.ls.busy_ns += one.busy_ns;
    r.ls.idle_ns += one.idle_ns;
  }
  st.j["launches"] = r.ls.launches;
}

// Merge the per-GPU tables: a flow's packets may have reached several GPUs
// only if its queue changed, which RSS never does; summing keeps it exact
// anyway. Flows that ended during the run (expiry.hpp) are rows of their
// own: a key that came back after its flow ended has a row for each.
void add_live(const run_state& st, results& r, const flow_count::flow_row& row) {
  if (st.ctxs.size() == 1) {  // one table holds each key once: nothing to merge
    r.flows.push_back(row);
    return;
  }
  // By the key's bytes (flow_key has no padding and reserved is always 0), so
  // merging is linear in the table size rather than quadratic.
  const auto& k = row.e.key;
  auto [it, fresh] = r.index.try_emplace(std::string(reinterpret_cast<const char*>(&k), sizeof k), r.flows.size());
  if (fresh) {
    r.flows.push_back(row);
  } else {
    r.flows[it->second].e.packets += row.e.packets;
    r.flows[it->second].e.bytes += row.e.bytes;
    r.flows[it->second].e.meta |= row.e.meta & gnio::device::flow_meta_tcp_flags;
    flow_count::merge_times(r.flows[it->second].e, row.e);
  }
}

// Every context's totals and tables, read back now that the kernels returned.
int collect_flows(run_state& st, results& r) {
  const uint32_t table_cap = st.o.table_cap;
  r.totals.resize(st.o.queues);
  const uint64_t end_ms = gnio::ipfix::now_ms();
  for (size_t i = 0; i < st.ctxs.size(); ++i) {
    gpu_ctx& c = *st.ctxs[i];
    if (auto e = read_totals(c); e) return st.rep.fail(e, "read totals");
    for (size_t k = 0; k < c.queue_ids.size(); ++k) r.totals[c.queue_ids[k]] = c.totals[k];
    r.slots_used += active_slots(st, c, false);
    for (const auto& t : c.totals) r.slots_claimed += t.claimed[0] + t.claimed[1];
    c.flows.resize(table_cap);
    if (!st.expiry) {
      if (auto e = c.dev->copy_to_host(c.flows.data(), c.table[0], 0, c.table[0].bytes); e)
        return st.rep.fail(e, "read flow table");
      for (const auto& f : c.flows)
        if (f.state == gnio::device::flow_slot_used) add_live(st, r, flow_count::flow_row{f});
      // Every flow's last record: the table is final now.
      st.ipfix.scan(static_cast<uint32_t>(i), c.flows.data(), table_cap, end_ms, true);
      continue;
    }
    // Every block has returned, so both tables are final: the one in use,
    // and the one before a flip not taken back yet (zeroed otherwise). Every
    // open record is sent (forced_end); the flows stay live rows.
    for (const auto& tab : c.table) {
      if (auto e = c.dev->copy_to_host(c.flows.data(), tab, 0, tab.bytes); e) return st.rep.fail(e, "read flow table");
      c.expiry->merge(c.flows.data(), table_cap, end_ms);
    }
    c.expiry->expire(end_ms, true);
    stream_finished(st, c);
    r.flows_expired += c.expiry->finished().size();
    r.ended_end_of_flow += c.expiry->ended_end_of_flow();
    r.ended_idle += c.expiry->ended_idle();
    r.flips += c.flip.flips;
    r.flip_stalls += c.flip.stalls;
    for (const auto& f : c.expiry->finished()) {
      r.flows.push_back(f);
      r.flows.back().streamed = st.jsonl != nullptr;
    }
    c.expiry->for_each_live([&](const flow_count::flow_row& f) { add_live(st, r, f); });
  }
  for (const auto& t : r.totals) {
    r.sum.packets += t.packets;
    r.sum.bytes += t.bytes;
    r.sum.malformed += t.malformed;
    r.sum.table_full += t.table_full;
    r.sum.filtered += t.filtered;
  }
  for (const auto& f : r.flows) r.used.push_back(&f);
  std::sort(r.used.begin(), r.used.end(), [](auto* a, auto* b) { return a->e.packets > b->e.packets; });
  return 0;
}

// Conversations: both directions of a 5-tuple together, as tshark's streams
// count them. Each is its two (address, port) ends in a fixed order and the
// family; sorted and counted once each (a million flows take 0.1 s).
void count_conversations(results& r) {
  using conv_end = std::array<uint8_t, 18>;
  using conv_key = std::array<uint8_t, 2 * sizeof(conv_end) + 1>;
  std::vector<conv_key> tcp_conv, udp_conv;
  for (const auto* f : r.used) {
    if (!f->e.key.family || (f->e.key.proto != 6 && f->e.key.proto != 17)) continue;
    conv_end a{}, b{};
    std::memcpy(a.data(), f->e.key.src, 16);
    std::memcpy(b.data(), f->e.key.dst, 16);
    a[16] = static_cast<uint8_t>(f->e.key.src_port >> 8), a[17] = static_cast<uint8_t>(f->e.key.src_port);
    b[16] = static_cast<uint8_t>(f->e.key.dst_port >> 8), b[17] = static_cast<uint8_t>(f->e.key.dst_port);
    if (b < a) std::swap(a, b);
    conv_key k{};
    std::copy(a.begin(), a.end(), k.begin());
    std::copy(b.begin(), b.end(), k.begin() + a.size());
    k.back() = f->e.key.family;
    (f->e.key.proto == 6 ? tcp_conv : udp_conv).push_back(k);
  }
  for (auto* conv : {&tcp_conv, &udp_conv}) {
    std::sort(conv->begin(), conv->end());
    conv->erase(std::unique(conv->begin(), conv->end()), conv->end());
  }
  r.tcp_conversations = tcp_conv.size();
  r.udp_conversations = udp_conv.size();
}

// The summary lines and the top flows.
void print_console(run_state& st, results& r) {
  const options& o = st.o;
  const auto& sum = r.sum;
  const auto& ps = r.ps;
  say("flow_count: {} packets, {} bytes, {} flows in {:.3f} s ({:.3f} Mpps)\n", sum.packets, sum.bytes, r.used.size(),
      r.seconds, r.seconds > 0 ? sum.packets / r.seconds / 1e6 : 0.0);
  say("{}", st.rep.accounting_line(r.acc, o.filter.empty() ? std::nullopt : std::optional<uint64_t>(sum.filtered)));
  if (st.per_burst)
    say("flow_count: launched {}: {} launches, {:.1f} packets per launch, {:.2f} us per launch\n", o.launch.mode,
        r.ls.launches, r.ls.launches ? double(sum.packets) / r.ls.launches : 0.0, gnio::cli::launch_us_mean(r.ls));
  say("flow_count: engine {:.1f} ns/frame over {} lane(s)\n", gnio::engine_ns_per_frame(ps), ps.lanes.size());
  if (ps.rx_errors) say("flow_count: the source reported {} read error(s); see the warning above\n", ps.rx_errors);
  if (ps.rx_dropped)
    say("flow_count: the source dropped {} frame(s) before the engine saw them (a kernel or device ring was full; not "
        "in received)\n",
        ps.rx_dropped);
  for (const auto& q : ps.rxq) r.truncated += q.truncated;
  if (const std::string w = gnio::cli::truncation_warning("flow_count", r.truncated, o.rx_slot); !w.empty())
    warn("{}", w);
  if (sum.malformed) say("flow_count: {} malformed packets (counted, flowed as far as parsed)\n", sum.malformed);
  say("flow_count: table {}/{} slots used ({} per GPU), {} table_full\n", r.slots_used,
      uint64_t{o.table_cap} * st.ctxs.size(), o.table_cap, sum.table_full);
  if (st.expiry)
    say("flow_count: {} flows ended during the run ({} FIN/RST, {} idle {} s), {} table flips\n", r.flows_expired,
        r.ended_end_of_flow, r.ended_idle, o.flow_idle_s, r.flips);
  if (sum.table_full)
    say("flow_count: {} packets found no slot for their flow within {} slots of its hash (counted in packets, not in "
        "a flow; raise --table)\n",
        sum.table_full, gnio::device::flow_table_max_probe);
  if (st.ipfix.enabled()) say("flow_count: {}\n", st.ipfix.summary());
  if (const std::string w = st.ipfix.loss_warning(); !w.empty()) warn("flow_count: {}\n", w);
  if (sum.packets == 0 && !st.stopped_early) say("flow_count: the port delivered no packets (empty capture?)\n");
  if (r.used.empty()) return;
  say("{:>4}  {:<6} {:>39} {:>5}   {:>39} {:>5} {:>12} {:>14} {:>15} {:>15}\n", "#", "proto", "source", "port",
      "destination", "port", "packets", "bytes", "first seen UTC", "last seen UTC");
  for (uint32_t i = 0; i < std::min<size_t>(o.top, r.used.size()); ++i) {
    const auto& f = *r.used[i];
    const std::string tunnel = f.e.key.tunnel == gnio::device::encap_kind::none
                                   ? std::string()
                                   : fmt::format("  {} {}", gnio::device::to_string(f.e.key.tunnel), f.e.key.tunnel_id);
    say("{:>4}  {:<6} {:>39} {:>5} > {:>39} {:>5} {:>12} {:>14} {:>15} {:>15}{}\n", i + 1,
        proto_text(f.e.key.proto, f.e.key.family), addr_text(f.e.key, f.e.key.src), f.e.key.src_port,
        addr_text(f.e.key, f.e.key.dst), f.e.key.dst_port, f.e.packets, f.e.bytes, time_of_day(f.e.first_ns),
        time_of_day(f.e.last_ns), tunnel);
  }
}

// The results into the JSON; returns per_queue, whose processed counts the metrics take.
json fill_json(run_state& st, const results& r) {
  json& j = st.j;
  const auto& sum = r.sum;
  const auto& ps = r.ps;
  const double seconds = r.seconds;
  json per_gpu = json::array();
  for (const auto& c : st.ctxs) {
    uint64_t pk = 0;
    for (const auto& t : c->totals) pk += t.packets;
    per_gpu.push_back({{"executor", std::string(gnio::to_string(c->dev->info().executor))},
                       {"device", c->dev->info().name},
                       {"bus_id", c->dev->info().bus_id},
                       {"queues", c->queue_ids},
                       {"packets", pk},
                       {"mpps", seconds > 0 ? pk / seconds / 1e6 : 0.0}});
  }
  j["per_gpu"] = per_gpu;
  j["packets"] = sum.packets;
  j["bytes"] = sum.bytes;
  j["flows"] = r.used.size();
  j["tcp_conversations"] = r.tcp_conversations;
  j["udp_conversations"] = r.udp_conversations;
  // received, missed, unsteered, pending, unaccounted: rep.add_accounting, in finish.
  j["source_errors"] = ps.rx_errors;
  j["source_dropped"] = ps.rx_dropped;
  j["malformed"] = sum.malformed;
  j["table_full"] = sum.table_full;
  j["table_slots_used"] = r.slots_used;
  j["table_slots_claimed"] = r.slots_claimed;
  j["flow_idle_timeout_s"] = st.o.flow_idle_s;
  j["flow_tables"] = st.tables;
  j["table_flips"] = r.flips;
  j["table_flip_stalls"] = r.flip_stalls;
  j["flows_expired"] = r.flows_expired;
  j["flows_expired_end_of_flow"] = r.ended_end_of_flow;
  j["flows_expired_idle"] = r.ended_idle;
  j["table_slots"] = uint64_t{st.o.table_cap} * st.ctxs.size();
  j["truncated"] = r.truncated;
  j["rx_slot"] = st.o.rx_slot;
  j["mpps"] = seconds > 0 ? sum.packets / seconds / 1e6 : 0.0;
  gnio::cli::add_launch_json(j, r.ls, sum.packets, seconds, st.per_burst);
  j["engine_error"] = r.engine_err ? r.engine_err.what() : "";
  j["engine"] = gnio::app::engine_json(ps);
  json qs = json::array();
  for (uint32_t i = 0; i < ps.rxq.size(); ++i) {
    const auto& q = ps.rxq[i];
    qs.push_back({{"queue", i},
                  {"offered", q.offered},
                  {"delivered", q.delivered},
                  {"missed", q.missed},
                  {"bytes", q.bytes},
                  {"truncated", q.truncated},
                  {"processed", i < r.totals.size() ? r.totals[i].packets : 0},
                  {"filtered", i < r.totals.size() ? r.totals[i].filtered : 0},
                  {"pending", i < r.acc.queues.size() ? r.acc.queues[i].pending : 0}});
  }
  j["per_queue"] = qs;
  return qs;
}

// One row per flow, most packets first, serialized here one at a time
// (one line each): with a million flows they are most of a 200 MB
// document. A stop signal that comes meanwhile ends the list where it is,
// and the JSON says so, rather than holding the program for seconds.
void write_flow_rows(run_state& st, const results& r, std::string& out) {
  const options& o = st.o;
  json& j = st.j;
  uint64_t written = 0;
  bool signalled = false;
  out = "[";
  for (const auto* f : r.used) {
    if (written == o.max_flow_rows) break;
    if (written % 4096 == 0 && st.sig.count() != r.signals_at_stop) {
      signalled = true;
      break;
    }
    const json row = flow_row_json(*f);
    out += written == 0 ? "\n    " : ",\n    ";
    out += row.dump(-1, ' ', false, json::error_handler_t::replace);
    ++written;
  }
  out += written == 0 ? "]" : "\n  ]";
  j["flow_rows_written"] = written;
  j["flows_truncated"] = written < r.used.size();
  if (written < r.used.size()) {
    j["flows_truncated_by"] = signalled ? "signal" : "max_flow_rows";
    warn("flow_count: the JSON lists {} of {} flow rows ({}); flows_truncated is set\n", written, r.used.size(),
         signalled ? "a stop signal came while they were written" : fmt::format("--max-flow-rows {}", o.max_flow_rows));
  }
}

}  // namespace

int finish(run_state& st, std::string* flow_rows) {
  gnio::app::run_report& rep = st.rep;
  gnio::session& s = *st.s;
  results r;
  end_run(st, r);
  if (st.run_err) {
    // Fail closed: nothing is freed while a kernel may run. What the port
    // counted so far goes into the JSON.
    const auto ps = s.stats();
    st.j["received"] = ps.rx_frames;
    st.j["missed"] = ps.rx_missed;
    st.j["source_errors"] = ps.rx_errors;
    // A kernel still running keeps the session (and all it may touch) alive.
    return rep.fail(st.run_err, "kernel");
  }
  // A port that fails to stop (a TX capture that could not be written) has
  // still counted everything: the error is reported and the results kept.
  int rc = 0;
  if (auto e = s.stop_port(); e) rc = rep.fail(e, "stop");
  r.ps = s.stats();
  r.engine_err = s.get_port().engine_error();
  if (const int e = collect_flows(st, r); e != 0) return e;
  count_conversations(r);
  // The identity, per queue and in total, from what each queue's block processed.
  std::vector<uint64_t> processed_q(st.o.queues);
  // A queue's block took its packets and the ones --filter refused.
  for (uint32_t q = 0; q < st.o.queues; ++q) processed_q[q] = r.totals[q].packets + r.totals[q].filtered;
  r.acc = s.account(processed_q);
  print_console(st, r);
  const json qs = fill_json(st, r);
  if (flow_rows) write_flow_rows(st, r, *flow_rows);
  // The flows that were live at the end of the run end with it: their
  // --jsonl flow lines, most packets first, before the final line.
  if (st.jsonl)
    for (const auto* f : r.used)
      if (!f->streamed) st.jsonl->line("flow", flow_row_json(*f));
  if (st.mx) {
    std::vector<uint64_t> filtered_q(st.o.queues);
    for (uint32_t q = 0; q < st.o.queues; ++q) filtered_q[q] = r.totals[q].filtered;
    publish_metrics(st, r.ps, processed_q, filtered_q, static_cast<bool>(r.engine_err), &r.sum, r.used.size(),
                    r.flows_expired, r.flips);
  }
  st.ipfix.add_json(st.j);
  if (!rep.add_accounting(r.acc, "packet", r.sum.filtered)) rc = 1;
  st.j["filter_pushed_down"] = st.filter_pushed_down;
  if (!st.o.write.path.empty()) {
    const uint64_t written = s.get_port().rx_pcap_frames();
    say("flow_count: wrote {} frame(s) to {}\n", written, gnio::printable(st.o.write.path));
    st.j["written"] = written;
    if (const int e = s.get_port().rx_pcap_errno(); e != 0) st.j["write_error"] = std::strerror(e);
  }
  // The session tears down the lifecycle in reverse when it goes.
  if (r.engine_err) {
    warn("flow_count: the port's engine failed: {}\n", r.engine_err.what());
    rep.set_error(r.engine_err.what(), gnio::to_string(r.engine_err.code()), "engine");
    rc = 1;
  }
  return rc;
}

}  // namespace flow_count::host
