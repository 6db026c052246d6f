// SPDX-License-Identifier: Apache-2.0
// Backend SDK: what a NIC backend implements. Applications never include this.
//
// A backend fills an ops table (designated initializers; a null op means "not
// supported") and plays the NIC: the core's engine thread calls rx_burst to
// have it deliver frames through an rx_sink (which steers them into RX rings,
// dropping and counting when a ring is full), and tx_burst with frames the
// kernels rang the doorbell for. The core validates arguments and lifecycle
// state; backends just do the work.
#pragma once

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gnio/caps.hpp"
#include "gnio/status.hpp"

namespace gnio::backend {

// A parsed device string: "name:key=value,key=value".
struct devargs {
  std::string name;
  std::vector<std::pair<std::string, std::string>> kv;
  std::string text;  // the whole string, for messages

  [[nodiscard]] const std::string* find(std::string_view key) const noexcept {
    for (const auto& [k, v] : kv)
      if (k == key) return &v;
    return nullptr;
  }
};

[[nodiscard]] result<devargs> parse_devargs(std::string_view text);

// Typed option readers with clear messages ("gen: size=abc is not a number").
// Each returns invalid_value when present but malformed and leaves *out alone
// when absent.
[[nodiscard]] error get_u64(const devargs& a, std::string_view key, uint64_t min, uint64_t max, uint64_t* out);
[[nodiscard]] error get_string(const devargs& a, std::string_view key, std::string* out);
// Rates: "1000" or "1000pps", "2.5Mpps", "1Gbps", "100Mbps", "500kpps". Writes
// packets/s or bits/s (exactly one of them becomes nonzero).
[[nodiscard]] error get_rate(const devargs& a, std::string_view key, double* pps, double* bps);
// Durations: "10" (s), "500ms", "2s", "1m".
[[nodiscard]] error get_duration_ns(const devargs& a, std::string_view key, uint64_t* out);
// Rejects keys outside the allowed list, naming the unknown one and the valid ones.
[[nodiscard]] error check_keys(const devargs& a, std::initializer_list<std::string_view> allowed);

// How a backend hands frames to the core. deliver() copies the frame into the
// steered RX ring (or counts it as missed when that ring is full) and returns
// false only when it was dropped.
struct rx_sink {
  void* ctx;
  bool (*deliver_fn)(void* ctx, const uint8_t* frame, uint32_t len, uint32_t wire_len, uint64_t ts_ns);
  bool deliver(const uint8_t* frame, uint32_t len, uint32_t wire_len, uint64_t ts_ns) const {
    return deliver_fn(ctx, frame, len, wire_len, ts_ns);
  }
};

struct tx_frame {
  const uint8_t* data;
  uint32_t len;
};

// Counters a backend keeps about the outside world (file, socket, wire).
struct counters {
  uint64_t rx_frames = 0;   // frames read from the source
  uint64_t rx_bytes = 0;
  uint64_t rx_errors = 0;   // frames the source could not deliver (damaged, read errors)
  uint64_t tx_frames = 0;   // frames written to the sink
  uint64_t tx_bytes = 0;
  uint64_t tx_errors = 0;
};

struct ops {
  uint32_t size;          // sizeof(ops) the backend was built with
  const char* name;       // device-string prefix, e.g. "pcap"
  const char* summary;    // one line for --help
  const char* options;    // "key=value  meaning" lines for --help
  // Parses options and acquires the source; *priv receives the backend's state.
  error (*open)(const devargs& args, void** priv);
  void (*get_caps)(void* priv, port_caps* caps);
  error (*start)(void* priv);
  // Delivers up to budget frames. Returns success (some or none now), again
  // (idle: nothing until later, e.g. pacing), shutdown (end of stream: no
  // frame will ever follow), or an error.
  status (*rx_burst)(void* priv, const rx_sink& sink, uint32_t budget, uint32_t* produced);
  // Transmits n frames; *sent may be less than n only with an error.
  error (*tx_burst)(void* priv, const tx_frame* frames, uint32_t n, uint32_t* sent);
  error (*stop)(void* priv);
  void (*close)(void* priv);  // frees priv; never fails
  void (*get_counters)(void* priv, counters* c);
  // Optional, for sources that split into independent lanes (several engine
  // threads, core option lanes=N): set_lanes is called once before start, then
  // lane i's thread calls rx_burst_lane(priv, i, ...) instead of rx_burst.
  // Lanes must not share a flow.
  error (*set_lanes)(void* priv, uint32_t lanes);
  status (*rx_burst_lane)(void* priv, uint32_t lane, const rx_sink& sink, uint32_t budget, uint32_t* produced);
  // Optional: why the last rx_burst or rx_burst_lane that returned an error
  // failed (e.g. "eth1 was removed"), or null. The core puts it in the port's
  // engine_error(). The text must stay valid until the backend is closed.
  const char* (*last_error)(void* priv);
};

// Why a backend's receive failed, for its last_error op and for its other
// lanes: the first reason set wins and never changes (so the pointer text()
// returns stays valid until the backend is closed), and failed() becomes true
// once it is set. Any thread may call any member.
class rx_failure {
 public:
  void set(std::string why) {
    std::lock_guard lk(mu_);
    if (text_.empty()) text_ = std::move(why);
    // Pairs with the acquire load in failed(): a thread that sees the flag
    // also sees the text.
    failed_.store(true, std::memory_order_release);
  }
  [[nodiscard]] bool failed() const noexcept { return failed_.load(std::memory_order_acquire); }
  [[nodiscard]] const char* text() const {
    std::lock_guard lk(mu_);
    return text_.c_str();
  }

 private:
  mutable std::mutex mu_;
  std::string text_;
  std::atomic<bool> failed_{false};
};

// Backends compiled into this build.
[[nodiscard]] std::span<const ops* const> registered();
[[nodiscard]] const ops* find(std::string_view name);

}  // namespace gnio::backend
