// SPDX-License-Identifier: Apache-2.0
// Persistent-kernel runners: CUDA (a non-blocking stream, an exit flag in
// mapped host memory, stop by polling cudaStreamQuery) and host (one CPU
// thread per block, the same body).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <thread>

#if defined(GNIO_HAVE_CUDA)
#include <cuda_runtime_api.h>
#endif

#include "internal.hpp"

namespace gnio {

using detail::fail;

namespace detail {

enum class run_phase { idle, running };

struct runner_state {
  std::shared_ptr<gpu_state> gpu;
  std::vector<std::shared_ptr<port_state>> ports;
  mem_block exit_flag;
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

  ~runner_state();
  error poll_finished(bool* finished);  // with mu held
  void finish();                        // with mu held, kernel known to be done
};

namespace {
// Runners whose kernel was still running when their handle went away. Their
// memory is kept for the life of the process: freeing it could let the kernel
// write into someone else's allocation (fail closed).
std::mutex g_abandoned_mu;
std::vector<std::unique_ptr<runner_state>>& abandoned() {
  static auto* v = new std::vector<std::unique_ptr<runner_state>>();  // never destroyed on purpose
  return *v;
}
}  // namespace

void runner_state::finish() {
  for (auto& t : threads)
    if (t.joinable()) t.join();
  threads.clear();
  for (auto& p : ports) p->kernels_running.fetch_sub(1);
  phase = run_phase::idle;
}

error runner_state::poll_finished(bool* finished) {
  *finished = false;
  if (phase != run_phase::running) {
    *finished = true;
    return {};
  }
  if (gpu->info.executor == executor_kind::host) {
    std::lock_guard lk(done_mu);
    *finished = done == threads.size();
  } else {
#if defined(GNIO_HAVE_CUDA)
    cudaError_t e = cudaStreamQuery(static_cast<cudaStream_t>(stream));
    if (e == cudaErrorNotReady) return {};
    *finished = true;
    if (e != cudaSuccess) {
      finish();
      return fail(status::device_fatal_error, "persistent kernel failed: {} ({}); the CUDA context is unusable",
                  cudaGetErrorName(e), cudaGetErrorString(e));
    }
#endif
  }
  if (*finished) finish();
  return {};
}

runner_state::~runner_state() {
  if (phase == run_phase::running) return;  // only reached through the abandoned list at exit
#if defined(GNIO_HAVE_CUDA)
  if (stream) {
    (void)gpu->dev->bind_thread();
    if (cudaStreamDestroy(static_cast<cudaStream_t>(stream)) != cudaSuccess)
      log(log_level::warn, "cudaStreamDestroy failed while destroying a runner");
  }
#endif
  if (exit_flag.host_ptr) gpu->dev->release(exit_flag);
  gpu->children.fetch_sub(1);
}

}  // namespace detail

namespace {

// Custom deleter: a runner whose kernel still runs is parked, not freed.
void release_runner(detail::runner_state* s) {
  {
    std::lock_guard lk(s->mu);
    bool finished = false;
    (void)s->poll_finished(&finished);
    if (!finished) {
      detail::log(log_level::error,
                  "kernel runner destroyed while its kernel still runs; its memory and ports are kept alive until exit");
      for (auto& t : s->threads) t.detach();
      s->threads.clear();
      std::lock_guard g(detail::g_abandoned_mu);
      detail::abandoned().emplace_back(s);
      return;
    }
  }
  delete s;
}

}  // namespace

namespace {
// Set once a program preloads a kernel: it knows about lazy loading, so the
// launch warning below is not needed.
std::atomic<bool> g_preloaded{false};
std::atomic<bool> g_lazy_warned{false};
}  // namespace

std::string_view to_string(module_loading m) noexcept {
  switch (m) {
    case module_loading::eager: return "eager";
    case module_loading::lazy: return "lazy";
    case module_loading::unknown: break;
  }
  return "unknown";
}

bool prefer_eager_module_loading() noexcept {
  const char* v = std::getenv("CUDA_MODULE_LOADING");
  if (v && *v) return false;
  return ::setenv("CUDA_MODULE_LOADING", "EAGER", 0) == 0;
}

module_loading cuda_module_loading() noexcept {
#if defined(GNIO_HAVE_CUDA)
  // cuModuleGetLoadingMode is a driver-API call; reach it through the
  // runtime's entry-point lookup rather than linking libcuda.
  using get_mode_fn = int (*)(int*);
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q{};
  if (cudaGetDriverEntryPointByVersion("cuModuleGetLoadingMode", &fn, 11070, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess || fn == nullptr) {
    (void)cudaGetLastError();
    return module_loading::unknown;
  }
  int mode = 0;
  if (reinterpret_cast<get_mode_fn>(fn)(&mode) != 0) return module_loading::unknown;
  constexpr int cu_module_eager_loading = 0x1, cu_module_lazy_loading = 0x2;  // CUmoduleLoadingMode
  if (mode == cu_module_eager_loading) return module_loading::eager;
  if (mode == cu_module_lazy_loading) return module_loading::lazy;
#endif
  return module_loading::unknown;
}

error preload_kernel(const void* kernel) {
  if (kernel == nullptr) return fail(status::invalid_value, "preload_kernel: no kernel (a null function address)");
#if defined(GNIO_HAVE_CUDA)
  cudaFuncAttributes a{};
  if (cudaError_t e = cudaFuncGetAttributes(&a, kernel); e != cudaSuccess) {
    (void)cudaGetLastError();
    return fail(status::driver, "preload_kernel: cudaFuncGetAttributes: {} ({}); is the address a __global__ function?",
                cudaGetErrorName(e), cudaGetErrorString(e));
  }
  g_preloaded.store(true, std::memory_order_relaxed);
  return {};
#else
  return fail(status::not_supported, "preload_kernel: gnio was built without CUDA");
#endif
}

result<kernel_runner> kernel_runner::create(gpu& g, std::vector<port*> ports) {
  if (!g.valid()) return fail(status::bad_state, "kernel_runner: the gpu was destroyed or never opened");
  std::shared_ptr<detail::runner_state> st(new detail::runner_state, release_runner);
  st->gpu = g.state();
  for (port* p : ports) {
    if (!p || !p->valid()) return fail(status::bad_state, "kernel_runner: a port is closed or null");
    st->ports.push_back(p->state());
  }
  auto flag = st->gpu->alloc(64, mem_type::cpu_gpu);
  if (!flag) {
    st->ports.clear();
    st->gpu->children.fetch_add(1);  // balanced by the destructor
    return flag.err();
  }
  st->exit_flag = *flag;
  st->gpu->children.fetch_add(1);
#if defined(GNIO_HAVE_CUDA)
  if (st->gpu->info.executor == executor_kind::cuda) {
    if (auto e = st->gpu->dev->bind_thread(); e) return e;
    cudaStream_t s = nullptr;
    // Non-blocking: the persistent kernel must not serialize with work on the legacy default stream.
    if (cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking); e != cudaSuccess)
      return fail(status::driver, "cudaStreamCreateWithFlags: {}", cudaGetErrorString(e));
    st->stream = s;
  }
#endif
  return kernel_runner(std::move(st));
}

executor_kind kernel_runner::executor() const { return state_ ? state_->gpu->info.executor : executor_kind::host; }

bool kernel_runner::running() const {
  if (!state_) return false;
  std::lock_guard lk(state_->mu);
  bool finished = false;
  (void)state_->poll_finished(&finished);
  return !finished;
}

namespace {

error check_launch(detail::runner_state& s) {
  if (s.phase == detail::run_phase::running) return fail(status::bad_state, "launch: this runner's kernel is already running");
  for (auto& p : s.ports) {
    std::lock_guard lk(p->mu);
    if (p->phase != detail::port_phase::started)
      return fail(status::bad_state, "launch: port {} is not started; start ports before launching kernels", p->name);
  }
  // Pairs with the acquire load in device::exec_ctx::should_exit(); the flag is
  // cleared before the kernel exists, so a plain store would do as well.
  __atomic_store_n(static_cast<uint32_t*>(s.exit_flag.host_ptr), 0u, __ATOMIC_RELEASE);
  return {};
}

}  // namespace

device::exec_ctx kernel_runner::ctx(uint32_t num_blocks) const {
  device::exec_ctx c{};
  c.block = 0;
  c.num_blocks = num_blocks;
  c.exit_flag = static_cast<const uint32_t*>(state_->exit_flag.exec_ptr);
  c.executor = state_->gpu->info.executor == executor_kind::cuda ? 1u : 0u;
  c.mode = device::launch_mode::persistent;
  c.poll = device::poll_policy::adaptive;
  c.batches = 0;
  return c;
}

error kernel_runner::launch_host(uint32_t num_blocks, std::function<void(const device::exec_ctx&)> body) {
  if (!state_) return fail(status::bad_state, "launch: the runner was destroyed");
  auto& s = *state_;
  std::lock_guard lk(s.mu);
  if (s.gpu->info.executor != executor_kind::host)
    return fail(status::invalid_value, "launch_host: this runner belongs to a CUDA GPU");
  if (num_blocks > 4096) return fail(status::invalid_value, "launch: {} host threads is too many (max 4096)", num_blocks);
  if (auto e = check_launch(s); e) return e;
  {
    std::lock_guard d(s.done_mu);
    s.done = 0;
  }
  for (auto& p : s.ports) p->kernels_running.fetch_add(1);
  s.phase = detail::run_phase::running;
  const device::exec_ctx base = ctx(num_blocks);
  for (uint32_t b = 0; b < num_blocks; ++b) {
    device::exec_ctx c = base;
    c.block = b;
    auto* st = &s;
    s.threads.emplace_back([st, c, body] {
      body(c);
      std::lock_guard d(st->done_mu);
      ++st->done;
      st->done_cv.notify_all();
    });
  }
  return {};
}

result<void*> kernel_runner::begin_cuda_launch(uint32_t num_blocks) {
  (void)num_blocks;
  if (!state_) return fail(status::bad_state, "launch: the runner was destroyed");
  auto& s = *state_;
  s.mu.lock();  // released by end_cuda_launch
  if (s.gpu->info.executor != executor_kind::cuda) {
    s.mu.unlock();
    return fail(status::invalid_value, "launch: this runner belongs to the host executor");
  }
  if (auto e = check_launch(s); e) {
    s.mu.unlock();
    return e;
  }
  if (auto e = s.gpu->dev->bind_thread(); e) {
    s.mu.unlock();
    return e;
  }
  if (!g_preloaded.load(std::memory_order_relaxed) && cuda_module_loading() == module_loading::lazy &&
      !g_lazy_warned.exchange(true))
    detail::log(log_level::warn,
                "CUDA lazy module loading is on: a kernel launched for the first time while this persistent kernel "
                "runs may never start. Set CUDA_MODULE_LOADING=EAGER, or call gnio::preload_kernel() for each such "
                "kernel before this launch (docs/kernels.md)");
  return s.stream;
}

error kernel_runner::end_cuda_launch(int cuda_error) {
  auto& s = *state_;
  std::unique_lock lk(s.mu, std::adopt_lock);
#if defined(GNIO_HAVE_CUDA)
  if (cuda_error != 0) {
    auto e = static_cast<cudaError_t>(cuda_error);
    return fail(status::driver, "kernel launch failed: {} ({}); check the GPU architecture this binary was built for",
                cudaGetErrorName(e), cudaGetErrorString(e));
  }
#else
  (void)cuda_error;
#endif
  for (auto& p : s.ports) p->kernels_running.fetch_add(1);
  s.phase = detail::run_phase::running;
  return {};
}

error kernel_runner::wait(std::chrono::nanoseconds timeout) {
  if (!state_) return fail(status::bad_state, "wait: the runner was destroyed");
  auto& s = *state_;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto sleep = std::chrono::microseconds(20);
  for (;;) {
    {
      std::lock_guard lk(s.mu);
      bool finished = false;
      if (auto e = s.poll_finished(&finished); e) return e;
      if (finished) return {};
    }
    if (std::chrono::steady_clock::now() >= deadline)
      return fail(status::time_out, "the kernel is still running after {} ms", std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count());
    if (s.gpu->info.executor == executor_kind::host) {
      std::unique_lock d(s.done_mu);
      s.done_cv.wait_until(d, std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(10)),
                           [&] { return s.done == s.threads.size(); });
    } else {
      std::this_thread::sleep_for(sleep);
      sleep = std::min(sleep * 2, std::chrono::microseconds(1000));
    }
  }
}

error kernel_runner::stop(std::chrono::nanoseconds deadline) {
  if (!state_) return fail(status::bad_state, "stop: the runner was destroyed");
  {
    std::lock_guard lk(state_->mu);
    if (state_->phase != detail::run_phase::running) return fail(status::bad_state, "stop: no kernel is running");
    // Pairs with the acquire load in device::exec_ctx::should_exit().
    __atomic_store_n(static_cast<uint32_t*>(state_->exit_flag.host_ptr), 1u, __ATOMIC_RELEASE);
  }
  if (auto e = wait(deadline); e) {
    if (e.code() == status::time_out)
      return fail(status::time_out,
                  "the kernel ignored the exit flag for {} ms; its memory stays allocated (fail closed) until it ends",
                  std::chrono::duration_cast<std::chrono::milliseconds>(deadline).count());
    return e;
  }
  return {};
}

error kernel_runner::destroy() {
  if (!state_) return fail(status::bad_state, "destroy: the runner was already destroyed");
  if (running()) return fail(status::bad_state, "destroy: the kernel is still running; stop it first");
  state_.reset();
  return {};
}

}  // namespace gnio
