// SPDX-License-Identifier: Apache-2.0
// Ports: opening one from a device string, the lifecycle checks, starting
// and stopping its engine, and its statistics. Queue memory is in
// queue_mem.cpp, steering in steering.cpp, the engine in engine.cpp.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "gnio/atomic_file.hpp"
#include "internal.hpp"
#include "out_file.hpp"

namespace gnio {

using detail::fail;
using detail::port_phase;

namespace detail {

void port_state::join_engines() noexcept {
  stop_req.store(true, std::memory_order_release);
  for (auto& t : engines)
    if (t.joinable()) t.join();
  engines.clear();
}

void port_state::set_engine_error(error e) {
  std::lock_guard lk(err_mu);
  if (!engine_err) {
    log(log_level::error, "port {}: {}", name, e.what());
    engine_err = std::move(e);
  }
}

void port_state::release_tx_stage() noexcept {
  if (tx_stage.host_ptr) gpu->dev->release(tx_stage);
  tx_stage = {};
}

void port_state::teardown() noexcept {
  if (kernels_running.load() > 0) {
    // Fail closed: a kernel may still read these rings.
    log(log_level::error, "port {}: kernels still running at teardown; leaking its memory instead of freeing it", name);
    return;
  }
  join_engines();
  if (phase == port_phase::started && ops->stop) (void)ops->stop(priv);
  mirror.close();
  auto release = [&](gpu_state& owner, mem_block& b) {
    if (!b.empty() || b.host_ptr) owner.dev->release(b);
    b = {};
  };
  for (auto it = txqs.rbegin(); it != txqs.rend(); ++it) {
    auto& q = **it;
    for (auto* b : {&q.prod, &q.done, &q.doorbell, &q.bufs, &q.ring}) release(*q.owner, *b);
    if (q.alive && q.owner != gpu) q.owner->children.fetch_sub(1);
  }
  for (auto it = rxqs.rbegin(); it != rxqs.rend(); ++it) {
    auto& q = **it;
    for (auto* b : {&q.stage, &q.eos, &q.next, &q.cons, &q.cq, &q.pkts}) release(*q.owner, *b);
    if (q.alive && q.owner != gpu) q.owner->children.fetch_sub(1);
  }
  release(*gpu, tx_stage);
  txqs.clear();
  rxqs.clear();
  lanes.clear();
  if (priv && ops->close) ops->close(priv);
  priv = nullptr;
  // After close: the backend's source (a UMEM, a mempool) lives on the pool.
  if (pool.host_ptr) gpu->dev->release_pool(pool);
  pool = {};
  if (phase != port_phase::closed) gpu->children.fetch_sub(1);
  phase = port_phase::closed;
}

port_state::~port_state() {
  if (phase != port_phase::closed) teardown();
}

}  // namespace detail

port::~port() = default;

void port::release() noexcept { detail::keep_until_exit(std::move(state_)); }

result<port> port::open(gpu& g, std::string_view dev) {
  if (!g.valid()) return fail(status::bad_state, "port::open: the gpu was destroyed or never opened");
  auto args = backend::parse_devargs(dev);
  if (!args) return args.err();
  const backend::ops* ops = backend::find(args->name);
  if (!ops) {
    std::string names;
    for (const auto* o : backend::registered()) names += (names.empty() ? "" : ", ") + std::string(o->name);
    return fail(status::bad_config, "port: unknown backend '{}' in '{}' (available: {})", args->name, dev, names);
  }
  auto st = std::make_shared<detail::port_state>();
  st->gpu = g.state();
  st->ops = ops;
  st->name = std::string(dev);
  // Core options, handled here for every backend.
  std::string overflow;
  if (const auto* v = args->find("overflow")) {
    overflow = *v;
    if (overflow != "drop" && overflow != "wait")
      return fail(status::invalid_value, "{}: overflow={} must be drop or wait", args->name, overflow);
    std::erase_if(args->kv, [](const auto& kv) { return kv.first == "overflow"; });
  }
  if (const auto* v = args->find("engine_poll")) {
    if (*v != "busy" && *v != "adaptive")
      return fail(status::invalid_value, "{}: engine_poll={} must be busy or adaptive", args->name, *v);
    st->engine_busy = *v == "busy";
    std::erase_if(args->kv, [](const auto& kv) { return kv.first == "engine_poll"; });
  }
  if (args->find("lanes")) {
    uint64_t n = 0;
    if (auto e = backend::get_u64(*args, "lanes", 1, 64, &n); e) return e;
    st->num_lanes = static_cast<uint32_t>(n);
    std::erase_if(args->kv, [](const auto& kv) { return kv.first == "lanes"; });
    if (n > 1 && !ops->set_lanes)
      return fail(status::not_supported,
                  "{}: lanes={}: this backend has a single source and cannot be split over "
                  "several engine threads (gen can)",
                  args->name, n);
  }
  if (const auto* v = args->find("tx_pcap")) {
    if (v->empty()) return fail(status::invalid_value, "{}: tx_pcap= needs a file name", args->name);
    std::string path = *v;
    std::erase_if(args->kv, [](const auto& kv) { return kv.first == "tx_pcap"; });
    if (auto e = st->mirror.configure(std::move(path)); e) return e;
  }
  if (const auto* v = args->find("rx_pcap")) {
    if (v->empty()) return fail(status::invalid_value, "{}: rx_pcap= needs a file name", args->name);
    std::string path = *v;
    std::erase_if(args->kv, [](const auto& kv) { return kv.first == "rx_pcap"; });
    if (auto e = st->rx_mirror.configure(std::move(path)); e) return e;
  }
  uint64_t rot_bytes = 0, rot_s = 0;
  for (const char* k : {"rx_pcap_size", "rx_pcap_seconds"}) {
    if (!args->find(k)) continue;
    if (!st->rx_mirror.configured())
      return fail(status::invalid_value, "{}: {}= needs rx_pcap=FILE, the file it rotates", args->name, k);
    if (st->rx_mirror.stream())
      return fail(status::invalid_value,
                  "{}: {}= rotates files, and rx_pcap={} is one stream (stdout or a FIFO); name a regular file",
                  args->name, k, st->rx_mirror.path());
    uint64_t* v = std::string_view(k) == "rx_pcap_size" ? &rot_bytes : &rot_s;
    if (auto e = backend::get_u64(*args, k, 1, uint64_t{1} << 50, v); e) return e;
    std::erase_if(args->kv, [k](const auto& kv) { return kv.first == k; });
  }
  st->rx_mirror.set_rotation(rot_bytes, rot_s * 1'000'000'000ull);
  void* priv = nullptr;
  if (auto e = ops->open(*args, &priv); e) return e;
  st->priv = priv;
  if (ops->get_caps) ops->get_caps(priv, &st->caps);
  // A port that sends and whose backend does not handle frame times itself:
  // the engine holds each frame until its time (engine.cpp, drain_tx).
  if (st->caps.tx && (ops->tx_burst_at == nullptr || st->caps.tx_time == tx_time_mode::none))
    st->caps.tx_time = tx_time_mode::hold;
  if (!st->caps.tx) st->caps.tx_time = tx_time_mode::none;
  if (ops->rx_pool_setup) {
    // The backend receives into memory of its own: allocate it GPU-visible,
    // so RX completions can name its buffers instead of copying them.
    backend::pool_alloc alloc{st.get(), [](void* ctx, size_t bytes, uint8_t** host) -> error {
                                auto& s = *static_cast<detail::port_state*>(ctx);
                                if (s.pool.host_ptr)
                                  return fail(status::already_exist, "{}: the RX pool was already allocated", s.name);
                                if (bytes == 0 || bytes > (uint64_t{1} << 32))
                                  return fail(status::invalid_value, "{}: an RX pool of {} bytes is outside (0, 4 GiB]",
                                              s.name, bytes);
                                auto b = s.gpu->dev->alloc_pool(bytes);
                                if (!b) return b.err();
                                s.pool = *b;
                                *host = static_cast<uint8_t*>(b->host_ptr);
                                return {};
                              }};
    backend::rx_pool pool;
    error e = ops->rx_pool_setup(priv, alloc, &pool);
    // A backend that allocated nothing and left *pool empty receives by copy
    // (e.g. dpdk with by_ref=0): its queues get areas of their own.
    const bool none = !e && !st->pool.host_ptr && !pool.host && pool.bytes == 0;
    if (!e && !none &&
        (!st->pool.host_ptr || pool.host != st->pool.host_ptr || pool.bytes > st->pool.bytes || pool.buf_bytes == 0))
      e = fail(status::unexpected, "{}: the backend described an RX pool it did not allocate", args->name);
    if (e) {
      if (ops->close) ops->close(priv);
      if (st->pool.host_ptr) st->gpu->dev->release_pool(st->pool);
      st->priv = nullptr;
      st->pool = {};
      st->phase = port_phase::closed;
      return e;
    }
    st->pool_buf_bytes = pool.buf_bytes;
  }
  // A finite source (a file, a counted generator) is replayed without loss by
  // default; a live one drops and counts when a ring is full, as a NIC does.
  st->overflow_wait = overflow.empty() ? st->caps.finite : overflow == "wait";
  st->gpu->children.fetch_add(1);
  return port(std::move(st));
}

const port_caps& port::caps() const {
  static const port_caps none{};
  return state_ ? state_->caps : none;
}

const std::string& port::name() const {
  static const std::string none;
  return state_ ? state_->name : none;
}

error port::register_memory(const mem_block& block) {
  if (!state_) return fail(status::bad_state, "register_memory: the port is closed");
  auto& s = *state_;
  std::lock_guard lk(s.mu);
  if (s.phase != port_phase::configured)
    return fail(status::bad_state, "register_memory: port {} was started; register buffer arrays before start()",
                s.name);
  if (block.empty() || block.bytes == 0) return fail(status::invalid_value, "register_memory: empty block");
  for (const auto& b : s.user_regions)
    if (b.exec_ptr == block.exec_ptr) return fail(status::already_exist, "register_memory: block already registered");
  s.user_regions.push_back(block);
  return {};
}

error port::set_rx_pcap_filter(std::vector<device::bpf_insn> insns) {
  if (!state_) return fail(status::bad_state, "set_rx_pcap_filter: the port is closed");
  auto& s = *state_;
  std::lock_guard lk(s.mu);
  if (s.phase != port_phase::configured)
    return fail(status::bad_state, "set_rx_pcap_filter: port {} was started; set the filter before start()", s.name);
  if (!insns.empty()) {
    const auto v = device::bpf_verify(insns.data(), static_cast<uint32_t>(insns.size()));
    if (v != device::bpf_verdict::ok)
      return fail(status::invalid_value, "set_rx_pcap_filter: the program does not verify (verdict {})",
                  static_cast<uint32_t>(v));
  }
  s.rx_filter = std::move(insns);
  return {};
}

uint64_t port::rx_pcap_frames() const noexcept { return state_ ? state_->rx_mirror.frames_written() : 0; }
int port::rx_pcap_errno() const noexcept { return state_ ? state_->rx_mirror.failed_errno() : 0; }

error port::set_steering(std::vector<steering_rule> rules, std::vector<uint32_t> default_queues) {
  if (!state_) return fail(status::bad_state, "set_steering: the port is closed");
  auto& s = *state_;
  std::lock_guard lk(s.mu);
  if (s.phase != port_phase::configured)
    return fail(status::bad_state, "set_steering: port {} was started; set steering before start()", s.name);
  auto check = [&](const std::vector<uint32_t>& qs) -> error {
    for (uint32_t id : qs)
      if (id >= s.rxqs.size() || !s.rxqs[id]->alive)
        return fail(status::invalid_value, "set_steering: RX queue {} does not exist", id);
    return {};
  };
  for (const auto& r : rules) {
    if (r.cls > device::rx_class_arp)
      return fail(status::invalid_value, "set_steering: unknown class {}", static_cast<int>(r.cls));
    if (auto e = check(r.queues); e) return e;
  }
  if (auto e = check(default_queues); e) return e;
  s.rules = std::move(rules);
  s.default_queues = std::move(default_queues);
  return {};
}

error port::start() {
  if (!state_) return fail(status::bad_state, "start: the port is closed");
  auto& s = *state_;
  std::lock_guard lk(s.mu);
  if (s.phase != port_phase::configured)
    return fail(status::bad_state, "start: port {} is {}", s.name,
                s.phase == port_phase::started ? "already started" : "stopped; open a new port to run again");
  std::vector<detail::rxq_state*> rx;
  std::vector<detail::txq_state*> tx;
  for (auto& q : s.rxqs)
    if (q->alive) rx.push_back(q.get());
  for (auto& q : s.txqs)
    if (q->alive) tx.push_back(q.get());
  if (rx.empty() && tx.empty())
    return fail(status::bad_state, "start: port {} has no queues; create at least one first", s.name);

  const uint32_t nl = s.num_lanes;
  if (nl > 1) {
    if (rx.size() < nl)
      return fail(status::invalid_value, "start: port {}: lanes={} needs at least as many RX queues (has {})", s.name,
                  nl, rx.size());
    if (auto e = s.ops->set_lanes(s.priv, nl); e) return e;
  }
  std::vector<uint32_t> ids;
  for (auto* q : rx) ids.push_back(q->id);
  const detail::lane_plan plan = detail::plan_lanes(ids, s.rules, s.default_queues, nl);
  std::vector<std::unique_ptr<detail::lane_state>> lanes;
  for (uint32_t i = 0; i < nl; ++i) {
    auto l = std::make_unique<detail::lane_state>();
    l->port = &s;
    l->index = i;
    for (uint32_t p : plan.lanes[i].rx) l->rx.push_back(rx[p]);
    for (size_t c = 0; c < 8; ++c) l->groups[c] = plan.lanes[i].groups[c];
    l->single = nl == 1 && rx.size() == 1 && s.rules.empty();
    lanes.push_back(std::move(l));
  }
  for (size_t p = 0; p < rx.size(); ++p) {
    rx[p]->shared = plan.writers[p] > 1;
    rx[p]->writers_left.store(plan.writers[p], std::memory_order_relaxed);
  }

  // Where a TX descriptor may point: queue buffers, RX packet memory, the RX
  // pool and registered blocks; sorted so the engine finds one by bisection.
  std::vector<detail::region> regions;
  auto add = [&](const mem_block& b, detail::device_ops* dev, bool pool) {
    if (b.exec_ptr)
      regions.push_back(
          {reinterpret_cast<uintptr_t>(b.exec_ptr), static_cast<uint8_t*>(b.host_ptr), b.bytes, dev, pool});
  };
  size_t stage = 0;
  for (auto* q : tx) {
    add(q->bufs, q->owner->dev.get(), false);
    if (!q->bufs.host_ptr) stage = std::max<size_t>(stage, q->bufs.bytes);
  }
  for (auto* q : rx) {
    add(q->pkts, q->owner->dev.get(), false);
    if (!q->pkts.empty() && !q->pkts.host_ptr) stage = std::max<size_t>(stage, 64 * 65536);
  }
  add(s.pool, s.gpu->dev.get(), true);
  for (const auto& b : s.user_regions) {
    add(b, s.gpu->dev.get(), false);
    if (!b.host_ptr) stage = std::max<size_t>(stage, 64 * 65536);
  }
  std::sort(regions.begin(), regions.end(), [](const auto& a, const auto& b) { return a.exec < b.exec; });
  if (!tx.empty()) {
    // Largest burst the engine copies out of GPU memory at once.
    auto st = s.gpu->dev->alloc_staging(std::max<size_t>(std::min<size_t>(stage, 64 * 65536), 4096));
    if (!st) return st.err();
    s.tx_stage = *st;
    auto cq = s.gpu->dev->make_copy_queue();
    if (!cq) {
      s.release_tx_stage();
      return cq.err();
    }
    lanes.front()->copies = std::move(*cq);
  }
  // tx_pcap=: reserved before the backend starts, so an unwritable file fails
  // the start, but neither truncated nor (when new) left behind unless the
  // backend started too.
  // rx_pcap= likewise, for a port with RX queues.
  if (!tx.empty() && !s.mirror.writing()) {
    if (auto e = s.mirror.reserve(); e) {
      s.release_tx_stage();
      return e;
    }
  }
  if (!rx.empty() && !s.rx_mirror.writing()) {
    if (auto e = s.rx_mirror.reserve(); e) {
      s.mirror.drop();
      s.release_tx_stage();
      return e;
    }
  }
  if (s.ops->start) {
    if (auto e = s.ops->start(s.priv); e) {
      s.mirror.drop();
      s.rx_mirror.drop();
      s.release_tx_stage();
      return e;
    }
  }
  error be = s.mirror.begin();
  if (!be) be = s.rx_mirror.begin();
  if (be) {
    s.mirror.close();
    s.rx_mirror.drop();
    if (s.ops->stop) (void)s.ops->stop(s.priv);
    s.release_tx_stage();
    return be;
  }
  s.regions = std::move(regions);
  s.live_tx = std::move(tx);
  s.stop_req = false;
  s.rx_ended = false;
  s.lanes_ended = 0;
  s.lanes = std::move(lanes);
  s.phase = port_phase::started;
  for (auto& l : s.lanes) s.engines.emplace_back([ln = l.get()] { detail::engine_main(*ln); });
  return {};
}

error port::stop() {
  if (!state_) return fail(status::bad_state, "stop: the port is closed");
  auto& s = *state_;
  std::lock_guard lk(s.mu);
  if (s.phase != port_phase::started) return fail(status::bad_state, "stop: port {} is not started", s.name);
  if (int k = s.kernels_running.load(); k > 0)
    return fail(status::bad_state, "stop: {} kernel runner(s) still use port {}; stop them first", k, s.name);
  // A lane held by a stream's reader that reads nothing gives up within
  // pcap_mirror::stop_grace_ms of the last byte it took.
  s.mirror.stopping();
  s.rx_mirror.stopping();
  s.join_engines();
  error e;
  if (s.ops->stop) e = s.ops->stop(s.priv);
  // A tx_pcap= write that failed (a full disk) is reported here too, with its errno.
  if (auto te = s.mirror.finish(); te && !e) e = std::move(te);
  if (auto re = s.rx_mirror.finish(); re && !e) e = std::move(re);
  s.release_tx_stage();
  s.phase = port_phase::stopped;
  return e;
}

error port::close() {
  if (!state_) return fail(status::bad_state, "close: the port is already closed");
  {
    auto& s = *state_;
    std::lock_guard lk(s.mu);
    if (s.phase == port_phase::started) return fail(status::bad_state, "close: stop port {} first", s.name);
    size_t alive = 0;
    for (auto& q : s.rxqs) alive += q->alive;
    for (auto& q : s.txqs) alive += q->alive;
    if (alive)
      return fail(status::bad_state, "close: port {} still has {} queue(s); destroy them first", s.name, alive);
  }
  if (state_.use_count() > 1)
    return fail(status::bad_state, "close: port {} is still used by a kernel runner; destroy it first", state_->name);
  state_->teardown();
  state_.reset();
  return {};
}

port_stats port::stats() const {
  port_stats out;
  if (!state_) return out;
  auto& s = *state_;
  backend::counters c;
  if (s.ops->get_counters && s.priv) s.ops->get_counters(s.priv, &c);
  out.rx_frames = c.rx_frames;
  out.rx_bytes = c.rx_bytes;
  out.rx_errors = c.rx_errors;
  out.rx_dropped = c.rx_dropped;
  out.tx_frames = c.tx_frames;
  out.tx_bytes = c.tx_bytes;
  out.tx_errors = c.tx_errors;
  out.rx_unsteered = s.rx_unsteered.get();
  out.rx_ended = s.rx_ended.load(std::memory_order_acquire);
  for (auto& q : s.rxqs) {
    rxq_stats r;
    r.offered = q->offered.get();
    r.delivered = q->delivered.get();
    r.missed = q->missed.get();
    r.bytes = q->bytes.get();
    r.truncated = q->truncated.get();
    // Pairs with the release add in the engine's reclaim(), made after rx_release returned.
    r.returned = q->returned.load(std::memory_order_acquire);
    // Pairs with the kernel's release store of its consumer index.
    if (q->cons_host)
      r.consumed = device::sys_atomic_ref<uint64_t>(*q->cons_host).load(cuda::std::memory_order_acquire);
    out.rx_missed += r.missed;
    out.rx_delivered += r.delivered;
    out.rxq.push_back(r);
  }
  for (auto& l : s.lanes) out.lanes.push_back({l->frames.get(), l->busy_ns.get(), l->full_ns.get()});
  for (auto& q : s.txqs) {
    txq_stats t;
    t.sent = q->sent.get();
    t.bytes = q->bytes.get();
    t.errors = q->errors.get();
    t.bad_addr = q->bad_addr.get();
    out.txq.push_back(t);
  }
  return out;
}

bool port::rx_ended() const { return state_ && state_->rx_ended.load(std::memory_order_acquire); }

error port::engine_error() const {
  if (!state_) return {};
  std::lock_guard lk(state_->err_mu);
  return state_->engine_err;
}

uint64_t tx_clock_ns() noexcept {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(t.tv_nsec);
}

}  // namespace gnio