// SPDX-License-Identifier: Apache-2.0
// The host executor's kernel runner: one CPU thread per block, the same body
// the GPU runs; persistent (launch_host), or per burst from the driver
// thread (host_bursts).
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <vector>

#include "runner_internal.hpp"

namespace gnio {

using detail::fail;

error kernel_runner::launch_host(uint32_t num_blocks, std::function<void(const device::exec_ctx&)> body) {
  if (!state_) return fail(status::bad_state, "launch: the runner was destroyed");
  auto& s = *state_;
  std::lock_guard lk(s.mu);
  if (s.gpu->info.executor != executor_kind::host)
    return fail(status::invalid_value, "launch_host: this runner belongs to a CUDA GPU");
  if (num_blocks > 4096)
    return fail(status::invalid_value, "launch: {} host threads is too many (max 4096)", num_blocks);
  if (auto e = detail::check_launch(s); e) return e;
  {
    std::lock_guard d(s.done_mu);
    s.done = 0;
  }
  for (auto& p : s.ports) p->kernels_running.fetch_add(1);
  s.phase = detail::run_phase::running;
  detail::reset_stats(s, device::launch_mode::persistent);
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

namespace detail {
namespace {

// Host executor, more than one block: blocks 1.. run on threads of their own,
// started once; each burst wakes them (a generation count) and waits until
// all have returned. The driver runs block 0 itself.
class host_blocks {
 public:
  host_blocks(uint32_t num_blocks, const device::exec_ctx& base,
              const std::function<void(const device::exec_ctx&)>& body)
      : base_(base), body_(body) {
    try {
      for (uint32_t b = 1; b < num_blocks; ++b) workers_.emplace_back([this, b] { work(b); });
    } catch (...) {
      quit();  // the threads started so far, before the error goes on
      throw;
    }
  }
  ~host_blocks() { quit(); }
  host_blocks(const host_blocks&) = delete;
  host_blocks& operator=(const host_blocks&) = delete;

  void run_once() {
    {
      std::lock_guard lk(mu_);
      ++gen_;
      left_ = static_cast<uint32_t>(workers_.size());
    }
    go_.notify_all();
    device::exec_ctx c = base_;  // a fresh context per launch: batches == 0
    c.block = 0;
    body_(c);
    std::unique_lock lk(mu_);
    done_.wait(lk, [&] { return left_ == 0; });
  }

 private:
  void quit() {
    {
      std::lock_guard lk(mu_);
      quit_ = true;
    }
    go_.notify_all();
    for (auto& t : workers_) t.join();
    workers_.clear();
  }

  void work(uint32_t b) {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock lk(mu_);
        go_.wait(lk, [&] { return quit_ || gen_ != seen; });
        if (quit_) return;
        seen = gen_;
      }
      device::exec_ctx c = base_;
      c.block = b;
      body_(c);
      std::lock_guard lk(mu_);
      if (--left_ == 0) done_.notify_all();
    }
  }

  device::exec_ctx base_;
  const std::function<void(const device::exec_ctx&)>& body_;
  std::mutex mu_;
  std::condition_variable go_, done_;
  uint64_t gen_ = 0;
  uint32_t left_ = 0;
  bool quit_ = false;
  std::vector<std::thread> workers_;
};

// Blocks 1.. on threads of their own (host_blocks) when there is more than
// one; block 0, or the only block, on the driver thread.
class host_burst_exec final : public burst_exec {
 public:
  host_burst_exec(uint32_t num_blocks, burst_launcher l) : num_blocks_(num_blocks), l_(std::move(l)) {}

  error start(const device::exec_ctx& base) override {
    base_ = base;
    if (num_blocks_ > 1) {
      try {
        pool_.emplace(num_blocks_, base_, l_.host);
      } catch (const std::system_error& e) {
        return fail(status::no_memory, "launch per burst: could not start {} host threads for the blocks: {}",
                    num_blocks_ - 1, e.what());
      }
    }
    return {};
  }

  error run_once() override {
    if (pool_) {
      pool_->run_once();
    } else {
      device::exec_ctx c = base_;  // a fresh context per launch: batches == 0
      l_.host(c);
    }
    return {};
  }

  error finish() override {
    pool_.reset();
    return {};
  }

 private:
  uint32_t num_blocks_;
  burst_launcher l_;
  device::exec_ctx base_{};
  std::optional<host_blocks> pool_;
};

}  // namespace

result<std::unique_ptr<burst_exec>> host_bursts(const launch_dims& dims, burst_launcher l) {
  return std::unique_ptr<burst_exec>(std::make_unique<host_burst_exec>(dims.blocks, std::move(l)));
}

}  // namespace detail
}  // namespace gnio
