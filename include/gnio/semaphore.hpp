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

// Owns its rings: move-only, freed by the destructor.
class semaphore {
 public:
  semaphore() = default;
  semaphore(semaphore&&) noexcept = default;
  semaphore& operator=(semaphore&&) noexcept = default;
  semaphore(const semaphore&) = delete;
  semaphore& operator=(const semaphore&) = delete;
  ~semaphore();
  [[nodiscard]] static result<semaphore> create(gpu& g, uint32_t num_items, uint32_t custom_bytes);
  [[nodiscard]] device::sem view() const;       // for kernels
  [[nodiscard]] device::sem host_view() const;  // for the host loop
  // Gives up the rings without freeing them (kept until the process exits,
  // for a kernel that may still write them); the handle is empty afterwards.
  void release() noexcept;
  [[nodiscard]] bool valid() const noexcept { return state_ != nullptr; }

 private:
  explicit semaphore(std::shared_ptr<detail::sem_state> s) : state_(std::move(s)) {}
  std::shared_ptr<detail::sem_state> state_;
};

}  // namespace gnio
