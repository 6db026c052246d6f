// SPDX-License-Identifier: Apache-2.0
// gnio::kernel_runner: launches a persistent kernel on the GPU (a CUDA stream
// of its own) or on host threads, and stops it through an exit flag in
// host-visible memory.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "gnio/device/exec.hpp"
#include "gnio/gpu.hpp"
#include "gnio/port.hpp"

namespace gnio {

namespace detail {
struct runner_state;
struct launch_access;  // gnio::launch's way in (launch.hpp)

// The per-burst modes. launch.hpp (compiled by nvcc) fills in how to run the
// body once; the runner (compiled by the C++ compiler) waits for bursts and
// repeats it on a thread of its own until the stream ends or stop().
struct burst_launcher {
  // CUDA: the __global__ function, loaded before the first launch and
  // before a graph is captured (lazy loading could otherwise load it while
  // another kernel spins).
  const void* kernel = nullptr;
  // CUDA: launches the kernel once on `stream` (a cudaStream_t) with a
  // fresh copy of the context; returns cudaGetLastError() as an int.
  std::function<int(void* stream)> cuda;
  // Host executor: runs one block's body with `ctx` (a fresh copy per launch).
  std::function<void(const device::exec_ctx& ctx)> host;
};
}  // namespace detail

// CUDA module loading. With lazy loading (CUDA's default since 12.2) a
// kernel's module is loaded at its first launch, and loading can wait for the
// whole context to go idle: a kernel launched for the first time while a
// persistent kernel spins may never start, and its launch may never return.
// gnio's programs call prefer_eager_module_loading() before any CUDA call;
// a program of your own either does the same or preloads every kernel it
// launches beside a persistent one (docs/kernels.md).
enum class module_loading { unknown, eager, lazy };
[[nodiscard]] std::string_view to_string(module_loading m) noexcept;

// Sets CUDA_MODULE_LOADING=EAGER unless the variable is already set (a
// user's choice is kept). It takes effect only if it runs before the
// process's first CUDA call. True when it set the variable.
bool prefer_eager_module_loading() noexcept;

// The mode the CUDA driver uses in this process (this initializes CUDA);
// unknown without CUDA support or without a driver.
[[nodiscard]] module_loading cuda_module_loading() noexcept;

// Loads a kernel's module now (cudaFuncGetAttributes on the __global__
// function's address), so that its first launch needs no loading. Call it
// for each kernel a program launches while a persistent kernel runs, before
// that persistent kernel starts. not_supported without CUDA support.
[[nodiscard]] error preload_kernel(const void* kernel);

struct launch_dims {
  uint32_t blocks = 1;     // host executor: one CPU thread per block
  uint32_t threads = 256;  // per block (ignored by the host executor)
  uint32_t shared_bytes = 0;
  // How the body is run (device::launch_mode) and how its recv(ctx, ...)
  // polls an empty queue (device::poll_policy).
  device::launch_mode mode = device::launch_mode::persistent;
  device::poll_policy poll = device::poll_policy::adaptive;
  // Per-burst modes: the host launches once `burst` completions are ready in
  // one of the runner's RX queues, or once the oldest ready one has waited
  // burst_timeout_ns since the host saw it (at the end of the stream: at
  // once). The runner watches the RX queues of its ports that live on its
  // GPU; the body must consume every one of them. 1 <= burst <= the smallest
  // of those rings; burst_timeout_ns <= 10 s (0: launch on the first ready
  // completion).
  uint32_t burst = 32;
  uint64_t burst_timeout_ns = 50'000;
};

// What a runner's launches did (kernel_runner::stats()).
struct launch_stats {
  device::launch_mode mode = device::launch_mode::persistent;
  uint64_t launches = 0;  // kernels launched (graph: graph launches); persistent: 1
  // Per-burst modes only (0 when persistent):
  uint64_t packets = 0;  // completions the launches consumed (consumer index advanced)
  uint64_t busy_ns = 0;  // from each launch until its kernel had finished, summed
  uint64_t idle_ns = 0;  // waiting for a burst between launches, summed
};

// Owns a stream (or host threads) and an exit flag: move-only. Its
// destructor frees them once the kernel has returned; a runner whose kernel
// still runs is kept, with the ports and context it uses, until the process
// exits (fail closed), and says so in the log.
class kernel_runner {
 public:
  kernel_runner() = default;
  kernel_runner(kernel_runner&&) noexcept = default;
  kernel_runner& operator=(kernel_runner&&) noexcept = default;
  kernel_runner(const kernel_runner&) = delete;
  kernel_runner& operator=(const kernel_runner&) = delete;
  ~kernel_runner();
  // The ports the kernel uses must be started before launch and may not be
  // stopped while it runs.
  [[nodiscard]] static result<kernel_runner> create(gpu& g, std::vector<port*> ports = {});

  [[nodiscard]] executor_kind executor() const;
  [[nodiscard]] bool running() const;

  // Waits until the kernel returned by itself (e.g. every queue reached its
  // end of stream). time_out when it is still running at the deadline.
  [[nodiscard]] error wait(std::chrono::nanoseconds timeout);
  // Sets the exit flag and waits until the kernel returned or the deadline
  // passed. On time_out nothing the kernel may touch is freed (fail closed):
  // the runner, its ports and their memory stay allocated until it ends.
  [[nodiscard]] error stop(std::chrono::nanoseconds deadline);
  // Gives up the runner without freeing it (kept until the process exits);
  // the handle is empty afterwards.
  void release() noexcept;

  // Launches made by the latest launch() so far (also while it runs).
  [[nodiscard]] launch_stats stats() const;

  [[nodiscard]] bool valid() const noexcept { return state_ != nullptr; }

 private:
  friend struct detail::launch_access;
  // What gnio::launch uses, through detail::launch_access.
  [[nodiscard]] error launch_host(uint32_t num_blocks, std::function<void(const device::exec_ctx&)> body);
  // Checks state and returns the stream (a cudaStream_t) to launch on.
  [[nodiscard]] result<void*> begin_cuda_launch(uint32_t num_blocks);
  [[nodiscard]] device::exec_ctx ctx(uint32_t num_blocks) const;
  [[nodiscard]] error end_cuda_launch(int cuda_error);
  [[nodiscard]] error launch_bursts(const launch_dims& dims, detail::burst_launcher l);
  // A copy of a kernel body in executor memory, for bodies too large to
  // pass as a kernel parameter; owned by the runner, replaced at the next
  // launch, freed with the runner (and kept while its kernel runs).
  [[nodiscard]] result<const void*> body_copy(const void* body, size_t bytes);

  explicit kernel_runner(std::shared_ptr<detail::runner_state> s) : state_(std::move(s)) {}
  std::shared_ptr<detail::runner_state> state_;
};

}  // namespace gnio
