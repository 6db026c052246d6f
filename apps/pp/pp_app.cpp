// SPDX-License-Identifier: Apache-2.0
// gnio pp, host side: run() as a sequence of steps over one run_state
// (options -> outputs -> GPUs and port -> plan -> queues -> session ->
// memory -> start -> the loop -> totals -> report) and the `gnio pp`
// command. The steps up to the launch are in pp_setup.cpp (pp_run.hpp),
// option checks in pp_options.cpp, the plan in pp_plan.cpp, the CPU thread
// for TCP connection control in pp_ctrl.cpp, stats lines and the JSON in
// pp_report.cpp; the per-packet work is in pp_device.hpp's headers (shared by the
// kernels and the CPU thread).
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
#include "pp_run.hpp"
#include "result_schema.hpp"

namespace gnio::pp {

namespace {

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
                  processed_per_queue(r.plan, st, blocks, ctrl_c), static_cast<bool>(r.s->get_port().engine_error()),
                  false);
}

// Waits a slice on every kernel still running, then takes the blocks'
// reports. True when all have returned (or one failed: r.run_err). A block
// that ends waits final_report_wait_ns (100 ms) for its semaphore item to be
// free for the final report: a 10 ms slice leaves that wait ten slices of
// room on a loaded machine (it was 50 ms, two slices).
bool wait_kernels(run_state& r) {
  const auto wait_slice = std::chrono::milliseconds(10);
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
  cli::write_watch write_watch("pp", r.stop);
  for (;;) {
    if (wait_kernels(r)) break;
    write_watch.check(r.s->get_port());
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
      const double dt = std::chrono::duration<double>(now - r.last_line).count();
      r.con.out("{}", stats_line(elapsed, dt, cls, r.prev_cls));
      if (r.jsonl) r.jsonl->line("interval", interval_json(elapsed, dt, cls, r.prev_cls));
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
  o.written = s.get_port().rx_pcap_frames();
  o.write_errno = s.get_port().rx_pcap_errno();

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
  o.inline_bytes = r.inline_bytes;
  for (const auto& c : r.ctxs) o.ctxs.push_back({c->info, c->global, c->rx_ids});
  o.left_out = r.left_out;
  o.ctrl = r.ctrl->c;
  o.synack_sent = r.ctrl->synack_sent;
  o.finack_sent = r.ctrl->finack_sent;
  o.seconds = r.seconds;
  o.filter_pushed_down = r.filter_pushed_down;
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

// The files --jsonl must not be: the port's, --pcap-out's, --json's and --write's.
std::vector<named_file> jsonl_others(const options& opt) {
  std::vector<named_file> others = device_files(opt.port);
  if (!opt.pcap_out.empty()) others.push_back({"--pcap-out ", opt.pcap_out});
  if (!opt.json_path.empty()) others.push_back({"--json ", opt.json_path});
  if (!opt.write.path.empty()) others.push_back({"--write ", opt.write.path});
  return others;
}

// run() without the JSON file: options, the run, and *result (never null)
// filled with everything known, the error too. *json_out is prepared here,
// once the options are accepted, so that a bad --json fails before the run.
int run_steps(const options& opt, std::atomic<bool>* stop, json* result, std::optional<atomic_file>* json_out,
              metrics::server* mx, jsonl::stream* jl) {
  run_state r(opt, stop, result, mx);
  r.jsonl = jl;
  if (const int rc = check_options(opt, &r.cfg, result); rc != 0) return rc;
  if (const int rc = compile_filter_option(r); rc != 0) return rc;
  if (const int rc = prepare_outputs(r, json_out); rc != 0) return rc;
  if (!opt.jsonl_path.empty())
    if (const std::string why = jl->open(opt.jsonl_path, jsonl_others(opt)); !why.empty())
      return bad_option(why, result);
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
  result_schema::stamp(j, result_schema::pp_result);
  std::optional<atomic_file> json_out;
  jsonl::stream jl("pp", result_schema::pp_stream, stop);
  int rc = 1;
  try {
    rc = run_steps(opt, stop, &j, &json_out, mx, &jl);
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
  try {
    // The final report builds the document anew: the stamp goes on last.
    result_schema::stamp(j, result_schema::pp_result);
  } catch (...) {
    // No memory even for that: the document goes out as it is.
  }
  try {
    // The last line is the result as --json has it; the --json file adds
    // how the stream went.
    if (jl.is_open()) {
      jl.final_line(j.dump(-1, ' ', false, json::error_handler_t::replace));
      jl.add_json(j);
    }
  } catch (...) {
    gnio::console::err("pp: --jsonl: the final line could not be written: " + gnio::console::current_exception_text() +
                       "\n");
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
      "pp",
      "GPU packet processing: UDP/DNS, TCP/HTTP, ICMP echo and ARP in a persistent kernel, with an optional "
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
  sub->add_option("--jsonl", opt->jsonl_path,
                  "write one JSON object per line to FILE ('-': stdout, the text then goes to stderr): one per "
                  "stats interval and the final results (docs/results.md)");
  sub->add_option("--pcap-out", opt->pcap_out, "write every transmitted frame to FILE (pcap)");
  gnio::cli::add_write_options(*sub, opt->write);
  sub->add_option("--filter", opt->filter,
                  "only frames that match EXPR (tcpdump syntax, pcap-filter(7)) are processed; the others are "
                  "counted as filtered. Runs in the kernels; on af_packet also on the socket (docs/pp.md, Filters)");
  sub->add_option("--duration", opt->duration,
                  "stop after this long: seconds, or 500ms, 10s, 1m as in gen:duration= (0: when the stream ends, or "
                  "Ctrl-C)")
      ->transform(gnio::cli::duration());
  sub->add_option("--batch", opt->batch, "max packets per recv")
      ->check(gnio::cli::whole(1, 65536))
      ->capture_default_str();
  sub->add_option("--threads", opt->threads,
                  "CUDA threads per block (the pp kernel uses 80 registers a thread, so at most 768)")
      ->check(gnio::cli::whole(32, 768))
      ->capture_default_str();
  sub->add_option("--rx-slot", opt->rx_slot,
                  "bytes per RX buffer slot: the longest frame a slot holds; longer frames are cut and counted as "
                  "truncated (a multiple of 64, up to 1048576; 9216 for 9000-byte jumbo frames)")
      ->check(gnio::cli::slot_bytes())
      ->capture_default_str();
  gnio::cli::add_poll_option(*sub, opt->poll);
  gnio::cli::add_inline_option(*sub, opt->inline_headers);
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
