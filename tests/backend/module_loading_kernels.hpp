// SPDX-License-Identifier: Apache-2.0
// What module_loading_test needs from CUDA code (module_loading_kernels.cpp).
#pragma once

#include <chrono>
#include <string>

#include <gnio/gpu.hpp>
#include <gnio/kernel.hpp>

namespace modload {

struct outcome {
  std::string mode;                 // cuda_module_loading() in this process
  bool persistent_running = false;  // the persistent kernel was running when the second one was launched
  bool launch_returned = false;     // the second kernel's launch call came back
  bool late_finished = false;       // the second kernel ran to completion
  double late_ms = 0;               // from its launch to its completion (or to giving up)
  std::string error;                // a CUDA or gnio call that failed
};

// The address of the kernel launched beside the persistent one (for preload_kernel).
const void* late_kernel_address();

// Starts a persistent kernel on g through gnio::launch, then launches another
// kernel, never launched before, on a stream of its own and waits up to
// wait_for for it to finish; stops the persistent kernel. preload: call
// gnio::preload_kernel on the second kernel before the persistent one starts.
outcome late_kernel_beside_persistent(gnio::gpu& g, bool preload, std::chrono::milliseconds wait_for);

}  // namespace modload
