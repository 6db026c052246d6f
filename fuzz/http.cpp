// SPDX-License-Identifier: Apache-2.0
// HTTP/1.x request and response line recognition and request-target copy.
//
// Input: a TCP payload. Checks: the path is copied only from requests, is a
// run of the input right after the method and its space with no space, CR
// or LF in it, is NUL-terminated inside the buffer, is cut (and says so) at
// every smaller buffer, and a response is never a request.
#include <gnio/device/pkt.hpp>

#include <cstring>
#include <initializer_list>

#include "check.hpp"

using namespace gnio::device;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 65535) return 0;
  const uint32_t len = static_cast<uint32_t>(size);
  const http_kind k = http_classify(data, len);
  if (k == http_kind::response) GNIO_FUZZ_CHECK(len >= 9 && std::memcmp(data, "HTTP/1.", 7) == 0);
  if (k != http_kind::not_http && k != http_kind::response) {
    // A request starts with a method token and a space.
    const void* sp = std::memchr(data, ' ', len);
    GNIO_FUZZ_CHECK(sp != nullptr);
  }

  char out[128];
  std::memset(out, 0x5a, sizeof out);
  bool cut = false;
  uint32_t rn = 0;
  const http_error re = http_request_path(data, len, out, sizeof out, &rn, &cut);
  const bool request = k != http_kind::not_http && k != http_kind::response;
  GNIO_FUZZ_CHECK((re == http_error::not_request) == !request);
  if (re == http_error::empty_target) GNIO_FUZZ_CHECK(out[0] == '\0');
  if (re != http_error::none) return 0;
  const int32_t r = static_cast<int32_t>(rn);
  GNIO_FUZZ_CHECK(r >= 1 && static_cast<size_t>(r) < sizeof out);
  GNIO_FUZZ_CHECK(out[r] == '\0');
  const auto* sp = static_cast<const uint8_t*>(std::memchr(data, ' ', len));
  const uint32_t start = static_cast<uint32_t>(sp - data) + 1;
  GNIO_FUZZ_CHECK(start + static_cast<uint32_t>(r) <= len);
  GNIO_FUZZ_CHECK(std::memcmp(out, data + start, static_cast<size_t>(r)) == 0);
  for (int32_t i = 0; i < r; ++i) GNIO_FUZZ_CHECK(out[i] != ' ' && out[i] != '\r' && out[i] != '\n');
  // The whole target: where it ends in the input.
  uint32_t end = start;
  while (end < len && data[end] != ' ' && data[end] != '\r' && data[end] != '\n') ++end;
  GNIO_FUZZ_CHECK(cut == (end - start > static_cast<uint32_t>(r) || end == len));

  // Smaller buffers cut the same text.
  for (uint32_t cap : {1u, 2u, 8u}) {
    char s[8];
    bool scut = false;
    uint32_t sr = 0;
    GNIO_FUZZ_CHECK(http_request_path(data, len, s, cap, &sr, &scut) == http_error::none);
    const uint32_t want = end - start < cap - 1 ? end - start : cap - 1;
    GNIO_FUZZ_CHECK(sr == want);
    GNIO_FUZZ_CHECK(s[sr] == '\0' && std::memcmp(s, data + start, want) == 0);
    GNIO_FUZZ_CHECK(scut == (want < end - start || end == len));
  }
  GNIO_FUZZ_CHECK(http_request_path(data, len, nullptr, 0, nullptr, nullptr) == http_error::no_room);
  return 0;
}
