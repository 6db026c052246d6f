// SPDX-License-Identifier: Apache-2.0
// Writing packet bytes: big-endian stores for the code that builds frames
// (replies, the generator, tests), and the FNV-1a hash the tables use.
#pragma once

#include <gnio/device/pkt/load.hpp>

namespace gnio::device {

// Stores the low 16 bits of v big-endian at p (unaligned).
GNIO_HOST_DEVICE GNIO_FORCEINLINE void put16(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}

GNIO_HOST_DEVICE GNIO_FORCEINLINE void put32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}

inline constexpr uint64_t fnv1a64_offset = 1469598103934665603ull;

// 64-bit FNV-1a over n bytes, continuing from h: spreads keys over a table,
// nothing more (not a keyed or collision-resistant hash).
GNIO_HOST_DEVICE inline uint64_t fnv1a64(const void* data, uint32_t n, uint64_t h = fnv1a64_offset) {
  const auto* b = static_cast<const uint8_t*>(data);
  for (uint32_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

}  // namespace gnio::device
