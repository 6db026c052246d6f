// SPDX-License-Identifier: Apache-2.0
// What a persistent kernel body sees of the executor running it: its block,
// the exit flag, a clock, and scope-wide barriers that reduce to no-ops on the
// host executor (one "block" there is one CPU thread).
#pragma once

#include <cstdint>

#if !defined(__CUDA_ARCH__)
#include <chrono>
#include <thread>
#endif

#include "gnio/device/ring.hpp"

namespace gnio::device {

// Where a recv/send runs: one thread, a whole warp, or a whole block acting together.
enum class scope { thread, warp, block };

// How a kernel body is run (gnio::launch_dims::mode).
//   persistent: launched once; the body loops until the exit flag or the end
//               of its queues.
//   per_burst:  the host waits until a burst is ready in the RX queues and
//               launches the kernel over it (the DPDK gpudev / l2fwd-nv
//               style); each launch receives one batch per recv call site.
//   graph:      as per_burst, through a captured CUDA graph launched per burst.
// The same body runs in every mode when it receives through
// recv<S>(ctx, ...) and asks should_exit<S>(ctx) before each round.
enum class launch_mode : uint32_t { persistent = 0, per_burst = 1, graph = 2 };

// What recv<S>(ctx, ...) does while its queue is empty.
//   adaptive: spin, then back off with a short sleep (GPU: __nanosleep; host:
//             yield, then sleep), so an idle queue costs little PCIe traffic
//             and power; the price is up to one sleep of latency.
//   busy:     never sleep, and return a partial batch as soon as one look
//             finds it no longer growing (the producer publishes a burst at
//             once) instead of waiting for the batch timeout: the lowest
//             latency, for a core (or an SM's warp scheduler slot) kept busy
//             polling and smaller batches at low rates.
//   latency:  busy, and a partial batch is returned at the first look that
//             finds one, without the look that sees it stop growing: one
//             round trip less (over PCIe on the GPU) per lone packet, at the
//             price of a batch cut short when a burst is still being
//             published. docs/kernels.md has measurements of all three.
enum class poll_policy : uint32_t { adaptive = 0, busy = 1, latency = 2 };

// busy and latency never sleep.
GNIO_HOST_DEVICE GNIO_FORCEINLINE constexpr bool never_sleeps(poll_policy p) noexcept {
  return p == poll_policy::busy || p == poll_policy::latency;
}

struct exec_ctx {
  uint32_t block;  // this block's index (host executor: thread index)
  uint32_t num_blocks;
  const uint32_t* exit_flag;  // host sets nonzero to ask the kernel to return
  uint32_t executor;          // 0 = host, 1 = cuda
  launch_mode mode;           // persistent unless launched per burst
  poll_policy poll;
  // Batches received through recv(ctx, ...) by this thread in this launch;
  // in the per-burst modes a thread that has received one is done (each
  // thread has its own copy of the context).
  mutable uint32_t batches;

  GNIO_HOST_DEVICE bool one_batch() const noexcept { return mode != launch_mode::persistent; }

  // Pairs with the release store in kernel_runner::stop(); relaxed would also
  // do since nothing is read after it, acquire keeps the rule simple.
  GNIO_HOST_DEVICE bool should_exit() const noexcept {
    if (one_batch() && batches != 0u) return true;
    return sys_atomic_ref<const uint32_t>(*exit_flag).load(cuda::std::memory_order_acquire) != 0u;
  }
};

GNIO_HOST_DEVICE GNIO_FORCEINLINE uint64_t now_ns() noexcept {
#if defined(__CUDA_ARCH__)
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#else
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
#endif
}

GNIO_HOST_DEVICE GNIO_FORCEINLINE uint32_t thread_rank() noexcept {
#if defined(__CUDA_ARCH__)
  return threadIdx.x;
#else
  return 0;
#endif
}

GNIO_HOST_DEVICE GNIO_FORCEINLINE uint32_t block_threads() noexcept {
#if defined(__CUDA_ARCH__)
  return blockDim.x;
#else
  return 1;
#endif
}

GNIO_HOST_DEVICE GNIO_FORCEINLINE uint32_t lane_id() noexcept {
#if defined(__CUDA_ARCH__)
  return threadIdx.x & 31u;
#else
  return 0;
#endif
}

GNIO_HOST_DEVICE GNIO_FORCEINLINE uint32_t warp_threads() noexcept {
#if defined(__CUDA_ARCH__)
  return 32;
#else
  return 1;
#endif
}

GNIO_HOST_DEVICE GNIO_FORCEINLINE void sync_block() noexcept {
#if defined(__CUDA_ARCH__)
  __syncthreads();
#endif
}

GNIO_HOST_DEVICE GNIO_FORCEINLINE void sync_warp() noexcept {
#if defined(__CUDA_ARCH__)
  __syncwarp();
#endif
}

// The exit decision made once for the whole scope, so that every thread of a
// warp or block leaves the loop together (a split decision would deadlock the
// next block-wide barrier).
template <scope S>
GNIO_HOST_DEVICE GNIO_FORCEINLINE bool should_exit(const exec_ctx& ctx) noexcept {
#if defined(__CUDA_ARCH__)
  if constexpr (S == scope::thread) {
    return ctx.should_exit();
  } else if constexpr (S == scope::warp) {
    int v = (threadIdx.x & 31u) == 0 ? ctx.should_exit() : 0;
    return __shfl_sync(0xffffffffu, v, 0) != 0;
  } else {
    __shared__ int s_exit;
    __syncthreads();  // everyone read the previous decision
    if (threadIdx.x == 0) s_exit = ctx.should_exit();
    __syncthreads();
    return s_exit != 0;
  }
#else
  return ctx.should_exit();
#endif
}

// Backoff for an idle poll loop: a short sleep on the GPU keeps PCIe polling
// traffic down; on the host it yields so producer threads on a small machine
// still get to run. busy never sleeps; on the host it still yields the CPU
// on every empty poll, which costs a system call when the core is free and
// lets the engine (or another busy thread) run at once when cores are shared.
GNIO_HOST_DEVICE GNIO_FORCEINLINE void idle_backoff(uint32_t empty_polls,
                                                    poll_policy policy = poll_policy::adaptive) noexcept {
#if defined(__CUDA_ARCH__)
  if (never_sleeps(policy)) return;
#else
  if (never_sleeps(policy)) {
    (void)empty_polls;
    std::this_thread::yield();
    return;
  }
#endif
#if defined(__CUDA_ARCH__)
  if (empty_polls > 16) __nanosleep(empty_polls > 1024 ? 2000 : 200);
#else
  if (empty_polls > 64) std::this_thread::yield();
  if (empty_polls > 4096) std::this_thread::sleep_for(std::chrono::microseconds(50));
#endif
}

}  // namespace gnio::device
