// SPDX-License-Identifier: Apache-2.0
// flow_count: the loop while the kernels run (run.hpp): table flips, IPFIX
// scans, progress lines and live metrics.
#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "run.hpp"

namespace flow_count::host {

using gnio::app::warn;

// --metrics (docs/monitoring.md): the port's families with what each
// queue's kernel took (its published consumer index while running, the
// kernel's own count at the end) and refused with --filter (at the end), and
// flow_count's totals at the end.
void publish_metrics(run_state& st, const gnio::port_stats& ps, const std::vector<uint64_t>& taken,
                     const std::vector<uint64_t>& filtered, bool engine_failed, const flow_count::totals* sum,
                     size_t num_flows, uint64_t flows_expired, uint64_t table_flips) {
  const auto& ctxs = st.ctxs;
  gnio::metrics::text t;
  std::vector<gnio::metrics::rxq_label> labels(st.o.queues, {"all", "0"});
  for (size_t k = 0; k < ctxs.size(); ++k)
    for (uint32_t q : ctxs[k]->queue_ids) labels[q].gpu = std::to_string(k);
  const std::string port = gnio::metrics::port_label(st.o.port_dev);
  gnio::metrics::add_port(t, port, ps, labels, taken, filtered, engine_failed);
  gnio::metrics::add_gpu_info_family(t);
  for (size_t k = 0; k < ctxs.size(); ++k) {
    const gnio::gpu_info info = ctxs[k]->dev->info();
    gnio::metrics::add_gpu_info(t, std::to_string(k), info.name, info.bus_id, gnio::to_string(info.executor));
  }
  if (sum) {  // the kernels keep these until they return
    const gnio::metrics::labels p{{"port", port}};
    t.family("gnio_flow_count_packets_total", "counter",
             "Packets counted in flows: those the kernels processed (the JSON's packets).")
        .sample(p, sum->packets);
    t.family("gnio_flow_count_bytes_total", "counter",
             "Bytes of the packets counted in flows, as long as the frames were on the wire (the JSON's bytes).")
        .sample(p, sum->bytes);
    t.family("gnio_flow_count_malformed_packets_total", "counter",
             "Packets the parser flagged as malformed (the JSON's malformed).")
        .sample(p, sum->malformed);
    t.family("gnio_flow_count_table_full_packets_total", "counter",
             "Packets that found the flow table full and were counted in no flow (the JSON's table_full).")
        .sample(p, sum->table_full);
    t.family("gnio_flow_count_flows", "gauge", "Flows in the table at the end of the run (the JSON's flows).")
        .sample(p, static_cast<uint64_t>(num_flows));
    t.family("gnio_flow_count_flows_expired_total", "counter",
             "Flows that ended during the run, on FIN or RST or when idle (the JSON's flows_expired).")
        .sample(p, flows_expired);
    t.family("gnio_flow_count_table_flips_total", "counter",
             "Times new packets were sent to the other flow table (the JSON's table_flips).")
        .sample(p, table_flips);
  }
  st.mx->publish(t, sum != nullptr);
}

namespace {

void publish_live(run_state& st) {
  const auto ps = st.s->stats();
  std::vector<uint64_t> processed;
  for (const auto& q : ps.rxq) processed.push_back(std::min(q.consumed, q.delivered));
  publish_metrics(st, ps, processed, {}, static_cast<bool>(st.s->get_port().engine_error()), nullptr, 0, 0, 0);
}

// The table before the last flip, which no block writes any more
// (flipper::poll): its flows go to the host table, where they may end,
// and it is zeroed for the next flip.
gnio::error take_back(const run_state& st, gpu_ctx& c, uint64_t ms) {
  const uint32_t table_cap = st.o.table_cap;
  const uint32_t old = static_cast<uint32_t>((c.flip.epoch + 1) & 1u);
  gnio::mem_block& tab = c.table[old];
  c.flows.resize(table_cap);
  if (auto e = c.dev->copy_to_host(c.flows.data(), tab, 0, tab.bytes); e) return e;
  // claimed(old) is final: every block published it with its ack.
  const uint64_t claimed = c.flip.claimed(old);
  c.expiry->merge(c.flows.data(), table_cap, ms);
  // Ends and IPFIX timeouts at the flip interval, not at every flip a
  // filling table makes (expire looks at every live flow).
  if (ms - c.expired_ms >= st.flip_ms) {
    c.expiry->expire(ms, false);
    c.expired_ms = ms;
    stream_finished(st, c);
  }
  for (size_t off = 0; off < tab.bytes; off += c.zeros.bytes)
    if (auto e = c.dev->copy_to_block(tab, off, c.zeros.host_ptr, std::min(c.zeros.bytes, tab.bytes - off)); e)
      return e;
  c.flip.base[old] = claimed;
  c.flip.pending = false;
  c.flip.stall_warned = false;
  return {};
}

// Flip each GPU's tables when the one in use is half full or flip_s has
// passed; take the table before back once every block acked.
void flip_tables(run_state& st, std::chrono::steady_clock::time_point now) {
  const auto flip_every = std::chrono::duration<double>(st.flip_s);
  const uint64_t ms = gnio::ipfix::now_ms();
  for (auto& cp : st.ctxs) {
    gpu_ctx& c = *cp;
    if (c.flip.pending) {
      if (c.flip.poll()) {
        if (auto e = take_back(st, c, ms); e) st.run_err = e;
      } else if (now - c.flip.at > std::chrono::seconds(5) && !c.flip.stall_warned) {
        c.flip.stall_warned = true;
        ++c.flip.stalls;
        warn(
            "flow_count: a kernel block has not moved to the new flow table for 5 s; flows are not given back "
            "until it does\n");
      }
      continue;
    }
    if (c.flip.active_slots() * 2 >= st.o.table_cap || now - c.flip.at >= flip_every) c.flip.flip();
  }
}

// Without expiry: a copy of each table while the kernels run, for the IPFIX timeouts.
void scan_tables(run_state& st, uint64_t ms) {
  const uint32_t table_cap = st.o.table_cap;
  for (size_t i = 0; i < st.ctxs.size() && !st.run_err; ++i) {
    auto& c = *st.ctxs[i];
    c.flows.resize(table_cap);
    if (auto e = c.dev->copy_to_host(c.flows.data(), c.table[0], 0, c.table[0].bytes); e) st.run_err = e;
    else st.ipfix.scan(static_cast<uint32_t>(i), c.flows.data(), table_cap, ms, false);
  }
  st.ipfix.scanned(ms);
}

// The progress line on stderr.
void progress_line(run_state& st, std::chrono::steady_clock::time_point now, double elapsed) {
  auto ps = st.s->stats();
  const double dt = std::chrono::duration<double>(now - st.last).count();
  // The kernels add to table_full and claimed after every batch (flow_count.hpp).
  uint64_t slots_used = 0, table_full = 0;
  for (auto& c : st.ctxs) {
    if (auto e = read_totals(*c); e && !st.run_err) st.run_err = e;
    slots_used += active_slots(st, *c, true);
    for (const auto& t : c->totals) table_full += t.table_full;
  }
  const double mpps = (ps.rx_delivered - st.last_delivered) / dt / 1e6;
  const uint64_t slots = uint64_t{st.o.table_cap} * st.ctxs.size();
  warn("flow_count: {:.1f} s: {} delivered ({:.2f} Mpps), {} missed, table {}/{} slots used, {} table_full\n", elapsed,
       ps.rx_delivered, mpps, ps.rx_missed, slots_used, slots, table_full);
  if (st.jsonl)
    st.jsonl->line("interval", {{"t", elapsed},
                                {"dt", dt},
                                {"delivered", ps.rx_delivered},
                                {"mpps", mpps},
                                {"missed", ps.rx_missed},
                                {"table_slots_used", slots_used},
                                {"table_slots", slots},
                                {"table_full", table_full}});
  st.last = now;
  st.last_delivered = ps.rx_delivered;
}

}  // namespace

// The totals as the kernels have them now (their counters only grow).
gnio::error read_totals(gpu_ctx& c) {
  c.totals.resize(c.queue_ids.size());
  if (c.tot.host_ptr == nullptr) return c.dev->copy_to_host(c.totals.data(), c.tot, 0, c.tot.bytes);
  // Relaxed, as the kernels' adds (flow_count.hpp): each value only needs to come eventually.
  auto* live = static_cast<flow_count::totals*>(c.tot.host_ptr);
  const auto load = [](uint64_t& v) {
    return gnio::device::sys_atomic_ref<uint64_t>(v).load(cuda::std::memory_order_relaxed);
  };
  for (size_t k = 0; k < c.totals.size(); ++k) {
    flow_count::totals& t = live[k];
    c.totals[k] = {
        load(t.packets), load(t.bytes), load(t.malformed), load(t.table_full), {load(t.claimed[0]), load(t.claimed[1])},
        load(t.filtered)};
  }
  return {};
}

// Slots holding flows in the table new flows go to: from the blocks' last
// acks while they run (a flipper), from the totals after (read_totals).
uint64_t active_slots(const run_state& st, const gpu_ctx& c, bool running) {
  if (!st.expiry) {
    uint64_t claimed = 0;
    for (const auto& x : c.totals) claimed += x.claimed[0];
    return claimed;
  }
  if (running) return c.flip.active_slots();
  const uint32_t t = static_cast<uint32_t>(c.flip.epoch & 1u);
  uint64_t claimed = 0;
  for (const auto& x : c.totals) claimed += x.claimed[t];
  return claimed - c.flip.base[t];
}

// Until every kernel returns, a kernel fails, or a stop signal or the
// duration ends the run.
void run_loop(run_state& st) {
  gnio::session& s = *st.s;
  auto& ctxs = st.ctxs;
  // IPFIX: one observation domain per GPU's flow table; templates first.
  // A paced send that sees a stop request gets --ipfix-flush-timeout more.
  gnio::stop_signals& sig = st.sig;
  st.ipfix.on_stop_request([&sig] { return sig.requested(); });
  st.ipfix.start(static_cast<uint32_t>(ctxs.size()), gnio::ipfix::now_ms());
  st.flip_ms = static_cast<uint64_t>(st.flip_s * 1000 * 0.9);
  for (auto& c : ctxs) {
    c->flip.at = st.t0;
    c->expired_ms = gnio::ipfix::now_ms();
  }
  st.last = st.t0;
  gnio::cli::write_watch write_watch("flow_count", sig.flag());
  size_t done = 0;
  while (done < ctxs.size() && !st.run_err) {
    done = 0;
    for (size_t k = 0; k < ctxs.size(); ++k) {
      // Table flips want a quick look: a half-full table at a high rate fills up fast.
      auto w = s.runner(k).wait(std::chrono::milliseconds(ctxs.size() > 1 || st.expiry ? 10 : 50));
      if (!w) ++done;
      else if (w.code() != gnio::status::time_out) st.run_err = w;
    }
    if (done == ctxs.size() || st.run_err) break;
    if (st.mx && st.mx->due()) publish_live(st);
    write_watch.check(s.get_port());
    const auto now = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(now - st.t0).count();
    // requested(): a stop signal, or the reader of --jsonl or --write went away.
    if (sig.requested() || (st.o.duration_s > 0 && elapsed >= st.o.duration_s)) {
      st.stopped_early = true;
      st.ipfix.stopping();
      if (auto e = s.stop(std::chrono::seconds(5)); e && !st.run_err) st.run_err = e;
      break;
    }
    if (st.expiry) flip_tables(st, now);
    else if (const uint64_t ms = gnio::ipfix::now_ms(); st.ipfix.due(ms)) scan_tables(st, ms);
    if (st.o.interval_s > 0 && std::chrono::duration<double>(now - st.last).count() >= st.o.interval_s)
      progress_line(st, now, elapsed);
  }
}

}  // namespace flow_count::host
