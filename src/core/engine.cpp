// SPDX-License-Identifier: Apache-2.0
// The engine: one thread per lane plays the NIC. It asks the backend for a
// burst of frames, which the backend writes through an rx_lane straight into
// the RX rings (by copy, in place, or by reference to its RX pool), publishes
// the burst, gives released pool buffers back, and (lane 0) transmits what
// kernels rang the TX doorbell for.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#if defined(__linux__)
#include <sys/prctl.h>
#endif

#include "gnio/device/pkt.hpp"
#include "internal.hpp"

namespace gnio {
namespace detail {

namespace {

uint64_t realtime_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

uint64_t steady_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

// Holds a shared queue's lock for the scope; a queue one lane owns needs none.
class queue_guard {
 public:
  explicit queue_guard(rxq_state& q) : q_(q) {
    if (q_.shared) q_.acquire();
  }
  ~queue_guard() {
    if (q_.shared) q_.release();
  }
  queue_guard(const queue_guard&) = delete;
  queue_guard& operator=(const queue_guard&) = delete;

 private:
  rxq_state& q_;
};

// The queue a frame goes to, or null (counted as unsteered).
rxq_state* steer(lane_state& l, const backend::steer_info& s) {
  if (l.single) return l.rx.front();
  const auto& g = l.groups[s.cls < 8 ? s.cls : 0];
  if (g.empty()) {
    l.port->rx_unsteered.add();
    return nullptr;
  }
  // A power-of-two group (the usual case) takes a mask: same index as the
  // modulo, without a division per frame.
  const auto n = static_cast<uint32_t>(g.size());
  return l.rx[g[(n & (n - 1)) == 0 ? s.hash & (n - 1) : s.hash % n]];
}

void publish(port_state& p, rxq_state& q, bool wait);

// Whether q has an entry free for one more frame. On a lossless port a
// shared queue is waited for here: the lane's budget covers only the queues
// it alone writes. Called with q's lock held when it is shared.
bool room(port_state& p, rxq_state& q) {
  if (q.w.free_entries() > 0) return true;
  // A pool ring's entries come free when their buffers are reclaimed; the
  // buffers go back to the backend with the lane's next reclaim().
  const auto take_back = [&q] {
    if (q.pool) q.w.reclaim([&q](uint32_t buf) { q.reclaimed.push_back(buf); });
  };
  take_back();
  if (q.w.free_entries() > 0) return true;
  if (!(p.overflow_wait && q.shared)) return false;
  // Entries this burst wrote are not published until it ends: publish them
  // now, or a ring smaller than a burst (or filled by several lanes) holds
  // only frames the kernel cannot see, and nothing would ever free an entry.
  publish(p, q, false);
  while ((take_back(), q.w.free_entries() == 0)) {
    if (p.stop_req.load(std::memory_order_relaxed)) return false;
    q.release();
    std::this_thread::yield();
    q.acquire();
    if (q.staged) publish(p, q, false);  // entries wait for their copies to land
  }
  return true;
}

// Copies a frame into q's area. The caller holds q's lock when it is shared
// and has counted the frame as offered.
bool copy_in(port_state& p, rxq_state& q, const uint8_t* frame, uint32_t len, uint32_t wire_len, uint64_t ts_ns,
             const backend::steer_info& s) {
  if (q.pool || !room(p, q)) {
    q.missed.add();  // never overwrite an entry or a buffer the kernel still owns
    return false;
  }
  uint32_t n = 0;
  uint8_t* dst = q.w.reserve(len, &n);
  std::memcpy(dst, frame, n);
  if (n < len) q.truncated.add();
  q.w.commit(wire_len, ts_ns, s.hash, s.cls, s.flags);
  q.bytes.add(n);
  return true;
}

constexpr uint64_t kStageMin = 256 * 1024;

// The idle engine: spins this long after its last frame before it sleeps,
// and sleeps longer once idle for k_engine_long_idle_ns.
constexpr uint64_t k_engine_spin_ns = 200'000;
constexpr uint64_t k_engine_long_idle_ns = 20'000'000;

// Staged queues (GPU memory): hands the area bytes written since the last
// call to the copy queue, remembering which entries wait for that copy.
void stage_out(port_state& p, rxq_state& q) {
  const uint64_t head = q.w.head();
  if (head == q.staged_head) return;
  const uint64_t size = q.w.area_size();
  uint64_t from = q.staged_head;
  while (from < head) {
    const uint64_t off = from % size;
    const uint64_t n = std::min(head - from, size - off);
    if (auto e = q.copies->to_exec(static_cast<uint8_t*>(q.pkts.exec_ptr) + off,
                                   static_cast<const uint8_t*>(q.stage.host_ptr) + off, n);
        e) {
      p.set_engine_error(std::move(e));
      return;
    }
    from += n;
  }
  q.staged_head = head;
  auto t = q.copies->mark();
  if (!t) {
    p.set_engine_error(t.err());
    return;
  }
  q.inflight.push_back({q.w.produced(), *t});
}

// rx_pcap=: the entries [from, upto) of q, those rx_filter accepts, from
// their host bytes (the area, its staging copy, or the RX pool). Called
// before they are published: once the kernel sees a frame it may change it
// in place (l2fwd swaps its MAC addresses).
void mirror_rx(port_state& p, rxq_state& q, uint64_t from, uint64_t upto) {
  const uint8_t* base = q.w.bytes();
  if (!base) return;
  const device::bpf_prog f{p.rx_filter.data(), static_cast<uint32_t>(p.rx_filter.size())};
  for (uint64_t i = from; i < upto; ++i) {
    const device::rx_cqe& c = q.w.entry(i);
    const uint8_t* frame = base + c.buf;
    if (!device::bpf_match(f, frame, c.len, c.wire_len)) continue;
    p.rx_mirror.write_frame(frame, c.len, c.wire_len, c.ts_ns, p.name);
  }
}

// Publishes q's entries whose bytes are in place: all of them, or for a
// staged queue those whose copy finished (wait: all, after waiting).
void publish(port_state& p, rxq_state& q, bool wait) {
  const uint64_t before = q.w.published();
  const bool mirror = p.rx_mirror.writing();
  if (!q.staged) {
    if (mirror && q.w.produced() > before) mirror_rx(p, q, before, q.w.produced());
    q.w.publish();
  } else {
    // A copy costs microseconds of CPU in the CUDA driver, whatever its size.
    // While earlier copies are still in flight, small bursts are gathered
    // until kStageMin bytes (at most a quarter of the area) wait, unless the
    // caller must publish everything; so the number of copies adapts to how
    // fast they complete.
    const uint64_t gather = std::min(kStageMin, q.w.area_size() / 4);
    if (wait || q.inflight.empty() || q.w.head() - q.staged_head >= gather) stage_out(p, q);
    while (!q.inflight.empty()) {
      auto done = q.copies->done(q.inflight.front().ticket);
      if (!done) {
        p.set_engine_error(done.err());
        q.inflight.clear();
        break;
      }
      if (!*done) {
        if (!wait) break;
        if (auto e = q.copies->wait(); e) {
          p.set_engine_error(std::move(e));
          q.inflight.clear();
          break;
        }
        continue;
      }
      if (mirror && q.inflight.front().upto > q.w.published())
        mirror_rx(p, q, q.w.published(), q.inflight.front().upto);
      q.w.publish(q.inflight.front().upto);
      q.inflight.pop_front();
    }
  }
  q.delivered.add(q.w.published() - before);
}

void flush(lane_state& l, bool wait) {
  for (rxq_state* q : l.rx) {
    queue_guard g(*q);
    publish(*l.port, *q, wait);
  }
}

// Gives the buffers of pool entries the kernel released back to the backend.
void reclaim(lane_state& l) {
  port_state& p = *l.port;
  for (rxq_state* q : l.rx) {
    if (!q->pool) continue;
    queue_guard g(*q);
    const size_t before = l.released.size();
    l.released.insert(l.released.end(), q->reclaimed.begin(), q->reclaimed.end());
    q->reclaimed.clear();
    q->w.reclaim([&](uint32_t buf) { l.released.push_back(buf); });
    if (l.released.size() > before) l.returning.emplace_back(q, static_cast<uint32_t>(l.released.size() - before));
  }
  if (!l.released.empty()) {
    p.ops->rx_release(p.priv, l.index, l.released.data(), static_cast<uint32_t>(l.released.size()));
    l.released.clear();
    // After rx_release: a reader of rxq_stats::returned may rely on the backend having them.
    for (auto [q, n] : l.returning) q->returned.fetch_add(n, std::memory_order_release);
    l.returning.clear();
  }
}

void mark_eos(lane_state& l) {
  if (l.ended) return;
  l.ended = true;
  port_state& p = *l.port;
  flush(l, true);
  for (rxq_state* q : l.rx) {
    // A shared queue ends with its last writer. acq_rel pairs with the other
    // writers' decrements: their last publish happens before the end mark.
    if (q->writers_left.fetch_sub(1, std::memory_order_acq_rel) != 1) continue;
    queue_guard g(*q);
    publish(p, *q, true);
    q->w.end_of_stream();
    q->ended = true;
  }
  if (p.lanes_ended.fetch_add(1) + 1 == p.num_lanes) p.rx_ended.store(true, std::memory_order_release);
}

// The region holding [addr, addr + len), or null.
const region* find_region(const std::vector<region>& rs, uint64_t addr, uint32_t len) {
  auto it = std::upper_bound(rs.begin(), rs.end(), addr, [](uint64_t a, const region& r) { return a < r.exec; });
  if (it == rs.begin()) return nullptr;
  --it;
  if (addr + len < addr || addr + len > it->exec + it->bytes) return nullptr;
  return &*it;
}

// Sends what the kernels rang for. With tx_time hold, a frame whose
// not-before time has not come stays on its queue with the frames after it,
// and *due gets the earliest such time (0: none), for the idle loop to wake
// at; the last drain (final) completes those frames unsent and counts them.
bool drain_tx(port_state& p, lane_state& l, uint64_t* due, bool final) {
  bool busy = false;
  constexpr uint32_t burst = 64;
  backend::tx_frame frames[burst];
  uint64_t times[burst];
  const bool hold = p.caps.tx_time == tx_time_mode::hold;
  const bool timed_ops = !hold && p.ops->tx_burst_at != nullptr;
  *due = 0;
  for (txq_state* q : p.live_tx) {
    uint64_t first = 0;
    uint32_t n;
    while ((n = q->r.peek(burst, &first)) > 0) {
      if (hold) {
        // The prefix whose times have come; frames leave in ring order.
        uint64_t now = 0;
        uint32_t ready = 0;
        for (; ready < n; ++ready) {
          const uint64_t t = q->r.not_before(first + ready);
          if (t == 0) continue;
          if (now == 0) now = realtime_ns();
          if (t > now) {
            if (*due == 0 || t < *due) *due = t;
            break;
          }
        }
        if (ready == 0 && final) {
          // Stopping: these frames' times are still to come. They are not
          // sent early; they are completed unsent and counted.
          q->errors.add(n);
          if (p.tx_warnings++ < 5)
            log(log_level::warn, "port {}: {} frame(s) not sent: the port stopped before their not-before time", p.name,
                n);
          q->r.release(n);
          busy = true;
          continue;
        }
        if (ready == 0) break;  // this queue waits for its time
        n = ready;
      }
      uint32_t nf = 0;
      size_t stage_off = 0;
      uint64_t bytes = 0;
      bool copied = false;
      for (uint32_t i = 0; i < n; ++i) {
        const device::tx_desc& d = q->r.desc(first + i);
        const region* r = d.len ? find_region(p.regions, d.addr, d.len) : nullptr;
        const uint8_t* host = nullptr;
        if (r && r->host) {
          host = r->host + (d.addr - r->exec);
        } else if (r && l.copies && stage_off + d.len <= p.tx_stage.bytes) {
          // GPU memory: read through the lane's copy queue, one wait per burst.
          auto* dst = static_cast<uint8_t*>(p.tx_stage.host_ptr) + stage_off;
          if (auto e = l.copies->from_exec(dst, reinterpret_cast<const void*>(d.addr), d.len); !e) {
            host = dst;
            copied = true;
          }
          stage_off += d.len;
        }
        if (!host) {
          q->bad_addr.add();
          continue;
        }
        times[nf] = timed_ops ? q->r.not_before(first + i) : 0;
        frames[nf++] = {host, d.len, r->pool ? static_cast<uint32_t>(d.addr - r->exec) : UINT32_MAX};
        bytes += d.len;
      }
      if (copied) {
        if (auto e = l.copies->wait(); e) {
          p.set_engine_error(std::move(e));
          nf = 0;
        }
      }
      uint32_t sent = 0;
      if (nf) {
        if (auto e = timed_ops ? p.ops->tx_burst_at(p.priv, frames, times, nf, &sent)
                               : p.ops->tx_burst(p.priv, frames, nf, &sent);
            e) {
          q->errors.add(nf - sent);
          if (p.tx_warnings++ < 5) log(log_level::warn, "port {}: transmit failed: {}", p.name, e.what());
        }
      }
      if (sent) p.mirror.write(frames, sent, p.name);
      q->sent.add(sent);
      q->bytes.add(bytes);
      q->r.release(n);
      busy = true;
    }
  }
  return busy;
}

}  // namespace

void engine_main(lane_state& l) {
  port_state& p = *l.port;
  if (auto e = p.gpu->dev->bind_thread(); e) {
    p.set_engine_error(std::move(e));
    mark_eos(l);
    return;
  }
  backend::rx_lane lane(&l);
  const bool rx = p.caps.rx && !l.rx.empty() && p.ops->rx_burst != nullptr;
  const bool tx = l.index == 0 && !p.live_tx.empty();
  bool has_pool = false, has_staged = false;
  for (rxq_state* q : l.rx) {
    has_pool |= q->pool;
    has_staged |= q->staged;
  }
  if (!rx) mark_eos(l);
#if defined(__linux__)
  // The idle sleeps below are microseconds; the default timer slack (50 us)
  // would stretch each into the latency of the next frame.
  (void)prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
#endif
  uint32_t idle = 0;
  uint64_t idle_since = 0;
  uint64_t full_since = 0;  // when the lane last found a queue full (0: not waiting); two clock reads per wait
  const auto end_full_wait = [&l, &full_since] {
    if (full_since != 0) l.full_ns.add(steady_ns() - full_since);
    full_since = 0;
  };
  while (!p.stop_req.load(std::memory_order_acquire)) {
    bool busy = false;
    if (rx && !l.ended) {
      if (has_pool && p.ops->rx_release) reclaim(l);
      uint32_t budget = 256;
      if (p.overflow_wait) {
        // Lossless replay: never ask for more frames than every queue can
        // take. Shared queues wait for room when written instead.
        for (rxq_state* q : l.rx)
          if (!q->shared) budget = std::min(budget, q->w.free_entries());
      }
      if (budget > 0) {
        end_full_wait();
        const uint64_t t0 = steady_ns();
        l.burst_ts = realtime_ns();
        uint32_t produced = 0;
        const status s = p.ops->rx_burst(p.priv, lane, budget, &produced);
        flush(l, false);
        if (produced) {
          l.frames.add(produced);
          l.busy_ns.add(steady_ns() - t0);
          busy = true;
        }
        if (s == status::shutdown) {
          mark_eos(l);
        } else if (s != status::success && s != status::again) {
          const char* why = p.ops->last_error ? p.ops->last_error(p.priv) : nullptr;
          p.set_engine_error(why && *why ? error(s, fmt::format("{}: receive failed: {}", p.name, why))
                                         : error(s, fmt::format("{}: receive failed", p.name)));
          mark_eos(l);
        }
      } else {
        if (full_since == 0) full_since = steady_ns();
        if (has_staged) flush(l, false);  // copies may have finished: publish what they carried
      }
    }
    uint64_t due = 0;
    if (tx) busy |= drain_tx(p, l, &due, false);
    // Idle: spin (yielding the core to any other runnable thread) for
    // k_engine_spin_ns after the last frame, so a frame that arrives while
    // traffic goes on is published at once, not after a sleep; then sleep
    // 20 us, and 200 us once idle for long. engine_poll=busy never sleeps.
    // A frame held for its time: yield in its last 100 us, sleep before.
    if (busy) {
      idle = 0;
    } else if (due != 0) {
      const uint64_t now = realtime_ns();
      const uint64_t left = due > now ? due - now : 0;
      if (left > 100'000 && !p.engine_busy)
        std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<uint64_t>(left - 60'000, 200'000)));
      else std::this_thread::yield();
    } else if (++idle > 64 && !has_staged && !p.engine_busy) {
      if (idle == 65) idle_since = steady_ns();
      const uint64_t quiet = steady_ns() - idle_since;
      if (quiet < k_engine_spin_ns) std::this_thread::yield();
      else std::this_thread::sleep_for(std::chrono::microseconds(quiet > k_engine_long_idle_ns ? 200 : 20));
    } else {
      std::this_thread::yield();
    }
  }
  end_full_wait();
  flush(l, true);
  if (tx) {
    uint64_t due = 0;
    drain_tx(p, l, &due, true);
  }
}

}  // namespace detail

namespace backend {

using detail::lane_state;
using detail::rxq_state;

uint32_t rx_lane::index() const noexcept { return s_ ? s_->index : index_; }

bool rx_lane::deliver(const uint8_t* frame, uint32_t len, uint32_t wire_len, uint64_t ts_ns) {
  if (c_) return c_->take(frame, len, wire_len, ts_ns);
  lane_state& l = *s_;
  steer_info si;
  if (!l.single) si = steer_of(frame, len);
  rxq_state* q = detail::steer(l, si);
  if (!q) return false;
  detail::queue_guard g(*q);
  q->offered.add();
  return detail::copy_in(*l.port, *q, frame, len, wire_len, ts_ns ? ts_ns : l.burst_ts, si);
}

uint8_t* rx_lane::reserve(const steer_info& si, uint32_t len, uint32_t* cut_len) {
  if (c_) {
    scratch_.resize(len);
    *cut_len = cut_ = len;
    return scratch_.data();
  }
  lane_state& l = *s_;
  rxq_state* q = detail::steer(l, si);
  if (!q) return nullptr;
  if (q->shared) q->acquire();
  q->offered.add();
  if (q->pool || !detail::room(*l.port, *q)) {
    q->missed.add();
    if (q->shared) q->release();
    return nullptr;
  }
  uint8_t* dst = q->w.reserve(len, cut_len);
  if (*cut_len < len) q->truncated.add();
  q->bytes.add(*cut_len);
  l.reserved = q;
  l.reserved_si = si;
  return dst;
}

void rx_lane::commit(uint32_t wire_len, uint64_t ts_ns) {
  if (c_) {
    (void)c_->take(scratch_.data(), cut_, wire_len, ts_ns);
    return;
  }
  lane_state& l = *s_;
  rxq_state* q = l.reserved;
  if (!q) return;
  q->w.commit(wire_len, ts_ns ? ts_ns : l.burst_ts, l.reserved_si.hash, l.reserved_si.cls, l.reserved_si.flags);
  l.reserved = nullptr;
  if (q->shared) q->release();
}

rx_lane::ref rx_lane::deliver_ref(uint32_t buf, uint32_t len, uint32_t wire_len, uint64_t ts_ns) {
  if (c_) return pool_ && c_->take(pool_ + buf, len, wire_len, ts_ns) ? ref::copied : ref::dropped;
  lane_state& l = *s_;
  detail::port_state& p = *l.port;
  if (!p.pool.host_ptr || uint64_t{buf} + len > p.pool.bytes) return ref::dropped;
  const uint8_t* frame = static_cast<const uint8_t*>(p.pool.host_ptr) + buf;
  steer_info si;
  if (!l.single) si = steer_of(frame, len);
  rxq_state* q = detail::steer(l, si);
  if (!q) return ref::dropped;
  detail::queue_guard g(*q);
  q->offered.add();
  if (!q->pool)
    return detail::copy_in(p, *q, frame, len, wire_len, ts_ns ? ts_ns : l.burst_ts, si) ? ref::copied : ref::dropped;
  if (!detail::room(p, *q)) {
    q->missed.add();
    return ref::dropped;
  }
  (void)q->w.post(buf, len, wire_len, ts_ns ? ts_ns : l.burst_ts, si.hash, si.cls, si.flags);
  q->bytes.add(len);
  return ref::held;
}

}  // namespace backend
}  // namespace gnio
