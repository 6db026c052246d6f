// SPDX-License-Identifier: Apache-2.0
// Backend SDK: the producer half of an RX ring and the consumer half of a TX
// ring. Their partners are in gnio/device/rx.hpp and gnio/device/tx.hpp; both
// sides use the same libcu++ system-scope atomics, and each barrier below
// names the one it pairs with. Applications never include this.
//
// RX, buffers by reference. Every completion names its buffer by a byte
// offset into the queue's packet memory (rx_cqe::buf). A ring gets its
// buffers in one of two ways:
//  - area: packet memory of its own, used as a byte ring. reserve(len) returns
//    where to write the next frame; frames are packed back to back on 64-byte
//    boundaries and come back, with their entries, when the kernel releases
//    them (its consumer index passes them). The area holds num_descs + 1
//    frames of max_frame bytes, so a free entry always has room for its frame.
//  - pool: buffers the backend owns (an AF_XDP UMEM, a DPDK mbuf pool);
//    post(buf, ...) names one, and reclaim() hands each buffer back once the
//    kernel released its entry.
// Either way a burst is reserve (or post) -> fill -> commit, any number of
// times, then one publish(): the owner words, each stored with release.
//
// TX: tx_ring_reader::peek() returns the descriptors the kernel rang the
// doorbell for, release() completes them (the kernel may then reuse the
// descriptors and their buffers).
//
// A writer or reader is used by one thread at a time; nothing here locks.
#pragma once

#include <cstdint>
#include <cstring>

#include <cuda/atomic>

#include "gnio/device/ring.hpp"

namespace gnio::backend {

class rx_ring_writer {
 public:
  struct layout {
    device::rx_cqe* cq = nullptr;    // host address of num_descs entries
    const uint64_t* cons = nullptr;  // host address of the consumer index (written by the kernel)
    uint32_t* eos = nullptr;         // host address of the end-of-stream flag
    uint8_t* area = nullptr;         // host address frames are written at; null for a pool ring
    uint32_t num_descs = 0;          // power of two
    uint32_t max_frame = 0;          // longer frames are cut to this (a multiple of 64)
    // Inline headers (device::rxq::inline_bytes): each entry is followed by
    // a copy of its frame's first inline_bytes bytes, read from `bytes` (the
    // host address completions' buf offsets refer into: the area, or the
    // pool) when the entry is filled. 0: none, entries are 32 bytes apart.
    uint32_t inline_bytes = 0;
    const uint8_t* bytes = nullptr;
  };

  // Bytes of area a ring needs: num_descs + 1 frames of max_frame (see above).
  static constexpr uint64_t area_bytes(uint32_t num_descs, uint32_t max_frame) noexcept {
    return (uint64_t{num_descs} + 1) * max_frame;
  }

  void init(const layout& l) noexcept {
    l_ = l;
    mask_ = l.num_descs - 1;
    log2_ = 0;
    while ((1u << log2_) < l.num_descs) ++log2_;
    area_bytes_ = l.area ? area_bytes(l.num_descs, l.max_frame) : 0;
    stride_ = device::rx_cqe_stride(l.inline_bytes);
    if (!l_.bytes) l_.bytes = l.area;
    prod_ = published_ = cons_cache_ = reclaimed_ = head_ = head_off_ = 0;
    pending_off_ = pending_len_ = 0;
  }

  // The kernel's consumer index, freshly loaded.
  uint64_t consumed() noexcept {
    // Pairs with the release store of *cons in device::detail::publish_consumer():
    // the kernel finished with every entry and buffer below the index read here.
    cons_cache_ = device::sys_atomic_ref<const uint64_t>(*l_.cons).load(cuda::std::memory_order_acquire);
    return cons_cache_;
  }

  // Entries free right now. Loads the consumer index only when the last one
  // seen leaves no room, so a burst costs one acquire load at most. On a pool
  // ring an entry is free only once reclaim() took its buffer back: before
  // that the entry is the only record of which buffer the kernel released.
  uint32_t free_entries() noexcept {
    if (!l_.area) return l_.num_descs - static_cast<uint32_t>(prod_ - reclaimed_);
    uint32_t used = static_cast<uint32_t>(prod_ - cons_cache_);
    if (used >= l_.num_descs) used = static_cast<uint32_t>(prod_ - consumed());
    return l_.num_descs - used;
  }

  // Area rings: where to write the next frame, of len bytes cut to max_frame
  // (*cut_len). Null when the ring is full. commit() completes it.
  uint8_t* reserve(uint32_t len, uint32_t* cut_len) noexcept {
    if (free_entries() == 0) return nullptr;
    const uint32_t n = len < l_.max_frame ? len : l_.max_frame;
    const uint64_t need = n ? (uint64_t{n} + 63u) & ~uint64_t{63} : 64u;
    if (head_off_ + need > area_bytes_) {
      head_ += area_bytes_ - head_off_;  // a frame never wraps: skip to the area's start
      head_off_ = 0;
    }
    pending_off_ = static_cast<uint32_t>(head_off_);
    pending_len_ = n;
    head_ += need;
    head_off_ += need;
    *cut_len = n;
    return l_.area + pending_off_;
  }

  // Completes the frame reserve() returned, as the next entry.
  void commit(uint32_t wire_len, uint64_t ts_ns, uint32_t rss_hash, uint16_t cls, uint16_t flags) noexcept {
    fill(pending_off_, pending_len_, wire_len, ts_ns, rss_hash, cls, flags);
  }

  // Pool rings: the next entry names buffer buf (a byte offset into the pool).
  // False when the ring is full.
  bool post(uint32_t buf, uint32_t len, uint32_t wire_len, uint64_t ts_ns, uint32_t rss_hash, uint16_t cls,
            uint16_t flags) noexcept {
    if (free_entries() == 0) return false;
    fill(buf, len, wire_len, ts_ns, rss_hash, cls, flags);
    return true;
  }

  // Makes entries [published, upto) visible to the kernel: their owner
  // words, each stored with release. upto defaults to every committed entry.
  void publish(uint64_t upto) noexcept {
    if (upto <= published_) return;
    // Each store pairs with the consumer's acquire: on the GPU, the acquire
    // fence in device::detail::poll() / recv_block() after its relaxed owner
    // loads; on the host executor, the acquire load in device::detail::
    // load_owner(). Entry fields and frame bytes written before the store
    // are visible to a consumer that saw the owner word. (A release store
    // costs no more than a plain one on x86 and Arm's stlr; a release fence
    // here instead would be correct too, but ThreadSanitizer does not model
    // fences and would report every entry the host executor reads.)
    for (uint64_t i = published_; i < upto; ++i)
      device::sys_atomic_ref<uint32_t>(entry(i).owner)
          .store(device::rx_phase(i, log2_), cuda::std::memory_order_release);
    published_ = upto;
  }
  void publish() noexcept { publish(prod_); }

  // No completion will follow the ones published so far.
  void end_of_stream() noexcept {
    // Pairs with the acquire load in device::detail::eos_set(): every owner
    // word published before this store is visible to a kernel that sees it.
    device::sys_atomic_ref<uint32_t>(*l_.eos).store(1u, cuda::std::memory_order_release);
  }

  // Pool rings: calls f(buf) for the buffer of every entry the kernel
  // released since the last call, oldest first, and frees those entries.
  // Returns how many.
  template <class F>
  uint32_t reclaim(F&& f) {
    const uint64_t c = consumed();
    const uint32_t n = static_cast<uint32_t>(c - reclaimed_);
    for (uint64_t i = reclaimed_; i < c; ++i) f(entry(i).buf);
    reclaimed_ = c;
    return n;
  }

  [[nodiscard]] uint64_t produced() const noexcept { return prod_; }  // entries committed
  [[nodiscard]] uint64_t published() const noexcept { return published_; }
  [[nodiscard]] uint64_t head() const noexcept { return head_; }  // area bytes used so far (monotonic)
  [[nodiscard]] uint64_t area_size() const noexcept { return area_bytes_; }
  [[nodiscard]] uint32_t num_descs() const noexcept { return l_.num_descs; }
  [[nodiscard]] uint32_t max_frame() const noexcept { return l_.max_frame; }
  // The host address completions' buf offsets refer into (layout::bytes,
  // else the area); null for a pool ring given none.
  [[nodiscard]] const uint8_t* bytes() const noexcept { return l_.bytes; }
  // Entry idx of the ring (any index; wraps).
  [[nodiscard]] device::rx_cqe& entry(uint64_t idx) const noexcept {
    return *reinterpret_cast<device::rx_cqe*>(reinterpret_cast<uint8_t*>(l_.cq) + (idx & mask_) * uint64_t{stride_});
  }

 private:
  void fill(uint32_t buf, uint32_t len, uint32_t wire_len, uint64_t ts_ns, uint32_t rss_hash, uint16_t cls,
            uint16_t flags) noexcept {
    device::rx_cqe& c = entry(prod_);
    c.len = len;
    c.wire_len = wire_len < len ? len : wire_len;
    c.ts_ns = ts_ns;
    c.buf = buf;
    c.rss_hash = rss_hash;
    c.cls = cls;
    c.flags = static_cast<uint16_t>(flags | (wire_len > len ? device::rx_flag_truncated : 0));
    if (l_.inline_bytes != 0 && l_.bytes != nullptr) {
      // The frame's first bytes, written before publish() stores the owner
      // word, whose release covers them as it covers the fields.
      std::memcpy(&c + 1, l_.bytes + buf, len < l_.inline_bytes ? len : l_.inline_bytes);
    }
    ++prod_;
  }

  layout l_{};
  uint32_t mask_ = 0, log2_ = 0, stride_ = sizeof(device::rx_cqe);
  uint64_t area_bytes_ = 0;
  uint64_t prod_ = 0;        // next entry to fill
  uint64_t published_ = 0;   // entries below this are visible to the kernel
  uint64_t cons_cache_ = 0;  // last consumer index loaded
  uint64_t reclaimed_ = 0;   // pool rings: buffers below this went back
  uint64_t head_ = 0;        // area rings: next free byte, monotonic
  uint64_t head_off_ = 0;    // the same, as an offset into the area
  uint32_t pending_off_ = 0, pending_len_ = 0;
};

class tx_ring_reader {
 public:
  struct layout {
    const device::tx_desc* ring = nullptr;  // host address of num_descs descriptors
    const uint64_t* doorbell = nullptr;     // host address of the producer index (written by the kernel)
    uint64_t* done = nullptr;               // host address of the completion index
    uint32_t num_descs = 0;                 // power of two
    const uint64_t* times = nullptr;        // host address of num_descs not-before times (device::txq::times)
  };

  void init(const layout& l) noexcept {
    l_ = l;
    done_ = 0;
  }

  // Descriptors the kernel rang for and not yet released, at most max:
  // [*first, *first + n).
  uint32_t peek(uint32_t max, uint64_t* first) noexcept {
    // Pairs with the release store in device::tx_doorbell(): descriptors and
    // frame bytes below the doorbell are visible.
    const uint64_t db = device::sys_atomic_ref<const uint64_t>(*l_.doorbell).load(cuda::std::memory_order_acquire);
    *first = done_;
    const uint64_t n = db - done_;
    return static_cast<uint32_t>(n < max ? n : max);
  }

  [[nodiscard]] const device::tx_desc& desc(uint64_t idx) const noexcept { return l_.ring[idx & (l_.num_descs - 1)]; }

  // The not-before time of peeked descriptor idx (CLOCK_REALTIME ns), 0 when
  // it has none. Read after peek(), whose acquire load covers it.
  [[nodiscard]] uint64_t not_before(uint64_t idx) const noexcept {
    const device::tx_desc& d = desc(idx);
    return (d.flags & device::tx_desc_flag_not_before) != 0 && l_.times != nullptr ? l_.times[idx & (l_.num_descs - 1)]
                                                                                   : 0;
  }

  // Completes the n oldest peeked descriptors.
  void release(uint32_t n) noexcept {
    done_ += n;
    // Pairs with the acquire load in device::tx_done(): the kernel may reuse
    // these descriptors and the buffers they named.
    device::sys_atomic_ref<uint64_t>(*l_.done).store(done_, cuda::std::memory_order_release);
  }

  [[nodiscard]] uint64_t completed() const noexcept { return done_; }

 private:
  layout l_{};
  uint64_t done_ = 0;
};

}  // namespace gnio::backend
