// SPDX-License-Identifier: Apache-2.0
// gnio::port: a NIC (or a software stand-in) opened from a device string, its
// RX/TX queues and the memory registered with it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gnio/caps.hpp"
#include "gnio/device/bpf.hpp"
#include "gnio/device/ring.hpp"
#include "gnio/gpu.hpp"
#include "gnio/memory.hpp"
#include "gnio/status.hpp"

namespace gnio {

namespace detail {
struct port_state;
}

struct rxq_config {
  uint32_t num_descs = 1024;  // power of two; the ring's depth
  uint32_t stride = 2048;     // the largest frame a buffer holds; longer frames are cut (and flagged)
  // Where frames land. automatic: by reference in the backend's RX pool when
  // it has one, else mapped pinned host memory (cpu_gpu). gpu: GPU memory,
  // filled by asynchronous copies from pinned staging.
  mem_type pkt_mem = mem_type::automatic;
  // Consumed by a CPU thread rather than a kernel (e.g. TCP control on the
  // CPU): everything is placed in host-visible memory; use rxq_host().
  bool host_consumer = false;
  // The GPU whose kernels consume this queue and whose memory holds it; null:
  // the port's own. Lets one port spread its queues over several GPUs.
  gpu* owner = nullptr;
  // Inline headers: each completion entry carries a copy of its frame's
  // first inline_bytes bytes (0, or a multiple of 32 up to 224;
  // device::rxq::inline_bytes), so a kernel doing header-only work reads no
  // packet buffer (device::pkt_frame). Costs the backend a copy of that many
  // bytes per frame; worth it where the kernel reads entries across PCIe.
  uint32_t inline_bytes = 0;
};

struct txq_config {
  uint32_t num_descs = 1024;  // power of two
  uint32_t stride = 2048;     // bytes per TX buffer slot
  mem_type pkt_mem = mem_type::automatic;
  bool host_producer = false;  // filled by a CPU thread; use txq_host()
  gpu* owner = nullptr;        // as rxq_config::owner
};

// Software flow steering: frames of a class go to a group of RX queues, spread
// over the group by their 5-tuple hash (RSS). Classes without a rule go to the
// default group (all RX queues unless set).
struct steering_rule {
  device::rx_class cls = device::rx_class_other;
  std::vector<uint32_t> queues;
};

struct rxq_stats {
  uint64_t offered = 0;    // frames steered to this queue
  uint64_t delivered = 0;  // written to the ring and published
  uint64_t missed = 0;     // dropped because the ring was full (never overwritten)
  uint64_t bytes = 0;      // bytes delivered
  uint64_t truncated = 0;  // frames cut to the slot size
  uint64_t consumed = 0;   // released by the kernel (its published consumer index)
  uint64_t returned = 0;   // by-reference queues: released buffers handed back to the backend (e.g. the fill ring)
};

struct txq_stats {
  uint64_t sent = 0;  // descriptors the backend completed
  uint64_t bytes = 0;
  uint64_t errors = 0;    // completed but the backend failed to send them
  uint64_t bad_addr = 0;  // descriptor address outside registered memory (completed, not sent)
};

// One engine thread (lanes=N gives N). busy_ns / frames is what the engine
// spends per frame: the backend's burst plus writing and publishing it.
// full_ns says whether the consumer or the engine sets a lossless run's pace:
// time the lane could not take a burst because a queue it alone writes had
// no free entry (overflow=wait; a shared queue's wait is inside a burst, in
// busy_ns).
struct lane_stats {
  uint64_t frames = 0;   // frames the lane took from the backend
  uint64_t busy_ns = 0;  // time spent on bursts that carried frames
  uint64_t full_ns = 0;  // time spent waiting for a full queue to be consumed
};

struct port_stats {
  uint64_t rx_frames = 0;  // frames the backend produced
  uint64_t rx_bytes = 0;
  uint64_t rx_errors = 0;  // source-side errors (damaged capture, socket errors)
  // Frames the source dropped before the engine saw them (a kernel or device
  // ring full, no free buffer: af_xdp's rx_dropped/rx_ring_full, af_packet's
  // tp_drops, DPDK's imissed/rx_nombuf). Outside received = processed +
  // missed + unsteered + pending, which starts at rx_frames.
  uint64_t rx_dropped = 0;
  uint64_t rx_missed = 0;     // sum over queues
  uint64_t rx_delivered = 0;  // sum over queues
  uint64_t rx_unsteered = 0;  // frames with no queue to go to (no RX queue for their class)
  uint64_t tx_frames = 0;
  uint64_t tx_bytes = 0;
  uint64_t tx_errors = 0;
  bool rx_ended = false;  // the backend reported end of stream
  std::vector<rxq_stats> rxq;
  std::vector<txq_stats> txq;
  std::vector<lane_stats> lanes;  // while started and after (empty before start)
};

namespace detail {
// The lanes' total of one time (a lane_stats member) over the frames they
// took in (0 before the first frame).
[[nodiscard]] inline double lanes_ns_per_frame(const port_stats& s, uint64_t lane_stats::*ns) noexcept {
  uint64_t frames = 0, total = 0;
  for (const auto& l : s.lanes) {
    frames += l.frames;
    total += l.*ns;
  }
  return frames ? static_cast<double>(total) / static_cast<double>(frames) : 0.0;
}
}  // namespace detail

// What the engine spent per frame over all its lanes: their busy time over
// the frames they took in (0 before the first frame).
[[nodiscard]] inline double engine_ns_per_frame(const port_stats& s) noexcept {
  return detail::lanes_ns_per_frame(s, &lane_stats::busy_ns);
}

// The lanes' time waiting for full queues (lane_stats::full_ns) per frame
// they took: beside engine_ns_per_frame, how much of a lossless run's time
// per frame was the consumer's.
[[nodiscard]] inline double engine_full_ns_per_frame(const port_stats& s) noexcept {
  return detail::lanes_ns_per_frame(s, &lane_stats::full_ns);
}

// Owns a backend instance, its queues and their memory: move-only, ended by
// the destructor (which keeps everything a running kernel may use).
class port {
 public:
  port() = default;
  port(port&&) noexcept = default;
  port& operator=(port&&) noexcept = default;
  port(const port&) = delete;
  port& operator=(const port&) = delete;
  ~port();

  // dev: "pcap:file=x.pcap,loop=2", "gen:size=64,flows=1024,count=1000000", "pair:" ...
  [[nodiscard]] static result<port> open(gpu& g, std::string_view dev);

  [[nodiscard]] const port_caps& caps() const;
  [[nodiscard]] const std::string& name() const;

  // Configuration, before start(); bad_state afterwards.
  [[nodiscard]] result<uint32_t> create_rxq(const rxq_config& cfg = {});
  [[nodiscard]] result<uint32_t> create_txq(const txq_config& cfg = {});
  // Makes a buffer array reachable as a TX descriptor address.
  [[nodiscard]] error register_memory(const mem_block& block);
  // The frames rx_pcap=FILE writes: those this classic BPF program accepts
  // (verified here; gnio::compile_filter makes one from a tcpdump
  // expression); none set, every frame the port delivers. Before start().
  [[nodiscard]] error set_rx_pcap_filter(std::vector<device::bpf_insn> insns);
  // Frames rx_pcap= has written so far.
  [[nodiscard]] uint64_t rx_pcap_frames() const noexcept;
  // The errno of the write that stopped rx_pcap=, or 0: EPIPE when the
  // reader of rx_pcap=- (stdout) or of a FIFO went away. The port's stop
  // reports it too.
  [[nodiscard]] int rx_pcap_errno() const noexcept;
  [[nodiscard]] error set_steering(std::vector<steering_rule> rules, std::vector<uint32_t> default_queues = {});

  [[nodiscard]] error start();
  // Stops the backend's engine. bad_state while kernels using the port run.
  [[nodiscard]] error stop();
  [[nodiscard]] error destroy_rxq(uint32_t id);
  [[nodiscard]] error destroy_txq(uint32_t id);
  // Ends the port: bad_state unless stopped with every queue destroyed.
  [[nodiscard]] error close();

  // Kernel views of the queues (valid from create until destroy).
  [[nodiscard]] result<device::rxq> rxq(uint32_t id) const;
  [[nodiscard]] result<device::txq> txq(uint32_t id) const;
  // Host-address views of queues created with host_consumer / host_producer,
  // for CPU threads using the same device API functions.
  [[nodiscard]] result<device::rxq> rxq_host(uint32_t id) const;
  [[nodiscard]] result<device::txq> txq_host(uint32_t id) const;
  // The memory an RX queue's completions name their buffers in (rxq::pkts
  // plus rx_cqe::buf): the queue's own area, or the port's RX pool when the
  // backend receives into memory of its own (buffers by reference).
  [[nodiscard]] result<mem_block> rxq_memory(uint32_t id) const;
  [[nodiscard]] uint32_t num_rxq() const;
  [[nodiscard]] uint32_t num_txq() const;

  [[nodiscard]] port_stats stats() const;
  // True once the backend ended its stream and every queue got its end mark.
  [[nodiscard]] bool rx_ended() const;
  // The first error the engine hit (e.g. a backend I/O failure), or success.
  [[nodiscard]] error engine_error() const;

  // Gives up the port without ending it: its queues and memory stay until
  // the process exits (for a kernel that may still use them); the handle is
  // empty afterwards.
  void release() noexcept;

  [[nodiscard]] bool valid() const noexcept { return state_ != nullptr; }
  [[nodiscard]] const std::shared_ptr<detail::port_state>& state() const noexcept { return state_; }

 private:
  explicit port(std::shared_ptr<detail::port_state> s) : state_(std::move(s)) {}
  std::shared_ptr<detail::port_state> state_;
};

// The clock of TX not-before times (device::tx_prepare_at): CLOCK_REALTIME,
// in nanoseconds since the epoch. A kernel gets its times from the host (the
// GPU's own timer is not this clock), as DOCA programs get theirs from
// doca_eth_txq_calculate_timestamp.
[[nodiscard]] uint64_t tx_clock_ns() noexcept;

}  // namespace gnio
