// SPDX-License-Identifier: Apache-2.0
// gnio::status, the status taxonomy's codes, on their own: device code
// returns them (recv, send) and never needs the host's error class, strings
// or messages, which gnio/status.hpp adds around this enum.
#pragma once

#include <cstdint>

namespace gnio {

// The set DOCA GPUNetIO users know from DOCA_ERROR_*, in the same order.
enum class status : int32_t {
  success = 0,
  unknown,
  not_permitted,
  in_use,
  not_supported,
  again,
  invalid_value,
  no_memory,
  initialization,
  time_out,
  shutdown,
  connection_reset,
  connection_aborted,
  connection_inprogress,
  not_connected,
  no_lock,
  not_found,
  io_failed,
  bad_state,
  unsupported_version,
  operating_system,
  driver,
  unexpected,
  already_exist,
  full,
  empty,
  in_progress,
  too_big,
  authentication,
  bad_config,
  skipped,
  device_fatal_error,
};

inline constexpr int32_t num_statuses = static_cast<int32_t>(status::device_fatal_error) + 1;

}  // namespace gnio
