// SPDX-License-Identifier: Apache-2.0
// Test support for frames: reading a capture back with libpcap, and sending a
// frame from the host through a TX queue of a host-executor port. Header-only;
// the test links libpcap and GoogleTest.
#pragma once

#include <pcap/pcap.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <gnio/device/tx.hpp>

namespace gnio::test {

// Every frame of a capture, as captured (caplen bytes). A file that cannot be
// opened is a test failure and gives no frames; *link (when given) receives
// its link type.
inline std::vector<std::vector<uint8_t>> read_pcap(const std::string& path, int* link = nullptr) {
  std::vector<std::vector<uint8_t>> out;
  char err[PCAP_ERRBUF_SIZE];
  pcap_t* p = pcap_open_offline(path.c_str(), err);
  EXPECT_NE(p, nullptr) << path << ": " << err;
  if (!p) return out;
  if (link) *link = pcap_datalink(p);
  pcap_pkthdr* h;
  const u_char* d;
  while (pcap_next_ex(p, &h, &d) == 1) out.emplace_back(d, d + h->caplen);
  pcap_close(p);
  return out;
}

// Sends one frame from the host through a host-produced (or host-executor)
// TX queue: reserve, copy into the queue's buffer, describe, commit, ring.
inline void host_send(const gnio::device::txq& t, const std::vector<uint8_t>& f) {
  using namespace gnio::device;
  uint64_t idx = 0;
  ASSERT_EQ(tx_reserve(t, 1, 5'000'000'000ull, &idx), gnio::status::success);
  std::memcpy(t.buf_addr(idx), f.data(), f.size());
  tx_prepare(t, idx, t.buf_addr(idx), static_cast<uint32_t>(f.size()));
  tx_commit(t, 1);
  tx_doorbell(t);
}

}  // namespace gnio::test
