// SPDX-License-Identifier: Apache-2.0
// flow_count: the classic first gnio program. One GPU (or the host executor),
// GPU-visible RX queues on any port, a persistent kernel counting packets and
// bytes per 5-tuple flow.
//
//   flow_count --port pcap:file=tests/data/http.pcap
//   flow_count --port gen:size=64,flows=1024,count=10000000 --exec cuda --queues 4 --json out.json
#include <arpa/inet.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <gnio/gnio.hpp>
#include <gnio/atomic_file.hpp>
#include <gnio/console.hpp>
#include <gnio/signals.hpp>

#include "cli.hpp"
#include "launch_report.hpp"
#include "metrics.hpp"
#include "expiry.hpp"
#include "flow_count.hpp"
#include "ipfix.hpp"
#include "app.hpp"

namespace flow_count {
gnio::error launch(gnio::kernel_runner& runner, const gnio::launch_dims& dims, const body& b);
}

namespace {


std::string addr_text(const gnio::device::flow_key& k, const uint8_t* a) {
  char buf[INET6_ADDRSTRLEN] = "-";
  if (k.family == 4) inet_ntop(AF_INET, a, buf, sizeof buf);
  else if (k.family == 6) inet_ntop(AF_INET6, a, buf, sizeof buf);
  return buf;
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

using json = nlohmann::json;

using gnio::app::say;
using gnio::app::warn;

// The host's side of the table flip (flow_count.hpp's flip_ctl): one per
// GPU context. flip() sends new packets to the other table; poll() says when
// no block writes the table before the flip any more.
struct flipper {
  flow_count::flip_ctl* ctl = nullptr;  // the CPU's address of the cpu_gpu block
  uint32_t blocks = 0;
  uint64_t epoch = 0;    // new packets go to table[epoch & 1]
  bool pending = false;  // flipped; the table before is not taken back yet
  std::chrono::steady_clock::time_point at{};  // the last flip, or the start
  uint64_t base[2] = {0, 0};  // claimed[t] summed over the blocks when table t was last zeroed
  uint64_t flips = 0, stalls = 0;
  bool stall_warned = false;

  void flip() {
    // Pairs with the blocks' seq_cst loads of epoch (announce_epoch): a block
    // that reads an older epoch after this has acked it first, and poll()
    // sees that ack.
    gnio::device::sys_atomic_ref<uint64_t>(ctl->epoch).store(++epoch, cuda::std::memory_order_seq_cst);
    pending = true;
    ++flips;
    at = std::chrono::steady_clock::now();
  }
  // The slots claimed in table t, as the blocks last published them
  // (publish_claims, before each ack). Relaxed: the fill check only needs a
  // recent value; for the table before the flip the count is final once
  // poll() is true, whose seq_cst loads of the acks order these after them.
  [[nodiscard]] uint64_t claimed(uint32_t t) const {
    uint64_t n = 0;
    for (uint32_t b = 0; b < blocks; ++b)
      n += gnio::device::sys_atomic_ref<uint64_t>(ctl->claimed[b][t]).load(cuda::std::memory_order_relaxed);
    return n;
  }
  // Slots holding flows in the table new flows go to.
  [[nodiscard]] uint64_t active_slots() const {
    const uint32_t t = static_cast<uint32_t>(epoch & 1u);
    return claimed(t) - base[t];
  }
  [[nodiscard]] bool poll() const {
    for (uint32_t b = 0; b < blocks; ++b) {
      // Pairs with the blocks' seq_cst stores of ack (announce_epoch,
      // leave_epoch): their writes to the old table happen before this sees
      // the new epoch or ack_idle.
      const uint64_t a =
          gnio::device::sys_atomic_ref<uint64_t>(ctl->ack[b]).load(cuda::std::memory_order_seq_cst);
      if (a != flow_count::ack_idle && a < epoch) return false;
    }
    return true;
  }
};

struct options {
  std::string port_dev, exec = "auto", gpu_sel, json_path, pkt_mem_text = "auto", poll = "adaptive";
  uint32_t queues = 1, ring = 4096, batch = 1024, threads = 512, table_cap = 1u << 16, top = 10;
  uint64_t max_flow_rows = UINT64_MAX;  // flow rows in the JSON, most packets first
  uint32_t rx_slot = gnio::cli::default_rx_slot;
  double duration_s = 0, interval_s = 1.0;
  // A flow with no packet for this long is given back (expiry.hpp); 0: the
  // table keeps every flow for the whole run.
  double flow_idle_s = 15;
  gnio::cli::launch_options launch;
  gnio::metrics::options metrics;
  gnio::ipfix::options ipfix;
  std::string command;
};

// The run itself, from opening the GPUs to the lifecycle in reverse. Fills j
// with everything known (the error too, when a step fails) and returns the
// exit status. flow_rows (null without --json) receives the JSON array of
// per-flow rows as text, kept apart from j: run_report::write_json adds them last.
int run(const options& o, gnio::stop_signals& sig, gnio::app::run_report& rep, gnio::metrics::server* mx,
        gnio::ipfix::session& ipfix, std::string* flow_rows) {
  json& j = rep.j();
  const std::string& port_dev = o.port_dev;
  const uint32_t queues = o.queues, ring = o.ring, batch = o.batch, threads = o.threads, table_cap = o.table_cap,
                 top = o.top;
  const double duration_s = o.duration_s, interval_s = o.interval_s;
  const std::string gpu_sel = o.gpu_sel.empty() ? (o.exec == "cuda" ? "0" : o.exec) : o.gpu_sel;
  gnio::mem_type pkt_mem = gnio::mem_type::automatic;
  (void)gnio::parse_mem_type(o.pkt_mem_text, pkt_mem);
  j["command"] = o.command;
  j["port"] = port_dev;
  j["queues"] = queues;
  j["pkt_mem"] = o.pkt_mem_text;
  gnio::launch_dims launch_dims;
  gnio::cli::apply(o.launch, launch_dims);
  const bool per_burst = launch_dims.mode != gnio::device::launch_mode::persistent;
  j["launch"] = o.launch.mode;
  if (per_burst) {
    j["burst"] = o.launch.burst;
    j["burst_timeout_us"] = o.launch.burst_timeout_us;
  }
  j["poll"] = o.poll;
  if (duration_s > 0) (void)sig.arm_deadline(duration_s);

  // One context per selected GPU ("0,1", bus ids, or "host,host" for two host executors).
  struct gpu_ctx {
    gnio::gpu g;                // until the session owns it
    gnio::gpu* dev = nullptr;   // the session's, from then on
    std::vector<uint32_t> queue_ids;
    flow_count::body b{};
    gnio::mem_block table[2], tot, ctl, zeros;  // table[1], ctl and zeros only with expiry
    std::vector<flow_count::flow_entry> flows;
    std::vector<flow_count::totals> totals;
    flipper flip;
    std::optional<flow_count::flow_expiry> expiry;
    uint64_t expired_ms = 0;  // the last flow_expiry::expire (ipfix::now_ms)
  };
  // Expiry (expiry.hpp): two tables per GPU, flipped every flip_s or when the
  // one in use is half full; the host table keeps the flows between. Each
  // flip copies a table to the host: every half idle timeout, or every
  // --ipfix-scan-interval when exporting (the records' time resolution).
  const bool expiry = o.flow_idle_s > 0;
  const uint32_t tables = expiry ? 2 : 1;
  const uint64_t idle_ms = static_cast<uint64_t>(o.flow_idle_s * 1000);
  const double flip_s = ipfix.enabled() ? std::min(o.flow_idle_s / 2, o.ipfix.scan_interval_s) : o.flow_idle_s / 2;
  std::vector<std::unique_ptr<gpu_ctx>> ctxs;
  auto gpus = gnio::gpu::open_list(gpu_sel);
  if (!gpus) return rep.fail(gpus.err(), "gpu");
  for (auto& g : *gpus) {
    auto c = std::make_unique<gpu_ctx>();
    c->g = std::move(g);
    ctxs.push_back(std::move(c));
  }
  j["executor"] = std::string(gnio::to_string(ctxs.front()->g.info().executor));
  j["device"] = ctxs.front()->g.info().name;

  auto p = gnio::port::open(ctxs.front()->g, port_dev);
  if (!p && sig.requested()) return rep.stopped_while(sig, "opening the port", p.err());
  if (!p) return rep.fail(p.err(), "port");
  // A GPU that fails the capability check for this port is reported and left out.
  for (auto it = ctxs.begin(); it != ctxs.end();) {
    const auto verdict = gnio::check_receive_kernels(p->caps(), port_dev.substr(0, port_dev.find(':')),
                                                     (*it)->g.info(), gnio::built_with_cuda());
    const std::string why = verdict ? verdict.message() : "";
    if (!why.empty()) {
      warn("flow_count: leaving out {}: {}\n", (*it)->g.info().name, why);
      if (it == ctxs.begin()) return rep.fail(gnio::error(gnio::status::not_supported, why), "gpu");
      it = ctxs.erase(it);
    } else {
      ++it;
    }
  }
  j["executor"] = std::string(gnio::to_string(ctxs.front()->g.info().executor));
  j["device"] = ctxs.front()->g.info().name;
  for (const auto& c : ctxs) {
    const auto& info = c->g.info();
    say("flow_count: executor {} on {}{}\n", gnio::to_string(info.executor), info.name,
        info.bus_id.empty() ? "" : " (" + info.bus_id + ")");
  }
  if (queues < ctxs.size()) {
    const std::string msg =
        fmt::format("--queues {} is fewer than the {} GPUs; give each GPU at least one queue", queues, ctxs.size());
    warn("flow_count: {}\n", msg);
    rep.set_error(msg, "invalid_value", "options");
    return 2;
  }
  // Memory is counted before it is taken (F19): every ring slot is touched,
  // and so is the flow table on the host executor, so a size that cannot be
  // backed is refused here rather than ending in the OOM killer.
  {
    uint64_t host_tables = 0;
    for (const auto& c : ctxs)
      if (c->g.info().executor == gnio::executor_kind::host) ++host_tables;
    const uint64_t table_bytes = host_tables * tables * sizeof(flow_count::flow_entry) * table_cap;
    const uint64_t ring_bytes = uint64_t{queues} * gnio::cli::rx_ring_bytes(ring, o.rx_slot);
    const gnio::cli::memory_room room = gnio::cli::available_memory();
    std::string why = gnio::cli::memory_refusal(
        fmt::format("--table {} ({} table(s) of {} slots of {} bytes on {} host executor(s))", table_cap, tables,
                    table_cap, sizeof(flow_count::flow_entry), host_tables),
        table_bytes, room);
    if (why.empty())
      why = gnio::cli::memory_refusal(fmt::format("--ring {} on {} queue(s)", ring, queues), ring_bytes, room);
    if (why.empty())
      why = gnio::cli::memory_refusal(fmt::format("--ring {} on {} queue(s) with --table {}", ring, queues, table_cap),
                                      ring_bytes + table_bytes, room);
    if (!why.empty()) {
      warn("flow_count: {}\n", why);
      rep.set_error(why, "no_memory", "options");
      return 2;
    }
  }
  // Queue i belongs to GPU i mod N: the port's RSS over all queues spreads flows over the GPUs.
  for (uint32_t i = 0; i < queues; ++i) {
    auto& c = *ctxs[i % ctxs.size()];
    gnio::rxq_config rc;
    rc.num_descs = ring;
    rc.stride = o.rx_slot;
    rc.owner = &c.g;
    rc.pkt_mem = pkt_mem;
    auto id = p->create_rxq(rc);
    if (!id) return rep.fail(id.err(), "create_rxq");
    auto v = p->rxq(*id);
    if (!v) return rep.fail(v.err(), "rxq");
    c.b.q[c.queue_ids.size()] = *v;
    c.queue_ids.push_back(*id);
  }
  // The session owns the port, the contexts and all the kernels use from
  // here on: it tears them down in reverse, or keeps them whole when a
  // kernel does not stop (gnio/session.hpp).
  std::vector<gnio::gpu> owned;
  for (auto& c : ctxs) owned.push_back(std::move(c->g));
  auto made = gnio::session::create(std::move(owned), std::move(*p));
  if (!made) return rep.fail(made.err(), "session");
  gnio::session& s = *made;
  for (size_t k = 0; k < ctxs.size(); ++k) {
    auto& c = ctxs[k];
    c->dev = &s.gpu_at(k);
    c->b.num_queues = static_cast<uint32_t>(c->queue_ids.size());
    c->b.capacity = table_cap;
    // Launched per burst, a launch takes at most a burst per queue.
    c->b.batch = per_burst ? std::min(batch, o.launch.burst) : batch;
    for (uint32_t t = 0; t < tables; ++t) {
      auto table = s.alloc_bytes(k, sizeof(flow_count::flow_entry) * table_cap, gnio::mem_type::gpu);  // zeroed
      if (!table) return rep.fail(table.err(), "flow table");
      c->table[t] = *table;
      c->b.table[t] = static_cast<flow_count::flow_entry*>(c->table[t].exec_ptr);
    }
    // On the host executor the totals are memory the host maps, so that the
    // live reads below are atomic loads rather than a copy racing the
    // kernels' adds; a GPU's stay in GPU memory, next to the kernel.
    const gnio::mem_type tot_mem =
        c->dev->info().executor == gnio::executor_kind::host ? gnio::mem_type::cpu_gpu : gnio::mem_type::gpu;
    auto tot = s.alloc_bytes(k, sizeof(flow_count::totals) * c->queue_ids.size(), tot_mem);
    if (!tot) return rep.fail(tot.err(), "totals");
    c->tot = *tot;
    c->b.tot = static_cast<flow_count::totals*>(c->tot.exec_ptr);
    if (expiry) {
      // Both sides reach it: the host writes the epoch, the blocks their acks.
      auto ctl = s.alloc_bytes(k, sizeof(flow_count::flip_ctl), gnio::mem_type::cpu_gpu);
      if (!ctl) return rep.fail(ctl.err(), "flow table flip");
      c->ctl = *ctl;
      flow_count::flip_ctl init{};
      for (auto& a : init.ack) a = flow_count::ack_idle;
      // Before the launch, which orders it before the kernel's reads.
      if (auto e = c->dev->copy_to_block(c->ctl, 0, &init, sizeof init); e) return rep.fail(e, "flow table flip");
      c->b.flip = static_cast<flow_count::flip_ctl*>(c->ctl.exec_ptr);
      c->flip.ctl = static_cast<flow_count::flip_ctl*>(c->ctl.host_ptr);
      c->flip.blocks = c->b.num_queues;
      c->expiry.emplace(idle_ms, &ipfix, static_cast<uint32_t>(k));
      // Zeros copied over a table given back: pinned memory, so the copy has
      // finished when copy_to_block returns, before the table is used again.
      auto z = s.alloc_bytes(k, std::min<size_t>(sizeof(flow_count::flow_entry) * table_cap, 4u << 20),
                          gnio::mem_type::cpu_gpu);
      if (!z) return rep.fail(z.err(), "flow table flip");
      c->zeros = *z;
    }
  }

  if (auto e = s.start(); e) return rep.fail(e, "start");
  const auto t0 = std::chrono::steady_clock::now();
  if (duration_s > 0) (void)sig.arm_deadline(duration_s);  // the run itself gets the whole duration
  for (size_t k = 0; k < ctxs.size(); ++k) {
    gnio::launch_dims dims = launch_dims;
    dims.blocks = ctxs[k]->b.num_queues;
    dims.threads = threads;
    dims.poll = o.poll == "busy" ? gnio::device::poll_policy::busy : gnio::device::poll_policy::adaptive;
    if (auto e = flow_count::launch(s.runner(k), dims, ctxs[k]->b); e) {
      // The kernels launched so far are stopped; one that does not stop keeps the session.
      (void)s.stop(std::chrono::seconds(5));
      return rep.fail(e, "launch");
    }
  }

  // --metrics (docs/monitoring.md): the port's families with each queue's
  // processed frames (its kernel's published consumer index while running,
  // the kernel's own count at the end), and flow_count's totals at the end.
  auto publish_metrics = [&](const gnio::port_stats& st, const std::vector<uint64_t>& processed, bool engine_failed,
                             const flow_count::totals* sum, size_t num_flows, uint64_t flows_expired,
                             uint64_t table_flips) {
    gnio::metrics::text t;
    std::vector<gnio::metrics::rxq_label> labels(queues, {"all", "0"});
    for (size_t k = 0; k < ctxs.size(); ++k)
      for (uint32_t q : ctxs[k]->queue_ids) labels[q].gpu = std::to_string(k);
    gnio::metrics::add_port(t, port_dev, st, labels, processed, engine_failed);
    t.family("gnio_gpu_info", "gauge", "Always 1: the GPU (or host executor) of each context.");
    for (size_t k = 0; k < ctxs.size(); ++k) {
      const gnio::gpu_info info = ctxs[k]->dev->info();
      gnio::metrics::add_gpu_info(t, std::to_string(k), info.name, info.bus_id, gnio::to_string(info.executor));
    }
    if (sum) {  // the kernels keep these until they return
      t.family("gnio_flow_count_packets_total", "counter", "Packets counted in flows (the JSON's packets).")
          .sample({}, sum->packets);
      t.family("gnio_flow_count_bytes_total", "counter", "Bytes counted in flows (the JSON's bytes).").sample({}, sum->bytes);
      t.family("gnio_flow_count_malformed_total", "counter", "Malformed packets (the JSON's malformed).")
          .sample({}, sum->malformed);
      t.family("gnio_flow_count_table_full_total", "counter", "Packets that found the flow table full.")
          .sample({}, sum->table_full);
      t.family("gnio_flow_count_flows", "gauge", "Flows in the table at the end (the JSON's flows).")
          .sample({}, static_cast<uint64_t>(num_flows));
      t.family("gnio_flow_count_flows_expired_total", "counter",
               "Flows that ended during the run: FIN/RST or idle (the JSON's flows_expired).")
          .sample({}, flows_expired);
      t.family("gnio_flow_count_table_flips_total", "counter",
               "Times new packets were sent to the other flow table (the JSON's table_flips).")
          .sample({}, table_flips);
    }
    mx->publish(t, sum != nullptr);
  };
  auto publish_live = [&] {
    const auto st = s.stats();
    std::vector<uint64_t> processed;
    for (const auto& q : st.rxq) processed.push_back(std::min(q.consumed, q.delivered));
    publish_metrics(st, processed, static_cast<bool>(s.get_port().engine_error()), nullptr, 0, 0, 0);
  };
  // IPFIX: one observation domain per GPU's flow table; templates first.
  // A paced send that sees a stop request gets --ipfix-flush-timeout more.
  ipfix.on_stop_request([&sig] { return sig.requested(); });
  ipfix.start(static_cast<uint32_t>(ctxs.size()), gnio::ipfix::now_ms());
  const auto flip_every = std::chrono::duration<double>(flip_s);
  // Not quite flip_s: a time-driven flip is taken back a little after it is made.
  const uint64_t flip_ms = static_cast<uint64_t>(flip_s * 1000 * 0.9);
  // The totals as the kernels have them now (their counters only grow).
  auto read_totals = [&](gpu_ctx& c) -> gnio::error {
    c.totals.resize(c.queue_ids.size());
    if (c.tot.host_ptr == nullptr) return c.dev->copy_to_host(c.totals.data(), c.tot, 0, c.tot.bytes);
    // Relaxed, as the kernels' adds (flow_count.hpp): each value only needs to come eventually.
    auto* live = static_cast<flow_count::totals*>(c.tot.host_ptr);
    const auto load = [](uint64_t& v) {
      return gnio::device::sys_atomic_ref<uint64_t>(v).load(cuda::std::memory_order_relaxed);
    };
    for (size_t k = 0; k < c.totals.size(); ++k) {
      flow_count::totals& t = live[k];
      c.totals[k] = {load(t.packets), load(t.bytes), load(t.malformed), load(t.table_full),
                     {load(t.claimed[0]), load(t.claimed[1])}};
    }
    return {};
  };
  // Slots holding flows in the table new flows go to: from the blocks' last
  // acks while they run (a flipper), from the totals after (read_totals).
  auto active_slots = [&](const gpu_ctx& c, bool running) -> uint64_t {
    if (!expiry) {
      uint64_t claimed = 0;
      for (const auto& x : c.totals) claimed += x.claimed[0];
      return claimed;
    }
    if (running) return c.flip.active_slots();
    const uint32_t t = static_cast<uint32_t>(c.flip.epoch & 1u);
    uint64_t claimed = 0;
    for (const auto& x : c.totals) claimed += x.claimed[t];
    return claimed - c.flip.base[t];
  };
  // The table before the last flip, which no block writes any more
  // (flipper::poll): its flows go to the host table, where they may end,
  // and it is zeroed for the next flip.
  auto take_back = [&](gpu_ctx& c, uint64_t ms) -> gnio::error {
    const uint32_t old = static_cast<uint32_t>((c.flip.epoch + 1) & 1u);
    gnio::mem_block& tab = c.table[old];
    c.flows.resize(table_cap);
    if (auto e = c.dev->copy_to_host(c.flows.data(), tab, 0, tab.bytes); e) return e;
    // claimed(old) is final: every block published it with its ack.
    const uint64_t claimed = c.flip.claimed(old);
    c.expiry->merge(c.flows.data(), table_cap, ms);
    // Ends and IPFIX timeouts at the flip interval, not at every flip a
    // filling table makes (expire looks at every live flow).
    if (ms - c.expired_ms >= flip_ms) {
      c.expiry->expire(ms, false);
      c.expired_ms = ms;
    }
    for (size_t off = 0; off < tab.bytes; off += c.zeros.bytes)
      if (auto e = c.dev->copy_to_block(tab, off, c.zeros.host_ptr, std::min(c.zeros.bytes, tab.bytes - off)); e)
        return e;
    c.flip.base[old] = claimed;
    c.flip.pending = false;
    c.flip.stall_warned = false;
    return {};
  };
  for (auto& c : ctxs) {
    c->flip.at = t0;
    c->expired_ms = gnio::ipfix::now_ms();
  }
  auto last = t0;
  uint64_t last_delivered = 0;
  bool stopped_early = false;
  gnio::error run_err;
  size_t done = 0;
  while (done < ctxs.size() && !run_err) {
    done = 0;
    for (size_t k = 0; k < ctxs.size(); ++k) {
      // Table flips want a quick look: a half-full table at a high rate fills up fast.
      auto w = s.runner(k).wait(std::chrono::milliseconds(ctxs.size() > 1 || expiry ? 10 : 50));
      if (!w) ++done;
      else if (w.code() != gnio::status::time_out) run_err = w;
    }
    if (done == ctxs.size() || run_err) break;
    if (mx && mx->due()) publish_live();
    const auto now = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(now - t0).count();
    if (sig.signal() != 0 || (duration_s > 0 && elapsed >= duration_s)) {
      stopped_early = true;
      ipfix.stopping();
      if (auto e = s.stop(std::chrono::seconds(5)); e && !run_err) run_err = e;
      break;
    }
    if (expiry) {
      // Flip each GPU's tables when the one in use is half full or flip_s
      // has passed; take the table before back once every block acked.
      const uint64_t ms = gnio::ipfix::now_ms();
      for (auto& cp : ctxs) {
        gpu_ctx& c = *cp;
        if (c.flip.pending) {
          if (c.flip.poll()) {
            if (auto e = take_back(c, ms); e) run_err = e;
          } else if (now - c.flip.at > std::chrono::seconds(5) && !c.flip.stall_warned) {
            c.flip.stall_warned = true;
            ++c.flip.stalls;
            warn("flow_count: a kernel block has not moved to the new flow table for 5 s; flows are not given back "
                 "until it does\n");
          }
          continue;
        }
        if (c.flip.active_slots() * 2 >= table_cap || now - c.flip.at >= flip_every) c.flip.flip();
      }
    } else if (const uint64_t ms = gnio::ipfix::now_ms(); ipfix.due(ms)) {
      // A copy of each table while the kernels run, for the IPFIX timeouts.
      for (size_t i = 0; i < ctxs.size() && !run_err; ++i) {
        auto& c = *ctxs[i];
        c.flows.resize(table_cap);
        if (auto e = c.dev->copy_to_host(c.flows.data(), c.table[0], 0, c.table[0].bytes); e) run_err = e;
        else ipfix.scan(static_cast<uint32_t>(i), c.flows.data(), table_cap, ms, false);
      }
      ipfix.scanned(ms);
    }
    if (interval_s > 0 && std::chrono::duration<double>(now - last).count() >= interval_s) {
      auto st = s.stats();
      const double dt = std::chrono::duration<double>(now - last).count();
      // The kernels add to table_full and claimed after every batch (flow_count.hpp).
      uint64_t slots_used = 0, table_full = 0;
      for (auto& c : ctxs) {
        if (auto e = read_totals(*c); e && !run_err) run_err = e;
        slots_used += active_slots(*c, true);
        for (const auto& t : c->totals) table_full += t.table_full;
      }
      warn("flow_count: {:.1f} s: {} delivered ({:.2f} Mpps), {} missed, table {}/{} slots used, {} table_full\n",
           elapsed, st.rx_delivered, (st.rx_delivered - last_delivered) / dt / 1e6, st.rx_missed, slots_used,
           uint64_t{table_cap} * ctxs.size(), table_full);
      last = now;
      last_delivered = st.rx_delivered;
    }
  }
  // A stop signal from here on came while the results were being put
  // together: it cuts the flow rows short (the one that stopped the run, if
  // any, came before).
  const unsigned signals_at_stop = sig.count();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  j["seconds"] = seconds;
  j["stopped_early"] = stopped_early;
  gnio::launch_stats ls;
  for (size_t k = 0; k < ctxs.size(); ++k) {
    const auto one = s.runner(k).stats();
    ls.launches += one.launches;
    ls.packets += one.packets;
    ls.busy_ns += one.busy_ns;
    ls.idle_ns += one.idle_ns;
  }
  j["launches"] = ls.launches;
  if (run_err) {
    // Fail closed: nothing is freed while a kernel may run. What the port
    // counted so far goes into the JSON.
    const auto st = s.stats();
    j["received"] = st.rx_frames;
    j["missed"] = st.rx_missed;
    j["source_errors"] = st.rx_errors;
    // A kernel still running keeps the session (and all it may touch) alive.
    return rep.fail(run_err, "kernel");
  }

  // A port that fails to stop (a TX capture that could not be written) has
  // still counted everything: the error is reported and the results kept.
  int rc = 0;
  if (auto e = s.stop_port(); e) rc = rep.fail(e, "stop");
  const auto st = s.stats();
  const auto engine_err = s.get_port().engine_error();

  // Merge the per-GPU tables: a flow's packets may have reached several GPUs
  // only if its queue changed, which RSS never does; summing keeps it exact
  // anyway. Flows that ended during the run (expiry.hpp) are rows of their
  // own: a key that came back after its flow ended has a row for each.
  std::vector<flow_count::flow_row> flows;
  // Index of each live flow in `flows` by its key's bytes (flow_key has no
  // padding and reserved is always 0), so merging is linear in the
  // table size rather than quadratic.
  std::unordered_map<std::string, size_t> index;
  const auto key_bytes = [](const gnio::device::flow_key& k) {
    return std::string(reinterpret_cast<const char*>(&k), sizeof k);  // no padding; reserved stays 0
  };
  const auto add_live = [&](const flow_count::flow_row& r) {
    if (ctxs.size() == 1) {  // one table holds each key once: nothing to merge
      flows.push_back(r);
      return;
    }
    auto [it, fresh] = index.try_emplace(key_bytes(r.e.key), flows.size());
    if (fresh) {
      flows.push_back(r);
    } else {
      flows[it->second].e.packets += r.e.packets;
      flows[it->second].e.bytes += r.e.bytes;
      flows[it->second].e.meta |= r.e.meta & gnio::device::flow_meta_tcp_flags;
    }
  };
  std::vector<flow_count::totals> totals(queues);
  flow_count::totals sum{};
  uint64_t slots_used = 0, slots_claimed = 0, flows_expired = 0, ended_end_of_flow = 0, ended_idle = 0, flips = 0,
           flip_stalls = 0;
  const uint64_t end_ms = gnio::ipfix::now_ms();
  for (size_t i = 0; i < ctxs.size(); ++i) {
    gpu_ctx& c = *ctxs[i];
    if (auto e = read_totals(c); e) return rep.fail(e, "read totals");
    for (size_t k = 0; k < c.queue_ids.size(); ++k) totals[c.queue_ids[k]] = c.totals[k];
    slots_used += active_slots(c, false);
    for (const auto& t : c.totals) slots_claimed += t.claimed[0] + t.claimed[1];
    c.flows.resize(table_cap);
    if (!expiry) {
      if (auto e = c.dev->copy_to_host(c.flows.data(), c.table[0], 0, c.table[0].bytes); e)
        return rep.fail(e, "read flow table");
      for (const auto& f : c.flows)
        if (f.state == gnio::device::flow_slot_used) add_live(flow_count::flow_row{f});
      // Every flow's last record: the table is final now.
      ipfix.scan(static_cast<uint32_t>(i), c.flows.data(), table_cap, end_ms, true);
      continue;
    }
    // Every block has returned, so both tables are final: the one in use,
    // and the one before a flip not taken back yet (zeroed otherwise). Every
    // open record is sent (forced_end); the flows stay live rows.
    for (const auto& tab : c.table) {
      if (auto e = c.dev->copy_to_host(c.flows.data(), tab, 0, tab.bytes); e) return rep.fail(e, "read flow table");
      c.expiry->merge(c.flows.data(), table_cap, end_ms);
    }
    c.expiry->expire(end_ms, true);
    flows_expired += c.expiry->finished().size();
    ended_end_of_flow += c.expiry->ended_end_of_flow();
    ended_idle += c.expiry->ended_idle();
    flips += c.flip.flips;
    flip_stalls += c.flip.stalls;
    for (const auto& r : c.expiry->finished()) flows.push_back(r);
    c.expiry->for_each_live(add_live);
  }
  for (const auto& t : totals) {
    sum.packets += t.packets;
    sum.bytes += t.bytes;
    sum.malformed += t.malformed;
    sum.table_full += t.table_full;
  }
  std::vector<const flow_count::flow_row*> used;
  for (const auto& f : flows) used.push_back(&f);
  std::sort(used.begin(), used.end(), [](auto* a, auto* b) { return a->e.packets > b->e.packets; });

  // Conversations: both directions of a 5-tuple together, as tshark's streams
  // count them. Each is its two (address, port) ends in a fixed order and the
  // family; sorted and counted once each (a million flows take 0.1 s).
  using conv_end = std::array<uint8_t, 18>;
  using conv_key = std::array<uint8_t, 2 * sizeof(conv_end) + 1>;
  std::vector<conv_key> tcp_conv, udp_conv;
  for (const auto* f : used) {
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

  // The identity, per queue and in total, from what each queue's block processed.
  std::vector<uint64_t> processed_q(queues);
  for (uint32_t q = 0; q < queues; ++q) processed_q[q] = totals[q].packets;
  const gnio::accounting acc = s.account(processed_q);

  say("flow_count: {} packets, {} bytes, {} flows in {:.3f} s ({:.3f} Mpps)\n", sum.packets, sum.bytes, used.size(),
      seconds, seconds > 0 ? sum.packets / seconds / 1e6 : 0.0);
  say("{}", rep.accounting_line(acc));
  if (per_burst)
    say("flow_count: launched {}: {} launches, {:.1f} packets per launch, {:.2f} us per launch\n", o.launch.mode,
        ls.launches, ls.launches ? double(sum.packets) / ls.launches : 0.0,
        gnio::cli::launch_us_mean(ls));
  say("flow_count: engine {:.1f} ns/frame over {} lane(s)\n", gnio::engine_ns_per_frame(st), st.lanes.size());
  if (st.rx_errors) say("flow_count: the source reported {} read error(s); see the warning above\n", st.rx_errors);
  if (st.rx_dropped)
    say("flow_count: the source dropped {} frame(s) before the engine saw them (a kernel or device ring was full; not "
        "in received)\n",
        st.rx_dropped);
  uint64_t truncated = 0;
  for (const auto& q : st.rxq) truncated += q.truncated;
  if (const std::string w = gnio::cli::truncation_warning("flow_count", truncated, o.rx_slot); !w.empty()) warn("{}", w);
  if (sum.malformed) say("flow_count: {} malformed packets (counted, flowed as far as parsed)\n", sum.malformed);
  say("flow_count: table {}/{} slots used ({} per GPU), {} table_full\n", slots_used,
      uint64_t{table_cap} * ctxs.size(), table_cap, sum.table_full);
  if (expiry)
    say("flow_count: {} flows ended during the run ({} FIN/RST, {} idle {} s), {} table flips\n", flows_expired,
        ended_end_of_flow, ended_idle, o.flow_idle_s, flips);
  if (sum.table_full)
    say("flow_count: {} packets found no slot for their flow within {} slots of its hash (counted in packets, not in "
        "a flow; raise --table)\n",
        sum.table_full, gnio::device::flow_table_max_probe);
  if (ipfix.enabled()) say("flow_count: {}\n", ipfix.summary());
  if (const std::string w = ipfix.loss_warning(); !w.empty()) warn("flow_count: {}\n", w);
  if (sum.packets == 0 && !stopped_early) say("flow_count: the port delivered no packets (empty capture?)\n");
  if (!used.empty()) {
    say("{:>4}  {:<6} {:>39} {:>5}   {:>39} {:>5} {:>12} {:>14}\n", "#", "proto", "source", "port", "destination", "port",
        "packets", "bytes");
    for (uint32_t i = 0; i < std::min<size_t>(top, used.size()); ++i) {
      const auto& f = *used[i];
      const std::string tunnel = f.e.key.tunnel == gnio::device::encap_kind::none
                                     ? std::string()
                                     : fmt::format("  {} {}", gnio::device::to_string(f.e.key.tunnel), f.e.key.tunnel_id);
      say("{:>4}  {:<6} {:>39} {:>5} > {:>39} {:>5} {:>12} {:>14}{}\n", i + 1, proto_text(f.e.key.proto, f.e.key.family),
          addr_text(f.e.key, f.e.key.src), f.e.key.src_port, addr_text(f.e.key, f.e.key.dst), f.e.key.dst_port, f.e.packets,
          f.e.bytes, tunnel);
    }
  }

  json per_gpu = json::array();
  for (const auto& c : ctxs) {
    uint64_t pk = 0;
    for (const auto& t : c->totals) pk += t.packets;
    per_gpu.push_back({{"executor", std::string(gnio::to_string(c->dev->info().executor))}, {"device", c->dev->info().name},
                       {"bus_id", c->dev->info().bus_id}, {"queues", c->queue_ids}, {"packets", pk},
                       {"mpps", seconds > 0 ? pk / seconds / 1e6 : 0.0}});
  }
  j["per_gpu"] = per_gpu;
  j["packets"] = sum.packets;
  j["bytes"] = sum.bytes;
  j["flows"] = used.size();
  j["tcp_conversations"] = tcp_conv.size();
  j["udp_conversations"] = udp_conv.size();
  // received, missed, unsteered, pending, unaccounted: rep.add_accounting, below.
  j["source_errors"] = st.rx_errors;
  j["source_dropped"] = st.rx_dropped;
  j["malformed"] = sum.malformed;
  j["table_full"] = sum.table_full;
  j["table_slots_used"] = slots_used;
  j["table_slots_claimed"] = slots_claimed;
  j["flow_idle_timeout_s"] = o.flow_idle_s;
  j["flow_tables"] = tables;
  j["table_flips"] = flips;
  j["table_flip_stalls"] = flip_stalls;
  j["flows_expired"] = flows_expired;
  j["flows_expired_end_of_flow"] = ended_end_of_flow;
  j["flows_expired_idle"] = ended_idle;
  j["table_slots"] = uint64_t{table_cap} * ctxs.size();
  j["truncated"] = truncated;
  j["rx_slot"] = o.rx_slot;
  j["mpps"] = seconds > 0 ? sum.packets / seconds / 1e6 : 0.0;
  gnio::cli::add_launch_json(j, ls, sum.packets, seconds, per_burst);
  j["engine_error"] = engine_err ? engine_err.what() : "";
  j["engine"] = {{"lanes", st.lanes.size()}, {"ns_per_frame", gnio::engine_ns_per_frame(st)}};
  json qs = json::array();
  for (uint32_t i = 0; i < st.rxq.size(); ++i) {
    const auto& q = st.rxq[i];
    qs.push_back({{"queue", i}, {"offered", q.offered}, {"delivered", q.delivered}, {"missed", q.missed},
                  {"bytes", q.bytes}, {"truncated", q.truncated}, {"processed", i < totals.size() ? totals[i].packets : 0},
                  {"pending", i < acc.queues.size() ? acc.queues[i].pending : 0}});
  }
  j["per_queue"] = qs;
  if (flow_rows) {
    // One row per flow, most packets first, serialized here one at a time
    // (one line each): with a million flows they are most of a 200 MB
    // document. A stop signal that comes meanwhile ends the list where it is,
    // and the JSON says so, rather than holding the program for seconds.
    uint64_t written = 0;
    bool signalled = false;
    std::string& out = *flow_rows;
    out = "[";
    for (const auto* f : used) {
      if (written == o.max_flow_rows) break;
      if (written % 4096 == 0 && sig.count() != signals_at_stop) {
        signalled = true;
        break;
      }
      json row = {{"proto", proto_text(f->e.key.proto, f->e.key.family)}, {"family", f->e.key.family},
                  {"src", addr_text(f->e.key, f->e.key.src)}, {"dst", addr_text(f->e.key, f->e.key.dst)},
                  {"src_port", f->e.key.src_port}, {"dst_port", f->e.key.dst_port}, {"packets", f->e.packets},
                  {"bytes", f->e.bytes}};
      if (f->e.key.proto == 6 && f->e.key.family) row["tcp_flags"] = f->e.meta & gnio::device::flow_meta_tcp_flags;
      if (f->e.meta & gnio::device::flow_meta_tagged)
        row["vlan"] = (f->e.meta >> gnio::device::flow_meta_vlan_shift) & gnio::device::flow_meta_vlan_mask;
      if (f->end != flow_count::flow_end::live) row["expired"] = flow_count::to_string(f->end);
      if (f->e.key.tunnel != gnio::device::encap_kind::none) {
        row["tunnel"] = gnio::device::to_string(f->e.key.tunnel);
        row["tunnel_id"] = f->e.key.tunnel_id;
      }
      out += written == 0 ? "\n    " : ",\n    ";
      out += row.dump(-1, ' ', false, json::error_handler_t::replace);
      ++written;
    }
    out += written == 0 ? "]" : "\n  ]";
    j["flow_rows_written"] = written;
    j["flows_truncated"] = written < used.size();
    if (written < used.size()) {
      j["flows_truncated_by"] = signalled ? "signal" : "max_flow_rows";
      warn("flow_count: the JSON lists {} of {} flow rows ({}); flows_truncated is set\n", written, used.size(),
           signalled ? "a stop signal came while they were written" : fmt::format("--max-flow-rows {}", o.max_flow_rows));
    }
  }
  if (mx) {
    std::vector<uint64_t> processed;
    for (const auto& q : qs) processed.push_back(q["processed"].get<uint64_t>());
    publish_metrics(st, processed, static_cast<bool>(engine_err), &sum, used.size(), flows_expired, flips);
  }
  ipfix.add_json(j);
  if (!rep.add_accounting(acc, "packet")) rc = 1;

  // The session tears down the lifecycle in reverse when it goes.
  if (engine_err) {
    warn("flow_count: the port's engine failed: {}\n", engine_err.what());
    rep.set_error(engine_err.what(), gnio::to_string(engine_err.code()), "engine");
    rc = 1;
  }
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  // Before any CUDA call: a kernel first launched beside a persistent one must not wait for a lazy load.
  gnio::prefer_eager_module_loading();
  // SIGINT, SIGTERM, SIGHUP stop the run; blocking reads and opens (a
  // capture on a FIFO) are interrupted too, and --duration also bounds the
  // setup: a source that never opens ends at the deadline. SIGPIPE and
  // SIGXFSZ are ignored: writes fail with an errno instead.
  gnio::stop_signals sig;
  json j = json::object();
  gnio::app::run_report rep("flow_count", j);
  std::optional<gnio::atomic_file> json_out;
  std::string flow_rows;  // the JSON's flow_rows, as text (run, run_report::write_json)
  std::unique_ptr<gnio::metrics::server> mx;  // --metrics
  int rc = 0;
  try {
    CLI::App app{"flow_count: count packets and bytes per 5-tuple flow in a persistent GPU kernel"};
    options o;
    app.add_option("--port", o.port_dev, "device string, e.g. pcap:file=x.pcap, gen:size=64,count=1000000, pair:")
        ->required();
    app.add_option("--exec", o.exec, "executor: cuda, host, or auto (a GPU if present, else host)")
        ->check(CLI::IsMember({"cuda", "host", "auto"}))
        ->capture_default_str();
    app.add_option("--gpu", o.gpu_sel,
                   "GPU selector overriding --exec: ordinal, PCIe bus id, host or auto; a comma-separated list (0,1) "
                   "spreads the queues over several GPUs, one context and kernel each");
    app.add_option("--queues", o.queues, "RX queues (one kernel block, or host thread, per queue)")
        ->check(gnio::cli::whole(1, flow_count::max_queues))
        ->capture_default_str();
    app.add_option("--ring", o.ring, "descriptors per RX queue (power of two)")
        ->check(gnio::cli::power_of_two(2, 1u << 31))
        ->capture_default_str();
    app.add_option("--rx-slot", o.rx_slot,
                   "bytes per RX buffer slot: the longest frame a slot holds; longer frames are cut and counted as "
                   "truncated (a multiple of 64, up to 1048576; 9216 for 9000-byte jumbo frames)")
        ->check(gnio::cli::slot_bytes())
        ->capture_default_str();
    app.add_option("--pkt-mem", o.pkt_mem_text,
                   "where frames land: auto (mapped host memory, or the backend's RX pool by reference), cpu_gpu, or "
                   "gpu (GPU memory, filled by asynchronous copies)")
        ->check(CLI::IsMember({"auto", "cpu_gpu", "gpu"}))
        ->capture_default_str();
    app.add_option("--batch", o.batch, "max packets per recv (per-burst and graph: at most --burst)")
        ->check(gnio::cli::whole(1, 65536))
        ->capture_default_str();
    gnio::cli::add_launch_options(app, o.launch);
    app.add_option("--poll", o.poll,
                   "how an empty RX queue is polled: adaptive (back off with short sleeps when idle, and wait up to "
                   "the batch timeout for a batch to fill) or busy (never sleep, return a batch once it stops growing: "
                   "lowest latency, a core or an SM slot kept busy)")
        ->check(CLI::IsMember({"adaptive", "busy"}))
        ->capture_default_str();
    app.add_option("--threads", o.threads, "CUDA threads per block")
        ->check(gnio::cli::whole(32, 1024))
        ->capture_default_str();
    app.add_option("--table", o.table_cap, "flow table slots (power of two)")
        ->check(gnio::cli::power_of_two(16, 1u << 31))
        ->capture_default_str();
    app.add_option("--top", o.top, "flows shown on the console")
        ->check(gnio::cli::whole(0, UINT32_MAX))
        ->capture_default_str();
    app.add_option("--max-flow-rows", o.max_flow_rows,
                   "flow rows in the JSON, most packets first (default: all; the JSON says when the list is cut)")
        ->check(gnio::cli::whole(0, UINT64_MAX));
    app.add_option("--duration", o.duration_s,
                   "stop after this long: seconds, or 500ms, 10s, 1m as in gen:duration= (0: when the port's stream "
                   "ends, or Ctrl-C)")
        ->transform(gnio::cli::duration());
    app.add_option("--stats-interval", o.interval_s,
                   "time between progress lines on stderr: seconds, or 500ms, 10s, 1m as --duration (0: none)")
        ->transform(gnio::cli::duration())
        ->capture_default_str();
    auto* idle_opt =
        app.add_option("--flow-idle-timeout", o.flow_idle_s,
                       "a flow with no packet for this long ends and its table slot is given back, as does a TCP flow "
                       "that sent FIN or RST once half this (or --ipfix-scan-interval when exporting) passes without its "
                       "packets (seconds, or 500ms, 10s, 1m; "
                       "default: --ipfix-idle-timeout, 15 s; 0: flows are kept for the whole run and a full table "
                       "stays full)")
            ->transform(gnio::cli::duration());
    gnio::ipfix::add_options(app, o.ipfix);
    auto* json_opt = app.add_option("--json", o.json_path, "write the results as JSON to FILE (also when the run fails)");
    gnio::metrics::add_options(app, o.metrics);
    gnio::cli::add_version_flag(app, "flow_count");
    // Usage errors exit with 2, --help with 0.
    if (auto usage = gnio::cli::parse(app, argc, argv)) return gnio::console::finish("flow_count", *usage);
    for (int i = 0; i < argc; ++i) o.command += (i ? " " : "") + std::string(argv[i]);
    // One idle timeout for the flows and their IPFIX records unless both are given.
    if (idle_opt->count() == 0 && app.get_option("--ipfix-idle-timeout")->count() > 0)
      o.flow_idle_s = o.ipfix.idle_timeout_s;
    if (o.launch.mode != "persistent" && o.launch.burst > o.ring) {
      warn("flow_count: --burst {} is larger than --ring {}: a burst that big can never be ready in one queue\n",
           o.launch.burst, o.ring);
      return gnio::console::finish("flow_count", 2);
    }

    if (o.table_cap < 16 || (o.table_cap & (o.table_cap - 1)) != 0) {
      warn("flow_count: --table {} must be a power of two >= 16\n", o.table_cap);
      return gnio::console::finish("flow_count", 2);
    }
    // The JSON path is checked before anything runs: it must be writable, and
    // not a file the port reads or writes.
    if (json_opt->count() > 0) {
      auto f = gnio::prepare_output("--json", o.json_path, gnio::device_files(o.port_dev));
      if (!f) {
        warn("flow_count: {}\n", f.err().message());
        return gnio::console::finish("flow_count", 2);
      }
      json_out = std::move(*f);
    }
    // The collector is resolved before anything runs: a bad one is a usage error.
    auto ipfix = gnio::ipfix::session::open(o.ipfix, gnio::ipfix::layout{}, "flow_count");
    if (!ipfix) {
      warn("flow_count: {}\n", ipfix.err().message());
      return gnio::console::finish("flow_count", 2);
    }
    // --metrics: bound before the run, so that a bad address or a port in use is a usage error.
    std::string why;
    mx = gnio::metrics::server::start(o.metrics, "flow_count", &why);
    if (!why.empty()) {
      warn("flow_count: {}\n", why);
      return gnio::console::finish("flow_count", 2);
    }
    if (mx) warn("flow_count: metrics on http://{}/metrics\n", mx->address());
    rc = run(o, sig, rep, mx.get(), *ipfix, json_out ? &flow_rows : nullptr);
  } catch (...) {
    // Reported with its type; the JSON is still written, below.
    const std::string what = gnio::console::current_exception_text();
    gnio::console::err("flow_count: unexpected error: " + what + "\n");
    try {
      rep.set_error(what, "unexpected", "exception");
    } catch (...) {
      // No memory even for that: the message above stands alone.
    }
    rc = 1;
  }
  if (json_out) {
    try {
      rc = rep.write_json(*json_out, rc, "flow_rows", flow_rows);
    } catch (...) {
      gnio::console::err("flow_count: --json: could not be written: " + gnio::console::current_exception_text() + "\n");
      rc = rc == 0 ? 1 : rc;
    }
  }
  // --metrics-linger: the final values stay up for a scrape; a signal ends it.
  if (mx) mx->linger([&sig] { return sig.signal() != 0; });
  return gnio::console::finish("flow_count", rc);
}
