// SPDX-License-Identifier: Apache-2.0
// Test support: running a program the way a user does (its own process, its
// stdout/stderr and --json output collected), temporary files, and the
// MANIFEST.tsv reader. Shared by the integration tests.
#pragma once

#include <chrono>
#include <cstdint>
#include <csignal>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gnio::test {

// The variable's value when set and not empty, else fallback.
std::string env_or(const char* name, const std::string& fallback);

// Where the tests find their inputs: environment variables that ctest sets
// (tests/CMakeLists.txt), never paths compiled in, so a build copied or run
// from elsewhere finds them too. Each throws std::runtime_error naming the
// variable when it is unset or does not name what it should; gtest reports
// that as the test's failure (see env_check below for a check before the
// first test).
//
// The directory `name` names, which must hold `must_hold` (a file or folder).
std::string env_dir(const char* name, const char* must_hold);
// The executable file `name` names.
std::string env_program(const char* name);
std::string data_dir();                          // GNIO_TEST_DATA_DIR: tests/data, holds MANIFEST.tsv
std::string data_path(const std::string& file);  // data_dir() + "/" + file
std::string source_dir();                        // GNIO_SOURCE_DIR: the repository, holds docs/schema
// GNIO_CORPUS_DIR when set, else data_dir()/corpus (the bundled corpus);
// holds MANIFEST.tsv either way.
std::string corpus_dir();
std::string tool_bin();        // GNIO_TOOL_BIN: the gnio tool
std::string flow_count_bin();  // GNIO_FLOW_COUNT_BIN
std::string l2fwd_bin();       // GNIO_L2FWD_BIN

// Checks before the first test that every variable in `names` (from the
// list above) is usable; a fatal failure in that check runs no test, so a
// wrong or missing variable gives one message and exit status 1. Call it at
// namespace scope: `const bool k_env = gnio::test::env_check({...});`.
bool env_check(std::vector<std::string> names);

// This process's own temporary directory, made on first use under $TMPDIR
// (else /tmp) and removed, with everything in it, when the process exits.
const std::string& temp_dir();

// A fresh empty file in temp_dir(), named after tag.
std::string temp_path(const char* tag);

// The whole file, or "" when it cannot be read.
std::string slurp(const std::string& path);

struct proc_result {
  bool spawned = false;
  bool exited = false;  // false: ended by a signal (or never spawned)
  int code = -1;        // exit status when exited
  int signal = 0;
  bool killed_at_limit = false;  // the test's time limit passed: SIGKILL
  std::string out, err;
  std::optional<nlohmann::json> j;  // the --json output, when asked for and written

  [[nodiscard]] std::string both() const { return out + "\n" + err; }
  [[nodiscard]] std::string describe() const;
  // Exited by itself with a status that is not a shell's 124..127 or 128+N.
  [[nodiscard]] bool exited_cleanly() const { return spawned && exited && code < 124; }
};

struct run_options {
  // Appends "--json FILE" and parses FILE afterwards into proc_result::j.
  bool with_json = false;
  // GNIO_LOG_LEVEL for the child; nullopt removes it, so messages are as a
  // user sees them by default.
  std::optional<std::string> log_level;
  // `signal` (default SIGINT, a user's Ctrl-C) after this long; SIGKILL at limit.
  std::chrono::milliseconds signal_after = std::chrono::hours(24);
  int signal = SIGINT;
  // (limit: four times as long in a sanitized build)
  std::chrono::milliseconds limit = std::chrono::seconds(60);
  // The child's stdout and stderr go to these files (e.g. /dev/full) instead
  // of being collected; proc_result::out or err is then empty.
  std::string stdout_path, stderr_path;
  // RLIMIT_FSIZE for the child, in bytes (0: none): a file that would grow
  // past it fails with EFBIG (or, where SIGXFSZ is not ignored, the child
  // dies of SIGXFSZ).
  uint64_t file_size_limit = 0;
  // RLIMIT_AS for the child, in bytes (0: none): allocations past it fail.
  uint64_t address_space_limit = 0;
  // More environment variables for the child ("NAME=value").
  std::vector<std::string> env;
};

// True in an ASan or TSan build. Such a sanitizer reserves terabytes of
// address space when a program starts, so a child run under any
// run_options::address_space_limit dies before main; tests that need one
// skip in these builds.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool sanitized_build = true;
#else
inline constexpr bool sanitized_build = false;
#endif

// Runs argv[0] (a path, or a name looked up in PATH) with the rest as
// arguments, stdin from /dev/null, no shell.
proc_result run_process(std::vector<std::string> argv, const run_options& o = {});

// tests/data/MANIFEST.tsv: tshark's counts per capture, one row per file
// keyed by the header's column names.
using manifest_row = std::map<std::string, std::string>;
std::vector<manifest_row> read_manifest(const std::string& path);
// A row's number, or -1 when the column is missing, empty or "-".
long manifest_num(const manifest_row& r, const std::string& column);

}  // namespace gnio::test
