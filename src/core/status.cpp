// SPDX-License-Identifier: Apache-2.0
#include "gnio/status.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <string>

namespace gnio {
namespace {

using enum layer;

// Order matches enum class status; checked by a static_assert below and by tests.
constexpr std::array<status_info, num_statuses> k_table{{
    {status::success, "success", "the call did what it was asked", none, "nothing"},
    {status::unknown, "unknown", "an error with no better classification", runtime,
     "run with GNIO_LOG_LEVEL=debug and read the message logged before it"},
    {status::not_permitted, "not_permitted", "the operation needs privileges the process lacks", env,
     "run as root or grant CAP_NET_RAW/CAP_NET_ADMIN; check file permissions"},
    {status::in_use, "in_use", "the resource is held by someone else", env,
     "find the other user of the device, queue or file (lsof, ip link) and stop it"},
    {status::not_supported, "not_supported", "this device, backend or build cannot do it", build,
     "run `gnio caps` for the reason; try another memory type, backend or executor"},
    {status::again, "again", "nothing available right now; retrying may succeed", runtime,
     "retry later, or raise the timeout or ring size"},
    {status::invalid_value, "invalid_value", "an argument is out of range or malformed", program,
     "check the argument named in the message against the option's --help"},
    {status::no_memory, "no_memory", "host, pinned or GPU memory could not be allocated", env,
     "reduce queue sizes, free GPU memory (nvidia-smi), raise memlock limits (ulimit -l)"},
    {status::initialization, "initialization", "a component failed to initialise", env,
     "check the driver and device (gnio doctor) and the message for the failing component"},
    {status::time_out, "time_out", "the operation did not finish by its deadline", runtime,
     "a kernel ignored the exit flag or a peer did not answer; memory was kept alive"},
    {status::shutdown, "shutdown", "the object is shutting down or the stream has ended", runtime,
     "expected at end of input; otherwise check who stopped the port or kernel"},
    {status::connection_reset, "connection_reset", "the peer reset the connection", runtime,
     "check the peer; the connection was closed by the other side"},
    {status::connection_aborted, "connection_aborted", "the connection was aborted locally", runtime,
     "check local resource limits and the log for the abort reason"},
    {status::connection_inprogress, "connection_inprogress", "the connection is still being set up", runtime,
     "wait and poll again"},
    {status::not_connected, "not_connected", "the object is not connected to a peer, or its link is down", env,
     "bring the link up (ip link set dev NAME up) and check its cable or peer; for a connection, open the peer first"},
    {status::no_lock, "no_lock", "a lock could not be taken", runtime, "retry; check for a stuck holder"},
    {status::not_found, "not_found", "the named device, file, interface or entry does not exist", env,
     "check the spelling; list what exists (gnio doctor, ip link, nvidia-smi -L)"},
    {status::io_failed, "io_failed", "reading or writing a file, socket or device failed", env,
     "check disk space, the file's integrity and the device's link state"},
    {status::bad_state, "bad_state", "the call is out of order for the object's current state", program,
     "follow the lifecycle: gpu, port, queues, start, launch, stop kernels, stop port, destroy"},
    {status::unsupported_version, "unsupported_version", "a file, driver or library version is not supported", version,
     "check driver/runtime versions (gnio doctor) or the file format version"},
    {status::operating_system, "operating_system", "a system call failed", env,
     "read errno's text in the message; check kernel features and limits"},
    {status::driver, "driver", "the CUDA or NIC driver reported an error", driver,
     "read the driver's error in the message; check dmesg and nvidia-smi"},
    {status::unexpected, "unexpected", "an internal invariant was broken", program,
     "a gnio bug: report it with the message and GNIO_LOG_LEVEL=debug output"},
    {status::already_exist, "already_exist", "the object already exists", program,
     "reuse the existing object or destroy it first"},
    {status::full, "full", "a ring or table is full", runtime,
     "consume faster, add queues or raise the ring size; dropped packets are counted as missed"},
    {status::empty, "empty", "a ring, file or table holds nothing", runtime,
     "check that the input has packets and the producer runs"},
    {status::in_progress, "in_progress", "the operation was started and is not finished", runtime, "poll again later"},
    {status::too_big, "too_big", "a packet, size or count exceeds a limit", program,
     "raise the buffer stride or ring size, or use smaller packets"},
    {status::authentication, "authentication", "authentication failed", env, "check credentials"},
    {status::bad_config, "bad_config", "the configuration is inconsistent or unknown", program,
     "check the device string and options against --help and docs"},
    {status::skipped, "skipped", "the step was skipped because it does not apply here", runtime,
     "nothing to fix unless the step was required"},
    {status::device_fatal_error, "device_fatal_error", "the GPU or NIC is in an unrecoverable state", driver,
     "the process must exit; check dmesg/Xid errors and reset the device"},
}};

constexpr bool table_in_order() {
  for (int32_t i = 0; i < num_statuses; ++i)
    if (static_cast<int32_t>(k_table[static_cast<size_t>(i)].code) != i) return false;
  return true;
}
static_assert(table_in_order(), "status table out of order");

std::string upper(std::string_view s) {
  std::string o(s);
  for (auto& c : o) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return o;
}

}  // namespace

std::span<const status_info> all_statuses() noexcept { return k_table; }

const status_info& describe(status s) noexcept {
  auto i = static_cast<int32_t>(s);
  if (i < 0 || i >= num_statuses) return k_table[static_cast<size_t>(status::unknown)];
  return k_table[static_cast<size_t>(i)];
}

std::string_view to_string(status s) noexcept { return describe(s).name; }

std::string_view to_string(layer l) noexcept {
  switch (l) {
    case layer::none: return "none";
    case layer::env: return "env";
    case layer::version: return "version";
    case layer::build: return "build";
    case layer::runtime: return "runtime";
    case layer::program: return "program";
    case layer::driver: return "driver";
  }
  return "unknown";
}

bool parse_status(std::string_view text, status& out) noexcept {
  if (text.empty()) return false;
  int value = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc{} && p == text.data() + text.size()) {
    if (value < 0 || value >= num_statuses) return false;
    out = static_cast<status>(value);
    return true;
  }
  std::string t = upper(text);
  if (t.rfind("DOCA_ERROR_", 0) == 0) t = t.substr(11);
  if (t == "DOCA_SUCCESS") t = "SUCCESS";
  for (const auto& e : k_table) {
    if (upper(e.name) == t) {
      out = e.code;
      return true;
    }
  }
  return false;
}

std::string error::what() const {
  std::string s(to_string(code_));
  if (!message_.empty()) {
    s += ": ";
    s += message_;
  }
  return s;
}

}  // namespace gnio
