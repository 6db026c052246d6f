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

#include <gnio/device/pkt.hpp>
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

// Parses a captured frame of link type `link` where its packet starts, as
// the pcap backend hands it to the parser: Ethernet frames from byte 0, raw
// IP (DLT_RAW, LINKTYPE_IPV4/IPV6) from byte 0 and BSD loopback (DLT_NULL,
// DLT_LOOP) from byte 4, with parse_l3. *start receives that offset, which
// the parse result's offsets are relative to. Other link types are parsed
// as Ethernet.
inline bool parse_captured(int link, const std::vector<uint8_t>& f, gnio::device::parsed_pkt& p, uint32_t* start) {
  const uint32_t n = static_cast<uint32_t>(f.size());
  *start = 0;
  switch (link) {
    case DLT_RAW:
    case 101:  // LINKTYPE_RAW
    case 228:  // LINKTYPE_IPV4
    case 229:  // LINKTYPE_IPV6
      return gnio::device::parse_l3(f.data(), n, p);
    case DLT_NULL:
    case DLT_LOOP: *start = n < 4 ? n : 4; return gnio::device::parse_l3(f.data() + *start, n - *start, p);
    default: return gnio::device::parse(f.data(), n, p);
  }
}

// Sends one frame from the host through a host-produced (or host-executor)
// TX queue: reserve, copy into the queue's buffer, describe, commit, ring.
// not_before: the frame's send time (CLOCK_REALTIME ns, device::tx_prepare_at), 0 for none.
inline void host_send(const gnio::device::txq& t, const std::vector<uint8_t>& f, uint64_t not_before = 0) {
  using namespace gnio::device;
  uint64_t idx = 0;
  ASSERT_EQ(tx_reserve(t, 1, 5'000'000'000ull, &idx), gnio::status::success);
  std::memcpy(t.buf_addr(idx), f.data(), f.size());
  tx_prepare_at(t, idx, t.buf_addr(idx), static_cast<uint32_t>(f.size()), not_before);
  tx_commit(t, 1);
  tx_doorbell(t);
}

}  // namespace gnio::test
