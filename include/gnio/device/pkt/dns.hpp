// SPDX-License-Identifier: Apache-2.0
// DNS messages (RFC 1035): the header, and names with compression pointers.
#pragma once

#include <gnio/device/pkt/load.hpp>

namespace gnio::device {

struct dns_header {
  uint16_t id;
  uint16_t flags;
  uint16_t qdcount;
  uint16_t ancount;
  uint16_t nscount;
  uint16_t arcount;
  uint8_t opcode;
  uint8_t rcode;
  bool qr;  // 1 = response
  bool aa;
  bool tc;
  bool rd;
  bool ra;
  bool z;  // reserved bit, must be 0
};

// Why a name could not be read; none when it was.
enum class dns_error : uint8_t {
  none = 0,
  truncated,       // name runs past the message
  label_too_long,  // length byte 64..191 (> 63 or obsolete label type)
  name_too_long,   // > 255 bytes in wire form
  too_many_hops,   // compression pointers exceed the hop limit (loops)
  bad_pointer,     // pointer into the header or past the message
  out_too_small,   // the output buffer cannot hold the name
  no_question,     // qdcount is 0
};

GNIO_HOST_DEVICE inline const char* to_string(dns_error e) {
  switch (e) {
    case dns_error::none: return "none";
    case dns_error::truncated: return "truncated";
    case dns_error::label_too_long: return "label_too_long";
    case dns_error::name_too_long: return "name_too_long";
    case dns_error::too_many_hops: return "too_many_hops";
    case dns_error::bad_pointer: return "bad_pointer";
    case dns_error::out_too_small: return "out_too_small";
    case dns_error::no_question: return "no_question";
  }
  return "unknown";
}

inline constexpr uint32_t dns_header_len = 12;
inline constexpr uint32_t dns_max_pointer_hops = 16;
inline constexpr uint32_t dns_max_name_len = 255;

GNIO_HOST_DEVICE inline bool dns_parse_header(const uint8_t* msg, uint32_t msg_len, dns_header& h) {
  h = dns_header{};
  if (msg == nullptr || msg_len < dns_header_len) return false;
  h.id = detail::rd16(msg);
  h.flags = detail::rd16(msg + 2);
  h.qdcount = detail::rd16(msg + 4);
  h.ancount = detail::rd16(msg + 6);
  h.nscount = detail::rd16(msg + 8);
  h.arcount = detail::rd16(msg + 10);
  h.qr = (h.flags & 0x8000) != 0;
  h.opcode = static_cast<uint8_t>((h.flags >> 11) & 0xf);
  h.aa = (h.flags & 0x0400) != 0;
  h.tc = (h.flags & 0x0200) != 0;
  h.rd = (h.flags & 0x0100) != 0;
  h.ra = (h.flags & 0x0080) != 0;
  h.z = (h.flags & 0x0040) != 0;
  h.rcode = static_cast<uint8_t>(h.flags & 0xf);
  return true;
}

// Heuristic "does this look like DNS", for telling DNS from other traffic on
// port 53: 1..16 questions (none for an inverse query, opcode 1, which asks
// with an answer record: RFC 1035 6.4), an assigned opcode, Z clear, and
// record counts that could fit in msg_len (question >= 5 bytes, RR >= 11
// bytes).
GNIO_HOST_DEVICE inline bool dns_header_sane(const dns_header& h, uint32_t msg_len) {
  if ((h.qdcount < 1 && h.opcode != 1) || h.qdcount > 16) return false;
  if (h.opcode == 3 || h.opcode > 6) return false;  // 0 query,1 iquery,2 status,4 notify,5 update,6 DSO
  if (h.z) return false;
  if (msg_len < dns_header_len) return false;
  const uint64_t need =
      static_cast<uint64_t>(h.qdcount) * 5 + (static_cast<uint64_t>(h.ancount) + h.nscount + h.arcount) * 11;
  return need <= msg_len - dns_header_len;
}

namespace detail {

// dns_read_name and dns_read_name_labels: one walk over the labels, written
// either as dotted text (Labels = false) or as uncompressed wire labels
// (Labels = true: a length byte before each label, no root byte).
template <bool Labels>
GNIO_HOST_DEVICE inline dns_error dns_read_name_impl(const uint8_t* msg, uint32_t msg_len, uint32_t off, char* out,
                                                     uint32_t out_cap, uint32_t* out_len, uint32_t* end_off) {
  if (out_len != nullptr) *out_len = 0;
  if (msg == nullptr) return dns_error::truncated;
  uint32_t pos = off;
  uint32_t hops = 0;
  uint32_t wire = 0;
  uint32_t olen = 0;
  uint32_t end = 0;
  bool jumped = false;
  // Terminates: without pointers pos strictly increases; pointers are capped
  // by the hop limit; total label bytes by the 255 limit.
  for (;;) {
    if (pos >= msg_len) return dns_error::truncated;
    const uint8_t c = msg[pos];
    if ((c & 0xc0) == 0xc0) {
      if (msg_len - pos < 2) return dns_error::truncated;
      if (++hops > dns_max_pointer_hops) return dns_error::too_many_hops;
      const uint32_t ptr = (static_cast<uint32_t>(c & 0x3f) << 8) | msg[pos + 1];
      if (!jumped) {
        end = pos + 2;
        jumped = true;
      }
      if (ptr < dns_header_len || ptr >= msg_len) return dns_error::bad_pointer;
      pos = ptr;
      continue;
    }
    if (c & 0xc0) return dns_error::label_too_long;
    if (c == 0) {
      if (!jumped) end = pos + 1;
      break;
    }
    wire += 1u + c;
    if (wire + 1 > dns_max_name_len) return dns_error::name_too_long;  // +1: root byte
    if (!detail::fits(msg_len, pos + 1, c)) return dns_error::truncated;
    // Dotted: a '.' between labels; labels: a length byte before each one.
    const uint32_t sep = Labels ? 1u : (olen != 0 ? 1u : 0u);
    if (out != nullptr) {
      const uint32_t need = olen + sep + c + 1u;  // +1: NUL
      if (need > out_cap) {
        // What fits: the complete labels (or text) before this one.
        if (olen < out_cap) out[olen] = '\0';
        if (out_len != nullptr) *out_len = olen;
        return dns_error::out_too_small;
      }
      if (Labels) out[olen++] = static_cast<char>(c);
      else if (sep) out[olen++] = '.';
      for (uint32_t i = 0; i < c; ++i) out[olen + i] = static_cast<char>(msg[pos + 1 + i]);
    } else {
      olen += sep;
    }
    olen += c;
    pos += 1u + c;
  }
  if (olen == 0 && !Labels) {
    if (out != nullptr) {
      if (out_cap < 2) return dns_error::out_too_small;
      out[0] = '.';
    }
    olen = 1;
  }
  if (out != nullptr) {
    if (olen + 1 > out_cap) return dns_error::out_too_small;
    out[olen] = '\0';
  }
  if (end_off != nullptr) *end_off = end;
  if (out_len != nullptr) *out_len = olen;
  return dns_error::none;
}

}  // namespace detail

// Reads the (possibly compressed) name at off as dotted text. Label bytes are
// copied raw, so a label may itself contain '.' (or any byte, NUL included):
// where that matters, read the labels with dns_read_name_labels. The root
// name is ".".
// out may be null to only validate/measure (then out_cap is ignored); else the
// text is NUL-terminated. *end_off (if given) receives the offset just past the
// name at its original position; *out_len (if given) the text's length
// (on out_too_small: of the labels that fit, NUL-terminated in out).
GNIO_HOST_DEVICE inline dns_error dns_read_name(const uint8_t* msg, uint32_t msg_len, uint32_t off, char* out,
                                                uint32_t out_cap, uint32_t* out_len, uint32_t* end_off = nullptr) {
  return detail::dns_read_name_impl<false>(msg, msg_len, off, out, out_cap, out_len, end_off);
}

// Like dns_read_name, but writes the name's labels uncompressed as on the
// wire (a length byte, then the label's bytes), without the root's 0 byte:
// "www.example.com" is "\3www\7example\3com" (16 bytes), the root name is
// empty (length 0). Nothing is lost, so a printer can escape a '.' inside a
// label (as dig does). NUL-terminated when out is given; on out_too_small,
// out holds the complete labels that fit and *out_len their length, so a
// caller can keep a name cut at a label boundary.
GNIO_HOST_DEVICE inline dns_error dns_read_name_labels(const uint8_t* msg, uint32_t msg_len, uint32_t off, char* out,
                                                       uint32_t out_cap, uint32_t* out_len,
                                                       uint32_t* end_off = nullptr) {
  return detail::dns_read_name_impl<true>(msg, msg_len, off, out, out_cap, out_len, end_off);
}

// First question's name as dotted text ("www.example.com", no trailing dot).
GNIO_HOST_DEVICE inline dns_error dns_qname(const uint8_t* msg, uint32_t msg_len, char* out, uint32_t out_cap,
                                            uint32_t* out_len) {
  if (out_len != nullptr) *out_len = 0;
  dns_header h;
  if (!dns_parse_header(msg, msg_len, h)) return dns_error::truncated;
  if (h.qdcount == 0) return dns_error::no_question;
  return dns_read_name(msg, msg_len, dns_header_len, out, out_cap, out_len);
}

// Like dns_qname, plus QTYPE/QCLASS of the first question.
GNIO_HOST_DEVICE inline dns_error dns_first_question(const uint8_t* msg, uint32_t msg_len, char* out, uint32_t out_cap,
                                                     uint32_t* out_len, uint16_t& qtype, uint16_t& qclass) {
  if (out_len != nullptr) *out_len = 0;
  dns_header h;
  if (!dns_parse_header(msg, msg_len, h)) return dns_error::truncated;
  if (h.qdcount == 0) return dns_error::no_question;
  uint32_t end = 0;
  const dns_error r = dns_read_name(msg, msg_len, dns_header_len, out, out_cap, out_len, &end);
  if (r != dns_error::none) return r;
  if (!detail::fits(msg_len, end, 4)) return dns_error::truncated;
  qtype = detail::rd16(msg + end);
  qclass = detail::rd16(msg + end + 2);
  return dns_error::none;
}

}  // namespace gnio::device
