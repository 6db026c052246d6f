// SPDX-License-Identifier: Apache-2.0
// gnio::launch(runner, dims, body): runs a kernel body on the runner's
// executor in the launch mode dims.mode (persistent, per_burst or graph;
// docs/kernels.md "Launch modes"). Body is a trivially copyable functor with
//   GNIO_HOST_DEVICE void operator()(const gnio::device::exec_ctx&)
// that loops until should_exit<S>(ctx) or its queues end, receiving through
// recv<S>(ctx, ...), and calls release_all on return. The CUDA path exists
// only where this header is compiled by nvcc (a .cu file); the host path
// everywhere.
#pragma once

#include <cstddef>
#include <functional>
#include <type_traits>

#include "gnio/kernel.hpp"

#if defined(__CUDACC__)
#include <cuda_runtime_api.h>
#endif

namespace gnio {

// The most bytes of kernel parameters a launch takes (CUDA 12.1 and later,
// compute capability 7.0 and up): a body and its exec_ctx are passed by
// value up to this size, and through a copy in GPU memory above it.
inline constexpr size_t kernel_param_limit = 32764;

namespace detail {
template <class Body>
inline constexpr bool body_by_value = sizeof(Body) + sizeof(device::exec_ctx) <= kernel_param_limit;

#if defined(__CUDACC__)
template <class Body>
__global__ void persistent_kernel(Body body, device::exec_ctx ctx) {
  static_assert(body_by_value<Body>,
                "this kernel body is larger than CUDA's kernel-parameter limit (kernel_param_limit): launch it "
                "with gnio::launch, which passes a large body by pointer");
  ctx.block = blockIdx.x;
  body(ctx);
}
// A body too large to pass by value, read from its copy in GPU memory.
template <class Body>
__global__ void persistent_kernel_by_pointer(const Body* body, device::exec_ctx ctx) {
  ctx.block = blockIdx.x;
  (*body)(ctx);
}
#endif

struct launch_access {
  static error host(kernel_runner& r, uint32_t blocks, std::function<void(const device::exec_ctx&)> body) {
    return r.launch_host(blocks, std::move(body));
  }
  static result<void*> begin_cuda(kernel_runner& r, uint32_t blocks) { return r.begin_cuda_launch(blocks); }
  static device::exec_ctx ctx(const kernel_runner& r, uint32_t blocks) { return r.ctx(blocks); }
  static error end_cuda(kernel_runner& r, int cuda_error) { return r.end_cuda_launch(cuda_error); }
  static error bursts(kernel_runner& r, const launch_dims& dims, burst_launcher l) {
    return r.launch_bursts(dims, std::move(l));
  }
  static result<const void*> body_copy(kernel_runner& r, const void* body, size_t bytes) {
    return r.body_copy(body, bytes);
  }
};
}  // namespace detail

// Runs `body` on the runner's executor (see the top of this file). A CUDA
// body larger than kernel_param_limit (with its context) is copied to GPU
// memory the runner owns and read from there; the host executor copies
// each body per thread.
template <class Body>
[[nodiscard]] error launch(kernel_runner& runner, const launch_dims& dims, const Body& body) {
  using access = detail::launch_access;
  static_assert(std::is_trivially_copyable_v<Body>,
                "a kernel body is copied to the device: keep it trivially copyable");
  if (!runner.valid()) return error(status::bad_state, "launch: the runner was not created");
  if (dims.blocks == 0) return error(status::invalid_value, "launch: blocks must be at least 1");
  const device::poll_policy poll = dims.poll;
  const device::launch_mode mode = dims.mode;
  if (mode != device::launch_mode::persistent && mode != device::launch_mode::per_burst &&
      mode != device::launch_mode::graph)
    return error(status::invalid_value, "launch: unknown launch mode");
  if (runner.executor() == executor_kind::host) {
    auto host_body = [body, poll, mode](const device::exec_ctx& c) {
      Body b = body;  // each host thread (and each launch) gets its own copy, as each GPU block would
      device::exec_ctx mine = c;
      mine.poll = poll;
      mine.mode = mode;
      b(mine);
    };
    if (mode == device::launch_mode::persistent) return access::host(runner, dims.blocks, host_body);
    detail::burst_launcher l;
    l.host = host_body;
    return access::bursts(runner, dims, std::move(l));
  }
#if defined(__CUDACC__)
  if (dims.threads == 0 || dims.threads > 1024)
    return error(status::invalid_value, "launch: threads per block must be 1..1024");
  const Body* body_ptr = nullptr;
  if constexpr (!detail::body_by_value<Body>) {
    auto copy = access::body_copy(runner, &body, sizeof(Body));
    if (!copy) return copy.err();
    body_ptr = static_cast<const Body*>(*copy);
  }
  if (mode != device::launch_mode::persistent) {
    device::exec_ctx c = access::ctx(runner, dims.blocks);
    c.poll = poll;
    c.mode = mode;
    detail::burst_launcher l;
    const uint32_t blocks = dims.blocks, threads = dims.threads, shared = dims.shared_bytes;
    // The kernel's parameters are copied at each launch (and into the graph
    // once), so every launch starts with a fresh context: batches == 0.
    if constexpr (detail::body_by_value<Body>) {
      l.kernel = reinterpret_cast<const void*>(&detail::persistent_kernel<Body>);
      l.cuda = [body, c, blocks, threads, shared](void* stream) {
        detail::persistent_kernel<Body><<<blocks, threads, shared, static_cast<cudaStream_t>(stream)>>>(body, c);
        return static_cast<int>(cudaGetLastError());
      };
    } else {
      l.kernel = reinterpret_cast<const void*>(&detail::persistent_kernel_by_pointer<Body>);
      l.cuda = [body_ptr, c, blocks, threads, shared](void* stream) {
        detail::persistent_kernel_by_pointer<Body>
            <<<blocks, threads, shared, static_cast<cudaStream_t>(stream)>>>(body_ptr, c);
        return static_cast<int>(cudaGetLastError());
      };
    }
    return access::bursts(runner, dims, std::move(l));
  }
  auto stream = access::begin_cuda(runner, dims.blocks);
  if (!stream) return stream.err();
  device::exec_ctx c = access::ctx(runner, dims.blocks);
  c.poll = poll;
  if constexpr (detail::body_by_value<Body>)
    detail::persistent_kernel<Body>
        <<<dims.blocks, dims.threads, dims.shared_bytes, static_cast<cudaStream_t>(*stream)>>>(body, c);
  else
    detail::persistent_kernel_by_pointer<Body>
        <<<dims.blocks, dims.threads, dims.shared_bytes, static_cast<cudaStream_t>(*stream)>>>(body_ptr, c);
  return access::end_cuda(runner, static_cast<int>(cudaGetLastError()));
#else
  return error(status::not_supported,
               "launch: this file was not compiled by nvcc, so it cannot start CUDA kernels; launch from a .cu file "
               "or use the host executor");
#endif
}

}  // namespace gnio
