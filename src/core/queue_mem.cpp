// SPDX-License-Identifier: Apache-2.0
// Queue memory: creating and destroying a port's RX and TX queues, and the
// kernel's views of them.
#include <algorithm>
#include <bit>

#include "internal.hpp"

namespace gnio {

using detail::fail;
using detail::port_phase;

namespace {

error check_ring(const char* what, uint32_t num_descs, uint32_t stride, const port_caps& caps, bool rx) {
  if (num_descs == 0 || !std::has_single_bit(num_descs))
    return fail(status::invalid_value, "{}: num_descs={} must be a power of two", what, num_descs);
  if (num_descs < std::max(2u, caps.min_ring_descs) || (caps.max_ring_descs && num_descs > caps.max_ring_descs))
    return fail(status::invalid_value, "{}: num_descs={} is outside this port's range [{}, {}]", what, num_descs,
                std::max(2u, caps.min_ring_descs), caps.max_ring_descs);
  if (stride < 64 || stride > (1u << 20) || stride % 64 != 0)
    return fail(status::invalid_value, "{}: stride={} must be a multiple of 64 in [64, 1 MiB]", what, stride);
  // RX completions name their buffer by a 32-bit offset; an RX area holds
  // num_descs + 1 frames (backend::rx_ring_writer::area_bytes).
  if (rx && backend::rx_ring_writer::area_bytes(num_descs, stride) > (uint64_t{1} << 32))
    return fail(status::too_big, "{}: {} + 1 buffers of {} bytes exceed the 4 GiB an RX queue may address", what,
                num_descs, stride);
  if (static_cast<uint64_t>(num_descs) * stride > (uint64_t{1} << 34))
    return fail(status::too_big, "{}: {} slots of {} bytes exceed 16 GiB", what, num_descs, stride);
  return {};
}

mem_type resolve(mem_type t) { return t == mem_type::automatic ? mem_type::cpu_gpu : t; }

// The checks create_rxq and create_txq share: port state, capability, queue
// count and ring shape.
template <class Queues>
error check_new_queue(const detail::port_state& s, const char* fn, bool capable, const char* cannot,
                      const Queues& queues, uint32_t max_queues, const char* kind, uint32_t num_descs, uint32_t stride,
                      bool rx) {
  if (s.phase != port_phase::configured)
    return fail(status::bad_state, "{}: port {} is {}; create queues before start()", fn, s.name,
                s.phase == port_phase::started ? "started" : "stopped");
  if (!capable) return fail(status::not_supported, "{}: port {} cannot {}", fn, s.name, cannot);
  uint32_t live = 0;
  for (auto& q : queues) live += q->alive;
  if (live >= max_queues)
    return fail(status::invalid_value, "{}: port {} allows at most {} {} queues", fn, s.name, max_queues, kind);
  return check_ring(fn, num_descs, stride, s.caps, rx);
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
  if (auto e = check_new_queue(s, "create_rxq", s.caps.rx, "receive", s.rxqs, s.caps.max_rx_queues, "RX", cfg.num_descs,
                               cfg.stride, true);
      e)
    return e;

  auto q = std::make_unique<detail::rxq_state>();
  q->id = static_cast<uint32_t>(s.rxqs.size());
  q->cfg = cfg;
  auto owner = queue_owner(s, "create_rxq", cfg.owner);
  if (!owner) return owner.err();
  q->owner = std::move(owner).value();
  const bool host_exec = q->owner->info.executor == executor_kind::host;
  if (!device::rx_inline_valid(cfg.inline_bytes))
    return fail(status::invalid_value, "create_rxq: inline_bytes={} must be a multiple of {} in [0, {}]",
                cfg.inline_bytes, device::rx_inline_unit, device::rx_inline_max);
  if (cfg.host_consumer && cfg.pkt_mem != mem_type::automatic && cfg.pkt_mem != mem_type::cpu_gpu)
    return fail(status::invalid_value, "create_rxq: a host-consumed queue needs host-visible packet memory (cpu_gpu)");
  // Frames by reference in the backend's RX pool (mapped pinned memory every
  // GPU reaches), unless the queue asks for GPU memory.
  q->pool = s.pool.host_ptr != nullptr && (cfg.pkt_mem == mem_type::automatic || cfg.pkt_mem == mem_type::cpu_gpu);
  const mem_type pm = cfg.host_consumer ? mem_type::cpu_gpu : resolve(cfg.pkt_mem);
  const mem_type private_mem = host_exec || cfg.host_consumer ? mem_type::cpu_gpu : mem_type::gpu;
  const uint64_t area = backend::rx_ring_writer::area_bytes(cfg.num_descs, cfg.stride);
  queue_memory mem{*q->owner, {}};
  error e;
  if ((!q->pool && (e = mem.take(q->pkts, area, pm))) ||
      (e = mem.take(q->cq, uint64_t{device::rx_cqe_stride(cfg.inline_bytes)} * cfg.num_descs, mem_type::cpu_gpu)) ||
      (e = mem.take(q->cons, 64, mem_type::cpu_gpu)) || (e = mem.take(q->next, 64, private_mem)) ||
      (e = mem.take(q->eos, 64, mem_type::cpu_gpu)) ||
      // An area the host cannot write is filled through pinned staging at
      // the same offsets, copied over asynchronously before each publish.
      (!q->pool && !q->pkts.host_ptr && (e = mem.take_staging(q->stage, q->pkts.bytes)))) {
    mem.release_all();
    return e;
  }
  if (!q->pool && !q->pkts.host_ptr) {
    auto cq = q->owner->dev->make_copy_queue();
    if (!cq) {
      mem.release_all();
      return cq.err();
    }
    q->copies = std::move(*cq);
    q->staged = true;
  }
  q->cq_host = static_cast<device::rx_cqe*>(q->cq.host_ptr);
  q->cons_host = static_cast<uint64_t*>(q->cons.host_ptr);
  backend::rx_ring_writer::layout wl;
  wl.cq = q->cq_host;
  wl.cons = q->cons_host;
  wl.eos = static_cast<uint32_t*>(q->eos.host_ptr);
  wl.area = q->pool ? nullptr : static_cast<uint8_t*>(q->pkts.host_ptr ? q->pkts.host_ptr : q->stage.host_ptr);
  wl.num_descs = cfg.num_descs;
  wl.max_frame = q->pool ? s.pool_buf_bytes : cfg.stride;
  wl.inline_bytes = cfg.inline_bytes;
  wl.bytes = q->pool ? static_cast<const uint8_t*>(s.pool.host_ptr) : nullptr;  // an area ring: the area
  q->w.init(wl);
  q->view.pkts = static_cast<uint8_t*>(q->pool ? s.pool.exec_ptr : q->pkts.exec_ptr);
  q->view.cq = static_cast<const device::rx_cqe*>(q->cq.exec_ptr);
  q->view.cons = static_cast<uint64_t*>(q->cons.exec_ptr);
  q->view.next = static_cast<uint64_t*>(q->next.exec_ptr);
  q->view.eos = static_cast<const uint32_t*>(q->eos.exec_ptr);
  q->view.num_descs = cfg.num_descs;
  q->view.log2_descs = static_cast<uint32_t>(std::countr_zero(cfg.num_descs));
  q->view.stride = wl.max_frame;
  q->view.queue_id = q->id;
  q->view.inline_bytes = cfg.inline_bytes;
  if (cfg.host_consumer) {
    q->host_view = q->view;
    q->host_view.pkts = static_cast<uint8_t*>(q->pool ? s.pool.host_ptr : q->pkts.host_ptr);
    q->host_view.cq = q->cq_host;
    q->host_view.cons = q->cons_host;
    q->host_view.next = static_cast<uint64_t*>(q->next.host_ptr);
    q->host_view.eos = static_cast<const uint32_t*>(q->eos.host_ptr);
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
                               cfg.num_descs, cfg.stride, false);
      e)
    return e;
  if (cfg.stride > s.caps.max_pkt_bytes && cfg.stride > 2048)
    detail::log(log_level::info, "create_txq: stride {} exceeds the port's largest frame {}", cfg.stride,
                s.caps.max_pkt_bytes);

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
  // The ring block holds the descriptors, then one not-before time per slot.
  const size_t desc_bytes = sizeof(device::tx_desc) * cfg.num_descs;
  if ((e = mem.take(q->ring, desc_bytes + sizeof(uint64_t) * cfg.num_descs, mem_type::cpu_gpu)) ||
      (e = mem.take(q->bufs, static_cast<size_t>(cfg.num_descs) * cfg.stride, bm)) ||
      (e = mem.take(q->doorbell, 64, mem_type::cpu_gpu)) || (e = mem.take(q->done, 64, mem_type::cpu_gpu)) ||
      // prod: the producer index and the last completion index it loaded (device::tx_done_seen).
      (e = mem.take(q->prod, 64, host_exec || cfg.host_producer ? mem_type::cpu_gpu : mem_type::gpu))) {
    mem.release_all();
    return e;
  }
  q->r.init({static_cast<const device::tx_desc*>(q->ring.host_ptr), static_cast<const uint64_t*>(q->doorbell.host_ptr),
             static_cast<uint64_t*>(q->done.host_ptr), cfg.num_descs,
             reinterpret_cast<const uint64_t*>(static_cast<const uint8_t*>(q->ring.host_ptr) + desc_bytes)});
  q->view.ring = static_cast<device::tx_desc*>(q->ring.exec_ptr);
  q->view.bufs = static_cast<uint8_t*>(q->bufs.exec_ptr);
  q->view.doorbell = static_cast<uint64_t*>(q->doorbell.exec_ptr);
  q->view.done = static_cast<const uint64_t*>(q->done.exec_ptr);
  q->view.prod = static_cast<uint64_t*>(q->prod.exec_ptr);
  q->view.num_descs = cfg.num_descs;
  q->view.log2_descs = static_cast<uint32_t>(std::countr_zero(cfg.num_descs));
  q->view.stride = cfg.stride;
  q->view.queue_id = q->id;
  q->view.times = reinterpret_cast<uint64_t*>(static_cast<uint8_t*>(q->ring.exec_ptr) + desc_bytes);
  if (cfg.host_producer) {
    q->host_view = q->view;
    q->host_view.ring = static_cast<device::tx_desc*>(q->ring.host_ptr);
    q->host_view.bufs = static_cast<uint8_t*>(q->bufs.host_ptr);
    q->host_view.doorbell = static_cast<uint64_t*>(q->doorbell.host_ptr);
    q->host_view.done = static_cast<const uint64_t*>(q->done.host_ptr);
    q->host_view.prod = static_cast<uint64_t*>(q->prod.host_ptr);
    q->host_view.times = reinterpret_cast<uint64_t*>(static_cast<uint8_t*>(q->ring.host_ptr) + desc_bytes);
  }
  const uint32_t id = q->id;
  if (q->owner != s.gpu) q->owner->children.fetch_add(1);
  s.txqs.push_back(std::move(q));
  return id;
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
  q.copies.reset();
  q.cq_host = nullptr;
  q.cons_host = nullptr;
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
  if (id >= state_->rxqs.size() || !state_->rxqs[id]->alive)
    return fail(status::not_found, "rxq_host: no RX queue {}", id);
  const auto& q = *state_->rxqs[id];
  if (!q.cfg.host_consumer && state_->gpu->info.executor != executor_kind::host)
    return fail(status::not_supported, "rxq_host: RX queue {} was not created with host_consumer", id);
  return q.cfg.host_consumer ? q.host_view : q.view;
}

result<device::txq> port::txq_host(uint32_t id) const {
  if (!state_) return fail(status::bad_state, "txq_host: the port is closed");
  std::lock_guard lk(state_->mu);
  if (id >= state_->txqs.size() || !state_->txqs[id]->alive)
    return fail(status::not_found, "txq_host: no TX queue {}", id);
  const auto& q = *state_->txqs[id];
  if (!q.cfg.host_producer && state_->gpu->info.executor != executor_kind::host)
    return fail(status::not_supported, "txq_host: TX queue {} was not created with host_producer", id);
  return q.cfg.host_producer ? q.host_view : q.view;
}

result<mem_block> port::rxq_memory(uint32_t id) const {
  if (!state_) return fail(status::bad_state, "rxq_memory: the port is closed");
  std::lock_guard lk(state_->mu);
  if (id >= state_->rxqs.size() || !state_->rxqs[id]->alive)
    return fail(status::not_found, "rxq_memory: no RX queue {}", id);
  const auto& q = *state_->rxqs[id];
  return q.pool ? state_->pool : q.pkts;
}

uint32_t port::num_rxq() const { return state_ ? static_cast<uint32_t>(state_->rxqs.size()) : 0; }
uint32_t port::num_txq() const { return state_ ? static_cast<uint32_t>(state_->txqs.size()) : 0; }
}  // namespace gnio
