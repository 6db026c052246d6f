// SPDX-License-Identifier: Apache-2.0
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

#include "log_internal.hpp"

namespace gnio {
namespace {

log_level level_from_env() noexcept {
  const char* env = std::getenv("GNIO_LOG_LEVEL");
  log_level l = log_level::warn;
  if (env && !parse_log_level(env, l)) {
    std::fprintf(stderr,
                 "gnio: warn: GNIO_LOG_LEVEL='%s' is not one of error, warn, info, debug, trace, off; using warn\n",
                 env);
    l = log_level::warn;
  }
  return l;
}

std::atomic<int>& level_ref() noexcept {
  static std::atomic<int> level{static_cast<int>(level_from_env())};
  return level;
}

std::mutex& hook_mutex() {
  static std::mutex m;
  return m;
}

log_hook& hook_ref() {
  static log_hook h;
  return h;
}

}  // namespace

log_level get_log_level() noexcept { return static_cast<log_level>(level_ref().load(std::memory_order_relaxed)); }
void set_log_level(log_level level) noexcept { level_ref().store(static_cast<int>(level), std::memory_order_relaxed); }

log_hook set_log_hook(log_hook hook) {
  std::lock_guard lk(hook_mutex());
  log_hook old = std::move(hook_ref());
  hook_ref() = std::move(hook);
  return old;
}

std::string_view to_string(log_level level) noexcept {
  switch (level) {
    case log_level::error: return "error";
    case log_level::warn: return "warn";
    case log_level::info: return "info";
    case log_level::debug: return "debug";
    case log_level::trace: return "trace";
    case log_level::off: return "off";
  }
  return "?";
}

bool parse_log_level(std::string_view text, log_level& out) noexcept {
  std::string t(text);
  for (auto& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (auto l :
       {log_level::error, log_level::warn, log_level::info, log_level::debug, log_level::trace, log_level::off}) {
    if (t == to_string(l)) {
      out = l;
      return true;
    }
  }
  if (t == "warning") {
    out = log_level::warn;
    return true;
  }
  return false;
}

void log_write(log_level level, std::string_view message) {
  std::lock_guard lk(hook_mutex());
  if (hook_ref()) {
    hook_ref()(level, message);
    return;
  }
  std::fprintf(stderr, "gnio: %.*s: %.*s\n", static_cast<int>(to_string(level).size()), to_string(level).data(),
               static_cast<int>(message.size()), message.data());
}

}  // namespace gnio
