// SPDX-License-Identifier: Apache-2.0
// gnio pp, host side: a run as a sequence of steps over one run_state
// (options, outputs, GPUs and port, plan, queues, session, memory, start,
// the loop, totals, report) and the `gnio pp` command. Option checks are in
// pp_options.cpp, the plan in pp_plan.cpp, the CPU thread for TCP connection
// control in pp_ctrl.cpp, stats lines and the JSON in pp_report.cpp; the
// per-packet work is in pp_device.hpp (shared by the kernels and the CPU
// thread). Past 500 lines because add_command's option table and the steps
// that share run_state read best together.
#include "pp_app.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <gnio/atomic_file.hpp>
#include <gnio/console.hpp>
#include <gnio/gnio.hpp>

#include "cli.hpp"
#include "metrics.hpp"
#include "pp.hpp"
#include "pp_ctrl.hpp"
#include "pp_device.hpp"
#include "pp_launch.hpp"
#include "pp_options.hpp"
#include "pp_plan.hpp"
#include "pp_report.hpp"

namespace gnio::pp {

namespace {

using clock_type = std::chrono::steady_clock;

constexpr auto k_stop_deadline = std::chrono::seconds(5);

// ---------------------------------------------------------------------------
// Port opening: --pcap-out
// ---------------------------------------------------------------------------

std::string with_option(const std::string& dev, const std::string& kv) {
  if (dev.find(':') == std::string::npos) return dev + ":" + kv;
  if (!dev.empty() && (dev.back() == ':' || dev.back() == ',')) return dev + kv;
  return dev + "," + kv;
}

std::string backend_of(const std::string& dev) { return dev.substr(0, dev.find(':')); }

// --pcap-out FILE: the core's tx_pcap= keeps a copy of every transmitted
// frame. A pcap port without tx= cannot transmit at all (its caps say so), so
// there the capture's own tx=FILE is used instead: it records the same frames.
result<port> open_port(gpu& g, const options& opt, const console& con, std::string* used_dev) {
  if (opt.pcap_out.empty()) {
    *used_dev = opt.port;
    return port::open(g, opt.port);
  }
  *used_dev = with_option(opt.port, "tx_pcap=" + opt.pcap_out);
  auto p = port::open(g, *used_dev);
  if (!p || p->caps().tx || backend_of(opt.port) != "pcap") return p;
  (void)p->close();
  *used_dev = with_option(opt.port, "tx=" + opt.pcap_out);
  con.out("pp: pcap port without tx=: --pcap-out uses {}\n", printable(*used_dev));
  return port::open(g, *used_dev);
}

// ---------------------------------------------------------------------------
// run: options -> outputs -> GPUs and port -> plan -> queues -> session ->
// memory -> the CPU thread -> start -> the loop -> totals -> report
// ---------------------------------------------------------------------------

// One GPU context: its kernel body, memory, semaphore and persistent kernel.
struct gpu_ctx {
  gpu g;  // moved into the session once the queues are made
  gpu_info info;
  body b{};
  std::vector<uint32_t> global;  // local block -> the app's block number
  std::vector<uint32_t> rx_ids;  // the port's RX queues its kernel consumes
  mem_block ctr_mem, conv_mem, dns_mem, frag_mem, frag_tables_mem, stream_mem, stream_tables_mem;
  semaphore* sem = nullptr;  // the session's
  device::sem sem_host{};
  bool returned = false;  // the kernel returned by itself (or was stopped)
};

// A run's state, filled in step by step. Members go in reverse: the CPU
// thread's state before the session, whose port its queues are in.
struct run_state {
  run_state(const options& o, std::atomic<bool>* st, json* r, metrics::server* m)
      : opt(o), stop(st), result(r), mx(m), con{o.quiet} {}
  ~run_state() { stop_ctrl(); }
  run_state(const run_state&) = delete;
  run_state& operator=(const run_state&) = delete;

  const options& opt;
  std::atomic<bool>* stop;  // may be null
  json* result;             // never null
  metrics::server* mx;      // may be null
  const console con;
  app_config cfg{};
  std::optional<ipfix::session> ipx;

  // GPUs, port and plan.
  std::vector<std::unique_ptr<gpu_ctx>> ctxs;
  std::optional<port> p;  // until the session owns it
  std::string used_dev;   // the device string the port was opened with
  json left_out = json::array();
  pp_plan plan;
  int ctrl_rxq = -1, ctrl_txq = -1;

  std::optional<session> s;
  std::unique_ptr<ctrl_state> ctrl = std::make_unique<ctrl_state>();
  std::thread ctrl_thread;

  // The loop: the blocks' latest reports, and what the stats lines showed.
  clock_type::time_point t0, last_line;
  std::vector<report> latest;
  std::vector<bool> got_final;
  uint64_t reports = 0;
  counters prev_cls[4]{};
  bool stopped_early = false, timed_out = false;
  error run_err;
  double seconds = 0;
  metrics_input mx_in;

  uint32_t num_ctx() const { return static_cast<uint32_t>(ctxs.size()); }
  role role_of(uint32_t blk) const { return plan.blocks[blk].r; }
  block_role& block_of(uint32_t blk) { return ctxs[plan.blocks[blk].ctx]->b.blocks[plan.blocks[blk].local]; }
  bool stop_requested() const { return stop && stop->load(); }
  void stop_ctrl() {
    if (ctrl_thread.joinable()) {
      ctrl->stop.store(true, std::memory_order_release);
      ctrl_thread.join();
    }
  }
  // Stops every kernel still running; the first error wins. A kernel that
  // does not stop parks the session: nothing it may touch is freed.
  void stop_kernels(error* first) {
    if (auto e = s->stop(k_stop_deadline); e && first && !*first) *first = e;
  }
};

// The JSON file, --pcap-out and the IPFIX collector, checked before anything
// runs. *json_out is prepared here, so that a bad --json fails before the run.
int prepare_outputs(run_state& r, std::optional<atomic_file>* json_out) {
  const options& opt = r.opt;
  // The JSON file must be writable, and none of the files the port reads or writes.
  if (!opt.json_path.empty()) {
    std::vector<named_file> others = device_files(opt.port);
    if (!opt.pcap_out.empty()) others.push_back({"--pcap-out ", opt.pcap_out});
    auto f = prepare_output("--json", opt.json_path, others);
    if (!f) return bad_option(f.err().message(), r.result);
    *json_out = std::move(*f);
  }
  // --pcap-out is created when the port starts; a FIFO there would block it.
  if (const std::string why = fifo_output_refusal(opt.pcap_out); !why.empty())
    return bad_option("--pcap-out " + opt.pcap_out + ": " + why, r.result);
  // The IPFIX collector is resolved before anything runs. pp's conversation
  // table keeps no TCP flags, VLAN or tunnel ID: its templates leave them out.
  auto ipx_open = ipfix::session::open(opt.ipfix, ipfix::layout{false, false, false}, "pp");
  if (!ipx_open) return bad_option(ipx_open.err().message(), r.result);
  r.ipx.emplace(std::move(*ipx_open));
  // From here on the JSON is written, also when the run fails.
  (*r.result)["command"] = opt.command;
  (*r.result)["port"] = opt.port;
  return 0;
}

// Opens the port in the first context into r.p; a stop (Ctrl-C) while it
// opens is told apart from a failure.
int open_port_step(run_state& r) {
  auto p = open_port(r.ctxs.front()->g, r.opt, r.con, &r.used_dev);
  if (!p && r.stop_requested()) {
    // A stop (Ctrl-C) while the port was opening, e.g. a FIFO no one writes
    // to: the open was interrupted, nothing is wrong with a disk or a file.
    const std::string msg = fmt::format("stopped while opening the port, before anything ran ({})", p.err().message());
    warn("pp: {}\n", msg);
    set_error(r.result, msg, to_string(status::shutdown), "port");
    return 1;
  }
  if (!p) return report_error(p.err(), "port", r.result);
  r.p.emplace(std::move(*p));
  return 0;
}

// A GPU that fails the capability check for this port is reported and left
// out. The port lives in the first context, so when that one goes the port
// is opened again on the next.
int leave_out_unfit(run_state& r) {
  std::string last_why;
  for (auto it = r.ctxs.begin(); it != r.ctxs.end();) {
    const error verdict = check_receive_kernels(r.p->caps(), backend_of(r.opt.port), (*it)->info, built_with_cuda());
    const std::string why = verdict ? verdict.message() : "";
    if (why.empty()) {
      ++it;
      continue;
    }
    warn("pp: leaving out {}{}: {}\n", (*it)->info.name,
         (*it)->info.bus_id.empty() ? "" : " (" + (*it)->info.bus_id + ")", why);
    r.left_out.push_back({{"device", (*it)->info.name}, {"bus_id", (*it)->info.bus_id}, {"reason", why}});
    last_why = why;
    const bool held_port = it == r.ctxs.begin();
    if (held_port) (void)r.p->close();
    it = r.ctxs.erase(it);
    if (held_port) {
      if (r.ctxs.empty()) break;
      auto p = open_port(r.ctxs.front()->g, r.opt, r.con, &r.used_dev);
      if (!p) return report_error(p.err(), "port", r.result);
      *r.p = std::move(*p);
      it = r.ctxs.begin();
    }
  }
  if (r.ctxs.empty()) {
    (*r.result)["left_out"] = r.left_out;
    return report_error(error(status::not_supported, "no selected GPU can run the kernels: " + last_why), "gpu", r.result);
  }
  return 0;
}

// One context per selected GPU ("0,1", bus ids, or "host,host"). Each has
// its own kernel body, memory, semaphore and persistent kernel; the port's
// RSS spreads every class's queues over them.
int open_gpus_and_port(run_state& r) {
  auto gpus = gpu::open_list(r.opt.gpu.empty() ? "auto" : r.opt.gpu);
  if (!gpus) return report_error(gpus.err(), "gpu", r.result);
  for (auto& g : *gpus) {
    auto c = std::make_unique<gpu_ctx>();
    c->g = std::move(g);
    c->info = c->g.info();
    r.ctxs.push_back(std::move(c));
  }
  for (const auto& c : r.ctxs)
    r.con.out("pp: executor {} on {}{}\n", to_string(c->info.executor), c->info.name,
              c->info.bus_id.empty() ? "" : " (" + c->info.bus_id + ")");
  if (const int rc = open_port_step(r); rc != 0) return rc;
  if (!r.p->caps().rx)
    return report_error(error(status::not_supported, fmt::format("port {} cannot receive", printable(r.used_dev))),
                        "port", r.result);
  return leave_out_unfit(r);
}

// Blocks, queues, GPUs and steering (pp_plan.hpp): udp[n], tcp[n], icmp[n],
// arp_other, then the CPU's TCP control queue; queue i of each class runs
// on GPU i mod N, arp/other on the first. Then the memory that takes.
int plan_run(run_state& r) {
  const options& opt = r.opt;
  const bool can_tx = r.p->caps().tx;
  if (const std::string why = make_plan(plan_input{opt.queues, r.num_ctx(), opt.http_server, can_tx}, &r.plan);
      !why.empty())
    return bad_option(why, r.result);
  if (!can_tx && !opt.quiet && (opt.http_server || !opt.pcap_out.empty() || r.cfg.ip || opt.reply_all))
    r.con.out("pp: port {} cannot transmit: replies are counted, not sent\n", printable(opt.port));
  for (uint32_t k = 0; k < r.num_ctx(); ++k) r.ctxs[k]->global = r.plan.ctx_blocks[k];
  // The tables live in each executor's memory: host memory only on the host executor.
  uint64_t host_blocks = 0;
  for (auto& c : r.ctxs) {
    c->b.num_blocks = static_cast<uint32_t>(c->global.size());
    c->b.cfg = r.cfg;
    c->b.batch = opt.batch;
    c->b.report_interval_ns = static_cast<uint64_t>(opt.stats_interval * 1e9);
    if (c->info.executor == gnio::executor_kind::host) host_blocks += c->b.num_blocks;
  }
  if (const std::string why = memory_refusal(opt, r.plan, host_blocks); !why.empty()) {
    warn("pp: {}\n", why);
    set_error(r.result, why, "no_memory", "options");
    return 2;
  }
  return 0;
}

// The queues in the plan's order (its positions are the port's queue ids),
// the TX queues, and the steering.
int create_queues(run_state& r) {
  port& p = *r.p;
  json* result = r.result;
  for (uint32_t blk = 0; blk < r.plan.num_blocks; ++blk) {
    auto& c = *r.ctxs[r.plan.blocks[blk].ctx];
    rxq_config rc;
    rc.num_descs = r.opt.ring;
    rc.stride = r.opt.rx_slot;
    rc.owner = &c.g;
    auto id = p.create_rxq(rc);
    if (!id) return report_error(id.err(), "create_rxq", result);
    if (*id != blk) return report_error(error(status::unexpected, "RX queue ids out of the plan's order"), "create_rxq", result);
    auto v = p.rxq(*id);
    if (!v) return report_error(v.err(), "rxq", result);
    r.block_of(blk).r = r.role_of(blk);
    r.block_of(blk).rx = *v;
    c.rx_ids.push_back(*id);
  }
  if (r.plan.ctrl) {
    rxq_config rc;
    rc.num_descs = k_ctrl_ring;
    rc.host_consumer = true;
    auto id = p.create_rxq(rc);
    if (!id) return report_error(id.err(), "create_rxq (TCP control, CPU)", result);
    r.ctrl_rxq = static_cast<int>(*id);
  }
  // TX queues: one per block that replies (each in its block's GPU
  // context), and one the CPU thread fills.
  for (uint32_t blk = 0; blk < r.plan.num_blocks; ++blk) {
    if (!r.plan.blocks[blk].has_tx) continue;
    txq_config tc;
    tc.owner = &r.ctxs[r.plan.blocks[blk].ctx]->g;
    auto id = p.create_txq(tc);
    if (!id) return report_error(id.err(), "create_txq", result);
    auto v = p.txq(*id);
    if (!v) return report_error(v.err(), "txq", result);
    r.block_of(blk).tx = *v;
    r.block_of(blk).has_tx = 1;
  }
  if (r.plan.ctrl_tx) {
    txq_config tc;
    tc.num_descs = k_ctrl_tx_ring;
    tc.host_producer = true;
    auto id = p.create_txq(tc);
    if (!id) return report_error(id.err(), "create_txq (TCP control, CPU)", result);
    r.ctrl_txq = static_cast<int>(*id);
  }
  // Steering: each class to its group (RSS by 5-tuple hash inside a group).
  std::vector<steering_rule> rules;
  for (const plan_rule& pr : r.plan.steering) rules.push_back({pr.cls, pr.rxqs});
  if (auto e = p.set_steering(std::move(rules), r.plan.steering_default); e) return report_error(e, "set_steering", result);
  return 0;
}

// The session: from here on it owns the port, the contexts and all the
// kernels use, tears them down in reverse, and keeps them whole when a
// kernel does not stop (gnio/session.hpp).
int make_session(run_state& r) {
  std::vector<gpu> owned;
  for (auto& c : r.ctxs) owned.push_back(std::move(c->g));
  auto made = session::create(std::move(owned), std::move(*r.p));
  r.p.reset();
  if (!made) return report_error(made.err(), "session", r.result);
  r.s.emplace(std::move(*made));
  return 0;
}

// Executor memory for context k: counters, conversation and DNS tables, the
// HTTP pages, reassembly and TCP stream tables, and its semaphore.
int alloc_ctx(run_state& r, uint32_t k, const page_set& pages) {
  session& s = *r.s;
  gpu_ctx& c = *r.ctxs[k];
  const options& opt = r.opt;
  json* result = r.result;
  auto alloc = [&](size_t bytes, const char* what, mem_block* out) -> error {
    auto m = s.alloc_bytes(k, bytes, mem_type::gpu);
    if (!m) return error(m.err().code(), fmt::format("{} on {}: {}", what, c.info.name, m.err().message()));
    *out = *m;
    return {};
  };
  mem_block pages_mem;
  if (auto e = alloc(sizeof(counters) * c.b.num_blocks, "counters", &c.ctr_mem); e) return report_error(e, "alloc", result);
  if (auto e = alloc(sizeof(device::flow_entry) * k_conv_capacity, "conversation table", &c.conv_mem); e)
    return report_error(e, "alloc", result);
  if (auto e = alloc(sizeof(dns_entry) * k_dns_capacity, "DNS name table", &c.dns_mem); e)
    return report_error(e, "alloc", result);
  if (auto e = alloc(pages.data.size(), "HTTP pages", &pages_mem); e) return report_error(e, "alloc", result);
  if (auto e = s.gpu_at(k).copy_to_block(pages_mem, 0, pages.data.data(), pages.data.size()); e)
    return report_error(e, "copy pages", result);
  c.b.pages = pages.index;
  c.b.pages.data = static_cast<const uint8_t*>(pages_mem.exec_ptr);
  c.b.ctr = static_cast<counters*>(c.ctr_mem.exec_ptr);
  c.b.conv = static_cast<device::flow_entry*>(c.conv_mem.exec_ptr);
  c.b.conv_capacity = k_conv_capacity;
  c.b.dns = static_cast<dns_entry*>(c.dns_mem.exec_ptr);
  c.b.dns_capacity = k_dns_capacity;
  if (opt.frag_table != 0) {
    // One reassembly table per block, laid out over zeroed executor memory.
    const uint64_t per = device::frag_table_bytes(opt.frag_table, k_frag_max_datagram);
    if (auto e = alloc(per * c.b.num_blocks, "reassembly tables", &c.frag_mem); e) return report_error(e, "alloc", result);
    if (auto e = alloc(sizeof(device::frag_table) * c.b.num_blocks, "reassembly table views", &c.frag_tables_mem); e)
      return report_error(e, "alloc", result);
    std::vector<device::frag_table> views(c.b.num_blocks);
    for (uint32_t i = 0; i < c.b.num_blocks; ++i) {
      void* base = static_cast<uint8_t*>(c.frag_mem.exec_ptr) + per * i;
      if (!device::frag_table_layout(base, per, opt.frag_table, k_frag_max_datagram, k_frag_timeout_ns, views[i]))
        return report_error(error(status::unexpected, "reassembly table layout"), "alloc", result);
    }
    if (auto e = s.gpu_at(k).copy_to_block(c.frag_tables_mem, 0, views.data(), sizeof(device::frag_table) * views.size()); e)
      return report_error(e, "copy reassembly tables", result);
    c.b.frag = static_cast<device::frag_table*>(c.frag_tables_mem.exec_ptr);
  }
  if (opt.tcp_streams != 0) {
    // One table of TCP connections per block, zeroed by the allocation.
    const uint64_t per = sizeof(device::tcp_conn) * uint64_t{opt.tcp_streams};
    if (auto e = alloc(per * c.b.num_blocks, "TCP stream tables", &c.stream_mem); e) return report_error(e, "alloc", result);
    if (auto e = alloc(sizeof(device::stream_table) * c.b.num_blocks, "TCP stream table views", &c.stream_tables_mem); e)
      return report_error(e, "alloc", result);
    std::vector<device::stream_table> views(c.b.num_blocks);
    for (uint32_t i = 0; i < c.b.num_blocks; ++i)
      views[i] = {reinterpret_cast<device::tcp_conn*>(static_cast<uint8_t*>(c.stream_mem.exec_ptr) + per * i),
                  opt.tcp_streams};
    if (auto e = s.gpu_at(k).copy_to_block(c.stream_tables_mem, 0, views.data(), sizeof(device::stream_table) * views.size());
        e)
      return report_error(e, "copy TCP stream tables", result);
    c.b.streams = static_cast<device::stream_table*>(c.stream_tables_mem.exec_ptr);
  }
  auto sem = s.add_semaphore(k, c.b.num_blocks, sizeof(report));
  if (!sem) return report_error(sem.err(), "semaphore", result);
  c.sem = *sem;
  c.b.sem = c.sem->view();
  c.sem_host = c.sem->host_view();
  return 0;
}

int alloc_memory(run_state& r) {
  const page_set pages = make_pages();
  for (uint32_t k = 0; k < r.num_ctx(); ++k)
    if (const int rc = alloc_ctx(r, k, pages); rc != 0) return rc;
  return 0;
}

// The CPU thread's queues (--http-server), and the line that tells the run's shape.
int setup_ctrl(run_state& r) {
  port& p = r.s->get_port();
  ctrl_state& ctrl = *r.ctrl;
  if (r.ctrl_rxq >= 0) {
    auto rv = p.rxq_host(static_cast<uint32_t>(r.ctrl_rxq));
    if (!rv) return report_error(rv.err(), "rxq_host", r.result);
    ctrl.rx = *rv;
    if (r.ctrl_txq >= 0) {
      auto th = p.txq_host(static_cast<uint32_t>(r.ctrl_txq));
      if (!th) return report_error(th.err(), "txq_host", r.result);
      auto tv = p.txq(static_cast<uint32_t>(r.ctrl_txq));
      if (!tv) return report_error(tv.err(), "txq", r.result);
      ctrl.tx = *th;
      ctrl.tx_exec = *tv;
      ctrl.has_tx = true;
    }
    ctrl.cfg = r.cfg;
    ctrl.batch = r.opt.batch;
    ctrl.isn_secret = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  }
  const uint32_t n = r.opt.queues;
  r.con.out("pp: port {}: {} queue(s) per class (udp, tcp, icmp) + arp/other{}; {} kernel blocks{}{}\n",
            printable(r.used_dev), n, r.opt.http_server ? " + TCP control on a CPU thread" : "", r.plan.num_blocks,
            r.num_ctx() > 1 ? fmt::format(" over {} GPUs", r.num_ctx()) : std::string(),
            r.cfg.ip ? fmt::format("; ip {} mac {}", ip_text(r.cfg.ip), mac_text(r.cfg.mac)) : std::string());
  return 0;
}

// Starts the session, the CPU thread and every context's kernel.
int start_run(run_state& r) {
  if (auto e = r.s->start(); e) return report_error(e, "start", r.result);
  if (r.ctrl_rxq >= 0) r.ctrl_thread = std::thread(ctrl_main, r.ctrl.get());
  r.t0 = clock_type::now();
  for (uint32_t k = 0; k < r.num_ctx(); ++k) {
    launch_dims dims;
    dims.blocks = r.ctxs[k]->b.num_blocks;
    dims.threads = r.opt.threads;
    dims.poll = r.opt.poll == "busy" ? device::poll_policy::busy : device::poll_policy::adaptive;
    if (error e = launch(r.s->runner(k), dims, r.ctxs[k]->b); e) {
      r.stop_ctrl();
      error stop_err;
      r.stop_kernels(&stop_err);
      if (stop_err)
        return report_error(stop_err, "stop after a failed launch (a kernel is still running; its memory is kept)",
                            r.result);
      return report_error(e, "launch", r.result);
    }
  }
  return 0;
}

// Takes the reports the blocks left in their semaphores.
void drain_sem(run_state& r) {
  for (auto& c : r.ctxs) {
    const uint32_t local_n = c->b.num_blocks;
    for (uint32_t i = 0; i < local_n; ++i) {
      if (device::sem_get_status(c->sem_host, i) != device::sem_status::ready) continue;
      report rep;
      std::memcpy(&rep, device::sem_custom(c->sem_host, i), sizeof rep);
      device::sem_set_status(c->sem_host, i, device::sem_status::free);
      const uint32_t blk = c->global[rep.block < local_n ? rep.block : i];
      r.latest[blk] = rep;
      if (rep.final_report) r.got_final[blk] = true;
      ++r.reports;
    }
  }
}

// Per class, from the latest reports and the CPU thread's snapshot (tcp).
void class_totals(run_state& r, counters cls[4]) {
  for (int i = 0; i < 4; ++i) cls[i] = counters{};
  for (uint32_t blk = 0; blk < r.plan.num_blocks; ++blk)
    add_into(cls[static_cast<uint32_t>(r.role_of(blk))], r.latest[blk].c);
  if (r.ctrl_rxq >= 0) {
    std::lock_guard lk(r.ctrl->mu);
    add_into(cls[1], r.ctrl->snap);
  }
}

// --metrics while running: the latest reports and the CPU thread's snapshot.
void publish_live(run_state& r) {
  std::vector<counters> blocks(r.plan.num_blocks);
  for (uint32_t blk = 0; blk < r.plan.num_blocks; ++blk) blocks[blk] = r.latest[blk].c;
  counters ctrl_c{};
  if (r.ctrl_rxq >= 0) {
    std::lock_guard lk(r.ctrl->mu);
    ctrl_c = r.ctrl->snap;
  }
  const port_stats st = r.s->stats();
  r.mx_in.reports = r.reports;
  publish_metrics(*r.mx, r.mx_in, blocks, r.ctrl_rxq >= 0 ? &ctrl_c : nullptr, st,
                  processed_per_queue(r.plan, st, blocks, ctrl_c.packets),
                  static_cast<bool>(r.s->get_port().engine_error()), false);
}

// Waits a slice on every kernel still running. True when all have returned
// (or one failed: r.run_err).
bool wait_kernels(run_state& r) {
  const auto wait_slice = std::chrono::milliseconds(r.num_ctx() > 1 ? 10 : 50);
  uint32_t done = 0;
  for (uint32_t k = 0; k < r.num_ctx(); ++k) {
    gpu_ctx* c = r.ctxs[k].get();
    if (!c->returned) {
      const error w = r.s->runner(k).wait(wait_slice);
      if (!w) c->returned = true;  // returned by itself: its queues ended
      else if (w.code() != status::time_out) {
        r.run_err = w;
        break;
      }
    }
    done += c->returned ? 1 : 0;
  }
  drain_sem(r);
  return r.run_err || done == r.num_ctx();
}

// The loop: reports from the semaphores, IPFIX scans, stats lines, --metrics
// and the stop conditions. Returns once every kernel returned, one failed,
// or the run was stopped; r.seconds is the run's length.
void run_loop(run_state& r) {
  const options& opt = r.opt;
  ipfix::session& ipx = *r.ipx;
  r.latest.assign(r.plan.num_blocks, report{});
  r.got_final.assign(r.plan.num_blocks, false);
  r.mx_in = metrics_input{&opt, &r.plan, {}, 0};
  for (const auto& c : r.ctxs) r.mx_in.infos.push_back(c->info);
  // IPFIX: one observation domain per GPU's conversation table, and one for
  // the CPU thread's (exported at the end of the run).
  // A paced send that sees a stop request gets --ipfix-flush-timeout more.
  ipx.on_stop_request([stop = r.stop] { return stop && stop->load(); });
  ipx.start(r.num_ctx() + (r.ctrl_rxq >= 0 ? 1u : 0u), ipfix::now_ms());
  std::vector<device::flow_entry> ipx_copy;
  r.last_line = r.t0;
  for (;;) {
    if (wait_kernels(r)) break;
    if (const uint64_t ms = ipfix::now_ms(); ipx.due(ms)) {
      ipx_copy.resize(k_conv_capacity);
      for (uint32_t i = 0; i < r.num_ctx() && !r.run_err; ++i) {
        const mem_block& m = r.ctxs[i]->conv_mem;
        if (auto e = r.s->gpu_at(i).copy_to_host(ipx_copy.data(), m, 0, m.bytes); e) r.run_err = e;
        else ipx.scan(i, ipx_copy.data(), k_conv_capacity, ms, false);
      }
      ipx.scanned(ms);
    }
    const auto now = clock_type::now();
    const double elapsed = std::chrono::duration<double>(now - r.t0).count();
    if (opt.stats_interval > 0 && std::chrono::duration<double>(now - r.last_line).count() >= opt.stats_interval) {
      counters cls[4];
      class_totals(r, cls);
      r.con.out("{}", stats_line(elapsed, std::chrono::duration<double>(now - r.last_line).count(), cls, r.prev_cls));
      std::copy(cls, cls + 4, r.prev_cls);
      r.last_line = now;
    }
    if (r.mx && r.mx->due()) publish_live(r);
    if (r.stop_requested() || (opt.duration > 0 && elapsed >= opt.duration)) {
      r.stopped_early = true;
      ipx.stopping();
      r.stop_kernels(&r.run_err);
      r.timed_out = r.run_err && r.run_err.code() == status::time_out;
      break;
    }
  }
  if (r.run_err && !r.timed_out) {
    // One kernel failed: the others are stopped too (their queues stay fed
    // otherwise), and everything is kept, below.
    error ignored;
    r.stop_kernels(&ignored);
  }
  r.seconds = std::chrono::duration<double>(clock_type::now() - r.t0).count();
  r.stop_ctrl();
  drain_sem(r);
}

// Fail closed: a kernel may still run, so nothing it can touch is freed or
// stopped. The last reports are all there is.
int report_failed_run(run_state& r) {
  counters cls[4];
  class_totals(r, cls);
  const gpu_info& info = r.ctxs.front()->info;
  json& j = *r.result;
  j["time_out"] = r.timed_out;
  j["stopped_early"] = r.stopped_early;
  j["seconds"] = r.seconds;
  j["executor"] = std::string(to_string(info.executor));
  j["device"] = info.name;
  counters sum{};
  for (auto& c : cls) add_into(sum, c);
  j["last_reports"] = counters_json(sum);
  // A kernel still running keeps the whole session (semaphores, memory,
  // runners, port) until the process exits; the session sees to it.
  return report_error(r.run_err, r.timed_out ? "stop (kernel still running; its memory is kept)" : "kernel", r.result);
}

// After every kernel returned: stops the port, reads the authoritative
// totals back (counters, conversation and DNS tables), exports the last
// IPFIX records, and reports (pp_report.hpp).
int finish_run(run_state& r) {
  session& s = *r.s;
  run_outcome o;
  // A port that fails to stop (a TX capture that could not be written) has
  // still counted everything: the error is reported, the results are kept.
  if (auto e = s.stop_port(); e) o.rc = report_error(e, "port stop", &o.failure);
  o.st = s.stats();
  o.engine_err = s.get_port().engine_error();

  o.per_block.resize(r.plan.num_blocks);
  for (uint32_t k = 0; k < r.num_ctx(); ++k) {
    gpu_ctx* c = r.ctxs[k].get();
    gpu& g = s.gpu_at(k);
    std::vector<counters> local(c->b.num_blocks);
    if (auto e = g.copy_to_host(local.data(), c->ctr_mem, 0, c->ctr_mem.bytes); e)
      return report_error(e, "read counters", r.result);
    for (uint32_t b = 0; b < c->b.num_blocks; ++b) o.per_block[c->global[b]] = local[b];
    o.conv_tables.emplace_back(k_conv_capacity);
    o.dns_tables.emplace_back(k_dns_capacity);
    if (auto e = g.copy_to_host(o.conv_tables.back().data(), c->conv_mem, 0, c->conv_mem.bytes); e)
      return report_error(e, "read conversations", r.result);
    if (auto e = g.copy_to_host(o.dns_tables.back().data(), c->dns_mem, 0, c->dns_mem.bytes); e)
      return report_error(e, "read DNS names", r.result);
  }
  o.conv_tables.push_back(r.ctrl->conv);
  for (uint32_t i = 0; i < o.conv_tables.size(); ++i)
    if (i < r.num_ctx() || r.ctrl_rxq >= 0)
      r.ipx->scan(i, o.conv_tables[i].data(), o.conv_tables[i].size(), ipfix::now_ms(), true);
  o.dns_tables.push_back(r.ctrl->dns);

  o.opt = &r.opt;
  o.plan = &r.plan;
  o.cfg = r.cfg;
  o.used_dev = r.used_dev;
  for (const auto& c : r.ctxs) o.ctxs.push_back({c->info, c->global, c->rx_ids});
  o.left_out = r.left_out;
  o.ctrl = r.ctrl->c;
  o.synack_sent = r.ctrl->synack_sent;
  o.finack_sent = r.ctrl->finack_sent;
  o.seconds = r.seconds;
  o.since_last_line = std::chrono::duration<double>(clock_type::now() - r.last_line).count();
  std::copy(r.prev_cls, r.prev_cls + 4, o.prev_cls);
  o.stopped_early = r.stopped_early;
  o.reports = r.reports;
  o.final_reports = static_cast<uint64_t>(std::count(r.got_final.begin(), r.got_final.end(), true));
  o.ipx = &*r.ipx;
  std::vector<uint64_t> processed_q;
  const int rc = final_report(o, r.con, r.result, &processed_q);
  r.mx_in.reports = r.reports;
  if (r.mx)
    publish_metrics(*r.mx, r.mx_in, o.per_block, r.ctrl_rxq >= 0 ? &o.ctrl : nullptr, o.st, processed_q,
                    static_cast<bool>(o.engine_err), true);
  // The session tears down the lifecycle in reverse when it goes.
  if (o.engine_err) warn("pp: the port's engine failed: {}\n", o.engine_err.what());
  return rc;
}

// run() without the JSON file: options, the run, and *result (never null)
// filled with everything known, the error too. *json_out is prepared here,
// once the options are accepted, so that a bad --json fails before the run.
int run_steps(const options& opt, std::atomic<bool>* stop, json* result, std::optional<atomic_file>* json_out,
              metrics::server* mx) {
  run_state r(opt, stop, result, mx);
  if (const int rc = check_options(opt, &r.cfg, result); rc != 0) return rc;
  if (const int rc = prepare_outputs(r, json_out); rc != 0) return rc;
  for (auto step : {open_gpus_and_port, plan_run, create_queues, make_session, alloc_memory, setup_ctrl, start_run})
    if (const int rc = step(r); rc != 0) return rc;
  run_loop(r);
  if (r.run_err) return report_failed_run(r);
  return finish_run(r);
}

// run() without the --metrics server: the run and its JSON file.
int run_and_write(const options& opt, std::atomic<bool>* stop, nlohmann::json* result, metrics::server* mx) {
  json local;
  json& j = result ? *result : local;
  j = json::object();
  std::optional<atomic_file> json_out;
  int rc = 1;
  try {
    rc = run_steps(opt, stop, &j, &json_out, mx);
  } catch (...) {
    // Reported with its type; the JSON is still written, below.
    const std::string what = gnio::console::current_exception_text();
    gnio::console::err("pp: unexpected error: " + what + "\n");
    try {
      set_error(&j, what, "unexpected", "exception");
    } catch (...) {
      // No memory even for that: the message above stands alone.
    }
    rc = 1;
  }
  if (!json_out) return rc;
  try {
    // What the console could not write is part of the result, when nothing
    // failed before it.
    if (const std::string t = gnio::console::failure_text(); !t.empty()) set_error(&j, t, "io_failed", "output");
    if (error e = json_out->commit(j.dump(2, ' ', false, json::error_handler_t::replace) + "\n"); e) {
      warn("pp: --json: {}\n", e.what());
      rc = rc == 0 ? 1 : rc;
    }
  } catch (...) {
    gnio::console::err("pp: --json: could not be written: " + gnio::console::current_exception_text() + "\n");
    rc = rc == 0 ? 1 : rc;
  }
  return rc;
}

}  // namespace

int run(const options& opt, std::atomic<bool>* stop, nlohmann::json* result) {
  // --metrics: bound before anything runs, so that a bad address or a port in
  // use is a usage error; --metrics-linger serves the final values (the
  // JSON's) a while after the run, for a scrape to catch a short run.
  std::string why;
  auto mx = metrics::server::start(opt.metrics, "pp", &why);
  if (!why.empty()) {
    json local;
    return bad_option(why, result ? result : &local);
  }
  if (mx) console{opt.quiet}.out("pp: metrics on http://{}/metrics\n", mx->address());
  const int rc = run_and_write(opt, stop, result, mx.get());
  if (mx) mx->linger([stop] { return stop && stop->load(); });
  return rc;
}

// ---------------------------------------------------------------------------
// gnio pp
// ---------------------------------------------------------------------------

void add_command(CLI::App& app) {
  auto opt = std::make_shared<options>();
  auto* sub = app.add_subcommand(
      "pp", "GPU packet processing: UDP/DNS, TCP/HTTP, ICMP echo and ARP in a persistent kernel, with an optional "
            "HTTP server (the open counterpart of DOCA's GPU Packet Processing application; see docs/pp.md)");
  sub->add_option("--port", opt->port, "device string, e.g. pcap:file=x.pcap, pair:name=a, gen:mix=all,count=1000")
      ->required();
  sub->add_option("--gpu", opt->gpu,
                  "PCIe bus id, CUDA ordinal, host, or auto (first GPU, else the host executor); a comma-separated "
                  "list (0,1) spreads every class's queues over several GPUs, one context and kernel each")
      ->capture_default_str();
  sub->add_option("--queues", opt->queues, "RX queues (kernel blocks) per traffic class: udp, tcp and icmp")
      ->check(gnio::cli::whole(1, k_max_queues))
      ->capture_default_str();
  sub->add_option("--ip", opt->ip, "own IPv4 address: answers ARP and ICMP echo for it, serves HTTP on it");
  sub->add_option("--mac", opt->mac, "own MAC address (default 02:00 followed by the 4 bytes of --ip)");
  sub->add_flag("--http-server", opt->http_server,
                "serve HTTP on --ip port 80: SYN/FIN/RST on a CPU thread, GET answered by the GPU");
  sub->add_flag("--reply-all", opt->reply_all, "answer every ICMP echo request, whatever its address (capture replay)");
  sub->add_option("--stats-interval", opt->stats_interval,
                  "time between stats lines on stdout: seconds, or 500ms, 10s, 1m as --duration (0: none)")
      ->transform(gnio::cli::duration())
      ->capture_default_str();
  sub->add_option("--json", opt->json_path, "write the final stats as JSON to FILE (also when the run fails)");
  sub->add_option("--pcap-out", opt->pcap_out, "write every transmitted frame to FILE (pcap)");
  sub->add_option("--duration", opt->duration,
                  "stop after this long: seconds, or 500ms, 10s, 1m as in gen:duration= (0: when the stream ends, or "
                  "Ctrl-C)")
      ->transform(gnio::cli::duration());
  sub->add_option("--batch", opt->batch, "max packets per recv")->check(gnio::cli::whole(1, 65536))->capture_default_str();
  sub->add_option("--threads", opt->threads,
                  "CUDA threads per block (the pp kernel uses 80 registers a thread, so at most 768)")
      ->check(gnio::cli::whole(32, 768))
      ->capture_default_str();
  sub->add_option("--rx-slot", opt->rx_slot,
                  "bytes per RX buffer slot: the longest frame a slot holds; longer frames are cut and counted as "
                  "truncated (a multiple of 64, up to 1048576; 9216 for 9000-byte jumbo frames)")
      ->check(gnio::cli::slot_bytes())
      ->capture_default_str();
  sub->add_option("--poll", opt->poll,
                  "how an empty RX queue is polled: adaptive (back off with short sleeps when idle, and wait up to the "
                  "batch timeout for a batch to fill) or busy (never sleep, return a batch once it stops growing: "
                  "lowest latency, a core or an SM slot kept busy)")
      ->check(CLI::IsMember({"adaptive", "busy"}))
      ->capture_default_str();
  sub->add_option("--tcp-streams", opt->tcp_streams,
                  "TCP connections each queue follows to count HTTP and DNS-over-TCP per message, as tshark does "
                  "(a power of two; connections past it, and every connection with 0, are classified per segment "
                  "and counted in stream_table_full)")
      ->check(gnio::cli::power_of_two_or_zero(1u << 20))
      ->capture_default_str();
  sub->add_option("--frag-table", opt->frag_table,
                  "IP datagrams each queue reassembles at once, each up to 16 KB, 30 s timeout (a power of two; 0: "
                  "fragments are counted as they are, not reassembled)")
      ->check(gnio::cli::power_of_two_or_zero(1024))
      ->capture_default_str();
  sub->add_option("--ring", opt->ring, "descriptors per RX queue (power of two)")
      ->check(gnio::cli::power_of_two(2, 1u << 31))
      ->capture_default_str();
  metrics::add_options(*sub, opt->metrics);
  ipfix::add_options(*sub, opt->ipfix);
  sub->callback([opt, sub] {
    options o = *opt;
    // run() reads an empty name as "not given"; on the command line it is a mistake.
    for (const char* name : {"--json", "--pcap-out"})
      if (sub->get_option(name)->count() > 0 && sub->get_option(name)->as<std::string>().empty()) {
        gnio::console::err(fmt::format("pp: {} needs a file name (it was given as \"\")\n", name));
        throw CLI::RuntimeError(2);
      }
    o.command = "gnio pp";
    for (const CLI::Option* op : sub->get_options()) {
      if (op->count() == 0 || op->get_name() == "--help") continue;
      o.command += " " + op->get_name();
      if (op->get_type_size_max() > 0)
        for (const auto& r : op->results()) o.command += " " + r;
    }
    // SIGINT, SIGTERM and SIGHUP stop the run (blocking calls are
    // interrupted, not restarted); SIGPIPE is ignored.
    int rc = 0;
    {
      gnio::stop_signals sig;
      rc = run(o, sig.flag(), nullptr);
    }
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace gnio::pp
