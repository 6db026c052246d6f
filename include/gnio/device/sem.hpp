// SPDX-License-Identifier: Apache-2.0
// GPU -> CPU semaphores: a ring of items the kernel fills and marks READY,
// and the host consumes and marks FREE (as in DOCA GPUNetIO).
#pragma once

#include <cstddef>

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

namespace detail {
// The item's status and num_pkts as one 8-byte word (status in the low half:
// the layout is little-endian on every agent gnio runs on). The status is
// only ever accessed atomically; num_pkts plainly only by sem_set_packet_info,
// whose store sem_set_status's release orders.
GNIO_HOST_DEVICE GNIO_FORCEINLINE uint64_t& sem_status_word(const sem& s, uint32_t i) noexcept {
  static_assert(offsetof(sem_item, status) == 0 && offsetof(sem_item, num_pkts) == 4, "status, num_pkts: one word");
  void* item = &s.items[i % s.num_items];
  return *static_cast<uint64_t*>(item);
}
}  // namespace detail

// Marks item i ready with num_pkts in the same 8-byte store, relaxed: no
// fence before it, so on the GPU it is one posted write across PCIe, where
// sem_set_status's release store first waits until every earlier write of the
// thread is performed at system scope (a round trip). For a kernel whose
// report fits in the count: nothing else written to the item (custom bytes,
// first_pkt) is ordered before it, so the CPU must read only status and count,
// with sem_get_status_count(). The CPU frees the item with sem_set_status.
GNIO_HOST_DEVICE GNIO_FORCEINLINE void sem_set_ready_count(const sem& s, uint32_t i, uint32_t num_pkts) noexcept {
  // Pairs with the load in sem_get_status_count(): one single-copy-atomic
  // word, so status and count arrive together without a fence.
  sys_atomic_ref<uint64_t>(detail::sem_status_word(s, i))
      .store(uint64_t{num_pkts} << 32 | static_cast<uint32_t>(sem_status::ready), cuda::std::memory_order_relaxed);
}

// Reads item i's status and num_pkts in one load (sem_set_ready_count).
GNIO_HOST_DEVICE GNIO_FORCEINLINE sem_status sem_get_status_count(const sem& s, uint32_t i,
                                                                  uint32_t* num_pkts) noexcept {
  // Pairs with the store in sem_set_ready_count() (the word carries both) and
  // with sem_set_status()'s release store, for items marked that way.
  const uint64_t w = sys_atomic_ref<uint64_t>(detail::sem_status_word(s, i)).load(cuda::std::memory_order_acquire);
  *num_pkts = static_cast<uint32_t>(w >> 32);
  return static_cast<sem_status>(static_cast<uint32_t>(w));
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
