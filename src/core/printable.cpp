// SPDX-License-Identifier: Apache-2.0
#include "gnio/printable.hpp"

#include <cstdint>

namespace gnio {

namespace {

void hex(std::string& out, unsigned char c) {
  static constexpr char k_digits[] = "0123456789abcdef";
  out += "\\x";
  out += k_digits[c >> 4];
  out += k_digits[c & 15];
}

// Length of the valid UTF-8 sequence at s[i] (2..4), or 0. Overlong forms,
// surrogates and code points past U+10FFFF are not valid.
size_t utf8_length(std::string_view s, size_t i, uint32_t* cp) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  size_t n = 0;
  uint32_t v = 0, min = 0;
  if (b0 >= 0xc2 && b0 <= 0xdf) n = 2, v = b0 & 0x1f, min = 0x80;
  else if (b0 >= 0xe0 && b0 <= 0xef) n = 3, v = b0 & 0x0f, min = 0x800;
  else if (b0 >= 0xf0 && b0 <= 0xf4) n = 4, v = b0 & 0x07, min = 0x10000;
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xc0) != 0x80) return 0;
    v = (v << 6) | (b & 0x3f);
  }
  if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) return 0;
  *cp = v;
  return n;
}

}  // namespace

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      switch (c) {
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\\': out += "\\\\"; break;
        default:
          if (c < 0x20 || c == 0x7f) hex(out, c);
          else out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    uint32_t cp = 0;
    const size_t n = utf8_length(text, i, &cp);
    if (n == 0 || (cp >= 0x80 && cp <= 0x9f)) {
      // Not UTF-8, or a C1 control: every byte of it as \xHH.
      const size_t bytes = n == 0 ? 1 : n;
      for (size_t k = 0; k < bytes; ++k) hex(out, static_cast<unsigned char>(text[i + k]));
      i += bytes;
      continue;
    }
    out.append(text.substr(i, n));
    i += n;
  }
  return out;
}

}  // namespace gnio
