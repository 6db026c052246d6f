// SPDX-License-Identifier: Apache-2.0
// IPv4 and IPv6 fragment reassembly for kernel bodies (CUDA block or host
// thread), over a table in caller-provided memory.
//
// Fragments of a datagram are matched on family, source, destination and the
// IPv4 identification plus protocol, or the IPv6 Fragment header's
// identification. When the last missing piece arrives, frag_input() hands
// back the whole datagram starting at its IP header, laid out as if it had
// never been fragmented, so parse_l3() decodes its L4 header and payload:
//
//   IPv4: the header of the fragment at offset 0 (options kept), with MF and
//         the fragment offset cleared (DF and the reserved bit as received),
//         the total length and the header checksum recomputed;
//   IPv6: the fixed header and the extension headers that preceded the
//         Fragment header in the fragment at offset 0, the Fragment header
//         removed (the next-header byte that named it now names what it
//         named), the payload length recomputed.
//
// Only parsed_pkt's l3, l3_off, is_fragment and IP fields are used, with the
// frame bytes from l3_off on, so a fragment behind a tunnel header is handled
// like one at offset 14. parse() flags the first fragment of a UDP datagram
// as malformed (its UDP length runs past the fragment); frag_input() ignores
// `malformed` and checks the IP layer itself against `len`.
//
// Rules (each outcome is counted in frag_stats):
//   - A fragment that cannot be part of any datagram is dropped as `bad`:
//     not fully captured, no data, a non-last fragment whose length is not a
//     multiple of 8, or offset + length past 65535.
//   - A fragment that contradicts the end of its datagram (a second last
//     fragment with another end, data past the end a last fragment fixed, a
//     last fragment ending before data already held) drops the whole datagram
//     as `bad`, as Linux does.
//   - An exact duplicate (every 8-byte unit already held, the same bytes, no
//     first or last flag that was missing) is dropped as `duplicates`; the
//     datagram is untouched.
//   - Any other overlap counts `overlapping`. IPv6 (RFC 5722): the whole
//     datagram is dropped, fragments still to come included (they start a new
//     entry that cannot complete without the dropped ones and times out).
//     IPv4: the bytes received first are kept and only the units not yet held
//     are taken from the new fragment, which then counts like any other.
//     tshark 4.0 differs in both: it reassembles IPv6 overlaps too, and where
//     IPv4 bytes conflict it keeps those of the fragment with the lower offset
//     (tests/data/frag/make_frag.py, cases 8 and 11).
//   - A datagram longer than max_datagram, an IPv6 unfragmentable part longer
//     than frag_header_room, and a fragment of a new datagram that finds no
//     free slot among the frag_probe_limit slots from the one its key hashes
//     to (expired ones are freed first, so a full table takes a slot whose
//     datagram has timed out) are dropped as `over_limit` (the first two drop
//     the datagram).
//   - A datagram not completed within timeout_ns of its first fragment is
//     dropped as `timed_out` when its slot is looked at (by frag_input() for
//     a fragment that hashes near it, or by frag_expire()).
//
// Concurrency: none. One table belongs to one thread (one per RX queue),
// which feeds it fragments in arrival order; nothing here is atomic and no
// two threads may call these functions on the same table.
#pragma once

#include <gnio/device/pkt.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
// The big functions stay calls in a kernel: inlined, each would add its
// registers to every thread of the kernel that parses packets.
#define GNIO_FRAG_NOINLINE __noinline__
#else
#define GNIO_FRAG_NOINLINE
#endif

namespace gnio::device {

enum class frag_result : uint8_t {
  not_fragment,  // not an IPv4/IPv6 fragment: nothing done, nothing counted
  incomplete,    // held; the datagram still misses data
  complete,      // this fragment completed its datagram: *out, *out_len hold it
  dropped,       // not held (bad, duplicate, IPv6 overlap, over limit)
};

// Counters a caller sums per queue. fragments counts every call that did not
// return not_fragment; each dropped return adds 1 to exactly one of
// duplicates, overlapping, over_limit or bad, and each complete return 1 to
// reassembled.
struct frag_stats {
  uint64_t fragments;
  uint64_t reassembled;
  uint64_t timed_out;    // datagrams
  uint64_t overlapping;  // fragments overlapping held data (not exact duplicates)
  uint64_t duplicates;   // fragments
  uint64_t over_limit;   // datagram longer than max_datagram, or no free slot
  uint64_t bad;          // inconsistent fragments (see the rules above)
};

enum : uint8_t { frag_slot_empty = 0, frag_slot_pending = 1 };
enum : uint8_t { frag_have_first = 1, frag_have_last = 2 };

// One datagram being reassembled. All zero = empty.
struct frag_slot {
  uint64_t first_ns;    // when its first fragment (in arrival order) came
  uint32_t id;          // IPv4 identification or IPv6 fragment identification
  uint32_t units_held;  // 8-byte units of the payload received
  uint32_t total_len;   // payload bytes (after the header), known once the last fragment came
  uint32_t max_end;     // the highest payload end received
  uint16_t hdr_len;     // bytes of the kept header (known once the offset-0 fragment came)
  uint16_t nh_off;      // IPv6: where, in the kept header, the byte that named the Fragment header is
  uint8_t state;        // frag_slot_*
  uint8_t family;       // 4 or 6
  uint8_t proto;        // IPv4: protocol (part of the key); IPv6: the Fragment header's next header
  uint8_t flags;        // frag_have_*
  uint8_t src[16];      // IPv4: the first 4 bytes, network order
  uint8_t dst[16];
};

// Bytes kept in front of each slot's payload for the datagram's header, so
// the reassembled datagram is contiguous without a move: an IPv4 header is
// at most 60 bytes; an IPv6 unfragmentable part longer than this is
// over_limit.
inline constexpr uint32_t frag_header_room = 256;
// The largest max_datagram: an IPv6 datagram with a full 65535-byte payload.
inline constexpr uint32_t frag_max_datagram_limit = 40 + 65535;
// Slots looked at per fragment, from the one its key hashes to.
inline constexpr uint32_t frag_probe_limit = 16;

struct frag_table {
  frag_slot* slots;
  uint32_t capacity;      // a power of two
  uint8_t* buffers;       // capacity * frag_slot_stride(max_datagram) bytes
  uint32_t max_datagram;  // the longest datagram reassembled, header included
  uint64_t timeout_ns;
};

// Per slot: header room, payload area, then the bitmap of received 8-byte
// units (max_datagram / 8 bits, rounded up to whole 8-byte words).
GNIO_HOST_DEVICE inline uint32_t frag_bitmap_bytes(uint32_t max_datagram) {
  const uint32_t units = (max_datagram + 7) / 8;
  return (units + 63) / 64 * 8;
}
GNIO_HOST_DEVICE inline uint64_t frag_slot_stride(uint32_t max_datagram) {
  return static_cast<uint64_t>(frag_header_room) + (max_datagram + 7u) / 8u * 8u + frag_bitmap_bytes(max_datagram);
}

// Bytes frag_table_init() needs for a table of `capacity` slots holding
// datagrams of up to max_datagram bytes (slots first, then the buffers).
GNIO_HOST_DEVICE inline uint64_t frag_table_bytes(uint32_t capacity, uint32_t max_datagram) {
  const uint64_t slots = (static_cast<uint64_t>(capacity) * sizeof(frag_slot) + 63) / 64 * 64;
  return slots + static_cast<uint64_t>(capacity) * frag_slot_stride(max_datagram);
}

// Lays a table out over `mem` without touching it, for memory the caller
// cannot write from here (GPU memory) and has zeroed itself, as gnio's
// allocations are. Returns false, changing nothing, when capacity is not a
// power of two, max_datagram is outside [68, frag_max_datagram_limit], or
// mem is null, misaligned (8 bytes) or smaller than
// frag_table_bytes(capacity, max_datagram).
[[nodiscard]] GNIO_HOST_DEVICE inline bool frag_table_layout(void* mem, uint64_t bytes, uint32_t capacity,
                                                             uint32_t max_datagram, uint64_t timeout_ns,
                                                             frag_table& out) {
  if (mem == nullptr || (reinterpret_cast<uintptr_t>(mem) & 7u) != 0) return false;
  if (capacity == 0 || (capacity & (capacity - 1)) != 0) return false;
  if (max_datagram < 68 || max_datagram > frag_max_datagram_limit) return false;
  if (bytes < frag_table_bytes(capacity, max_datagram)) return false;
  const uint64_t slot_bytes = (static_cast<uint64_t>(capacity) * sizeof(frag_slot) + 63) / 64 * 64;
  out.slots = static_cast<frag_slot*>(mem);
  out.capacity = capacity;
  out.buffers = static_cast<uint8_t*>(mem) + slot_bytes;
  out.max_datagram = max_datagram;
  out.timeout_ns = timeout_ns;
  return true;
}

// Host: lays a table out in `mem` (frag_table_layout) and zeroes its slots,
// for memory this thread can write. The same checks as frag_table_layout.
[[nodiscard]] inline bool frag_table_init(void* mem, size_t bytes, uint32_t capacity, uint32_t max_datagram,
                                          uint64_t timeout_ns, frag_table& out) {
  frag_table t{};
  if (!frag_table_layout(mem, bytes, capacity, max_datagram, timeout_ns, t)) return false;
  std::memset(mem, 0, static_cast<size_t>(reinterpret_cast<uint8_t*>(t.buffers) - static_cast<uint8_t*>(mem)));
  out = t;
  return true;
}

namespace detail {

// What frag_input needs from one fragment, checked against the frame.
struct frag_piece {
  const uint8_t* hdr;   // the IP header (l3_off)
  const uint8_t* data;  // the fragment's data
  uint32_t hdr_len;     // IPv4: header with options; IPv6: unfragmentable part
  uint32_t nh_off;      // IPv6: offset of the next-header byte naming the Fragment header
  uint32_t offset;      // bytes
  uint32_t len;
  uint32_t id;
  uint8_t family;
  uint8_t proto;  // IPv4 protocol or the Fragment header's next header
  bool more;
  uint8_t src[16];
  uint8_t dst[16];
};

enum class frag_piece_kind : uint8_t { not_fragment, ok, bad };

GNIO_HOST_DEVICE inline frag_piece_kind frag_describe(const uint8_t* frame, uint32_t len, const parsed_pkt& p,
                                                      frag_piece& f) {
  if (frame == nullptr || !p.is_fragment) return frag_piece_kind::not_fragment;
  const uint32_t off = p.l3_off;
  if (p.l3 == l3_kind::ipv4) {
    f.family = 4;
    if (!fits(len, off, 20)) return frag_piece_kind::bad;
    const uint32_t hl = p.ipv4.hdr_len;
    const uint32_t tl = p.ipv4.total_length;
    if (hl < 20 || tl < hl || !fits(len, off, tl)) return frag_piece_kind::bad;
    const uint8_t* h = frame + off;
    f.hdr = h;
    f.data = h + hl;
    f.hdr_len = hl;
    f.nh_off = 0;
    f.offset = static_cast<uint32_t>(p.ipv4.frag_offset) * 8;
    f.len = tl - hl;
    f.more = p.ipv4.mf;
    f.id = p.ipv4.id;
    f.proto = p.ipv4.proto;
    for (uint32_t i = 0; i < 16; ++i) f.src[i] = f.dst[i] = 0;
    for (uint32_t i = 0; i < 4; ++i) {
      f.src[i] = static_cast<uint8_t>(p.ipv4.src >> (24 - 8 * i));
      f.dst[i] = static_cast<uint8_t>(p.ipv4.dst >> (24 - 8 * i));
    }
    return frag_piece_kind::ok;
  }
  if (p.l3 != l3_kind::ipv6 || !p.ipv6.has_frag_header) return frag_piece_kind::not_fragment;
  f.family = 6;
  if (!fits(len, off, 40)) return frag_piece_kind::bad;
  const uint8_t* h = frame + off;
  const uint32_t plen = rd16(h + 4);
  // A jumbogram cannot be fragmented (RFC 2675), and a Fragment header needs 8 bytes.
  if (plen < 8 || !fits(len, off, 40 + plen)) return frag_piece_kind::bad;
  const uint32_t end = 40 + plen;  // relative to the IP header
  uint32_t cur = 40, nh_pos = 6;
  uint8_t nh = h[6];
  // Find the Fragment header behind whatever extension headers precede it.
  for (uint32_t n = 0;; ++n) {
    if (nh == ipproto_fragment) break;
    if (n == max_ipv6_ext_headers) return frag_piece_kind::bad;
    if (nh != ipproto_hopopts && nh != ipproto_routing && nh != ipproto_dstopts && nh != ipproto_ah)
      return frag_piece_kind::bad;  // parse() saw a Fragment header; these bytes disagree
    if (!fits(end, cur, 8)) return frag_piece_kind::bad;
    const uint32_t ehl =
        nh == ipproto_ah ? (static_cast<uint32_t>(h[cur + 1]) + 2) * 4 : (static_cast<uint32_t>(h[cur + 1]) + 1) * 8;
    if (!fits(end, cur, ehl)) return frag_piece_kind::bad;
    nh_pos = cur;
    nh = h[cur];
    cur += ehl;
  }
  if (!fits(end, cur, 8)) return frag_piece_kind::bad;
  const uint8_t* fh = h + cur;
  const uint16_t fo = rd16(fh + 2);
  f.hdr = h;
  f.data = fh + 8;
  f.hdr_len = cur;
  f.nh_off = nh_pos;
  f.offset = fo & 0xfff8u;
  f.len = end - (cur + 8);
  f.more = (fo & 1u) != 0;
  f.id = rd32(fh + 4);
  f.proto = fh[0];
  for (uint32_t i = 0; i < 16; ++i) {
    f.src[i] = h[8 + i];
    f.dst[i] = h[24 + i];
  }
  return frag_piece_kind::ok;
}

GNIO_HOST_DEVICE inline uint32_t frag_hash(const frag_piece& f) {
  // FNV-1a over the key: the table only needs spreading.
  uint32_t h = 2166136261u;
  auto mix = [&h](uint8_t b) { h = (h ^ b) * 16777619u; };
  mix(f.family);
  mix(f.family == 4 ? f.proto : 0);
  for (uint32_t i = 0; i < 4; ++i) mix(static_cast<uint8_t>(f.id >> (8 * i)));
  const uint32_t alen = f.family == 6 ? 16u : 4u;
  for (uint32_t i = 0; i < alen; ++i) {
    mix(f.src[i]);
    mix(f.dst[i]);
  }
  return h;
}

GNIO_HOST_DEVICE inline bool frag_key_matches(const frag_slot& s, const frag_piece& f) {
  if (s.family != f.family || s.id != f.id) return false;
  if (f.family == 4 && s.proto != f.proto) return false;
  for (uint32_t i = 0; i < 16; ++i)
    if (s.src[i] != f.src[i] || s.dst[i] != f.dst[i]) return false;
  return true;
}

GNIO_HOST_DEVICE GNIO_FORCEINLINE bool frag_expired(const frag_table& t, const frag_slot& s, uint64_t now_ns) {
  // A clock that went backwards never expires anything.
  return now_ns > s.first_ns && now_ns - s.first_ns >= t.timeout_ns;
}

GNIO_HOST_DEVICE GNIO_FORCEINLINE uint8_t* frag_buffer(const frag_table& t, uint32_t idx) {
  return t.buffers + static_cast<uint64_t>(idx) * frag_slot_stride(t.max_datagram);
}

GNIO_HOST_DEVICE GNIO_FORCEINLINE bool frag_bit(const uint8_t* bm, uint32_t u) { return (bm[u >> 3] >> (u & 7)) & 1u; }
GNIO_HOST_DEVICE GNIO_FORCEINLINE void frag_set_bit(uint8_t* bm, uint32_t u) {
  bm[u >> 3] = static_cast<uint8_t>(bm[u >> 3] | (1u << (u & 7)));
}

GNIO_HOST_DEVICE GNIO_FORCEINLINE void frag_copy(uint8_t* dst, const uint8_t* src, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) dst[i] = src[i];
}

// Puts the header in front of the payload and patches it (see the top of
// this file). Returns false when the result would not fit its length field.
GNIO_HOST_DEVICE inline bool frag_finish(frag_slot& s, uint8_t* buf, const uint8_t** out, uint32_t* out_len) {
  uint8_t* h = buf + frag_header_room - s.hdr_len;
  const uint32_t total = s.hdr_len + s.total_len;
  if (s.family == 4) {
    if (total > 0xffffu) return false;
    h[2] = static_cast<uint8_t>(total >> 8);
    h[3] = static_cast<uint8_t>(total);
    h[6] &= 0xc0;  // keep DF and the reserved bit; clear MF and the offset
    h[7] = 0;
    h[10] = h[11] = 0;
    const uint16_t c = ipv4_header_checksum(h, s.hdr_len);
    h[10] = static_cast<uint8_t>(c >> 8);
    h[11] = static_cast<uint8_t>(c);
  } else {
    const uint32_t plen = total - 40;
    if (plen > 0xffffu) return false;
    h[4] = static_cast<uint8_t>(plen >> 8);
    h[5] = static_cast<uint8_t>(plen);
    h[s.nh_off] = s.proto;
  }
  if (out) *out = h;
  if (out_len) *out_len = total;
  return true;
}

}  // namespace detail

// Feeds one frame, already parsed into p, to the table. Returns not_fragment
// (nothing done) when p is no IPv4/IPv6 fragment; otherwise counts it in
// st.fragments and returns incomplete, dropped (and why, in st) or complete.
// On complete, *out and *out_len (each may be null) give the reassembled
// datagram from its IP header on, valid until the next frag_input() or
// frag_expire() on t; otherwise *out is set to null and *out_len to 0.
// Slots looked at on the way whose datagrams are older than t.timeout_ns are
// freed and counted in st.timed_out.
[[nodiscard]] GNIO_HOST_DEVICE GNIO_FRAG_NOINLINE inline frag_result frag_input(frag_table& t, const uint8_t* frame,
                                                                                uint32_t len, const parsed_pkt& p,
                                                                                uint64_t now_ns, frag_stats& st,
                                                                                const uint8_t** out,
                                                                                uint32_t* out_len) {
  if (out) *out = nullptr;
  if (out_len) *out_len = 0;
  detail::frag_piece f;
  const detail::frag_piece_kind k = detail::frag_describe(frame, len, p, f);
  if (k == detail::frag_piece_kind::not_fragment) return frag_result::not_fragment;
  ++st.fragments;
  if (k == detail::frag_piece_kind::bad || f.len == 0 || (f.more && (f.len & 7u) != 0) || f.offset + f.len > 0xffffu ||
      t.slots == nullptr || t.capacity == 0) {
    ++st.bad;
    return frag_result::dropped;
  }
  const uint32_t end = f.offset + f.len;
  const uint32_t min_hdr = f.family == 4 ? 20u : 40u;
  // Checked again with the real header length once the offset-0 fragment is in.
  bool too_long = end + (f.offset == 0 ? f.hdr_len : min_hdr) > t.max_datagram;
  if (f.offset == 0 && f.hdr_len > frag_header_room) too_long = true;

  // Look for the datagram, expiring what is stale on the way.
  const uint32_t mask = t.capacity - 1;
  const uint32_t window = t.capacity < frag_probe_limit ? t.capacity : frag_probe_limit;
  const uint32_t start = detail::frag_hash(f) & mask;
  uint32_t found = t.capacity, free_idx = t.capacity;
  for (uint32_t i = 0; i < window; ++i) {
    const uint32_t idx = (start + i) & mask;
    frag_slot& s = t.slots[idx];
    if (s.state == frag_slot_pending && detail::frag_expired(t, s, now_ns)) {
      s.state = frag_slot_empty;
      ++st.timed_out;
    }
    if (s.state == frag_slot_empty) {
      if (free_idx == t.capacity) free_idx = idx;
    } else if (found == t.capacity && detail::frag_key_matches(s, f)) {
      found = idx;
    }
  }
  if (found == t.capacity) {
    if (too_long || free_idx == t.capacity) {
      ++st.over_limit;
      return frag_result::dropped;
    }
    frag_slot& s = t.slots[free_idx];
    s = frag_slot{};
    s.state = frag_slot_pending;
    s.family = f.family;
    s.id = f.id;
    s.proto = f.family == 4 ? f.proto : 0;
    s.first_ns = now_ns;
    for (uint32_t i = 0; i < 16; ++i) {
      s.src[i] = f.src[i];
      s.dst[i] = f.dst[i];
    }
    uint8_t* bm =
        detail::frag_buffer(t, free_idx) + frag_slot_stride(t.max_datagram) - frag_bitmap_bytes(t.max_datagram);
    for (uint32_t i = 0; i < frag_bitmap_bytes(t.max_datagram); ++i) bm[i] = 0;
    found = free_idx;
  }
  frag_slot& s = t.slots[found];
  uint8_t* buf = detail::frag_buffer(t, found);
  uint8_t* payload = buf + frag_header_room;
  uint8_t* bm = buf + frag_slot_stride(t.max_datagram) - frag_bitmap_bytes(t.max_datagram);
  const bool have_first = (s.flags & frag_have_first) != 0;
  const bool have_last = (s.flags & frag_have_last) != 0;

  const uint32_t hdr = have_first ? s.hdr_len : (f.offset == 0 ? f.hdr_len : min_hdr);
  const uint32_t reach = end > s.max_end ? end : s.max_end;
  if (too_long || reach + hdr > t.max_datagram) {
    s.state = frag_slot_empty;
    ++st.over_limit;
    return frag_result::dropped;
  }
  if ((have_last && (f.more ? end > s.total_len : end != s.total_len)) || (!f.more && s.max_end > end)) {
    s.state = frag_slot_empty;
    ++st.bad;
    return frag_result::dropped;
  }

  // Which of the fragment's 8-byte units are held already, and do they agree?
  const uint32_t u0 = f.offset / 8, u1 = (end + 7) / 8;
  uint32_t held = 0;
  bool same = true;
  for (uint32_t u = u0; u < u1; ++u) {
    if (!detail::frag_bit(bm, u)) continue;
    ++held;
    const uint32_t a = u * 8, b = a + 8 < end ? a + 8 : end;
    for (uint32_t i = a; i < b && same; ++i) same = payload[i] == f.data[i - f.offset];
  }
  const bool adds_flag = (f.offset == 0 && !have_first) || (!f.more && !have_last);
  if (held == u1 - u0 && same && !adds_flag) {
    ++st.duplicates;
    return frag_result::dropped;
  }
  if (held != 0) {
    ++st.overlapping;
    if (f.family == 6) {  // RFC 5722
      s.state = frag_slot_empty;
      return frag_result::dropped;
    }
  }
  // IPv4 overlaps keep the units held; everything else is new.
  for (uint32_t u = u0; u < u1; ++u) {
    if (held != 0 && detail::frag_bit(bm, u)) continue;
    const uint32_t a = u * 8, b = a + 8 < end ? a + 8 : end;
    detail::frag_copy(payload + a, f.data + (a - f.offset), b - a);
    detail::frag_set_bit(bm, u);
    ++s.units_held;
  }
  if (f.offset == 0 && !have_first) {
    detail::frag_copy(buf + frag_header_room - f.hdr_len, f.hdr, f.hdr_len);
    s.hdr_len = static_cast<uint16_t>(f.hdr_len);
    s.nh_off = static_cast<uint16_t>(f.nh_off);
    if (f.family == 6) s.proto = f.proto;
    s.flags |= frag_have_first;
  }
  if (!f.more) {
    s.total_len = end;
    s.flags |= frag_have_last;
  }
  if (end > s.max_end) s.max_end = end;

  if ((s.flags & (frag_have_first | frag_have_last)) != (frag_have_first | frag_have_last) ||
      s.units_held != (s.total_len + 7) / 8) {
    return frag_result::incomplete;
  }
  s.state = frag_slot_empty;  // the bytes stay until the slot is reused
  if (!detail::frag_finish(s, buf, out, out_len)) {
    ++st.bad;
    return frag_result::dropped;
  }
  ++st.reassembled;
  return frag_result::complete;
}

// Frees every slot whose datagram is older than t.timeout_ns at now_ns,
// counting each in st.timed_out.
GNIO_HOST_DEVICE GNIO_FRAG_NOINLINE inline void frag_expire(frag_table& t, uint64_t now_ns, frag_stats& st) {
  for (uint32_t i = 0; i < t.capacity; ++i) {
    frag_slot& s = t.slots[i];
    if (s.state == frag_slot_pending && detail::frag_expired(t, s, now_ns)) {
      s.state = frag_slot_empty;
      ++st.timed_out;
    }
  }
}

// Datagrams still incomplete (for the end-of-run report), counting those
// past their timeout that no call has looked at yet: call frag_expire()
// first to count them as timed out instead.
GNIO_HOST_DEVICE inline uint32_t frag_pending(const frag_table& t) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < t.capacity; ++i) n += t.slots[i].state == frag_slot_pending ? 1u : 0u;
  return n;
}

}  // namespace gnio::device
