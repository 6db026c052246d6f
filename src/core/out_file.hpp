// SPDX-License-Identifier: Apache-2.0
// Output files a port writes (a pcap backend's tx=, the core's tx_pcap=):
// checked when the port opens, created only when it starts, so a port that
// is opened and never started (gnio caps, a run refused before start) leaves
// an existing file as it was and creates none.
#pragma once

#include <string>

#include "gnio/status.hpp"

namespace gnio::detail {

// The status for an errno from opening, creating or writing a file.
[[nodiscard]] status file_errno_status(int e) noexcept;

// 0 when `path` could be created (or, existing, written), else the errno
// creating it would fail with (ENOENT: no such directory, EISDIR, EACCES,
// EROFS, ...). Touches nothing: an existing file is neither opened nor
// truncated, and a missing one is not created.
[[nodiscard]] int output_path_errno(const std::string& path) noexcept;

}  // namespace gnio::detail
