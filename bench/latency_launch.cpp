// SPDX-License-Identifier: Apache-2.0
// Starts bench/latency's bodies. nvcc compiles this file when CUDA is built
// (so gnio::launch has the CUDA kernels), the C++ compiler otherwise.
#include <gnio/launch.hpp>

#include "latency.hpp"

namespace latency {

gnio::error launch_ring(gnio::kernel_runner& r, const gnio::launch_dims& d, const ring_body& b) {
  return gnio::launch(r, d, b);
}

gnio::error launch_chain(gnio::kernel_runner& r, const gnio::launch_dims& d, const chain_body& b) {
  return gnio::launch(r, d, b);
}

gnio::error launch_flag(gnio::kernel_runner& r, const gnio::launch_dims& d, const flag_body& b) {
  return gnio::launch(r, d, b);
}

}  // namespace latency
