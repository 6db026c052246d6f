// SPDX-License-Identifier: Apache-2.0
// HTTP/1.x: classifying the start of a message and reading a request target.
#pragma once

#include <gnio/device/pkt/load.hpp>

namespace gnio::device {

enum class http_kind : uint8_t { not_http = 0, get, head, post, put, del, options, other_request, response };

namespace detail {
GNIO_HOST_DEVICE GNIO_FORCEINLINE bool starts_with(const uint8_t* p, uint32_t len, const char* s, uint32_t n) {
  if (len < n) return false;
  for (uint32_t i = 0; i < n; ++i) {
    if (p[i] != static_cast<uint8_t>(s[i])) return false;
  }
  return true;
}
GNIO_HOST_DEVICE GNIO_FORCEINLINE bool is_upper(uint8_t c) { return c >= 'A' && c <= 'Z'; }
inline constexpr uint32_t http_max_method = 20;
}  // namespace detail

// Classifies the first bytes of a TCP payload. Unknown all-caps tokens count as
// requests only when followed by an origin ("/...") or "*" target, to keep
// arbitrary text from matching.
GNIO_HOST_DEVICE inline http_kind http_classify(const uint8_t* p, uint32_t len) {
  using detail::starts_with;
  if (p == nullptr) return http_kind::not_http;
  if (starts_with(p, len, "HTTP/1.", 7)) {
    return (len >= 9 && p[7] >= '0' && p[7] <= '9' && p[8] == ' ') ? http_kind::response : http_kind::not_http;
  }
  if (starts_with(p, len, "GET ", 4)) return http_kind::get;
  if (starts_with(p, len, "HEAD ", 5)) return http_kind::head;
  if (starts_with(p, len, "POST ", 5)) return http_kind::post;
  if (starts_with(p, len, "PUT ", 4)) return http_kind::put;
  if (starts_with(p, len, "DELETE ", 7)) return http_kind::del;
  if (starts_with(p, len, "OPTIONS ", 8)) return http_kind::options;
  if (starts_with(p, len, "CONNECT ", 8) || starts_with(p, len, "PATCH ", 6) || starts_with(p, len, "TRACE ", 6)) {
    return http_kind::other_request;
  }
  // "PRI * HTTP/2.0" is HTTP/2's connection preface (RFC 9113 3.4), not an
  // HTTP/1.x request; tshark shows it as HTTP2.
  if (starts_with(p, len, "PRI ", 4)) return http_kind::not_http;
  uint32_t i = 0;
  while (i < len && i < detail::http_max_method && (detail::is_upper(p[i]) || p[i] == '-' || p[i] == '_')) ++i;
  if (i == 0 || i + 1 >= len || p[i] != ' ') return http_kind::not_http;
  return (p[i + 1] == '/' || p[i + 1] == '*') ? http_kind::other_request : http_kind::not_http;
}

// Why http_request_path found no target; none when it did.
enum class http_error : uint8_t {
  none = 0,
  not_request,   // the data does not start with a request line
  empty_target,  // the method is followed by an empty target
  no_room,       // out is null or out_cap is 0
};

// Copies the request target (up to space/CR/LF/end of data) into out, NUL-
// terminated, cut to out_cap - 1 bytes; *out_len receives the bytes written.
// *truncated (if given) is set when the copy was cut or the data ended before
// the target did.
GNIO_HOST_DEVICE inline http_error http_request_path(const uint8_t* p, uint32_t len, char* out, uint32_t out_cap,
                                                     uint32_t* out_len, bool* truncated = nullptr) {
  if (truncated != nullptr) *truncated = false;
  if (out_len != nullptr) *out_len = 0;
  const http_kind k = http_classify(p, len);
  if (k == http_kind::not_http || k == http_kind::response) return http_error::not_request;
  if (out == nullptr || out_cap == 0) return http_error::no_room;
  uint32_t i = 0;
  while (i < len && p[i] != ' ') ++i;  // classify proved a space exists
  ++i;
  uint32_t start = i;
  while (i < len && p[i] != ' ' && p[i] != '\r' && p[i] != '\n') ++i;
  const uint32_t n = i - start;
  if (n == 0) {
    out[0] = '\0';
    return http_error::empty_target;
  }
  const uint32_t w = n < out_cap - 1 ? n : out_cap - 1;
  for (uint32_t j = 0; j < w; ++j) out[j] = static_cast<char>(p[start + j]);
  out[w] = '\0';
  if (truncated != nullptr) *truncated = (w < n) || (i == len);
  if (out_len != nullptr) *out_len = w;
  return http_error::none;
}

}  // namespace gnio::device
