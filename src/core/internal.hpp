// SPDX-License-Identifier: Apache-2.0
// State behind the public handles. Not installed.
#pragma once

#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gnio/device/bpf.hpp"
#include "pcap_mirror.hpp"
#include "gnio/backend/backend.hpp"
#include "gnio/backend/ring.hpp"
#include "gnio/device/pkt.hpp"
#include "gnio/gpu.hpp"
#include "gnio/kernel.hpp"
#include "gnio/port.hpp"
#include "log_internal.hpp"

namespace gnio::detail {

// An ordered queue of asynchronous copies between host and executor memory:
// a CUDA stream of its own on a GPU, plain memcpy (done at once) on the host.
struct copy_queue {
  virtual ~copy_queue() = default;
  virtual error to_exec(void* exec_dst, const void* host_src, size_t n) = 0;
  virtual error from_exec(void* host_dst, const void* exec_src, size_t n) = 0;
  // A ticket for every copy queued so far; done(ticket) polls it, in order.
  virtual result<uint64_t> mark() = 0;
  virtual result<bool> done(uint64_t ticket) = 0;
  virtual error wait() = 0;  // every copy queued so far has finished
};

// What differs between the host pseudo-device and a CUDA GPU.
struct device_ops {
  virtual ~device_ops() = default;
  virtual result<mem_block> alloc(size_t bytes, mem_type type) = 0;
  virtual void release(const mem_block& b) noexcept = 0;
  // Copies between host memory and executor memory (DMA on a GPU).
  virtual error copy_to_exec(void* exec_dst, const void* host_src, size_t n) = 0;
  virtual error copy_from_exec(void* host_dst, const void* exec_src, size_t n) = 0;
  virtual error zero_exec(void* exec_dst, size_t n) = 0;
  // Pinned host memory for staging copies (plain memory on the host).
  virtual result<mem_block> alloc_staging(size_t bytes) = 0;
  // Makes the calling thread use this device (cudaSetDevice); no-op on the host.
  virtual error bind_thread() = 0;
  virtual result<std::unique_ptr<copy_queue>> make_copy_queue() = 0;
  // A backend's RX pool: page-aligned anonymous memory the kernel can pin
  // (AF_XDP, DPDK external memory), registered as mapped pinned memory for
  // every GPU. Freed only with release_pool.
  virtual result<mem_block> alloc_pool(size_t bytes) = 0;
  virtual void release_pool(const mem_block& b) noexcept = 0;
};

// Anonymous page-aligned memory, zeroed (for RX pools).
result<void*> map_anonymous(size_t bytes);
void unmap_anonymous(void* p, size_t bytes) noexcept;

// A single-writer counter other threads may read at any time.
struct counter {
  std::atomic<uint64_t> v{0};
  void add(uint64_t n = 1) noexcept { v.store(v.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
  [[nodiscard]] uint64_t get() const noexcept { return v.load(std::memory_order_relaxed); }
};

struct gpu_state {
  gpu_info info;
  std::unique_ptr<device_ops> dev;
  std::atomic<int> children{0};  // ports, semaphores and runners made from it
  std::mutex mu;
  std::map<uint64_t, mem_block> user_blocks;  // gpu::alloc'd, freed on destroy
  std::atomic<uint64_t> next_block_id{1};
  bool destroyed = false;

  ~gpu_state();
  result<mem_block> alloc(size_t bytes, mem_type type);  // assigns an id
};

// Keeps an object alive until the process exits, reachable (so a leak
// checker does not report it): what release() does with a handle's state.
void keep_until_exit(std::shared_ptr<void> state) noexcept;

std::unique_ptr<device_ops> make_host_device();
// The engine's RSS hash: equals device::flow_hash (Toeplitz, Microsoft key).
uint32_t steering_hash(const device::flow_key& k);
// Frame class for steering, from the parsed headers.
device::rx_class classify(const device::parsed_pkt& p);
#if defined(GNIO_HAVE_CUDA)
result<std::unique_ptr<device_ops>> make_cuda_device(int ordinal, gpu_info* info);
std::vector<gpu_info> cuda_list(std::string* why);
cuda_env cuda_query_env();
result<int> cuda_ordinal_from_bus_id(const std::string& bus_id);
#endif

struct rxq_state {
  uint32_t id = 0;
  std::shared_ptr<gpu_state> owner;  // whose memory holds the queue
  rxq_config cfg;
  bool alive = true;
  mem_block pkts, cq, cons, next, eos, stage;
  // Buffers by reference from the port's RX pool (no packet memory of its
  // own); otherwise an area of its own, in pkts.
  bool pool = false;
  // The area is GPU memory: frames are written to stage (pinned, same
  // offsets) and copied over before they are published.
  bool staged = false;
  uint64_t staged_head = 0;  // area bytes handed to the copy queue so far
  std::unique_ptr<copy_queue> copies;
  struct inflight_copy {
    uint64_t upto;    // entries below this wait for the copy
    uint64_t ticket;  // of copies
  };
  std::deque<inflight_copy> inflight;
  // Pool buffers reclaimed while a lane waited for room in this queue, on
  // their way back to the backend with the next reclaim.
  std::vector<uint32_t> reclaimed;
  backend::rx_ring_writer w;
  device::rx_cqe* cq_host = nullptr;
  uint64_t* cons_host = nullptr;
  counter offered, delivered, missed, bytes, truncated;
  std::atomic<uint64_t> returned{0};  // pool buffers handed back to the backend (lanes add, after rx_release)
  device::rxq view{};
  device::rxq host_view{};  // valid when host_consumer
  // Engine lanes that write this queue (fixed at start). With more than one
  // (steering a small group under lanes=N) the queue is shared: every write
  // and publish holds `lock`, and the end mark waits for the last writer.
  bool shared = false;
  std::atomic<bool> lock{false};
  std::atomic<uint32_t> writers_left{0};
  bool ended = false;  // its end mark is stored

  void acquire() noexcept {
    // Pairs with the release in release(): the previous writer's entries and
    // indices are visible to the next.
    while (lock.exchange(true, std::memory_order_acquire))
      while (lock.load(std::memory_order_relaxed)) {}
  }
  void release() noexcept { lock.store(false, std::memory_order_release); }
};

struct txq_state {
  uint32_t id = 0;
  std::shared_ptr<gpu_state> owner;
  txq_config cfg;
  bool alive = true;
  mem_block ring, bufs, doorbell, done, prod;
  backend::tx_ring_reader r;
  counter sent, bytes, errors, bad_addr;
  device::txq view{};
  device::txq host_view{};  // valid when host_producer
};

// configured -> started -> stopped -> closed; a stopped port is not restarted
// (its rings keep the finished run's indices and end marks).
enum class port_phase { configured, started, stopped, closed };

struct port_state;

// One engine thread: it writes the RX queues in `rx`, steering into them by
// `groups`, and (lane 0) drains TX.
struct lane_state {
  port_state* port = nullptr;
  uint32_t index = 0;
  std::vector<rxq_state*> rx;       // the queues this lane writes (some maybe shared)
  std::vector<uint32_t> groups[8];  // per rx_class: indices into rx
  bool single = false;              // one queue and no rules: nothing to steer
  bool ended = false;
  rxq_state* reserved = nullptr;  // the queue of an open reserve(), until commit()
  backend::steer_info reserved_si;
  std::unique_ptr<copy_queue> copies;                      // TX reads from GPU memory (lane 0)
  std::vector<uint32_t> released;                          // pool buffers on their way back to the backend
  std::vector<std::pair<rxq_state*, uint32_t>> returning;  // how many of them each queue gave
  counter frames, busy_ns;                                 // frames taken from the backend, time spent on them
  counter full_ns;  // time with no burst taken because a queue this lane alone writes was full (lossless)
  // Wall-clock time (ns since the epoch) read once before each rx_burst: the
  // timestamp of frames whose source gives none (one clock read per burst,
  // not per frame).
  uint64_t burst_ts = 0;
};

// A TX descriptor's memory: the range [exec, exec + bytes) on the executor,
// at host (null: reachable only by copies through dev).
struct region {
  uintptr_t exec = 0;
  uint8_t* host = nullptr;
  size_t bytes = 0;
  device_ops* dev = nullptr;
  bool pool = false;  // the port's RX pool
};

struct port_state {
  std::shared_ptr<gpu_state> gpu;
  const backend::ops* ops = nullptr;
  void* priv = nullptr;
  std::string name;
  port_caps caps;
  bool overflow_wait = false;                    // wait for ring space instead of dropping (finite sources)
  bool engine_busy = false;                      // engine_poll=busy: the engine never sleeps when idle
  pcap_mirror mirror{"tx_pcap", false};          // tx_pcap=: a copy of every transmitted frame
  pcap_mirror rx_mirror{"rx_pcap", true, true};  // rx_pcap=: every frame delivered (that rx_filter accepts)
  std::vector<device::bpf_insn> rx_filter;       // for rx_pcap=; empty: every frame
  // The backend's RX pool (rx_pool_setup), if it has one.
  mem_block pool;
  uint32_t pool_buf_bytes = 0;

  std::mutex mu;  // guards phase and the queue lists against concurrent control calls
  port_phase phase = port_phase::configured;
  std::vector<std::unique_ptr<rxq_state>> rxqs;
  std::vector<std::unique_ptr<txq_state>> txqs;
  std::vector<mem_block> user_regions;
  std::vector<steering_rule> rules;
  std::vector<uint32_t> default_queues;
  std::atomic<int> kernels_running{0};

  uint32_t num_lanes = 1;
  std::vector<std::unique_ptr<lane_state>> lanes;
  std::vector<std::thread> engines;
  std::atomic<uint32_t> lanes_ended{0};
  std::atomic<bool> stop_req{false};
  std::atomic<bool> rx_ended{false};
  std::mutex err_mu;
  error engine_err;
  counter rx_unsteered;
  std::vector<region> regions;  // fixed at start, sorted by exec address
  std::vector<txq_state*> live_tx;
  mem_block tx_stage;
  uint32_t tx_warnings = 0;  // transmit failures logged so far (engine lane 0 only)

  ~port_state();
  void teardown() noexcept;
  void join_engines() noexcept;
  void set_engine_error(error e);
  void release_tx_stage() noexcept;  // the engine's TX staging buffer, if any
};

// The engine (engine.cpp).
void engine_main(lane_state& l);

// Steering groups and lanes (steering.cpp): which queues each lane writes and
// steers into. rx are the port's live RX queues; a group with fewer members
// than lanes is shared by all lanes (those queues take a lock).
struct lane_plan {
  struct lane {
    std::vector<uint32_t> rx;         // queue positions in rx
    std::vector<uint32_t> groups[8];  // per rx_class: indices into this lane's rx
  };
  std::vector<lane> lanes;
  std::vector<uint32_t> writers;  // per queue position: how many lanes write it
};
lane_plan plan_lanes(const std::vector<uint32_t>& rx_ids, const std::vector<steering_rule>& rules,
                     const std::vector<uint32_t>& default_queues, uint32_t num_lanes);

struct sem_state {
  std::shared_ptr<gpu_state> gpu;
  mem_block items, custom;
  uint32_t num_items = 0, custom_bytes = 0;
  ~sem_state();
};

}  // namespace gnio::detail
