// SPDX-License-Identifier: Apache-2.0
// What bench/latency's host-side files share: the inputs and one run's result.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace latency {

struct config {
  uint64_t samples = 10'000;
  uint64_t warmup = 200;
  double interval_us = 50;
  uint64_t load_pps = 200'000;
  uint32_t load_burst = 32;
  uint32_t batch = 32;
  uint64_t batch_timeout_us = 100;
  uint32_t threads = 256;
  std::string gpu = "0";
  std::string gnio_bin;
  double timeout_s = 1.0;  // a sample not answered in this long is lost
};

// Latencies of one run, in nanoseconds, and what went wrong.
struct run_result {
  std::string test, exec, poll, setting;
  bool load = false;
  std::vector<uint64_t> ns;
  uint64_t sent = 0, lost = 0, bad = 0;
  uint64_t load_sent = 0, load_seen = 0;
  double load_seconds = 0;
  std::string error;
  nlohmann::json extra = nlohmann::json::object();
};

// The veth test (latency_veth.cpp).
std::vector<std::string> veth_settings();
bool veth_setup(std::string* ns_srv, std::string* ns_cli, std::string* why);
void veth_teardown();
run_result run_veth(const std::string& setting, bool load, const config& c, const std::string& ns_srv,
                    const std::string& ns_cli, uint32_t target_ip);

}  // namespace latency
