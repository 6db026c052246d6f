// SPDX-License-Identifier: Apache-2.0
// Compiled by nvcc when CUDA is enabled (so gnio::launch can start the CUDA
// kernel) and by the C++ compiler otherwise (host executor only).
#include <gnio/launch.hpp>

#include "l2fwd.hpp"

namespace l2fwd {

gnio::error launch(gnio::kernel_runner& r, const gnio::launch_dims& d, const body& b) { return gnio::launch(r, d, b); }

}  // namespace l2fwd
