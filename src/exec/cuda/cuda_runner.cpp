// SPDX-License-Identifier: Apache-2.0
// The CUDA executor's kernel runner: a non-blocking stream per runner, the
// persistent kernel's end found by polling cudaStreamQuery, and the per-burst
// modes' launches (a plain launch, or the replay of a captured graph).
// Host code compiled by the C++ compiler, calling the CUDA runtime.
#include <cuda_runtime_api.h>

#include <string_view>

#include "runner_internal.hpp"

namespace gnio {

using detail::fail;

module_loading cuda_module_loading() noexcept {
  // cuModuleGetLoadingMode is a driver-API call; reach it through the
  // runtime's entry-point lookup rather than linking libcuda.
  using get_mode_fn = int (*)(int*);
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q{};
  if (cudaGetDriverEntryPointByVersion("cuModuleGetLoadingMode", &fn, 11070, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess || fn == nullptr) {
    (void)cudaGetLastError();
    return module_loading::unknown;
  }
  int mode = 0;
  if (reinterpret_cast<get_mode_fn>(fn)(&mode) != 0) return module_loading::unknown;
  constexpr int cu_module_eager_loading = 0x1, cu_module_lazy_loading = 0x2;  // CUmoduleLoadingMode
  if (mode == cu_module_eager_loading) return module_loading::eager;
  if (mode == cu_module_lazy_loading) return module_loading::lazy;
  return module_loading::unknown;
}

namespace detail {
namespace {

error cuda_error(status s, std::string_view what, cudaError_t e, std::string_view next) {
  return fail(s, "{}: {} ({}); {}", what, cudaGetErrorName(e), cudaGetErrorString(e), next);
}

// Runs the kernel per burst on the runner's stream: launched by the
// launcher, or the graph captured from it replayed.
class cuda_burst_exec final : public burst_exec {
 public:
  cuda_burst_exec(runner_state& s, burst_launcher l, cudaGraphExec_t graph) : s_(s), l_(std::move(l)), graph_(graph) {}
  ~cuda_burst_exec() override {
    if (graph_) (void)cudaGraphExecDestroy(graph_);
  }

  error start(const device::exec_ctx&) override { return s_.gpu->dev->bind_thread(); }

  error run_once() override {
    auto stream = static_cast<cudaStream_t>(s_.stream);
    const bool graph = graph_ != nullptr;
    cudaError_t e = graph ? cudaGraphLaunch(graph_, stream) : static_cast<cudaError_t>(l_.cuda(s_.stream));
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      return cuda_error(status::driver, graph ? "launch per burst: cudaGraphLaunch" : "launch per burst: kernel launch",
                        e, "check the GPU architecture this binary was built for and the launch dimensions");
    }
    e = cudaStreamSynchronize(stream);
    if (e != cudaSuccess)
      return cuda_error(status::device_fatal_error, "a kernel launched per burst failed", e,
                        "the CUDA context is unusable");
    return {};
  }

  error finish() override {
    if (!graph_) return {};
    const cudaError_t e = cudaGraphExecDestroy(graph_);
    graph_ = nullptr;
    if (e != cudaSuccess)
      return cuda_error(status::driver, "launch per burst: cudaGraphExecDestroy", e,
                        "the CUDA context may be unusable");
    return {};
  }

 private:
  runner_state& s_;
  burst_launcher l_;
  cudaGraphExec_t graph_;
};

}  // namespace

error cuda_runner_open(runner_state& st) {
  if (auto e = st.gpu->dev->bind_thread(); e) return e;
  cudaStream_t s = nullptr;
  // Non-blocking: the persistent kernel must not serialize with work on the legacy default stream.
  if (cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking); e != cudaSuccess)
    return fail(status::driver, "cudaStreamCreateWithFlags: {}", cudaGetErrorString(e));
  st.stream = s;
  return {};
}

void cuda_runner_close(runner_state& s) noexcept {
  (void)s.gpu->dev->bind_thread();
  if (cudaStreamDestroy(static_cast<cudaStream_t>(s.stream)) != cudaSuccess)
    log(log_level::warn, "cudaStreamDestroy failed while destroying a runner");
}

error cuda_runner_poll(runner_state& s, bool* finished) {
  cudaError_t e = cudaStreamQuery(static_cast<cudaStream_t>(s.stream));
  if (e == cudaErrorNotReady) return {};
  *finished = true;
  if (e != cudaSuccess)
    return fail(status::device_fatal_error, "persistent kernel failed: {} ({}); the CUDA context is unusable",
                cudaGetErrorName(e), cudaGetErrorString(e));
  return {};
}

error cuda_launch_error(int cuda_error) {
  if (cuda_error == 0) return {};
  auto e = static_cast<cudaError_t>(cuda_error);
  return fail(status::driver, "kernel launch failed: {} ({}); check the GPU architecture this binary was built for",
              cudaGetErrorName(e), cudaGetErrorString(e));
}

error cuda_preload_kernel(const void* kernel) {
  cudaFuncAttributes a{};
  if (cudaError_t e = cudaFuncGetAttributes(&a, kernel); e != cudaSuccess) {
    (void)cudaGetLastError();
    return fail(status::driver, "preload_kernel: cudaFuncGetAttributes: {} ({}); is the address a __global__ function?",
                cudaGetErrorName(e), cudaGetErrorString(e));
  }
  return {};
}

result<std::unique_ptr<burst_exec>> cuda_bursts(runner_state& s, const launch_dims& dims, burst_launcher l) {
  cudaGraphExec_t graph_exec = nullptr;
  if (auto e = s.gpu->dev->bind_thread(); e) return e;
  // Load the kernel's module now: the first launch then needs no lazy load
  // (which could wait for another runner's persistent kernel), and the
  // graph below is captured from a loaded module.
  cudaFuncAttributes a{};
  if (cudaError_t e = cudaFuncGetAttributes(&a, l.kernel); e != cudaSuccess) {
    (void)cudaGetLastError();
    return cuda_error(status::driver, "launch: cudaFuncGetAttributes", e,
                      "check the GPU architecture this binary was built for");
  }
  if (dims.mode == device::launch_mode::graph) {
    auto stream = static_cast<cudaStream_t>(s.stream);
    if (cudaError_t e = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal); e != cudaSuccess)
      return cuda_error(status::driver, "launch: cudaStreamBeginCapture", e, "is the runner's stream in use?");
    const auto launched = static_cast<cudaError_t>(l.cuda(s.stream));
    cudaGraph_t graph = nullptr;
    const cudaError_t ended_capture = cudaStreamEndCapture(stream, &graph);
    if (launched != cudaSuccess || ended_capture != cudaSuccess) {
      if (graph) (void)cudaGraphDestroy(graph);
      (void)cudaGetLastError();
      return cuda_error(status::driver, "launch: capturing the kernel launch into a CUDA graph",
                        launched != cudaSuccess ? launched : ended_capture,
                        "check the launch dimensions and the GPU architecture this binary was built for");
    }
    cudaGraphExec_t exec = nullptr;
    cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
    const cudaError_t destroyed = cudaGraphDestroy(graph);
    if (e == cudaSuccess && destroyed != cudaSuccess) e = destroyed;
    // Uploaded once, so the first replay costs what every other one does.
    if (e == cudaSuccess) e = cudaGraphUpload(exec, stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
    if (e != cudaSuccess) {
      if (exec) (void)cudaGraphExecDestroy(exec);
      (void)cudaGetLastError();
      return cuda_error(status::driver, "launch: instantiating the CUDA graph", e, "the CUDA context may be unusable");
    }
    graph_exec = exec;
  }
  return std::unique_ptr<burst_exec>(std::make_unique<cuda_burst_exec>(s, std::move(l), graph_exec));
}

}  // namespace detail
}  // namespace gnio
