// SPDX-License-Identifier: Apache-2.0
// GPU -> CPU semaphores: a ring of items the kernel fills and marks READY,
// and the host consumes and marks FREE (as in DOCA GPUNetIO).
#pragma once

#include "gnio/device/exec.hpp"

namespace gnio::device {

GNIO_HOST_DEVICE GNIO_FORCEINLINE sem_status sem_get_status(const sem& s, uint32_t i) noexcept {
  // Pairs with the release store in sem_set_status() by the other side: the
  // item's packet info and custom bytes written before it are visible.
  return static_cast<sem_status>(
      sys_atomic_ref<uint32_t>(s.items[i % s.num_items].status).load(cuda::std::memory_order_acquire));
}

GNIO_HOST_DEVICE GNIO_FORCEINLINE void sem_set_status(const sem& s, uint32_t i, sem_status st) noexcept {
  // Pairs with the acquire load in sem_get_status() by the other side.
  sys_atomic_ref<uint32_t>(s.items[i % s.num_items].status)
      .store(static_cast<uint32_t>(st), cuda::std::memory_order_release);
}

GNIO_HOST_DEVICE GNIO_FORCEINLINE void sem_set_packet_info(const sem& s, uint32_t i, uint64_t first_pkt,
                                                           uint32_t num_pkts) noexcept {
  sem_item& it = s.items[i % s.num_items];
  it.first_pkt = first_pkt;
  it.num_pkts = num_pkts;
}

GNIO_HOST_DEVICE GNIO_FORCEINLINE uint8_t* sem_custom(const sem& s, uint32_t i) noexcept {
  return s.custom + static_cast<uint64_t>(i % s.num_items) * s.custom_bytes;
}

template <class T>
GNIO_HOST_DEVICE GNIO_FORCEINLINE T* sem_custom_as(const sem& s, uint32_t i) noexcept {
  return reinterpret_cast<T*>(sem_custom(s, i));
}

}  // namespace gnio::device
