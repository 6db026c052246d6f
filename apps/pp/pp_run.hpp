// SPDX-License-Identifier: Apache-2.0
// gnio pp: a run's state and the steps that set it up (pp_setup.cpp), up to
// the kernels' launch; pp_app.cpp runs the loop and reports. Internal to
// gnio_pp: each step takes the run_state, fills in its part, and returns 0
// or the exit status (the error already reported into *result).
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "jsonl.hpp"

#include <gnio/atomic_file.hpp>
#include <gnio/gnio.hpp>

#include "ipfix.hpp"
#include "metrics.hpp"
#include "pp.hpp"
#include "pp_app.hpp"
#include "pp_ctrl.hpp"
#include "pp_plan.hpp"
#include "pp_report.hpp"

namespace gnio::pp {

using clock_type = std::chrono::steady_clock;

inline constexpr auto k_stop_deadline = std::chrono::seconds(5);

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
  std::atomic<bool>* stop;         // may be null
  json* result;                    // never null
  metrics::server* mx;             // may be null
  jsonl::stream* jsonl = nullptr;  // --jsonl, when given
  const console con;
  app_config cfg{};
  std::optional<ipfix::session> ipx;

  // GPUs, port and plan.
  std::vector<std::unique_ptr<gpu_ctx>> ctxs;
  std::optional<port> p;      // until the session owns it
  std::string used_dev;       // the device string the port was opened with
  uint32_t inline_bytes = 0;  // the RX queues' inline headers (--inline-headers, resolved)
  packet_filter filter;       // --filter, compiled and verified (no instructions without one)
  bool filter_pushed_down = false;
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
[[nodiscard]] int prepare_outputs(run_state& r, std::optional<atomic_file>* json_out);
// --filter through libpcap and the verifier into r.filter; a bad expression
// is a usage error (2) that names it and libpcap's message.
[[nodiscard]] int compile_filter_option(run_state& r);
// The GPU contexts (--gpu) and the port in the first; the GPUs that cannot
// run the kernels for this port are left out (r.left_out).
[[nodiscard]] int open_gpus_and_port(run_state& r);
// The plan (pp_plan.hpp), the kernel bodies' settings, and the memory check.
[[nodiscard]] int plan_run(run_state& r);
// RX queues in the plan's order, TX queues, steering.
[[nodiscard]] int create_queues(run_state& r);
// The session takes the GPUs and the port.
[[nodiscard]] int make_session(run_state& r);
// Executor memory and a semaphore for every context.
[[nodiscard]] int alloc_memory(run_state& r);
// The CPU thread's queues (--http-server), and the run's shape on the console.
[[nodiscard]] int setup_ctrl(run_state& r);
// Starts the session, the CPU thread and every context's kernel; r.t0.
[[nodiscard]] int start_run(run_state& r);

}  // namespace gnio::pp
