// SPDX-License-Identifier: Apache-2.0
// The pcap backend's reading path, apart from files and ports, so that it can
// be driven from memory (the fuzz target does: fuzz/pcap.cpp).
#pragma once

#include <pcap/pcap.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "gnio/status.hpp"

namespace gnio::backend::pcap_detail {

// The largest frame delivered (what get_caps advertises as max_pkt_bytes);
// to_ethernet's buf must hold this many bytes.
inline constexpr uint32_t max_frame_bytes = 65535;

// The largest pcapng block read (libpcap's own limit): a block claiming more
// has a damaged length field.
inline constexpr uint32_t max_pcapng_block = 16u << 20;

// A frame ready for the lane, or the reason a record could not become one.
struct converted {
  const uint8_t* data = nullptr;  // the record itself or buf
  uint32_t len = 0;               // <= max_frame_bytes
  uint32_t wire_len = 0;          // >= len
  const char* problem = nullptr;
};

struct pcapng_state;
// Closes the pcapng reader's stream and frees it (pcapng.cpp).
struct pcapng_deleter {
  void operator()(pcapng_state* st) const;
};

// One open capture. pcap files are read by libpcap. pcapng files are read by
// the reader in pcapng.cpp: a libpcap handle has one link type, and libpcap
// 1.10 refuses, as a read error, any later interface whose link type or snap
// length differs from the first one's, where tshark (and the format) give
// every interface its own. Move-only; closes its stream.
class capture {
 public:
  capture() = default;
  capture(const capture&) = delete;
  capture& operator=(const capture&) = delete;
  ~capture();

  // 1: *h, *data and *dlt describe the next record (valid until the next
  // call; timestamps in nanoseconds, in h->ts.tv_usec); -2: the end of the
  // capture; -1: a damaged or truncated record, described by error_text().
  int next(const pcap_pkthdr** h, const uint8_t** data, int* dlt);
  // The link type of the first interface: the one a pcap file has, and the
  // one a pcapng file must be able to deliver to be opened.
  [[nodiscard]] int linktype() const { return dlt_; }
  [[nodiscard]] std::string error_text() const;
  [[nodiscard]] bool is_pcapng() const { return ng_ != nullptr; }

 private:
  friend error open_capture_stream(FILE* f, const uint8_t* head, size_t head_len, const std::string& path,
                                   std::unique_ptr<capture>* out);
  pcap_t* lp_ = nullptr;
  std::unique_ptr<pcapng_state, pcapng_deleter> ng_;
  int dlt_ = DLT_EN10MB;
};

// Reads the capture header from f (whose first head_len bytes, not yet
// consumed from f, are head: enough to tell pcap from pcapng) and checks that
// the link type can be delivered as Ethernet. Takes f in every case: the
// capture owns it on success, and it is closed on failure. path names the
// capture in messages.
[[nodiscard]] error open_capture_stream(FILE* f, const uint8_t* head, size_t head_len, const std::string& path,
                                        std::unique_ptr<capture>* out);

// The pcapng reader behind capture (pcapng.cpp). open_pcapng_stream takes f
// in every case, like open_capture_stream, and gives the first interface's
// link type; next_pcapng returns as capture::next does.
[[nodiscard]] error open_pcapng_stream(FILE* f, const std::string& path,
                                       std::unique_ptr<pcapng_state, pcapng_deleter>* out, int* first_dlt);
int next_pcapng(pcapng_state& st, const pcap_pkthdr** h, const uint8_t** data, int* dlt);
[[nodiscard]] const std::string& pcapng_error(const pcapng_state& st);

// Turns one record of link type dlt into an Ethernet frame, building a header
// in buf where the link type has none.
converted to_ethernet(int dlt, uint8_t* buf, const pcap_pkthdr* h, const uint8_t* data);

}  // namespace gnio::backend::pcap_detail
