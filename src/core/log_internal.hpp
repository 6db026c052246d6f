// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <fmt/format.h>

#include "gnio/log.hpp"
#include "gnio/printable.hpp"
#include "gnio/status.hpp"

namespace gnio::detail {

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
error fail(status s, fmt::format_string<Args...> f, Args&&... args) {
  std::string msg = printable(fmt::format(f, std::forward<Args>(args)...));
  if (log_enabled(log_level::debug)) log_write(log_level::debug, fmt::format("{}: {}", to_string(s), msg));
  return error(s, std::move(msg));
}

}  // namespace gnio::detail
