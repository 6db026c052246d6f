// SPDX-License-Identifier: Apache-2.0
// The engine's table-driven RSS hash must equal the device-side Toeplitz hash
// (which pkt_test checks against Microsoft's published vectors).
#include <random>

#include <gtest/gtest.h>

#include "internal.hpp"

TEST(Steering, TableToeplitzEqualsDeviceToeplitz) {
  std::mt19937 rng(42);
  for (int i = 0; i < 20000; ++i) {
    gnio::device::flow_key k{};
    k.family = (i % 3 == 0) ? 6 : 4;
    for (auto& b : k.src) b = static_cast<uint8_t>(rng());
    for (auto& b : k.dst) b = static_cast<uint8_t>(rng());
    if (k.family == 4)
      for (int j = 4; j < 16; ++j) k.src[j] = k.dst[j] = 0;
    k.src_port = static_cast<uint16_t>(rng());
    k.dst_port = static_cast<uint16_t>(rng());
    k.proto = 6;
    ASSERT_EQ(gnio::detail::steering_hash(k), gnio::device::flow_hash(k)) << i;
  }
  gnio::device::flow_key none{};
  EXPECT_EQ(gnio::detail::steering_hash(none), 0u);
}
