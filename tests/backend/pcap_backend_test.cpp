// SPDX-License-Identifier: Apache-2.0
// Drives the pcap backend's ops table directly against the capture corpus and
// against captures written here, and checks what comes out against libpcap's
// own reading of the same files and against tshark's counts in MANIFEST.tsv.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <pcap/pcap.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gnio/backend/backend.hpp"
#include "gnio/gnio.hpp"
#include "gnio/log.hpp"
#include "support/process.hpp"

namespace gnio::backend {
extern const ops pcap_ops;
}

namespace {

namespace fs = std::filesystem;
using gnio::error;
using gnio::status;
using gnio::backend::pcap_ops;

// tests/data (for its captures) and the corpus (tests/data/corpus, or GNIO_CORPUS_DIR).
const bool k_env =
    gnio::test::env_check({"GNIO_TEST_DATA_DIR", "GNIO_CORPUS_DIR", "GNIO_TOOL_BIN", "GNIO_FLOW_COUNT_BIN"});

std::string corpus_dir() { return gnio::test::corpus_dir(); }

std::string corpus(const std::string& rel) { return corpus_dir() + "/" + rel; }

// Fails (rather than skips) without the corpus, which is bundled.
#define REQUIRE_CORPUS() ASSERT_TRUE(fs::is_regular_file(corpus("MANIFEST.tsv"))) << "no corpus at " << corpus_dir()

// tshark's packet count for a corpus file, from MANIFEST.tsv; -1 when absent.
long manifest_packets(const std::string& rel) {
  std::ifstream in(corpus("MANIFEST.tsv"));
  std::string line;
  if (!std::getline(in, line)) return -1;
  auto split = [](const std::string& s) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    std::string f;
    while (std::getline(ss, f, '\t')) out.push_back(f);
    return out;
  };
  auto header = split(line);
  size_t col = 0;
  while (col < header.size() && header[col] != "packets") ++col;
  if (col == header.size()) return -1;
  while (std::getline(in, line)) {
    auto f = split(line);
    if (!f.empty() && f[0] == rel && col < f.size()) return std::stol(f[col]);
  }
  return -1;
}

struct frame {
  std::vector<uint8_t> bytes;
  uint32_t wire_len;
  uint64_t ts_ns;
};

struct vector_sink : gnio::backend::rx_lane::collector {
  std::vector<frame> frames;
  gnio::backend::rx_lane lane{*this};
  bool take(const uint8_t* data, uint32_t len, uint32_t wire_len, uint64_t ts) override {
    frames.push_back({std::vector<uint8_t>(data, data + len), wire_len, ts});
    return true;
  }
  gnio::backend::rx_lane& sink() { return lane; }
};

// Owns an opened port and closes it, started or not.
struct port {
  void* priv = nullptr;
  ~port() {
    if (priv) pcap_ops.close(priv);
  }
  gnio::backend::counters counters() const {
    gnio::backend::counters c;
    pcap_ops.get_counters(priv, &c);
    return c;
  }
  gnio::port_caps caps() const {
    gnio::port_caps c;
    pcap_ops.get_caps(priv, &c);
    return c;
  }
};

error open_port(const std::string& dev, port* p) {
  auto args = gnio::backend::parse_devargs(dev);
  if (!args) return args.err();
  return pcap_ops.open(*args, &p->priv);
}

// Polls rx_burst until end of stream or an error; returns the last status.
status drain(port& p, vector_sink& s, uint32_t budget = 32, size_t stop_after = SIZE_MAX) {
  auto& sink = s.sink();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    uint32_t produced = 12345;
    status st = pcap_ops.rx_burst(p.priv, sink, budget, &produced);
    if (st == status::success || st == status::again) {
      EXPECT_LE(produced, budget);
      if (st == status::again) {
        EXPECT_EQ(produced, 0u);
      }
      if (s.frames.size() >= stop_after) return st;
      if (st == status::again) std::this_thread::yield();
      continue;
    }
    EXPECT_EQ(produced, 0u) << "frames reported with status " << gnio::to_string(st);
    return st;
  }
  ADD_FAILURE() << "rx_burst did not reach end of stream within 20 s";
  return status::time_out;
}

// libpcap's own reading of a file, as the reference for bytes and timestamps.
struct record {
  std::vector<uint8_t> data;
  uint32_t len;
  uint64_t ts_ns;
};

std::vector<record> read_with_libpcap(const std::string& path, int* dlt = nullptr) {
  std::vector<record> out;
  char err[PCAP_ERRBUF_SIZE];
  pcap_t* p = pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, err);
  if (!p) {
    ADD_FAILURE() << "libpcap cannot open " << path << ": " << err;
    return out;
  }
  if (dlt) *dlt = pcap_datalink(p);
  pcap_pkthdr* h;
  const u_char* d;
  while (pcap_next_ex(p, &h, &d) == 1)
    out.push_back({std::vector<uint8_t>(d, d + h->caplen), h->len,
                   uint64_t(h->ts.tv_sec) * 1000000000u + uint64_t(h->ts.tv_usec)});
  pcap_close(p);
  return out;
}

struct crafted {
  std::vector<uint8_t> data;
  uint32_t len;  // original length; data.size() is the captured length
  int64_t sec = 1700000000;
  uint32_t nsec = 0;
};

void write_capture(const std::string& path, int dlt, const std::vector<crafted>& recs) {
  pcap_t* dead = pcap_open_dead_with_tstamp_precision(dlt, 262144, PCAP_TSTAMP_PRECISION_NANO);
  ASSERT_NE(dead, nullptr);
  pcap_dumper_t* d = pcap_dump_open(dead, path.c_str());
  ASSERT_NE(d, nullptr) << pcap_geterr(dead);
  for (const auto& r : recs) {
    pcap_pkthdr h{};
    h.ts.tv_sec = r.sec;
    h.ts.tv_usec = r.nsec;
    h.caplen = static_cast<uint32_t>(r.data.size());
    h.len = r.len;
    pcap_dump(reinterpret_cast<u_char*>(d), &h, r.data.data());
  }
  pcap_dump_close(d);
  pcap_close(dead);
}

uint16_t ethertype(const frame& f) { return static_cast<uint16_t>(f.bytes[12] << 8 | f.bytes[13]); }

bool zero_macs(const frame& f) {
  for (int i = 0; i < 12; ++i)
    if (f.bytes[i] != 0) return false;
  return true;
}

// Collects log messages for the lifetime of the object.
struct log_capture {
  std::vector<std::string> lines;
  gnio::log_level old_level = gnio::get_log_level();
  log_capture() {
    gnio::set_log_level(gnio::log_level::warn);
    gnio::set_log_hook([this](gnio::log_level l, std::string_view m) {
      if (l == gnio::log_level::warn) lines.emplace_back(m);
    });
  }
  ~log_capture() {
    gnio::set_log_hook({});
    gnio::set_log_level(old_level);
  }
};

class PcapBackend : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = gnio::test::temp_dir() + "/pcap_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string tmp(const std::string& name) const { return dir_ + "/" + name; }
  std::string dir_;
};

// Reads a whole corpus file and checks the count against tshark's and each
// frame against libpcap's record.
void expect_matches_manifest(const std::string& rel) {
  SCOPED_TRACE(rel);
  long want = manifest_packets(rel);
  ASSERT_GE(want, 0) << rel << " missing from MANIFEST.tsv";
  port p;
  error e = open_port("pcap:file=" + corpus(rel), &p);
  ASSERT_TRUE(e.ok()) << e.what();
  ASSERT_TRUE(pcap_ops.start(p.priv).ok());
  vector_sink s;
  EXPECT_EQ(drain(p, s), status::shutdown);
  EXPECT_EQ(long(s.frames.size()), want);
  auto c = p.counters();
  EXPECT_EQ(c.rx_frames, uint64_t(want));
  EXPECT_EQ(c.rx_errors, 0u);
  uint64_t bytes = 0;
  for (const auto& f : s.frames) {
    EXPECT_GE(f.bytes.size(), 14u);
    EXPECT_LE(f.bytes.size(), f.wire_len);
    bytes += f.bytes.size();
  }
  EXPECT_EQ(c.rx_bytes, bytes);

  int dlt = -1;
  auto ref = read_with_libpcap(corpus(rel), &dlt);
  ASSERT_EQ(ref.size(), s.frames.size());
  size_t hdr = dlt == DLT_EN10MB ? 0 : dlt == DLT_NULL ? 4 : 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const frame& f = s.frames[i];
    EXPECT_EQ(f.ts_ns, ref[i].ts_ns) << "frame " << i;
    if (dlt == DLT_EN10MB) {
      EXPECT_EQ(f.bytes, ref[i].data) << "frame " << i;
      EXPECT_EQ(f.wire_len, ref[i].len) << "frame " << i;
    } else {
      std::vector<uint8_t> payload(f.bytes.begin() + 14, f.bytes.end());
      std::vector<uint8_t> want_payload(ref[i].data.begin() + long(hdr), ref[i].data.end());
      EXPECT_EQ(payload, want_payload) << "frame " << i;
      EXPECT_EQ(f.wire_len, ref[i].len - hdr + 14) << "frame " << i;
    }
  }
  EXPECT_TRUE(pcap_ops.stop(p.priv).ok());
}

TEST(PcapCorpus, CountsMatchManifest) {
  REQUIRE_CORPUS();
  for (const char* rel : {"python3-dpkt/dns_icmp.pcap", "python3-dpkt/http.pcap", "gopacket/pcap/test_loopback.pcap",
                          "gopacket/pcapng-suite/le/test001.pcapng", "gopacket/pcapng-suite/be/test001.pcapng",
                          "gopacket/pcapng-suite/le/test300.pcapng", "tcpdump/QinQpacket.pcap", "pcapfix/test.pcap",
                          "wireshark/dhcp-nanosecond.pcap", "wireshark/dhcp.pcapng", "wireshark/http-ooo.pcap",
                          "wireshark/tcp-badsegments.pcap", "wireshark/empty.pcap", "python3-dpkt/truncated_dns.pcap"})
    expect_matches_manifest(rel);
}

TEST(PcapCorpus, ManifestCountsAreTheExpectedOnes) {
  REQUIRE_CORPUS();
  EXPECT_EQ(manifest_packets("python3-dpkt/dns_icmp.pcap"), 32);
  EXPECT_EQ(manifest_packets("python3-dpkt/http.pcap"), 43);
  EXPECT_EQ(manifest_packets("gopacket/pcap/test_loopback.pcap"), 24);
  EXPECT_EQ(manifest_packets("tcpdump/QinQpacket.pcap"), 249);
}

TEST(PcapCorpus, NullLinkTypeBecomesEthernetWithIPv6EtherType) {
  REQUIRE_CORPUS();
  port p;
  ASSERT_TRUE(open_port("pcap:file=" + corpus("gopacket/pcap/test_loopback.pcap"), &p).ok());
  vector_sink s;
  EXPECT_EQ(drain(p, s), status::shutdown);
  ASSERT_EQ(s.frames.size(), 24u);
  for (const auto& f : s.frames) {
    EXPECT_EQ(ethertype(f), 0x86DD);
    EXPECT_TRUE(zero_macs(f));
    EXPECT_EQ(f.bytes[14] >> 4, 6);
  }
}

TEST(PcapCorpus, RawIPv4BecomesEthernet) {
  REQUIRE_CORPUS();
  port p;
  ASSERT_TRUE(open_port("pcap:file=" + corpus("wireshark/http-ooo.pcap"), &p).ok());
  vector_sink s;
  EXPECT_EQ(drain(p, s), status::shutdown);
  ASSERT_EQ(s.frames.size(), 16u);
  for (const auto& f : s.frames) {
    EXPECT_EQ(ethertype(f), 0x0800);
    EXPECT_TRUE(zero_macs(f));
    EXPECT_EQ(f.bytes[14], 0x45);
  }
}

TEST(PcapCorpus, QinQFramesKeepTheirTags) {
  REQUIRE_CORPUS();
  port p;
  ASSERT_TRUE(open_port("pcap:file=" + corpus("tcpdump/QinQpacket.pcap"), &p).ok());
  vector_sink s;
  EXPECT_EQ(drain(p, s, 7), status::shutdown);
  ASSERT_EQ(s.frames.size(), 249u);
  size_t tagged = 0;
  for (const auto& f : s.frames) tagged += ethertype(f) == 0x88A8 || ethertype(f) == 0x8100 || ethertype(f) == 0x9100;
  EXPECT_GT(tagged, 0u);
}

TEST(PcapCorpus, LoopPlaysTheFileNTimes) {
  REQUIRE_CORPUS();
  port p;
  ASSERT_TRUE(open_port("pcap:file=" + corpus("python3-dpkt/http.pcap") + ",loop=3", &p).ok());
  EXPECT_TRUE(p.caps().finite);
  ASSERT_TRUE(pcap_ops.start(p.priv).ok());
  vector_sink s;
  EXPECT_EQ(drain(p, s, 10), status::shutdown);
  ASSERT_EQ(s.frames.size(), 3 * 43u);
  for (size_t i = 0; i < 43; ++i) {
    EXPECT_EQ(s.frames[i].bytes, s.frames[43 + i].bytes);
    EXPECT_EQ(s.frames[i].bytes, s.frames[86 + i].bytes);
  }
  EXPECT_EQ(p.counters().rx_frames, 129u);
  // The end stays the end.
  uint32_t produced = 7;
  EXPECT_EQ(pcap_ops.rx_burst(p.priv, s.sink(), 32, &produced), status::shutdown);
  EXPECT_EQ(produced, 0u);
}

TEST(PcapCorpus, LoopZeroRepeatsForever) {
  REQUIRE_CORPUS();
  port p;
  ASSERT_TRUE(open_port("pcap:rx=" + corpus("python3-dpkt/dns_icmp.pcap") + ",loop=0", &p).ok());
  EXPECT_FALSE(p.caps().finite);
  vector_sink s;
  EXPECT_EQ(drain(p, s, 32, 10 * 32), status::success);
  EXPECT_GE(s.frames.size(), 10 * 32u);
  EXPECT_EQ(s.frames[0].bytes, s.frames[32 * 9].bytes);
}

TEST(PcapCorpus, BudgetIsRespected) {
  REQUIRE_CORPUS();
  port p;
  ASSERT_TRUE(open_port("pcap:file=" + corpus("python3-dpkt/http.pcap"), &p).ok());
  vector_sink s;
  uint32_t produced = 0;
  EXPECT_EQ(pcap_ops.rx_burst(p.priv, s.sink(), 5, &produced), status::success);
  EXPECT_EQ(produced, 5u);
  EXPECT_EQ(s.frames.size(), 5u);
  EXPECT_EQ(pcap_ops.rx_burst(p.priv, s.sink(), 0, &produced), status::success);
  EXPECT_EQ(produced, 0u);
}

TEST(PcapCorpus, RateLimitsPacketsPerSecond) {
  REQUIRE_CORPUS();
  port p;
  ASSERT_TRUE(open_port("pcap:file=" + corpus("python3-dpkt/http.pcap") + ",rate=1000pps", &p).ok());
  ASSERT_TRUE(pcap_ops.start(p.priv).ok());
  vector_sink s;
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(drain(p, s), status::shutdown);
  auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(s.frames.size(), 43u);
  EXPECT_GE(ms, 40.0);
}

TEST(PcapCorpus, RateLimitsBitsPerSecond) {
  REQUIRE_CORPUS();
  auto ref = read_with_libpcap(corpus("python3-dpkt/http.pcap"));
  uint64_t bits = 0;
  for (size_t i = 0; i + 1 < ref.size(); ++i) bits += 8ull * ref[i].len;  // the last frame goes on credit
  port p;
  ASSERT_TRUE(open_port("pcap:file=" + corpus("python3-dpkt/http.pcap") + ",rate=2Mbps", &p).ok());
  vector_sink s;
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(drain(p, s), status::shutdown);
  auto s_elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(s.frames.size(), 43u);
  EXPECT_GE(s_elapsed, 0.9 * double(bits) / 2e6);
}

TEST(PcapCorpus, MissingFileIsNotFound) {
  port p;
  std::string path = "/nonexistent/gnio/no_such.pcap";
  error e = open_port("pcap:file=" + path, &p);
  EXPECT_EQ(e.code(), status::not_found);
  EXPECT_NE(e.message().find(path), std::string::npos) << e.message();
  EXPECT_EQ(p.priv, nullptr);
}

TEST(PcapCorpus, FileWithoutHeaderIsRejected) {
  REQUIRE_CORPUS();
  port p;
  error e = open_port("pcap:file=" + corpus("pcapfix/test_without_pcap_header.pcap"), &p);
  EXPECT_EQ(e.code(), status::bad_config);
  EXPECT_NE(e.message().find("not a pcap or pcapng capture"), std::string::npos) << e.message();
  EXPECT_NE(e.message().find("unknown file format"), std::string::npos) << e.message();
}

TEST(PcapCorpus, UnsupportedVersionsAreRejected) {
  REQUIRE_CORPUS();
  for (const char* rel : {"libpcap/pcap-invalid-version-1.pcap", "libpcap/pcap-invalid-version-2.pcap",
                          "libpcap/pcapng-invalid-vers-1.pcapng", "libpcap/pcapng-invalid-vers-2.pcapng"}) {
    port p;
    error e = open_port(std::string("pcap:file=") + corpus(rel), &p);
    EXPECT_EQ(e.code(), status::unsupported_version) << rel << ": " << e.what();
    // pcap files are read by libpcap, pcapng files by the backend's reader.
    if (std::string(rel).ends_with(".pcap"))
      EXPECT_NE(e.message().find("libpcap 1."), std::string::npos) << e.message();
    else EXPECT_NE(e.message().find("unsupported pcapng format version"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("reads pcap 2.4 and pcapng 1.0"), std::string::npos) << e.message();
  }
}

TEST(PcapCorpus, DamagedHeaderIsRejected) {
  REQUIRE_CORPUS();
  port p;
  error e = open_port("pcap:file=" + corpus("libpcap/shb-option-too-long.pcapng"), &p);
  EXPECT_EQ(e.code(), status::bad_config) << e.what();
  EXPECT_NE(e.message().find("has length 52 in its header and 808464432 in its trailer"), std::string::npos)
      << e.message();
}

size_t open_descriptors() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

// libpcap leaves the stream open when it refuses a capture's header; the
// backend closes it (each refused open used to keep one descriptor and FILE).
TEST(PcapBackendOpen, RefusedCapturesLeaveNoDescriptorOpen) {
  const size_t before = open_descriptors();
  for (int i = 0; i < 3; ++i) {
    for (const char* rel :
         {"test_without_pcap_header.pcap", "pcap-invalid-version-1.pcap", "pcap-invalid-version-2.pcap"}) {
      port p;
      error e = open_port("pcap:file=" + gnio::test::data_path(rel), &p);
      EXPECT_FALSE(e.ok()) << rel;
      EXPECT_EQ(p.priv, nullptr) << rel;
    }
  }
  EXPECT_EQ(open_descriptors(), before);
}

TEST(PcapCorpus, GzipIsNotSupported) {
  REQUIRE_CORPUS();
  for (const char* rel : {"wireshark/dns+icmp.pcapng.gz", "python3-libtrace/icmp-sample.pcap.gz"}) {
    port p;
    error e = open_port(std::string("pcap:file=") + corpus(rel), &p);
    EXPECT_EQ(e.code(), status::not_supported) << rel;
    EXPECT_NE(e.message().find("gzip-compressed: gunzip it first"), std::string::npos) << e.message();
  }
}

TEST(PcapCorpus, UnconvertibleLinkTypeIsNotSupported) {
  REQUIRE_CORPUS();
  port p;
  error e = open_port("pcap:file=" + corpus("wireshark/arp.pcap"), &p);
  EXPECT_EQ(e.code(), status::not_supported);
  EXPECT_NE(e.message().find("FRELAY"), std::string::npos) << e.message();
}

TEST(PcapCorpus, DamagedRecordEndsThePassAndIsCounted) {
  REQUIRE_CORPUS();
  log_capture logs;
  port p;
  ASSERT_TRUE(open_port("pcap:file=" + corpus("pcapfix/test_damaged.pcap"), &p).ok());
  vector_sink s;
  EXPECT_EQ(drain(p, s), status::shutdown);
  EXPECT_EQ(s.frames.size(), 1u);
  EXPECT_EQ(p.counters().rx_frames, 1u);
  EXPECT_EQ(p.counters().rx_errors, 1u);
  ASSERT_EQ(logs.lines.size(), 1u);
  EXPECT_NE(logs.lines[0].find("packet 2"), std::string::npos) << logs.lines[0];
  EXPECT_NE(logs.lines[0].find("truncated dump file"), std::string::npos) << logs.lines[0];
}

TEST(PcapCorpus, TruncatedRecordsKeepWhatWasRead) {
  REQUIRE_CORPUS();
  log_capture logs;
  port p;
  ASSERT_TRUE(open_port("pcap:file=" + corpus("python3-dpkt/truncated_dns_2.pcap") + ",loop=2", &p).ok());
  vector_sink s;
  EXPECT_EQ(drain(p, s), status::shutdown);
  ASSERT_EQ(s.frames.size(), 2u);  // one good record per pass
  EXPECT_LT(s.frames[0].bytes.size(), s.frames[0].wire_len);
  EXPECT_EQ(p.counters().rx_errors, 2u);
  EXPECT_EQ(logs.lines.size(), 1u);  // warned once, not per pass
}

// pcapng files whose interfaces differ in snap length (test004, test005,
// test008) or link type (test006, test100, test101, test201), in both byte
// orders: every packet tshark lists is delivered (libpcap 1.10 refuses the
// second interface of each).
TEST(PcapCorpus, MultiInterfacePcapngIsReadWhole) {
  REQUIRE_CORPUS();
  for (const char* order : {"le", "be"}) {
    for (const char* name : {"test004", "test005", "test006", "test008", "test100", "test101", "test201"}) {
      const std::string rel = std::string("gopacket/pcapng-suite/") + order + "/" + name + ".pcapng";
      SCOPED_TRACE(rel);
      port p;
      error e = open_port("pcap:file=" + corpus(rel), &p);
      ASSERT_TRUE(e.ok()) << e.what();
      vector_sink s;
      EXPECT_EQ(drain(p, s), status::shutdown);
      EXPECT_EQ(long(s.frames.size()), manifest_packets(rel));
      EXPECT_EQ(p.counters().rx_errors, 0u);
    }
  }
}

// A later section of pcapng version 2.0 ends the file as a read error, after
// the packets before it, as tshark ends it ("unknown SHB version 2.0").
TEST(PcapCorpus, LaterSectionOfAnotherVersionEndsTheFile) {
  REQUIRE_CORPUS();
  log_capture logs;
  for (const char* order : {"le", "be"}) {
    const std::string rel = std::string("gopacket/pcapng-suite/") + order + "/test901.pcapng";
    port p;
    ASSERT_TRUE(open_port("pcap:file=" + corpus(rel), &p).ok()) << rel;
    vector_sink s;
    EXPECT_EQ(drain(p, s), status::shutdown);
    EXPECT_EQ(long(s.frames.size()), manifest_packets(rel)) << rel;
    EXPECT_EQ(p.counters().rx_errors, 1u) << rel;
  }
  ASSERT_FALSE(logs.lines.empty());
  EXPECT_NE(logs.lines[0].find("section 2 has pcapng format version 2.0"), std::string::npos) << logs.lines[0];
}

// Every capture in the corpus either fails to open with a message or plays to
// the end; packets libpcap cannot give us must show up in rx_errors.
TEST(PcapCorpus, EveryCorpusFileOpensCleanlyOrFailsWithAMessage) {
  REQUIRE_CORPUS();
  log_capture quiet;
  std::ifstream in(corpus("MANIFEST.tsv"));
  std::string line;
  std::getline(in, line);
  size_t opened = 0, refused = 0;
  while (std::getline(in, line)) {
    std::string rel = line.substr(0, line.find('\t'));
    SCOPED_TRACE(rel);
    port p;
    error e = open_port("pcap:file=" + corpus(rel), &p);
    if (!e.ok()) {
      ++refused;
      EXPECT_NE(e.message().find(corpus(rel)), std::string::npos) << e.message();
      EXPECT_EQ(p.priv, nullptr);
      continue;
    }
    ++opened;
    vector_sink s;
    EXPECT_EQ(drain(p, s, 64), status::shutdown);
    long want = manifest_packets(rel);
    // tshark also lists pcapng custom blocks as frames; these files have them
    // besides their packets.
    if (rel.ends_with("/test018.pcapng")) want -= 4;
    if (rel.ends_with("/test102.pcapng") || rel.ends_with("/test202.pcapng")) want -= 3;
    EXPECT_LE(long(s.frames.size()), want);
    if (long(s.frames.size()) < want) {
      EXPECT_GE(p.counters().rx_errors, 1u);
    }
    for (const auto& f : s.frames) EXPECT_LE(f.bytes.size(), f.wire_len);
  }
  EXPECT_GT(opened, 200u);
  EXPECT_GT(refused, 10u);
}

TEST_F(PcapBackend, EmptyCaptureEndsAtOnce) {
  std::string path = tmp("empty.pcap");
  write_capture(path, DLT_EN10MB, {});
  for (const char* loop : {"", ",loop=0"}) {
    port p;
    error e = open_port("pcap:file=" + path + loop, &p);
    ASSERT_TRUE(e.ok()) << e.what();
    ASSERT_TRUE(pcap_ops.start(p.priv).ok());
    vector_sink s;
    uint32_t produced = 9;
    EXPECT_EQ(pcap_ops.rx_burst(p.priv, s.sink(), 32, &produced), status::shutdown) << loop;
    EXPECT_EQ(produced, 0u);
    EXPECT_TRUE(s.frames.empty());
    EXPECT_EQ(p.counters().rx_errors, 0u);
  }
}

TEST_F(PcapBackend, ZeroByteFileIsRejected) {
  std::string path = tmp("zero.pcap");
  std::ofstream(path).close();
  port p;
  error e = open_port("pcap:file=" + path, &p);
  EXPECT_EQ(e.code(), status::bad_config);
  EXPECT_NE(e.message().find("empty"), std::string::npos) << e.message();
}

TEST_F(PcapBackend, DirectoryIsRejected) {
  port p;
  error e = open_port("pcap:file=" + dir_, &p);
  EXPECT_EQ(e.code(), status::bad_config);
  EXPECT_NE(e.message().find("directory"), std::string::npos) << e.message();
}

TEST_F(PcapBackend, UnreadableFileIsNotPermitted) {
  std::string path = tmp("secret.pcap");
  write_capture(path, DLT_EN10MB, {});
  ASSERT_EQ(chmod(path.c_str(), 0), 0);
  if (access(path.c_str(), R_OK) == 0) GTEST_SKIP() << "running with privileges that ignore file modes";
  port p;
  error e = open_port("pcap:file=" + path, &p);
  EXPECT_EQ(e.code(), status::not_permitted);
  EXPECT_NE(e.message().find(path), std::string::npos) << e.message();
}

TEST_F(PcapBackend, NanosecondTimestampsArePreserved) {
  std::string path = tmp("ns.pcap");
  std::vector<uint8_t> eth(60, 0xab);
  write_capture(path, DLT_EN10MB, {{eth, 60, 1700000000, 123456789}, {eth, 60, 1700000001, 1}});
  port p;
  ASSERT_TRUE(open_port("pcap:file=" + path, &p).ok());
  vector_sink s;
  EXPECT_EQ(drain(p, s), status::shutdown);
  ASSERT_EQ(s.frames.size(), 2u);
  EXPECT_EQ(s.frames[0].ts_ns, 1700000000123456789ull);
  EXPECT_EQ(s.frames[1].ts_ns, 1700000001000000001ull);
}

// A pcapng file in the byte order asked for, block by block (the format's
// layout: type, total length, body padded to 4 bytes, total length again).
struct pcapng_writer {
  bool big;
  std::vector<uint8_t> out;
  void u16(std::vector<uint8_t>& b, uint16_t v) const {
    for (int i = 0; i < 2; ++i) b.push_back(uint8_t(big ? v >> (8 * (1 - i)) : v >> (8 * i)));
  }
  void u32(std::vector<uint8_t>& b, uint32_t v) const {
    for (int i = 0; i < 4; ++i) b.push_back(uint8_t(big ? v >> (8 * (3 - i)) : v >> (8 * i)));
  }
  void block(uint32_t type, std::vector<uint8_t> body) {
    while (body.size() % 4) body.push_back(0);
    u32(out, type);
    u32(out, uint32_t(body.size() + 12));
    out.insert(out.end(), body.begin(), body.end());
    u32(out, uint32_t(body.size() + 12));
  }
  void section() {
    std::vector<uint8_t> b;
    u32(b, 0x1A2B3C4D);
    u16(b, 1);
    u16(b, 0);
    for (int i = 0; i < 8; ++i) b.push_back(0xff);  // section length: not given
    block(0x0A0D0D0A, b);
  }
  void interface(uint16_t dlt, int tsresol = -1) {
    std::vector<uint8_t> b;
    u16(b, dlt);
    u16(b, 0);
    u32(b, 0);  // no snap length
    if (tsresol >= 0) {
      u16(b, 9);
      u16(b, 1);
      b.insert(b.end(), {uint8_t(tsresol), 0, 0, 0});
      u32(b, 0);  // opt_endofopt
    }
    block(1, b);
  }
  void packet(uint32_t iface, uint64_t ts, const std::vector<uint8_t>& data) {
    std::vector<uint8_t> b;
    u32(b, iface);
    u32(b, uint32_t(ts >> 32));
    u32(b, uint32_t(ts));
    u32(b, uint32_t(data.size()));
    u32(b, uint32_t(data.size()));
    b.insert(b.end(), data.begin(), data.end());
    block(6, b);
  }
};

// Each interface's own link type and timestamp resolution, in both byte
// orders; a block cut short at the end is one read error after the packets.
TEST_F(PcapBackend, PcapngInterfacesKeepTheirLinkTypesAndClocks) {
  std::vector<uint8_t> eth(60, 0xab);
  std::vector<uint8_t> ip(28, 0);
  ip[0] = 0x45;
  for (bool big : {false, true}) {
    SCOPED_TRACE(big ? "big-endian" : "little-endian");
    pcapng_writer w{big, {}};
    w.section();
    w.interface(DLT_EN10MB, 9);          // nanoseconds
    w.interface(DLT_RAW);                // microseconds, the default
    w.interface(DLT_EN10MB, 0x80 | 10);  // 2^-10 s
    w.packet(0, 1700000000123456789ull, eth);
    w.packet(1, 1700000001000002ull, ip);
    w.packet(2, (uint64_t{1700000002} << 10) | 512, eth);
    w.out.insert(w.out.end(), {6, 0, 0, 0, 40, 0});  // a block cut inside its header
    const std::string path = tmp(big ? "be.pcapng" : "le.pcapng");
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(w.out.data()), std::streamsize(w.out.size()));
    log_capture logs;
    port p;
    ASSERT_TRUE(open_port("pcap:file=" + path, &p).ok());
    vector_sink s;
    EXPECT_EQ(drain(p, s), status::shutdown);
    ASSERT_EQ(s.frames.size(), 3u);
    EXPECT_EQ(s.frames[0].bytes, eth);
    EXPECT_EQ(s.frames[0].ts_ns, 1700000000123456789ull);
    ASSERT_EQ(s.frames[1].bytes.size(), 14u + ip.size());  // an Ethernet header built for the raw IP packet
    EXPECT_EQ(s.frames[1].bytes[12], 0x08);
    EXPECT_EQ(s.frames[1].bytes[13], 0x00);
    EXPECT_EQ(s.frames[1].ts_ns, 1700000001000002000ull);
    EXPECT_EQ(s.frames[2].ts_ns, 1700000002500000000ull);
    EXPECT_EQ(p.counters().rx_errors, 1u);
    ASSERT_EQ(logs.lines.size(), 1u);
    EXPECT_NE(logs.lines[0].find("the file ends 6 bytes into a block header"), std::string::npos) << logs.lines[0];
  }
}

// --- pcapng link types are LINKTYPE_ values, not DLT_ ones (R5) ---

// LINKTYPE_ values as pcapng files hold them (tcpdump.org's registry); only
// RAW differs from its DLT_ value on Linux (DLT_RAW is 12).
constexpr uint16_t k_linktype_null = 0, k_linktype_ethernet = 1, k_linktype_raw = 101, k_linktype_loop = 108,
                   k_linktype_ipv4 = 228, k_linktype_ipv6 = 229;

std::vector<uint8_t> ipv4_packet(uint8_t proto, uint8_t host, uint16_t sport, uint16_t dport) {
  const uint16_t l4 = proto == 6 ? 20 : 8, total = uint16_t(20 + l4 + 10);
  std::vector<uint8_t> p = {
      0x45, 0, uint8_t(total >> 8), uint8_t(total), 0, 1, 0x40, 0, 64, proto, 0, 0, 10, 0, 0, host, 10, 0, 0, 200};
  p.insert(p.end(), {uint8_t(sport >> 8), uint8_t(sport), uint8_t(dport >> 8), uint8_t(dport)});
  if (proto == 6) p.insert(p.end(), {0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0xff, 0xff, 0, 0, 0, 0});  // SYN
  else p.insert(p.end(), {0, uint8_t(l4 + 10), 0, 0});
  p.resize(total, 0x61);
  return p;
}

std::vector<uint8_t> ipv6_udp_packet(uint8_t host, uint16_t sport, uint16_t dport) {
  std::vector<uint8_t> p = {0x60, 0, 0, 0, 0, 18, 17, 64};
  for (uint8_t last : {host, uint8_t(200)}) {
    p.insert(p.end(), {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, last});
  }
  p.insert(p.end(), {uint8_t(sport >> 8), uint8_t(sport), uint8_t(dport >> 8), uint8_t(dport), 0, 18, 0, 0});
  p.resize(40 + 18, 0x62);
  return p;
}

// Four IPv4 (UDP and TCP) and three IPv6 packets in six flows.
std::vector<std::vector<uint8_t>> raw_ip_packets() {
  return {ipv4_packet(17, 1, 40001, 40002), ipv4_packet(6, 2, 40003, 8080),   ipv6_udp_packet(3, 40005, 40006),
          ipv4_packet(17, 1, 40001, 40002), ipv6_udp_packet(4, 40007, 40008), ipv4_packet(6, 5, 40009, 8080),
          ipv6_udp_packet(3, 40005, 40006)};
}

std::vector<uint8_t> in_ethernet(const std::vector<uint8_t>& ip) {
  std::vector<uint8_t> f = {2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00};
  if ((ip[0] >> 4) == 6) f[12] = 0x86, f[13] = 0xDD;
  f.insert(f.end(), ip.begin(), ip.end());
  return f;
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

std::vector<frame> read_all(const std::string& path, uint64_t* rx_errors) {
  port p;
  error e = open_port("pcap:file=" + path, &p);
  EXPECT_TRUE(e.ok()) << e.what();
  if (!e.ok()) return {};
  vector_sink s;
  EXPECT_EQ(drain(p, s), status::shutdown);
  *rx_errors = p.counters().rx_errors;
  return s.frames;
}

bool have_tshark() { return std::system("command -v tshark >/dev/null 2>&1") == 0; }

// What tshark finds in a capture: packets, packets with each protocol, and
// TCP and UDP streams (tshark's conversations).
struct tshark_counts {
  long packets = 0, ipv4 = 0, ipv6 = 0, tcp = 0, udp = 0, tcp_streams = 0, udp_streams = 0;
};

tshark_counts tshark_read(const std::string& path) {
  // stderr is left out: as root, tshark warns there about running as root.
  const std::string cmd = "tshark -n -r '" + path +
                          "' -T fields -E separator=/t -e frame.protocols -e tcp.stream -e udp.stream 2>/dev/null";
  FILE* f = popen(cmd.c_str(), "r");
  EXPECT_NE(f, nullptr) << cmd;
  tshark_counts c;
  if (!f) return c;
  std::set<std::string> tcp_streams, udp_streams;
  char buf[4096];
  while (fgets(buf, sizeof buf, f)) {
    std::string line(buf);
    if (!line.empty() && line.back() == '\n') line.pop_back();
    std::vector<std::string> cols;
    std::stringstream ss(line);
    for (std::string col; std::getline(ss, col, '\t');) cols.push_back(col);
    cols.resize(3);
    ++c.packets;
    std::set<std::string> protocols;
    std::stringstream ps(cols[0]);
    for (std::string p; std::getline(ps, p, ':');) protocols.insert(p);
    c.ipv4 += protocols.count("ip");
    c.ipv6 += protocols.count("ipv6");
    c.tcp += protocols.count("tcp");
    c.udp += protocols.count("udp");
    if (!cols[1].empty()) tcp_streams.insert(cols[1]);
    if (!cols[2].empty()) udp_streams.insert(cols[2]);
  }
  EXPECT_EQ(pclose(f), 0) << cmd;
  c.tcp_streams = long(tcp_streams.size());
  c.udp_streams = long(udp_streams.size());
  return c;
}

// A pcapng interface of LINKTYPE_RAW, IPV4, IPV6, NULL or LOOP delivers what
// a classic pcap (written by libpcap, which maps DLT_ to LINKTYPE_ values
// itself) of the same records delivers.
TEST_F(PcapBackend, PcapngRawIpInterfacesReadAsInAPcap) {
  const auto ip = raw_ip_packets();
  std::vector<std::vector<uint8_t>> v4, v6;
  for (const auto& pkt : ip) ((pkt[0] >> 4) == 4 ? v4 : v6).push_back(pkt);
  auto with_family = [](const std::vector<std::vector<uint8_t>>& pkts, bool loop) {
    std::vector<std::vector<uint8_t>> out;
    for (const auto& pkt : pkts) {
      const uint8_t fam = (pkt[0] >> 4) == 4 ? 2 : 24;  // AF_INET; BSD's AF_INET6, which both link types use
      std::vector<uint8_t> r = loop ? std::vector<uint8_t>{0, 0, 0, fam} : std::vector<uint8_t>{fam, 0, 0, 0};
      r.insert(r.end(), pkt.begin(), pkt.end());
      out.push_back(r);
    }
    return out;
  };
  struct kind {
    const char* name;
    uint16_t linktype;
    int dlt;
    std::vector<std::vector<uint8_t>> records;
  };
  for (const kind& k :
       {kind{"raw", k_linktype_raw, DLT_RAW, ip}, kind{"ipv4", k_linktype_ipv4, DLT_IPV4, v4},
        kind{"ipv6", k_linktype_ipv6, DLT_IPV6, v6}, kind{"null", k_linktype_null, DLT_NULL, with_family(ip, false)},
        kind{"loop", k_linktype_loop, DLT_LOOP, with_family(ip, true)}}) {
    for (bool big : {false, true}) {
      SCOPED_TRACE(std::string(k.name) + (big ? " big-endian" : " little-endian"));
      pcapng_writer w{big, {}};
      w.section();
      w.interface(k.linktype);
      std::vector<crafted> recs;
      for (size_t i = 0; i < k.records.size(); ++i) {
        w.packet(0, 1700000000000000ull + i, k.records[i]);
        recs.push_back({k.records[i], uint32_t(k.records[i].size()), 1700000000, uint32_t(i * 1000)});
      }
      const std::string ng = tmp(std::string(k.name) + ".pcapng"), classic = tmp(std::string(k.name) + ".pcap");
      write_file(ng, w.out);
      write_capture(classic, k.dlt, recs);
      uint64_t ng_errors = 99, classic_errors = 99;
      const auto from_ng = read_all(ng, &ng_errors);
      const auto from_classic = read_all(classic, &classic_errors);
      ASSERT_EQ(from_classic.size(), k.records.size());
      EXPECT_EQ(classic_errors, 0u);
      EXPECT_EQ(ng_errors, 0u);
      ASSERT_EQ(from_ng.size(), from_classic.size());
      for (size_t i = 0; i < from_ng.size(); ++i) {
        EXPECT_EQ(from_ng[i].bytes, from_classic[i].bytes) << "frame " << i;
        EXPECT_EQ(from_ng[i].wire_len, from_classic[i].wire_len) << "frame " << i;
        EXPECT_EQ(from_ng[i].ts_ns, from_classic[i].ts_ns) << "frame " << i;
      }
    }
  }
}

// A link type nobody numbered is refused once, by its number, without a
// name that contradicts the list of what can be converted.
TEST_F(PcapBackend, PcapngUnknownLinkTypeIsNamedByItsNumber) {
  ASSERT_EQ(pcap_datalink_val_to_name(65000), nullptr);
  pcapng_writer w{false, {}};
  w.section();
  w.interface(65000);
  w.packet(0, 0, ipv4_packet(17, 1, 1, 2));
  const std::string path = tmp("odd-link.pcapng");
  write_file(path, w.out);
  port p;
  error e = open_port("pcap:file=" + path, &p);
  EXPECT_EQ(e.code(), status::not_supported);
  const std::string m = e.message();
  EXPECT_NE(m.find("has link type 65000 (a number libpcap has no name for)"), std::string::npos) << m;
  EXPECT_EQ(m.find("unknown"), std::string::npos) << m;
  EXPECT_EQ(m.find("65000"), m.rfind("65000")) << m;
}

// gnio pp and flow_count count a pcapng of raw-IP packets, alone and on a
// second interface beside an Ethernet one, as tshark counts it.
TEST_F(PcapBackend, PcapngRawIpInterfacesCountAsTsharkCounts) {
  if (!have_tshark()) GTEST_SKIP() << "tshark not installed";
  const auto ip = raw_ip_packets();
  pcapng_writer raw{false, {}};
  raw.section();
  raw.interface(k_linktype_raw);
  for (size_t i = 0; i < ip.size(); ++i) raw.packet(0, 1700000000000000ull + i, ip[i]);
  // The Ethernet interface first, then raw IP; the packets alternate.
  pcapng_writer mixed{true, {}};
  mixed.section();
  mixed.interface(k_linktype_ethernet);
  mixed.interface(k_linktype_raw);
  for (size_t i = 0; i < ip.size(); ++i) {
    std::vector<uint8_t> other = ipv4_packet(17, uint8_t(100 + i), 50000, uint16_t(50001 + i));
    mixed.packet(0, 1700000000000000ull + 2 * i, in_ethernet(other));
    mixed.packet(1, 1700000000000000ull + 2 * i + 1, ip[i]);
  }
  const std::string tool = gnio::test::tool_bin(), flow_count = gnio::test::flow_count_bin();
  for (auto [name, w] : {std::pair{"raw", &raw}, std::pair{"mixed", &mixed}}) {
    SCOPED_TRACE(name);
    const std::string path = tmp(std::string(name) + ".pcapng");
    write_file(path, w->out);
    const tshark_counts want = tshark_read(path);
    const long packets = want.packets;
    ASSERT_EQ(packets, name == std::string("raw") ? long(ip.size()) : long(2 * ip.size()));
    const std::string dev = "pcap:file=" + path;

    auto pp = gnio::test::run_process({tool, "pp", "--port", dev, "--gpu", "host", "--stats-interval", "0"},
                                      {.with_json = true});
    ASSERT_EQ(pp.code, 0) << pp.describe();
    ASSERT_TRUE(pp.j) << pp.describe();
    EXPECT_EQ(pp.j->at("packets").get<long>(), packets) << pp.describe();
    EXPECT_EQ(pp.j->at("source_errors").get<long>(), 0) << pp.describe();
    EXPECT_GT(want.ipv4, 0);
    EXPECT_GT(want.ipv6, 0);
    EXPECT_EQ(pp.j->at("ipv4").get<long>(), want.ipv4);
    EXPECT_EQ(pp.j->at("ipv6").get<long>(), want.ipv6);
    EXPECT_EQ(pp.j->at("tcp").get<long>(), want.tcp);
    EXPECT_EQ(pp.j->at("udp").get<long>(), want.udp);

    auto fc = gnio::test::run_process({flow_count, "--port", dev, "--exec", "host", "--stats-interval", "0"},
                                      {.with_json = true});
    ASSERT_EQ(fc.code, 0) << fc.describe();
    ASSERT_TRUE(fc.j) << fc.describe();
    EXPECT_EQ(fc.j->at("packets").get<long>(), packets) << fc.describe();
    EXPECT_EQ(fc.j->at("source_errors").get<long>(), 0) << fc.describe();
    EXPECT_EQ(fc.j->at("tcp_conversations").get<long>(), want.tcp_streams);
    EXPECT_EQ(fc.j->at("udp_conversations").get<long>(), want.udp_streams);
  }
}

TEST_F(PcapBackend, OddEthernetRecordsAreDeliveredOrCounted) {
  std::string path = tmp("odd.pcap");
  write_capture(path, DLT_EN10MB,
                {{{1, 2, 3, 4, 5}, 1500},                    // cut inside the Ethernet header
                 {{}, 60},                                   // nothing captured
                 {std::vector<uint8_t>(47, 9), 0},           // damaged header: caplen > len
                 {std::vector<uint8_t>(70000, 7), 70000}});  // above max_pkt_bytes
  log_capture logs;
  port p;
  ASSERT_TRUE(open_port("pcap:file=" + path, &p).ok());
  vector_sink s;
  EXPECT_EQ(drain(p, s), status::shutdown);
  ASSERT_EQ(s.frames.size(), 3u);
  EXPECT_EQ(s.frames[0].bytes, (std::vector<uint8_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(s.frames[0].wire_len, 1500u);
  EXPECT_EQ(s.frames[1].bytes.size(), 47u);
  EXPECT_EQ(s.frames[1].wire_len, 47u);
  EXPECT_EQ(s.frames[2].bytes, std::vector<uint8_t>(65535, 7));
  EXPECT_EQ(s.frames[2].wire_len, 70000u);
  EXPECT_EQ(p.counters().rx_errors, 1u);
  ASSERT_EQ(logs.lines.size(), 1u);
  EXPECT_NE(logs.lines[0].find("packet 2"), std::string::npos) << logs.lines[0];
}

TEST_F(PcapBackend, CookedCapturesBecomeEthernet) {
  std::vector<uint8_t> ip4 = {0x45, 0, 0, 20, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2};
  const uint8_t mac[6] = {0x02, 0x11, 0x22, 0x33, 0x44, 0x55};

  // SLL: pkttype, hatype, halen, addr[8], protocol
  std::vector<uint8_t> sll = {0, 1, 0, 1, 0, 6, mac[0], mac[1], mac[2], mac[3], mac[4], mac[5], 0, 0, 0x08, 0x00};
  sll.insert(sll.end(), ip4.begin(), ip4.end());
  std::string p1 = tmp("sll.pcap");
  write_capture(p1, DLT_LINUX_SLL, {{sll, uint32_t(sll.size()) + 100}});

  // SLL2: protocol, reserved, ifindex, hatype, pkttype, halen, addr[8]
  std::vector<uint8_t> sll2 = {0x86, 0xDD, 0,      0,      0,      0,      0,      2,      0, 1,
                               0,    6,    mac[0], mac[1], mac[2], mac[3], mac[4], mac[5], 0, 0};
  std::vector<uint8_t> ip6(40, 0);
  ip6[0] = 0x60;
  sll2.insert(sll2.end(), ip6.begin(), ip6.end());
  std::string p2 = tmp("sll2.pcap");
  write_capture(p2, DLT_LINUX_SLL2, {{sll2, uint32_t(sll2.size())}});

  for (auto [path, type, payload, hdr] : {std::tuple{p1, 0x0800, ip4, 16u}, std::tuple{p2, 0x86DD, ip6, 20u}}) {
    SCOPED_TRACE(path);
    port p;
    error e = open_port("pcap:file=" + path, &p);
    ASSERT_TRUE(e.ok()) << e.what();
    vector_sink s;
    EXPECT_EQ(drain(p, s), status::shutdown);
    ASSERT_EQ(s.frames.size(), 1u);
    const frame& f = s.frames[0];
    EXPECT_EQ(ethertype(f), type);
    EXPECT_TRUE(std::equal(mac, mac + 6, f.bytes.begin() + 6));  // source from the cooked header
    if (type == 0x0800) {
      EXPECT_EQ(f.bytes[0], 0xff);  // pkttype 1: broadcast
    }
    EXPECT_EQ(std::vector<uint8_t>(f.bytes.begin() + 14, f.bytes.end()), payload);
    uint32_t orig = type == 0x0800 ? uint32_t(sll.size()) + 100 : uint32_t(sll2.size());
    EXPECT_EQ(f.wire_len, orig - hdr + 14);
  }
}

TEST_F(PcapBackend, LoopbackFamiliesInEitherByteOrder) {
  std::vector<uint8_t> ip4 = {0x45, 0, 0, 20, 0, 0, 0, 0, 64, 6, 0, 0, 127, 0, 0, 1, 127, 0, 0, 1};
  std::vector<uint8_t> ip6(40, 0);
  ip6[0] = 0x60;
  auto with_family = [](std::vector<uint8_t> fam, const std::vector<uint8_t>& ip) {
    fam.insert(fam.end(), ip.begin(), ip.end());
    return crafted{fam, uint32_t(fam.size())};
  };
  // DLT_NULL from a little-endian host (2), a big-endian one (28; its payload
  // has no version nibble, so only the swapped family can decide) and Linux's
  // AF_INET6 (10), which only the version nibble identifies.
  std::vector<uint8_t> no_version(40, 0);
  std::string pn = tmp("null.pcap");
  write_capture(
      pn, DLT_NULL,
      {with_family({2, 0, 0, 0}, ip4), with_family({0, 0, 0, 28}, no_version), with_family({10, 0, 0, 0}, ip6)});
  // DLT_LOOP is always network order; 7 (OSI) cannot become Ethernet.
  std::string pl = tmp("loop.pcap");
  write_capture(
      pl, DLT_LOOP,
      {with_family({0, 0, 0, 2}, ip4), with_family({0, 0, 0, 7}, {0x81, 1, 2, 3}), with_family({0, 0, 0, 24}, ip6)});

  port a;
  ASSERT_TRUE(open_port("pcap:file=" + pn, &a).ok());
  vector_sink sa;
  EXPECT_EQ(drain(a, sa), status::shutdown);
  ASSERT_EQ(sa.frames.size(), 3u);
  EXPECT_EQ(ethertype(sa.frames[0]), 0x0800);
  EXPECT_EQ(ethertype(sa.frames[1]), 0x86DD);
  EXPECT_EQ(ethertype(sa.frames[2]), 0x86DD);
  EXPECT_EQ(sa.frames[0].bytes.size(), 14 + ip4.size());
  EXPECT_EQ(sa.frames[0].wire_len, 14 + ip4.size());

  log_capture logs;
  port b;
  ASSERT_TRUE(open_port("pcap:file=" + pl, &b).ok());
  vector_sink sb;
  EXPECT_EQ(drain(b, sb), status::shutdown);
  ASSERT_EQ(sb.frames.size(), 2u);
  EXPECT_EQ(ethertype(sb.frames[0]), 0x0800);
  EXPECT_EQ(ethertype(sb.frames[1]), 0x86DD);
  EXPECT_EQ(b.counters().rx_errors, 1u);
  ASSERT_EQ(logs.lines.size(), 1u);
  EXPECT_NE(logs.lines[0].find("packet 2"), std::string::npos) << logs.lines[0];
}

TEST_F(PcapBackend, TxRoundTrip) {
  std::string path = tmp("tx.pcap");
  port p;
  error e = open_port("pcap:tx=" + path, &p);
  ASSERT_TRUE(e.ok()) << e.what();
  auto caps = p.caps();
  EXPECT_FALSE(caps.rx);
  EXPECT_TRUE(caps.tx);
  ASSERT_TRUE(pcap_ops.start(p.priv).ok());

  std::vector<std::vector<uint8_t>> sent;
  for (uint32_t len : {60u, 1514u, 9000u}) {
    std::vector<uint8_t> f(len);
    for (uint32_t i = 0; i < len; ++i) f[i] = uint8_t(i * 7 + len);
    sent.push_back(std::move(f));
  }
  std::vector<gnio::backend::tx_frame> frames;
  for (const auto& f : sent) frames.push_back({f.data(), uint32_t(f.size())});
  uint64_t t0 =
      uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
                   .count());
  uint32_t n = 0;
  e = pcap_ops.tx_burst(p.priv, frames.data(), uint32_t(frames.size()), &n);
  ASSERT_TRUE(e.ok()) << e.what();
  EXPECT_EQ(n, 3u);
  uint64_t t1 =
      uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
                   .count());
  auto c = p.counters();
  EXPECT_EQ(c.tx_frames, 3u);
  EXPECT_EQ(c.tx_bytes, 60u + 1514u + 9000u);
  EXPECT_EQ(c.tx_errors, 0u);
  ASSERT_TRUE(pcap_ops.stop(p.priv).ok());

  // Readable after stop, before close.
  int dlt = -1;
  auto back = read_with_libpcap(path, &dlt);
  EXPECT_EQ(dlt, DLT_EN10MB);
  ASSERT_EQ(back.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(back[i].data, sent[i]) << "frame " << i;
    EXPECT_EQ(back[i].len, sent[i].size());
    EXPECT_GE(back[i].ts_ns, t0 - 1000);
    EXPECT_LE(back[i].ts_ns, t1 + 1000);
  }

  // A restart appends rather than truncating.
  ASSERT_TRUE(pcap_ops.start(p.priv).ok());
  ASSERT_TRUE(pcap_ops.tx_burst(p.priv, frames.data(), 1, &n).ok());
  pcap_ops.close(p.priv);
  p.priv = nullptr;
  back = read_with_libpcap(path);
  ASSERT_EQ(back.size(), 4u);
  EXPECT_EQ(back[3].data, sent[0]);
}

TEST_F(PcapBackend, TxFlushedByCloseWithoutStop) {
  std::string path = tmp("tx2.pcap");
  {
    port p;
    ASSERT_TRUE(open_port("pcap:tx=" + path, &p).ok());
    ASSERT_TRUE(pcap_ops.start(p.priv).ok());
    std::vector<uint8_t> f(64, 0x5a);
    gnio::backend::tx_frame fr{f.data(), 64};
    uint32_t n = 0;
    ASSERT_TRUE(pcap_ops.tx_burst(p.priv, &fr, 1, &n).ok());
  }
  auto back = read_with_libpcap(path);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].data, std::vector<uint8_t>(64, 0x5a));
}

TEST_F(PcapBackend, TxWithoutTxFileIsNotSupported) {
  std::string path = tmp("in.pcap");
  write_capture(path, DLT_EN10MB, {{std::vector<uint8_t>(60, 1), 60}});
  port p;
  ASSERT_TRUE(open_port("pcap:file=" + path, &p).ok());
  EXPECT_FALSE(p.caps().tx);
  std::vector<uint8_t> f(60);
  gnio::backend::tx_frame fr{f.data(), 60};
  uint32_t n = 99;
  error e = pcap_ops.tx_burst(p.priv, &fr, 1, &n);
  EXPECT_EQ(e.code(), status::not_supported);
  EXPECT_EQ(e.message(), "pcap: this port has no tx= file");
  EXPECT_EQ(n, 0u);
}

TEST_F(PcapBackend, TxIntoMissingDirectoryFailsAtOpen) {
  port p;
  error e = open_port("pcap:tx=" + tmp("no/such/dir/out.pcap"), &p);
  EXPECT_EQ(e.code(), status::not_found);
}

TEST_F(PcapBackend, TxOverTheInputIsRefused) {
  std::string path = tmp("in.pcap");
  write_capture(path, DLT_EN10MB, {{std::vector<uint8_t>(60, 1), 60}});
  auto before = fs::file_size(path);
  port p;
  error e = open_port("pcap:file=" + path + ",tx=" + path, &p);
  EXPECT_EQ(e.code(), status::bad_config);
  EXPECT_EQ(fs::file_size(path), before);
}

TEST_F(PcapBackend, CapsDescribeThePort) {
  std::string in = tmp("in.pcap");
  write_capture(in, DLT_EN10MB, {{std::vector<uint8_t>(60, 1), 60}});
  port p;
  ASSERT_TRUE(open_port("pcap:file=" + in + ",tx=" + tmp("out.pcap"), &p).ok());
  auto c = p.caps();
  EXPECT_TRUE(c.rx);
  EXPECT_TRUE(c.tx);
  EXPECT_EQ(c.max_rx_queues, 64u);
  EXPECT_EQ(c.max_tx_queues, 64u);
  EXPECT_EQ(c.max_pkt_bytes, 65535u);
  EXPECT_EQ(c.min_ring_descs, 2u);
  EXPECT_EQ(c.max_ring_descs, 1u << 20);
  EXPECT_TRUE(c.rx_timestamps);
  EXPECT_TRUE(c.finite);
  EXPECT_FALSE(c.hw_steering);
}

TEST_F(PcapBackend, LifecycleCallsInAnyOrderAreSafe) {
  std::string in = tmp("in.pcap");
  write_capture(in, DLT_EN10MB, {{std::vector<uint8_t>(60, 1), 60}});
  std::string dev = "pcap:file=" + in + ",tx=" + tmp("out.pcap");
  {
    port p;  // close without start
    ASSERT_TRUE(open_port(dev, &p).ok());
  }
  {
    port p;  // stop without start, twice
    ASSERT_TRUE(open_port(dev, &p).ok());
    EXPECT_TRUE(pcap_ops.stop(p.priv).ok());
    EXPECT_TRUE(pcap_ops.stop(p.priv).ok());
  }
  {
    port p;  // start, stop, start, stop
    ASSERT_TRUE(open_port(dev, &p).ok());
    for (int i = 0; i < 2; ++i) {
      EXPECT_TRUE(pcap_ops.start(p.priv).ok());
      EXPECT_TRUE(pcap_ops.stop(p.priv).ok());
    }
  }
  {
    port p;  // tx-only port: rx has nothing to give
    ASSERT_TRUE(open_port("pcap:tx=" + tmp("out2.pcap"), &p).ok());
    vector_sink s;
    uint32_t produced = 3;
    EXPECT_EQ(pcap_ops.rx_burst(p.priv, s.sink(), 8, &produced), status::shutdown);
    EXPECT_EQ(produced, 0u);
  }
}

// --- Streams that cannot seek (F4) -------------------------------------------

// Writes a whole file into fd from a thread of its own, then closes fd. A
// reader that gives up early makes the write fail (EPIPE), not kill the test.
struct feeder {
  std::thread t;
  feeder(int fd, std::string bytes) {
    std::signal(SIGPIPE, SIG_IGN);
    t = std::thread([fd, b = std::move(bytes)] {
      size_t off = 0;
      while (off < b.size()) {
        ssize_t n = ::write(fd, b.data() + off, b.size() - off);
        if (n <= 0) break;
        off += size_t(n);
      }
      ::close(fd);
    });
  }
  ~feeder() {
    if (t.joinable()) t.join();
  }
};

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The frames libpcap reads from a file, as the port must deliver them from a pipe.
void expect_same_frames(const std::vector<frame>& got, const std::string& path) {
  auto ref = read_with_libpcap(path);
  ASSERT_EQ(got.size(), ref.size());
  for (size_t i = 0; i < ref.size(); ++i) {
    EXPECT_EQ(got[i].bytes, ref[i].data) << "frame " << i;
    EXPECT_EQ(got[i].ts_ns, ref[i].ts_ns) << "frame " << i;
  }
}

TEST_F(PcapBackend, CaptureThroughAPipeIsReadWithoutASeek) {
  // What `cat x.pcap | gnio pp --port pcap:file=/dev/stdin` and
  // `file=<(zcat x.pcap.gz)` hand the backend: a pipe, read once.
  for (const char* name : {"http.pcap", "test004.pcapng"}) {
    SCOPED_TRACE(name);
    const std::string src = gnio::test::data_path(name);
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    feeder w(fds[1], file_bytes(src));
    port p;
    error e = open_port("pcap:file=/dev/fd/" + std::to_string(fds[0]), &p);
    ::close(fds[0]);  // the port opened a descriptor of its own
    ASSERT_TRUE(e.ok()) << e.what();
    EXPECT_TRUE(p.caps().finite);
    ASSERT_TRUE(pcap_ops.start(p.priv).ok());
    vector_sink s;
    const status end = drain(p, s);
    // test004.pcapng ends with an interface libpcap refuses (see pcap.cpp): counted, as from a file.
    EXPECT_EQ(end, status::shutdown);
    if (std::string(name) == "http.pcap") {
      expect_same_frames(s.frames, src);
      EXPECT_EQ(p.counters().rx_errors, 0u);
    } else {
      port f;
      ASSERT_TRUE(open_port("pcap:file=" + src, &f).ok());
      vector_sink fs_;
      EXPECT_EQ(drain(f, fs_), status::shutdown);
      ASSERT_EQ(s.frames.size(), fs_.frames.size());
      for (size_t i = 0; i < s.frames.size(); ++i) EXPECT_EQ(s.frames[i].bytes, fs_.frames[i].bytes) << "frame " << i;
      EXPECT_EQ(p.counters().rx_errors, f.counters().rx_errors);
    }
  }
}

TEST_F(PcapBackend, CaptureThroughAFifoIsReadWithoutASeek) {
  const std::string src = gnio::test::data_path("dns_icmp.pcap");
  const std::string fifo = tmp("f.pcap");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] {
    const int fd = ::open(fifo.c_str(), O_WRONLY);  // waits for the port to open it
    if (fd >= 0) feeder(fd, file_bytes(src));
  });
  port p;
  error e = open_port("pcap:file=" + fifo, &p);
  vector_sink s;
  if (e.ok()) EXPECT_EQ(drain(p, s), status::shutdown);
  writer.join();
  ASSERT_TRUE(e.ok()) << e.what();
  expect_same_frames(s.frames, src);
}

TEST_F(PcapBackend, ReplayingAStreamIsRefusedAtOpen) {
  // A pipe can be read once: loop=2 or loop=0 cannot replay it, and saying so
  // at open beats an error after the first pass.
  for (const char* loop : {"2", "0"}) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    ::close(fds[1]);  // an empty stream: nothing to wait for, whatever the port reads
    port p;
    error e = open_port("pcap:file=/dev/fd/" + std::to_string(fds[0]) + ",loop=" + loop, &p);
    ::close(fds[0]);
    EXPECT_EQ(e.code(), status::bad_config) << e.what();
    EXPECT_NE(e.message().find(std::string("loop=") + loop), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("pipe or FIFO"), std::string::npos) << e.message();
    EXPECT_EQ(p.priv, nullptr);
  }
}

TEST_F(PcapBackend, CompressedCaptureThroughAPipeIsNamedAsCompressed) {
  // The hint names the pipe form, and that form then works.
  const std::string gz = gnio::test::data_path("dns+icmp.pcapng.gz");
  port p;
  error e = open_port("pcap:file=" + gz, &p);
  EXPECT_EQ(e.code(), status::not_supported);
  EXPECT_NE(e.message().find("file=<(zcat '" + gz + "')"), std::string::npos) << e.message();
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  feeder w(fds[1], file_bytes(gz));
  port q;
  e = open_port("pcap:file=/dev/fd/" + std::to_string(fds[0]), &q);
  ::close(fds[0]);
  EXPECT_EQ(e.code(), status::not_supported) << "a compressed stream is recognised through a pipe too";
  EXPECT_NE(e.message().find("gzip-compressed"), std::string::npos) << e.message();
}

// --- A looping source that breaks mid-run (F9) --------------------------------

// Plays `path` with loop=0 for two passes, breaks it with `damage`, and
// returns how the stream ended.
struct broken_run {
  status end = status::success;
  std::string why;  // last_error
  size_t frames = 0;
};

broken_run break_mid_run(const std::string& path, const std::function<void()>& damage) {
  broken_run r;
  port p;
  if (error e = open_port("pcap:file=" + path + ",loop=0", &p); !e.ok()) {
    ADD_FAILURE() << e.what();
    return r;
  }
  vector_sink s;
  // Two passes over the 32 records, then the damage, while the third pass is open.
  EXPECT_EQ(drain(p, s, 4, 68), status::success);
  damage();
  r.end = drain(p, s, 4);
  const char* why = pcap_ops.last_error ? pcap_ops.last_error(p.priv) : nullptr;
  r.why = why ? why : "";
  r.frames = s.frames.size();
  return r;
}

TEST_F(PcapBackend, LoopingCaptureThatBreaksMidRunEndsWithAnError) {
  const std::string src = gnio::test::data_path("dns_icmp.pcap");
  const std::string path = tmp("f.pcap");
  struct damage_case {
    const char* name;
    std::function<void()> damage;
    const char* says;
  };
  const std::vector<damage_case> cases = {
      {"deleted", [&] { fs::remove(path); }, "No such file or directory"},
      {"emptied", [&] { fs::resize_file(path, 0); }, "empty"},
      {"cut to its header", [&] { fs::resize_file(path, 24); }, "delivered no frames"},
      {"replaced by another link type",
       [&] {
         write_capture(tmp("other.pcap"), DLT_RAW, {{std::vector<uint8_t>(40, 0x45), 40}});
         fs::rename(tmp("other.pcap"), path);
       },
       "changed link type"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    fs::copy_file(src, path, fs::copy_options::overwrite_existing);
    broken_run r = break_mid_run(path, c.damage);
    EXPECT_EQ(r.end, status::io_failed) << "an endless replay that stopped early must not end like a finished one";
    EXPECT_NE(r.why.find(c.says), std::string::npos) << r.why;
    EXPECT_NE(r.why.find(path), std::string::npos) << r.why;
    EXPECT_GE(r.frames, 68u);
  }
}

TEST_F(PcapBackend, BrokenReplayReachesThePortsEngineError) {
  // Through the core: the failure is the port's engine_error, which the tools
  // report and exit 1 on.
  const std::string path = tmp("f.pcap");
  fs::copy_file(gnio::test::data_path("dns_icmp.pcap"), path);
  auto g = gnio::gpu::open("host");
  ASSERT_TRUE(g) << g.err().what();
  auto p = gnio::port::open(*g, "pcap:file=" + path + ",loop=0");
  ASSERT_TRUE(p) << p.err().what();
  gnio::rxq_config cfg;
  cfg.host_consumer = true;
  cfg.num_descs = 64;
  auto q = p->create_rxq(cfg);
  ASSERT_TRUE(q) << q.err().what();
  fs::remove(path);  // the first pass is open already; the second cannot be
  ASSERT_TRUE(p->start().ok());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!p->rx_ended() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(p->rx_ended());
  const error e = p->engine_error();
  EXPECT_EQ(e.code(), status::io_failed) << e.what();
  EXPECT_NE(e.message().find("reopening '" + path + "' for pass 2"), std::string::npos) << e.what();
  EXPECT_EQ(p->stats().rx_frames, 32u);
  EXPECT_TRUE(p->stop().ok());
  EXPECT_TRUE(p->destroy_rxq(*q).ok());
  EXPECT_TRUE(p->close().ok());
}

// The pid of a process (not this one) whose command line contains needle
// and that has `path` open, or 0.
pid_t process_with_open(const std::string& needle, const std::string& path) {
  // increment(ec), not a range-for: a process that exits while its fd
  // directory is read makes operator++ throw, and this runs while a thread
  // that must be joined is still running.
  std::error_code ec;
  for (fs::directory_iterator e("/proc", ec), end; !ec && e != end; e.increment(ec)) {
    const std::string pid = e->path().filename().string();
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos || std::stoi(pid) == getpid()) continue;
    std::ifstream in(e->path() / "cmdline");
    const std::string cmd((std::istreambuf_iterator<char>(in)), {});
    if (cmd.find(needle) == std::string::npos) continue;
    std::error_code ec2;
    for (fs::directory_iterator fd(e->path() / "fd", ec2); !ec2 && fd != end; fd.increment(ec2)) {
      std::error_code ec3;
      if (fs::read_symlink(fd->path(), ec3) == path) return std::stoi(pid);
    }
  }
  return 0;
}

TEST_F(PcapBackend, BrokenReplayFailsTheToolsRunAndItsJson) {
  // gnio pp and flow_count on loop=0; the capture is deleted once the port
  // has it open, so the second pass cannot be read.
  const std::string tool = gnio::test::tool_bin();
  const std::string flow_count = gnio::test::flow_count_bin();
  for (const bool pp : {true, false}) {
    SCOPED_TRACE(pp ? "gnio pp" : "flow_count");
    const std::string path = tmp(pp ? "pp.pcap" : "fc.pcap");
    fs::copy_file(gnio::test::data_path("dns_icmp.pcap"), path);
    const std::string dev = "pcap:file=" + path + ",loop=0,rate=200pps";  // a pass takes 0.16 s
    std::vector<std::string> argv = pp ? std::vector<std::string>{tool, "pp", "--port", dev, "--gpu", "host"}
                                       : std::vector<std::string>{flow_count, "--port", dev, "--exec", "host"};
    argv.insert(argv.end(), {"--stats-interval", "0"});
    gnio::test::proc_result r;
    std::thread t([&] { r = gnio::test::run_process(argv, {.with_json = true}); });
    pid_t pid = 0;
    for (int i = 0; i < 3000 && pid == 0; ++i) {
      pid = process_with_open(dev, path);
      if (pid == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::error_code rm;
    fs::remove(path, rm);
    t.join();
    ASSERT_FALSE(rm) << rm.message();
    ASSERT_GT(pid, 0) << "the program never opened the capture: " << r.describe();
    EXPECT_EQ(r.code, 1) << "an endless replay that broke must not end like a finished run: " << r.describe();
    ASSERT_TRUE(r.j) << r.describe();
    const std::string err = r.j->at("engine_error").get<std::string>();
    EXPECT_NE(err.find("io_failed"), std::string::npos) << err;
    EXPECT_NE(err.find("reopening '" + path + "'"), std::string::npos) << err;
  }
}

// --- TX files: created at start, checked at open (F12, F17l), errno kept (F7) ---

TEST_F(PcapBackend, PortThatNeverStartsLeavesTheTxFileAlone) {
  // `gnio caps` and runs refused before start open and close the port.
  const std::string in = tmp("in.pcap"), keep = tmp("keep.pcap"), fresh = tmp("fresh.pcap");
  write_capture(in, DLT_EN10MB, {{std::vector<uint8_t>(60, 1), 60}});
  write_capture(keep, DLT_EN10MB, {{std::vector<uint8_t>(60, 2), 60}, {std::vector<uint8_t>(70, 3), 70}});
  const std::string before = file_bytes(keep);
  for (const std::string& dev : {"pcap:file=" + in + ",tx=" + keep, "pcap:tx=" + keep, "pcap:tx=" + fresh}) {
    SCOPED_TRACE(dev);
    port p;
    ASSERT_TRUE(open_port(dev, &p).ok());
    EXPECT_TRUE(p.caps().tx);
    EXPECT_TRUE(pcap_ops.stop(p.priv).ok());
  }
  EXPECT_EQ(file_bytes(keep), before) << "an existing tx= file must not be truncated before the port starts";
  EXPECT_FALSE(fs::exists(fresh)) << "a tx= file must not be created before the port starts";
  // Starting creates it.
  port p;
  ASSERT_TRUE(open_port("pcap:tx=" + fresh, &p).ok());
  ASSERT_TRUE(pcap_ops.start(p.priv).ok());
  EXPECT_TRUE(fs::exists(fresh));
}

TEST_F(PcapBackend, CoreTxPcapIsCheckedAtOpenAndCreatedAtStart) {
  auto g = gnio::gpu::open("host");
  ASSERT_TRUE(g) << g.err().what();
  // The same errno gives the same status for tx= and tx_pcap=, both at open.
  const std::string missing = tmp("no/such/dir/out.pcap");
  auto bad = gnio::port::open(*g, "gen:count=1,tx_pcap=" + missing);
  EXPECT_EQ(bad.code(), status::not_found) << (bad ? "opened" : bad.err().what());
  port pb;
  EXPECT_EQ(open_port("pcap:tx=" + missing, &pb).code(), status::not_found);
  auto dir = gnio::port::open(*g, "gen:count=1,tx_pcap=" + dir_);
  EXPECT_FALSE(dir) << "a directory is no tx_pcap= file";

  // Opened and closed without a start: an existing file keeps its bytes, a new one is not made.
  const std::string keep = tmp("keep.pcap"), fresh = tmp("fresh.pcap");
  write_capture(keep, DLT_EN10MB, {{std::vector<uint8_t>(60, 2), 60}});
  const std::string before = file_bytes(keep);
  for (const std::string& f : {keep, fresh}) {
    auto p = gnio::port::open(*g, "gen:count=1,tx_pcap=" + f);
    ASSERT_TRUE(p) << p.err().what();
    auto t = p->create_txq();
    ASSERT_TRUE(t) << t.err().what();
    EXPECT_TRUE(p->destroy_txq(*t).ok());
    EXPECT_TRUE(p->close().ok());
  }
  EXPECT_EQ(file_bytes(keep), before);
  EXPECT_FALSE(fs::exists(fresh));

  // Started: created, as a pcap file.
  auto p = gnio::port::open(*g, "gen:count=1,tx_pcap=" + fresh);
  ASSERT_TRUE(p) << p.err().what();
  auto t = p->create_txq();
  ASSERT_TRUE(t);
  ASSERT_TRUE(p->start().ok());
  EXPECT_TRUE(p->stop().ok());
  EXPECT_TRUE(p->destroy_txq(*t).ok());
  EXPECT_TRUE(p->close().ok());
  EXPECT_TRUE(read_with_libpcap(fresh).empty());
  EXPECT_EQ(fs::file_size(fresh), 24u);
}

TEST_F(PcapBackend, TxWriteErrorIsReportedWithItsOwnErrno) {
  // /dev/full fails every write with ENOSPC, as a full disk does. stdio
  // keeps the stream's error flag but not errno, which other calls move on.
  port p;
  ASSERT_TRUE(open_port("pcap:tx=/dev/full", &p).ok());
  ASSERT_TRUE(pcap_ops.start(p.priv).ok());
  std::vector<uint8_t> f(1500, 0x5a);
  std::vector<gnio::backend::tx_frame> frames(64, gnio::backend::tx_frame{f.data(), 1500});
  error first;
  for (int i = 0; i < 8 && first.ok(); ++i) {
    uint32_t n = 0;
    first = pcap_ops.tx_burst(p.priv, frames.data(), uint32_t(frames.size()), &n);
  }
  EXPECT_EQ(first.code(), status::io_failed);
  EXPECT_NE(first.message().find(std::strerror(ENOSPC)), std::string::npos) << first.message();
  errno = ENOENT;  // what an unrelated call (a stat of a missing file) leaves behind
  uint32_t n = 0;
  error again = pcap_ops.tx_burst(p.priv, frames.data(), 1, &n);
  EXPECT_NE(again.message().find(std::strerror(ENOSPC)), std::string::npos) << again.message();
  errno = ENOENT;
  error stop = pcap_ops.stop(p.priv);
  EXPECT_EQ(stop.code(), status::io_failed);
  EXPECT_NE(stop.message().find(std::strerror(ENOSPC)), std::string::npos) << stop.message();
  EXPECT_GE(p.counters().tx_errors, 1u);
}

TEST_F(PcapBackend, CoreTxPcapWriteErrorIsReportedAtStop) {
  // gnio pp --pcap-out on a gen port writes through the core's tx_pcap=.
  const std::string tool = gnio::test::tool_bin();
  auto r = gnio::test::run_process({tool, "pp", "--port", "gen:mix=all,count=20000", "--reply-all", "--pcap-out",
                                    "/dev/full", "--gpu", "host", "--stats-interval", "0"});
  ASSERT_TRUE(r.exited_cleanly()) << r.describe();
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_NE(r.err.find("tx_pcap: writing '/dev/full' failed: " + std::string(std::strerror(ENOSPC))), std::string::npos)
      << r.describe();
}

// --- Messages ------------------------------------------------------------------

TEST_F(PcapBackend, UnsupportedVersionMessageReadsAsASentence) {
  port p;
  error e = open_port("pcap:file=" + gnio::test::data_path("pcap-invalid-version-2.pcap"), &p);
  EXPECT_EQ(e.code(), status::unsupported_version);
  EXPECT_NE(e.message().find("has an unsupported pcap format version 2.5 (libpcap "), std::string::npos) << e.message();
  EXPECT_NE(e.message().find(" reads pcap 2.4 and pcapng 1.0)"), std::string::npos) << e.message();
  EXPECT_EQ(e.message().find("libpcap version"), std::string::npos) << e.message();
  EXPECT_EQ(e.message().find("TPACKET"), std::string::npos)
      << "libpcap's build details are no version: " << e.message();
}

TEST_F(PcapBackend, ImplausibleWireLengthIsCountedAndWarnedOnce) {
  // tshark counts a record's claimed length as it is; so does the port, but
  // it says so, once per capture, naming the record.
  const std::string path = tmp("huge.pcap");
  std::vector<uint8_t> eth(60, 0x11);
  write_capture(path, DLT_EN10MB, {{eth, 60}, {eth, 0xFFFFFFFFu}, {eth, 0xFFFFFFFFu}, {eth, 1u << 19}});
  log_capture logs;
  port p;
  ASSERT_TRUE(open_port("pcap:file=" + path + ",loop=2", &p).ok());
  vector_sink s;
  EXPECT_EQ(drain(p, s), status::shutdown);
  ASSERT_EQ(s.frames.size(), 8u);
  EXPECT_EQ(s.frames[1].wire_len, 0xFFFFFFFFu);
  EXPECT_EQ(s.frames[3].wire_len, 1u << 19) << "a BIG TCP super-frame's length is plausible";
  ASSERT_EQ(logs.lines.size(), 1u);
  EXPECT_NE(logs.lines[0].find("packet 2"), std::string::npos) << logs.lines[0];
  EXPECT_NE(logs.lines[0].find("4294967295"), std::string::npos) << logs.lines[0];
}

TEST(PcapOptions, UnknownOptionIsBadConfig) {
  port p;
  error e = open_port("pcap:file=x.pcap,speed=fast", &p);
  EXPECT_EQ(e.code(), status::bad_config);
  EXPECT_NE(e.message().find("speed"), std::string::npos) << e.message();
}

TEST(PcapOptions, NoFileNoTxIsBadConfig) {
  for (const char* dev : {"pcap", "pcap:", "pcap:loop=2"}) {
    port p;
    error e = open_port(dev, &p);
    EXPECT_EQ(e.code(), status::bad_config) << dev;
    EXPECT_NE(e.message().find("file="), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("tx="), std::string::npos) << e.message();
  }
}

TEST(PcapOptions, MalformedValuesAreRejected) {
  for (const char* dev : {"pcap:file=/x.pcap,loop=abc", "pcap:file=/x.pcap,rate=fast", "pcap:file=/x.pcap,rate=10Mfoo",
                          "pcap:file=", "pcap:file=/a.pcap,rx=/b.pcap", "pcap:tx=/tmp/x.pcap,rate=1000pps"}) {
    port p;
    error e = open_port(dev, &p);
    EXPECT_FALSE(e.ok()) << dev;
    EXPECT_TRUE(e.code() == status::invalid_value || e.code() == status::bad_config) << dev << ": " << e.what();
    EXPECT_EQ(p.priv, nullptr);
  }
}

TEST(PcapOptions, TableIsComplete) {
  EXPECT_EQ(pcap_ops.size, sizeof(gnio::backend::ops));
  EXPECT_STREQ(pcap_ops.name, "pcap");
  ASSERT_NE(pcap_ops.options, nullptr);
  for (const char* key : {"file=", "rx=", "tx=", "loop=", "rate="})
    EXPECT_NE(std::string(pcap_ops.options).find(key), std::string::npos) << key;
  EXPECT_NE(pcap_ops.summary, nullptr);
  EXPECT_NE(pcap_ops.open, nullptr);
  EXPECT_NE(pcap_ops.get_caps, nullptr);
  EXPECT_NE(pcap_ops.start, nullptr);
  EXPECT_NE(pcap_ops.rx_burst, nullptr);
  EXPECT_NE(pcap_ops.tx_burst, nullptr);
  EXPECT_NE(pcap_ops.stop, nullptr);
  EXPECT_NE(pcap_ops.close, nullptr);
  EXPECT_NE(pcap_ops.get_counters, nullptr);
}

}  // namespace
