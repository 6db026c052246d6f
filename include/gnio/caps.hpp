// SPDX-License-Identifier: Apache-2.0
// Capabilities a backend reports for its queues.
#pragma once

#include <cstdint>

namespace gnio {

// What a port does with a frame's not-before time (device::tx_prepare_at).
//   none:      the port does not send.
//   hold:      the engine keeps the frame (and the frames after it on its
//              queue) until its time, then hands it to the backend: it leaves
//              at or after its time, never before, later by the engine's
//              polling and the backend's own path (software pacing).
//   timestamp: the backend writes the frame with its time as its timestamp
//              (a capture file); nothing waits.
//   kernel:    the backend hands the frame over at once with its time, and the
//              kernel's qdisc holds it until then (SO_TXTIME with fq); a NIC
//              with launch-time offload may then do it in hardware.
enum class tx_time_mode : uint8_t { none = 0, hold = 1, timestamp = 2, kernel = 3 };

[[nodiscard]] constexpr const char* to_string(tx_time_mode m) noexcept {
  switch (m) {
    case tx_time_mode::hold: return "hold";
    case tx_time_mode::timestamp: return "timestamp";
    case tx_time_mode::kernel: return "kernel";
    default: return "none";
  }
}

struct port_caps {
  bool rx = false;
  bool tx = false;
  uint32_t max_rx_queues = 0;
  uint32_t max_tx_queues = 0;
  uint32_t max_pkt_bytes = 0;  // largest frame it can deliver or send
  uint32_t min_ring_descs = 0;
  uint32_t max_ring_descs = 0;
  bool rx_timestamps = false;  // real receive/capture timestamps
  bool finite = false;         // the source ends by itself (a file, a count)
  bool hw_steering = false;    // steering done by the NIC, not in software
  bool ipv4_csum_offload = false;
  bool l4_csum_offload = false;
  // Set by a backend whose tx_burst_at handles the times itself; the core
  // makes it hold for every other port that sends.
  tx_time_mode tx_time = tx_time_mode::none;
};

}  // namespace gnio

#include <string>
#include <string_view>
#include <vector>

#include "gnio/gpu.hpp"
#include "gnio/status.hpp"

namespace gnio {

// The oldest GPU this build's kernels run on: CUDA builds carry compute_75 PTX.
inline constexpr int min_compute_capability = 75;

// The features of the dual capability check, in the order evaluate_caps
// reports them; to_string gives the names `gnio caps` prints.
enum class cap_feature : uint8_t {
  kernels,  // the executor can run this build's kernels
  rx,
  tx,
  recv_thread,
  recv_warp,
  recv_block,
  send_thread,
  send_warp,
  send_block,
  tx_time,      // TX not-before times (device::tx_prepare_at; port_caps::tx_time says how)
  mem_cpu_gpu,  // packet memory types
  mem_gpu,
  mem_gpu_cpu,
  rx_timestamps,  // the source's own receive timestamps
  gpudirect_rdma,
};

[[nodiscard]] constexpr const char* to_string(cap_feature f) noexcept {
  switch (f) {
    case cap_feature::kernels: return "kernels";
    case cap_feature::rx: return "rx";
    case cap_feature::tx: return "tx";
    case cap_feature::recv_thread: return "recv_thread";
    case cap_feature::recv_warp: return "recv_warp";
    case cap_feature::recv_block: return "recv_block";
    case cap_feature::send_thread: return "send_thread";
    case cap_feature::send_warp: return "send_warp";
    case cap_feature::send_block: return "send_block";
    case cap_feature::tx_time: return "tx_time";
    case cap_feature::mem_cpu_gpu: return "mem_cpu_gpu";
    case cap_feature::mem_gpu: return "mem_gpu";
    case cap_feature::mem_gpu_cpu: return "mem_gpu_cpu";
    case cap_feature::rx_timestamps: return "rx_timestamps";
    case cap_feature::gpudirect_rdma: return "gpudirect_rdma";
  }
  return "unknown";
}

// One line of the dual capability check: a feature, whether this port on this
// device supports it (success or not_supported), and the reason when not.
struct feature_verdict {
  cap_feature feature = cap_feature::kernels;
  status code = status::success;
  std::string reason;  // empty on success
};

// Combines what the backend can do with what the device can do. Pure: the
// inputs may come from a real device or be made up (tests do).
[[nodiscard]] std::vector<feature_verdict> evaluate_caps(const port_caps& port, std::string_view backend,
                                                         const gpu_info& dev, bool cuda_built);

// What an application checks before it gives a device receive queues: can it
// run persistent kernels that receive from this port at block scope (the
// "kernels" and "recv_block" verdicts above)? success, or not_supported with
// the reason.
[[nodiscard]] error check_receive_kernels(const port_caps& port, std::string_view backend, const gpu_info& dev,
                                          bool cuda_built);

}  // namespace gnio
