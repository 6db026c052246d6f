// SPDX-License-Identifier: Apache-2.0
// Compiled by nvcc (CUDA builds only): a persistent kernel started through
// gnio::launch, and a kernel launched for the first time while it spins.
#include <chrono>
#include <thread>

#include <cuda_runtime_api.h>
#include <string>

#include <gnio/launch.hpp>

#include "module_loading_kernels.hpp"

namespace modload {

namespace {

// Spins until the runner's exit flag is set, like any persistent kernel.
struct spin_body {
  GNIO_HOST_DEVICE void operator()(const gnio::device::exec_ctx& ctx) const {
    while (!gnio::device::should_exit<gnio::device::scope::block>(ctx)) gnio::device::idle_backoff(1000);
  }
};

// Never launched before the persistent kernel runs: under lazy loading its
// module is loaded at this first launch.
__global__ void late_kernel(unsigned* done) {
  if (threadIdx.x == 0) {
    // Pairs with the host's acquire load of *done in late_kernel_beside_persistent.
    cuda::atomic_ref<unsigned, cuda::thread_scope_system>(*done).store(1u, cuda::std::memory_order_release);
  }
}

std::string cuda_text(const char* what, cudaError_t e) {
  return std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
}

}  // namespace

const void* late_kernel_address() { return reinterpret_cast<const void*>(&late_kernel); }

outcome late_kernel_beside_persistent(gnio::gpu& g, bool preload, std::chrono::milliseconds wait_for) {
  outcome out;
  out.mode = std::string(gnio::to_string(gnio::cuda_module_loading()));
  if (preload) {
    if (auto e = gnio::preload_kernel(late_kernel_address()); e) {
      out.error = e.what();
      return out;
    }
  }
  unsigned* h_done = nullptr;
  unsigned* d_done = nullptr;
  if (cudaError_t e = cudaHostAlloc(reinterpret_cast<void**>(&h_done), sizeof(unsigned), cudaHostAllocMapped);
      e != cudaSuccess) {
    out.error = cuda_text("cudaHostAlloc", e);
    return out;
  }
  *h_done = 0;
  if (cudaError_t e = cudaHostGetDevicePointer(reinterpret_cast<void**>(&d_done), h_done, 0); e != cudaSuccess) {
    out.error = cuda_text("cudaHostGetDevicePointer", e);
    (void)cudaFreeHost(h_done);
    return out;
  }
  cudaStream_t s = nullptr;
  if (cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking); e != cudaSuccess) {
    out.error = cuda_text("cudaStreamCreateWithFlags", e);
    (void)cudaFreeHost(h_done);
    return out;
  }
  auto runner = gnio::kernel_runner::create(g);
  if (!runner) {
    out.error = runner.err().what();
    return out;
  }
  gnio::launch_dims dims;
  dims.blocks = 1;
  dims.threads = 32;
  if (auto e = gnio::launch(*runner, dims, spin_body{}); e) {
    out.error = e.what();
    return out;
  }
  // The persistent kernel is resident before the second kernel's first launch.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  out.persistent_running = runner->running();
  const auto t0 = std::chrono::steady_clock::now();
  late_kernel<<<1, 32, 0, s>>>(d_done);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) out.error = cuda_text("launching the late kernel", e);
  out.launch_returned = true;
  while (out.error.empty() && std::chrono::steady_clock::now() - t0 < wait_for) {
    // Pairs with the kernel's release store of *done.
    if (cuda::atomic_ref<unsigned, cuda::thread_scope_system>(*h_done).load(cuda::std::memory_order_acquire) == 1u) {
      out.late_finished = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  out.late_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (auto e = runner->stop(std::chrono::seconds(5)); e && out.error.empty()) out.error = e.what();
  if (out.late_finished) {
    if (cudaError_t e = cudaStreamSynchronize(s); e != cudaSuccess && out.error.empty())
      out.error = cuda_text("cudaStreamSynchronize", e);
    if (cudaError_t e = cudaStreamDestroy(s); e != cudaSuccess && out.error.empty())
      out.error = cuda_text("cudaStreamDestroy", e);
    if (cudaError_t e = cudaFreeHost(h_done); e != cudaSuccess && out.error.empty())
      out.error = cuda_text("cudaFreeHost", e);
    *runner = {};
  }
  // Otherwise the late kernel may still run and write *h_done: nothing it
  // touches is freed (the process ends next).
  return out;
}

}  // namespace modload
