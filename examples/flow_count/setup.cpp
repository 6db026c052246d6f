// SPDX-License-Identifier: Apache-2.0
// flow_count: the steps up to the kernels' launch (run.hpp).
#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "run.hpp"

namespace flow_count::host {

using gnio::app::say;
using gnio::app::warn;

// What the options say, into the JSON and the state.
int begin(run_state& st) {
  const options& o = st.o;
  json& j = st.j;
  st.gpu_sel = o.gpu_sel.empty() ? (o.exec == "cuda" ? "0" : o.exec) : o.gpu_sel;
  (void)gnio::parse_mem_type(o.pkt_mem_text, st.pkt_mem);
  j["command"] = o.command;
  j["port"] = o.port_dev;
  j["queues"] = o.queues;
  j["pkt_mem"] = o.pkt_mem_text;
  gnio::cli::apply(o.launch, st.launch_dims);
  st.per_burst = st.launch_dims.mode != gnio::device::launch_mode::persistent;
  j["launch"] = o.launch.mode;
  if (st.per_burst) {
    j["burst"] = o.launch.burst;
    j["burst_timeout_us"] = o.launch.burst_timeout_us;
  }
  j["poll"] = o.poll;
  j["filter"] = o.filter.empty() ? json(nullptr) : json(o.filter);
  if (!o.filter.empty()) {
    auto f = gnio::compile_filter(o.filter);
    if (!f) return st.rep.refuse("--filter: " + f.err().message(), "invalid_value", "options");
    st.filter = std::move(*f);
  }
  if (o.duration_s > 0) (void)st.sig.arm_deadline(o.duration_s);
  st.expiry = o.flow_idle_s > 0;
  st.tables = st.expiry ? 2 : 1;
  st.idle_ms = static_cast<uint64_t>(o.flow_idle_s * 1000);
  st.flip_s = st.ipfix.enabled() ? std::min(o.flow_idle_s / 2, o.ipfix.scan_interval_s) : o.flow_idle_s / 2;
  return 0;
}

// The GPUs and the port; a GPU that fails the capability check for this port
// is reported and left out.
int open_gpus_and_port(run_state& st) {
  gnio::app::run_report& rep = st.rep;
  json& j = st.j;
  const std::string& port_dev = st.o.port_dev;
  auto& ctxs = st.ctxs;
  auto gpus = gnio::gpu::open_list(st.gpu_sel);
  if (!gpus) return rep.fail(gpus.err(), "gpu");
  for (auto& g : *gpus) {
    auto c = std::make_unique<gpu_ctx>();
    c->g = std::move(g);
    ctxs.push_back(std::move(c));
  }
  j["executor"] = std::string(gnio::to_string(ctxs.front()->g.info().executor));
  j["device"] = ctxs.front()->g.info().name;

  // --filter on the port's sockets too, where its backend can (af_packet).
  std::string why;
  const std::string dev = gnio::cli::add_rx_pcap(
      gnio::cli::push_filter_down(port_dev, st.o.filter, &st.filter_pushed_down), st.o.write, &why);
  if (dev.empty()) return rep.refuse(why, "invalid_value", "options");
  auto p = gnio::port::open(ctxs.front()->g, dev);
  if (!p && st.sig.requested()) return rep.stopped_while(st.sig, "opening the port", p.err());
  if (!p) return rep.fail(p.err(), "port");
  if (!st.o.write.path.empty())
    if (auto e = p->set_rx_pcap_filter(st.filter.insns); e) return rep.fail(e, "port");
  st.p.emplace(std::move(*p));
  for (auto it = ctxs.begin(); it != ctxs.end();) {
    const auto verdict = gnio::check_receive_kernels(st.p->caps(), port_dev.substr(0, port_dev.find(':')),
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
  if (st.o.queues < ctxs.size()) {
    const std::string msg = fmt::format("--queues {} is fewer than the {} GPUs; give each GPU at least one queue",
                                        st.o.queues, ctxs.size());
    warn("flow_count: {}\n", msg);
    rep.set_error(msg, "invalid_value", "options");
    return 2;
  }
  return 0;
}

// Memory is counted before it is taken (F19): every ring slot is touched,
// and so is the flow table on the host executor, so a size that cannot be
// backed is refused here rather than ending in the OOM killer.
int check_memory(run_state& st) {
  const uint32_t queues = st.o.queues, ring = st.o.ring, table_cap = st.o.table_cap, tables = st.tables;
  uint64_t host_tables = 0;
  for (const auto& c : st.ctxs)
    if (c->g.info().executor == gnio::executor_kind::host) ++host_tables;
  const uint64_t table_bytes = host_tables * tables * sizeof(flow_count::flow_entry) * table_cap;
  const uint64_t ring_bytes = uint64_t{queues} * gnio::cli::rx_ring_bytes(ring, st.o.rx_slot);
  const gnio::cli::memory_room room = gnio::cli::available_memory();
  std::string why =
      gnio::cli::memory_refusal(fmt::format("--table {} ({} table(s) of {} slots of {} bytes on {} host executor(s))",
                                            table_cap, tables, table_cap, sizeof(flow_count::flow_entry), host_tables),
                                table_bytes, room);
  if (why.empty())
    why = gnio::cli::memory_refusal(fmt::format("--ring {} on {} queue(s)", ring, queues), ring_bytes, room);
  if (why.empty())
    why = gnio::cli::memory_refusal(fmt::format("--ring {} on {} queue(s) with --table {}", ring, queues, table_cap),
                                    ring_bytes + table_bytes, room);
  if (!why.empty()) {
    warn("flow_count: {}\n", why);
    st.rep.set_error(why, "no_memory", "options");
    return 2;
  }
  return 0;
}

// The RX queues, then the session over the port and the contexts.
int make_session(run_state& st) {
  gnio::app::run_report& rep = st.rep;
  auto& ctxs = st.ctxs;
  // Queue i belongs to GPU i mod N: the port's RSS over all queues spreads flows over the GPUs.
  for (uint32_t i = 0; i < st.o.queues; ++i) {
    auto& c = *ctxs[i % ctxs.size()];
    gnio::rxq_config rc;
    rc.num_descs = st.o.ring;
    rc.stride = st.o.rx_slot;
    rc.owner = &c.g;
    rc.pkt_mem = st.pkt_mem;
    rc.inline_bytes = st.o.inline_bytes;
    st.j["inline_bytes"] = rc.inline_bytes;
    auto id = st.p->create_rxq(rc);
    if (!id) return rep.fail(id.err(), "create_rxq");
    auto v = st.p->rxq(*id);
    if (!v) return rep.fail(v.err(), "rxq");
    c.b.q[c.queue_ids.size()] = *v;
    c.queue_ids.push_back(*id);
  }
  // The session owns the port, the contexts and all the kernels use from
  // here on: it tears them down in reverse, or keeps them whole when a
  // kernel does not stop (gnio/session.hpp).
  std::vector<gnio::gpu> owned;
  for (auto& c : ctxs) owned.push_back(std::move(c->g));
  auto made = gnio::session::create(std::move(owned), std::move(*st.p));
  if (!made) return rep.fail(made.err(), "session");
  st.s.emplace(std::move(*made));
  return 0;
}

// Each context's flow tables, totals and, with expiry, its flip control.
int alloc_memory(run_state& st) {
  gnio::app::run_report& rep = st.rep;
  gnio::session& s = *st.s;
  const uint32_t table_cap = st.o.table_cap;
  for (size_t k = 0; k < st.ctxs.size(); ++k) {
    auto& c = st.ctxs[k];
    c->dev = &s.gpu_at(k);
    c->b.num_queues = static_cast<uint32_t>(c->queue_ids.size());
    c->b.capacity = table_cap;
    // Launched per burst, a launch takes at most a burst per queue.
    c->b.batch = st.per_burst ? std::min(st.o.batch, st.o.launch.burst) : st.o.batch;
    for (uint32_t t = 0; t < st.tables; ++t) {
      auto table = s.alloc_bytes(k, sizeof(flow_count::flow_entry) * table_cap, gnio::mem_type::gpu);  // zeroed
      if (!table) return rep.fail(table.err(), "flow table");
      c->table[t] = *table;
      c->b.table[t] = static_cast<flow_count::flow_entry*>(c->table[t].exec_ptr);
    }
    // On the host executor the totals are memory the host maps, so that the
    // live reads (read_totals) are atomic loads rather than a copy racing the
    // kernels' adds; a GPU's stay in GPU memory, next to the kernel.
    const gnio::mem_type tot_mem =
        c->dev->info().executor == gnio::executor_kind::host ? gnio::mem_type::cpu_gpu : gnio::mem_type::gpu;
    if (!st.filter.insns.empty()) {
      const size_t bytes = sizeof(gnio::device::bpf_insn) * st.filter.insns.size();
      auto prog = s.alloc_bytes(k, bytes, gnio::mem_type::gpu);
      if (!prog) return rep.fail(prog.err(), "filter program");
      if (auto e = c->dev->copy_to_block(*prog, 0, st.filter.insns.data(), bytes); e)
        return rep.fail(e, "filter program");
      c->b.filter = {static_cast<const gnio::device::bpf_insn*>(prog->exec_ptr),
                     static_cast<uint32_t>(st.filter.insns.size())};
    }
    auto tot = s.alloc_bytes(k, sizeof(flow_count::totals) * c->queue_ids.size(), tot_mem);
    if (!tot) return rep.fail(tot.err(), "totals");
    c->tot = *tot;
    c->b.tot = static_cast<flow_count::totals*>(c->tot.exec_ptr);
    if (st.expiry) {
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
      c->expiry.emplace(st.idle_ms, &st.ipfix, static_cast<uint32_t>(k));
      // Zeros copied over a table given back: pinned memory, so the copy has
      // finished when copy_to_block returns, before the table is used again.
      auto z = s.alloc_bytes(k, std::min<size_t>(sizeof(flow_count::flow_entry) * table_cap, 4u << 20),
                             gnio::mem_type::cpu_gpu);
      if (!z) return rep.fail(z.err(), "flow table flip");
      c->zeros = *z;
    }
  }
  return 0;
}

// The session starts; one kernel per context.
int launch_kernels(run_state& st) {
  gnio::session& s = *st.s;
  // --write FIFO: a reader first, so the start does not wait on the FIFO.
  gnio::cli::fifo_hold fifo;
  if (const std::string why = gnio::cli::wait_for_reader(
          st.o.write.path, [&st] { return st.sig.requested(); }, &fifo);
      !why.empty()) {
    const gnio::error e(st.sig.requested() ? gnio::status::shutdown : gnio::status::io_failed, why);
    return st.sig.requested() ? st.rep.stopped_while(st.sig, "waiting for --write's reader", e)
                              : st.rep.fail(e, "write");
  }
  if (auto e = s.start(); e)
    return st.sig.requested() ? st.rep.stopped_while(st.sig, "starting the port", e) : st.rep.fail(e, "start");
  fifo.reset();
  st.t0 = std::chrono::steady_clock::now();
  if (st.o.duration_s > 0) (void)st.sig.arm_deadline(st.o.duration_s);  // the run itself gets the whole duration
  for (size_t k = 0; k < st.ctxs.size(); ++k) {
    gnio::launch_dims dims = st.launch_dims;
    dims.blocks = st.ctxs[k]->b.num_queues;
    dims.threads = st.o.threads;
    dims.poll = gnio::cli::poll_policy_of(st.o.poll);
    if (auto e = flow_count::launch(s.runner(k), dims, st.ctxs[k]->b); e) {
      // The kernels launched so far are stopped; one that does not stop keeps the session.
      (void)s.stop(std::chrono::seconds(5));
      return st.rep.fail(e, "launch");
    }
  }
  return 0;
}

}  // namespace flow_count::host
