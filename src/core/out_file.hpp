// SPDX-License-Identifier: Apache-2.0
// Output files a port writes (a pcap backend's tx=, the core's tx_pcap=):
// checked when the port opens, created only when it starts, so a port that
// is opened and never started (gnio caps, a run refused before start) leaves
// an existing file as it was and creates none.
#pragma once

#include <string>

#include "gnio/backend/log.hpp"
#include "gnio/status.hpp"

namespace gnio::detail {

// The backend SDK's helpers (gnio/backend/log.hpp), by the core's names.
using backend::output_path_errno;
inline status file_errno_status(int e) noexcept { return backend::status_from_errno(e); }

}  // namespace gnio::detail
