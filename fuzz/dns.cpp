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
  uint32_t end = 0xffffffffu, n = 0, m = 0;
  const dns_error r = dns_read_name(msg, len, off, out, sizeof out, &n, &end);
  const dns_error rm = dns_read_name(msg, len, off, nullptr, 0, &m, nullptr);
  // Measuring skips only the buffer checks.
  GNIO_FUZZ_CHECK(rm == r || (r == dns_error::out_too_small && rm == dns_error::none));
  GNIO_FUZZ_CHECK(r != dns_error::no_question);
  if (r != dns_error::none) return;
  GNIO_FUZZ_CHECK(m == n);
  // Text: labels plus dots, at most 254 for a wire name of 255 bytes.
  GNIO_FUZZ_CHECK(n >= 1 && n < dns_max_name_len);
  GNIO_FUZZ_CHECK(out[n] == '\0');
  GNIO_FUZZ_CHECK(end > off && end <= len);
  // Too small by one: refused, nothing written past the cap.
  char small[dns_max_name_len + 2];
  std::memset(small, 0x5a, sizeof small);
  const uint32_t cap = n;  // room for the text but not its NUL
  uint32_t k = 0;
  GNIO_FUZZ_CHECK(dns_read_name(msg, len, off, small, cap, &k, nullptr) == dns_error::out_too_small);
  GNIO_FUZZ_CHECK(k < cap);
  for (uint32_t i = cap; i < sizeof small; ++i) GNIO_FUZZ_CHECK(small[i] == 0x5a);
  // Exactly enough: the same text.
  GNIO_FUZZ_CHECK(dns_read_name(msg, len, off, small, cap + 1, &k, nullptr) == dns_error::none && k == n);
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
    // An inverse query (opcode 1) may ask with no question (RFC 1035 6.4).
    if (dns_header_sane(h, len)) GNIO_FUZZ_CHECK((h.qdcount >= 1 || h.opcode == 1) && h.qdcount <= 16);
  }

  // The question name, then names at a few other offsets (answers start
  // anywhere; every offset would make each input quadratic).
  char q[dns_max_name_len + 2];
  uint32_t qlen = 0;
  const dns_error qn = dns_qname(data, len, q, sizeof q, &qlen);
  if (hok && h.qdcount > 0) {
    check_name_at(data, len, dns_header_len);
    char q2[dns_max_name_len + 2];
    uint16_t qtype = 0, qclass = 0;
    uint32_t flen = 0;
    const dns_error fq = dns_first_question(data, len, q2, sizeof q2, &flen, qtype, qclass);
    GNIO_FUZZ_CHECK(fq == qn || (qn == dns_error::none && fq == dns_error::truncated));
    if (fq == dns_error::none) GNIO_FUZZ_CHECK(flen == qlen && std::memcmp(q, q2, static_cast<size_t>(flen) + 1) == 0);
  } else {
    GNIO_FUZZ_CHECK(qn != dns_error::none);
  }
  for (uint32_t off = dns_header_len + 1; off < len && off < dns_header_len + 48; off += 7)
    check_name_at(data, len, off);
  // No message at all.
  GNIO_FUZZ_CHECK(dns_read_name(nullptr, 0, 0, nullptr, 0, nullptr) == dns_error::truncated);
  return 0;
}
