// SPDX-License-Identifier: Apache-2.0
// flow_count: a run's state and the steps that make it, in order: setup.cpp
// (options, GPUs and port, memory, session, launch), loop.cpp (the loop
// while the kernels run), report.cpp (results, console, JSON, metrics).
// main.cpp's run() calls them; each takes the run_state, fills in its part,
// and returns 0 or the exit status (the error already in the report).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <gnio/gnio.hpp>
#include <gnio/signals.hpp>

#include "app.hpp"
#include "cli.hpp"
#include "expiry.hpp"
#include "flow_count.hpp"
#include "ipfix.hpp"
#include "jsonl.hpp"
#include "launch_report.hpp"
#include "metrics.hpp"

namespace flow_count {
gnio::error launch(gnio::kernel_runner& runner, const gnio::launch_dims& dims, const body& b);
}

namespace flow_count::host {

using json = nlohmann::json;

// The host's side of the table flip (flow_count.hpp's flip_ctl): one per
// GPU context. flip() sends new packets to the other table; poll() says when
// no block writes the table before the flip any more.
struct flipper {
  flow_count::flip_ctl* ctl = nullptr;  // the CPU's address of the cpu_gpu block
  uint32_t blocks = 0;
  uint64_t epoch = 0;                          // new packets go to table[epoch & 1]
  bool pending = false;                        // flipped; the table before is not taken back yet
  std::chrono::steady_clock::time_point at{};  // the last flip, or the start
  uint64_t base[2] = {0, 0};                   // claimed[t] summed over the blocks when table t was last zeroed
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
      const uint64_t a = gnio::device::sys_atomic_ref<uint64_t>(ctl->ack[b]).load(cuda::std::memory_order_seq_cst);
      if (a != flow_count::ack_idle && a < epoch) return false;
    }
    return true;
  }
};

struct options {
  std::string filter;              // --filter: tcpdump syntax
  gnio::cli::write_options write;  // --write: received frames --filter accepts, to pcap files
  std::string port_dev, exec = "auto", gpu_sel, json_path, jsonl_path, pkt_mem_text = "auto", poll = "adaptive";
  uint32_t inline_bytes = 0;  // --inline-headers
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

// One context per selected GPU ("0,1", bus ids, or "host,host" for two host executors).
struct gpu_ctx {
  gnio::gpu g;               // until the session owns it
  gnio::gpu* dev = nullptr;  // the session's, from then on
  std::vector<uint32_t> queue_ids;
  flow_count::body b{};
  gnio::mem_block table[2], tot, ctl, zeros;  // table[1], ctl and zeros only with expiry
  std::vector<flow_count::flow_entry> flows;
  std::vector<flow_count::totals> totals;
  flipper flip;
  std::optional<flow_count::flow_expiry> expiry;
  uint64_t expired_ms = 0;  // the last flow_expiry::expire (ipfix::now_ms)
  size_t streamed = 0;      // expiry->finished() rows whose --jsonl flow line is written
};

// A run's state, filled in step by step. Members go in reverse: the session
// before the port it took and the contexts whose memory it holds.
struct run_state {
  run_state(const options& opt, gnio::stop_signals& sg, gnio::app::run_report& r, gnio::metrics::server* m,
            gnio::ipfix::session& ip)
      : o(opt), sig(sg), rep(r), j(r.j()), mx(m), ipfix(ip) {}
  run_state(const run_state&) = delete;
  run_state& operator=(const run_state&) = delete;

  const options& o;
  gnio::stop_signals& sig;
  gnio::app::run_report& rep;
  json& j;
  gnio::metrics::server* mx;  // may be null
  gnio::ipfix::session& ipfix;
  gnio::jsonl::stream* jsonl = nullptr;  // --jsonl, when given

  // From the options (begin).
  std::string gpu_sel;
  gnio::packet_filter filter;  // --filter compiled and verified; no instructions without one
  bool filter_pushed_down = false;
  gnio::mem_type pkt_mem = gnio::mem_type::automatic;
  gnio::launch_dims launch_dims;
  bool per_burst = false;
  // Expiry (expiry.hpp): two tables per GPU, flipped every flip_s or when the
  // one in use is half full; the host table keeps the flows between. Each
  // flip copies a table to the host: every half idle timeout, or every
  // --ipfix-scan-interval when exporting (the records' time resolution).
  bool expiry = false;
  uint32_t tables = 1;
  uint64_t idle_ms = 0;
  double flip_s = 0;
  uint64_t flip_ms = 0;  // not quite flip_s: a time-driven flip is taken back a little after it is made

  // GPUs, port, session.
  std::vector<std::unique_ptr<gpu_ctx>> ctxs;
  std::optional<gnio::port> p;  // until the session owns it
  std::optional<gnio::session> s;

  // The loop.
  std::chrono::steady_clock::time_point t0, last;
  uint64_t last_delivered = 0;
  bool stopped_early = false;
  gnio::error run_err;
};

// setup.cpp
int begin(run_state& st);
int open_gpus_and_port(run_state& st);
int check_memory(run_state& st);
int make_session(run_state& st);
int alloc_memory(run_state& st);
int launch_kernels(run_state& st);
// loop.cpp
void publish_metrics(run_state& st, const gnio::port_stats& ps, const std::vector<uint64_t>& taken,
                     const std::vector<uint64_t>& filtered, bool engine_failed, const flow_count::totals* sum,
                     size_t num_flows, uint64_t flows_expired, uint64_t table_flips);
gnio::error read_totals(gpu_ctx& c);
uint64_t active_slots(const run_state& st, const gpu_ctx& c, bool running);
void run_loop(run_state& st);
// report.cpp: one flow row as the JSON and the --jsonl flow lines have it.
json flow_row_json(const flow_count::flow_row& f);
// The --jsonl flow lines of the context's flows that ended since the last call.
void stream_finished(const run_state& st, gpu_ctx& c);
// report.cpp: everything after the loop. flow_rows (null without --json)
// receives the JSON array of per-flow rows as text.
int finish(run_state& st, std::string* flow_rows);

}  // namespace flow_count::host
