// SPDX-License-Identifier: Apache-2.0
#include "gnio/session.hpp"

#include <algorithm>
#include <deque>

#include "internal.hpp"

namespace gnio {

using detail::fail;

bool accounting::exact() const noexcept {
  if (total.unaccounted != 0) return false;
  return std::all_of(queues.begin(), queues.end(), [](const queue_accounting& q) { return q.unaccounted == 0; });
}

accounting account(const port_stats& st, std::span<const uint64_t> processed) {
  accounting a;
  a.queues.resize(st.rxq.size());
  for (size_t i = 0; i < st.rxq.size(); ++i) {
    const rxq_stats& r = st.rxq[i];
    queue_accounting& q = a.queues[i];
    q.received = r.offered;
    q.processed = i < processed.size() ? processed[i] : 0;
    q.missed = r.missed;
    // A kernel that reports more than was delivered is caught by unaccounted, not hidden in pending.
    q.pending = r.delivered > q.processed ? r.delivered - q.processed : 0;
    q.unaccounted = static_cast<int64_t>(q.received) - static_cast<int64_t>(q.processed + q.missed + q.pending);
    a.total.processed += q.processed;
    a.total.pending += q.pending;
  }
  a.total.received = st.rx_frames;
  a.total.missed = st.rx_missed;
  a.total.unsteered = st.rx_unsteered;
  a.total.unaccounted = static_cast<int64_t>(a.total.received) -
                        static_cast<int64_t>(a.total.processed + a.total.missed + a.total.unsteered + a.total.pending);
  return a;
}

namespace detail {

struct session_state {
  std::vector<gpu> gpus;
  port p;
  struct per_gpu {
    kernel_runner runner;
    std::deque<semaphore> sems;  // a deque: add_semaphore hands out stable addresses
    std::vector<mem_block> mem;
  };
  std::vector<per_gpu> ctx;
  bool started = false;
  bool port_stopped = false;
  bool parked = false;

  ~session_state() {
    // Reverse order of the lifecycle. Only reached with no kernel running:
    // a parked session is never destroyed.
    for (auto& c : ctx) {
      c.runner = {};
      c.sems.clear();
    }
    if (started && !port_stopped) (void)p.stop();
    for (size_t i = 0; i < ctx.size(); ++i)
      for (auto& b : ctx[i].mem) (void)gpus[i].free(b);
    for (uint32_t q = 0; q < p.num_rxq(); ++q) (void)p.destroy_rxq(q);
    for (uint32_t q = 0; q < p.num_txq(); ++q) (void)p.destroy_txq(q);
    (void)p.close();
  }
};

}  // namespace detail

session::session(std::unique_ptr<detail::session_state> s) : state_(std::move(s)) {}
session::session(session&&) noexcept = default;
session& session::operator=(session&& o) noexcept {
  if (this != &o) {
    session old(std::move(*this));  // ends (or parks) what this held
    state_ = std::move(o.state_);
  }
  return *this;
}

session::~session() {
  if (!state_) return;
  if (running()) {
    detail::log(log_level::error,
                "session on port {} ended while a kernel still runs; its port, memory and semaphores are kept until "
                "the process exits",
                state_->p.name());
    state_->parked = true;
  }
  if (state_->parked) {
    // Each runner is released too, which detaches host threads that nothing
    // will ever join; the memory they use stays with the kept session.
    for (auto& c : state_->ctx) c.runner.release();
    detail::keep_until_exit(std::shared_ptr<detail::session_state>(state_.release()));
    return;
  }
  state_.reset();
}

result<session> session::create(std::vector<gpu> gpus, port p) {
  if (gpus.empty()) return fail(status::invalid_value, "session: no GPU (give at least one context)");
  for (const auto& g : gpus)
    if (!g.valid()) return fail(status::bad_state, "session: a GPU was never opened");
  if (!p.valid()) return fail(status::bad_state, "session: the port is closed or was never opened");
  if (p.num_rxq() == 0 && p.num_txq() == 0)
    return fail(status::invalid_value, "session: port {} has no queues; create them before the session", p.name());
  auto st = std::make_unique<detail::session_state>();
  st->ctx.resize(gpus.size());
  st->gpus = std::move(gpus);
  st->p = std::move(p);
  return session(std::move(st));
}

size_t session::num_gpus() const noexcept { return state_ ? state_->gpus.size() : 0; }
gpu& session::gpu_at(size_t i) { return state_->gpus.at(i); }
port& session::get_port() { return state_->p; }
const port& session::get_port() const { return state_->p; }

result<mem_block> session::alloc_bytes(size_t g, size_t bytes, mem_type type) {
  if (!state_) return fail(status::bad_state, "session::alloc: the session is empty (moved from)");
  if (g >= state_->gpus.size())
    return fail(status::invalid_value, "session::alloc: GPU index {} past the session's {}", g, state_->gpus.size());
  if (bytes == 0) return fail(status::invalid_value, "session::alloc: zero bytes");
  auto& gp = state_->gpus[g];
  auto b = gp.alloc(bytes, type);
  if (!b) return b.err();
  state_->ctx[g].mem.push_back(*b);  // zeroed by gpu::alloc
  return *b;
}

error session::read_bytes(size_t g, const mem_block& b, void* dst, size_t bytes) {
  if (!state_) return fail(status::bad_state, "session::read: the session is empty (moved from)");
  if (g >= state_->gpus.size())
    return fail(status::invalid_value, "session::read: GPU index {} past the session's {}", g, state_->gpus.size());
  return state_->gpus[g].copy_to_host(dst, b, 0, bytes);
}

error session::write_bytes(size_t g, mem_block& b, const void* src, size_t bytes) {
  if (!state_) return fail(status::bad_state, "session::write: the session is empty (moved from)");
  if (g >= state_->gpus.size())
    return fail(status::invalid_value, "session::write: GPU index {} past the session's {}", g, state_->gpus.size());
  return state_->gpus[g].copy_to_block(b, 0, src, bytes);
}

result<semaphore*> session::add_semaphore(size_t g, uint32_t num_items, uint32_t custom_bytes) {
  if (!state_) return fail(status::bad_state, "session::add_semaphore: the session is empty (moved from)");
  if (g >= state_->gpus.size())
    return fail(status::invalid_value, "session::add_semaphore: GPU index {} past the session's {}", g,
                state_->gpus.size());
  auto s = semaphore::create(state_->gpus[g], num_items, custom_bytes);
  if (!s) return s.err();
  state_->ctx[g].sems.push_back(std::move(s).value());
  return &state_->ctx[g].sems.back();
}

error session::start() {
  if (!state_) return fail(status::bad_state, "session::start: the session is empty (moved from)");
  if (state_->started) return fail(status::bad_state, "session::start: already started");
  if (auto e = state_->p.start(); e) return e;
  state_->started = true;
  for (size_t i = 0; i < state_->gpus.size(); ++i) {
    auto r = kernel_runner::create(state_->gpus[i], {&state_->p});
    if (!r) return r.err();
    state_->ctx[i].runner = std::move(r).value();
  }
  return {};
}

kernel_runner& session::runner(size_t g) { return state_->ctx.at(g).runner; }

bool session::running() const {
  if (!state_) return false;
  return std::any_of(state_->ctx.begin(), state_->ctx.end(),
                     [](const detail::session_state::per_gpu& c) { return c.runner.valid() && c.runner.running(); });
}

error session::wait(std::chrono::nanoseconds timeout) {
  if (!state_) return fail(status::bad_state, "session::wait: the session is empty (moved from)");
  const auto end = std::chrono::steady_clock::now() + timeout;
  for (auto& c : state_->ctx) {
    if (!c.runner.valid()) continue;
    const auto left = std::max(std::chrono::nanoseconds(0), end - std::chrono::steady_clock::now());
    if (auto e = c.runner.wait(left); e) return e;
  }
  return {};
}

error session::stop(std::chrono::nanoseconds deadline) {
  if (!state_) return fail(status::bad_state, "session::stop: the session is empty (moved from)");
  const auto end = std::chrono::steady_clock::now() + deadline;
  // Every exit flag first, so the kernels on all GPUs wind down together;
  // stop(0) sets the flag and returns at once (time_out while it runs, or
  // bad_state for a kernel that has just returned).
  for (auto& c : state_->ctx)
    if (c.runner.valid() && c.runner.running()) (void)c.runner.stop(std::chrono::nanoseconds(0));
  error first;
  for (size_t i = 0; i < state_->ctx.size(); ++i) {
    auto& r = state_->ctx[i].runner;
    if (!r.valid()) continue;
    const auto left = std::max(std::chrono::nanoseconds(0), end - std::chrono::steady_clock::now());
    if (auto e = r.wait(left); e) {
      if (e.code() == status::time_out) {
        state_->parked = true;
        return fail(status::time_out,
                    "the kernel on GPU {} ignored its exit flag for {} ms; the session keeps its port, memory and "
                    "semaphores until the process exits (fail closed)",
                    i, std::chrono::duration_cast<std::chrono::milliseconds>(deadline).count());
      }
      if (!first) first = e;
    }
  }
  return first;
}

error session::stop_port() {
  if (!state_) return fail(status::bad_state, "session::stop_port: the session is empty (moved from)");
  if (!state_->started || state_->port_stopped) return {};
  if (running()) return fail(status::bad_state, "session::stop_port: a kernel still runs; stop it first");
  state_->port_stopped = true;
  return state_->p.stop();
}

bool session::parked() const noexcept { return state_ && state_->parked; }

port_stats session::stats() const { return state_ ? state_->p.stats() : port_stats{}; }

accounting session::account(std::span<const uint64_t> processed) const { return gnio::account(stats(), processed); }

}  // namespace gnio
