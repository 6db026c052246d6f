// SPDX-License-Identifier: Apache-2.0
// The gen backend driven through its ops table, as the core's engine would.
// Checksums are verified with code written here, not with the helpers gen
// uses, so a shared mistake cannot hide; tshark (when installed) is a second,
// fully independent opinion.

#include <gtest/gtest.h>
#include <pcap/pcap.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "gnio/backend/backend.hpp"

namespace gnio::backend {
extern const ops gen_ops;
}

namespace {

using gnio::status;
using gnio::backend::devargs;
using gnio::backend::gen_ops;
using gnio::backend::rx_lane;
using frame_fn = std::function<void(const uint8_t* f, uint32_t len, uint64_t ts_ns)>;

struct port {
  void* priv = nullptr;
  port() = default;
  port(const port&) = delete;
  port& operator=(const port&) = delete;
  ~port() {
    if (priv) gen_ops.close(priv);
  }
};

gnio::error open_port(const std::string& opts, port& p) {
  auto a = gnio::backend::parse_devargs("gen:" + opts);
  if (!a) return a.err();
  return gen_ops.open(*a, &p.priv);
}

// Opens and starts, failing the test on any error.
void must_open(const std::string& opts, port& p) {
  auto e = open_port(opts, p);
  ASSERT_TRUE(e.ok()) << opts << ": " << e.what();
  ASSERT_TRUE(gen_ops.start(p.priv).ok());
}

// Hands every frame to a function, or refuses them all.
struct fn_collector : rx_lane::collector {
  frame_fn fn;
  bool refuse = false;
  uint32_t offers = 0;
  bool take(const uint8_t* f, uint32_t len, uint32_t wire_len, uint64_t ts_ns) override {
    ++offers;
    if (refuse) return false;
    EXPECT_EQ(len, wire_len);
    if (fn) fn(f, len, ts_ns);
    return true;
  }
};

struct run_result {
  uint64_t frames = 0;
  status last = status::success;
  int64_t longest_call_ns = 0;
};

// Pulls frames until end of stream or max_frames, waiting briefly on again.
run_result pull(port& p, uint64_t max_frames, frame_fn fn, uint32_t budget = 64) {
  fn_collector c;
  c.fn = std::move(fn);
  rx_lane sink(c);
  run_result r;
  while (r.frames < max_frames) {
    uint32_t want = static_cast<uint32_t>(std::min<uint64_t>(budget, max_frames - r.frames));
    uint32_t got = 0;
    auto t0 = std::chrono::steady_clock::now();
    r.last = gen_ops.rx_burst(p.priv, sink, want, &got);
    auto dt = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
    r.longest_call_ns = std::max<int64_t>(r.longest_call_ns, dt);
    EXPECT_LE(got, want);
    r.frames += got;
    if (r.last == status::shutdown) {
      EXPECT_EQ(got, 0u);
      break;
    }
    if (r.last == status::again) {
      EXPECT_EQ(got, 0u);
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      continue;
    }
    EXPECT_EQ(r.last, status::success);
    if (r.last != status::success) break;
  }
  return r;
}

std::vector<std::vector<uint8_t>> collect(port& p, uint64_t n) {
  std::vector<std::vector<uint8_t>> out;
  pull(p, n, [&](const uint8_t* f, uint32_t len, uint64_t) { out.emplace_back(f, f + len); });
  return out;
}

// ---------------------------------------------------------------------------
// Independent decoding and checksum verification
// ---------------------------------------------------------------------------

uint16_t rd16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
uint32_t rd32(const uint8_t* p) { return uint32_t{rd16(p)} << 16 | rd16(p + 2); }

// RFC 1071, byte by byte: slow and obvious on purpose.
uint32_t ones_sum(const uint8_t* p, size_t n, uint32_t sum = 0) {
  for (size_t i = 0; i < n; i += 2) sum += uint32_t{p[i]} << 8 | (i + 1 < n ? p[i + 1] : 0);
  return sum;
}
uint16_t fold_complement(uint32_t sum) {
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

struct decoded {
  bool has_vlan = false;
  uint16_t vlan = 0;
  uint8_t proto = 0;
  uint32_t src = 0, dst = 0;
  uint16_t sport = 0, dport = 0;  // ICMP: identifier and 0
  uint8_t tcp_flags = 0;
  uint8_t icmp_type = 0;
  auto tuple() const { return std::make_tuple(src, dst, proto, sport, dport); }
};

// Checks structure, lengths and every checksum; records failures as test failures.
decoded decode_and_verify(const uint8_t* f, uint32_t len) {
  decoded d;
  EXPECT_GE(len, 60u);
  uint32_t off = 12;
  uint16_t et = rd16(f + off);
  if (et == 0x8100) {
    d.has_vlan = true;
    d.vlan = rd16(f + off + 2) & 0xfff;
    off += 4;
    et = rd16(f + off);
  }
  EXPECT_EQ(et, 0x0800);
  const uint8_t* ip = f + off + 2;
  const uint32_t ip_len = len - (off + 2);
  EXPECT_EQ(ip[0], 0x45);
  EXPECT_EQ(rd16(ip + 2), ip_len) << "IP total length must cover the whole frame";
  EXPECT_EQ(rd16(ip + 6) & 0x3fff, 0) << "no fragments";
  EXPECT_EQ(fold_complement(ones_sum(ip, 20)), 0) << "IPv4 header checksum";
  d.proto = ip[9];
  d.src = rd32(ip + 12);
  d.dst = rd32(ip + 16);
  const uint8_t* l4 = ip + 20;
  const uint32_t l4_len = ip_len - 20;
  uint32_t pseudo = (d.src >> 16) + (d.src & 0xffff) + (d.dst >> 16) + (d.dst & 0xffff) + d.proto + l4_len;
  switch (d.proto) {
    case 17:
      d.sport = rd16(l4);
      d.dport = rd16(l4 + 2);
      EXPECT_EQ(rd16(l4 + 4), l4_len);
      EXPECT_NE(rd16(l4 + 6), 0) << "UDP checksum must be present";
      EXPECT_EQ(fold_complement(ones_sum(l4, l4_len, pseudo)), 0) << "UDP checksum";
      break;
    case 6:
      d.sport = rd16(l4);
      d.dport = rd16(l4 + 2);
      d.tcp_flags = l4[13];
      EXPECT_EQ(l4[12] >> 4, 5);
      EXPECT_EQ(fold_complement(ones_sum(l4, l4_len, pseudo)), 0) << "TCP checksum";
      break;
    case 1:
      d.icmp_type = l4[0];
      d.sport = rd16(l4 + 4);
      EXPECT_EQ(fold_complement(ones_sum(l4, l4_len)), 0) << "ICMP checksum";
      break;
    default: ADD_FAILURE() << "unexpected IP protocol " << int{d.proto};
  }
  return d;
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

TEST(GenBackend, CountGivesExactlyThatManyFramesThenShutdown) {
  port p;
  must_open("count=1000", p);
  gnio::port_caps caps;
  gen_ops.get_caps(p.priv, &caps);
  EXPECT_TRUE(caps.finite);
  EXPECT_TRUE(caps.rx);
  EXPECT_TRUE(caps.tx);
  EXPECT_EQ(caps.max_pkt_bytes, 9000u);
  uint64_t n = 0;
  // 64 does not divide 1000, so the last burst must be cut short.
  auto r = pull(p, UINT64_MAX, [&](const uint8_t*, uint32_t, uint64_t) { ++n; });
  EXPECT_EQ(r.last, status::shutdown);
  EXPECT_EQ(r.frames, 1000u);
  EXPECT_EQ(n, 1000u);
  fn_collector none;
  rx_lane dummy(none);
  uint32_t got = 7;
  EXPECT_EQ(gen_ops.rx_burst(p.priv, dummy, 64, &got), status::shutdown);
  EXPECT_EQ(got, 0u);
  gnio::backend::counters c;
  gen_ops.get_counters(p.priv, &c);
  EXPECT_EQ(c.rx_frames, 1000u);
  EXPECT_EQ(c.rx_bytes, 64000u);
  EXPECT_TRUE(gen_ops.stop(p.priv).ok());
}

TEST(GenBackend, DroppedOffersStillCount) {
  port p;
  must_open("count=100", p);
  fn_collector c;
  c.refuse = true;
  rx_lane refusing(c);
  const uint32_t& offers = c.offers;
  uint32_t got = 0, total = 0;
  status s;
  while ((s = gen_ops.rx_burst(p.priv, refusing, 32, &got)) == status::success) total += got;
  EXPECT_EQ(s, status::shutdown);
  EXPECT_EQ(total, 100u);
  EXPECT_EQ(offers, 100u);
}

TEST(GenBackend, InfiniteWithoutCountOrDuration) {
  port p;
  must_open("", p);
  gnio::port_caps caps;
  gen_ops.get_caps(p.priv, &caps);
  EXPECT_FALSE(caps.finite);
  auto r = pull(p, 50000, [](const uint8_t*, uint32_t, uint64_t) {});
  EXPECT_EQ(r.frames, 50000u);
  EXPECT_EQ(r.last, status::success);
}

TEST(GenBackend, FixedSizes) {
  for (uint32_t size : {60u, 64u, 1500u, 9000u}) {
    port p;
    must_open("count=300,size=" + std::to_string(size), p);
    auto frames = collect(p, UINT64_MAX);
    ASSERT_EQ(frames.size(), 300u);
    for (const auto& f : frames) {
      ASSERT_EQ(f.size(), size);
      decode_and_verify(f.data(), size);
    }
  }
}

TEST(GenBackend, SizeRangeStaysInRangeAndSpreads) {
  // flows=1 fits prebuilt templates for every size; flows=1024 does not and
  // patches headers per frame. Both must give valid frames.
  for (const char* flows : {"1", "1024"}) {
    port p;
    must_open(std::string("count=5000,size=64-1500,mix=all,flows=") + flows, p);
    uint32_t lo = UINT32_MAX, hi = 0;
    std::set<uint32_t> seen;
    pull(p, UINT64_MAX, [&](const uint8_t* f, uint32_t len, uint64_t) {
      lo = std::min(lo, len);
      hi = std::max(hi, len);
      seen.insert(len);
      decode_and_verify(f, len);
    });
    EXPECT_GE(lo, 64u);
    EXPECT_LE(hi, 1500u);
    EXPECT_LT(lo, 100u) << "a uniform pick over 1437 sizes should come near the bottom in 5000 frames";
    EXPECT_GT(hi, 1450u);
    EXPECT_GT(seen.size(), 900u);
  }
}

TEST(GenBackend, ImixProportions) {
  port p;
  must_open("count=24000,size=imix", p);
  std::map<uint32_t, uint32_t> by_size;
  pull(p, UINT64_MAX, [&](const uint8_t* f, uint32_t len, uint64_t) {
    ++by_size[len];
    decode_and_verify(f, len);
  });
  ASSERT_EQ(by_size.size(), 3u);
  EXPECT_NEAR(by_size[64] / 24000.0, 7 / 12.0, 0.02);
  EXPECT_NEAR(by_size[576] / 24000.0, 4 / 12.0, 0.02);
  EXPECT_NEAR(by_size[1500] / 24000.0, 1 / 12.0, 0.015);
}

TEST(GenBackend, FlowsGiveExactlyThatManyFiveTuples) {
  for (uint32_t flows : {1u, 7u, 1000u, 70000u}) {
    port p;
    must_open("size=60,mix=all,flows=" + std::to_string(flows), p);
    std::set<std::tuple<uint32_t, uint32_t, uint8_t, uint16_t, uint16_t>> tuples;
    std::set<uint32_t> src_ips;
    std::set<uint16_t> src_ports;
    pull(p, 3ull * flows, [&](const uint8_t* f, uint32_t len, uint64_t) {
      auto d = decode_and_verify(f, len);
      tuples.insert(d.tuple());
      src_ips.insert(d.src);
      src_ports.insert(d.sport);
    });
    EXPECT_EQ(tuples.size(), flows);
    // Both fields vary so that hashes over either spread the flows.
    EXPECT_EQ(src_ips.size(), std::min(flows, 65536u));
    EXPECT_EQ(src_ports.size(), std::min(flows, 64511u));
  }
}

TEST(GenBackend, MixProportions) {
  port p;
  must_open("count=12000,mix=udp70/tcp20/icmp10", p);
  std::map<uint8_t, uint32_t> by_proto;
  pull(p, UINT64_MAX, [&](const uint8_t* f, uint32_t len, uint64_t) {
    auto d = decode_and_verify(f, len);
    ++by_proto[d.proto];
    if (d.proto == 6) {
      EXPECT_EQ(d.tcp_flags, 0x18) << "ACK|PSH data segment";
    }
    if (d.proto == 1) {
      EXPECT_EQ(d.icmp_type, 8) << "echo request";
    }
  });
  EXPECT_NEAR(by_proto[17] / 12000.0, 0.70, 0.02);
  EXPECT_NEAR(by_proto[6] / 12000.0, 0.20, 0.02);
  EXPECT_NEAR(by_proto[1] / 12000.0, 0.10, 0.02);
}

TEST(GenBackend, SingleProtocolMixes) {
  for (auto [opt, proto] : {std::pair{"udp", 17}, std::pair{"tcp", 6}, std::pair{"icmp", 1}}) {
    port p;
    must_open(std::string("count=2000,mix=") + opt, p);
    pull(p, UINT64_MAX, [&, proto = proto](const uint8_t* f, uint32_t len, uint64_t) {
      EXPECT_EQ(decode_and_verify(f, len).proto, proto);
    });
  }
  port p;
  must_open("count=3000,mix=all", p);
  std::map<uint8_t, uint32_t> by_proto;
  pull(p, UINT64_MAX, [&](const uint8_t* f, uint32_t len, uint64_t) { ++by_proto[decode_and_verify(f, len).proto]; });
  for (int proto : {17, 6, 1}) EXPECT_NEAR(by_proto[static_cast<uint8_t>(proto)] / 3000.0, 1 / 3.0, 0.02);
}

TEST(GenBackend, ChecksumsVerifyInEveryMode) {
  // Covers templates and header patching, with and without a VLAN tag.
  for (const char* opts :
       {"count=3000,mix=all,size=60", "count=3000,mix=all,size=1500,vlan=42", "count=3000,mix=all,size=61-67",
        "count=3000,mix=all,size=imix,vlan=7", "count=3000,mix=all,size=60-9000,flows=4096,vlan=4094",
        "count=500,mix=all,size=9000,flows=8192", "count=3000,mix=all,src=10.255.255.0,dst=192.0.2.1,flows=512"}) {
    SCOPED_TRACE(opts);
    port p;
    must_open(opts, p);
    bool vlan = std::string(opts).find("vlan=") != std::string::npos;
    pull(p, UINT64_MAX, [&](const uint8_t* f, uint32_t len, uint64_t) {
      auto d = decode_and_verify(f, len);
      EXPECT_EQ(d.has_vlan, vlan);
    });
  }
}

TEST(GenBackend, AddressesAndVlan) {
  port p;
  must_open("count=10,flows=4,src=10.1.2.3,dst=192.0.2.9,vlan=100", p);
  std::set<uint32_t> srcs;
  pull(p, UINT64_MAX, [&](const uint8_t* f, uint32_t len, uint64_t) {
    auto d = decode_and_verify(f, len);
    EXPECT_EQ(d.vlan, 100);
    EXPECT_EQ(d.dst, 0xC0000209u);
    srcs.insert(d.src);
  });
  EXPECT_EQ(srcs, (std::set<uint32_t>{0x0A010203, 0x0A010204, 0x0A010205, 0x0A010206}));
}

TEST(GenBackend, SameSeedSameSequence) {
  for (const char* opts :
       {"size=64-1500,flows=100,mix=all", "size=imix,flows=1000,mix=udp2/tcp1", "size=60-9000,flows=2048,mix=all"}) {
    SCOPED_TRACE(opts);
    port a, b, c;
    must_open(std::string(opts) + ",seed=7", a);
    must_open(std::string(opts) + ",seed=7", b);
    must_open(std::string(opts) + ",seed=8", c);
    // Different budgets must not change the sequence.
    std::vector<std::vector<uint8_t>> fa, fb, fc;
    pull(
        a, 3000, [&](const uint8_t* f, uint32_t len, uint64_t) { fa.emplace_back(f, f + len); }, 64);
    pull(
        b, 3000, [&](const uint8_t* f, uint32_t len, uint64_t) { fb.emplace_back(f, f + len); }, 13);
    pull(
        c, 3000, [&](const uint8_t* f, uint32_t len, uint64_t) { fc.emplace_back(f, f + len); }, 64);
    EXPECT_TRUE(fa == fb);
    EXPECT_FALSE(fa == fc);
  }
}

TEST(GenBackend, TimestampsAreBurstTimePlusIndex) {
  port p;
  must_open("count=64", p);
  std::vector<uint64_t> ts;
  const auto before = std::chrono::system_clock::now().time_since_epoch();
  pull(p, UINT64_MAX, [&](const uint8_t*, uint32_t, uint64_t t) { ts.push_back(t); });
  ASSERT_EQ(ts.size(), 64u);
  EXPECT_GE(ts[0], static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(before).count()));
  for (size_t i = 1; i < ts.size(); ++i) EXPECT_EQ(ts[i], ts[0] + i);
}

TEST(GenBackend, BadOptionsNameTheOption) {
  struct bad {
    const char* opts;
    const char* named;
  };
  for (auto [opts, named] : {bad{"size=10", "size"},        bad{"size=abc", "size"},          bad{"size=9001", "size"},
                             bad{"size=1500-64", "size"},   bad{"size=64-", "size"},          bad{"size=", "size"},
                             bad{"flows=0", "flows"},       bad{"flows=2000000", "flows"},    bad{"bogus=1", "bogus"},
                             bad{"mix=bogus", "mix"},       bad{"mix=udp/udp", "mix"},        bad{"mix=udp0", "mix"},
                             bad{"mix=udp70/tcpx", "mix"},  bad{"rate=fast", "rate"},         bad{"count=0", "count"},
                             bad{"duration=0", "duration"}, bad{"duration=soon", "duration"}, bad{"seed=x", "seed"},
                             bad{"vlan=4095", "vlan"},      bad{"src=1.2.3", "src"},          bad{"dst=::1", "dst"}}) {
    SCOPED_TRACE(opts);
    port p;
    auto e = open_port(opts, p);
    EXPECT_TRUE(e.code() == status::invalid_value || e.code() == status::bad_config) << e.what();
    EXPECT_NE(e.message().find(named), std::string::npos) << e.message();
    EXPECT_EQ(p.priv, nullptr);
  }
}

// F17c: a duration or rate that overflows (1e11 s is past what 64-bit
// nanoseconds hold; 1e308G is infinite) or rounds to nothing (0.1 ns) is
// refused with its key and the valid range, not cast with undefined behaviour.
TEST(GenBackend, DurationsAndRatesOutsideTheirRangeAreRefused) {
  for (const char* opts : {"duration=1e11", "duration=1e300", "duration=0.0000000001", "duration=2e7m",
                           "rate=1e308Gpps", "rate=1e13", "rate=2e3Gpps", "rate=2e6Gbps"}) {
    SCOPED_TRACE(opts);
    port p;
    auto e = open_port(opts, p);
    EXPECT_EQ(e.code(), status::invalid_value) << e.what();
    const std::string key = std::string(opts).substr(0, std::string(opts).find('=') + 1);
    EXPECT_NE(e.message().find(key), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("out of range"), std::string::npos) << e.message();
    EXPECT_EQ(p.priv, nullptr);
  }
  // The ends of the ranges still open.
  for (const char* opts : {"duration=1e9", "duration=0.000001ms", "rate=1e12", "rate=1e15bps"}) {
    SCOPED_TRACE(opts);
    port p;
    auto e = open_port(opts, p);
    EXPECT_TRUE(e.ok()) << e.what();
  }
}

// A rate with a prefix and no unit (10G: a 10G link, or 10 Gpps?) is
// refused, naming both spellings, not taken as packets per second. A plain
// number is packets per second, as documented.
TEST(GenBackend, ARateWithAPrefixButNoUnitIsAmbiguous) {
  for (const auto& [opts, hint] : {std::pair{"rate=10G", "10Gpps (packets) or 10Gbps (bits)"},
                                   std::pair{"rate=2.5M", "2.5Mpps (packets) or 2.5Mbps (bits)"},
                                   std::pair{"rate=500k", "500kpps (packets) or 500kbps (bits)"}}) {
    SCOPED_TRACE(opts);
    port p;
    auto e = open_port(opts, p);
    EXPECT_EQ(e.code(), status::invalid_value) << e.what();
    EXPECT_NE(e.message().find(std::string(opts) + " is ambiguous"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find(hint), std::string::npos) << e.message();
    EXPECT_EQ(p.priv, nullptr);
  }
  for (const char* opts : {"rate=1000", "rate=10Gbps", "rate=10Mpps", "rate=500kpps"}) {
    SCOPED_TRACE(opts);
    port p;
    auto e = open_port(opts, p);
    EXPECT_TRUE(e.ok()) << e.what();
  }
}

TEST(GenBackend, RatePacesInPackets) {
  port p;
  auto t0 = std::chrono::steady_clock::now();
  must_open("rate=20000pps,count=2000", p);
  auto r = pull(p, UINT64_MAX, [](const uint8_t*, uint32_t, uint64_t) {});
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.frames, 2000u);
  EXPECT_EQ(r.last, status::shutdown);
  EXPECT_GE(ms, 80);  // 100 ms nominal, less the initial bucket
  EXPECT_LT(r.longest_call_ns, 5'000'000) << "rx_burst must not block while pacing";
}

TEST(GenBackend, RatePacesInBits) {
  // 100-byte frames are 124 bytes on the wire: 10 Mbps is ~10080 frames/s.
  port p;
  auto t0 = std::chrono::steady_clock::now();
  must_open("rate=10Mbps,count=1000,size=100", p);
  auto r = pull(p, UINT64_MAX, [](const uint8_t*, uint32_t, uint64_t) {});
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.frames, 1000u);
  EXPECT_GE(ms, 80);
}

TEST(GenBackend, DurationEndsTheStream) {
  port p;
  must_open("duration=50ms", p);
  gnio::port_caps caps;
  gen_ops.get_caps(p.priv, &caps);
  EXPECT_TRUE(caps.finite);
  auto t0 = std::chrono::steady_clock::now();
  auto r = pull(p, UINT64_MAX, [](const uint8_t*, uint32_t, uint64_t) {});
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.last, status::shutdown);
  EXPECT_GE(ms, 45);
  EXPECT_GT(r.frames, 0u);
}

TEST(GenBackend, TxCountsAndDiscards) {
  port p;
  must_open("", p);
  uint8_t a[64] = {}, b[1500] = {};
  gnio::backend::tx_frame frames[3] = {{a, 64}, {b, 1500}, {a, 60}};
  uint32_t sent = 0;
  ASSERT_TRUE(gen_ops.tx_burst(p.priv, frames, 3, &sent).ok());
  EXPECT_EQ(sent, 3u);
  gnio::backend::counters c;
  gen_ops.get_counters(p.priv, &c);
  EXPECT_EQ(c.tx_frames, 3u);
  EXPECT_EQ(c.tx_bytes, 1624u);
  EXPECT_EQ(c.rx_frames, 0u);
}

// ---------------------------------------------------------------------------
// tshark cross-check
// ---------------------------------------------------------------------------

bool have_tshark() { return std::system("command -v tshark >/dev/null 2>&1") == 0; }

void write_pcap(const std::string& path, const std::vector<std::vector<uint8_t>>& frames) {
  pcap_t* dead = pcap_open_dead(DLT_EN10MB, 65535);
  ASSERT_NE(dead, nullptr);
  pcap_dumper_t* d = pcap_dump_open(dead, path.c_str());
  ASSERT_NE(d, nullptr) << pcap_geterr(dead);
  for (const auto& f : frames) {
    pcap_pkthdr h{};
    h.caplen = h.len = static_cast<uint32_t>(f.size());
    pcap_dump(reinterpret_cast<u_char*>(d), &h, f.data());
  }
  pcap_dump_close(d);
  pcap_close(dead);
}

// Runs tshark over a file and returns its output lines; fails on a nonzero exit
// so that a bad filter cannot pass as "no bad checksums".
std::vector<std::string> tshark_lines(const std::string& args) {
  std::string cmd = "tshark " + args + " 2>/dev/null";
  FILE* f = popen(cmd.c_str(), "r");
  EXPECT_NE(f, nullptr);
  if (!f) return {};
  std::vector<std::string> lines;
  char buf[4096];
  while (fgets(buf, sizeof buf, f)) lines.emplace_back(buf);
  EXPECT_EQ(pclose(f), 0) << cmd;
  return lines;
}

TEST(GenBackend, TsharkFindsNoBadChecksums) {
  if (!have_tshark()) GTEST_SKIP() << "tshark not installed";
  // Status names rather than numbers: in tshark 4.0 "Bad" is 0 and 2 means
  // "Unverified", so a numeric '==2' filter would never catch a bad checksum.
  const std::string prefs = "-o udp.check_checksum:TRUE -o tcp.check_checksum:TRUE -o ip.check_checksum:TRUE ";
  const std::string bad_filter =
      prefs +
      "-Y 'ip.checksum.status==\"Bad\" or udp.checksum.status==\"Bad\" or tcp.checksum.status==\"Bad\" or "
      "icmp.checksum.status==\"Bad\"'";
  const std::string good_filter =
      prefs +
      "-Y 'ip.checksum.status==\"Good\" and (udp.checksum.status==\"Good\" or tcp.checksum.status==\"Good\" or "
      "icmp.checksum.status==\"Good\")'";
  const std::string dir = ::testing::TempDir();
  for (const char* opts : {"count=3000,mix=all,size=64-1500,flows=1024,vlan=5", "count=3000,mix=all,size=imix,flows=64",
                           "count=1000,mix=udp2/tcp1/icmp1,size=60"}) {
    SCOPED_TRACE(opts);
    port p;
    must_open(opts, p);
    auto frames = collect(p, UINT64_MAX);
    const std::string path = dir + "gen_test_" + std::to_string(getpid()) + ".pcap";
    write_pcap(path, frames);
    auto bad = tshark_lines("-r " + path + " " + bad_filter);
    EXPECT_TRUE(bad.empty()) << bad.size() << " frames with bad checksums, first: " << bad[0];
    // Every frame verified, IP and L4 alike: none skipped as unverified.
    EXPECT_EQ(tshark_lines("-r " + path + " " + good_filter).size(), frames.size());

    // The same pipeline must notice damaged frames, or the checks above prove nothing.
    frames.resize(4);
    for (auto& f : frames) f.back() ^= 0x55;
    write_pcap(path, frames);
    EXPECT_EQ(tshark_lines("-r " + path + " " + bad_filter).size(), 4u);
    std::remove(path.c_str());
  }
}

}  // namespace
