// SPDX-License-Identifier: Apache-2.0
// The pcap backend's reading path, apart from files and ports, so that it can
// be driven from memory (the fuzz target does: fuzz/pcap.cpp).
#pragma once

#include <pcap/pcap.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "gnio/status.hpp"

namespace gnio::backend::pcap_detail {

// The largest frame delivered (what get_caps advertises as max_pkt_bytes);
// to_ethernet's buf must hold this many bytes.
inline constexpr uint32_t max_frame_bytes = 65535;

// A frame ready for the lane, or the reason a record could not become one.
struct converted {
  const uint8_t* data = nullptr;  // the record itself or buf
  uint32_t len = 0;               // <= max_frame_bytes
  uint32_t wire_len = 0;          // >= len
  const char* problem = nullptr;
};

// Reads the capture header from f with nanosecond timestamps and checks that
// the link type can be delivered as Ethernet. Takes f in every case: the
// handle owns it on success, and it is closed on failure. path names the
// capture in messages.
[[nodiscard]] error open_capture_stream(FILE* f, const std::string& path, pcap_t** out);

// Turns one record of link type dlt into an Ethernet frame, building a header
// in buf where the link type has none.
converted to_ethernet(int dlt, uint8_t* buf, const pcap_pkthdr* h, const uint8_t* data);

}  // namespace gnio::backend::pcap_detail
