// SPDX-License-Identifier: Apache-2.0
// Backend SDK: what a NIC backend implements. Applications never include this.
//
// A backend fills an ops table (designated initializers; a null op means "not
// supported") and plays the NIC. The core's engine threads (one per lane)
// call rx_burst with an rx_lane to write frames through: the lane steers each
// frame to an RX ring and writes it there, by copy (deliver), built in place
// (reserve/commit) or by reference to a buffer of the backend's own RX pool
// (deliver_ref), and publishes once per burst. tx_burst gets the frames
// kernels rang the TX doorbell for. The core validates arguments and
// lifecycle state; backends just do the work. The rings themselves are in
// gnio/backend/ring.hpp.
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

// The ops table's layout. 3: tx_burst_at (optional, last); 2: rx_burst
// writes through an rx_lane (copy, in place or by reference),
// rx_pool_setup/rx_release; 1 (gnio 0.1): frames went through
// rx_sink::deliver, one copy each.
#define GNIO_BACKEND_ABI_VERSION 3

namespace gnio::detail {
struct lane_state;
}

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
// packets/s or bits/s (exactly one of them becomes nonzero), more than 0 and
// at most max_rate_pps or max_rate_bps.
inline constexpr double max_rate_pps = 1e12;
inline constexpr double max_rate_bps = 1e15;
[[nodiscard]] error get_rate(const devargs& a, std::string_view key, double* pps, double* bps);
// Durations: "10" (s), "500ms", "2s", "1m"; at least 1 ns and at most
// max_duration_ns (1e9 s, about 31 years).
inline constexpr uint64_t max_duration_ns = 1'000'000'000'000'000'000ull;
[[nodiscard]] error get_duration_ns(const devargs& a, std::string_view key, uint64_t* out);
// Rejects keys outside the allowed list, naming the unknown one and the valid ones.
[[nodiscard]] error check_keys(const devargs& a, std::initializer_list<std::string_view> allowed);

// How the engine steers a frame: its class and 5-tuple hash, as the core
// computes them from the headers (steer_of). A backend that builds frames
// itself (gen) computes this once per flow and passes it to reserve().
struct steer_info {
  uint32_t hash = 0;   // Toeplitz (Microsoft key) over the 5-tuple, as device::flow_hash
  uint16_t cls = 0;    // device::rx_class
  uint16_t flags = 0;  // device::rx_flags (rx_flag_vlan)
};

[[nodiscard]] steer_info steer_of(const uint8_t* frame, uint32_t len) noexcept;

// The receive side of one engine lane: what rx_burst writes frames through.
// Each frame is steered to an RX queue of the lane (the port's rules, RSS
// inside a group); one without a queue is counted as unsteered, one whose
// queue is full as missed (or, on a lossless port, the lane waits for room).
// The lane publishes what was written when rx_burst returns.
class rx_lane {
 public:
  // Where a lane that is not part of a port sends frames: tests and tools
  // that drive a backend directly. take() returns false to refuse a frame,
  // as a full ring would.
  class collector {
   public:
    virtual bool take(const uint8_t* frame, uint32_t len, uint32_t wire_len, uint64_t ts_ns) = 0;

   protected:
    ~collector() = default;
  };

  explicit rx_lane(detail::lane_state* s) noexcept : s_(s) {}
  // pool: the host address of the backend's RX pool, for deliver_ref.
  explicit rx_lane(collector& c, uint32_t index = 0, const uint8_t* pool = nullptr)
      : c_(&c), index_(index), pool_(pool) {}

  [[nodiscard]] uint32_t index() const noexcept;

  // Copies a frame into the ring it steers to. False when it was dropped.
  bool deliver(const uint8_t* frame, uint32_t len, uint32_t wire_len, uint64_t ts_ns);

  // Builds a frame in place: where to write len bytes (cut to the ring's
  // buffer size, *cut_len), or null when the frame was dropped. commit()
  // completes it; no other call on this lane may come between.
  uint8_t* reserve(const steer_info& s, uint32_t len, uint32_t* cut_len);
  void commit(uint32_t wire_len, uint64_t ts_ns);

  // By reference, for a backend with an RX pool: the frame is in the pool at
  // byte offset buf. held: a completion names the buffer, which comes back
  // through ops::rx_release once the kernel released it. copied (the ring has
  // memory of its own) and dropped: the buffer is free again at once.
  enum class ref { held, copied, dropped };
  ref deliver_ref(uint32_t buf, uint32_t len, uint32_t wire_len, uint64_t ts_ns);

 private:
  detail::lane_state* s_ = nullptr;
  collector* c_ = nullptr;
  uint32_t index_ = 0;
  const uint8_t* pool_ = nullptr;
  std::vector<uint8_t> scratch_;  // a collector lane's reserve() buffer
  uint32_t cut_ = 0;
};

// Memory for a backend's RX pool, mapped for the port's GPUs (pinned host
// memory on a CUDA GPU, plain memory on the host executor), page aligned,
// zeroed, and freed by the core when the port closes.
struct pool_alloc {
  void* ctx;
  error (*alloc)(void* ctx, size_t bytes, uint8_t** host);
};

// What rx_pool_setup reports: the memory RX completions refer into.
struct rx_pool {
  uint8_t* host = nullptr;  // as returned by pool_alloc
  size_t bytes = 0;         // at most 4 GiB (completions carry 32-bit offsets)
  uint32_t buf_bytes = 0;   // the largest frame one buffer holds
};

struct tx_frame {
  const uint8_t* data;  // host address
  uint32_t len;
  // The frame lies in the port's RX pool at this byte offset (an RX buffer
  // sent in place); UINT32_MAX otherwise. A backend may send it without a
  // copy, as long as it is done with it when tx_burst returns.
  uint32_t pool_off = UINT32_MAX;
};

// Counters a backend keeps about the outside world (file, socket, wire).
struct counters {
  uint64_t rx_frames = 0;  // frames read from the source
  uint64_t rx_bytes = 0;
  uint64_t rx_errors = 0;  // frames the source could not deliver (damaged, read errors)
  // Frames the source dropped before the backend read them (a kernel or
  // device ring full, no free buffer): never part of rx_frames.
  uint64_t rx_dropped = 0;
  uint64_t tx_frames = 0;  // frames written to the sink
  uint64_t tx_bytes = 0;
  uint64_t tx_errors = 0;
};

struct ops {
  uint32_t size;        // sizeof(ops) the backend was built with (GNIO_BACKEND_ABI_VERSION 3)
  const char* name;     // device-string prefix, e.g. "pcap"
  const char* summary;  // one line for --help
  const char* options;  // "key=value  meaning" lines for --help
  // Parses options and acquires the source; *priv receives the backend's state.
  error (*open)(const devargs& args, void** priv);
  void (*get_caps)(void* priv, port_caps* caps);
  // Optional, for a backend whose source writes frames into memory of its own
  // (an AF_XDP UMEM, a DPDK mbuf pool): called once, right after open. It
  // allocates that memory through alloc, sets its source up on it, and
  // describes it in *pool; RX queues of the port then take frames by
  // reference (rx_lane::deliver_ref) and rx_release gives buffers back.
  // A backend may also allocate nothing and leave *pool empty: its RX
  // queues then get areas of their own and it writes by copy (deliver).
  error (*rx_pool_setup)(void* priv, const pool_alloc& alloc, rx_pool* pool);
  // Buffers (pool offsets) whose completions the kernel released, on lane's
  // engine thread. A queue several lanes write may return buffers another
  // lane received.
  void (*rx_release)(void* priv, uint32_t lane, const uint32_t* bufs, uint32_t n);
  // Optional, for sources that split into independent lanes (several engine
  // threads, core option lanes=N): called once before start. Lanes must not
  // share a flow.
  error (*set_lanes)(void* priv, uint32_t lanes);
  error (*start)(void* priv);
  // Writes up to budget frames through lane (lane.index() is 0 without
  // lanes). Returns success (some or none now), again (idle: nothing until
  // later, e.g. pacing), shutdown (end of stream: no frame will ever follow),
  // or an error. *produced counts frames taken from the source, dropped ones
  // included.
  status (*rx_burst)(void* priv, rx_lane& lane, uint32_t budget, uint32_t* produced);
  // Transmits n frames; *sent may be less than n only with an error. The
  // frames' memory is the kernel's again once it returns.
  error (*tx_burst)(void* priv, const tx_frame* frames, uint32_t n, uint32_t* sent);
  error (*stop)(void* priv);
  void (*close)(void* priv);  // frees priv; never fails
  void (*get_counters)(void* priv, counters* c);
  // Optional: why the last rx_burst that returned an error failed (e.g.
  // "eth1 was removed"), or null. The core puts it in the port's
  // engine_error(). The text must stay valid until the backend is closed.
  const char* (*last_error)(void* priv);
  // Optional: transmits n frames as tx_burst does, frame i with its
  // not-before time not_before[i] (CLOCK_REALTIME nanoseconds, 0: none),
  // for a backend that handles the times itself and says how in
  // port_caps::tx_time (a capture file writes them as the frames'
  // timestamps). Without it the engine holds each frame until its time and
  // calls tx_burst.
  error (*tx_burst_at)(void* priv, const tx_frame* frames, const uint64_t* not_before, uint32_t n, uint32_t* sent);
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
