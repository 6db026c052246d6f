// SPDX-License-Identifier: Apache-2.0
// Ports, their queues, the lifecycle checks, and the engine thread that plays
// the NIC: it asks the backend for frames, steers them into RX rings, and
// transmits what kernels ring the TX doorbell for.
#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>

#include <pcap/pcap.h>

#include "gnio/device/pkt.hpp"
#include "internal.hpp"

namespace gnio {

using detail::fail;
using detail::port_phase;

namespace detail {

namespace {

uint64_t realtime_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

// Frame class for steering, from the parsed headers.
device::rx_class classify(const device::parsed_pkt& p) {
  if (p.l3 == device::l3_kind::arp) return device::rx_class_arp;
  switch (p.l4) {
    case device::l4_kind::udp: return device::rx_class_udp;
    case device::l4_kind::tcp:
      if (p.tcp.flags & (device::tcp_syn | device::tcp_fin | device::tcp_rst)) return device::rx_class_tcp_ctrl;
      return device::rx_class_tcp;
    case device::l4_kind::icmp:
    case device::l4_kind::icmpv6: return device::rx_class_icmp;
    default: return device::rx_class_other;
  }
}

// Toeplitz with the Microsoft key, one table lookup per input byte instead of
// eight shift-and-xor steps per byte: the same value as device::flow_hash (a
// test checks), cheap enough for the engine's per-frame steering.
class fast_toeplitz {
 public:
  fast_toeplitz() {
    const auto key = device::microsoft_rss_key();
    for (uint32_t pos = 0; pos < k_max; ++pos) {
      for (uint32_t b = 0; b < 256; ++b) {
        uint32_t h = 0;
        for (uint32_t bit = 0; bit < 8; ++bit) {
          if (!((b >> (7 - bit)) & 1u)) continue;
          // The 32-bit key window starting at key bit pos*8+bit.
          const uint32_t kb = pos * 8 + bit;
          uint32_t w = 0;
          for (uint32_t i = 0; i < 32; ++i) {
            const uint32_t k = kb + i;
            const uint32_t kbit = k / 8 < sizeof key.bytes ? (key.bytes[k / 8] >> (7 - k % 8)) & 1u : 0u;
            w = (w << 1) | kbit;
          }
          h ^= w;
        }
        table_[pos][b] = h;
      }
    }
  }
  [[nodiscard]] uint32_t hash(const device::flow_key& k) const noexcept {
    const uint32_t alen = k.family == 6 ? 16u : (k.family == 4 ? 4u : 0u);
    if (alen == 0) return 0;
    uint32_t h = 0, pos = 0;
    for (uint32_t i = 0; i < alen; ++i) h ^= table_[pos++][k.src[i]];
    for (uint32_t i = 0; i < alen; ++i) h ^= table_[pos++][k.dst[i]];
    h ^= table_[pos++][k.src_port >> 8];
    h ^= table_[pos++][k.src_port & 0xff];
    h ^= table_[pos++][k.dst_port >> 8];
    h ^= table_[pos++][k.dst_port & 0xff];
    return h;
  }

 private:
  static constexpr uint32_t k_max = 36;
  uint32_t table_[k_max][256];
};

const fast_toeplitz& toeplitz() {
  static const fast_toeplitz t;
  return t;
}

}  // namespace

uint32_t steering_hash(const device::flow_key& k) { return toeplitz().hash(k); }

uint32_t rxq_state::free_slots() noexcept {
  uint32_t used = static_cast<uint32_t>(prod - cons_cache);
  if (used >= cfg.num_descs) {
    // Pairs with the release store of *cons in device::detail::publish_consumer():
    // the kernel finished reading every slot below the index read here.
    cons_cache = __atomic_load_n(cons_host, __ATOMIC_ACQUIRE);
    used = static_cast<uint32_t>(prod - cons_cache);
  }
  return cfg.num_descs - used;
}

bool port_state::deliver(lane& l, const uint8_t* frame, uint32_t len, uint32_t wire_len, uint64_t ts_ns) {
  rxq_state* q;
  uint32_t hash = 0;
  uint16_t cls = device::rx_class_other;
  uint16_t flags = 0;
  if (l.rx.size() == 1 && rules.empty()) {
    q = l.rx.front();  // one queue, no rules: nothing to decide, skip parsing
  } else {
    device::parsed_pkt p;
    (void)device::parse(frame, len, p);
    cls = classify(p);
    hash = toeplitz().hash(device::make_flow_key(p));
    if (p.vlan_count) flags |= device::rx_flag_vlan;
    const auto& group = l.groups[cls];
    if (group.empty()) {
      rx_unsteered.add();
      return false;
    }
    q = l.rx[group[hash % group.size()]];
  }
  if (!q->shared) return put(*q, frame, len, wire_len, ts_ns, hash, cls, flags);
  // A queue other lanes write too. The budget check in engine_main covers
  // only this lane's own queues, so a lossless port waits here for space.
  q->acquire();
  while (overflow_wait && q->free_slots() == 0 && !stop_req.load(std::memory_order_relaxed)) {
    q->release();
    std::this_thread::yield();
    q->acquire();
  }
  const bool ok = put(*q, frame, len, wire_len, ts_ns, hash, cls, flags);
  q->release();
  return ok;
}

// Writes one frame into q's next slot (not yet published), or counts it
// missed when q is full. The caller is q's only writer at the time.
bool port_state::put(rxq_state& q, const uint8_t* frame, uint32_t len, uint32_t wire_len, uint64_t ts_ns,
                     uint32_t hash, uint16_t cls, uint16_t flags) {
  q.offered.add();
  if (q.free_slots() == 0) {
    q.missed.add();  // never overwrite a slot the kernel still owns
    return false;
  }
  const uint64_t idx = q.prod;
  const uint32_t slot = static_cast<uint32_t>(idx & q.mask);
  uint32_t n = len;
  if (n > q.cfg.stride) {
    n = q.cfg.stride;
    flags |= device::rx_flag_truncated;
    q.truncated.add();
  }
  if (wire_len > len) flags |= device::rx_flag_truncated;
  std::memcpy(q.pkts_host + static_cast<size_t>(slot) * q.cfg.stride, frame, n);
  device::rx_cqe& c = q.cq_host[slot];
  c.len = n;
  c.wire_len = wire_len < n ? n : wire_len;
  c.ts_ns = ts_ns ? ts_ns : realtime_ns();
  c.rss_hash = hash;
  c.cls = cls;
  c.flags = flags;
  c.port_id = 0;
  q.prod = idx + 1;
  q.bytes.add(n);
  return true;
}

// Publishes every completion this lane's queues got since the last flush.
void port_state::flush_rx(lane& l) {
  for (rxq_state* q : l.rx) {
    if (q->shared) {
      q->acquire();
      publish(*q);
      q->release();
    } else {
      publish(*q);
    }
  }
}

// Publishes q's completions written since the last publish. With packet
// memory on the GPU, the staged bytes are copied there first. The caller is
// q's only writer at the time.
void port_state::publish(rxq_state& q) {
  if (q.published == q.prod) return;
  if (q.stage.host_ptr) {
    // Copy the slot range [published, prod), in at most two pieces around the wrap.
    uint64_t from = q.published;
    while (from < q.prod) {
      uint32_t s = static_cast<uint32_t>(from & q.mask);
      uint64_t n = std::min<uint64_t>(q.prod - from, q.cfg.num_descs - s);
      size_t off = static_cast<size_t>(s) * q.cfg.stride;
      if (auto e = q.owner->dev->copy_to_exec(static_cast<uint8_t*>(q.pkts.exec_ptr) + off, q.pkts_host + off,
                                           static_cast<size_t>(n) * q.cfg.stride);
          e) {
        set_engine_error(std::move(e));
        return;
      }
      from += n;
    }
  }
  for (uint64_t i = q.published; i < q.prod; ++i) {
    // Pairs with the acquire fence in device::detail::poll(): the entry's
    // fields and the packet bytes are written before the owner flips.
    __atomic_store_n(&q.cq_host[i & q.mask].owner, device::rx_phase(i, q.log2), __ATOMIC_RELEASE);
  }
  q.delivered.add(q.prod - q.published);
  q.published = q.prod;
}

void port_state::mark_eos(lane& l) {
  if (l.ended) return;
  l.ended = true;
  for (rxq_state* q : l.rx) {
    // A shared queue ends with its last writer. acq_rel pairs with the other
    // writers' decrements: their last publish happens before the end mark.
    if (q->writers_left.fetch_sub(1, std::memory_order_acq_rel) != 1) continue;
    // Pairs with the acquire load in device::detail::eos_set(): every
    // completion published above is visible before the end mark.
    __atomic_store_n(q->eos_host, 1u, __ATOMIC_RELEASE);
  }
  if (lanes_ended.fetch_add(1) + 1 == num_lanes) rx_ended.store(true, std::memory_order_release);
}

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

bool port_state::drain_tx() {
  bool busy = false;
  constexpr uint32_t burst = 64;
  backend::tx_frame frames[burst];
  for (txq_state* q : live_tx) {
    // Pairs with the release store in device::tx_doorbell(): descriptors and
    // frame bytes below the doorbell are visible.
    const uint64_t db = __atomic_load_n(q->doorbell_host, __ATOMIC_ACQUIRE);
    while (q->done_local < db) {
      const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(db - q->done_local, burst));
      uint32_t nf = 0;
      size_t stage_off = 0;
      uint64_t bytes = 0;
      for (uint32_t i = 0; i < n; ++i) {
        const device::tx_desc& d = q->ring_host[(q->done_local + i) & (q->cfg.num_descs - 1)];
        const uint8_t* host = nullptr;
        for (const region& r : regions) {
          if (d.addr >= r.exec && d.addr + d.len <= r.exec + r.bytes) {
            if (r.host) {
              host = r.host + (d.addr - r.exec);
            } else if (stage_off + d.len <= tx_stage.bytes) {
              auto* dst = static_cast<uint8_t*>(tx_stage.host_ptr) + stage_off;
              if (auto e = r.dev->copy_from_exec(dst, reinterpret_cast<const void*>(d.addr), d.len); !e) host = dst;
              stage_off += d.len;
            }
            break;
          }
        }
        if (!host || d.len == 0) {
          q->bad_addr.add();
          continue;
        }
        frames[nf++] = {host, d.len};
        bytes += d.len;
      }
      uint32_t sent = 0;
      if (nf) {
        if (auto e = ops->tx_burst(priv, frames, nf, &sent); e) {
          q->errors.add(nf - sent);
          static std::atomic<int> logged{0};
          if (logged.fetch_add(1) < 5) log(log_level::warn, "port {}: transmit failed: {}", name, e.what());
        }
      }
      if (tx_dumper && sent) {
        const auto now = std::chrono::system_clock::now().time_since_epoch();
        pcap_pkthdr h{};
        h.ts.tv_sec = std::chrono::duration_cast<std::chrono::seconds>(now).count();
        h.ts.tv_usec = std::chrono::duration_cast<std::chrono::microseconds>(now).count() % 1000000;
        for (uint32_t i = 0; i < sent; ++i) {
          h.caplen = h.len = frames[i].len;
          pcap_dump(static_cast<u_char*>(tx_dumper), &h, frames[i].data);
        }
      }
      q->sent.add(sent);
      q->bytes.add(bytes);
      q->done_local += n;
      // Pairs with the acquire load in device::tx_done(): the kernel may reuse
      // these descriptors and buffers.
      __atomic_store_n(q->done_host, q->done_local, __ATOMIC_RELEASE);
      busy = true;
    }
  }
  return busy;
}

void port_state::engine_main(lane& l) {
  if (auto e = gpu->dev->bind_thread(); e) {
    set_engine_error(std::move(e));
    mark_eos(l);
    return;
  }
  backend::rx_sink sink{&l, [](void* ctx, const uint8_t* f, uint32_t len, uint32_t wire_len, uint64_t ts) {
                          auto* ln = static_cast<lane*>(ctx);
                          return ln->port->deliver(*ln, f, len, wire_len, ts);
                        }};
  const bool multi = num_lanes > 1;
  const bool rx = caps.rx && !l.rx.empty() && (multi ? ops->rx_burst_lane != nullptr : ops->rx_burst != nullptr);
  const bool tx = l.index == 0 && !live_tx.empty();
  if (!rx) mark_eos(l);
  uint32_t idle = 0;
  while (!stop_req.load(std::memory_order_acquire)) {
    bool busy = false;
    if (rx && !l.ended) {
      uint32_t budget = 256;
      if (overflow_wait) {
        // Lossless replay: never ask for more frames than every queue can take.
        // Shared queues wait for space in deliver() instead.
        for (rxq_state* q : l.rx)
          if (!q->shared) budget = std::min(budget, q->free_slots());
      }
      if (budget > 0) {
        uint32_t produced = 0;
        status s = multi ? ops->rx_burst_lane(priv, l.index, sink, budget, &produced)
                         : ops->rx_burst(priv, sink, budget, &produced);
        flush_rx(l);
        busy = produced > 0;
        if (s == status::shutdown) {
          mark_eos(l);
        } else if (s != status::success && s != status::again) {
          const char* why = ops->last_error ? ops->last_error(priv) : nullptr;
          set_engine_error(why && *why ? error(s, fmt::format("{}: receive failed: {}", name, why))
                                       : error(s, fmt::format("{}: receive failed", name)));
          mark_eos(l);
        }
      }
    }
    if (tx) busy |= drain_tx();
    if (busy) {
      idle = 0;
    } else if (++idle > 64) {
      std::this_thread::sleep_for(std::chrono::microseconds(idle > 1024 ? 200 : 20));
    } else {
      std::this_thread::yield();
    }
  }
  flush_rx(l);
  if (tx) drain_tx();
}

void port_state::release_tx_stage() noexcept {
  if (tx_stage.host_ptr) gpu->dev->release(tx_stage);
  tx_stage = {};
}

void port_state::close_tx_pcap() noexcept {
  if (tx_dumper) pcap_dump_close(static_cast<pcap_dumper_t*>(tx_dumper));
  if (tx_pcap) pcap_close(static_cast<pcap_t*>(tx_pcap));
  tx_dumper = nullptr;
  tx_pcap = nullptr;
}

void port_state::teardown() noexcept {
  if (kernels_running.load() > 0) {
    // Fail closed: a kernel may still read these rings.
    log(log_level::error, "port {}: kernels still running at teardown; leaking its memory instead of freeing it", name);
    return;
  }
  join_engines();
  if (phase == port_phase::started && ops->stop) (void)ops->stop(priv);
  close_tx_pcap();
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
  if (priv && ops->close) ops->close(priv);
  priv = nullptr;
  if (phase != port_phase::closed) gpu->children.fetch_sub(1);
  phase = port_phase::closed;
}

port_state::~port_state() {
  if (phase != port_phase::closed) teardown();
}

}  // namespace detail

port::~port() = default;

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
  if (args->find("lanes")) {
    uint64_t n = 0;
    if (auto e = backend::get_u64(*args, "lanes", 1, 64, &n); e) return e;
    st->num_lanes = static_cast<uint32_t>(n);
    std::erase_if(args->kv, [](const auto& kv) { return kv.first == "lanes"; });
    if (n > 1 && (!ops->set_lanes || !ops->rx_burst_lane))
      return fail(status::not_supported, "{}: lanes={}: this backend has a single source and cannot be split over "
                  "several engine threads (gen can)", args->name, n);
  }
  if (const auto* v = args->find("tx_pcap")) {
    if (v->empty()) return fail(status::invalid_value, "{}: tx_pcap= needs a file name", args->name);
    st->tx_pcap_path = *v;
    std::erase_if(args->kv, [](const auto& kv) { return kv.first == "tx_pcap"; });
  }
  void* priv = nullptr;
  if (auto e = ops->open(*args, &priv); e) return e;
  st->priv = priv;
  if (ops->get_caps) ops->get_caps(priv, &st->caps);
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

namespace {

error check_ring(const char* what, uint32_t num_descs, uint32_t stride, const port_caps& caps) {
  if (num_descs == 0 || !std::has_single_bit(num_descs))
    return fail(status::invalid_value, "{}: num_descs={} must be a power of two", what, num_descs);
  if (num_descs < std::max(2u, caps.min_ring_descs) || (caps.max_ring_descs && num_descs > caps.max_ring_descs))
    return fail(status::invalid_value, "{}: num_descs={} is outside this port's range [{}, {}]", what, num_descs,
                std::max(2u, caps.min_ring_descs), caps.max_ring_descs);
  if (stride < 64 || stride > (1u << 20) || stride % 64 != 0)
    return fail(status::invalid_value, "{}: stride={} must be a multiple of 64 in [64, 1 MiB]", what, stride);
  if (static_cast<uint64_t>(num_descs) * stride > (uint64_t{1} << 34))
    return fail(status::too_big, "{}: {} slots of {} bytes exceed 16 GiB", what, num_descs, stride);
  return {};
}

mem_type resolve(mem_type t) { return t == mem_type::automatic ? mem_type::cpu_gpu : t; }

// The checks create_rxq and create_txq share: port state, capability, queue
// count and ring shape.
template <class Queues>
error check_new_queue(const detail::port_state& s, const char* fn, bool capable, const char* cannot,
                      const Queues& queues, uint32_t max_queues, const char* kind, uint32_t num_descs, uint32_t stride) {
  if (s.phase != port_phase::configured)
    return fail(status::bad_state, "{}: port {} is {}; create queues before start()", fn, s.name,
                s.phase == port_phase::started ? "started" : "stopped");
  if (!capable) return fail(status::not_supported, "{}: port {} cannot {}", fn, s.name, cannot);
  uint32_t live = 0;
  for (auto& q : queues) live += q->alive;
  if (live >= max_queues)
    return fail(status::invalid_value, "{}: port {} allows at most {} {} queues", fn, s.name, max_queues, kind);
  return check_ring(fn, num_descs, stride, s.caps);
}

// The GPU context whose memory holds a new queue: its owner, else the port's.
result<std::shared_ptr<detail::gpu_state>> queue_owner(const detail::port_state& s, const char* fn, gpu* owner) {
  if (!owner) return s.gpu;
  if (!owner->valid()) return fail(status::bad_state, "{}: the owner gpu was destroyed", fn);
  return owner->state();
}

// A queue's allocations in its owner's memory: all of them are released if
// one fails (release_all), none once the queue is built.
struct queue_memory {
  detail::gpu_state& owner;
  std::vector<mem_block*> held;
  error take(mem_block& dst, size_t bytes, mem_type t) {
    auto r = owner.alloc(bytes, t);
    if (!r) return r.err();
    dst = *r;
    held.push_back(&dst);
    return {};
  }
  error take_staging(mem_block& dst, size_t bytes) {
    auto r = owner.dev->alloc_staging(bytes);
    if (!r) return r.err();
    dst = *r;
    held.push_back(&dst);
    return {};
  }
  void release_all() noexcept {
    for (auto* b : held) owner.dev->release(*b);
    held.clear();
  }
};

}  // namespace

result<uint32_t> port::create_rxq(const rxq_config& cfg) {
  if (!state_) return fail(status::bad_state, "create_rxq: the port is closed");
  auto& s = *state_;
  std::lock_guard lk(s.mu);
  if (auto e = check_new_queue(s, "create_rxq", s.caps.rx, "receive", s.rxqs, s.caps.max_rx_queues, "RX",
                               cfg.num_descs, cfg.stride);
      e)
    return e;

  auto q = std::make_unique<detail::rxq_state>();
  q->id = static_cast<uint32_t>(s.rxqs.size());
  q->cfg = cfg;
  q->mask = cfg.num_descs - 1;
  q->log2 = static_cast<uint32_t>(std::countr_zero(cfg.num_descs));
  auto owner = queue_owner(s, "create_rxq", cfg.owner);
  if (!owner) return owner.err();
  q->owner = std::move(owner).value();
  const bool host_exec = q->owner->info.executor == executor_kind::host;
  if (cfg.host_consumer && cfg.pkt_mem != mem_type::automatic && cfg.pkt_mem != mem_type::cpu_gpu)
    return fail(status::invalid_value, "create_rxq: a host-consumed queue needs host-visible packet memory (cpu_gpu)");
  const mem_type pm = cfg.host_consumer ? mem_type::cpu_gpu : resolve(cfg.pkt_mem);
  const mem_type private_mem = host_exec || cfg.host_consumer ? mem_type::cpu_gpu : mem_type::gpu;
  queue_memory mem{*q->owner, {}};
  error e;
  if ((e = mem.take(q->pkts, static_cast<size_t>(cfg.num_descs) * cfg.stride, pm)) ||
      (e = mem.take(q->cq, sizeof(device::rx_cqe) * cfg.num_descs, mem_type::cpu_gpu)) ||
      (e = mem.take(q->cons, 64, mem_type::cpu_gpu)) || (e = mem.take(q->next, 64, private_mem)) ||
      (e = mem.take(q->eos, 64, mem_type::cpu_gpu)) ||
      // Packet memory the host cannot write is filled through a pinned staging copy.
      (!q->pkts.host_ptr && (e = mem.take_staging(q->stage, q->pkts.bytes)))) {
    mem.release_all();
    return e;
  }
  q->pkts_host = static_cast<uint8_t*>(q->pkts.host_ptr ? q->pkts.host_ptr : q->stage.host_ptr);
  q->cq_host = static_cast<device::rx_cqe*>(q->cq.host_ptr);
  q->cons_host = static_cast<uint64_t*>(q->cons.host_ptr);
  q->eos_host = static_cast<uint32_t*>(q->eos.host_ptr);
  q->view.pkts = static_cast<uint8_t*>(q->pkts.exec_ptr);
  q->view.cq = static_cast<const device::rx_cqe*>(q->cq.exec_ptr);
  q->view.cons = static_cast<uint64_t*>(q->cons.exec_ptr);
  q->view.next = static_cast<uint64_t*>(q->next.exec_ptr);
  q->view.eos = static_cast<const uint32_t*>(q->eos.exec_ptr);
  q->view.num_descs = cfg.num_descs;
  q->view.log2_descs = q->log2;
  q->view.stride = cfg.stride;
  q->view.queue_id = q->id;
  if (cfg.host_consumer) {
    q->host_view = q->view;
    q->host_view.pkts = static_cast<uint8_t*>(q->pkts.host_ptr);
    q->host_view.cq = q->cq_host;
    q->host_view.cons = q->cons_host;
    q->host_view.next = static_cast<uint64_t*>(q->next.host_ptr);
    q->host_view.eos = q->eos_host;
  }
  const uint32_t id = q->id;
  if (q->owner != s.gpu) q->owner->children.fetch_add(1);
  s.rxqs.push_back(std::move(q));
  return id;
}

result<uint32_t> port::create_txq(const txq_config& cfg) {
  if (!state_) return fail(status::bad_state, "create_txq: the port is closed");
  auto& s = *state_;
  std::lock_guard lk(s.mu);
  if (auto e = check_new_queue(s, "create_txq", s.caps.tx, "transmit", s.txqs, s.caps.max_tx_queues, "TX",
                               cfg.num_descs, cfg.stride);
      e)
    return e;
  if (cfg.stride > s.caps.max_pkt_bytes && cfg.stride > 2048)
    detail::log(log_level::info, "create_txq: stride {} exceeds the port's largest frame {}", cfg.stride, s.caps.max_pkt_bytes);

  auto q = std::make_unique<detail::txq_state>();
  q->id = static_cast<uint32_t>(s.txqs.size());
  q->cfg = cfg;
  auto owner = queue_owner(s, "create_txq", cfg.owner);
  if (!owner) return owner.err();
  q->owner = std::move(owner).value();
  const bool host_exec = q->owner->info.executor == executor_kind::host;
  if (cfg.host_producer && cfg.pkt_mem != mem_type::automatic && cfg.pkt_mem != mem_type::cpu_gpu)
    return fail(status::invalid_value, "create_txq: a host-produced queue needs host-visible buffers (cpu_gpu)");
  const mem_type bm = cfg.host_producer ? mem_type::cpu_gpu : resolve(cfg.pkt_mem);
  queue_memory mem{*q->owner, {}};
  error e;
  if ((e = mem.take(q->ring, sizeof(device::tx_desc) * cfg.num_descs, mem_type::cpu_gpu)) ||
      (e = mem.take(q->bufs, static_cast<size_t>(cfg.num_descs) * cfg.stride, bm)) ||
      (e = mem.take(q->doorbell, 64, mem_type::cpu_gpu)) || (e = mem.take(q->done, 64, mem_type::cpu_gpu)) ||
      (e = mem.take(q->prod, 64, host_exec || cfg.host_producer ? mem_type::cpu_gpu : mem_type::gpu))) {
    mem.release_all();
    return e;
  }
  q->ring_host = static_cast<device::tx_desc*>(q->ring.host_ptr);
  q->doorbell_host = static_cast<uint64_t*>(q->doorbell.host_ptr);
  q->done_host = static_cast<uint64_t*>(q->done.host_ptr);
  q->view.ring = static_cast<device::tx_desc*>(q->ring.exec_ptr);
  q->view.bufs = static_cast<uint8_t*>(q->bufs.exec_ptr);
  q->view.doorbell = static_cast<uint64_t*>(q->doorbell.exec_ptr);
  q->view.done = static_cast<const uint64_t*>(q->done.exec_ptr);
  q->view.prod = static_cast<uint64_t*>(q->prod.exec_ptr);
  q->view.num_descs = cfg.num_descs;
  q->view.log2_descs = static_cast<uint32_t>(std::countr_zero(cfg.num_descs));
  q->view.stride = cfg.stride;
  q->view.queue_id = q->id;
  if (cfg.host_producer) {
    q->host_view = q->view;
    q->host_view.ring = q->ring_host;
    q->host_view.bufs = static_cast<uint8_t*>(q->bufs.host_ptr);
    q->host_view.doorbell = q->doorbell_host;
    q->host_view.done = q->done_host;
    q->host_view.prod = static_cast<uint64_t*>(q->prod.host_ptr);
  }
  const uint32_t id = q->id;
  if (q->owner != s.gpu) q->owner->children.fetch_add(1);
  s.txqs.push_back(std::move(q));
  return id;
}

error port::register_memory(const mem_block& block) {
  if (!state_) return fail(status::bad_state, "register_memory: the port is closed");
  auto& s = *state_;
  std::lock_guard lk(s.mu);
  if (s.phase != port_phase::configured)
    return fail(status::bad_state, "register_memory: port {} was started; register buffer arrays before start()", s.name);
  if (block.empty() || block.bytes == 0) return fail(status::invalid_value, "register_memory: empty block");
  for (const auto& b : s.user_regions)
    if (b.exec_ptr == block.exec_ptr) return fail(status::already_exist, "register_memory: block already registered");
  s.user_regions.push_back(block);
  return {};
}

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
    if (r.cls > device::rx_class_arp) return fail(status::invalid_value, "set_steering: unknown class {}", static_cast<int>(r.cls));
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
  if (rx.empty() && tx.empty()) return fail(status::bad_state, "start: port {} has no queues; create at least one first", s.name);

  const uint32_t nl = s.num_lanes;
  if (nl > 1) {
    if (rx.size() < nl)
      return fail(status::invalid_value, "start: port {}: lanes={} needs at least as many RX queues (has {})", s.name, nl,
                  rx.size());
    if (auto e = s.ops->set_lanes(s.priv, nl); e) return e;
  }
  // Steering groups, per class, as queue positions in rx: a rule's queues,
  // else the default queues, else every queue.
  auto pos = [&](uint32_t id) {
    for (size_t i = 0; i < rx.size(); ++i)
      if (rx[i]->id == id) return static_cast<uint32_t>(i);
    return 0u;
  };
  std::vector<uint32_t> groups[8];
  {
    std::vector<uint32_t> defaults;
    if (s.default_queues.empty()) {
      for (size_t i = 0; i < rx.size(); ++i) defaults.push_back(static_cast<uint32_t>(i));
    } else {
      for (uint32_t id : s.default_queues) defaults.push_back(pos(id));
    }
    for (auto& g : groups) g = defaults;
    for (const auto& r : s.rules) {
      auto& g = groups[r.cls];
      g.clear();
      for (uint32_t id : r.queues) g.push_back(pos(id));
    }
  }
  // Lanes: a source split into lanes never sends one flow through two lanes,
  // so each lane may take its own share of a group (members i with
  // i mod lanes = lane) and still keep every flow on one queue. A group with
  // fewer members than lanes is shared by all lanes (those queues take a
  // lock). With one lane this is plain steering over the whole group.
  std::vector<std::unique_ptr<detail::port_state::lane>> lanes;
  std::vector<std::vector<uint32_t>> writers(rx.size());  // per queue position: the lanes that write it
  for (uint32_t i = 0; i < nl; ++i) {
    auto l = std::make_unique<detail::port_state::lane>();
    l->port = &s;
    l->index = i;
    std::vector<int> local(rx.size(), -1);  // queue position -> index in l->rx
    auto use = [&](uint32_t p) {
      if (local[p] < 0) {
        local[p] = static_cast<int>(l->rx.size());
        l->rx.push_back(rx[p]);
        writers[p].push_back(i);
      }
      return static_cast<uint32_t>(local[p]);
    };
    for (size_t c = 0; c < 8; ++c) {
      const auto& g = groups[c];
      for (size_t k = 0; k < g.size(); ++k)
        if (g.size() < nl || k % nl == i) l->groups[c].push_back(use(g[k]));
    }
    lanes.push_back(std::move(l));
  }
  for (size_t p = 0; p < rx.size(); ++p) {
    if (writers[p].empty()) {
      // In no group: lane 0 carries its end mark.
      lanes.front()->rx.push_back(rx[p]);
      writers[p].push_back(0);
    }
    rx[p]->shared = writers[p].size() > 1;
    rx[p]->writers_left.store(static_cast<uint32_t>(writers[p].size()), std::memory_order_relaxed);
  }

  std::vector<detail::region> regions;
  auto add = [&](const mem_block& b, detail::device_ops* dev) {
    regions.push_back({reinterpret_cast<uintptr_t>(b.exec_ptr), static_cast<uint8_t*>(b.host_ptr), b.bytes, dev});
  };
  size_t stage = 0;
  for (auto* q : tx) {
    add(q->bufs, q->owner->dev.get());
    if (!q->bufs.host_ptr) stage = std::max<size_t>(stage, q->bufs.bytes);
  }
  for (auto* q : rx) add(q->pkts, q->owner->dev.get());
  for (const auto& b : s.user_regions) {
    add(b, s.gpu->dev.get());
    if (!b.host_ptr) stage = std::max<size_t>(stage, 64 * 65536);
  }
  if (!tx.empty()) {
    // Largest burst the engine copies out of GPU memory at once.
    auto st = s.gpu->dev->alloc_staging(std::max<size_t>(std::min<size_t>(stage, 64 * 65536), 4096));
    if (!st) return st.err();
    s.tx_stage = *st;
  }
  if (!s.tx_pcap_path.empty() && !tx.empty() && !s.tx_dumper) {
    pcap_t* dead = pcap_open_dead(DLT_EN10MB, 65535);
    pcap_dumper_t* d = dead ? pcap_dump_open(dead, s.tx_pcap_path.c_str()) : nullptr;
    if (!d) {
      std::string why = dead ? pcap_geterr(dead) : "pcap_open_dead failed";
      if (dead) pcap_close(dead);
      s.release_tx_stage();
      return fail(status::io_failed, "tx_pcap={}: cannot write it: {}", s.tx_pcap_path, why);
    }
    s.tx_pcap = dead;
    s.tx_dumper = d;
  }
  if (s.ops->start) {
    if (auto e = s.ops->start(s.priv); e) {
      s.close_tx_pcap();
      s.release_tx_stage();
      return e;
    }
  }
  s.regions = std::move(regions);
  s.live_tx = std::move(tx);
  s.stop_req = false;
  s.rx_ended = false;
  s.lanes_ended = 0;
  s.lanes = std::move(lanes);
  s.phase = port_phase::started;
  for (auto& l : s.lanes) s.engines.emplace_back([&s, ln = l.get()] { s.engine_main(*ln); });
  return {};
}

error port::stop() {
  if (!state_) return fail(status::bad_state, "stop: the port is closed");
  auto& s = *state_;
  std::lock_guard lk(s.mu);
  if (s.phase != port_phase::started) return fail(status::bad_state, "stop: port {} is not started", s.name);
  if (int k = s.kernels_running.load(); k > 0)
    return fail(status::bad_state, "stop: {} kernel runner(s) still use port {}; stop them first", k, s.name);
  s.join_engines();
  error e;
  if (s.ops->stop) e = s.ops->stop(s.priv);
  s.close_tx_pcap();
  s.release_tx_stage();
  s.phase = port_phase::stopped;
  return e;
}

error port::destroy_rxq(uint32_t id) {
  if (!state_) return fail(status::bad_state, "destroy_rxq: the port is closed");
  auto& s = *state_;
  std::lock_guard lk(s.mu);
  if (s.phase == port_phase::started) return fail(status::bad_state, "destroy_rxq: stop port {} first", s.name);
  if (id >= s.rxqs.size()) return fail(status::not_found, "destroy_rxq: no RX queue {}", id);
  auto& q = *s.rxqs[id];
  if (!q.alive) return fail(status::bad_state, "destroy_rxq: RX queue {} was already destroyed", id);
  for (auto* b : {&q.stage, &q.eos, &q.next, &q.cons, &q.cq, &q.pkts}) {
    if (b->exec_ptr || b->host_ptr) q.owner->dev->release(*b);
    *b = {};
  }
  if (q.owner != s.gpu) q.owner->children.fetch_sub(1);
  q.pkts_host = nullptr;
  q.cq_host = nullptr;
  q.cons_host = nullptr;
  q.eos_host = nullptr;
  q.alive = false;
  return {};
}

error port::destroy_txq(uint32_t id) {
  if (!state_) return fail(status::bad_state, "destroy_txq: the port is closed");
  auto& s = *state_;
  std::lock_guard lk(s.mu);
  if (s.phase == port_phase::started) return fail(status::bad_state, "destroy_txq: stop port {} first", s.name);
  if (id >= s.txqs.size()) return fail(status::not_found, "destroy_txq: no TX queue {}", id);
  auto& q = *s.txqs[id];
  if (!q.alive) return fail(status::bad_state, "destroy_txq: TX queue {} was already destroyed", id);
  for (auto* b : {&q.prod, &q.done, &q.doorbell, &q.bufs, &q.ring}) {
    if (b->exec_ptr || b->host_ptr) q.owner->dev->release(*b);
    *b = {};
  }
  if (q.owner != s.gpu) q.owner->children.fetch_sub(1);
  q.alive = false;
  return {};
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
    if (alive) return fail(status::bad_state, "close: port {} still has {} queue(s); destroy them first", s.name, alive);
  }
  if (state_.use_count() > 1)
    return fail(status::bad_state, "close: port {} is still used by a kernel runner; destroy it first", state_->name);
  state_->teardown();
  state_.reset();
  return {};
}

result<device::rxq> port::rxq(uint32_t id) const {
  if (!state_) return fail(status::bad_state, "rxq: the port is closed");
  std::lock_guard lk(state_->mu);
  if (id >= state_->rxqs.size() || !state_->rxqs[id]->alive) return fail(status::not_found, "rxq: no RX queue {}", id);
  return state_->rxqs[id]->view;
}

result<device::txq> port::txq(uint32_t id) const {
  if (!state_) return fail(status::bad_state, "txq: the port is closed");
  std::lock_guard lk(state_->mu);
  if (id >= state_->txqs.size() || !state_->txqs[id]->alive) return fail(status::not_found, "txq: no TX queue {}", id);
  return state_->txqs[id]->view;
}

result<device::rxq> port::rxq_host(uint32_t id) const {
  if (!state_) return fail(status::bad_state, "rxq_host: the port is closed");
  std::lock_guard lk(state_->mu);
  if (id >= state_->rxqs.size() || !state_->rxqs[id]->alive) return fail(status::not_found, "rxq_host: no RX queue {}", id);
  const auto& q = *state_->rxqs[id];
  if (!q.cfg.host_consumer && state_->gpu->info.executor != executor_kind::host)
    return fail(status::not_supported, "rxq_host: RX queue {} was not created with host_consumer", id);
  return q.cfg.host_consumer ? q.host_view : q.view;
}

result<device::txq> port::txq_host(uint32_t id) const {
  if (!state_) return fail(status::bad_state, "txq_host: the port is closed");
  std::lock_guard lk(state_->mu);
  if (id >= state_->txqs.size() || !state_->txqs[id]->alive) return fail(status::not_found, "txq_host: no TX queue {}", id);
  const auto& q = *state_->txqs[id];
  if (!q.cfg.host_producer && state_->gpu->info.executor != executor_kind::host)
    return fail(status::not_supported, "txq_host: TX queue {} was not created with host_producer", id);
  return q.cfg.host_producer ? q.host_view : q.view;
}

uint32_t port::num_rxq() const { return state_ ? static_cast<uint32_t>(state_->rxqs.size()) : 0; }
uint32_t port::num_txq() const { return state_ ? static_cast<uint32_t>(state_->txqs.size()) : 0; }

port_stats port::stats() const {
  port_stats out;
  if (!state_) return out;
  auto& s = *state_;
  backend::counters c;
  if (s.ops->get_counters && s.priv) s.ops->get_counters(s.priv, &c);
  out.rx_frames = c.rx_frames;
  out.rx_bytes = c.rx_bytes;
  out.rx_errors = c.rx_errors;
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
    if (q->cons_host) r.consumed = __atomic_load_n(q->cons_host, __ATOMIC_ACQUIRE);
    out.rx_missed += r.missed;
    out.rx_delivered += r.delivered;
    out.rxq.push_back(r);
  }
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

}  // namespace gnio
