// SPDX-License-Identifier: Apache-2.0
// Command-line pieces shared by gnio's programs (gnio, flow_count, l2fwd):
// number checks that say what is wrong in words, and one exit status for
// every usage error.
//
//   app.add_option("--queues", q)->check(gnio::cli::whole(1, 15));
//   app.add_option("--duration", d)->check(gnio::cli::number(0));
//   if (auto rc = gnio::cli::parse(app, argc, argv)) return gnio::console::finish("prog", *rc);
//
// Exit statuses: 0 for --help and --version, 2 for every usage error (CLI11's
// own codes, 104..114, are not passed on), and a subcommand's own status when
// it ends parsing with CLI::RuntimeError(rc).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include <gnio/kernel.hpp>
#include <gnio/port.hpp>

namespace gnio::cli {

// A number in [lo, hi], written as a decimal or with an exponent ("1.5",
// "2e-3"). "abc" is "not a number"; nan and inf are refused ("not a finite
// number"); the range is printed readably ("0.5 is below the minimum 1",
// "must be >= 0"), never as a 309-digit DBL_MAX.
CLI::Validator number(double lo, double hi = std::numeric_limits<double>::infinity());

// --duration: seconds ("10", "0.5"), or with a unit as gen:duration= takes
// it ("500ms", "10s", "2m"; backend::get_duration_ns parses both). A
// transform: the option receives seconds. A plain number has number(0)'s
// messages; "5h" is "5h: unknown unit 'h' (use ms, s or m)".
CLI::Validator duration();

// A whole number in [lo, hi] ("1.5", "-1" and "abc" are refused as "not a
// whole number").
CLI::Validator whole(uint64_t lo, uint64_t hi);

// A whole number in [lo, hi] that is a power of two (ring and table sizes:
// "3 is not a power of two (2, 4, 8, ...)").
CLI::Validator power_of_two(uint64_t lo, uint64_t hi);

// 0 (a table turned off) or a power of two up to hi.
CLI::Validator power_of_two_or_zero(uint64_t hi);

// --rx-slot: bytes of one RX buffer slot, the longest frame a slot holds
// (longer frames are cut and counted as truncated): a multiple of 64 in
// 64..1048576 (the core's range for rxq_config::stride).
CLI::Validator slot_bytes();
inline constexpr uint32_t default_rx_slot = 2048;

// The warning for frames cut to the RX slot, or "" when none were:
// "PROG: 10 frame(s) were longer than the 2048-byte RX slot and were cut
// (truncated; they may count as malformed): raise --rx-slot, up to 1048576".
[[nodiscard]] std::string truncation_warning(std::string_view program, uint64_t truncated, uint32_t slot);

// Memory a run may still take, for refusing a size before it is allocated
// (the host executor and the RX/TX rings touch every byte they get, so an
// allocation that cannot be backed ends in the OOM killer, not an error).
struct memory_room {
  uint64_t mem_available = 0;  // MemAvailable in /proc/meminfo; 0 when unknown
  uint64_t as_limit = 0;       // RLIMIT_AS; 0 when unlimited
  uint64_t as_used = 0;        // this process's address space now (VmSize)
  // The smaller of MemAvailable and what RLIMIT_AS leaves; UINT64_MAX when neither is known.
  [[nodiscard]] uint64_t usable() const noexcept;
};
[[nodiscard]] memory_room available_memory() noexcept;

// "" when `bytes` fits in room.usable(); otherwise the refusal: what (e.g.
// "--table 268435456"), the bytes needed and what is available.
[[nodiscard]] std::string memory_refusal(const std::string& what, uint64_t bytes, const memory_room& room);

// Bytes the rings of one RX queue and one TX queue of num_descs slots take
// (buffers of stride bytes and their descriptors).
[[nodiscard]] uint64_t rx_ring_bytes(uint64_t num_descs, uint64_t stride = 2048) noexcept;
[[nodiscard]] uint64_t tx_ring_bytes(uint64_t num_descs, uint64_t stride = 2048) noexcept;

// --launch, --burst and --burst-timeout-us: how a program runs its kernel
// (gnio::launch_dims::mode, burst, burst_timeout_ns; docs/kernels.md
// "Launch modes").
struct launch_options {
  std::string mode = "persistent";  // persistent, per-burst or graph
  uint32_t burst = 32;
  double burst_timeout_us = 50;
};
// Adds the three options to app, with help that explains the trade-off.
void add_launch_options(CLI::App& app, launch_options& o);
// Sets dims.mode, dims.burst and dims.burst_timeout_ns from o.
void apply(const launch_options& o, launch_dims& dims) noexcept;
// "persistent", "per-burst" or "graph", as --launch spells them.
[[nodiscard]] std::string_view launch_mode_name(device::launch_mode m) noexcept;

// --filter pushed down to the port (docs/pp.md, "Filters"): dev with
// ",filter=EXPR" added when its backend runs the filter on its sockets
// (af_packet) and the expression fits in a device string (no comma, no
// filter= there already); else dev unchanged. *pushed says which. The
// kernels run the filter either way, so the counts do not depend on it.
// --write FILE [--write-size MB] [--write-seconds S]: received frames to a
// pcap file, rotated as tcpdump's -C and -G do.
struct write_options {
  std::string path;
  double size_mb = 0;    // millions of bytes per file (0: no limit)
  uint64_t seconds = 0;  // capture seconds per file (0: no limit)
};
void add_write_options(CLI::App& app, write_options& w);
// The device string with the core options rx_pcap=FILE (the engine writes
// every frame the port delivers that the port's rx_pcap filter accepts),
// rx_pcap_size= and rx_pcap_seconds=. No path: dev unchanged. A path a
// device string cannot carry (a comma) sets *why and returns "".
[[nodiscard]] std::string add_rx_pcap(const std::string& dev, const write_options& w, std::string* why);
// --write - (stdout) or a named FIFO: the frames go out as one pcap stream
// (docs/pp.md, "Writing the matched frames").
[[nodiscard]] bool write_is_stream(const write_options& w);
// Before anything runs: "" or why these --write options cannot be used (a
// stream with --write-size or --write-seconds, which rotate files; "-" when
// stdout is a terminal). With "-" the program's text for stdout goes to
// stderr from here on (gnio::console::text_to_stderr).
[[nodiscard]] std::string check_write_stream(const write_options& w);

// Outputs that would share stdout: of the (option, path) pairs, those whose
// path is "-" or names the file stdout is (/dev/stdout, /proc/self/fd/1, a
// file stdout was redirected to). With two or more, "" is not returned but
// why they cannot be used together: a pcap stream, JSON Lines and a JSON
// document would be interleaved in one stream that no reader can parse.
[[nodiscard]] std::string stdout_conflict(const std::vector<std::pair<std::string, std::string>>& outputs);
// Both, for a program whose outputs are --json, --jsonl and --write (flow_count,
// l2fwd): stdout_conflict of the three, then check_write_stream.
[[nodiscard]] std::string check_outputs(const std::string& json_path, const std::string& jsonl_path,
                                        const write_options& w);

// --write's copy while a run goes on: once its reader went away (EPIPE on
// --write - or a FIFO), says so once and sets *stop (may be null), so that
// the run ends as after a stop signal and writes its results, as --jsonl
// does. A write that failed otherwise (a full disk) stops the copy only;
// either way the JSON's write_error says why and the port's stop fails.
class write_watch {
 public:
  write_watch(std::string program, std::atomic<bool>* stop) : program_(std::move(program)), stop_(stop) {}
  void check(const port& p);

 private:
  std::string program_;
  std::atomic<bool>* stop_;
  bool said_ = false;
};

// The write end of a FIFO, held open from the moment a reader came until
// the port has opened its own; closed when it goes.
class fifo_hold {
 public:
  fifo_hold() = default;
  ~fifo_hold() { reset(); }
  fifo_hold(const fifo_hold&) = delete;
  fifo_hold& operator=(const fifo_hold&) = delete;
  void reset() noexcept;
  void adopt(int fd) noexcept {
    reset();
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};
// When path names a FIFO: waits until something opens it for reading, so
// that the port's start does not block on it with no bound, checking
// give_up() about every 20 ms; the write end is kept in *hold. Returns "" (a
// reader came, or path is no FIFO), or why not (give_up() said so, or the
// open failed).
[[nodiscard]] std::string wait_for_reader(const std::string& path, const std::function<bool()>& give_up,
                                          fifo_hold* hold);
[[nodiscard]] std::string push_filter_down(const std::string& dev, const std::string& expr, bool* pushed);

// --version for a program built with gnio: prints "PROGRAM (gnio 0.1.0)" and
// whether CUDA was built, as `gnio --version` does, and exits with 0.
void add_version_flag(CLI::App& app, std::string_view program);
// That text: "gnio 0.1.0\ncuda: no" for gnio itself, "flow_count (gnio
// 0.1.0)\ncuda: no" for the others.
[[nodiscard]] std::string version_text(std::string_view program);

// The exit status for an error CLI11 threw while parsing: 0 for help and
// version, a CLI::RuntimeError's own code, 2 for anything else.
[[nodiscard]] int exit_status(const CLI::Error& e) noexcept;

// app.parse(argc, argv). Returns nullopt when the command line was accepted
// (and, for a subcommand, its callback ran without ending the program);
// otherwise prints what CLI11 has to say (help, version, or the error and a
// pointer to --help) through gnio::console and returns exit_status(e).
[[nodiscard]] std::optional<int> parse(CLI::App& app, int argc, char** argv);

// --poll adaptive|busy|latency (launch_dims::poll, device::poll_policy),
// the same text in every program.
CLI::Option* add_poll_option(CLI::App& app, std::string& poll);
// The policy a --poll value names (one add_poll_option accepted).
[[nodiscard]] device::poll_policy poll_policy_of(std::string_view poll) noexcept;

// --inline-headers N: the RX queues' inline headers (rxq_config::
// inline_bytes): N bytes of each frame copied into its completion entry (0,
// the default, or a multiple of 32 up to 224). Off by default: measured on
// an H100 it did not shorten the ring's turnaround and halved flow_count's
// rate at 64 B (docs/benchmarks.md, "Inline headers").
CLI::Option* add_inline_option(CLI::App& app, uint32_t& bytes);

// Inline header bytes written as v: "" and the count in *bytes when v is 0
// or a multiple of rx_inline_unit up to rx_inline_max, else why not
// ("V: ...", for --inline-headers and bench/latency's --inline list).
std::string inline_bytes_problem(std::string_view v, uint32_t* bytes);

// The name in `names` nearest to `word` when it is close enough to be a typo
// of it (one edit for a name of up to 7 characters, two up to 11, three
// beyond; a swap of neighbours is one edit), else "": for "did you mean".
[[nodiscard]] std::string nearest_name(std::string_view word, const std::vector<std::string>& names);

}  // namespace gnio::cli
