// SPDX-License-Identifier: Apache-2.0
// Kernel bodies used by the ring conformance and lifecycle tests. They run
// unchanged on the CUDA and host executors.
#pragma once

#include <gnio/device/rx.hpp>
#include <gnio/device/sem.hpp>
#include <gnio/device/tx.hpp>
#include <gnio/kernel.hpp>

namespace conf {

struct record {
  uint32_t len;
  uint32_t wire_len;
  uint64_t fnv;
  uint32_t buf;    // the completion's buffer offset
  uint32_t batch;  // low bits of the first ring index of the recv that returned it
};

GNIO_HOST_DEVICE inline uint64_t fnv64(const uint8_t* p, uint32_t n) {
  uint64_t h = 1469598103934665603ull;
  for (uint32_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

// The same over a frame whose first bytes may be a completion's inline copy
// (gnio::device::pkt_frame): equal to fnv64(buffer) only if the copy is.
GNIO_HOST_DEVICE inline uint64_t fnv64(const gnio::device::frame_ref& f) {
  uint64_t h = 1469598103934665603ull;
  for (uint32_t i = 0; i < f.len; ++i) h = (h ^ f.at(i)) * 1099511628211ull;
  return h;
}

using gnio::device::dev_atomic_ref;

// Records length and hash of every packet by its stream position.
struct record_body {
  gnio::device::rxq q;
  record* rec;  // cap entries
  uint64_t cap;
  uint64_t* processed;
  uint32_t batch;
  uint64_t timeout_ns = 100'000;  // recv's batch timeout

  GNIO_HOST_DEVICE void operator()(const gnio::device::exec_ctx& ctx) const {
    using namespace gnio::device;
    uint64_t n_local = 0;
    for (;;) {
      if (should_exit<scope::block>(ctx)) break;
      uint64_t first = 0;
      uint32_t num = 0;
      gnio::status s = recv<scope::block>(ctx, q, batch, timeout_ns, &first, &num);
      if (s == gnio::status::shutdown) break;
      for (uint32_t i = thread_rank(); i < num; i += block_threads()) {
        const uint64_t idx = first + i;
        if (idx < cap) {
          rec[idx].len = pkt_len(q, idx);
          rec[idx].wire_len = pkt_wire_len(q, idx);
          // The entry's inline headers (when the queue has them), then the buffer.
          rec[idx].fnv = fnv64(pkt_frame(q, idx));
          rec[idx].buf = q.cqe(idx).buf;
          rec[idx].batch = static_cast<uint32_t>(first);
        }
        ++n_local;
      }
    }
    if (thread_rank() == 0) release_all(q);
    dev_atomic_ref<uint64_t>(*processed).fetch_add(n_local, cuda::std::memory_order_relaxed);
  }
};

// Sends every received packet back out, in place from the RX slot, and waits
// for the TX completion before the next recv releases the slot.
struct echo_body {
  gnio::device::rxq q;
  gnio::device::txq t;
  uint64_t* processed;
  uint64_t* tx_failed;
  uint32_t batch;  // <= threads per block

  GNIO_HOST_DEVICE void operator()(const gnio::device::exec_ctx& ctx) const {
    using namespace gnio::device;
    uint64_t n_local = 0, failed = 0;
    for (;;) {
      if (should_exit<scope::block>(ctx)) break;
      uint64_t first = 0;
      uint32_t num = 0;
      gnio::status s = recv<scope::block>(ctx, q, batch, 100'000, &first, &num);
      if (s == gnio::status::shutdown) break;
      if (num == 0) continue;
#if defined(__CUDA_ARCH__)
      const uint32_t i = thread_rank();
      const bool valid = i < num;
      gnio::status ts = send<scope::block>(t, valid, valid ? pkt_addr(q, first + i) : nullptr,
                                           valid ? pkt_len(q, first + i) : 0, 1'000'000'000ull);
      if (thread_rank() == 0) {
        if (ts != gnio::status::success) failed += num;
        if (tx_wait(t, 1'000'000'000ull) != gnio::status::success) ++failed;
      }
      sync_block();
      if (valid) ++n_local;
#else
      for (uint32_t i = 0; i < num; ++i) {
        if (send<scope::thread>(t, true, pkt_addr(q, first + i), pkt_len(q, first + i), 1'000'000'000ull) !=
            gnio::status::success)
          ++failed;
        ++n_local;
      }
      if (tx_wait(t, 1'000'000'000ull) != gnio::status::success) ++failed;
#endif
    }
    if (thread_rank() == 0) release_all(q);
    dev_atomic_ref<uint64_t>(*processed).fetch_add(n_local, cuda::std::memory_order_relaxed);
    dev_atomic_ref<uint64_t>(*tx_failed).fetch_add(failed, cuda::std::memory_order_relaxed);
  }
};

// Ignores the exit flag until ignore_until_ns (device clock), writing a
// heartbeat into memory it owns the whole time.
struct stubborn_body {
  uint64_t* heartbeat;
  uint64_t run_ns;

  GNIO_HOST_DEVICE void operator()(const gnio::device::exec_ctx&) const {
    if (gnio::device::thread_rank() != 0) return;
    const uint64_t t0 = gnio::device::now_ns();
    uint64_t i = 0;
    while (gnio::device::now_ns() - t0 < run_ns) {
      cuda::atomic_ref<uint64_t, cuda::thread_scope_system>(*heartbeat).store(++i, cuda::std::memory_order_relaxed);
      gnio::device::idle_backoff(100);
    }
  }
};

// Reports n items through a semaphore ring, waiting for the host to free each
// item before reusing it, then marks one item EXIT. count_only: each item is
// marked with sem_set_ready_count(i * 7 + 1) alone (no custom bytes, no fence).
struct sem_body {
  gnio::device::sem s;
  uint32_t n;
  uint64_t* stuck;
  bool count_only = false;

  GNIO_HOST_DEVICE void operator()(const gnio::device::exec_ctx& ctx) const {
    using namespace gnio::device;
    if (thread_rank() != 0) return;
    for (uint32_t i = 0; i <= n; ++i) {
      uint32_t polls = 0;
      while (sem_get_status(s, i) != sem_status::free) {
        if (ctx.should_exit()) {
          *stuck = 1;
          return;
        }
        idle_backoff(++polls);
      }
      if (i == n) {
        sem_set_status(s, i, sem_status::exit);
        return;
      }
      if (count_only) {
        sem_set_ready_count(s, i, i * 7 + 1);
        continue;
      }
      *sem_custom_as<uint64_t>(s, i) = uint64_t{i} * 7 + 1;
      sem_set_packet_info(s, i, i, 1);
      sem_set_status(s, i, sem_status::ready);
    }
  }
};

// A body past CUDA's kernel-parameter limit (gnio::kernel_param_limit):
// gnio::launch passes it by pointer. Thread 0 of block 0 sums the table
// (every word must arrive), then every block runs the inner body.
struct large_body {
  record_body inner;
  uint64_t* table_sum;
  uint32_t table[10'000];

  GNIO_HOST_DEVICE void operator()(const gnio::device::exec_ctx& ctx) const {
    if (ctx.block == 0 && gnio::device::thread_rank() == 0) {
      uint64_t sum = 0;
      for (uint32_t v : table) sum += v;
      *table_sum = sum;  // read by the host after the kernel returned (runner wait orders it)
    }
    inner(ctx);
  }
};

// Sends n frames of 60 bytes from its TX buffers, frame i carrying i in
// bytes 14..17 and the not-before time times[i] (0: none), one descriptor
// and doorbell at a time from thread 0, then (wait) waits for the completions.
struct timed_send_body {
  gnio::device::txq t;
  const uint64_t* times;  // n times, host-written before the launch
  uint32_t n;
  uint64_t* failed;
  bool wait = true;

  GNIO_HOST_DEVICE void operator()(const gnio::device::exec_ctx&) const {
    using namespace gnio::device;
    if (thread_rank() != 0) return;
    uint64_t bad = 0;
    for (uint32_t i = 0; i < n; ++i) {
      uint64_t idx = 0;
      if (tx_reserve(t, 1, 10'000'000'000ull, &idx) != gnio::status::success) {
        ++bad;
        continue;
      }
      uint8_t* f = t.buf_addr(idx);
      for (uint32_t b = 0; b < 60; ++b) f[b] = 0;
      for (uint32_t b = 0; b < 6; ++b) f[b] = 0xff;
      f[6] = 0x02;
      f[12] = 0x88;  // local experimental ethertype 0x88b5
      f[13] = 0xb5;
      f[14] = static_cast<uint8_t>(i >> 24);
      f[15] = static_cast<uint8_t>(i >> 16);
      f[16] = static_cast<uint8_t>(i >> 8);
      f[17] = static_cast<uint8_t>(i);
      tx_prepare_at(t, idx, f, 60, times[i]);
      tx_commit(t, 1);
      tx_doorbell(t);
    }
    if (wait && tx_wait(t, 30'000'000'000ull) != gnio::status::success) ++bad;
    *failed = bad;  // read by the host after the kernel returned (runner wait orders it)
  }
};

gnio::error launch(gnio::kernel_runner& r, const gnio::launch_dims& d, const record_body& b);
gnio::error launch(gnio::kernel_runner& r, const gnio::launch_dims& d, const timed_send_body& b);
gnio::error launch(gnio::kernel_runner& r, const gnio::launch_dims& d, const large_body& b);
gnio::error launch(gnio::kernel_runner& r, const gnio::launch_dims& d, const echo_body& b);
gnio::error launch(gnio::kernel_runner& r, const gnio::launch_dims& d, const stubborn_body& b);
gnio::error launch(gnio::kernel_runner& r, const gnio::launch_dims& d, const sem_body& b);

}  // namespace conf
