// SPDX-License-Identifier: Apache-2.0
// gnio::semaphore: GPU -> CPU item rings in host-visible memory. The kernel
// uses view() with the device/sem.hpp functions; the host uses host_view()
// with the same functions.
#pragma once

#include <memory>

#include "gnio/device/sem.hpp"
#include "gnio/gpu.hpp"

namespace gnio {

namespace detail {
struct sem_state;
}

class semaphore {
 public:
  semaphore() = default;
  [[nodiscard]] static result<semaphore> create(gpu& g, uint32_t num_items, uint32_t custom_bytes);
  [[nodiscard]] device::sem view() const;       // for kernels
  [[nodiscard]] device::sem host_view() const;  // for the host loop
  [[nodiscard]] error destroy();
  [[nodiscard]] bool valid() const noexcept { return state_ != nullptr; }

 private:
  explicit semaphore(std::shared_ptr<detail::sem_state> s) : state_(std::move(s)) {}
  std::shared_ptr<detail::sem_state> state_;
};

}  // namespace gnio
