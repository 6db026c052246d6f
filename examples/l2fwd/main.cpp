// SPDX-License-Identifier: Apache-2.0
// l2fwd: receive on a port, swap the Ethernet addresses in place, send the
// frames back out of the same port from their RX slots, in a persistent kernel
// (or on the host executor). The gnio counterpart of DPDK's l2fwd and of
// l2fwd-nv (DPDK + gpudev).
//
//   l2fwd --port pcap:file=tests/data/http.pcap,tx=out.pcap
//   l2fwd --port gen:size=64,count=20000000 --gpu 0 --queues 4 --json out.json
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <gnio/gnio.hpp>
#include <gnio/atomic_file.hpp>
#include <gnio/console.hpp>
#include <gnio/signals.hpp>

#include "app.hpp"
#include "cli.hpp"
#include "jsonl.hpp"
#include "metrics.hpp"
#include "launch_report.hpp"
#include "l2fwd.hpp"

namespace l2fwd {
gnio::error launch(gnio::kernel_runner& r, const gnio::launch_dims& d, const body& b);
}

namespace {

using json = nlohmann::json;
using gnio::app::say;
using gnio::app::warn;

struct options {
  std::string port_dev, gpu_sel = "auto", json_path, jsonl_path, poll = "adaptive";
  // Large batches pay for the wait on each batch's transmission (see the README).
  uint32_t queues = 1, ring = 4096, batch = 1024, threads = 512;
  uint32_t rx_slot = gnio::cli::default_rx_slot;
  double duration_s = 0, interval_s = 1.0;
  bool no_swap = false;
  std::string filter;              // --filter: tcpdump syntax
  gnio::cli::write_options write;  // --write: received frames --filter accepts, to pcap files
  gnio::cli::launch_options launch;
  gnio::metrics::options metrics;
  std::string command;
};

// A port l2fwd can use receives and transmits; the refusal names what is
// missing (and, for pcap, the device argument that gives it). Empty when fine.
std::string port_refusal(const std::string& port_dev, const gnio::port_caps& caps) {
  if (caps.rx && caps.tx) return {};
  const bool pcap = port_dev.substr(0, port_dev.find(':')) == "pcap";
  const std::string missing = !caps.rx && !caps.tx ? "cannot receive or transmit"
                              : !caps.rx           ? "cannot receive"
                                                   : "cannot transmit";
  const std::string hint = !pcap                  ? ""
                           : !caps.rx && !caps.tx ? " (pcap needs file=CAPTURE to read and tx=FILE to write)"
                           : !caps.rx             ? " (pcap needs file=CAPTURE to read)"
                                                  : " (pcap needs tx=FILE to write)";
  return fmt::format("port {} {}: l2fwd must receive and transmit{}", gnio::printable(port_dev), missing, hint);
}

// The Prometheus text (docs/monitoring.md): the port's families with what
// each queue's kernel took (its published consumer index while running, the
// kernel's own count at the end) and refused with --filter (at the end), and
// l2fwd's totals at the end.
void publish_metrics(gnio::metrics::server& mx, const options& o, const gnio::gpu_info& info,
                     const gnio::port_stats& st, const std::vector<uint64_t>& taken,
                     const std::vector<uint64_t>& filtered, bool engine_failed, const l2fwd::totals* sum) {
  gnio::metrics::text t;
  const std::string port = gnio::metrics::port_label(o.port_dev);
  gnio::metrics::add_port(t, port, st, std::vector<gnio::metrics::rxq_label>(o.queues, {"all", "0"}), taken, filtered,
                          engine_failed);
  gnio::metrics::add_gpu_info_family(t);
  gnio::metrics::add_gpu_info(t, "0", info.name, info.bus_id, gnio::to_string(info.executor));
  if (sum) {  // the kernel keeps these until it returns
    const gnio::metrics::labels p{{"port", port}};
    t.family("gnio_l2fwd_forwarded_packets_total", "counter",
             "Frames the kernel handed to the TX ring to be sent back out (the JSON's forwarded).")
        .sample(p, sum->forwarded);
    t.family("gnio_l2fwd_tx_failed_packets_total", "counter",
             "Frames the kernel dropped because the TX ring was full (the JSON's tx_failed).")
        .sample(p, sum->tx_failed);
  }
  mx.publish(t, sum != nullptr);
}

// The run: options -> port and queues -> session -> loop -> report. Fills
// the report's JSON with everything known (the error too, when a step
// fails) and returns the exit status. The session tears everything down in
// reverse when it goes, or keeps it whole when a kernel would not stop.
int run(const options& o, gnio::stop_signals& sig, gnio::app::run_report& rep, gnio::metrics::server* mx,
        gnio::jsonl::stream& jl) {
  json& j = rep.j();
  const uint32_t queues = o.queues;
  j["command"] = o.command;
  j["port"] = o.port_dev;
  j["poll"] = o.poll;
  j["queues"] = queues;
  gnio::launch_dims dims;
  gnio::cli::apply(o.launch, dims);
  const bool per_burst = dims.mode != gnio::device::launch_mode::persistent;
  j["launch"] = o.launch.mode;
  if (per_burst) {
    j["burst"] = o.launch.burst;
    j["burst_timeout_us"] = o.launch.burst_timeout_us;
  }
  j["filter"] = o.filter.empty() ? json(nullptr) : json(o.filter);
  gnio::packet_filter filter;
  if (!o.filter.empty()) {
    auto f = gnio::compile_filter(o.filter);
    if (!f) return rep.refuse("--filter: " + f.err().message(), "invalid_value", "options");
    filter = std::move(*f);
  }
  if (o.duration_s > 0) (void)sig.arm_deadline(o.duration_s);

  auto g = gnio::gpu::open(o.gpu_sel);
  if (!g) return rep.fail(g.err(), "gpu");
  const gnio::gpu_info info = g->info();
  j["executor"] = std::string(gnio::to_string(info.executor));
  j["device"] = info.name;
  say("l2fwd: executor {} on {}{}\n", gnio::to_string(info.executor), info.name,
      info.bus_id.empty() ? "" : " (" + info.bus_id + ")");
  // --filter on the port's sockets too, where its backend can (af_packet).
  bool pushed = false;
  std::string why;
  const std::string dev =
      gnio::cli::add_rx_pcap(gnio::cli::push_filter_down(o.port_dev, o.filter, &pushed), o.write, &why);
  if (dev.empty()) return rep.refuse(why, "invalid_value", "options");
  auto p = gnio::port::open(*g, dev);
  j["filter_pushed_down"] = pushed;
  if (!p && sig.requested()) return rep.stopped_while(sig, "opening the port", p.err());
  if (!p) return rep.fail(p.err(), "port");
  if (!o.write.path.empty())
    if (auto e = p->set_rx_pcap_filter(filter.insns); e) return rep.fail(e, "port");
  if (const std::string why = port_refusal(o.port_dev, p->caps()); !why.empty())
    return rep.fail(gnio::error(gnio::status::not_supported, why), "port");
  // Counted before it is taken (F19): every ring slot is touched, so rings
  // that cannot be backed are refused here rather than by the OOM killer.
  if (const std::string why =
          gnio::cli::memory_refusal(fmt::format("--ring {} on {} RX and {} TX queue(s)", o.ring, queues, queues),
                                    uint64_t{queues} * (gnio::cli::rx_ring_bytes(o.ring, o.rx_slot) +
                                                        gnio::cli::tx_ring_bytes(o.ring, o.rx_slot)),
                                    gnio::cli::available_memory());
      !why.empty())
    return rep.refuse(why, "no_memory", "options");

  l2fwd::body b{};
  b.num_queues = queues;
  // Launched per burst, a launch takes at most a burst per queue.
  b.batch = per_burst ? std::min(o.batch, o.launch.burst) : o.batch;
  b.swap_macs = o.no_swap ? 0 : 1;
  b.tx_timeout_ns = 1'000'000'000;
  for (uint32_t i = 0; i < queues; ++i) {
    gnio::rxq_config rc;
    rc.num_descs = o.ring;
    rc.stride = o.rx_slot;
    auto rq = p->create_rxq(rc);
    if (!rq) return rep.fail(rq.err(), "create_rxq");
    gnio::txq_config tc;
    tc.num_descs = o.ring;
    tc.stride = o.rx_slot;  // a frame that fits an RX slot fits its TX slot
    auto tq = p->create_txq(tc);
    if (!tq) return rep.fail(tq.err(), "create_txq");
    b.rx[i] = *p->rxq(*rq);
    b.tx[i] = *p->txq(*tq);
  }
  std::vector<gnio::gpu> gpus;
  gpus.push_back(std::move(g).value());
  auto s = gnio::session::create(std::move(gpus), std::move(p).value());
  if (!s) return rep.fail(s.err(), "session");
  auto tot = s->alloc<l2fwd::totals>(0, queues, gnio::mem_type::gpu);
  if (!tot) return rep.fail(tot.err(), "totals");
  b.tot = tot->exec;
  if (!filter.insns.empty()) {
    auto prog = s->alloc<gnio::device::bpf_insn>(0, filter.insns.size(), gnio::mem_type::gpu);
    if (!prog) return rep.fail(prog.err(), "filter program");
    if (auto e = s->write(*prog, std::span<const gnio::device::bpf_insn>(filter.insns)); e)
      return rep.fail(e, "filter program");
    b.filter = {prog->exec, static_cast<uint32_t>(filter.insns.size())};
  }
  // --write FIFO: a reader first, so the start does not wait on the FIFO.
  gnio::cli::fifo_hold fifo;
  if (const std::string why = gnio::cli::wait_for_reader(
          o.write.path, [&sig] { return sig.requested(); }, &fifo);
      !why.empty()) {
    const gnio::error e(sig.requested() ? gnio::status::shutdown : gnio::status::io_failed, why);
    return sig.requested() ? rep.stopped_while(sig, "waiting for --write's reader", e) : rep.fail(e, "write");
  }
  if (auto e = s->start(); e)
    return sig.requested() ? rep.stopped_while(sig, "starting the port", e) : rep.fail(e, "start");
  fifo.reset();

  dims.blocks = queues;
  dims.threads = o.threads;
  dims.poll = gnio::cli::poll_policy_of(o.poll);
  const auto t0 = std::chrono::steady_clock::now();
  if (o.duration_s > 0) (void)sig.arm_deadline(o.duration_s);  // the run itself gets the whole duration
  if (auto e = l2fwd::launch(s->runner(0), dims, b); e) return rep.fail(e, "launch");

  gnio::app::every progress(o.interval_s, t0);
  uint64_t last_tx = 0;
  gnio::cli::write_watch write_watch("l2fwd", sig.flag());
  const gnio::app::kernels_end end = gnio::app::run_kernels(*s, sig, t0, o.duration_s, [&](double elapsed) {
    write_watch.check(s->get_port());
    if (mx && mx->due()) {
      const auto st = s->stats();
      std::vector<uint64_t> processed;
      for (const auto& q : st.rxq) processed.push_back(std::min(q.consumed, q.delivered));
      publish_metrics(*mx, o, info, st, processed, {}, static_cast<bool>(s->get_port().engine_error()), nullptr);
    }
    if (double dt = 0; progress.due(&dt)) {
      const auto st = s->stats();
      const double mpps = (st.tx_frames - last_tx) / dt / 1e6;
      warn("l2fwd: {:.1f} s: {} received, {} sent ({:.2f} Mpps), {} missed\n", elapsed, st.rx_delivered, st.tx_frames,
           mpps, st.rx_missed);
      if (jl.is_open())
        jl.line("interval", {{"t", elapsed},
                             {"dt", dt},
                             {"received", st.rx_delivered},
                             {"sent", st.tx_frames},
                             {"mpps", mpps},
                             {"missed", st.rx_missed}});
      last_tx = st.tx_frames;
    }
  });
  const double seconds = end.seconds;
  j["seconds"] = seconds;
  j["stopped_early"] = end.stopped_early;
  const gnio::launch_stats ls = s->runner(0).stats();
  j["launches"] = ls.launches;
  if (end.err) {
    // What the port counted so far goes into the JSON; a kernel that did
    // not stop keeps the session (and everything it may touch) alive.
    const auto st = s->stats();
    j["received"] = st.rx_frames;
    j["missed"] = st.rx_missed;
    j["tx_frames"] = st.tx_frames;
    j["tx_errors"] = st.tx_errors;
    return rep.fail(end.err, "kernel");
  }

  // A port that fails to stop (a TX capture that could not be written) has
  // still counted everything: the error is reported and the results kept.
  int rc = 0;
  if (auto e = s->stop_port(); e) rc = rep.fail(e, "stop");
  const auto st = s->stats();
  auto per = s->read(*tot);
  if (!per) return rep.fail(per.err(), "read totals");
  l2fwd::totals sum{};
  std::vector<uint64_t> processed, filtered;
  for (const auto& t : *per) {
    sum.packets += t.packets;
    sum.bytes += t.bytes;
    sum.forwarded += t.forwarded;
    sum.tx_failed += t.tx_failed;
    sum.filtered += t.filtered;
    // A queue's block took its packets and the frames --filter refused.
    processed.push_back(t.packets + t.filtered);
    filtered.push_back(t.filtered);
  }
  const gnio::accounting acc = s->account(processed);
  const auto engine_err = s->get_port().engine_error();
  say("l2fwd: {} frames received, {} forwarded ({} sent by the port, {} TX errors), {} dropped on a full TX ring, in "
      "{:.3f} s ({:.3f} Mpps)\n",
      sum.packets, sum.forwarded, st.tx_frames, st.tx_errors, sum.tx_failed, seconds,
      seconds > 0 ? st.tx_frames / seconds / 1e6 : 0.0);
  say("{}", rep.accounting_line(acc, o.filter.empty() ? std::nullopt : std::optional<uint64_t>(sum.filtered)));
  if (!o.write.path.empty()) {
    const uint64_t written = s->get_port().rx_pcap_frames();
    say("l2fwd: wrote {} frame(s) to {}\n", written, gnio::printable(o.write.path));
    j["written"] = written;
    if (const int e = s->get_port().rx_pcap_errno(); e != 0) j["write_error"] = std::strerror(e);
  }
  if (per_burst)
    say("l2fwd: launched {}: {} launches, {:.1f} frames per launch, {:.2f} us per launch\n", o.launch.mode, ls.launches,
        ls.launches ? double(sum.packets) / ls.launches : 0.0, gnio::cli::launch_us_mean(ls));
  say("l2fwd: engine {:.1f} ns/frame over {} lane(s)\n", gnio::engine_ns_per_frame(st), st.lanes.size());
  if (st.rx_dropped)
    say("l2fwd: the source dropped {} frame(s) before the engine saw them (a kernel or device ring was full; not in "
        "received)\n",
        st.rx_dropped);
  uint64_t truncated = 0;
  for (const auto& q : st.rxq) truncated += q.truncated;
  if (const std::string w = gnio::cli::truncation_warning("l2fwd", truncated, o.rx_slot); !w.empty()) warn("{}", w);

  j["packets"] = sum.packets;
  j["bytes"] = sum.bytes;
  j["truncated"] = truncated;
  j["rx_slot"] = o.rx_slot;
  j["forwarded"] = sum.forwarded;
  j["tx_failed"] = sum.tx_failed;
  j["tx_frames"] = st.tx_frames;
  j["tx_errors"] = st.tx_errors;
  j["source_dropped"] = st.rx_dropped;
  j["mpps"] = seconds > 0 ? st.tx_frames / seconds / 1e6 : 0.0;
  gnio::cli::add_launch_json(j, ls, sum.packets, seconds, per_burst);
  j["engine_error"] = engine_err ? engine_err.what() : "";
  j["engine"] = gnio::app::engine_json(st);
  if (mx) publish_metrics(*mx, o, info, st, processed, filtered, static_cast<bool>(engine_err), &sum);

  // Frames lost on the way out fail the run: a forwarder that drops is not
  // one that worked.
  if (st.tx_errors > 0 || sum.tx_failed > 0) {
    const std::string msg = fmt::format(
        "{} frame(s) lost on TX: {} the port could not send (tx_errors; see the warnings above), {} dropped on a full "
        "TX ring (tx_failed)",
        st.tx_errors + sum.tx_failed, st.tx_errors, sum.tx_failed);
    warn("l2fwd: {}\n", msg);
    rep.set_error(msg, "io_failed", "transmit");
    rc = 1;
  }
  if (!rep.add_accounting(acc, "frame", sum.filtered)) rc = 1;
  if (engine_err) {
    warn("l2fwd: the port's engine failed: {}\n", engine_err.what());
    rep.set_error(engine_err.what(), gnio::to_string(engine_err.code()), "engine");
    rc = 1;
  }
  return rc;
}

// The files --jsonl must not be: the port's, --json's and --write's.
std::vector<gnio::named_file> jsonl_others(const options& o) {
  std::vector<gnio::named_file> others = gnio::device_files(o.port_dev);
  if (!o.json_path.empty()) others.push_back({"--json ", o.json_path});
  if (!o.write.path.empty()) others.push_back({"--write ", o.write.path});
  return others;
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
  gnio::app::run_report rep("l2fwd", j, gnio::result_schema::l2fwd_result);
  std::optional<gnio::atomic_file> json_out;
  gnio::jsonl::stream jl("l2fwd", gnio::result_schema::l2fwd_stream, sig.flag());
  std::unique_ptr<gnio::metrics::server> mx;  // --metrics
  int rc = 0;
  try {
    CLI::App app{
        "l2fwd: swap the Ethernet addresses of every received frame and send it back out of the same port, "
        "from a persistent GPU kernel (or the host executor)"};
    options o;
    app.add_option("--port", o.port_dev,
                   "device string of a port that receives and transmits, e.g. "
                   "pcap:file=in.pcap,tx=out.pcap, pair:name=a, gen:size=64,count=1000000")
        ->required();
    app.add_option("--gpu", o.gpu_sel,
                   "CUDA ordinal, PCIe bus id, host, or auto (the first GPU, else the host executor)")
        ->capture_default_str();
    app.add_option("--queues", o.queues, "RX queues, each with its TX queue and kernel block")
        ->check(gnio::cli::whole(1, l2fwd::max_queues))
        ->capture_default_str();
    app.add_option("--ring", o.ring, "descriptors per RX and TX queue (power of two)")
        ->check(gnio::cli::power_of_two(2, 1u << 31))
        ->capture_default_str();
    app.add_option("--batch", o.batch, "max frames per recv (per-burst and graph: at most --burst)")
        ->check(gnio::cli::whole(1, 65536))
        ->capture_default_str();
    gnio::cli::add_launch_options(app, o.launch);
    gnio::cli::add_poll_option(app, o.poll);
    app.add_option("--threads", o.threads, "CUDA threads per block")
        ->check(gnio::cli::whole(32, 1024))
        ->capture_default_str();
    app.add_option("--rx-slot", o.rx_slot,
                   "bytes per RX (and TX) buffer slot: the longest frame a slot holds; longer frames are cut and "
                   "counted as truncated (a multiple of 64, up to 1048576; 9216 for 9000-byte jumbo frames)")
        ->check(gnio::cli::slot_bytes())
        ->capture_default_str();
    app.add_flag("--no-mac-swap", o.no_swap, "forward frames unchanged");
    app.add_option("--duration", o.duration_s,
                   "stop after this long: seconds, or 500ms, 10s, 1m as in gen:duration= (0: when the port's stream "
                   "ends, or Ctrl-C)")
        ->transform(gnio::cli::duration());
    gnio::cli::add_write_options(app, o.write);
    app.add_option("--filter", o.filter,
                   "forward only frames that match EXPR (tcpdump syntax, pcap-filter(7)); the others are counted as "
                   "filtered and not sent. Runs in the kernel; on af_packet also on the socket (docs/pp.md, Filters)");
    app.add_option("--stats-interval", o.interval_s,
                   "time between progress lines on stderr: seconds, or 500ms, 10s, 1m as --duration (0: none)")
        ->transform(gnio::cli::duration())
        ->capture_default_str();
    auto* json_opt =
        app.add_option("--json", o.json_path, "write the results as JSON to FILE (also when the run fails)");
    app.add_option("--jsonl", o.jsonl_path,
                   "write one JSON object per line to FILE ('-': stdout, the text then goes to stderr): one per "
                   "--stats-interval and the results (docs/results.md)");
    gnio::metrics::add_options(app, o.metrics);
    gnio::cli::add_version_flag(app, "l2fwd");
    // Usage errors exit with 2, --help with 0.
    if (auto usage = gnio::cli::parse(app, argc, argv)) return gnio::console::finish("l2fwd", *usage);
    for (int i = 0; i < argc; ++i) o.command += (i ? " " : "") + std::string(argv[i]);
    if (o.launch.mode != "persistent" && o.launch.burst > o.ring) {
      warn("l2fwd: --burst {} is larger than --ring {}: a burst that big can never be ready in one queue\n",
           o.launch.burst, o.ring);
      return gnio::console::finish("l2fwd", 2);
    }
    if (const std::string why = gnio::cli::check_outputs(o.json_path, o.jsonl_path, o.write); !why.empty()) {
      warn("l2fwd: {}\n", why);
      return gnio::console::finish("l2fwd", 2);
    }

    // The JSON path is checked before anything runs: it must be writable, and
    // not a file the port reads or writes.
    if (json_opt->count() > 0) {
      auto f = gnio::prepare_output("--json", o.json_path, gnio::device_files(o.port_dev));
      if (!f) {
        warn("l2fwd: {}\n", f.err().message());
        return gnio::console::finish("l2fwd", 2);
      }
      json_out = std::move(*f);
    }
    if (!o.jsonl_path.empty())
      if (const std::string why = jl.open(o.jsonl_path, jsonl_others(o)); !why.empty()) {
        warn("l2fwd: {}\n", why);
        return gnio::console::finish("l2fwd", 2);
      }
    // --metrics: bound before the run, so that a bad address or a port in use is a usage error.
    std::string why;
    mx = gnio::metrics::server::start(o.metrics, "l2fwd", &why);
    if (!why.empty()) {
      warn("l2fwd: {}\n", why);
      return gnio::console::finish("l2fwd", 2);
    }
    if (mx) warn("l2fwd: metrics on http://{}/metrics\n", mx->address());
    rc = run(o, sig, rep, mx.get(), jl);
  } catch (...) {
    // Reported with its type; the JSON is still written, below.
    const std::string what = gnio::console::current_exception_text();
    gnio::console::err("l2fwd: unexpected error: " + what + "\n");
    try {
      rep.set_error(what, "unexpected", "exception");
    } catch (...) {
      // No memory even for that: the message above stands alone.
    }
    rc = 1;
  }
  if (jl.is_open()) {
    try {
      // The last line is the result as --json has it; the --json file adds how the stream went.
      jl.final_line(rep.text(-1));
      jl.add_json(j);
    } catch (...) {
      gnio::console::err(
          "l2fwd: --jsonl: the final line could not be written: " + gnio::console::current_exception_text() + "\n");
    }
  }
  if (json_out) {
    try {
      rc = rep.write_json(*json_out, rc);
    } catch (...) {
      gnio::console::err("l2fwd: --json: could not be written: " + gnio::console::current_exception_text() + "\n");
      rc = rc == 0 ? 1 : rc;
    }
  }
  // --metrics-linger: the final values stay up for a scrape; a signal ends it.
  if (mx) mx->linger([&sig] { return sig.signal() != 0; });
  return gnio::console::finish("l2fwd", rc);
}
