// SPDX-License-Identifier: Apache-2.0
// Backend SDK: logging and errors, so that a backend needs nothing from the
// core's own sources. Messages go through gnio's log (GNIO_LOG_LEVEL, the
// application's log hook); fail() builds the error a backend op returns,
// logged at debug level where it is made, as the core's own errors are.
//
//   log(log_level::warn, "af_packet: {}: socket error {}", ifname, e);
//   return fail(status_from_errno(errno), "pcap: cannot open capture '{}'", path);
//
// Needs {fmt} (the core links it, and so do in-tree backends). Backends are
// host code; under nvcc, whose front end does not compile fmt's headers,
// only the errno and file helpers are declared.
#pragma once

#include <string>
#include <utility>

#if !defined(__CUDACC__)
#include <fmt/format.h>
#endif

#include "gnio/log.hpp"
#include "gnio/printable.hpp"
#include "gnio/status.hpp"

namespace gnio::backend {

#if !defined(__CUDACC__)

// Formats and writes one message when `level` is enabled.
template <class... Args>
void log(log_level level, fmt::format_string<Args...> f, Args&&... args) {
  if (!log_enabled(level)) return;
  log_write(level, fmt::format(f, std::forward<Args>(args)...));
}

// Builds an error, logs it at debug level, and returns it: `return fail(status::x, "...", ...)`.
// Messages echo what users typed (device strings, file names) and what files
// hold, so control characters and bytes that are not UTF-8 are escaped
// (gnio::printable) before a terminal or a JSON writer sees them.
template <class... Args>
[[nodiscard]] error fail(status s, fmt::format_string<Args...> f, Args&&... args) {
  std::string msg = printable(fmt::format(f, std::forward<Args>(args)...));
  if (log_enabled(log_level::debug)) log_write(log_level::debug, fmt::format("{}: {}", to_string(s), msg));
  return error(s, std::move(msg));
}

#endif  // !__CUDACC__

// The status for an errno from a system call a backend or the core made:
//   ENOENT, ENOTDIR, ENODEV, ENXIO                 not_found
//   EACCES, EPERM, EROFS                           not_permitted
//   ENOMEM, ENOBUFS                                no_memory
//   EBUSY                                          in_use
//   EEXIST                                         already_exist
//   EINVAL                                         invalid_value
//   ENETDOWN                                       not_connected
//   ENOTSUP, EOPNOTSUPP, EAFNOSUPPORT,
//   EPROTONOSUPPORT, ENOPROTOOPT                   not_supported
//   anything else                                  io_failed
// A backend whose calls give an errno another meaning maps that one first.
[[nodiscard]] status status_from_errno(int e) noexcept;

// For output files a backend writes (pcap's tx=): 0 when `path` could be
// created (or, existing, written), else the errno creating it would fail
// with (ENOENT: no such directory, EISDIR, EACCES, EROFS, ...). Touches
// nothing: an existing file is neither opened nor truncated, and a missing
// one is not created, so the check can come at open and the file at start.
[[nodiscard]] int output_path_errno(const std::string& path) noexcept;

}  // namespace gnio::backend
