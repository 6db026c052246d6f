// SPDX-License-Identifier: Apache-2.0
// Starts the gnio pp kernel body on a runner. Defined in pp_launch.cpp, which
// nvcc compiles when CUDA is enabled (so the CUDA kernel exists) and the C++
// compiler otherwise (host executor only).
#pragma once

#include <gnio/kernel.hpp>

#include "pp.hpp"

namespace gnio::pp {

// One block per body.blocks entry: d.blocks should equal b.num_blocks (extra
// blocks return at once). b.sem needs at least num_blocks items of
// sizeof(report) custom bytes for reports.
[[nodiscard]] gnio::error launch(gnio::kernel_runner& r, const gnio::launch_dims& d, const body& b);

}  // namespace gnio::pp
