// SPDX-License-Identifier: Apache-2.0
// What gnio's programs share around a run: console lines that never throw,
// the JSON's error members, the accounting identity in text and JSON, and
// writing the JSON at the end of every run, good or bad.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <gnio/atomic_file.hpp>
#include <gnio/console.hpp>
#include <gnio/session.hpp>
#include <gnio/signals.hpp>
#include <gnio/status.hpp>

#include "result_schema.hpp"

namespace gnio::app {

using json = nlohmann::json;

// Console output that never throws: a failed write is remembered and
// reported once at the end (gnio/console.hpp).
template <class... A>
void say(fmt::format_string<A...> f, A&&... a) {
  gnio::console::out(fmt::format(f, std::forward<A>(a)...));
}
template <class... A>
void warn(fmt::format_string<A...> f, A&&... a) {
  gnio::console::err(fmt::format(f, std::forward<A>(a)...));
}

// The JSON's "engine" object: lanes, the lanes' busy time per frame
// (ns_per_frame) and their time per frame waiting for full queues
// (full_ns_per_frame: the consumer's pace on a lossless port).
inline json engine_json(const gnio::port_stats& st) {
  return {{"lanes", st.lanes.size()},
          {"ns_per_frame", gnio::engine_ns_per_frame(st)},
          {"full_ns_per_frame", gnio::engine_full_ns_per_frame(st)}};
}

// One program's run: its name prefixes every message, and j collects the
// results and the first failure (error, error_status, error_step).
// How a run's kernels ended (run_kernels).
struct kernels_end {
  double seconds = 0;          // from t0 until they returned (or the stop gave up)
  bool stopped_early = false;  // a stop signal or the duration ended them
  gnio::error err;             // a kernel error, or the stop's time_out (the session is parked)
};

// The loop every program runs while its kernels work: waits until they
// return by themselves (their queues ended), a stop signal comes, or
// duration_s (0: no limit) has passed since t0, then stops them within
// stop_deadline. tick(elapsed seconds) runs about every 50 ms meanwhile,
// for progress lines and metrics.
kernels_end run_kernels(gnio::session& s, const gnio::stop_signals& sig, std::chrono::steady_clock::time_point t0,
                        double duration_s, const std::function<void(double)>& tick,
                        std::chrono::nanoseconds stop_deadline = std::chrono::seconds(5));

// Calls due() true once every interval_s seconds (never for 0).
class every {
 public:
  every(double interval_s, std::chrono::steady_clock::time_point t0) : interval_s_(interval_s), last_(t0) {}
  // True when the interval has passed since the last true; *dt gets the seconds since then.
  bool due(double* dt = nullptr);

 private:
  double interval_s_;
  std::chrono::steady_clock::time_point last_;
};

class run_report {
 public:
  // `schema` goes into j now and again when the JSON is written (a step may
  // have built j anew).
  run_report(std::string program, json& j, result_schema::id schema = {})
      : program_(std::move(program)), j_(j), schema_(schema) {
    stamp();
  }

  [[nodiscard]] const std::string& program() const noexcept { return program_; }
  [[nodiscard]] json& j() noexcept { return j_; }

  // The JSON names the first failure only.
  void set_error(const std::string& message, std::string_view status, std::string_view step);
  // Prints the error with the status's hint, records it, returns 1.
  int fail(const gnio::error& e, std::string_view step);
  // A usage-level refusal (exit status 2): printed and recorded as `status`.
  int refuse(const std::string& message, std::string_view status, std::string_view step);
  // A stop signal or the --duration deadline came while a setup step was
  // blocked (e.g. opening a FIFO no one writes): says so, rather than passing
  // the interrupted call's error off as the cause. Returns 1.
  int stopped_while(const gnio::stop_signals& sig, std::string_view step, const gnio::error& e);

  // "PROGRAM: received R = processed P + missed M + unsteered U + pending Q"
  // with the mismatch named when there is one. With --filter (filtered has a
  // value) the kernels' processed count a holds is split into the frames
  // that passed and those the filter refused: "processed P + filtered F".
  [[nodiscard]] std::string accounting_line(const gnio::accounting& a,
                                            std::optional<uint64_t> filtered = std::nullopt) const;
  // received, processed, filtered, missed, unsteered, pending and unaccounted
  // into the JSON (processed without the filtered frames; filtered 0 without
  // a filter); an error (status unexpected, step accounting) when anything
  // is unaccounted. Returns false then.
  bool add_accounting(const gnio::accounting& a, std::string_view what = "frame", uint64_t filtered = 0);

  // Writes the JSON (also after a failed run), with console failures so far
  // in it; `tail`, when not empty, is the text of one more member (`tail_name`)
  // added last without building it as a json value. Returns rc, or 1 when rc
  // was 0 and the JSON could not be written.
  int write_json(gnio::atomic_file& f, int rc, std::string_view tail_name = {}, const std::string& tail = {});
  // The text write_json writes (indent as json::dump's; -1: one line), with
  // the console's failures so far in it.
  [[nodiscard]] std::string text(int indent, std::string_view tail_name = {}, const std::string& tail = {});

 private:
  void stamp() {
    if (!schema_.schema.empty()) result_schema::stamp(j_, schema_);
  }

  std::string program_;
  json& j_;
  result_schema::id schema_;
};

}  // namespace gnio::app
