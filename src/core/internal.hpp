// SPDX-License-Identifier: Apache-2.0
// State behind the public handles. Not installed.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gnio/backend/backend.hpp"
#include "gnio/device/pkt.hpp"
#include "gnio/gpu.hpp"
#include "gnio/kernel.hpp"
#include "gnio/port.hpp"
#include "log_internal.hpp"

namespace gnio::detail {

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
};

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

std::unique_ptr<device_ops> make_host_device();
// The engine's RSS hash: equals device::flow_hash (Toeplitz, Microsoft key).
uint32_t steering_hash(const device::flow_key& k);
#if defined(GNIO_HAVE_CUDA)
result<std::unique_ptr<device_ops>> make_cuda_device(int ordinal, gpu_info* info);
std::vector<gpu_info> cuda_list(std::string* why);
cuda_env cuda_query_env();
result<int> cuda_ordinal_from_bus_id(const std::string& bus_id);
#endif

// Memory the engine may read a TX descriptor from.
struct region {
  uintptr_t exec = 0;
  uint8_t* host = nullptr;  // null: reachable only through copy_from_exec
  size_t bytes = 0;
  device_ops* dev = nullptr;  // the device whose memory it is
};

struct rxq_state {
  uint32_t id = 0;
  std::shared_ptr<gpu_state> owner;  // whose memory holds the queue
  rxq_config cfg;
  bool alive = true;
  mem_block pkts, cq, cons, next, eos, stage;
  uint8_t* pkts_host = nullptr;  // where the engine writes bytes: the slots, or staging for GPU memory
  device::rx_cqe* cq_host = nullptr;
  uint64_t* cons_host = nullptr;
  uint32_t* eos_host = nullptr;
  uint32_t mask = 0, log2 = 0;
  uint64_t prod = 0;        // next index the engine writes
  uint64_t published = 0;   // completions published so far (prod - published are pending)
  uint64_t cons_cache = 0;  // last consumer index read
  counter offered, delivered, missed, bytes, truncated;
  device::rxq view{};
  device::rxq host_view{};  // valid when host_consumer
  // Engine lanes that write this queue (fixed at start). With more than one
  // (steering a small group under lanes=N) the queue is shared: every write
  // and publish holds `lock`, and the end mark waits for the last writer.
  bool shared = false;
  std::atomic<bool> lock{false};
  std::atomic<uint32_t> writers_left{0};

  [[nodiscard]] uint32_t free_slots() noexcept;
  void acquire() noexcept {
    // Pairs with the release in release(): the previous writer's slots and
    // indices are visible to the next.
    while (lock.exchange(true, std::memory_order_acquire))
      while (lock.load(std::memory_order_relaxed)) {
      }
  }
  void release() noexcept { lock.store(false, std::memory_order_release); }
};

struct txq_state {
  uint32_t id = 0;
  std::shared_ptr<gpu_state> owner;
  txq_config cfg;
  bool alive = true;
  mem_block ring, bufs, doorbell, done, prod;
  device::tx_desc* ring_host = nullptr;
  uint64_t* doorbell_host = nullptr;
  uint64_t* done_host = nullptr;
  uint64_t done_local = 0;
  counter sent, bytes, errors, bad_addr;
  device::txq view{};
  device::txq host_view{};  // valid when host_producer
};

// configured -> started -> stopped -> closed; a stopped port is not restarted
// (its rings keep the finished run's indices and end marks).
enum class port_phase { configured, started, stopped, closed };

struct port_state {
  std::shared_ptr<gpu_state> gpu;
  const backend::ops* ops = nullptr;
  void* priv = nullptr;
  std::string name;
  port_caps caps;
  bool overflow_wait = false;  // wait for ring space instead of dropping (finite sources)
  std::string tx_pcap_path;    // tx_pcap=: a copy of every transmitted frame goes here
  void* tx_pcap = nullptr;     // pcap_t* (dead handle) and pcap_dumper_t* while started
  void* tx_dumper = nullptr;

  std::mutex mu;  // guards phase and the queue lists against concurrent control calls
  port_phase phase = port_phase::configured;
  std::vector<std::unique_ptr<rxq_state>> rxqs;
  std::vector<std::unique_ptr<txq_state>> txqs;
  std::vector<mem_block> user_regions;
  std::vector<steering_rule> rules;
  std::vector<uint32_t> default_queues;
  std::atomic<int> kernels_running{0};

  // Engine: one thread per lane. Lane i owns the RX queues whose position is
  // i mod lanes and steers only into them; lane 0 also drains TX.
  struct lane {
    port_state* port = nullptr;
    uint32_t index = 0;
    std::vector<rxq_state*> rx;       // the queues this lane writes (some maybe shared)
    std::vector<uint32_t> groups[8];  // per rx_class: indices into rx
    bool ended = false;
  };
  uint32_t num_lanes = 1;
  std::vector<std::unique_ptr<lane>> lanes;
  std::vector<std::thread> engines;
  std::atomic<uint32_t> lanes_ended{0};
  std::atomic<bool> stop_req{false};
  std::atomic<bool> rx_ended{false};
  std::mutex err_mu;
  error engine_err;
  counter rx_unsteered;
  std::vector<region> regions;  // fixed at start
  std::vector<txq_state*> live_tx;
  mem_block tx_stage;

  ~port_state();
  void teardown() noexcept;
  void engine_main(lane& l);
  bool deliver(lane& l, const uint8_t* frame, uint32_t len, uint32_t wire_len, uint64_t ts_ns);
  bool put(rxq_state& q, const uint8_t* frame, uint32_t len, uint32_t wire_len, uint64_t ts_ns, uint32_t hash,
           uint16_t cls, uint16_t flags);
  void flush_rx(lane& l);
  void publish(rxq_state& q);
  void join_engines() noexcept;
  bool drain_tx();
  void mark_eos(lane& l);
  void set_engine_error(error e);
  void close_tx_pcap() noexcept;
  void release_tx_stage() noexcept;  // the engine's TX staging buffer, if any
};

struct sem_state {
  std::shared_ptr<gpu_state> gpu;
  mem_block items, custom;
  uint32_t num_items = 0, custom_bytes = 0;
  ~sem_state();
};

}  // namespace gnio::detail
