// SPDX-License-Identifier: Apache-2.0
// TCP stream framing for HTTP/1.x and DNS over TCP: per-connection state that
// follows each direction's byte stream across segments, so that a message is
// counted once, in the segment where it completes, as tshark counts it with its
// defaults (tcp.desegment_tcp_streams, http.desegment_headers/_body,
// dns.desegment_dns_messages on; tcp.reassemble_out_of_order off;
// tcp.no_subdissector_on_error on).
//
// What that means, segment by segment (the rules tshark 4.0 follows on the
// captures in tests/data and tests/data/stream):
//  - A segment whose data lies wholly or partly before the highest sequence
//    number seen in its direction (a retransmission, an out-of-order segment,
//    an overlap) is not read: tshark hands such segments to no subdissector.
//    Its bytes are lost to the framing, as if they had not been captured.
//  - A segment that starts after that point (a segment was lost or not
//    captured: a gap) ends the message in progress uncounted. Where that
//    message's end is known and lies past the lost bytes (a Content-Length
//    body, a DNS message), the framing goes on to that end and reads what
//    follows as the next message, as tshark's reassembly does; elsewhere
//    (headers, chunked bodies, a body until close) the segment is read as if
//    a message started at its first byte. That is the resynchronisation:
//    HTTP resumes at the next segment that starts with a request or status
//    line, DNS at the next segment (its first two bytes taken as a length
//    prefix).
//  - Bytes that are not a message start where one is expected (HTTP data that
//    starts with neither a method nor "HTTP/1.x ") are skipped to the end of
//    the segment; the next segment is looked at from its start.
//  - The first segment seen of a connection whose SYN was not seen sets the
//    sequence numbers (a capture that starts mid-connection).
//
// Which payloads are HTTP: on any port, a direction whose message starts with
// a request method or "HTTP/1.x " (as http_classify decides, split across
// segments or not); DNS: a connection with port 53 on either side (and then
// never HTTP). A response's body is framed by its request (a HEAD response has
// none; requests are matched to responses in order, up to 32 in flight), its
// status (1xx, 204, 304: none), Transfer-Encoding: chunked (chunk-size lines,
// extensions, trailers), Content-Length, or else the end of the direction (a
// FIN: the response is counted in that segment; a RST drops it, as tshark
// counts no such response). A request without Content-Length or chunked has
// no body. Where the framing cannot go on (a chunk-size line that is no size
// or does not fit 32 bits, a request whose Content-Length is over INT32_MAX,
// which tshark does not reassemble) the message is counted in that segment,
// as tshark shows it, and the next segment is read from its start.
//
// Threads: the caller feeds the segments of one connection in arrival order,
// from one thread at a time; different connections may be fed concurrently
// (each has its own entry in the table). Entries are found or added with the
// slot protocol of flow_table.hpp, within stream_max_probe slots of their
// hash, so a full table costs a bounded search. An entry is reused for the
// next connection of the same 4-tuple, its state reset when a SYN arrives or,
// once both directions have ended (FIN or RST), when a segment arrives that is
// not a retransmission of the old one. stream_table_sweep gives entries back:
// those quiet for closed_ns after a FIN or RST, and those quiet for idle_ns,
// so a long run keeps following new connections.
//
// A caller (one thread per connection at a time, frames of a connection in
// arrival order):
//
//   parsed_pkt p;
//   parse(frame, len, p);
//   const flow_key k = make_flow_key(p);
//   tcp_conn* c = stream_table_find_or_add(table, canonical_flow_key(k), nullptr);
//   if (c == nullptr) {
//     counters.stream_table_full += 1;  // and classify this segment on its own
//   } else {
//     stream_events ev;
//     tcp_stream_feed(*c, stream_dir(k, c->key), p, frame, len, ev);
//     counters.http_requests += ev.http_requests;  // messages; count ev.http_requests > 0 for frames
//     for (uint32_t i = 0; i < ev.num_dns_query_starts; ++i)
//       dns_qname(frame + ev.dns_query_off[i], ev.dns_query_len[i], name, sizeof name);
//   }
#pragma once

#include <cuda/std/type_traits>

#include "gnio/device/flow_table.hpp"
#include "gnio/device/pkt.hpp"

#if defined(__CUDACC__)
#define GNIO_STREAM_NOINLINE __noinline__
#else
#define GNIO_STREAM_NOINLINE inline
#endif

namespace gnio::device {

// Where a direction's framing stands.
enum class stream_phase : uint8_t {
  msg_start = 0,     // at a message boundary (nothing of the next message seen)
  skip_segment,      // not a message start: ignore the rest of this segment
  http_line,         // HTTP start line or a header line (line_buf holds its start)
  http_body,         // `left` body bytes to go
  http_chunk_size,   // a chunk-size line (size in `left`, digits seen in `hex_digits`)
  http_chunk_data,   // `left` chunk bytes to go, then the CRLF after them
  http_chunk_crlf,   // the line end after chunk data
  http_trailer,      // trailer lines after the last chunk, up to an empty line
  http_until_close,  // a response body that ends with the direction
  dns_prefix,        // the 2-byte length prefix, `line_len` (0 or 1) bytes of it seen
  dns_message,       // `left` message bytes to go; line_buf holds the header
};

// The longest request body framed by its Content-Length (tshark's limit,
// INT32_MAX), and the largest chunk size read (32 bits).
inline constexpr uint64_t http_max_body = 0x7fffffffull;
inline constexpr uint64_t http_max_chunk = 0xffffffffull;

inline constexpr uint32_t stream_line_cap = 48;   // header line bytes kept (longer lines are cut)
inline constexpr uint32_t stream_max_events = 4;  // DNS query positions reported per segment

// One direction of a connection.
struct tcp_dir_state {
  uint32_t next_seq;  // highest sequence number seen plus one (valid when seq_known)
  uint64_t left;      // bytes left in the current body, chunk or DNS message
  uint32_t line_len;  // bytes of the current line (or DNS header) seen, counting those not kept
  uint8_t line_buf[stream_line_cap];
  stream_phase phase;
  http_kind kind;   // the current HTTP message (a method, response, or not_http before its start line)
  uint16_t status;  // a response's status code
  bool seq_known;
  bool ended;          // FIN or RST seen in this direction
  bool first_line;     // http_line: this is the start line
  bool chunked;        // headers so far said Transfer-Encoding: chunked
  bool has_length;     // headers so far had a Content-Length
  bool bodiless;       // a response to HEAD
  uint8_t hex_digits;  // http_chunk_size: digits seen; 0xff once the size's digits ended
  bool dropped;        // bytes of the current message were lost: it ends uncounted
  uint64_t content_length;
};

// Both directions of a connection plus what responses need from requests.
// dir[0] is the endpoint that is `src` of the canonical key (see stream_dir).
struct tcp_conn {
  uint32_t state;  // flow_slot_* (slot_table.hpp)
  uint32_t pad;
  flow_key key;  // canonical_flow_key of the connection
  tcp_dir_state dir[2];
  uint32_t head_fifo;  // bit i: the i-th oldest unanswered request was HEAD
  uint8_t pending;     // unanswered requests (at most 32 tracked)
  bool dns;            // port 53 on either side
  bool proto_known;    // `dns` has been set from the ports
  uint8_t reserved;
  uint64_t last_ns;  // now_ns() of the last segment fed (set by the caller; stream_table_sweep reads it)
};

// What one segment completed or started. Counts are of messages: a segment
// that completes three pipelined requests has http_requests == 3 (tshark shows
// three http.request occurrences in that frame; `-Y http.request` counts it
// once, so a caller counting frames counts http_requests > 0).
struct stream_events {
  uint32_t http_requests;  // = http_get + http_head + http_post + http_other_requests
  uint32_t http_get;
  uint32_t http_head;
  uint32_t http_post;
  uint32_t http_other_requests;  // every other method http_classify knows
  uint32_t http_responses;
  uint32_t dns_queries;    // DNS messages with QR clear that completed in this segment
  uint32_t dns_responses;  // ... with QR set
  // DNS queries whose first byte (after the length prefix) and header are in
  // this segment, in order, at most stream_max_events: offsets into `frame`
  // and the bytes of the message there (the declared length, or less when the
  // message continues in later segments). dns_qname() on them reads
  // the query name when the question is inside the segment.
  uint32_t num_dns_query_starts;
  uint32_t dns_query_off[stream_max_events];
  uint32_t dns_query_len[stream_max_events];
  bool retransmitted;         // data before the highest sequence number seen: not read
  bool out_of_window;         // sequence number 2^30 or more away from the expected one: ignored
  bool gap;                   // data after the expected sequence number: a message in progress was dropped
  bool not_fed;               // not TCP, a header cut short, or a payload outside the frame: nothing read
  uint32_t messages_dropped;  // HTTP or DNS messages ended uncounted by a gap, an overlap or a short frame
};

static_assert(cuda::std::is_trivially_copyable<tcp_conn>::value, "tcp_conn lives in executor memory");
static_assert(cuda::std::is_trivially_copyable<stream_events>::value, "stream_events is copied to the host");

// Slots searched from a connection's hash before the table counts as full
// for it (an add stays within them, so a lookup finds every entry there).
inline constexpr uint32_t stream_max_probe = 32;
// A slot stream_table_sweep gave back: lookups search past it, an add may
// take it (slot_find_or_claim, slot_table.hpp).
inline constexpr uint32_t stream_slot_free = flow_slot_free;
// stream_table_sweep's defaults: an entry is given back once it has been
// quiet this long after a FIN or RST in either direction, or this long at all.
inline constexpr uint64_t stream_closed_ns = 5'000'000'000ull;
inline constexpr uint64_t stream_idle_ns = 30'000'000'000ull;

// A table of connections in caller-provided executor memory: `capacity` (a
// power of two) tcp_conn entries, zeroed before first use.
struct stream_table {
  tcp_conn* slots;
  uint32_t capacity;
  uint32_t sweep_next = 0;  // the slot stream_table_sweep looks at next
  uint64_t closed_ns = stream_closed_ns;
  uint64_t idle_ns = stream_idle_ns;
};

// Finds the entry of connection `k` (a canonical_flow_key) or adds it. Returns
// it, with *fresh (if given) true when it was added now, or nullptr when the
// stream_max_probe slots from k's hash all hold other connections (the caller
// then classifies the segment on its own, per segment as before, and counts
// it as stream_table_full). Many threads may call it at once
// (slot_find_or_claim's protocol); an add takes the first empty or
// given-back slot of the search. Segments of one connection still go to
// tcp_stream_feed from one thread at a time (the framing's own rule).
GNIO_HOST_DEVICE inline tcp_conn* stream_table_find_or_add(stream_table& t, const flow_key& k, bool* fresh) {
  // The rest of a claimed entry is zero: from the allocation, or from the sweep.
  return slot_find_or_claim(
      t.slots, t.capacity, flow_key_hash64(k), [&k](const tcp_conn& e) { return e.key == k; },
      [&k](tcp_conn& e) { e.key = k; }, fresh, stream_max_probe);
}

// Gives back up to `n` entries, looking at the table's slots in turn from
// where the last call stopped: an entry quiet (now - last_ns) for
// t.closed_ns after a FIN or RST in either direction, or for t.idle_ns. A
// given-back entry is zeroed; its connection, if it sends again, starts a new
// entry, its next segment read as if the capture began there. Returns how
// many it gave back. Must run while no other thread uses the table (the pp
// kernel calls it from one thread between two block barriers: the one that
// ends a batch's ordered pass and the one that starts the next).
GNIO_HOST_DEVICE inline uint32_t stream_table_sweep(stream_table& t, uint64_t now, uint32_t n) {
  if (t.slots == nullptr || t.capacity == 0) return 0;
  uint32_t freed = 0;
  for (uint32_t i = 0; i < n && i < t.capacity; ++i) {
    tcp_conn& e = t.slots[t.sweep_next];
    t.sweep_next = (t.sweep_next + 1) & (t.capacity - 1);
    dev_atomic_ref<uint32_t> st(e.state);
    // Relaxed: no other thread is in the table now; the block barrier after
    // this call orders these writes before the next find_or_add.
    if (st.load(cuda::std::memory_order_relaxed) != flow_slot_used) continue;
    const uint64_t quiet = now > e.last_ns ? now - e.last_ns : 0;
    const bool ended = e.dir[0].ended || e.dir[1].ended;
    if (quiet < t.idle_ns && !(ended && quiet >= t.closed_ns)) continue;
    e = tcp_conn{};
    st.store(stream_slot_free, cuda::std::memory_order_relaxed);
    freed += 1;
  }
  return freed;
}

// The direction index of a packet whose own (not canonical) key is `k` within
// the entry of canonical key `canon`: 0 when its source is canon's source.
GNIO_HOST_DEVICE inline uint32_t stream_dir(const flow_key& k, const flow_key& canon) {
  for (uint32_t i = 0; i < 16; ++i)
    if (k.src[i] != canon.src[i]) return 1;
  return k.src_port == canon.src_port ? 0u : 1u;
}

namespace detail {

GNIO_HOST_DEVICE GNIO_FORCEINLINE uint8_t lower(uint8_t c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }

// Case-insensitive: does the line start with `name` (lower case, with the colon)?
GNIO_HOST_DEVICE inline bool line_has_name(const uint8_t* line, uint32_t n, const char* name, uint32_t name_len) {
  if (n < name_len) return false;
  for (uint32_t i = 0; i < name_len; ++i)
    if (lower(line[i]) != static_cast<uint8_t>(name[i])) return false;
  return true;
}

// Could these first bytes of a message still become something http_classify
// accepts (they are a proper prefix of a request or status line start)?
GNIO_HOST_DEVICE inline bool http_could_start(const uint8_t* p, uint32_t n) {
  const char* status = "HTTP/1.";
  uint32_t i = 0;
  while (i < n && i < 7 && p[i] == static_cast<uint8_t>(status[i])) ++i;
  if (i == n) return true;
  if (i == 7 && n == 8 && p[7] >= '0' && p[7] <= '9') return true;
  i = 0;
  while (i < n && i < http_max_method && (is_upper(p[i]) || p[i] == '-' || p[i] == '_')) ++i;
  if (i == n) return true;                    // a method so far
  return i > 0 && p[i] == ' ' && n == i + 1;  // a method and its space: the target decides
}

GNIO_HOST_DEVICE inline void count_http(const tcp_dir_state& d, stream_events& ev) {
  switch (d.kind) {
    case http_kind::not_http: return;
    case http_kind::response: ev.http_responses += 1; return;
    case http_kind::get: ev.http_get += 1; break;
    case http_kind::head: ev.http_head += 1; break;
    case http_kind::post: ev.http_post += 1; break;
    default: ev.http_other_requests += 1; break;
  }
  ev.http_requests += 1;
}

GNIO_HOST_DEVICE inline void reset_message(tcp_dir_state& d, stream_phase next) {
  d.phase = next;
  d.kind = http_kind::not_http;
  d.left = 0;
  d.line_len = 0;
  d.status = 0;
  d.first_line = false;
  d.chunked = false;
  d.has_length = false;
  d.bodiless = false;
  d.hex_digits = 0;
  d.dropped = false;
  d.content_length = 0;
}

// The message of `d` is complete: count it and wait for the next one.
GNIO_HOST_DEVICE inline void complete_http(tcp_dir_state& d, stream_events& ev) {
  if (!d.dropped) count_http(d, ev);
  reset_message(d, stream_phase::msg_start);
}

// The message's framing cannot go on (a chunk-size line that is no size, a
// request body too long to reassemble): tshark shows the message in this
// segment, so it is counted here, and the rest of the segment is skipped;
// the next segment is read from its first byte (resynchronisation).
GNIO_HOST_DEVICE inline void complete_unframed(tcp_dir_state& d, stream_events& ev) {
  if (!d.dropped) count_http(d, ev);
  reset_message(d, stream_phase::skip_segment);
}

// A message in progress ends uncounted (a gap, an overlap, bytes not captured).
GNIO_HOST_DEVICE inline void drop_message(tcp_dir_state& d, stream_events& ev, stream_phase next) {
  const bool in_msg = d.phase != stream_phase::msg_start && d.phase != stream_phase::skip_segment &&
                      !(d.phase == stream_phase::dns_prefix && d.line_len == 0);
  if (in_msg && !d.dropped) ev.messages_dropped += 1;
  reset_message(d, next);
}

// `n` bytes of the stream before this segment were never read (lost, not
// captured, or in a segment that overlapped old data). Inside a body of known
// length (Content-Length) or a DNS message, tshark goes on reassembling that
// message up to its end and reads what follows as the next message, so the
// framing does too, with the message marked to end uncounted; anywhere else
// (headers, chunked bodies, a body until close) the message is dropped and
// this segment is read from its first byte.
GNIO_HOST_DEVICE inline void lose_bytes(tcp_dir_state& d, uint32_t n, stream_events& ev) {
  if ((d.phase == stream_phase::http_body || d.phase == stream_phase::dns_message) && n < d.left) {
    d.left -= n;
    if (!d.dropped) ev.messages_dropped += 1;
    d.dropped = true;
    return;
  }
  drop_message(d, ev, stream_phase::msg_start);
}

// Request headers are done: remember HEAD for the response.
GNIO_HOST_DEVICE inline void note_request(tcp_conn& c, http_kind k) {
  if (c.pending >= 32) return;  // too many in flight: later responses read as if to GET
  if (k == http_kind::head) c.head_fifo |= 1u << c.pending;
  c.pending += 1;
}

// A final (non-1xx) response takes the oldest request. Returns true when it was HEAD.
GNIO_HOST_DEVICE inline bool take_request(tcp_conn& c) {
  if (c.pending == 0) return false;
  const bool head = (c.head_fifo & 1u) != 0;
  c.head_fifo >>= 1;
  c.pending -= 1;
  return head;
}

// The blank line after the headers: decide how the body is framed.
GNIO_HOST_DEVICE inline void end_headers(tcp_conn& c, tcp_dir_state& d, stream_events& ev) {
  if (d.kind == http_kind::response) {
    const bool informational = d.status >= 100 && d.status < 200;
    const bool to_head = informational ? false : take_request(c);
    if (informational || to_head || d.status == 204 || d.status == 304) return complete_http(d, ev);
    if (d.chunked) {
      d.phase = stream_phase::http_chunk_size;
    } else if (d.has_length) {
      if (d.content_length == 0) return complete_http(d, ev);
      d.left = d.content_length;
      d.phase = stream_phase::http_body;
    } else {
      d.phase = stream_phase::http_until_close;
    }
  } else {
    note_request(c, d.kind);
    // tshark reassembles a request body only up to INT32_MAX bytes; a longer
    // Content-Length shows the request at its headers and leaves the body
    // unframed (a 4 GB upload must not hide the requests after it).
    if (!d.chunked && d.has_length && d.content_length > http_max_body) return complete_unframed(d, ev);
    if (d.chunked) {
      d.phase = stream_phase::http_chunk_size;
    } else if (d.has_length && d.content_length > 0) {
      d.left = d.content_length;
      d.phase = stream_phase::http_body;
    } else {
      return complete_http(d, ev);
    }
  }
  d.hex_digits = 0;
}

// One complete line of the start line or headers is in line_buf (cut to
// stream_line_cap bytes; line_len counts them all, without the LF).
GNIO_HOST_DEVICE inline void end_line(tcp_conn& c, tcp_dir_state& d, stream_events& ev) {
  uint32_t n = d.line_len < stream_line_cap ? d.line_len : stream_line_cap;
  if (d.line_len <= stream_line_cap && n > 0 && d.line_buf[n - 1] == '\r') --n;  // CR of CRLF
  const uint8_t* l = d.line_buf;
  d.line_len = 0;
  if (d.phase == stream_phase::http_trailer) {
    if (n == 0) complete_http(d, ev);
    return;
  }
  if (d.first_line) {
    d.first_line = false;
    if (d.kind == http_kind::response) {
      // "HTTP/1.x NNN": http_classify checked the first 9 bytes.
      uint32_t s = 0;
      for (uint32_t i = 9; i < 12 && i < n && l[i] >= '0' && l[i] <= '9'; ++i) s = s * 10 + (l[i] - '0');
      d.status = static_cast<uint16_t>(s);
    }
    return;
  }
  if (n == 0) return end_headers(c, d, ev);
  if (line_has_name(l, n, "content-length:", 15)) {
    uint32_t i = 15;
    while (i < n && (l[i] == ' ' || l[i] == '\t')) ++i;
    uint64_t v = 0;
    bool any = false;
    for (; i < n && l[i] >= '0' && l[i] <= '9'; ++i) {
      if (v < (1ull << 50)) v = v * 10 + (l[i] - '0');
      any = true;
    }
    if (any) {
      d.has_length = true;
      d.content_length = v;
    }
  } else if (line_has_name(l, n, "transfer-encoding:", 18)) {
    // chunked must be the last coding; look for it anywhere in what was kept.
    for (uint32_t i = 18; i + 7 <= n; ++i)
      if (line_has_name(l + i, n - i, "chunked", 7)) d.chunked = true;
  }
}

GNIO_HOST_DEVICE GNIO_FORCEINLINE int hex_value(uint8_t ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  const uint8_t l = lower(ch);
  if (l >= 'a' && l <= 'f') return l - 'a' + 10;
  return -1;
}

// Frames HTTP bytes p[0, n) of one direction, counting what completes. Stops
// early when the phase becomes skip_segment (the rest is not HTTP) or
// http_until_close (the rest is body).
GNIO_HOST_DEVICE inline void feed_http(tcp_conn& c, tcp_dir_state& d, const uint8_t* p, uint32_t n, stream_events& ev) {
  uint32_t i = 0;
  while (i < n) {
    switch (d.phase) {
      case stream_phase::skip_segment: return;
      case stream_phase::msg_start:
        reset_message(d, stream_phase::http_line);
        d.first_line = true;
        break;
      case stream_phase::http_line:
      case stream_phase::http_trailer: {
        const uint8_t ch = p[i++];
        if (ch == '\n') {
          if (d.first_line && d.kind == http_kind::not_http) {  // a start line that never classified
            reset_message(d, stream_phase::skip_segment);
            return;
          }
          end_line(c, d, ev);
          break;
        }
        if (d.line_len < stream_line_cap) d.line_buf[d.line_len] = ch;
        if (d.line_len < 0xffffffffu) d.line_len += 1;
        if (d.first_line && d.kind == http_kind::not_http) {
          const uint32_t k = d.line_len < stream_line_cap ? d.line_len : stream_line_cap;
          d.kind = http_classify(d.line_buf, k);
          if (d.kind == http_kind::not_http && !http_could_start(d.line_buf, k)) {
            reset_message(d, stream_phase::skip_segment);
            return;
          }
        }
        break;
      }
      case stream_phase::http_body:
      case stream_phase::http_chunk_data: {
        const uint64_t take = d.left < n - i ? d.left : n - i;
        i += static_cast<uint32_t>(take);
        d.left -= take;
        if (d.left == 0) {
          if (d.phase == stream_phase::http_body) {
            complete_http(d, ev);
          } else {
            d.phase = stream_phase::http_chunk_crlf;
          }
        }
        break;
      }
      case stream_phase::http_chunk_crlf:
        if (p[i++] == '\n') {
          d.phase = stream_phase::http_chunk_size;
          d.hex_digits = 0;
          d.left = 0;
        }
        break;
      case stream_phase::http_chunk_size: {
        const uint8_t ch = p[i++];
        if (ch == '\n') {
          if (d.hex_digits == 0) {  // no size: the chunked framing is broken
            complete_unframed(d, ev);
            return;
          }
          if (d.left == 0) {
            d.phase = stream_phase::http_trailer;
            d.line_len = 0;
          } else {
            d.phase = stream_phase::http_chunk_data;
          }
          break;
        }
        const int v = hex_value(ch);
        if (d.hex_digits != 0xff && v >= 0) {
          // left < 2^32 here, so this cannot wrap; a size past 32 bits (as
          // tshark reads it) is a framing error, not a chunk to wait for.
          d.left = d.left * 16 + static_cast<uint64_t>(v);
          if (d.left > http_max_chunk) {
            complete_unframed(d, ev);
            return;
          }
          d.hex_digits = d.hex_digits < 0xfe ? d.hex_digits + 1 : 0xfe;
        } else if (d.hex_digits != 0 && d.hex_digits != 0xff) {
          d.hex_digits = 0xff;  // extension, spaces or CR: the size is done
        } else if (d.hex_digits == 0 && ch != ' ' && ch != '\t') {
          complete_unframed(d, ev);
          return;
        }
        break;
      }
      case stream_phase::http_until_close: return;  // everything up to FIN/RST is body
      default: return;
    }
  }
}

// Frames DNS bytes frame[off, off + n) of one direction: length prefixes, then
// messages, counting each whose header is sane when its last byte arrives.
GNIO_HOST_DEVICE inline void feed_dns(tcp_dir_state& d, const uint8_t* frame, uint32_t off, uint32_t n,
                                      stream_events& ev) {
  const uint8_t* p = frame + off;
  uint32_t i = 0;
  while (i < n) {
    if (d.phase == stream_phase::msg_start || d.phase == stream_phase::skip_segment) {
      reset_message(d, stream_phase::dns_prefix);
    }
    if (d.phase == stream_phase::dns_prefix) {
      d.line_buf[d.line_len++] = p[i++];
      if (d.line_len < 2) continue;
      d.left = static_cast<uint32_t>(d.line_buf[0]) << 8 | d.line_buf[1];
      d.content_length = d.left;  // the declared length
      d.line_len = 0;
      d.phase = stream_phase::dns_message;
      if (d.left == 0) {  // an empty message: nothing to count
        d.phase = stream_phase::dns_prefix;
        continue;
      }
      // Report a query that starts here with its header inside the segment.
      if (d.left >= dns_header_len && n - i >= dns_header_len && (p[i + 2] & 0x80) == 0 &&
          ev.num_dns_query_starts < stream_max_events) {
        const uint32_t k = ev.num_dns_query_starts++;
        ev.dns_query_off[k] = off + i;
        ev.dns_query_len[k] = static_cast<uint32_t>(d.left < n - i ? d.left : n - i);
      }
      continue;
    }
    // dns_message: keep the header, skip the rest.
    const uint64_t take = d.left < n - i ? d.left : n - i;
    for (uint64_t j = 0; j < take && d.line_len < dns_header_len; ++j) d.line_buf[d.line_len++] = p[i + j];
    i += static_cast<uint32_t>(take);
    d.left -= take;
    if (d.left != 0) continue;
    // The header must pass dns_header_sane against the declared length, as
    // count_dns checks a message in one segment.
    dns_header h;
    if (!d.dropped && dns_parse_header(d.line_buf, d.line_len, h) &&
        dns_header_sane(h, static_cast<uint32_t>(d.content_length))) {
      if (h.qr) {
        ev.dns_responses += 1;
      } else {
        ev.dns_queries += 1;
      }
    }
    reset_message(d, stream_phase::dns_prefix);
  }
}

}  // namespace detail

// Bytes a sequence number may be away from the expected one and still be a
// gap or a retransmission, not a stray segment (a quarter of the space).
inline constexpr int32_t stream_seq_window = 1 << 30;

// Forgets everything of a connection but its key (a new connection on the tuple).
GNIO_HOST_DEVICE inline void stream_conn_reset(tcp_conn& c) {
  c.dir[0] = tcp_dir_state{};
  c.dir[1] = tcp_dir_state{};
  c.head_fifo = 0;
  c.pending = 0;
}

// Feeds one TCP segment of connection `c` in direction `dir` (0 or 1, see
// stream_dir): `p` is parse()'s result for the frame `frame` of `len` captured
// bytes. Fills `ev` (cleared first) with what the segment completed and how
// its sequence number related to the stream. The sequence number is
// p.tcp.seq (plus one for a SYN), the payload frame[p.payload_off,
// +p.payload_len); bytes past `len` (a capture cut short) are skipped where
// the framing needs no data (inside a body or a DNS message past its header)
// and drop the message in progress elsewhere. Never reads outside
// frame[0, len). Segments of one connection must be fed in arrival order by
// one thread at a time.
//
// Out of line on the GPU, so that a kernel calling it keeps its register
// count (the framing state machine is large).
GNIO_HOST_DEVICE GNIO_STREAM_NOINLINE void tcp_stream_feed(tcp_conn& c, uint32_t dir, const parsed_pkt& p,
                                                           const uint8_t* frame, uint32_t len, stream_events& ev) {
  ev = stream_events{};
  if (dir > 1 || p.l4 != l4_kind::tcp || frame == nullptr || p.l4_off + static_cast<uint32_t>(p.tcp.hdr_len) > len ||
      p.tcp.hdr_len < 20 || (p.malformed && p.error == pkt_error::truncated_l4)) {
    ev.not_fed = true;
    return;
  }
  if (!c.proto_known) {
    c.dns = p.src_port == 53 || p.dst_port == 53;
    c.proto_known = true;
  }
  const uint16_t f = p.tcp.flags;
  const bool syn = (f & tcp_syn) != 0, fin = (f & tcp_fin) != 0, rst = (f & tcp_rst) != 0;
  tcp_dir_state& d = c.dir[dir];
  const uint32_t seg_seq = p.tcp.seq + (syn ? 1u : 0u);
  // The segment's length as sent: the parser clamps payload_len to the bytes
  // captured (a snap length, an RX slot shorter than the frame), and the
  // sequence numbers count all of them.
  uint32_t plen = p.payload_len;
  uint32_t ip_end = 0;
  if (p.l3 == l3_kind::ipv4) ip_end = p.l3_off + uint32_t{p.ipv4.total_length};
  else if (p.l3 == l3_kind::ipv6 && !p.ipv6.jumbo) ip_end = p.l3_off + 40u + p.ipv6.payload_length;
  if (ip_end > p.payload_off && ip_end - p.payload_off > plen) plen = ip_end - p.payload_off;
  if (syn) {
    if ((f & tcp_ack) == 0) {
      stream_conn_reset(c);  // a new connection (or its SYN again, before any data)
    } else {
      d = tcp_dir_state{};
    }
    d.seq_known = true;
    d.next_seq = seg_seq;
  }
  if (!d.seq_known) {  // the capture started after the SYN
    d.seq_known = true;
    d.next_seq = seg_seq;
  }
  if (plen == 0 && !fin) {  // no data: only a RST matters
    if (rst) {
      d.ended = true;
      // A body that ends with the connection ends only with a FIN: tshark
      // counts no response that a RST cuts off.
      if (d.phase == stream_phase::http_until_close) detail::drop_message(d, ev, stream_phase::msg_start);
    }
    return;
  }
  int32_t delta = static_cast<int32_t>(seg_seq - d.next_seq);
  if (delta >= stream_seq_window || delta <= -stream_seq_window) {
    if (!(c.dir[0].ended && c.dir[1].ended)) {
      ev.out_of_window = true;
      return;
    }
    stream_conn_reset(c);  // the old connection ended; this is a new one whose SYN was not seen
    d.seq_known = true;
    d.next_seq = seg_seq;
    delta = 0;
  }
  const uint32_t seg_end = seg_seq + plen + (fin ? 1u : 0u);
  if (delta < 0) {
    ev.retransmitted = true;
    if (static_cast<int32_t>(seg_end - d.next_seq) <= 0) return;  // nothing new
    // Overlapping old and new data: not read (as tshark reads none of it), so
    // the new bytes are lost to the framing.
    detail::lose_bytes(d, seg_seq + plen - d.next_seq, ev);
    d.next_seq = seg_end;
    if (fin || rst) d.ended = true;
    return;
  }
  if (delta > 0) {
    ev.gap = true;
    detail::lose_bytes(d, static_cast<uint32_t>(delta), ev);
  }
  if (c.dir[0].ended && c.dir[1].ended && delta > 0) {
    stream_conn_reset(c);  // new data after both ends closed: a new connection
    d.seq_known = true;
  }
  d.next_seq = seg_end;
  if (d.phase == stream_phase::skip_segment) d.phase = stream_phase::msg_start;  // look at this segment's start
  uint32_t cap = 0;
  if (p.payload_off <= len) cap = plen < len - p.payload_off ? plen : len - p.payload_off;
  if (cap > 0) {
    if (c.dns) {
      detail::feed_dns(d, frame, p.payload_off, cap, ev);
    } else {
      detail::feed_http(c, d, frame + p.payload_off, cap, ev);
    }
  }
  if (cap < plen) {  // bytes not captured
    const uint32_t miss = plen - cap;
    const bool skippable =
        d.phase == stream_phase::http_until_close ||
        ((d.phase == stream_phase::http_body || d.phase == stream_phase::http_chunk_data) && d.left >= miss) ||
        (d.phase == stream_phase::dns_message && d.line_len >= dns_header_len && d.left > miss);
    if (skippable) {
      if (d.phase != stream_phase::http_until_close) d.left -= miss;
      if (d.left == 0 && d.phase == stream_phase::http_body) detail::complete_http(d, ev);
      if (d.left == 0 && d.phase == stream_phase::http_chunk_data) d.phase = stream_phase::http_chunk_crlf;
    } else if (d.phase != stream_phase::skip_segment) {
      detail::drop_message(d, ev, stream_phase::msg_start);
    }
  }
  if (d.phase == stream_phase::skip_segment) d.phase = stream_phase::msg_start;
  if (fin || rst) {
    d.ended = true;
    if (d.phase == stream_phase::http_until_close) {
      if (fin) {
        detail::complete_http(d, ev);
      } else {
        detail::drop_message(d, ev, stream_phase::msg_start);
      }
    }
  }
}

}  // namespace gnio::device
