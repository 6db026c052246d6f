// SPDX-License-Identifier: Apache-2.0
// What the benchmarks print and record about the machine they ran on.
#pragma once

#include <fstream>
#include <string>

namespace bench {

// The CPU's model name from /proc/cpuinfo ("unknown" where it has none).
inline std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

}  // namespace bench
