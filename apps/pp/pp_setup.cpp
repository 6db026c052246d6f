// SPDX-License-Identifier: Apache-2.0
// gnio pp: the steps that set a run up, up to the kernels' launch (pp_run.hpp).
#include "pp_run.hpp"

#include <random>

#include <fmt/format.h>

#include <gnio/console.hpp>

#include "cli.hpp"
#include "pp_device.hpp"
#include "pp_launch.hpp"
#include "pp_options.hpp"

namespace gnio::pp {

namespace {

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
result<port> open_port_tx(gpu& g, const options& opt, const std::string& dev, const console& con,
                          std::string* used_dev) {
  if (opt.pcap_out.empty()) {
    *used_dev = dev;
    return port::open(g, dev);
  }
  *used_dev = with_option(dev, "tx_pcap=" + opt.pcap_out);
  auto p = port::open(g, *used_dev);
  if (!p || p->caps().tx || backend_of(opt.port) != "pcap") return p;
  (void)p->close();
  *used_dev = with_option(dev, "tx=" + opt.pcap_out);
  con.out("pp: pcap port without tx=: --pcap-out uses {}\n", printable(*used_dev));
  return port::open(g, *used_dev);
}

// --write FILE: the core's rx_pcap= writes the delivered frames --filter accepts.
result<port> open_port(gpu& g, const options& opt, const std::string& dev, const console& con, std::string* used_dev,
                       const packet_filter& filter) {
  std::string why;
  const std::string with_write = cli::add_rx_pcap(dev, opt.write, &why);
  if (with_write.empty()) return error(status::invalid_value, why);
  auto p = open_port_tx(g, opt, with_write, con, used_dev);
  if (p && !opt.write.path.empty())
    if (auto e = p->set_rx_pcap_filter(filter.insns); e) return e;
  return p;
}

}  // namespace

int compile_filter_option(run_state& r) {
  if (r.opt.filter.empty()) return 0;
  auto f = compile_filter(r.opt.filter);
  if (!f) return bad_option("--filter: " + f.err().message(), r.result);
  r.filter = std::move(*f);
  return 0;
}

int prepare_outputs(run_state& r, std::optional<atomic_file>* json_out) {
  const options& opt = r.opt;
  if (const std::string why = cli::stdout_conflict({{"--json", opt.json_path},
                                                    {"--jsonl", opt.jsonl_path},
                                                    {"--write", opt.write.path},
                                                    {"--pcap-out", opt.pcap_out}});
      !why.empty())
    return bad_option(why, r.result);
  // The JSON file must be writable, and none of the files the port reads or writes.
  if (!opt.json_path.empty()) {
    std::vector<named_file> others = device_files(opt.port);
    if (!opt.pcap_out.empty()) others.push_back({"--pcap-out ", opt.pcap_out});
    if (!opt.write.path.empty()) others.push_back({"--write ", opt.write.path});
    auto f = prepare_output("--json", opt.json_path, others);
    if (!f) return bad_option(f.err().message(), r.result);
    *json_out = std::move(*f);
  }
  // --pcap-out is created when the port starts; a FIFO there would block it.
  if (const std::string why = fifo_output_refusal(opt.pcap_out); !why.empty())
    return bad_option("--pcap-out " + opt.pcap_out + ": " + why, r.result);
  if (const std::string why = cli::check_write_stream(opt.write); !why.empty()) return bad_option(why, r.result);
  // The IPFIX collector is resolved before anything runs. pp's conversation
  // table keeps no TCP flags, VLAN or tunnel ID: its templates leave them out.
  // Its records carry the conversations' capture times.
  auto ipx_open = ipfix::session::open(opt.ipfix, ipfix::layout{false, false, false, true, true}, "pp");
  if (!ipx_open) return bad_option(ipx_open.err().message(), r.result);
  r.ipx.emplace(std::move(*ipx_open));
  // From here on the JSON is written, also when the run fails.
  (*r.result)["command"] = opt.command;
  (*r.result)["port"] = opt.port;
  return 0;
}

namespace {

// Opens the port in the first context into r.p; a stop (Ctrl-C) while it
// opens is told apart from a failure.
int open_port_step(run_state& r) {
  const std::string dev = cli::push_filter_down(r.opt.port, r.opt.filter, &r.filter_pushed_down);
  auto p = open_port(r.ctxs.front()->g, r.opt, dev, r.con, &r.used_dev, r.filter);
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
      auto p =
          open_port(r.ctxs.front()->g, r.opt, cli::push_filter_down(r.opt.port, r.opt.filter, &r.filter_pushed_down),
                    r.con, &r.used_dev, r.filter);
      if (!p) return report_error(p.err(), "port", r.result);
      *r.p = std::move(*p);
      it = r.ctxs.begin();
    }
  }
  if (r.ctxs.empty()) {
    (*r.result)["left_out"] = r.left_out;
    return report_error(error(status::not_supported, "no selected GPU can run the kernels: " + last_why), "gpu",
                        r.result);
  }
  return 0;
}

}  // namespace

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
    rc.inline_bytes = r.opt.inline_headers;
    r.inline_bytes = rc.inline_bytes;
    auto id = p.create_rxq(rc);
    if (!id) return report_error(id.err(), "create_rxq", result);
    if (*id != blk)
      return report_error(error(status::unexpected, "RX queue ids out of the plan's order"), "create_rxq", result);
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
  if (auto e = p.set_steering(std::move(rules), r.plan.steering_default); e)
    return report_error(e, "set_steering", result);
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

namespace {

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
  if (auto e = alloc(sizeof(counters) * c.b.num_blocks, "counters", &c.ctr_mem); e)
    return report_error(e, "alloc", result);
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
  if (!r.filter.insns.empty()) {
    mem_block filter_mem;
    const size_t bytes = sizeof(device::bpf_insn) * r.filter.insns.size();
    if (auto e = alloc(bytes, "filter program", &filter_mem); e) return report_error(e, "alloc", result);
    if (auto e = s.gpu_at(k).copy_to_block(filter_mem, 0, r.filter.insns.data(), bytes); e)
      return report_error(e, "copy filter program", result);
    c.b.filter = {static_cast<const device::bpf_insn*>(filter_mem.exec_ptr),
                  static_cast<uint32_t>(r.filter.insns.size())};
  }
  if (opt.frag_table != 0) {
    // One reassembly table per block, laid out over zeroed executor memory.
    const uint64_t per = device::frag_table_bytes(opt.frag_table, k_frag_max_datagram);
    if (auto e = alloc(per * c.b.num_blocks, "reassembly tables", &c.frag_mem); e)
      return report_error(e, "alloc", result);
    if (auto e = alloc(sizeof(device::frag_table) * c.b.num_blocks, "reassembly table views", &c.frag_tables_mem); e)
      return report_error(e, "alloc", result);
    std::vector<device::frag_table> views(c.b.num_blocks);
    for (uint32_t i = 0; i < c.b.num_blocks; ++i) {
      void* base = static_cast<uint8_t*>(c.frag_mem.exec_ptr) + per * i;
      if (!device::frag_table_layout(base, per, opt.frag_table, k_frag_max_datagram, k_frag_timeout_ns, views[i]))
        return report_error(error(status::unexpected, "reassembly table layout"), "alloc", result);
    }
    if (auto e =
            s.gpu_at(k).copy_to_block(c.frag_tables_mem, 0, views.data(), sizeof(device::frag_table) * views.size());
        e)
      return report_error(e, "copy reassembly tables", result);
    c.b.frag = static_cast<device::frag_table*>(c.frag_tables_mem.exec_ptr);
  }
  if (opt.tcp_streams != 0) {
    // One table of TCP connections per block, zeroed by the allocation.
    const uint64_t per = sizeof(device::tcp_conn) * uint64_t{opt.tcp_streams};
    if (auto e = alloc(per * c.b.num_blocks, "TCP stream tables", &c.stream_mem); e)
      return report_error(e, "alloc", result);
    if (auto e = alloc(sizeof(device::stream_table) * c.b.num_blocks, "TCP stream table views", &c.stream_tables_mem);
        e)
      return report_error(e, "alloc", result);
    std::vector<device::stream_table> views(c.b.num_blocks);
    for (uint32_t i = 0; i < c.b.num_blocks; ++i)
      views[i] = {reinterpret_cast<device::tcp_conn*>(static_cast<uint8_t*>(c.stream_mem.exec_ptr) + per * i),
                  opt.tcp_streams};
    if (auto e = s.gpu_at(k).copy_to_block(c.stream_tables_mem, 0, views.data(),
                                           sizeof(device::stream_table) * views.size());
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

}  // namespace

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
    ctrl.filter = {r.filter.insns.data(), static_cast<uint32_t>(r.filter.insns.size())};
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
  // --write FIFO: a reader first, so the start does not wait on the FIFO
  // past a stop or --duration.
  cli::fifo_hold fifo;
  const auto wait_from = clock_type::now();
  const auto give_up = [&r, wait_from] {
    return r.stop_requested() ||
           (r.opt.duration > 0 &&
            std::chrono::duration<double>(clock_type::now() - wait_from).count() >= r.opt.duration);
  };
  if (const std::string why = cli::wait_for_reader(r.opt.write.path, give_up, &fifo); !why.empty()) {
    const std::string msg = r.stop_requested() ? "stopped while waiting for --write's reader (" + why + ")"
                            : give_up()        ? "--duration passed while waiting for --write's reader (" + why + ")"
                                               : why;
    warn("pp: {}\n", msg);
    set_error(r.result, msg, to_string(give_up() ? status::shutdown : status::io_failed), "write");
    return 1;
  }
  if (auto e = r.s->start(); e) {
    if (!r.stop_requested()) return report_error(e, "start", r.result);
    const std::string msg = fmt::format("stopped while starting the port ({})", e.message());
    warn("pp: {}\n", msg);
    set_error(r.result, msg, to_string(status::shutdown), "start");
    return 1;
  }
  fifo.reset();
  if (r.ctrl_rxq >= 0) r.ctrl_thread = std::thread(ctrl_main, r.ctrl.get());
  r.t0 = clock_type::now();
  for (uint32_t k = 0; k < r.num_ctx(); ++k) {
    launch_dims dims;
    dims.blocks = r.ctxs[k]->b.num_blocks;
    dims.threads = r.opt.threads;
    dims.poll = gnio::cli::poll_policy_of(r.opt.poll);
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

}  // namespace gnio::pp
