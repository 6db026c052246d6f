// SPDX-License-Identifier: Apache-2.0
// The launch figures flow_count and l2fwd report in their JSON, from the
// runner's gnio::launch_stats (docs/kernels.md, "Launch modes").
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include <gnio/kernel.hpp>

namespace gnio::cli {

// Mean time from a launch until its kernel finished, in µs (0 without launches).
inline double launch_us_mean(const launch_stats& ls) noexcept {
  return ls.launches ? ls.busy_ns / 1e3 / ls.launches : 0.0;
}

// packets_per_launch and launches_per_s for `packets` processed in `seconds`;
// launched per burst also launch_us_mean, launch_busy_s, launch_idle_s and
// launch_consumed (the time from each launch until its kernel finished, and
// waiting for bursts between them).
inline void add_launch_json(nlohmann::json& j, const launch_stats& ls, uint64_t packets, double seconds,
                            bool per_burst) {
  j["packets_per_launch"] = ls.launches ? double(packets) / ls.launches : 0.0;
  j["launches_per_s"] = seconds > 0 ? ls.launches / seconds : 0.0;
  if (per_burst) {
    j["launch_us_mean"] = launch_us_mean(ls);
    j["launch_busy_s"] = ls.busy_ns / 1e9;
    j["launch_idle_s"] = ls.idle_ns / 1e9;
    j["launch_consumed"] = ls.packets;
  }
}

}  // namespace gnio::cli
