// SPDX-License-Identifier: Apache-2.0
// gnio pp: what a run reports. Console lines (the stats line while running,
// the summary at the end), errors with their hint, the --metrics families,
// and the final JSON (docs/pp.md "JSON"; schema docs/schema/pp.schema.json).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <gnio/console.hpp>
#include <gnio/gnio.hpp>

#include "ipfix.hpp"
#include "metrics.hpp"
#include "pp.hpp"
#include "pp_app.hpp"
#include "pp_plan.hpp"

namespace gnio::pp {

using json = nlohmann::json;

// Through gnio::console: a write that fails is remembered and reported
// once at the end of the program, never thrown. stdout is flushed after
// every line, so a live run's lines show up as they come.
struct console {
  bool quiet = false;
  template <class... A>
  void out(fmt::format_string<A...> f, A&&... a) const {
    if (!quiet) {
      gnio::console::out(fmt::format(f, std::forward<A>(a)...));
      (void)gnio::console::flush();
    }
  }
};

template <class... A>
void warn(fmt::format_string<A...> f, A&&... a) {
  gnio::console::err(fmt::format(f, std::forward<A>(a)...));
}

// The result names the first failure: its message, status and step.
void set_error(json* result, const std::string& message, std::string_view status, std::string_view step);
// "pp: STEP: name: message" plus the status's layer and next step, as
// flow_count prints them. Errors go to stderr even when quiet. Returns 1.
int report_error(const error& e, std::string_view step, json* result);
// A usage error: the message, and exit status 2.
int bad_option(const std::string& what, json* result);

[[nodiscard]] std::string ip_text(uint32_t host_order);
[[nodiscard]] std::string mac_text(const uint8_t m[6]);

// The counters by number, in GNIO_PP_COUNTERS order.
extern const char* const k_counter_names[num_counters];
[[nodiscard]] uint64_t& at(counters& c, uint32_t i);
[[nodiscard]] uint64_t at(const counters& c, uint32_t i);
void add_into(counters& dst, const counters& src);
[[nodiscard]] json counters_json(const counters& c);

// One stats line: per class, packets and Gb/s since prev (dt seconds ago).
[[nodiscard]] std::string stats_line(double t, double dt, const counters cls[4], const counters prev[4]);
// The same figures as members of a --jsonl interval line (t, dt, and per
// class udp, tcp, icmp, arp: packets so far, gbps over dt, its counters).
[[nodiscard]] json interval_json(double t, double dt, const counters cls[4], const counters prev[4]);

// What each RX queue's consumer took from it: its block's packets and
// filtered frames, or the CPU thread's (ctrl) for the TCP control queue;
// st.rxq.size() entries.
[[nodiscard]] std::vector<uint64_t> processed_per_queue(const pp_plan& plan, const port_stats& st,
                                                        const std::vector<counters>& per_block, const counters& ctrl);

// --metrics: what /metrics serves, from the blocks' counters and the CPU
// thread's (ctrl_c, may be null), the port's counters and each queue's
// processed frames; final marks the values --metrics-linger keeps serving.
struct metrics_input {
  const options* opt = nullptr;
  const pp_plan* plan = nullptr;
  std::vector<gpu_info> infos;  // per context
  uint64_t reports = 0;         // semaphore reports read so far
};
void publish_metrics(metrics::server& mx, const metrics_input& in, const std::vector<counters>& per_block,
                     const counters* ctrl_c, const port_stats& st, const std::vector<uint64_t>& processed_q,
                     bool engine_failed, bool final);

// One GPU context, as the final report shows it.
struct ctx_report {
  gpu_info info;
  std::vector<uint32_t> blocks;  // the app's block numbers
  std::vector<uint32_t> rx_ids;  // the port's RX queues its kernel consumed
};

// Everything the end of a run reports from: read back after every kernel
// returned and the port stopped.
struct run_outcome {
  const options* opt = nullptr;
  const pp_plan* plan = nullptr;
  app_config cfg{};
  std::string used_dev;  // the device string the port was opened with
  uint32_t inline_bytes = 0;
  std::vector<ctx_report> ctxs;
  json left_out = json::array();
  port_stats st;
  error engine_err;
  std::vector<counters> per_block;  // by block number, from the counter memory
  counters ctrl{};                  // the CPU thread's
  uint64_t synack_sent = 0, finack_sent = 0;
  // Conversation and DNS tables: one per context, then the CPU thread's.
  std::vector<std::vector<device::flow_entry>> conv_tables;
  std::vector<std::vector<dns_entry>> dns_tables;
  double seconds = 0;
  double since_last_line = 0;       // seconds since the last stats line
  bool filter_pushed_down = false;  // --filter was attached to the port's socket too
  uint64_t written = 0;             // --write: frames written to the file
  int write_errno = 0;              // --write: the write that stopped the copy (EPIPE: the reader went away)
  counters prev_cls[4]{};           // the classes' totals that line showed
  bool stopped_early = false;
  uint64_t reports = 0, final_reports = 0;
  const ipfix::session* ipx = nullptr;
  // What failed before the report (the port's stop), and the status so far.
  json failure = json::object();
  int rc = 0;
};

// Prints the summary, fills *j with the final JSON and *processed_q with what
// each RX queue's consumer processed (for --metrics). The accounting must add
// up and no reply may be lost: returns 1 (and names the failure in the JSON)
// when one does not hold, else o.rc.
int final_report(const run_outcome& o, const console& con, json* j, std::vector<uint64_t>* processed_q);

}  // namespace gnio::pp
