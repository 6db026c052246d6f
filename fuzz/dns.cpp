// SPDX-License-Identifier: Apache-2.0
// The DNS decoders: header, sanity heuristic and (compressed, binary) names.
//
// Input: a DNS message as it would follow a UDP header. Checks: a name is
// read the same with and without an output buffer, fits the 255-byte wire
// limit, ends with NUL where it says, never reports an end outside the
// message, fails cleanly (out_too_small) with a short buffer, and the first
// question agrees with the name reader.
#include <gnio/device/pkt.hpp>

#include <cstring>

#include "check.hpp"

using namespace gnio::device;

namespace {

void check_name_at(const uint8_t* msg, uint32_t len, uint32_t off) {
  char out[dns_max_name_len + 2];
  uint32_t end = 0xffffffffu;
  const int32_t r = dns_read_name(msg, len, off, out, sizeof out, &end);
  const int32_t m = dns_read_name(msg, len, off, nullptr, 0, nullptr);
  // Measuring skips only the buffer checks.
  GNIO_FUZZ_CHECK(m == r || (r == dns_err_out_too_small && m >= 0));
  GNIO_FUZZ_CHECK(r >= dns_err_no_question);
  if (r < 0) return;
  // Text: labels plus dots, at most 254 for a wire name of 255 bytes.
  GNIO_FUZZ_CHECK(r >= 1 && static_cast<uint32_t>(r) < dns_max_name_len);
  GNIO_FUZZ_CHECK(out[r] == '\0');
  GNIO_FUZZ_CHECK(end > off && end <= len);
  // Too small by one: refused, nothing written past the cap.
  char small[dns_max_name_len + 2];
  std::memset(small, 0x5a, sizeof small);
  const uint32_t cap = static_cast<uint32_t>(r);  // room for the text but not its NUL
  GNIO_FUZZ_CHECK(dns_read_name(msg, len, off, small, cap, nullptr) == dns_err_out_too_small);
  for (uint32_t i = cap; i < sizeof small; ++i) GNIO_FUZZ_CHECK(small[i] == 0x5a);
  // Exactly enough: the same text.
  GNIO_FUZZ_CHECK(dns_read_name(msg, len, off, small, cap + 1, nullptr) == r);
  GNIO_FUZZ_CHECK(std::memcmp(small, out, cap + 1) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 65535) return 0;
  const uint32_t len = static_cast<uint32_t>(size);
  dns_header h;
  const bool hok = dns_parse_header(data, len, h);
  GNIO_FUZZ_CHECK(hok == (len >= dns_header_len));
  if (hok) {
    GNIO_FUZZ_CHECK(h.qr == ((h.flags & 0x8000) != 0) && h.rcode == (h.flags & 0xf));
    if (dns_header_sane(h, len)) GNIO_FUZZ_CHECK(h.qdcount >= 1 && h.qdcount <= 16);
  }

  // The question name, then names at a few other offsets (answers start
  // anywhere; every offset would make each input quadratic).
  char q[dns_max_name_len + 2];
  const int32_t qn = dns_qname(data, len, q, sizeof q);
  if (hok && h.qdcount > 0) {
    check_name_at(data, len, dns_header_len);
    char q2[dns_max_name_len + 2];
    uint16_t qtype = 0, qclass = 0;
    const int32_t fq = dns_first_question(data, len, q2, sizeof q2, qtype, qclass);
    GNIO_FUZZ_CHECK(fq == qn || (qn >= 0 && fq == dns_err_truncated));
    if (fq >= 0) GNIO_FUZZ_CHECK(std::memcmp(q, q2, static_cast<size_t>(fq) + 1) == 0);
  } else {
    GNIO_FUZZ_CHECK(qn < 0);
  }
  for (uint32_t off = dns_header_len + 1; off < len && off < dns_header_len + 48; off += 7)
    check_name_at(data, len, off);
  // No message at all.
  GNIO_FUZZ_CHECK(dns_read_name(nullptr, 0, 0, nullptr, 0) == dns_err_truncated);
  return 0;
}
