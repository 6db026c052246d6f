// SPDX-License-Identifier: Apache-2.0
// Block-cooperative building blocks that read the same on both executors, so
// that a kernel body has one loop: on the GPU every thread of a block calls
// them together; on the host executor a block is one CPU thread and they
// reduce to what that one thread would do alone.
#pragma once

#include <cstdint>

#include "gnio/device/exec.hpp"

// Declares a variable that every thread of a block shares: __shared__ in a
// CUDA kernel; an ordinary local on the host executor, whose block is one
// thread. Give it no initializer (CUDA does not allow one) and write it
// before the block reads it.
#if defined(__CUDA_ARCH__)
#define GNIO_BLOCK_SHARED __shared__
#else
#define GNIO_BLOCK_SHARED
#endif

namespace gnio::device {

// Whether pred holds in any thread of the block. A block barrier: every
// thread of the block calls it, and what each wrote before the call is
// visible to every thread after it.
GNIO_HOST_DEVICE GNIO_FORCEINLINE bool block_any(bool pred) noexcept {
#if defined(__CUDA_ARCH__)
  return __syncthreads_or(pred) != 0;
#else
  return pred;
#endif
}

// Exclusive count of pred over the block in thread order: how many threads
// before this one have pred set. *total gets the count over the whole block.
// Every thread of the block calls it (it holds block barriers); what a thread
// wrote before the call is visible to the block after it.
GNIO_HOST_DEVICE inline uint32_t block_count_before(bool pred, uint32_t* total) noexcept {
#if defined(__CUDA_ARCH__)
  __shared__ uint32_t s_warp_count[32];
  const uint32_t warp = threadIdx.x >> 5, lane = threadIdx.x & 31u;
  const uint32_t in_warp = blockDim.x - warp * 32u;
  const uint32_t members = in_warp >= 32u ? 0xffffffffu : ((1u << in_warp) - 1u);
  const uint32_t vmask = __ballot_sync(members, pred);
  __syncthreads();  // every thread read s_warp_count of the previous call
  if (lane == 0) s_warp_count[warp] = __popc(vmask);
  __syncthreads();  // every warp's count before anyone sums them
  uint32_t rank = __popc(vmask & ((1u << lane) - 1u)), n = 0;
  const uint32_t num_warps = (blockDim.x + 31u) >> 5;
  for (uint32_t w = 0; w < num_warps; ++w) {
    if (w < warp) rank += s_warp_count[w];
    n += s_warp_count[w];
  }
  *total = n;
  return rank;
#else
  *total = pred ? 1u : 0u;
  return 0;
#endif
}

// A counter that every thread of a block adds to. On the GPU it lives in
// shared memory (declare the counters GNIO_BLOCK_SHARED) and adds are
// block-scope atomics, a few cycles each, instead of a copy of every counter
// in each thread's registers; on the host executor it is a plain integer.
struct block_counter {
  unsigned long long v;
  GNIO_HOST_DEVICE GNIO_FORCEINLINE void operator+=(uint64_t x) noexcept {
#if defined(__CUDA_ARCH__)
    // Relaxed, block scope: only this block adds; block_counters_flush reads
    // after a block barrier.
    cuda::atomic_ref<unsigned long long, cuda::thread_scope_block>(v).fetch_add(x, cuda::std::memory_order_relaxed);
#else
    v += x;
#endif
  }
};
static_assert(sizeof(block_counter) == sizeof(uint64_t), "a block_counter is one 64-bit word");

// Zeroes n counters, split over the block's threads (thread k zeroes counters
// k, k + block_threads(), ...). A block barrier must follow before the first
// add.
GNIO_HOST_DEVICE inline void block_counters_zero(block_counter* c, uint32_t n) noexcept {
  for (uint32_t k = thread_rank(); k < n; k += block_threads()) c[k].v = 0;
}

// Adds n block counters into totals (n 64-bit words in memory the host reads)
// and zeroes them, split over the block's threads as block_counters_zero
// splits them: one device-scope atomic per non-zero counter. Call after a
// block barrier that follows the last add of the round; the next adds must
// come after another block barrier. Each thread touches only its own
// counters' words (a test of other threads' words raced with their zeroing).
GNIO_HOST_DEVICE inline void block_counters_flush(block_counter* c, uint64_t* totals, uint32_t n) noexcept {
  for (uint32_t k = thread_rank(); k < n; k += block_threads()) {
    const unsigned long long v = c[k].v;
    if (v != 0) {
      // Relaxed: statistics. Their readers (a report's snapshot, the host
      // after the kernel ended) load them relaxed or after the kernel.
      dev_atomic_ref<uint64_t>(totals[k]).fetch_add(v, cuda::std::memory_order_relaxed);
      c[k].v = 0;
    }
  }
}

}  // namespace gnio::device
