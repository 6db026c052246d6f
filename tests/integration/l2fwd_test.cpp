// SPDX-License-Identifier: Apache-2.0
// The l2fwd example end to end: a pcap port replays a bundled capture and
// records what l2fwd sends back; the recording must be the capture with the
// Ethernet addresses swapped, byte for byte (read back with libpcap). On the
// generator every frame must come back out, and bad ports are refused.
//
// Environment: GNIO_TEST_EXEC=host|cuda (default host; cuda skips without a
// GPU); GNIO_TEST_DATA_DIR and GNIO_L2FWD_BIN override the paths compiled in.
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <gnio/gpu.hpp>

#include "support/frames.hpp"
#include "support/process.hpp"

namespace {

using gnio::test::env_or;
using frame = std::vector<uint8_t>;
using gnio::test::read_pcap;

const std::string k_data = env_or("GNIO_TEST_DATA_DIR", GNIO_TEST_DATA_DIR);
const std::string k_bin = env_or("GNIO_L2FWD_BIN", GNIO_L2FWD_BIN);
const std::string k_exec = env_or("GNIO_TEST_EXEC", "host");

std::string gpu_selector() { return k_exec == "cuda" ? "0" : "host"; }

#define REQUIRE_EXECUTOR()                                                                           \
  do {                                                                                               \
    if (k_exec == "cuda" && gnio::list_gpus().empty()) GTEST_SKIP() << "GNIO_TEST_EXEC=cuda but no GPU"; \
  } while (0)

frame swapped(frame f) {
  if (f.size() >= 12) std::swap_ranges(f.begin(), f.begin() + 6, f.begin() + 6);
  return f;
}

gnio::test::proc_result l2fwd(std::vector<std::string> args) {
  args.insert(args.begin(), k_bin);
  args.insert(args.end(), {"--gpu", gpu_selector(), "--stats-interval", "0"});
  return gnio::test::run_process(args, {.with_json = true});
}

TEST(L2fwd, OneQueueSendsEveryFrameBackSwappedInOrder) {
  REQUIRE_EXECUTOR();
  for (const char* file : {"http.pcap", "dns_icmp.pcap", "QinQpacket.pcap", "test.pcap"}) {
    SCOPED_TRACE(file);
    const std::string in = k_data + "/" + file, out = gnio::test::temp_path("l2fwd") + ".pcap";
    auto r = l2fwd({"--port", "pcap:file=" + in + ",tx=" + out});
    ASSERT_EQ(r.code, 0) << r.describe();
    const auto sent = read_pcap(in), back = read_pcap(out);
    std::remove(out.c_str());
    ASSERT_EQ(back.size(), sent.size());
    for (size_t i = 0; i < sent.size(); ++i) ASSERT_EQ(back[i], swapped(sent[i])) << "frame " << i;
    ASSERT_TRUE(r.j);
    EXPECT_EQ(r.j->at("forwarded").get<size_t>(), sent.size());
    EXPECT_EQ(r.j->at("tx_frames").get<size_t>(), sent.size());
    EXPECT_EQ(r.j->at("unaccounted").get<long>(), 0);
  }
}

TEST(L2fwd, FourQueuesKeepEveryFrameAndEachQueuesOrder) {
  REQUIRE_EXECUTOR();
  const std::string in = k_data + "/QinQpacket.pcap", out = gnio::test::temp_path("l2fwd4") + ".pcap";
  auto r = l2fwd({"--port", "pcap:file=" + in + ",tx=" + out, "--queues", "4", "--no-mac-swap"});
  ASSERT_EQ(r.code, 0) << r.describe();
  auto sent = read_pcap(in), back = read_pcap(out);
  std::remove(out.c_str());
  ASSERT_EQ(back.size(), sent.size());
  // Queues send independently, so only the multiset is fixed; unchanged frames
  // (--no-mac-swap) must all be there.
  std::sort(sent.begin(), sent.end());
  std::sort(back.begin(), back.end());
  EXPECT_EQ(back, sent);
}

TEST(L2fwd, GeneratorFramesAllComeBackOut) {
  REQUIRE_EXECUTOR();
  auto r = l2fwd({"--port", "gen:count=200000,flows=256", "--queues", "2"});
  ASSERT_EQ(r.code, 0) << r.describe();
  ASSERT_TRUE(r.j);
  EXPECT_EQ(r.j->at("packets").get<long>(), 200000);
  EXPECT_EQ(r.j->at("forwarded").get<long>(), 200000);
  EXPECT_EQ(r.j->at("tx_frames").get<long>(), 200000);
  EXPECT_EQ(r.j->at("missed").get<long>(), 0);
}

TEST(L2fwd, APortThatCannotTransmitIsRefused) {
  auto r = l2fwd({"--port", "pcap:file=" + k_data + "/http.pcap"});
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_NE(r.err.find("not_supported"), std::string::npos) << r.describe();
  EXPECT_NE(r.err.find("tx=FILE"), std::string::npos) << r.describe();
}

}  // namespace
