// SPDX-License-Identifier: Apache-2.0
// The dpdk backend end to end, through DPDK's own net_pcap driver: gnio pp and
// flow_count on a DPDK port replaying the bundled captures count what tshark
// counts (tests/data/MANIFEST.tsv), frames sent through the port reach the
// driver's tx_pcap file intact, engine lanes poll several DPDK queues, and bad
// device strings fail with the reason. Received by reference (by_ref=1, the
// default: the mbufs' buffers are gnio's RX pool) and by copy (by_ref=0), every
// byte arrives, l2fwd sends frames back from their RX buffers byte for byte,
// and a pool smaller than the capture is recycled without losing a frame or
// an mbuf. Every run is its own process (DPDK's
// EAL is initialised once per process). The live counterpart (ping, dig,
// curl, tcpreplay over a veth through net_af_packet) is netns_pp_clients_dpdk.
//
// Environment (set by ctest): GNIO_TEST_DATA_DIR, GNIO_TOOL_BIN,
// GNIO_FLOW_COUNT_BIN and GNIO_L2FWD_BIN name tests/data and the programs.
#include <pcap/pcap.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <gnio/gnio.hpp>

#include "support/frames.hpp"
#include "support/process.hpp"

namespace {

using gnio::test::env_or;
using json = nlohmann::json;

// Inputs and programs from the environment ctest sets; checked before the first test.
const bool k_env =
    gnio::test::env_check({"GNIO_TEST_DATA_DIR", "GNIO_TOOL_BIN", "GNIO_FLOW_COUNT_BIN", "GNIO_L2FWD_BIN"});

std::string data(const std::string& f) { return gnio::test::data_dir() + "/" + f; }

// A DPDK port is live (it never ends by itself): each run stops after 2 s,
// long after net_pcap has delivered a bundled capture.
gnio::test::proc_result pp(const std::string& port, std::vector<std::string> extra = {}) {
  std::vector<std::string> argv{gnio::test::tool_bin(), "pp", "--port",           port, "--gpu", "host",
                                "--duration",           "2",  "--stats-interval", "0"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  gnio::test::run_options o;
  o.with_json = true;
  return gnio::test::run_process(argv, o);
}

gnio::test::manifest_row row_of(const std::string& file) {
  for (auto& r : gnio::test::read_manifest(data("MANIFEST.tsv")))
    if (r["path"] == file) return r;
  return {};
}

bool have_tshark() { return std::system("command -v tshark >/dev/null 2>&1") == 0; }

TEST(Dpdk, PpOnNetPcapCountsWhatTsharkCounts) {
  for (const char* file : {"http.pcap", "dns_icmp.pcap", "QinQpacket.pcap", "test.pcap"}) {
    SCOPED_TRACE(file);
    const auto row = row_of(file);
    ASSERT_FALSE(row.empty());
    auto r = pp("dpdk:vdev=net_pcap0;rx_pcap=" + data(file));
    ASSERT_EQ(r.code, 0) << r.describe();
    ASSERT_TRUE(r.j) << r.describe();
    const json& j = *r.j;
    // http.pcap's frame 36 retransmits the response of frame 26: not read
    // again, as tshark does not.
    for (const char* k : {"packets", "ipv4", "ipv6", "tcp", "udp", "icmp", "arp", "vlan", "dns_queries",
                          "dns_responses", "http_requests", "http_responses", "icmp_echo_req", "icmp_echo_reply"}) {
      EXPECT_EQ(j.at(k).get<long>(), gnio::test::manifest_num(row, k)) << k;
    }
    EXPECT_EQ(j.at("tcp_flows").get<long>(), gnio::test::manifest_num(row, "tcp_streams"));
    EXPECT_EQ(j.at("missed").get<long>(), 0);
    EXPECT_EQ(j.at("unaccounted").get<long>(), 0);
    EXPECT_EQ(j.at("engine_error").get<std::string>(), "");
  }
}

TEST(Dpdk, EchoRepliesGoOutThroughTheDriver) {
  const std::string out = gnio::test::temp_path("dpdk_tx") + ".pcap";
  auto r = pp("dpdk:vdev=net_pcap0;rx_pcap=" + data("dns_icmp.pcap") + ";tx_pcap=" + out, {"--reply-all"});
  ASSERT_EQ(r.code, 0) << r.describe();
  ASSERT_TRUE(r.j);
  EXPECT_EQ(r.j->at("icmp_echo_reply_sent").get<int>(), 12);
  EXPECT_EQ(r.j->at("tx_frames").get<int>(), 12);
  if (!have_tshark()) {
    std::remove(out.c_str());
    GTEST_SKIP() << "tshark is not installed: the replies were counted, not decoded";
  }
  auto t = gnio::test::run_process({"tshark", "-r", out, "-o", "ip.check_checksum:TRUE", "-T", "fields", "-e",
                                    "icmp.type", "-e", "ip.checksum.status", "-e", "icmp.checksum.status"});
  std::remove(out.c_str());
  ASSERT_EQ(t.code, 0) << t.describe();
  int replies = 0;
  std::istringstream lines(t.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    EXPECT_EQ(line, "0\t1\t1") << "type 0 (echo reply), IP and ICMP checksums good (tshark 4.0: status 1)";
    ++replies;
  }
  EXPECT_EQ(replies, 12);
}

TEST(Dpdk, LanesPollTwoDpdkQueues) {
  // net_pcap makes one RX queue per rx_pcap file; two lanes poll one each.
  auto r = gnio::test::run_process(
      {gnio::test::flow_count_bin(), "--port",
       "dpdk:vdev=net_pcap0;rx_pcap=" + data("http.pcap") + ";rx_pcap=" + data("dns_icmp.pcap") + ",queues=2,lanes=2",
       "--exec", "host", "--queues", "2", "--duration", "2", "--stats-interval", "0"},
      {.with_json = true});
  ASSERT_EQ(r.code, 0) << r.describe();
  ASSERT_TRUE(r.j);
  EXPECT_EQ(r.j->at("packets").get<long>(), row_of("http.pcap").empty() ? -1 : 43 + 32);
  EXPECT_EQ(r.j->at("unaccounted").get<long>(), 0);
}

using frame = std::vector<uint8_t>;

frame swapped(frame f) {
  if (f.size() >= 12) std::swap_ranges(f.begin(), f.begin() + 6, f.begin() + 6);
  return f;
}

// l2fwd on a net_pcap port: receives in, sends every frame back into out.
// Logs at info, where the backend says which path it took and, at close,
// what went by reference and whether every mbuf came back.
gnio::test::proc_result l2fwd(const std::string& in, const std::string& out, const std::string& opts,
                              std::vector<std::string> extra = {}) {
  std::vector<std::string> argv{gnio::test::l2fwd_bin(),
                                "--port",
                                "dpdk:vdev=net_pcap0;rx_pcap=" + in + ";tx_pcap=" + out + opts,
                                "--gpu",
                                "host",
                                "--duration",
                                "2",
                                "--stats-interval",
                                "0"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return gnio::test::run_process(argv, {.with_json = true, .log_level = "info"});
}

TEST(Dpdk, ByReferenceAndByCopyReceiveEveryByteAndL2fwdSendsFromTheRxBuffers) {
  for (const char* file : {"http.pcap", "dns_icmp.pcap", "QinQpacket.pcap", "test.pcap"}) {
    for (const char* by_ref : {"1", "0"}) {
      SCOPED_TRACE(std::string(file) + " by_ref=" + by_ref);
      const std::string in = data(file), out = gnio::test::temp_path("dpdk_l2fwd") + ".pcap";
      auto r = l2fwd(in, out, std::string(",by_ref=") + by_ref);
      const auto sent = gnio::test::read_pcap(in), back = gnio::test::read_pcap(out);
      std::remove(out.c_str());
      ASSERT_EQ(r.code, 0) << r.describe();
      ASSERT_EQ(back.size(), sent.size()) << r.describe();
      for (size_t i = 0; i < sent.size(); ++i) ASSERT_EQ(back[i], swapped(sent[i])) << "frame " << i;
      ASSERT_TRUE(r.j);
      EXPECT_EQ(r.j->at("forwarded").get<size_t>(), sent.size());
      EXPECT_EQ(r.j->at("unaccounted").get<long>(), 0);
      if (std::string(by_ref) == "1") {
        EXPECT_NE(r.err.find("RX by reference into gnio's pool"), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("TX from RX buffers by reference"), std::string::npos) << r.err;
        // Every frame was held by reference and sent from its buffer.
        EXPECT_NE(r.err.find(fmt::format("RX {} by reference, 0 copied by the core, 0 copied into the pool, "
                                         "0 dropped (no mbuf), 0 cut (chained); TX {} by reference, 0 by copy",
                                         sent.size(), sent.size())),
                  std::string::npos)
            << r.err;
      } else {
        EXPECT_NE(r.err.find("RX and TX by copy (by_ref=0)"), std::string::npos) << r.err;
      }
      EXPECT_EQ(r.err.find("not returned"), std::string::npos) << r.err;
      EXPECT_EQ(r.err.find("not held"), std::string::npos) << r.err;
    }
  }
}

TEST(Dpdk, FlowCountByReferenceAndByCopyAgreeWithTheCapture) {
  for (const char* file : {"http.pcap", "QinQpacket.pcap", "test.pcap"}) {
    SCOPED_TRACE(file);
    const auto frames = gnio::test::read_pcap(data(file));
    size_t bytes = 0;
    for (const auto& f : frames) bytes += f.size();
    std::vector<json> runs;
    for (const char* by_ref : {"1", "0"}) {
      auto r = gnio::test::run_process(
          {gnio::test::flow_count_bin(), "--port", "dpdk:vdev=net_pcap0;rx_pcap=" + data(file) + ",by_ref=" + by_ref,
           "--exec", "host", "--duration", "2", "--stats-interval", "0"},
          {.with_json = true});
      ASSERT_EQ(r.code, 0) << r.describe();
      ASSERT_TRUE(r.j) << r.describe();
      EXPECT_EQ(r.j->at("packets").get<size_t>(), frames.size()) << "by_ref=" << by_ref;
      EXPECT_EQ(r.j->at("bytes").get<size_t>(), bytes) << "by_ref=" << by_ref;
      EXPECT_EQ(r.j->at("unaccounted").get<long>(), 0);
      EXPECT_EQ(r.j->at("source_errors").get<long>(), 0);
      runs.push_back(*r.j);
    }
    ASSERT_EQ(runs.size(), 2u);
    for (const char* k : {"packets", "bytes", "flows", "tcp_conversations", "udp_conversations", "malformed"})
      EXPECT_EQ(runs[0].at(k), runs[1].at(k)) << k;
    // The rows without their times: net_pcap stamps frames when it reads them.
    for (auto& r : runs)
      for (auto& row : r.at("flow_rows"))
        for (const char* k : {"first_seen", "first_seen_ns", "last_seen", "last_seen_ns"}) row.erase(k);
    EXPECT_EQ(runs[0].at("flow_rows"), runs[1].at("flow_rows"));
  }
}

// A capture of n distinct UDP frames (the index in the addresses and
// payload), of size(i) bytes each.
template <class Size>
std::string write_capture(uint32_t n, Size size) {
  const std::string path = gnio::test::temp_path("dpdk_many") + ".pcap";
  pcap_t* dead = pcap_open_dead(DLT_EN10MB, 65535);
  pcap_dumper_t* d = pcap_dump_open(dead, path.c_str());
  EXPECT_NE(d, nullptr) << pcap_geterr(dead);
  for (uint32_t i = 0; d && i < n; ++i) {
    frame f(size(i), 0);
    const uint8_t hdr[] = {0x02, 0, 0, 0, 0, 1, 0x02, 0, 0,  0,  0, 2, 0x08, 0x00,  // Ethernet, IPv4
                           0x45, 0, 0, 0, 0, 0, 0,    0, 64, 17, 0, 0, 10,   0,    0, 1, 10, 0, 0, 2};
    std::memcpy(f.data(), hdr, sizeof hdr);
    const uint16_t ip_len = static_cast<uint16_t>(f.size() - 14);
    f[16] = static_cast<uint8_t>(ip_len >> 8);
    f[17] = static_cast<uint8_t>(ip_len);
    f[28] = static_cast<uint8_t>(i >> 8);  // source 10.0.(i>>8).(i)
    f[29] = static_cast<uint8_t>(i);
    for (size_t k = sizeof hdr; k < f.size(); ++k) f[k] = static_cast<uint8_t>(i * 7 + k);
    pcap_pkthdr h{};
    h.caplen = h.len = static_cast<uint32_t>(f.size());
    h.ts.tv_sec = i;
    pcap_dump(reinterpret_cast<u_char*>(d), &h, f.data());
  }
  if (d) pcap_dump_close(d);
  pcap_close(dead);
  return path;
}

TEST(Dpdk, MoreFramesThanMbufsComeThroughAsTheKernelReleasesThem) {
  // 3000 frames through a pool of 256 mbufs and a ring of 64: each buffer is
  // received, sent back in place and released about twelve times. overflow=wait
  // asks net_pcap for no more frames than the ring takes, so it never finds
  // the pool empty.
  const std::string in = write_capture(3000, [](uint32_t i) { return 60 + i % 200; }),
                    out = gnio::test::temp_path("dpdk_many_out") + ".pcap";
  auto r = l2fwd(in, out, ",mbufs=256,descs=64,overflow=wait", {"--ring", "64", "--batch", "32", "--no-mac-swap"});
  const auto sent = gnio::test::read_pcap(in), back = gnio::test::read_pcap(out);
  std::remove(in.c_str());
  std::remove(out.c_str());
  ASSERT_EQ(r.code, 0) << r.describe();
  ASSERT_EQ(sent.size(), 3000u);
  ASSERT_EQ(back.size(), sent.size()) << r.describe();
  for (size_t i = 0; i < sent.size(); ++i) ASSERT_EQ(back[i], sent[i]) << "frame " << i;
  EXPECT_NE(r.err.find("256 mbufs"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("RX 3000 by reference"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("0 dropped (no mbuf)"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("not returned"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("not held"), std::string::npos) << r.err;
}

TEST(Dpdk, ChainedFramesKeepTheirFirstBufferByReference) {
  // net_pcap chains mbufs for frames longer than one 2048-byte buffer. By
  // reference the first buffer is delivered, flagged truncated, and the rest
  // of the chain freed; by copy the frame is made contiguous first. Either
  // way every frame is counted at its full length and no mbuf is left out.
  const uint32_t sizes[] = {100, 4000, 9000, 60};
  const std::string in = write_capture(4, [&](uint32_t i) { return sizes[i]; });
  for (const char* by_ref : {"1", "0"}) {
    SCOPED_TRACE(std::string("by_ref=") + by_ref);
    auto r = gnio::test::run_process(
        {gnio::test::flow_count_bin(), "--port", "dpdk:vdev=net_pcap0;rx_pcap=" + in + ",by_ref=" + by_ref, "--exec",
         "host", "--duration", "1", "--stats-interval", "0"},
        {.with_json = true, .log_level = "info"});
    ASSERT_EQ(r.code, 0) << r.describe();
    ASSERT_TRUE(r.j);
    EXPECT_EQ(r.j->at("packets").get<long>(), 4);
    EXPECT_EQ(r.j->at("bytes").get<long>(), 100 + 4000 + 9000 + 60);
    EXPECT_EQ(r.j->at("unaccounted").get<long>(), 0);
    if (std::string(by_ref) == "1") EXPECT_NE(r.err.find("RX 4 by reference"), std::string::npos) << r.err;
    if (std::string(by_ref) == "1") EXPECT_NE(r.err.find("2 cut (chained)"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("not returned"), std::string::npos) << r.err;
  }
  std::remove(in.c_str());
}

TEST(Dpdk, MbufsOfAnotherPoolAreCopiedIntoThePool) {
  // net_ring hands what a port sends back to its own RX, as the same mbufs:
  // here TX copies, mbufs of the port's TX pool, not of its RX pool. Each is
  // copied into a pool mbuf and delivered by reference; the frames arrive
  // intact and the TX mbufs go back at once.
  std::string log;  // the backend's path and, at close, its counts
  gnio::set_log_level(gnio::log_level::info);
  gnio::set_log_hook([&log](gnio::log_level, std::string_view m) { log.append(m).append("\n"); });
  auto g = gnio::gpu::open("host");
  ASSERT_TRUE(g.ok()) << g.err().what();
  auto a = gnio::port::open(*g, "dpdk:vdev=net_ring_loop");
  ASSERT_TRUE(a.ok()) << a.err().what();
  auto rq = a->create_rxq();
  ASSERT_TRUE(rq.ok()) << rq.err().what();
  auto tq = a->create_txq();
  ASSERT_TRUE(tq.ok()) << tq.err().what();
  auto pool = a->rxq_memory(*rq);
  ASSERT_TRUE(pool.ok());
  ASSERT_FALSE(a->start());
  const auto sent = gnio::test::read_pcap(data("dns_icmp.pcap"));
  const auto rx = *a->rxq(*rq);
  const auto tx = *a->txq(*tq);
  std::vector<frame> got;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (const auto& f : sent) gnio::test::host_send(tx, f);
  while (got.size() < sent.size() && std::chrono::steady_clock::now() < end) {
    uint64_t first = 0;
    uint32_t num = 0;
    if (gnio::device::recv<gnio::device::scope::thread>(rx, 64, 1'000'000, &first, &num) != gnio::status::success)
      continue;
    for (uint32_t i = 0; i < num; ++i) {
      const uint8_t* f = gnio::device::pkt_addr(rx, first + i);
      EXPECT_GE(f, static_cast<const uint8_t*>(pool->exec_ptr)) << "a completion outside the RX pool";
      EXPECT_LT(f, static_cast<const uint8_t*>(pool->exec_ptr) + pool->bytes) << "a completion outside the RX pool";
      got.emplace_back(f, f + gnio::device::pkt_len(rx, first + i));
    }
  }
  gnio::device::release_all(rx);
  EXPECT_EQ(got, sent);
  EXPECT_FALSE(a->stop());
  EXPECT_FALSE(a->destroy_rxq(*rq));
  EXPECT_FALSE(a->destroy_txq(*tq));
  EXPECT_FALSE(a->close());
  gnio::set_log_hook({});
  EXPECT_NE(log.find(fmt::format("RX {} by reference, 0 copied by the core, {} copied into the pool, 0 dropped",
                                 sent.size(), sent.size())),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("not returned"), std::string::npos) << log;
}

// --- net_af_packet on a veth pair (root, iproute2) --------------------------------

// A veth pair of this test's own (names tagged with the pid), both ends up,
// removed at the end.
class DpdkVeth : public ::testing::Test {
 protected:
  std::string a, b;
  bool created = false;

  static int sh(const std::string& cmd) {
    const int rc = std::system(cmd.c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  }
  static std::string out(const std::string& cmd) {
    std::string s;
    if (FILE* f = popen(cmd.c_str(), "r")) {
      char buf[4096];
      size_t n;
      while ((n = fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
      pclose(f);
    }
    return s;
  }

  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (a veth pair, net_af_packet's packet sockets)";
    if (sh("command -v ip >/dev/null 2>&1") != 0) GTEST_SKIP() << "needs the ip command (Debian package iproute2)";
    static int seq = 0;
    const std::string tag = std::to_string(getpid() % 100000) + "d" + std::to_string(seq++);
    a = "gda" + tag;
    b = "gdb" + tag;
    ASSERT_EQ(sh("ip link add " + a + " type veth peer name " + b), 0);
    created = true;
    for (const auto& n : {a, b}) {
      if (std::ofstream f("/proc/sys/net/ipv6/conf/" + n + "/disable_ipv6"); f) f << "1\n";
      ASSERT_EQ(sh("ip link set " + n + " up"), 0);
    }
  }
  void TearDown() override {
    if (created) (void)sh("ip link del " + a + " 2>/dev/null");
  }

  // The interface's promiscuity count and whether IFF_PROMISC itself is set
  // (what `ip link set promisc on`, or DPDK's promiscuous_enable, sets).
  struct promisc_state {
    long count = -1;
    bool flag = false;
  };
  promisc_state promisc() const {
    promisc_state s;
    const json j = json::parse(out("ip -d -j link show dev " + a), nullptr, false);
    if (!j.is_array() || j.empty()) return s;
    s.count = j[0].value("promiscuity", -1L);
    for (const auto& f : j[0].value("flags", json::array()))
      if (f == "PROMISC") s.flag = true;
    return s;
  }

  std::string port() const { return "dpdk:vdev=net_af_packet0;iface=" + a; }

  // gnio pp on the port in a thread of its own; *started turns true once the
  // port's promiscuous membership shows (the port started).
  std::thread run_pp(gnio::test::proc_result* r, std::vector<std::string> extra, gnio::test::run_options o) {
    std::vector<std::string> argv{gnio::test::tool_bin(), "pp", "--port", port(), "--gpu", "host",
                                  "--stats-interval",     "0"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return std::thread([argv, r, o] { *r = gnio::test::run_process(argv, o); });
  }
  bool wait_started(const std::chrono::seconds limit) const {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
      if (promisc().count >= 1) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }
  pid_t find_pp() const {
    for (const auto& e : std::filesystem::directory_iterator("/proc")) {
      const std::string pid = e.path().filename().string();
      if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
      std::ifstream in(e.path() / "cmdline");
      std::string cmd((std::istreambuf_iterator<char>(in)), {});
      if (cmd.find(port()) != std::string::npos && std::stoi(pid) != getpid()) return std::stoi(pid);
    }
    return 0;
  }
};

TEST_F(DpdkVeth, PromiscuousModeEndsWithTheRunCleanOrKilled) {
  ASSERT_EQ(promisc().count, 0);
  // A clean run: promiscuous while it runs, not after.
  {
    gnio::test::proc_result r;
    std::thread t = run_pp(&r, {"--duration", "3"}, {});
    const bool started = wait_started(std::chrono::seconds(60));
    const promisc_state during = promisc();
    t.join();
    ASSERT_EQ(r.code, 0) << r.describe();
    ASSERT_TRUE(started) << "promisc=1 (the default) must make the interface promiscuous while the port runs";
    EXPECT_GE(during.count, 1);
    const promisc_state after = promisc();
    EXPECT_EQ(after.count, 0) << "a clean exit must leave the interface as it found it";
    EXPECT_FALSE(after.flag) << out("ip link show dev " + a);
  }
  // Killed: the kernel drops the membership with the process.
  {
    gnio::test::proc_result r;
    std::thread t = run_pp(&r, {}, {.limit = std::chrono::seconds(120)});
    const bool started = wait_started(std::chrono::seconds(60));
    const pid_t pid = started ? find_pp() : 0;
    if (pid > 0) kill(pid, SIGKILL);
    t.join();
    ASSERT_TRUE(started) << r.describe();
    ASSERT_GT(pid, 0);
    EXPECT_EQ(r.signal, SIGKILL) << r.describe();
    const promisc_state after = promisc();
    EXPECT_EQ(after.count, 0) << "kill -9 must not leave the interface promiscuous";
    EXPECT_FALSE(after.flag) << out("ip link show dev " + a);
  }
  // promisc=0: never promiscuous.
  {
    auto r = gnio::test::run_process({gnio::test::tool_bin(), "pp", "--port", port() + ",promisc=0", "--gpu", "host",
                                      "--duration", "1", "--stats-interval", "0"});
    ASSERT_EQ(r.code, 0) << r.describe();
    EXPECT_EQ(promisc().count, 0);
  }
}

TEST_F(DpdkVeth, InterfaceRemovedMidRunIsAnEngineErrorAndTheRunFails) {
  gnio::test::proc_result r;
  gnio::test::run_options o;
  o.with_json = true;
  o.limit = std::chrono::seconds(120);
  // Long enough that only noticing the removal ends it.
  std::thread t = run_pp(&r, {"--duration", "30"}, o);
  const bool started = wait_started(std::chrono::seconds(60));
  if (started) {
    EXPECT_EQ(sh("ip link del " + a), 0);
    created = false;
  }
  t.join();
  ASSERT_TRUE(started) << r.describe();
  ASSERT_TRUE(r.exited) << r.describe();
  EXPECT_EQ(r.code, 1) << r.describe();
  ASSERT_TRUE(r.j) << r.describe();
  const std::string err = r.j->at("engine_error").get<std::string>();
  EXPECT_NE(err.find("io_failed"), std::string::npos) << err;
  EXPECT_NE(err.find(a + " (ifindex"), std::string::npos) << err;
  EXPECT_NE(err.find("was removed"), std::string::npos) << err;
}

TEST(Dpdk, BadDeviceStringsNameTheProblem) {
  struct bad_case {
    std::string port;
    std::string status, mention;
  };
  const std::vector<bad_case> cases{
      {"dpdk:", "bad_config", "exactly one of vdev="},
      {"dpdk:vdev=net_pcap0;rx_pcap=x,port=0", "bad_config", "exactly one of vdev="},
      {"dpdk:vdev=net_nosuchdriver0", "not_found", "net_nosuchdriver0"},
      {"dpdk:vdev=net_pcap0;rx_pcap=" + data("no_such_file.pcap"), "not_found", "net_pcap0"},
      {"dpdk:port=7", "not_found", "no port 7"},
      {"dpdk:vdev=net_pcap0;rx_pcap=" + data("http.pcap") + ",queues=2", "invalid_value", "queues=2"},
      {"dpdk:vdev=net_pcap0;rx_pcap=" + data("http.pcap") + ",bogus=1", "bad_config", "bogus"},
      {"dpdk:vdev=net_pcap0;rx_pcap=" + data("http.pcap") + ",by_ref=2", "invalid_value", "by_ref"},
      {"dpdk:vdev=net_pcap0;rx_pcap=" + data("http.pcap") + ",mbufs=10", "invalid_value", "mbufs"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.port);
    auto r = pp(c.port);
    ASSERT_TRUE(r.exited) << r.describe();
    EXPECT_EQ(r.code, 1) << r.describe();
    EXPECT_NE(r.err.find(c.status), std::string::npos) << r.describe();
    EXPECT_NE(r.err.find(c.mention), std::string::npos) << r.describe();
  }
  auto lanes = pp("dpdk:vdev=net_pcap0;rx_pcap=" + data("http.pcap") + ",lanes=2");
  EXPECT_EQ(lanes.code, 1) << lanes.describe();
  EXPECT_NE(lanes.err.find("lanes=2 needs queues=2"), std::string::npos) << lanes.describe();
}

}  // namespace
