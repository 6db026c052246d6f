// SPDX-License-Identifier: Apache-2.0
// The pcap backend's reading path: a pcap or pcapng capture from memory
// (a stdio stream over the input, no file per input) through libpcap or the
// pcapng reader, the backend's header checks and its conversion of every link type it accepts
// (Ethernet, BSD loopback, raw IP, Linux cooked v1/v2) to Ethernet frames,
// then parse().
//
// Input: a capture file. Checks: the stream is closed exactly once, when the
// capture is refused or when its handle is closed, a delivered frame is
// within max_frame_bytes and either the record itself or the conversion
// buffer, its wire length is at least its length, a synthesized header
// carries IPv4/IPv6 EtherTypes for IP link types, and parse() of the frame
// stays inside it.
#include <gnio/device/pkt.hpp>
#include <gnio/log.hpp>

#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "check.hpp"
#include "pcap_reader.hpp"

using namespace gnio::backend;

namespace {

std::vector<uint8_t>& frame_buf() {
  static std::vector<uint8_t> b(pcap_detail::max_frame_bytes);
  return b;
}

// The input as a stdio stream that counts its closes: the reader takes the
// stream in every case, so it must be closed exactly once, whether the
// capture is refused or read to the end. (LeakSanitizer cannot see a FILE
// left open: glibc keeps every open FILE on a list.)
struct mem_stream {
  const uint8_t* data;
  size_t size, pos;
  int closes;
};

ssize_t mem_read(void* cookie, char* buf, size_t n) {
  auto* m = static_cast<mem_stream*>(cookie);
  const size_t k = n < m->size - m->pos ? n : m->size - m->pos;
  std::memcpy(buf, m->data + m->pos, k);
  m->pos += k;
  return static_cast<ssize_t>(k);
}

int mem_close(void* cookie) {
  ++static_cast<mem_stream*>(cookie)->closes;
  return 0;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  gnio::set_log_level(gnio::log_level::off);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  mem_stream m{data, size, 0, 0};
  FILE* f = fopencookie(&m, "rb", cookie_io_functions_t{mem_read, nullptr, nullptr, mem_close});
  if (!f) return 0;
  std::unique_ptr<pcap_detail::capture> p;
  if (gnio::error e = pcap_detail::open_capture_stream(f, data, size < 4 ? size : 4, "fuzz", &p)) {
    GNIO_FUZZ_CHECK(p == nullptr && !e.message().empty());
    GNIO_FUZZ_CHECK(m.closes == 1);
    return 0;
  }
  GNIO_FUZZ_CHECK(m.closes == 0);
  uint8_t* buf = frame_buf().data();
  const pcap_pkthdr* h = nullptr;
  const uint8_t* rec = nullptr;
  int dlt = 0;
  // A capture in 64 KiB of input cannot hold more; the cap keeps a bug in
  // end-of-file handling from looking like a slow input.
  for (int n = 0; n < 100000 && p->next(&h, &rec, &dlt) == 1; ++n) {
    const pcap_detail::converted c = pcap_detail::to_ethernet(dlt, buf, h, rec);
    if (c.problem) {
      GNIO_FUZZ_CHECK(c.data == nullptr);
      continue;
    }
    GNIO_FUZZ_CHECK(c.data == rec || c.data == buf);
    GNIO_FUZZ_CHECK(c.len >= 1 && c.len <= pcap_detail::max_frame_bytes);
    GNIO_FUZZ_CHECK(c.wire_len >= c.len);
    if (c.data == rec) {
      GNIO_FUZZ_CHECK(dlt == DLT_EN10MB && c.len <= h->caplen);
    } else {
      GNIO_FUZZ_CHECK(dlt != DLT_EN10MB && c.len >= 14);
      const uint16_t et = static_cast<uint16_t>(buf[12] << 8 | buf[13]);
      if (dlt == DLT_RAW || dlt == DLT_IPV4 || dlt == DLT_IPV6 || dlt == DLT_NULL || dlt == DLT_LOOP)
        GNIO_FUZZ_CHECK(et == gnio::device::ethertype_ipv4 || et == gnio::device::ethertype_ipv6);
    }
    gnio::device::parsed_pkt pp;
    const bool ok = gnio::device::parse(c.data, c.len, pp);
    GNIO_FUZZ_CHECK(ok == !pp.malformed);
    if (ok) GNIO_FUZZ_CHECK(pp.payload_off + pp.payload_len <= c.len);
  }
  p.reset();
  GNIO_FUZZ_CHECK(m.closes == 1);
  return 0;
}
