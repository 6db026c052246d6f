// SPDX-License-Identifier: Apache-2.0
// The kernel runner's state and the seams between its shared part
// (runner.cpp) and its executors: host/host_runner.cpp (always built) and
// cuda/cuda_runner.cpp (built with CUDA; no_cuda.cpp answers for it otherwise).
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "internal.hpp"

namespace gnio::detail {

enum class run_phase { idle, running };

struct runner_state {
  std::shared_ptr<gpu_state> gpu;
  std::vector<std::shared_ptr<port_state>> ports;
  mem_block exit_flag;
  mem_block body;  // kernel_runner::body_copy: a large body in executor memory
  std::mutex mu;
  run_phase phase = run_phase::idle;
  bool destroyed = false;
  // host executor
  std::vector<std::thread> threads;
  std::mutex done_mu;
  std::condition_variable done_cv;
  uint32_t done = 0;
  // cuda executor
  void* stream = nullptr;
  // Per-burst modes: a driver thread (threads[0]) launches the kernel per
  // burst; done_mu guards burst_done and burst_err.
  bool bursts = false;
  device::launch_mode mode = device::launch_mode::persistent;
  bool burst_done = false;
  error burst_err;
  std::atomic<uint64_t> num_launches{0}, burst_packets{0}, busy_ns{0}, idle_ns{0};

  ~runner_state();
  error poll_finished(bool* finished);  // with mu held
  void finish();                        // with mu held, kernel known to be done
};

// Before a launch, with mu held: no kernel runs yet, every port is started;
// clears the exit flag.
error check_launch(runner_state& s);
// The context every block starts from.
device::exec_ctx make_ctx(const runner_state& s, uint32_t num_blocks);
// A launch in `mode` begins: the counters of kernel_runner::stats() start over.
void reset_stats(runner_state& s, device::launch_mode mode);

// How a per-burst launch runs the kernel on one executor. Made by
// launch_bursts (with the runner's mu held), then owned by the driver thread.
class burst_exec {
 public:
  virtual ~burst_exec() = default;
  // On the driver thread, before the first launch; base is the context every
  // launch starts from.
  virtual error start(const device::exec_ctx& base) = 0;
  // Runs the kernel once over what is ready and waits until it has returned.
  virtual error run_once() = 0;
  // After the last launch: releases what the launches used.
  virtual error finish() = 0;
};

// Host executor (host/host_runner.cpp).
result<std::unique_ptr<burst_exec>> host_bursts(const launch_dims& dims, burst_launcher l);

// CUDA executor (cuda/cuda_runner.cpp). The runner's stream: made with the
// runner, destroyed with it.
error cuda_runner_open(runner_state& st);
void cuda_runner_close(runner_state& s) noexcept;
// Whether the persistent kernel on the runner's stream has ended.
error cuda_runner_poll(runner_state& s, bool* finished);
// The error of a persistent kernel's launch (a cudaError_t), if any.
error cuda_launch_error(int cuda_error);
// Loads the kernel and, for the graph mode, captures it into a graph.
result<std::unique_ptr<burst_exec>> cuda_bursts(runner_state& s, const launch_dims& dims, burst_launcher l);
// Loads a kernel's module (preload_kernel, once its argument is checked).
error cuda_preload_kernel(const void* kernel);

}  // namespace gnio::detail
