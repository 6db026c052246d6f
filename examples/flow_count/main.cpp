// SPDX-License-Identifier: Apache-2.0
// flow_count: the classic first gnio program. One GPU (or the host executor),
// GPU-visible RX queues on any port, a persistent kernel counting packets and
// bytes per 5-tuple flow.
//
//   flow_count --port pcap:file=tests/data/http.pcap
//   flow_count --port gen:size=64,flows=1024,count=10000000 --exec cuda --queues 4 --json out.json
//
// This file: the options and main(); run() calls the steps of run.hpp
// (setup.cpp, loop.cpp, report.cpp).
#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <gnio/gnio.hpp>
#include <gnio/atomic_file.hpp>
#include <gnio/console.hpp>
#include <gnio/signals.hpp>

#include "app.hpp"
#include "cli.hpp"
#include "ipfix.hpp"
#include "jsonl.hpp"
#include "metrics.hpp"
#include "run.hpp"

namespace {

using json = nlohmann::json;
using flow_count::host::options;
using gnio::app::warn;

// The run itself, from opening the GPUs to the lifecycle in reverse, in the
// steps of run.hpp. Fills the report's JSON with everything known (the error
// too, when a step fails) and returns the exit status. flow_rows (null
// without --json) receives the JSON array of per-flow rows as text, kept
// apart from the JSON: run_report::write_json adds them last.
int run(const options& o, gnio::stop_signals& sig, gnio::app::run_report& rep, gnio::metrics::server* mx,
        gnio::ipfix::session& ipfix, std::string* flow_rows, gnio::jsonl::stream* jl) {
  namespace h = flow_count::host;
  h::run_state st(o, sig, rep, mx, ipfix);
  st.jsonl = jl->is_open() ? jl : nullptr;
  for (auto* step :
       {h::begin, h::open_gpus_and_port, h::check_memory, h::make_session, h::alloc_memory, h::launch_kernels})
    if (const int rc = step(st); rc != 0) return rc;
  h::run_loop(st);
  return h::finish(st, flow_rows);
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
  gnio::app::run_report rep("flow_count", j, gnio::result_schema::flow_count_result);
  std::optional<gnio::atomic_file> json_out;
  gnio::jsonl::stream jl("flow_count", gnio::result_schema::flow_count_stream, sig.flag());
  std::string flow_rows;                      // the JSON's flow_rows, as text (run, run_report::write_json)
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
    gnio::cli::add_poll_option(app, o.poll);
    gnio::cli::add_inline_option(app, o.inline_bytes);
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
        app.add_option(
               "--flow-idle-timeout", o.flow_idle_s,
               "a flow with no packet for this long ends and its table slot is given back, as does a TCP flow "
               "that sent FIN or RST once half this (or --ipfix-scan-interval when exporting) passes without its "
               "packets (seconds, or 500ms, 10s, 1m; "
               "default: --ipfix-idle-timeout, 15 s; 0: flows are kept for the whole run and a full table "
               "stays full)")
            ->transform(gnio::cli::duration());
    gnio::cli::add_write_options(app, o.write);
    app.add_option("--filter", o.filter,
                   "count only packets that match EXPR (tcpdump syntax, pcap-filter(7)); the others are counted as "
                   "filtered. Runs in the kernels; on af_packet also on the socket (docs/pp.md, Filters)");
    gnio::ipfix::add_options(app, o.ipfix);
    auto* json_opt =
        app.add_option("--json", o.json_path, "write the results as JSON to FILE (also when the run fails)");
    app.add_option("--jsonl", o.jsonl_path,
                   "write one JSON object per line to FILE ('-': stdout, the text then goes to stderr): one per "
                   "--stats-interval, one per flow as it ends, and the results (docs/results.md)");
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
    if (const std::string why = gnio::cli::check_outputs(o.json_path, o.jsonl_path, o.write); !why.empty()) {
      warn("flow_count: {}\n", why);
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
    if (!o.jsonl_path.empty())
      if (const std::string why = jl.open(o.jsonl_path, jsonl_others(o)); !why.empty()) {
        warn("flow_count: {}\n", why);
        return gnio::console::finish("flow_count", 2);
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
    rc = run(o, sig, rep, mx.get(), *ipfix, json_out || jl.is_open() ? &flow_rows : nullptr, &jl);
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
  if (jl.is_open()) {
    try {
      // The last line is the result as --json has it; the --json file adds how the stream went.
      jl.final_line(rep.text(-1, "flow_rows", flow_rows));
      jl.add_json(j);
    } catch (...) {
      gnio::console::err("flow_count: --jsonl: the final line could not be written: " +
                         gnio::console::current_exception_text() + "\n");
    }
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
