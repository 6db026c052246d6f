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

#include <type_traits>

#include "gnio/kernel.hpp"

#if defined(__CUDACC__)
#include <cuda_runtime_api.h>
#endif

namespace gnio {

namespace detail {
#if defined(__CUDACC__)
template <class Body>
__global__ void persistent_kernel(Body body, device::exec_ctx ctx) {
  ctx.block = blockIdx.x;
  body(ctx);
}
#endif
}  // namespace detail

template <class Body>
[[nodiscard]] error launch(kernel_runner& runner, const launch_dims& dims, const Body& body) {
  static_assert(std::is_trivially_copyable_v<Body>, "a kernel body is copied to the device: keep it trivially copyable");
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
    if (mode == device::launch_mode::persistent) return runner.launch_host(dims.blocks, host_body);
    kernel_runner::burst_launcher l;
    l.host = host_body;
    return runner.launch_bursts(dims, std::move(l));
  }
#if defined(__CUDACC__)
  if (dims.threads == 0 || dims.threads > 1024)
    return error(status::invalid_value, "launch: threads per block must be 1..1024");
  if (mode != device::launch_mode::persistent) {
    device::exec_ctx c = runner.ctx(dims.blocks);
    c.poll = poll;
    c.mode = mode;
    kernel_runner::burst_launcher l;
    l.kernel = reinterpret_cast<const void*>(&detail::persistent_kernel<Body>);
    const uint32_t blocks = dims.blocks, threads = dims.threads, shared = dims.shared_bytes;
    // The kernel's parameters are copied at each launch (and into the graph
    // once), so every launch starts with a fresh context: batches == 0.
    l.cuda = [body, c, blocks, threads, shared](void* stream) {
      detail::persistent_kernel<Body><<<blocks, threads, shared, static_cast<cudaStream_t>(stream)>>>(body, c);
      return static_cast<int>(cudaGetLastError());
    };
    return runner.launch_bursts(dims, std::move(l));
  }
  auto stream = runner.begin_cuda_launch(dims.blocks);
  if (!stream) return stream.err();
  device::exec_ctx c = runner.ctx(dims.blocks);
  c.poll = poll;
  detail::persistent_kernel<Body><<<dims.blocks, dims.threads, dims.shared_bytes, static_cast<cudaStream_t>(*stream)>>>(
      body, c);
  return runner.end_cuda_launch(static_cast<int>(cudaGetLastError()));
#else
  return error(status::not_supported,
               "launch: this file was not compiled by nvcc, so it cannot start CUDA kernels; launch from a .cu file "
               "or use the host executor");
#endif
}

}  // namespace gnio
