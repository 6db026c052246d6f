// SPDX-License-Identifier: Apache-2.0
// Logging with levels from GNIO_LOG_LEVEL and a hook the application may replace.
#pragma once

#include <functional>
#include <string_view>

namespace gnio {

enum class log_level : int { error = 0, warn = 1, info = 2, debug = 3, trace = 4, off = -1 };

// Receives every message at or below the current level. The default hook
// writes "gnio: LEVEL: message" to stderr.
using log_hook = std::function<void(log_level, std::string_view message)>;

// Level starts from GNIO_LOG_LEVEL (error|warn|info|debug|trace|off), default warn.
[[nodiscard]] log_level get_log_level() noexcept;
void set_log_level(log_level level) noexcept;
// Installs a hook; an empty function restores the default. Returns the previous hook.
log_hook set_log_hook(log_hook hook);
[[nodiscard]] bool parse_log_level(std::string_view text, log_level& out) noexcept;
[[nodiscard]] std::string_view to_string(log_level level) noexcept;

[[nodiscard]] inline bool log_enabled(log_level level) noexcept {
  return static_cast<int>(level) <= static_cast<int>(get_log_level());
}
void log_write(log_level level, std::string_view message);

}  // namespace gnio
