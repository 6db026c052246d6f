// SPDX-License-Identifier: Apache-2.0
// The status taxonomy. Every fallible gnio call returns one of these; device
// code returns them too (the enum is usable in kernels), it never throws.
#pragma once

#include <cstdint>
#if __cplusplus >= 202002L
#include <span>
#endif
#include <string>
#include <string_view>
#include <utility>

#include "gnio/device/config.hpp"
#include "gnio/device/status_code.hpp"  // the enum, shared with device code

namespace gnio {

// Where a status usually comes from, so messages can say where to look.
enum class layer : uint8_t {
  none,     // success
  env,      // the machine: permissions, devices, kernel features, files
  version,  // mismatched driver/runtime/library versions
  build,    // gnio was built without the feature
  runtime,  // a transient condition at run time (ring full, timeout, peer gone)
  program,  // the calling program: wrong argument or call order
  driver,   // CUDA driver, NIC driver or the OS below them
};

struct status_info {
  status code;
  std::string_view name;     // e.g. "bad_state"
  std::string_view meaning;  // one line
  layer where;
  std::string_view next;  // what to check next
};

// Every status with its name, meaning, layer and remedy hint.
// C++20 only: the device headers include this one and must also compile as
// C++17 (nvcc's default), as DOCA-compatible programs are built (docs/doca-compat.md).
#if __cplusplus >= 202002L
[[nodiscard]] std::span<const status_info> all_statuses() noexcept;
#endif
[[nodiscard]] const status_info& describe(status s) noexcept;
[[nodiscard]] std::string_view to_string(status s) noexcept;
[[nodiscard]] std::string_view to_string(layer l) noexcept;
// Accepts a name ("bad_state"), a DOCA-style name ("DOCA_ERROR_BAD_STATE") or a number.
[[nodiscard]] bool parse_status(std::string_view text, status& out) noexcept;

GNIO_HOST_DEVICE constexpr bool ok(status s) noexcept { return s == status::success; }

// A status plus the message that names the failing layer and the next thing to
// check. Library calls return this instead of throwing.
class [[nodiscard]] error {
 public:
  error() noexcept = default;
  error(status code) : code_(code) {}  // NOLINT: implicit from a bare status is intended
  error(status code, std::string message) : code_(code), message_(std::move(message)) {}

  [[nodiscard]] status code() const noexcept { return code_; }
  [[nodiscard]] const std::string& message() const noexcept { return message_; }
  [[nodiscard]] bool ok() const noexcept { return code_ == status::success; }
  explicit operator bool() const noexcept { return code_ != status::success; }
  // "bad_state: port is started; stop it before creating queues"
  [[nodiscard]] std::string what() const;

 private:
  status code_ = status::success;
  std::string message_;
};

// Value or error, for calls that make something.
template <class T>
class [[nodiscard]] result {
 public:
  result(T value) : value_(std::move(value)), has_(true) {}  // NOLINT
  result(error e) : err_(std::move(e)) {}                    // NOLINT
  result(status s, std::string msg) : err_(s, std::move(msg)) {}

  [[nodiscard]] bool ok() const noexcept { return has_; }
  explicit operator bool() const noexcept { return has_; }
  [[nodiscard]] T& value() & { return value_; }
  [[nodiscard]] const T& value() const& { return value_; }
  [[nodiscard]] T&& value() && { return std::move(value_); }
  [[nodiscard]] T& operator*() & { return value_; }
  [[nodiscard]] const T& operator*() const& { return value_; }
  [[nodiscard]] T&& operator*() && { return std::move(value_); }
  [[nodiscard]] T* operator->() { return &value_; }
  [[nodiscard]] const T* operator->() const { return &value_; }
  [[nodiscard]] const error& err() const noexcept { return err_; }
  [[nodiscard]] status code() const noexcept { return has_ ? status::success : err_.code(); }

 private:
  T value_{};
  error err_;
  bool has_ = false;
};

}  // namespace gnio
