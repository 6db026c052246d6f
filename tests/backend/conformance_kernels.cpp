// SPDX-License-Identifier: Apache-2.0
// Compiled by nvcc when CUDA is on, so the same bodies also run as CUDA kernels.
#include <gnio/launch.hpp>

#include "conformance_kernels.hpp"

namespace conf {

gnio::error launch(gnio::kernel_runner& r, const gnio::launch_dims& d, const record_body& b) {
  return gnio::launch(r, d, b);
}
gnio::error launch(gnio::kernel_runner& r, const gnio::launch_dims& d, const large_body& b) {
  return gnio::launch(r, d, b);
}
gnio::error launch(gnio::kernel_runner& r, const gnio::launch_dims& d, const timed_send_body& b) {
  return gnio::launch(r, d, b);
}
gnio::error launch(gnio::kernel_runner& r, const gnio::launch_dims& d, const echo_body& b) {
  return gnio::launch(r, d, b);
}
gnio::error launch(gnio::kernel_runner& r, const gnio::launch_dims& d, const stubborn_body& b) {
  return gnio::launch(r, d, b);
}
gnio::error launch(gnio::kernel_runner& r, const gnio::launch_dims& d, const sem_body& b) {
  return gnio::launch(r, d, b);
}

}  // namespace conf
