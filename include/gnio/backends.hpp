// SPDX-License-Identifier: Apache-2.0
// The port backends gnio knows: the ones built into this library and the
// ones it was configured without, with what building them needs. What
// `gnio backends` and `gnio doctor` list.
#pragma once

#include <string>
#include <vector>

namespace gnio {

struct backend_info {
  std::string name;        // the device-string prefix, e.g. "pcap"
  std::string summary;     // one line
  std::string options;     // "key=value  meaning" lines, one per option (empty when not available)
  bool available = false;  // built into this library: port::open takes "name:..."
  std::string why_not;     // when not available: what building it needs
};

// Every backend, the available ones first, in the order port::open tries names.
[[nodiscard]] std::vector<backend_info> list_backends();

// Whether port::open knows this backend name in this build.
[[nodiscard]] bool backend_available(const std::string& name);

// Options every backend takes (the core handles them), as "key=value  meaning" lines.
[[nodiscard]] std::string common_backend_options();

}  // namespace gnio
