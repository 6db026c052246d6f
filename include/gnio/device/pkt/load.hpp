// SPDX-License-Identifier: Apache-2.0
// Bounds-checked and unchecked big-endian loads from packet bytes, shared by
// every decoder in gnio/device/pkt/. Multi-byte fields are assembled from
// single byte loads because packet buffers carry no alignment guarantee (a
// 14-byte Ethernet header misaligns everything after it).
#pragma once

#include <gnio/device/config.hpp>

#include <cstdint>

namespace gnio::device {

using std::int32_t;
using std::uint16_t;
using std::uint32_t;
using std::uint64_t;
using std::uint8_t;

struct pkt_view {
  const uint8_t* data;
  uint32_t len;
  // The bytes at data that may be read, when fewer than len: a view of a
  // frame's inline headers (a completion's copy of its first bytes,
  // gnio/device/ring.hpp). has() answers false for bytes past them and marks
  // *short_read, and the caller parses again from the whole frame.
  uint32_t avail = 0xffffffffu;
  bool* short_read = nullptr;

  // Whether [off, off + n) is in the frame and may be read. Written as two
  // comparisons so off + n cannot wrap.
  GNIO_HOST_DEVICE GNIO_FORCEINLINE bool has(uint32_t off, uint32_t n) const {
    if (!(off <= len && n <= len - off)) return false;
    if (off <= avail && n <= avail - off) return true;
    if (short_read) *short_read = true;
    return false;
  }
};

// A frame whose first hdr_len bytes are read from hdr (a completion's inline
// headers, gnio/device/rx.hpp pkt_frame) and the rest from data, its buffer.
// For a frame read from its buffer alone, hdr == data and hdr_len == len.
struct frame_ref {
  const uint8_t* hdr;
  uint32_t hdr_len;  // <= len
  const uint8_t* data;
  uint32_t len;  // captured bytes
  // The copy's size (rxq::inline_bytes), hdr_len = min(len, hdr_cap): at()
  // picks hdr or data by it, so a byte of the copy is loaded without waiting
  // for len (one read across PCIe, not two in a row). ~0: hdr == data.
  uint32_t hdr_cap = ~0u;

  // Byte off of the frame, off < len.
  GNIO_HOST_DEVICE GNIO_FORCEINLINE uint8_t at(uint32_t off) const { return off < hdr_cap ? hdr[off] : data[off]; }
  // Whether every byte is at hdr: nothing needs the buffer.
  GNIO_HOST_DEVICE GNIO_FORCEINLINE bool whole() const { return hdr_len >= len; }
};

GNIO_HOST_DEVICE GNIO_FORCEINLINE frame_ref whole_frame(const uint8_t* data, uint32_t len) {
  return frame_ref{data, len, data, len};
}

namespace detail {

GNIO_HOST_DEVICE GNIO_FORCEINLINE bool fits(uint32_t len, uint32_t off, uint32_t n) {
  return off <= len && n <= len - off;
}
// Unchecked; callers have already proven the bytes are in range.
GNIO_HOST_DEVICE GNIO_FORCEINLINE uint16_t rd16(const uint8_t* p) {
  return static_cast<uint16_t>((static_cast<uint32_t>(p[0]) << 8) | p[1]);
}
GNIO_HOST_DEVICE GNIO_FORCEINLINE uint32_t rd32(const uint8_t* p) {
  return (static_cast<uint32_t>(p[0]) << 24) | (static_cast<uint32_t>(p[1]) << 16) |
         (static_cast<uint32_t>(p[2]) << 8) | static_cast<uint32_t>(p[3]);
}
GNIO_HOST_DEVICE GNIO_FORCEINLINE uint32_t min_u32(uint32_t a, uint32_t b) { return a < b ? a : b; }

}  // namespace detail

GNIO_HOST_DEVICE GNIO_FORCEINLINE bool load_u8(const pkt_view& v, uint32_t off, uint8_t& out) {
  if (!v.has(off, 1)) return false;
  out = v.data[off];
  return true;
}
GNIO_HOST_DEVICE GNIO_FORCEINLINE bool load_be16(const pkt_view& v, uint32_t off, uint16_t& out) {
  if (!v.has(off, 2)) return false;
  out = detail::rd16(v.data + off);
  return true;
}
GNIO_HOST_DEVICE GNIO_FORCEINLINE bool load_be32(const pkt_view& v, uint32_t off, uint32_t& out) {
  if (!v.has(off, 4)) return false;
  out = detail::rd32(v.data + off);
  return true;
}

}  // namespace gnio::device
