// SPDX-License-Identifier: Apache-2.0
#include "cli.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string_view>
#include <vector>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <gnio/backend/backend.hpp>
#include <gnio/console.hpp>
#include <gnio/device/config.hpp>
#include <gnio/device/ring.hpp>
#include <gnio/gpu.hpp>
#include <gnio/printable.hpp>

namespace gnio::cli {

namespace {

// Numbers as a person writes them: 1, 0.5, 1e+20, 1.8e+308.
std::string text(double v) { return fmt::format("{:g}", v); }

bool blank(const std::string& s) { return s.find_first_not_of(" \t") == std::string::npos; }

}  // namespace

CLI::Validator number(double lo, double hi) {
  std::string desc =
      std::isinf(hi) ? fmt::format("NUMBER >= {}", text(lo)) : fmt::format("NUMBER in {}..{}", text(lo), text(hi));
  return CLI::Validator(
      [lo, hi](std::string& in) -> std::string {
        const std::string shown = gnio::printable(in);
        if (blank(in)) return "needs a number (it was given as \"" + shown + "\")";
        errno = 0;
        char* end = nullptr;
        const double v = std::strtod(in.c_str(), &end);
        if (end == in.c_str() || *end != '\0') return shown + " is not a number";
        if (std::isnan(v) || std::isinf(v)) return shown + " is not a finite number";
        if (v < lo) return fmt::format("{} is below the minimum {}", shown, text(lo));
        if (v > hi) return fmt::format("{} is above the maximum {}", shown, text(hi));
        return {};
      },
      desc);
}

CLI::Validator duration() {
  const CLI::Validator seconds = number(0);
  return CLI::Validator(
      [seconds](std::string& in) -> std::string {
        char* end = nullptr;
        (void)std::strtod(in.c_str(), &end);
        // No number at all, or a number alone: seconds, with number()'s words.
        if (blank(in) || end == in.c_str() || *end == '\0') return seconds(in);
        // With a unit: the device strings' parser, so the units and the range are gen:duration='s.
        backend::devargs a;
        a.name = "-";
        a.kv.emplace_back("d", in);
        uint64_t ns = 0;
        if (error e = backend::get_duration_ns(a, "d", &ns); e) {
          // "-: d=5h: unknown unit ..." without the device string's "-: d=".
          const std::string& m = e.message();
          return gnio::printable(m.rfind("-: d=", 0) == 0 ? m.substr(5) : m);
        }
        in = fmt::format("{:.17g}", static_cast<double>(ns) / 1e9);
        return {};
      },
      "DURATION: seconds, or with a unit: 500ms, 10s, 1m");
}

CLI::Validator whole(uint64_t lo, uint64_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& in) -> std::string {
        const std::string shown = gnio::printable(in);
        if (blank(in)) return "needs a whole number (it was given as \"" + shown + "\")";
        uint64_t v = 0;
        const char* b = in.data();
        const char* e = in.data() + in.size();
        if (b != e && *b == '+') ++b;
        auto [p, ec] = std::from_chars(b, e, v);
        if (ec == std::errc::result_out_of_range) return fmt::format("{} is above the maximum {}", shown, hi);
        if (ec != std::errc{} || p != e) return shown + " is not a whole number";
        if (v < lo) return fmt::format("{} is below the minimum {}", shown, lo);
        if (v > hi) return fmt::format("{} is above the maximum {}", shown, hi);
        return {};
      },
      fmt::format("INT in {}..{}", lo, hi));
}

CLI::Validator power_of_two(uint64_t lo, uint64_t hi) {
  const CLI::Validator range = whole(lo, hi);
  return CLI::Validator(
      [range, lo, hi](std::string& in) -> std::string {
        if (std::string why = range(in); !why.empty()) return why;
        const uint64_t v = std::strtoull(in.c_str(), nullptr, 10);
        if ((v & (v - 1)) != 0)
          return fmt::format("{} is not a power of two ({}, {}, {}, ... {})", gnio::printable(in), lo, lo * 2, lo * 4,
                             hi);
        return {};
      },
      fmt::format("POWER OF TWO in {}..{}", lo, hi));
}

CLI::Validator power_of_two_or_zero(uint64_t hi) {
  const CLI::Validator range = whole(0, hi);
  return CLI::Validator(
      [range, hi](std::string& in) -> std::string {
        if (std::string why = range(in); !why.empty()) return why;
        const uint64_t v = std::strtoull(in.c_str(), nullptr, 10);
        if ((v & (v - 1)) != 0)
          return fmt::format("{} is neither 0 nor a power of two (1, 2, 4, ... {})", gnio::printable(in), hi);
        return {};
      },
      fmt::format("0 or a POWER OF TWO up to {}", hi));
}

CLI::Validator slot_bytes() {
  const CLI::Validator range = whole(64, 1u << 20);
  return CLI::Validator(
      [range](std::string& in) -> std::string {
        if (std::string why = range(in); !why.empty()) return why;
        if (std::strtoull(in.c_str(), nullptr, 10) % 64 != 0)
          return fmt::format("{} is not a multiple of 64 (e.g. 2048, 9216)", gnio::printable(in));
        return {};
      },
      "BYTES: a multiple of 64 in 64..1048576");
}

std::string truncation_warning(std::string_view program, uint64_t truncated, uint32_t slot) {
  if (truncated == 0) return {};
  return fmt::format(
      "{}: {} frame(s) were longer than the {}-byte RX slot and were cut (counted as truncated; their headers may "
      "then count as malformed): raise --rx-slot (a multiple of 64, up to 1048576; e.g. --rx-slot 9216 for "
      "9000-byte frames)\n",
      program, truncated, slot);
}

uint64_t memory_room::usable() const noexcept {
  uint64_t u = UINT64_MAX;
  if (mem_available != 0) u = mem_available;
  if (as_limit != 0) u = std::min(u, as_limit > as_used ? as_limit - as_used : 0);
  return u;
}

memory_room available_memory() noexcept {
  memory_room r;
  try {
    std::ifstream mi("/proc/meminfo");
    for (std::string key; mi >> key;) {
      uint64_t kib = 0;
      mi >> kib;
      if (key == "MemAvailable:") {
        r.mem_available = kib * 1024;
        break;
      }
      mi.ignore(256, '\n');
    }
    std::ifstream statm("/proc/self/statm");
    uint64_t pages = 0;
    if (statm >> pages) r.as_used = pages * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  } catch (...) {
    // Unknown: nothing is refused on its account.
  }
  rlimit lim{};
  if (getrlimit(RLIMIT_AS, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) r.as_limit = lim.rlim_cur;
  return r;
}

namespace {
std::string bytes_text(uint64_t b) {
  return fmt::format("{} bytes ({:.1f} GiB)", b, static_cast<double>(b) / (1024.0 * 1024.0 * 1024.0));
}
}  // namespace

std::string memory_refusal(const std::string& what, uint64_t bytes, const memory_room& room) {
  if (bytes <= room.usable()) return {};
  std::string have = room.mem_available ? "MemAvailable (/proc/meminfo) is " + bytes_text(room.mem_available)
                                        : std::string("MemAvailable is unknown");
  have += room.as_limit ? fmt::format(", RLIMIT_AS (ulimit -v) is {} with {} in use", bytes_text(room.as_limit),
                                      bytes_text(room.as_used))
                        : ", RLIMIT_AS is unlimited";
  return fmt::format("{} needs at least {} of memory, more than this machine can give: {}", what, bytes_text(bytes),
                     have);
}

uint64_t rx_ring_bytes(uint64_t num_descs, uint64_t stride) noexcept {
  // num_descs + 1 frame buffers (backend::rx_ring_writer::area_bytes) and a completion each.
  return (num_descs + 1) * stride + num_descs * sizeof(gnio::device::rx_cqe);
}

uint64_t tx_ring_bytes(uint64_t num_descs, uint64_t stride) noexcept {
  return num_descs * (stride + sizeof(gnio::device::tx_desc));
}

std::string version_text(std::string_view program) {
  const std::string name =
      program == "gnio" ? "gnio " GNIO_VERSION_STRING : fmt::format("{} (gnio {})", program, GNIO_VERSION_STRING);
  return fmt::format("{}\ncuda: {}", name, gnio::built_with_cuda() ? "yes" : "no");
}

void add_version_flag(CLI::App& app, std::string_view program) {
  app.set_version_flag("--version", version_text(program), "print the version and build options, then exit");
}

int exit_status(const CLI::Error& e) noexcept {
  if (dynamic_cast<const CLI::RuntimeError*>(&e) != nullptr) return e.get_exit_code();
  if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return 0;  // --help, --version
  return 2;
}

namespace {

// Optimal string alignment distance: insertions, deletions, substitutions
// and swaps of neighbours, one edit each.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

// The long options of app and of the subcommands given on the command line.
void option_names(const CLI::App& app, std::vector<std::string>& names) {
  for (const CLI::Option* o : app.get_options())
    for (const std::string& l : o->get_lnames()) names.push_back("--" + l);
  for (const CLI::App* sub : app.get_subcommands()) option_names(*sub, names);
}

// "--durration: did you mean --duration?" for each argument CLI11 did not
// expect that is near a known option ("" when none is).
std::string did_you_mean(const CLI::App& app) {
  std::vector<std::string> names;
  option_names(app, names);
  std::string hints;
  for (const std::string& arg : app.remaining(true)) {
    if (arg.size() < 2 || arg[0] != '-') continue;
    const std::string typed = arg.substr(0, arg.find('='));
    const auto start = typed.find_first_not_of('-');
    if (start == std::string::npos) continue;
    const std::string near = nearest_name("--" + typed.substr(start), names);
    if (!near.empty() && near != typed) hints += fmt::format("{}: did you mean {}?\n", gnio::printable(typed), near);
  }
  return hints;
}

}  // namespace

std::string nearest_name(std::string_view word, const std::vector<std::string>& names) {
  const size_t most = word.size() <= 7 ? 1 : word.size() <= 11 ? 2 : 3;
  std::string best;
  size_t best_distance = most + 1;
  for (const std::string& n : names)
    if (const size_t d = edit_distance(word, n); d < best_distance) best_distance = d, best = n;
  return best;
}

std::optional<int> parse(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::ParseError& e) {
    std::ostringstream out, err;
    (void)app.exit(e, out, err);
    std::string text = err.str();
    // After CLI11's "The following argument was not expected: ..." line.
    if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
      const auto nl = text.find('\n');
      text.insert(nl == std::string::npos ? text.size() : nl + 1, did_you_mean(app));
    }
    gnio::console::out(out.str());
    gnio::console::err(text);
    return exit_status(e);
  }
}

CLI::Option* add_poll_option(CLI::App& app, std::string& poll) {
  return app
      .add_option("--poll", poll,
                  "how an empty RX queue is polled: adaptive (back off with short sleeps when idle, and wait up to "
                  "the batch timeout for a batch to fill), busy (never sleep, return a batch once it stops growing: "
                  "low latency, a core or an SM slot kept busy) or latency (busy, and return a batch at first sight: "
                  "one look less per lone packet, smaller batches)")
      ->check(CLI::IsMember({"adaptive", "busy", "latency"}))
      ->capture_default_str();
}

device::poll_policy poll_policy_of(std::string_view poll) noexcept {
  if (poll == "busy") return device::poll_policy::busy;
  if (poll == "latency") return device::poll_policy::latency;
  return device::poll_policy::adaptive;
}

std::string inline_bytes_problem(std::string_view v, uint32_t* bytes) {
  uint64_t n = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (v.empty() || ec != std::errc{} || end != v.data() + v.size())
    return fmt::format("{}: not a whole number of bytes", printable(v));
  if (n > device::rx_inline_max || !device::rx_inline_valid(static_cast<uint32_t>(n)))
    return fmt::format("{}: must be 0 or a multiple of {} up to {}", printable(v), device::rx_inline_unit,
                       device::rx_inline_max);
  *bytes = static_cast<uint32_t>(n);
  return {};
}

CLI::Option* add_inline_option(CLI::App& app, uint32_t& bytes) {
  return app
      .add_option("--inline-headers", bytes,
                  fmt::format("bytes of each received frame copied into its completion entry, so that a kernel "
                              "reading only headers reads them with the entry and not from the frame's buffer: 0 "
                              "(none) or a multiple of {} up to {} (see docs/ring.md, Inline headers)",
                              device::rx_inline_unit, device::rx_inline_max))
      ->check(CLI::Validator(
          [](const std::string& v) -> std::string {
            uint32_t n = 0;
            return inline_bytes_problem(v, &n);
          },
          "BYTES", "inline headers"))
      ->capture_default_str();
}

void add_launch_options(CLI::App& app, launch_options& o) {
  app.add_option("--launch", o.mode,
                 "how the kernel runs: persistent (launched once, polls its queues until the end: the lowest latency "
                 "and the highest rate, one SM or CPU thread per block kept busy), per-burst (the host waits until "
                 "--burst packets are ready in a queue, or the oldest has waited --burst-timeout-us, then launches a "
                 "kernel over them and waits for it: the DPDK gpudev / l2fwd-nv style, paying a launch per burst), "
                 "graph (as per-burst, replaying a captured CUDA graph per burst: a cheaper launch; CUDA only)")
      ->check(CLI::IsMember({"persistent", "per-burst", "graph"}))
      ->capture_default_str();
  app.add_option("--burst", o.burst,
                 "per-burst and graph: packets per queue that start a launch; each launch takes at most this many "
                 "per queue (at most --ring)")
      ->check(whole(1, 1u << 31))
      ->capture_default_str();
  app.add_option("--burst-timeout-us", o.burst_timeout_us,
                 "per-burst and graph: launch with fewer than --burst packets once the oldest has waited this long "
                 "(microseconds, 0..10000000)")
      ->check(number(0, 10'000'000))
      ->capture_default_str();
}

void apply(const launch_options& o, launch_dims& dims) noexcept {
  dims.mode = o.mode == "graph"       ? device::launch_mode::graph
              : o.mode == "per-burst" ? device::launch_mode::per_burst
                                      : device::launch_mode::persistent;
  dims.burst = o.burst;
  dims.burst_timeout_ns = static_cast<uint64_t>(std::llround(o.burst_timeout_us * 1000.0));
}

std::string_view launch_mode_name(device::launch_mode m) noexcept {
  switch (m) {
    case device::launch_mode::per_burst: return "per-burst";
    case device::launch_mode::graph: return "graph";
    case device::launch_mode::persistent: break;
  }
  return "persistent";
}

std::string add_rx_pcap(const std::string& dev, const write_options& w, std::string* why) {
  if (w.path.empty()) return dev;
  if (w.path.find(',') != std::string::npos) {
    *why =
        fmt::format("--write {}: a file name with a comma cannot be passed to the port; choose another name", w.path);
    return "";
  }
  const auto colon = dev.find(':');
  const bool bare = colon == std::string::npos || colon + 1 == dev.size() || dev.back() == ',';
  std::string out = dev + (colon == std::string::npos ? ":" : bare ? "" : ",") + "rx_pcap=" + w.path;
  if (w.size_mb > 0)
    out += fmt::format(",rx_pcap_size={}", std::max<uint64_t>(1, static_cast<uint64_t>(w.size_mb * 1e6)));
  if (w.seconds > 0) out += fmt::format(",rx_pcap_seconds={}", w.seconds);
  return out;
}

bool write_is_stream(const write_options& w) {
  struct stat st {};
  return w.path == "-" || (!w.path.empty() && ::stat(w.path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode));
}

std::string check_write_stream(const write_options& w) {
  if (!write_is_stream(w)) return {};
  const std::string what = w.path == "-" ? "--write - (stdout)" : fmt::format("--write {} (a FIFO)", w.path);
  if (w.size_mb > 0 || w.seconds > 0)
    return fmt::format("{} is one pcap stream, and {} rotates files; name a regular file to rotate", what,
                       w.size_mb > 0 ? "--write-size" : "--write-seconds");
  if (w.path == "-") {
    if (::isatty(STDOUT_FILENO))
      return "--write -: stdout is a terminal; pipe it to a reader (| tshark -r -) or redirect it to a file";
    gnio::console::text_to_stderr();
  }
  return {};
}

std::string stdout_conflict(const std::vector<std::pair<std::string, std::string>>& outputs) {
  struct stat out {};
  struct stat null {};
  // Output thrown away (> /dev/null) mixes no one's.
  const bool have_stdout = ::fstat(STDOUT_FILENO, &out) == 0 &&
                           !(::stat("/dev/null", &null) == 0 && out.st_rdev == null.st_rdev && S_ISCHR(out.st_mode));
  std::vector<std::string> users;
  for (const auto& [option, path] : outputs) {
    if (path.empty()) continue;
    struct stat st {};
    if (path == "-" ||
        (have_stdout && ::stat(path.c_str(), &st) == 0 && st.st_dev == out.st_dev && st.st_ino == out.st_ino))
      users.push_back(option + " " + path);
  }
  if (users.size() < 2) return {};
  std::string list;
  for (size_t i = 0; i < users.size(); ++i) list += (i == 0 ? "" : i + 1 == users.size() ? " and " : ", ") + users[i];
  return fmt::format("{} {} write to stdout, where their output would be mixed; give {} a file name", list,
                     users.size() == 2 ? "both" : "all", users.size() == 2 ? "one of them" : "all but one of them");
}

std::string check_outputs(const std::string& json_path, const std::string& jsonl_path, const write_options& w) {
  if (std::string why = stdout_conflict({{"--json", json_path}, {"--jsonl", jsonl_path}, {"--write", w.path}});
      !why.empty())
    return why;
  return check_write_stream(w);
}

void write_watch::check(const port& p) {
  if (said_ || p.rx_pcap_errno() != EPIPE) return;
  said_ = true;
  gnio::console::err(fmt::format("{}: --write: the reader went away (broken pipe); no more frames are written{}\n",
                                 program_, stop_ ? ", and the run ends" : ""));
  if (stop_) stop_->store(true);
}

void fifo_hold::reset() noexcept {
  if (fd_ >= 0) (void)::close(fd_);
  fd_ = -1;
}

std::string wait_for_reader(const std::string& path, const std::function<bool()>& give_up, fifo_hold* hold) {
  struct stat st {};
  if (path.empty() || path == "-" || ::stat(path.c_str(), &st) != 0 || !S_ISFIFO(st.st_mode)) return {};
  hold->reset();
  // A non-blocking open for writing fails with ENXIO while no one reads:
  // polled, so that a stop signal or the program's deadline ends the wait.
  for (;;) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd >= 0) {
      hold->adopt(fd);
      return {};
    }
    const int e = errno;
    if (e != ENXIO && e != EINTR) return fmt::format("--write {}: cannot open the FIFO: {}", path, std::strerror(e));
    if (give_up && give_up()) return fmt::format("--write {}: no reader opened the FIFO", path);
    ::usleep(20'000);
  }
}

void add_write_options(CLI::App& app, write_options& w) {
  auto* path = app.add_option("--write", w.path,
                              "write the received frames that --filter accepts (all of them without one) to this pcap "
                              "file, with their capture times (ns) and original lengths; the port's engine writes "
                              "them as it hands them to the kernel (the core option rx_pcap=). '-' or a FIFO: a pcap "
                              "stream for a reader (| tshark -r -), each frame as it comes; with '-' the text goes to "
                              "stderr");
  app.add_option("--write-size", w.size_mb,
                 "with --write: start the next file (FILE1, FILE2, ...) once the current one holds more than this "
                 "many millions of bytes, as tcpdump -C does")
      ->check(number(1e-6, 1e9))
      ->needs(path);
  app.add_option("--write-seconds", w.seconds,
                 "with --write: start the next file once a frame's capture time is this many seconds past the "
                 "current file's first, as tcpdump -G does (files numbered as with --write-size)")
      ->check(whole(1, 1'000'000'000))
      ->needs(path);
}

std::string push_filter_down(const std::string& dev, const std::string& expr, bool* pushed) {
  *pushed = false;
  if (expr.empty() || expr.find(',') != std::string::npos) return dev;
  const auto colon = dev.find(':');
  if (dev.substr(0, colon) != "af_packet") return dev;
  if (colon != std::string::npos &&
      (dev.find(",filter=", colon) != std::string::npos || dev.compare(colon + 1, 7, "filter=") == 0))
    return dev;
  *pushed = true;
  const bool bare = colon == std::string::npos || colon + 1 == dev.size() || dev.back() == ',';
  return dev + (colon == std::string::npos ? ":" : bare ? "" : ",") + "filter=" + expr;
}

}  // namespace gnio::cli
