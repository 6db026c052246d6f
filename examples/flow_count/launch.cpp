// SPDX-License-Identifier: Apache-2.0
// Compiled by nvcc when CUDA is enabled (so gnio::launch can start the CUDA
// kernel) and by the C++ compiler otherwise (host executor only).
#include <gnio/launch.hpp>

#include "flow_count.hpp"

namespace flow_count {

gnio::error launch(gnio::kernel_runner& runner, const gnio::launch_dims& dims, const body& b) {
  return gnio::launch(runner, dims, b);
}

}  // namespace flow_count
