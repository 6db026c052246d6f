// SPDX-License-Identifier: Apache-2.0
// --jsonl FILE|-: a program's results as JSON Lines while it runs
// (docs/results.md, "JSON Lines"). Every line is one object that begins with
// schema, version and type:
//
//   gnio::jsonl::stream out(gnio::result_schema::flow_count_stream, sig.flag());
//   if (auto why = out.open(path); !why.empty()) ...           // "-": stdout
//   out.line("interval", {{"t", 1.0}, {"delivered", 1000}});
//   ...
//   out.final_line(result_text);                                  // the --json document
//
// Each line goes out with one write(2), unbuffered, so `tail -f` or a pipe
// reads whole lines as they come. With "-" the program's text for stdout
// goes to stderr (gnio::console::text_to_stderr). A write that fails (the
// reader of a pipe went away: EPIPE, or a full disk) ends the stream: it is
// said once on stderr, no more lines are written, and the stop flag is set
// so that the run ends as after a stop signal and writes its results (--json).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <gnio/atomic_file.hpp>

#include "result_schema.hpp"

namespace gnio::jsonl {

class stream {
 public:
  // stop (may be null): set when a write fails.
  stream(std::string program, result_schema::id id, std::atomic<bool>* stop) noexcept
      : program_(std::move(program)), id_(id), stop_(stop) {}
  ~stream();
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;

  // Opens path for writing (created or truncated; a FIFO waits for its
  // reader), or takes stdout for "-". None of `others` (the port's files,
  // --json) may be the same file. Returns "" or what went wrong.
  [[nodiscard]] std::string open(const std::string& path, const std::vector<gnio::named_file>& others = {});
  [[nodiscard]] bool is_open() const noexcept { return fd_ >= 0; }

  // {"schema":...,"version":...,"type":TYPE, then members' members} as one line.
  void line(std::string_view type, const nlohmann::json& members);
  // The last line: {"schema":...,"version":...,"type":"final","result":RESULT},
  // result_text being the --json document (newlines in it are dropped: a
  // JSON text has them only between tokens).
  void final_line(std::string result_text);

  [[nodiscard]] uint64_t lines() const noexcept { return lines_; }
  // The errno of the failed write, or 0.
  [[nodiscard]] int failed() const noexcept { return errno_; }
  // jsonl_lines and, after a failed write, jsonl_error into a result.
  void add_json(nlohmann::json& j) const;

 private:
  void write_line(const std::string& text);
  std::string head(std::string_view type) const;

  std::string program_;
  result_schema::id id_;
  std::atomic<bool>* stop_;
  int fd_ = -1;
  bool own_fd_ = false;
  uint64_t lines_ = 0;
  int errno_ = 0;
};

}  // namespace gnio::jsonl
