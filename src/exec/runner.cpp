// SPDX-License-Identifier: Apache-2.0
// Kernel runners, what both executors share: the runner's life, the checks
// before a launch, waiting and stopping, and the driver thread of the
// per-burst modes, which watches the RX rings and runs the kernel per burst
// through the executor's burst_exec. The executors: host/host_runner.cpp (one
// CPU thread per block, the same body) and cuda/cuda_runner.cpp (a
// non-blocking stream, an exit flag in mapped host memory, stop by polling
// cudaStreamQuery).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <system_error>
#include <thread>

#include "runner_internal.hpp"

namespace gnio {

using detail::fail;

namespace detail {

// One RX queue a per-burst runner watches: its completions, consumer index
// and end-of-stream flag, all in host-visible memory.
struct watched_rxq {
  const device::rx_cqe* cq = nullptr;
  const uint64_t* cons = nullptr;
  const uint32_t* eos = nullptr;
  uint32_t num_descs = 0;
  uint32_t log2_descs = 0;
  uint32_t cqe_stride = sizeof(device::rx_cqe);  // bytes between entries (device::rxq::cqe_stride)
  uint32_t port_queue = 0;                       // the queue's id in its port (messages)
  std::string port;
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
  bursts = false;
}

error runner_state::poll_finished(bool* finished) {
  *finished = false;
  if (phase != run_phase::running) {
    *finished = true;
    return {};
  }
  if (bursts) {
    error e;
    {
      std::lock_guard d(done_mu);
      if (!burst_done) return {};
      e = std::move(burst_err);
      burst_err = {};
    }
    *finished = true;
    finish();
    return e;
  }
  if (gpu->info.executor == executor_kind::host) {
    std::lock_guard lk(done_mu);
    *finished = done == threads.size();
  } else {
    if (auto e = cuda_runner_poll(*this, finished); e) {
      finish();
      return e;
    }
  }
  if (*finished) finish();
  return {};
}

runner_state::~runner_state() {
  if (phase == run_phase::running) return;  // only reached through the abandoned list at exit
  if (stream) cuda_runner_close(*this);
  if (exit_flag.host_ptr) gpu->dev->release(exit_flag);
  if (!body.empty()) gpu->dev->release(body);
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
      detail::log(
          log_level::error,
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

error preload_kernel(const void* kernel) {
  if (kernel == nullptr) return fail(status::invalid_value, "preload_kernel: no kernel (a null function address)");
  if (auto e = detail::cuda_preload_kernel(kernel); e) return e;
  g_preloaded.store(true, std::memory_order_relaxed);
  return {};
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
  if (st->gpu->info.executor == executor_kind::cuda)
    if (auto e = detail::cuda_runner_open(*st); e) return e;
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

namespace detail {

error check_launch(runner_state& s) {
  if (s.phase == detail::run_phase::running)
    return fail(status::bad_state, "launch: this runner's kernel is already running");
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

device::exec_ctx make_ctx(const runner_state& s, uint32_t num_blocks) {
  device::exec_ctx c{};
  c.block = 0;
  c.num_blocks = num_blocks;
  c.exit_flag = static_cast<const uint32_t*>(s.exit_flag.exec_ptr);
  c.executor = s.gpu->info.executor == executor_kind::cuda ? 1u : 0u;
  c.mode = device::launch_mode::persistent;
  c.poll = device::poll_policy::adaptive;
  c.batches = 0;
  return c;
}

void reset_stats(runner_state& s, device::launch_mode mode) {
  s.mode = mode;
  s.num_launches.store(mode == device::launch_mode::persistent ? 1 : 0, std::memory_order_relaxed);
  s.burst_packets.store(0, std::memory_order_relaxed);
  s.busy_ns.store(0, std::memory_order_relaxed);
  s.idle_ns.store(0, std::memory_order_relaxed);
}

}  // namespace detail

device::exec_ctx kernel_runner::ctx(uint32_t num_blocks) const { return detail::make_ctx(*state_, num_blocks); }

launch_stats kernel_runner::stats() const {
  launch_stats st;
  if (!state_) return st;
  {
    std::lock_guard lk(state_->mu);
    st.mode = state_->mode;
  }
  st.launches = state_->num_launches.load(std::memory_order_relaxed);
  st.packets = state_->burst_packets.load(std::memory_order_relaxed);
  st.busy_ns = state_->busy_ns.load(std::memory_order_relaxed);
  st.idle_ns = state_->idle_ns.load(std::memory_order_relaxed);
  return st;
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
  if (auto e = detail::check_launch(s); e) {
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
  if (auto e = detail::cuda_launch_error(cuda_error); e) return e;
  for (auto& p : s.ports) p->kernels_running.fetch_add(1);
  s.phase = detail::run_phase::running;
  detail::reset_stats(s, device::launch_mode::persistent);
  return {};
}

// --- Per-burst modes -----------------------------------------------------------

namespace {

uint64_t steady_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

// Ready completions in q from ring index `from`, at most max.
uint32_t count_ready(const detail::watched_rxq& q, uint64_t from, uint32_t max) {
  uint32_t n = 0;
  while (n < max) {
    const uint64_t idx = from + n;
    // Pairs with the release store of rx_cqe::owner in backend::rx_ring_writer::publish().
    const auto* e = reinterpret_cast<const device::rx_cqe*>(reinterpret_cast<const uint8_t*>(q.cq) +
                                                            (idx & (q.num_descs - 1u)) * uint64_t{q.cqe_stride});
    const uint32_t own = device::sys_atomic_ref<const uint32_t>(e->owner).load(cuda::std::memory_order_acquire);
    if (own != device::rx_phase(idx, q.log2_descs)) break;
    ++n;
  }
  return n;
}

uint64_t consumer_index(const detail::watched_rxq& q) {
  // Pairs with the release store of *cons in device::detail::publish_consumer()
  // (the kernel's recv and release_all).
  return device::sys_atomic_ref<const uint64_t>(*q.cons).load(cuda::std::memory_order_acquire);
}

bool ended(const detail::watched_rxq& q) {
  // Pairs with the release store of *eos in backend::rx_ring_writer::end_of_stream(),
  // made after the backend's last publish.
  return device::sys_atomic_ref<const uint32_t>(*q.eos).load(cuda::std::memory_order_acquire) != 0u;
}

// The driver thread of a per-burst launch: waits for a burst in the watched
// queues, runs the kernel over it, waits for it, and repeats until every
// queue has ended and nothing is left, the exit flag is set, or a launch
// fails. Reports through s->burst_done / burst_err.
void burst_main(detail::runner_state* s, std::vector<detail::watched_rxq> qs, launch_dims dims,
                std::unique_ptr<detail::burst_exec> x) {
  const auto* exit_flag = static_cast<const uint32_t*>(s->exit_flag.host_ptr);
  device::exec_ctx base = detail::make_ctx(*s, dims.blocks);
  base.mode = dims.mode;
  base.poll = dims.poll;
  error err = x->start(base);

  const size_t nq = qs.size();
  std::vector<uint32_t> seen(nq, 0);   // ready entries found from the consumer index so far
  std::vector<uint64_t> since(nq, 0);  // when the host first saw one of them (0: none)
  std::vector<uint64_t> before(nq, 0);
  uint32_t empty_polls = 0;
  bool stalled = false;     // the last launch consumed nothing
  uint64_t stalled_at = 0;  // ready entries then
  uint64_t idle_from = steady_ns();
  while (!err) {
    // Pairs with the release store in kernel_runner::stop().
    if (__atomic_load_n(exit_flag, __ATOMIC_ACQUIRE) != 0u) break;
    uint32_t most = 0;
    uint64_t total = 0, oldest = UINT64_MAX, now = 0;
    bool all_ended = true;
    for (size_t i = 0; i < nq; ++i) {
      // The end flag is read before counting: once it is set, the count sees
      // every completion the backend will ever publish.
      const bool e = ended(qs[i]);
      all_ended &= e;
      if (seen[i] < dims.burst) seen[i] += count_ready(qs[i], consumer_index(qs[i]) + seen[i], dims.burst - seen[i]);
      if (seen[i] == 0) continue;
      if (since[i] == 0) since[i] = now ? now : (now = steady_ns());
      oldest = std::min(oldest, since[i]);
      most = std::max(most, seen[i]);
      total += seen[i];
    }
    if (total == 0 && all_ended) break;  // the end of the stream, everything consumed
    bool go = most >= dims.burst;
    if (!go && total > 0) {
      if (all_ended) go = true;  // nothing more is coming: no point waiting for the timeout
      else go = (now ? now : (now = steady_ns())) - oldest >= dims.burst_timeout_ns;
    }
    if (go && stalled && total <= stalled_at) {
      // The kernel left these completions: launch again only for new ones.
      if (all_ended) {
        uint64_t left = 0;
        for (const auto& q : qs) left += count_ready(q, consumer_index(q), q.num_descs);
        detail::log(log_level::warn,
                    "launch per burst: the kernel did not consume the {} completion(s) left at the end of the stream "
                    "(does the body receive from every RX queue of the runner's ports on its GPU?)",
                    left);
        break;
      }
      go = false;
    }
    if (!go) {
      if (dims.poll == device::poll_policy::adaptive)
        device::idle_backoff(++empty_polls, device::poll_policy::adaptive);
      continue;
    }
    empty_polls = 0;
    for (size_t i = 0; i < nq; ++i) before[i] = consumer_index(qs[i]);
    const uint64_t t0 = steady_ns();
    s->idle_ns.fetch_add(t0 - idle_from, std::memory_order_relaxed);
    if (err = x->run_once(); err) break;
    const uint64_t t1 = steady_ns();
    idle_from = t1;
    uint64_t took = 0;
    for (size_t i = 0; i < nq; ++i) {
      took += consumer_index(qs[i]) - before[i];
      seen[i] = 0;
      since[i] = 0;
    }
    s->num_launches.fetch_add(1, std::memory_order_relaxed);
    s->burst_packets.fetch_add(took, std::memory_order_relaxed);
    s->busy_ns.fetch_add(t1 - t0, std::memory_order_relaxed);
    stalled = took == 0;
    stalled_at = total;
  }
  if (auto e = x->finish(); e && !err) err = std::move(e);
  x.reset();
  std::lock_guard d(s->done_mu);
  s->burst_err = std::move(err);
  s->burst_done = true;
  s->done_cv.notify_all();
}

// The RX queues a per-burst runner watches: those of its ports that live on its GPU.
std::vector<detail::watched_rxq> watched_queues(detail::runner_state& s) {
  std::vector<detail::watched_rxq> out;
  for (auto& p : s.ports) {
    std::lock_guard lk(p->mu);
    for (auto& q : p->rxqs) {
      if (!q || !q->alive || q->owner != s.gpu || !q->cq_host || !q->cons_host || !q->eos.host_ptr) continue;
      detail::watched_rxq w;
      w.cq = q->cq_host;
      w.cons = q->cons_host;
      w.eos = static_cast<const uint32_t*>(q->eos.host_ptr);
      w.num_descs = q->view.num_descs;
      w.log2_descs = q->view.log2_descs;
      w.cqe_stride = q->view.cqe_stride();
      w.port_queue = q->id;
      w.port = p->name;
      out.push_back(std::move(w));
    }
  }
  return out;
}

}  // namespace

error kernel_runner::launch_bursts(const launch_dims& dims, detail::burst_launcher l) {
  if (!state_) return fail(status::bad_state, "launch: the runner was destroyed");
  auto& s = *state_;
  const bool cuda = s.gpu->info.executor == executor_kind::cuda;
  if (dims.mode != device::launch_mode::per_burst && dims.mode != device::launch_mode::graph)
    return fail(status::invalid_value, "launch_bursts: the launch mode is not per_burst or graph");
  if (dims.mode == device::launch_mode::graph && !cuda)
    return fail(
        status::not_supported,
        "launch: the graph launch mode replays a captured CUDA graph, and the host executor has no CUDA graphs; "
        "use per_burst (or persistent) on the host executor");
  if (dims.blocks == 0) return fail(status::invalid_value, "launch: blocks must be at least 1");
  if (!cuda && dims.blocks > 4096)
    return fail(status::invalid_value, "launch: {} host threads is too many (max 4096)", dims.blocks);
  if (dims.burst == 0) return fail(status::invalid_value, "launch: burst must be at least 1 packet");
  if (dims.burst_timeout_ns > 10'000'000'000ull)
    return fail(status::invalid_value, "launch: burst_timeout_ns {} is over 10 s; a burst waits at most that long",
                dims.burst_timeout_ns);
  if (cuda ? !l.cuda || !l.kernel : !l.host)
    return fail(status::invalid_value, "launch_bursts: no way to run the body on this executor");
  std::unique_lock lk(s.mu);
  if (auto e = detail::check_launch(s); e) return e;
  auto qs = watched_queues(s);
  if (qs.empty())
    return fail(status::invalid_value,
                "launch: a per-burst launch waits for bursts in the RX queues of the runner's ports, and none of its "
                "ports has an RX queue on this {}; create the runner with the ports whose queues the kernel receives "
                "from",
                cuda ? "GPU" : "executor");
  for (const auto& q : qs)
    if (dims.burst > q.num_descs)
      return fail(status::invalid_value,
                  "launch: burst {} is larger than RX queue {} of port {} ({} descriptors): that burst can never be "
                  "ready; use a burst of at most the smallest ring",
                  dims.burst, q.port_queue, q.port, q.num_descs);
  auto x = cuda ? detail::cuda_bursts(s, dims, std::move(l)) : detail::host_bursts(dims, std::move(l));
  if (!x) return x.err();
  {
    std::lock_guard d(s.done_mu);
    s.burst_done = false;
    s.burst_err = {};
  }
  detail::reset_stats(s, dims.mode);
  for (auto& p : s.ports) p->kernels_running.fetch_add(1);
  s.phase = detail::run_phase::running;
  s.bursts = true;
  try {
    s.threads.emplace_back(burst_main, &s, std::move(qs), dims, std::move(*x));
  } catch (const std::system_error& e) {
    for (auto& p : s.ports) p->kernels_running.fetch_sub(1);
    s.phase = detail::run_phase::idle;
    s.bursts = false;
    return fail(status::no_memory, "launch: could not start the per-burst driver thread: {}", e.what());
  }
  return {};
}

error kernel_runner::wait(std::chrono::nanoseconds timeout) {
  if (!state_) return fail(status::bad_state, "wait: the runner was destroyed");
  auto& s = *state_;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto sleep = std::chrono::microseconds(20);
  for (;;) {
    bool host_threads = false, bursts = false;
    size_t num_threads = 0;
    {
      std::lock_guard lk(s.mu);
      bool finished = false;
      if (auto e = s.poll_finished(&finished); e) return e;
      if (finished) return {};
      host_threads = s.gpu->info.executor == executor_kind::host;
      bursts = s.bursts;
      num_threads = s.threads.size();
    }
    if (std::chrono::steady_clock::now() >= deadline)
      return fail(status::time_out, "the kernel is still running after {} ms",
                  std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count());
    if (host_threads || bursts) {
      std::unique_lock d(s.done_mu);
      s.done_cv.wait_until(d, std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(10)),
                           [&] { return bursts ? s.burst_done : s.done == num_threads; });
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

kernel_runner::~kernel_runner() = default;

result<const void*> kernel_runner::body_copy(const void* body, size_t bytes) {
  if (!state_) return fail(status::bad_state, "launch: the runner was destroyed");
  auto& s = *state_;
  std::lock_guard lk(s.mu);
  // The body of a running kernel is not replaced under it.
  if (s.phase == detail::run_phase::running)
    return fail(status::bad_state, "launch: this runner's kernel is already running");
  if (!s.body.empty()) s.gpu->dev->release(s.body);
  s.body = {};
  if (auto e = s.gpu->dev->bind_thread(); e) return e;
  auto b = s.gpu->alloc(bytes, mem_type::gpu);
  if (!b) return b.err();
  s.body = *b;
  if (auto e = s.gpu->dev->copy_to_exec(s.body.exec_ptr, body, bytes); e) return e;
  return static_cast<const void*>(s.body.exec_ptr);
}

void kernel_runner::release() noexcept {
  if (!state_) return;
  {
    // A released runner is never destroyed, so nothing would ever join its
    // host threads: detach them (they count themselves done in the state,
    // which stays alive).
    std::lock_guard lk(state_->mu);
    for (auto& t : state_->threads) t.detach();
    state_->threads.clear();
  }
  detail::keep_until_exit(std::move(state_));
}

}  // namespace gnio
