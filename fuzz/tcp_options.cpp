// SPDX-License-Identifier: Apache-2.0
// The TCP option walker (MSS, window scale, SACK-permitted, SACK, timestamps,
// NOP/EOL and unknown kinds), behind a TCP header whose data offset the input
// chooses, inside an IPv4 packet.
//
// Input: the option bytes (up to 40 used). Checks: the walk stops inside the
// options, every field it reports is the value of a well-formed option of
// that kind found by an independent walk, and parse() of the whole packet
// reports the same options.
#include <gnio/device/pkt.hpp>

#include <cstring>

#include "check.hpp"

using namespace gnio::device;

namespace {

// An independent walk: what the first well-formed option of each kind says.
struct expect {
  bool mss = false, wscale = false, sackp = false, ts = false, error = false;
  uint16_t mss_v = 0;
  uint8_t wscale_v = 0, sack_blocks = 0;
  uint32_t ts_val = 0, ts_ecr = 0;
};

expect walk(const uint8_t* q, uint32_t n) {
  expect e;
  for (uint32_t i = 0; i < n;) {
    if (q[i] == 0) break;
    if (q[i] == 1) {
      ++i;
      continue;
    }
    if (i + 1 >= n || q[i + 1] < 2 || i + q[i + 1] > n) {
      e.error = true;
      break;
    }
    const uint8_t kind = q[i], olen = q[i + 1];
    const uint8_t* o = q + i;
    if (kind == 2 && olen == 4) e.mss = true, e.mss_v = static_cast<uint16_t>(o[2] << 8 | o[3]);
    else if (kind == 3 && olen == 3) e.wscale = true, e.wscale_v = o[2];
    else if (kind == 4 && olen == 2) e.sackp = true;
    else if (kind == 5 && (olen - 2) % 8 == 0) e.sack_blocks = static_cast<uint8_t>((olen - 2) / 8);
    else if (kind == 8 && olen == 10) {
      e.ts = true;
      e.ts_val = static_cast<uint32_t>(o[2]) << 24 | o[3] << 16 | o[4] << 8 | o[5];
      e.ts_ecr = static_cast<uint32_t>(o[6]) << 24 | o[7] << 16 | o[8] << 8 | o[9];
    } else if (kind == 2 || kind == 3 || kind == 4 || kind == 5 || kind == 8) {
      // A known kind of the wrong size is skipped by its length, as Linux
      // does; only a length that does not fit ends the walk.
      e.error = true;
    }
    i += olen;
  }
  return e;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Options fill whole 32-bit words of the header: pad with EOL like a sender.
  uint8_t opts[40] = {};
  const uint32_t n_in = size < 40 ? static_cast<uint32_t>(size) : 40u;
  std::memcpy(opts, data, n_in);
  const uint32_t n = (n_in + 3) / 4 * 4;

  // Ethernet + IPv4 (no options) + TCP with data offset 5 + n/4.
  uint8_t f[14 + 20 + 60 + 4] = {};
  f[12] = 0x08;
  uint8_t* ip = f + 14;
  const uint32_t tot = 20 + 20 + n + 4;
  ip[0] = 0x45;
  ip[2] = static_cast<uint8_t>(tot >> 8);
  ip[3] = static_cast<uint8_t>(tot);
  ip[8] = 64;
  ip[9] = ipproto_tcp;
  uint8_t* t = ip + 20;
  t[12] = static_cast<uint8_t>((5 + n / 4) << 4);
  t[13] = tcp_syn;
  std::memcpy(t + 20, opts, n);
  const uint32_t len = 14 + tot;

  parsed_pkt p;
  const bool ok = parse(f, len, p);
  GNIO_FUZZ_CHECK(ok);
  GNIO_FUZZ_CHECK(p.l4 == l4_kind::tcp);
  GNIO_FUZZ_CHECK(p.tcp.hdr_len == 20 + n);
  GNIO_FUZZ_CHECK(p.payload_len == 4);

  const expect e = walk(opts, n);
  const tcp_fields& tf = p.tcp;
  GNIO_FUZZ_CHECK(tf.opt_error == e.error);
  // A repeated option: both walks keep the last value.
  GNIO_FUZZ_CHECK(tf.has_mss == e.mss);
  GNIO_FUZZ_CHECK(tf.has_wscale == e.wscale);
  GNIO_FUZZ_CHECK(tf.sack_permitted == e.sackp);
  GNIO_FUZZ_CHECK(tf.has_timestamps == e.ts);
  GNIO_FUZZ_CHECK(tf.sack_blocks == e.sack_blocks && tf.sack_blocks <= 4);
  if (e.mss) GNIO_FUZZ_CHECK(tf.mss == e.mss_v);
  if (e.wscale) GNIO_FUZZ_CHECK(tf.wscale == e.wscale_v);
  if (e.ts) GNIO_FUZZ_CHECK(tf.ts_val == e.ts_val && tf.ts_ecr == e.ts_ecr);

  // The walker on its own over the raw bytes, unpadded: the same verdicts.
  tcp_fields raw{};
  detail::parse_tcp_options(data, n_in, raw);
  const expect er = walk(data, n_in);
  GNIO_FUZZ_CHECK(raw.opt_error == er.error);
  GNIO_FUZZ_CHECK(raw.has_mss == er.mss);
  GNIO_FUZZ_CHECK(raw.has_timestamps == er.ts);
  return 0;
}
