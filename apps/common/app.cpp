// SPDX-License-Identifier: Apache-2.0
#include "app.hpp"

#include <cstring>

namespace gnio::app {

void run_report::set_error(const std::string& message, std::string_view status, std::string_view step) {
  if (j_.contains("error")) return;
  j_["error"] = message;
  j_["error_status"] = std::string(status);
  j_["error_step"] = std::string(step);
}

int run_report::fail(const gnio::error& e, std::string_view step) {
  warn("{}: {}: {}\n", program_, step, e.what());
  warn("{}: hint ({} layer): {}\n", program_, gnio::to_string(gnio::describe(e.code()).where),
       gnio::describe(e.code()).next);
  set_error(e.what(), gnio::to_string(e.code()), step);
  return 1;
}

int run_report::refuse(const std::string& message, std::string_view status, std::string_view step) {
  warn("{}: {}\n", program_, message);
  set_error(message, status, step);
  return 2;
}

int run_report::stopped_while(const gnio::stop_signals& sig, std::string_view step, const gnio::error& e) {
  // The step's own words: the error's code goes into the JSON's error_code.
  const std::string why = e.message().empty() ? e.what() : e.message();
  std::string msg;
  if (sig.signal() != 0)
    msg = fmt::format("stopped by signal {} ({}) while {} ({})", sig.signal(), strsignal(sig.signal()), step, why);
  else msg = fmt::format("--duration passed while {} ({})", step, why);
  warn("{}: {}\n", program_, msg);
  set_error(msg, gnio::to_string(e.code()), step);
  return 1;
}

kernels_end run_kernels(gnio::session& s, const gnio::stop_signals& sig, std::chrono::steady_clock::time_point t0,
                        double duration_s, const std::function<void(double)>& tick,
                        std::chrono::nanoseconds stop_deadline) {
  kernels_end r;
  for (;;) {
    const gnio::error w = s.wait(std::chrono::milliseconds(50));
    if (!w) break;
    if (w.code() != gnio::status::time_out) {
      r.err = w;
      break;
    }
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    // requested(): a stop signal, or a --jsonl reader that went away (jsonl.hpp).
    if (sig.requested() || (duration_s > 0 && elapsed >= duration_s)) {
      r.stopped_early = true;
      r.err = s.stop(stop_deadline);
      break;
    }
    if (tick) tick(elapsed);
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

bool every::due(double* dt) {
  if (interval_s_ <= 0) return false;
  const auto now = std::chrono::steady_clock::now();
  const double d = std::chrono::duration<double>(now - last_).count();
  if (d < interval_s_) return false;
  if (dt) *dt = d;
  last_ = now;
  return true;
}

std::string run_report::accounting_line(const gnio::accounting& a, std::optional<uint64_t> filtered) const {
  const auto& t = a.total;
  return fmt::format("{}: received {} = processed {}{} + missed {} + unsteered {} + pending {}{}\n", program_,
                     t.received, t.processed - filtered.value_or(0),
                     filtered ? fmt::format(" + filtered {}", *filtered) : std::string(), t.missed, t.unsteered,
                     t.pending, t.unaccounted == 0 ? "" : fmt::format("  (MISMATCH: {} unaccounted)", t.unaccounted));
}

bool run_report::add_accounting(const gnio::accounting& a, std::string_view what, uint64_t filtered) {
  const auto& t = a.total;
  j_["received"] = t.received;
  j_["processed"] = t.processed - filtered;
  j_["filtered"] = filtered;
  j_["missed"] = t.missed;
  j_["unsteered"] = t.unsteered;
  j_["pending"] = t.pending;
  j_["unaccounted"] = t.unaccounted;
  if (t.unaccounted == 0) return true;
  set_error(fmt::format("{} {}(s) unaccounted: received != processed + filtered + missed + unsteered + pending",
                        t.unaccounted, what),
            "unexpected", "accounting");
  return false;
}

std::string run_report::text(int indent, std::string_view tail_name, const std::string& tail) {
  if (const std::string t = gnio::console::failure_text(); !t.empty()) set_error(t, "io_failed", "output");
  stamp();
  std::string text = j_.dump(indent, ' ', false, json::error_handler_t::replace);
  // An object with members ends with "\n}" at an indentation, with "}" on one line.
  const std::string_view end = indent >= 0 ? "\n}" : "}";
  if (!tail.empty() && text.size() > 2 && text.ends_with(end)) {
    text.resize(text.size() - end.size());
    text += indent >= 0 ? fmt::format(",\n  \"{}\": ", tail_name) : fmt::format(",\"{}\":", tail_name);
    text += tail;
    text += end;
  }
  return text;
}

int run_report::write_json(gnio::atomic_file& f, int rc, std::string_view tail_name, const std::string& tail) {
  (void)gnio::console::flush();  // what stdout printed comes before a JSON on /dev/stdout
  const std::string text = this->text(2, tail_name, tail);
  if (gnio::error e = f.commit(text + "\n"); e) {
    warn("{}: --json: {}\n", program_, e.what());
    return rc == 0 ? 1 : rc;
  }
  return rc;
}

}  // namespace gnio::app
