// SPDX-License-Identifier: Apache-2.0
// Inline headers (device::pkt_frame): parsing and filtering a frame whose
// first bytes come from a completion's copy give the same result as reading
// the whole frame from its buffer, on every frame of every capture in
// tests/data, for every copy size a queue may ask for. The copy is a heap
// block of exactly its size, so a read past it is a sanitizer error.
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <gnio/device/bpf.hpp>
#include <gnio/device/pkt.hpp>
#include <gnio/device/ring.hpp>
#include <gnio/filter.hpp>

#include "support/frames.hpp"
#include "support/process.hpp"

namespace {

namespace gd = gnio::device;
const bool k_env = gnio::test::env_check({"GNIO_TEST_DATA_DIR"});

struct capture {
  std::string name;
  std::vector<std::vector<uint8_t>> frames;
};

// Every Ethernet capture under tests/data (the corpus included).
const std::vector<capture>& ethernet_captures() {
  static const std::vector<capture> all = [] {
    std::vector<capture> out;
    for (const auto& e : std::filesystem::recursive_directory_iterator(gnio::test::data_dir())) {
      const std::string p = e.path().string();
      if (!e.is_regular_file() || !(p.ends_with(".pcap") || p.ends_with(".pcapng"))) continue;
      char err[PCAP_ERRBUF_SIZE];
      pcap_t* h = pcap_open_offline(p.c_str(), err);
      if (!h) continue;  // damaged on purpose: the pcap backend's tests read those
      const int link = pcap_datalink(h);
      pcap_close(h);
      if (link != DLT_EN10MB) continue;
      out.push_back({p, gnio::test::read_pcap(p)});
    }
    return out;
  }();
  return all;
}

// The copy sizes a queue may ask for.
std::vector<uint32_t> inline_sizes() {
  std::vector<uint32_t> v;
  for (uint32_t n = gd::rx_inline_unit; n <= gd::rx_inline_max; n += gd::rx_inline_unit) v.push_back(n);
  return v;
}

// A frame as a queue with n bytes of inline headers holds it: the copy in a
// block of its own, of exactly min(len, n) bytes.
struct split {
  std::unique_ptr<uint8_t[]> hdr;
  gd::frame_ref ref;
  split(const std::vector<uint8_t>& f, uint32_t n) {
    const uint32_t len = static_cast<uint32_t>(f.size());
    const uint32_t h = len < n ? len : n;
    hdr = std::make_unique<uint8_t[]>(h ? h : 1);
    if (h) std::memcpy(hdr.get(), f.data(), h);
    ref = gd::frame_ref{hdr.get(), h, f.data(), len, n};
  }
};

bool same(const gd::parsed_pkt& a, const gd::parsed_pkt& b) { return std::memcmp(&a, &b, sizeof a) == 0; }

TEST(InlineHeaders, ParsingFromTheCopyEqualsParsingTheBuffer) {
  ASSERT_TRUE(k_env);
  const auto& caps = ethernet_captures();
  ASSERT_GT(caps.size(), 100u) << "tests/data holds hundreds of Ethernet captures";
  uint64_t frames = 0, from_copy = 0, bad = 0;
  for (const auto& c : caps) {
    for (const auto& f : c.frames) {
      gd::parsed_pkt want;
      std::memset(&want, 0, sizeof want);
      const bool want_ok = gd::parse(f.data(), static_cast<uint32_t>(f.size()), want);
      for (uint32_t n : inline_sizes()) {
        split s(f, n);
        gd::parsed_pkt got;
        std::memset(&got, 0, sizeof got);
        const uint8_t* base = nullptr;
        const bool ok = gd::parse(s.ref, got, &base);
        ++frames;
        if (base == s.ref.hdr) {
          ++from_copy;
          // Read from the copy alone: every header the result names ends inside it.
          if (!s.ref.whole() && got.payload_off > s.ref.hdr_len && ++bad <= 5)
            ADD_FAILURE() << c.name << ": headers end at " << got.payload_off << ", past the copy's " << s.ref.hdr_len;
        } else if (base != s.ref.data && ++bad <= 5) {
          ADD_FAILURE() << c.name << ": base is neither the copy nor the buffer";
        }
        if ((ok != want_ok || !same(got, want)) && ++bad <= 5)
          ADD_FAILURE() << c.name << ": frame of " << f.size() << " bytes with " << n
                        << " inline: the parse differs from the buffer's (l3_off " << got.l3_off << " vs "
                        << want.l3_off << ", l4_off " << got.l4_off << " vs " << want.l4_off << ", error "
                        << static_cast<int>(got.error) << " vs " << static_cast<int>(want.error) << ")";
      }
    }
  }
  EXPECT_EQ(bad, 0u);
  // The point of the copy: most frames never need their buffer.
  EXPECT_GT(from_copy, frames / 2) << from_copy << " of " << frames << " parses used the copy alone";
  RecordProperty("parses", std::to_string(frames));
  RecordProperty("from_copy", std::to_string(from_copy));
}

TEST(InlineHeaders, PlainTcpOverIpv4NeedsNoBufferPastItsHeaders) {
  ASSERT_TRUE(k_env);
  // http.pcap: TCP over IPv4 without IP options; with 64 bytes inline a frame
  // is parsed from the copy exactly when its headers (TCP options included)
  // end within 64 bytes.
  const auto frames = gnio::test::read_pcap(gnio::test::data_path("http.pcap"));
  ASSERT_EQ(frames.size(), 43u);
  uint32_t copy_only = 0;
  for (const auto& f : frames) {
    gd::parsed_pkt full;
    gd::parse(f.data(), static_cast<uint32_t>(f.size()), full);
    split s(f, 64);
    gd::parsed_pkt got;
    const uint8_t* base = nullptr;
    gd::parse(s.ref, got, &base);
    const bool fits = s.ref.whole() || full.payload_off <= 64;
    EXPECT_EQ(base == s.ref.hdr, fits) << "frame of " << f.size() << " bytes, headers to " << full.payload_off;
    copy_only += base == s.ref.hdr;
  }
  EXPECT_EQ(copy_only, 43u) << "every frame's Ethernet, IPv4 and TCP headers fit in 64 bytes";
}

TEST(InlineHeaders, FilteringFromTheCopyEqualsFilteringTheBuffer) {
  ASSERT_TRUE(k_env);
  // The expressions of tests/integration/filter_test.py, and loads far into
  // the payload.
  const char* exprs[] = {"udp",
                         "tcp port 80",
                         "ip6",
                         "vlan",
                         "icmp or arp",
                         "net 10.0.0.0/8",
                         "udp and dst port 53",
                         "tcp[tcpflags] & tcp-syn != 0",
                         "greater 200",
                         "not ip",
                         "ether[300] = 0x41 or ip[100:2] > 1000",
                         "tcp[((tcp[12:1] & 0xf0) >> 2):4] = 0x47455420"};
  uint64_t checked = 0, matched = 0, bad = 0;
  for (const char* e : exprs) {
    auto pf = gnio::compile_filter(e);
    ASSERT_TRUE(pf.ok()) << e << ": " << pf.err().what();
    const gd::bpf_prog prog{pf->insns.data(), static_cast<uint32_t>(pf->insns.size())};
    for (const auto& c : ethernet_captures()) {
      for (const auto& f : c.frames) {
        const uint32_t len = static_cast<uint32_t>(f.size());
        const bool want = gd::bpf_match(prog, f.data(), len, len);
        matched += want;
        for (uint32_t n : {32u, 64u, 128u, 224u}) {
          split s(f, n);
          ++checked;
          if (gd::bpf_match(prog, s.ref, len) != want && ++bad <= 5)
            ADD_FAILURE() << e << " on " << c.name << ", frame of " << len << " bytes, " << n << " inline";
        }
      }
    }
  }
  EXPECT_EQ(bad, 0u) << "of " << checked;
  EXPECT_GT(matched, 0u);
}

}  // namespace
