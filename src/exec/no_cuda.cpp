// SPDX-License-Identifier: Apache-2.0
// What cuda/ provides, in a build without CUDA. No runner has a CUDA GPU
// there, so the runner's CUDA seams are never reached; the public calls
// answer that CUDA is missing.
#include "runner_internal.hpp"

namespace gnio {

using detail::fail;

bool built_with_cuda() noexcept { return false; }

std::vector<gpu_info> list_gpus(std::string* why) {
  if (why) *why = "gnio was built without CUDA (GNIO_BUILD_CUDA=OFF or no nvcc at configure time)";
  return {};
}

cuda_env query_cuda_env() {
  cuda_env e;
  e.error = "gnio was built without CUDA";
  return e;
}

module_loading cuda_module_loading() noexcept { return module_loading::unknown; }

namespace detail {

error cuda_runner_open(runner_state&) {
  return fail(status::not_supported, "kernel_runner: gnio was built without CUDA");
}

void cuda_runner_close(runner_state&) noexcept {}

error cuda_runner_poll(runner_state&, bool*) { return {}; }

error cuda_launch_error(int) { return {}; }

result<std::unique_ptr<burst_exec>> cuda_bursts(runner_state&, const launch_dims&, burst_launcher) {
  return fail(status::not_supported, "launch: gnio was built without CUDA");
}

error cuda_preload_kernel(const void*) {
  return fail(status::not_supported, "preload_kernel: gnio was built without CUDA");
}

}  // namespace detail
}  // namespace gnio
