// SPDX-License-Identifier: Apache-2.0
#include "gnio/semaphore.hpp"

#include "internal.hpp"

namespace gnio {

using detail::fail;

detail::sem_state::~sem_state() {
  if (custom.host_ptr) gpu->dev->release(custom);
  if (items.host_ptr) gpu->dev->release(items);
  gpu->children.fetch_sub(1);
}

result<semaphore> semaphore::create(gpu& g, uint32_t num_items, uint32_t custom_bytes) {
  if (!g.valid()) return fail(status::bad_state, "semaphore: the gpu was destroyed or never opened");
  if (num_items == 0 || num_items > (1u << 20))
    return fail(status::invalid_value, "semaphore: num_items={} must be in [1, 1048576]", num_items);
  if (custom_bytes > (1u << 16))
    return fail(status::invalid_value, "semaphore: custom_bytes={} exceeds 65536", custom_bytes);
  auto items = g.state()->alloc(sizeof(device::sem_item) * num_items, mem_type::cpu_gpu);
  if (!items) return items.err();
  auto st = std::make_shared<detail::sem_state>();
  st->gpu = g.state();
  st->gpu->children.fetch_add(1);
  st->items = *items;
  st->num_items = num_items;
  st->custom_bytes = custom_bytes;
  if (custom_bytes) {
    // Items are 16-byte aligned; so is every custom record when custom_bytes is.
    auto c = g.state()->alloc(static_cast<size_t>(custom_bytes) * num_items, mem_type::cpu_gpu);
    if (!c) return c.err();
    st->custom = *c;
  }
  return semaphore(std::move(st));
}

device::sem semaphore::view() const {
  if (!state_) return {};
  return {static_cast<device::sem_item*>(state_->items.exec_ptr), static_cast<uint8_t*>(state_->custom.exec_ptr),
          state_->num_items, state_->custom_bytes};
}

device::sem semaphore::host_view() const {
  if (!state_) return {};
  return {static_cast<device::sem_item*>(state_->items.host_ptr), static_cast<uint8_t*>(state_->custom.host_ptr),
          state_->num_items, state_->custom_bytes};
}

semaphore::~semaphore() = default;

void semaphore::release() noexcept { detail::keep_until_exit(std::move(state_)); }

}  // namespace gnio
