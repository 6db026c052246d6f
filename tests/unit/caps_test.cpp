// SPDX-License-Identifier: Apache-2.0
// The dual capability verdicts, on made-up devices and backends.
#include <set>
#include <string>

#include <gtest/gtest.h>

#include <gnio/caps.hpp>

namespace {

gnio::gpu_info h200() {
  gnio::gpu_info g;
  g.executor = gnio::executor_kind::cuda;
  g.ordinal = 0;
  g.name = "NVIDIA H200";
  g.cc_major = 9;
  g.cc_minor = 0;
  g.num_sms = 132;
  g.can_map_host_memory = true;
  g.unified_addressing = true;
  g.shared_mem_per_block = 48 * 1024;
  g.gpudirect_rdma = true;
  return g;
}

gnio::port_caps full_port() {
  gnio::port_caps c;
  c.rx = c.tx = true;
  c.max_rx_queues = c.max_tx_queues = 64;
  c.max_pkt_bytes = 9000;
  c.rx_timestamps = true;
  return c;
}

const gnio::feature_verdict& find(const std::vector<gnio::feature_verdict>& v, const std::string& f) {
  for (const auto& x : v)
    if (to_string(x.feature) == f) return x;
  static gnio::feature_verdict none{gnio::cap_feature::kernels, gnio::status::not_found, "feature not reported"};
  ADD_FAILURE() << "no verdict for " << f;
  return none;
}

TEST(Caps, ModernGpuAndFullBackendSupportEverythingButGpuCpuMemory) {
  auto v = gnio::evaluate_caps(full_port(), "gen", h200(), true);
  for (const auto& x : v) {
    if (x.feature == gnio::cap_feature::mem_gpu_cpu) continue;
    EXPECT_EQ(x.code, gnio::status::success) << to_string(x.feature) << ": " << x.reason;
    EXPECT_TRUE(x.reason.empty());
  }
  const auto& gc = find(v, "mem_gpu_cpu");
  EXPECT_EQ(gc.code, gnio::status::not_supported);
  EXPECT_NE(gc.reason.find("GDRCopy"), std::string::npos);
}

// The summary apps use before giving a device receive queues.
TEST(Caps, CheckReceiveKernelsGivesTheVerdictAndItsReason) {
  EXPECT_FALSE(gnio::check_receive_kernels(full_port(), "gen", h200(), true));
  auto old = h200();
  old.cc_major = 3;
  old.cc_minor = 7;
  const auto e = gnio::check_receive_kernels(full_port(), "gen", old, true);
  EXPECT_EQ(e.code(), gnio::status::not_supported);
  EXPECT_NE(e.message().find("compute capability 3.7"), std::string::npos) << e.message();
  auto no_rx = full_port();
  no_rx.rx = false;
  const auto r = gnio::check_receive_kernels(no_rx, "pcap", h200(), true);
  EXPECT_EQ(r.code(), gnio::status::not_supported);
  EXPECT_NE(r.message().find("backend pcap cannot receive"), std::string::npos) << r.message();
  EXPECT_EQ(gnio::check_receive_kernels(full_port(), "gen", h200(), false).code(), gnio::status::not_supported)
      << "a build without CUDA cannot run kernels on a GPU";
}

TEST(Caps, OldGpuIsRefusedWithItsComputeCapability) {
  auto g = h200();
  g.name = "Tesla K80";
  g.cc_major = 3;
  g.cc_minor = 7;
  auto v = gnio::evaluate_caps(full_port(), "gen", g, true);
  for (const char* f : {"kernels", "rx", "tx", "recv_thread", "recv_warp", "recv_block", "send_block", "mem_gpu"}) {
    const auto& x = find(v, f);
    EXPECT_EQ(x.code, gnio::status::not_supported) << f;
    EXPECT_NE(x.reason.find("compute capability 3.7"), std::string::npos) << f << ": " << x.reason;
    EXPECT_NE(x.reason.find("7.5"), std::string::npos) << x.reason;
  }
}

TEST(Caps, NoMappedHostMemoryIsRefusedWithTheReason) {
  auto g = h200();
  g.can_map_host_memory = false;
  auto v = gnio::evaluate_caps(full_port(), "gen", g, true);
  for (const char* f : {"kernels", "rx", "tx", "recv_warp", "mem_cpu_gpu"}) {
    const auto& x = find(v, f);
    EXPECT_EQ(x.code, gnio::status::not_supported) << f;
    EXPECT_NE(x.reason.find("map pinned host memory"), std::string::npos) << f << ": " << x.reason;
  }
}

TEST(Caps, BackendWithoutTxRefusesEverySendScope) {
  auto pc = full_port();
  pc.tx = false;
  auto v = gnio::evaluate_caps(pc, "pcap", h200(), true);
  for (const char* f : {"tx", "send_thread", "send_warp", "send_block"}) {
    const auto& x = find(v, f);
    EXPECT_EQ(x.code, gnio::status::not_supported) << f;
    EXPECT_EQ(x.reason, "backend pcap cannot transmit");
  }
  EXPECT_EQ(find(v, "rx").code, gnio::status::success);
  EXPECT_EQ(find(v, "recv_block").code, gnio::status::success);
}

TEST(Caps, BackendWithoutRxRefusesEveryRecvScopeAndTimestamps) {
  auto pc = full_port();
  pc.rx = false;
  auto v = gnio::evaluate_caps(pc, "pcap", h200(), true);
  for (const char* f : {"rx", "recv_thread", "recv_warp", "recv_block", "rx_timestamps"})
    EXPECT_EQ(find(v, f).reason, "backend pcap cannot receive") << f;
}

TEST(Caps, BuildWithoutCudaCannotRunKernelsOnAGpu) {
  auto v = gnio::evaluate_caps(full_port(), "gen", h200(), false);
  EXPECT_EQ(find(v, "kernels").code, gnio::status::not_supported);
  EXPECT_NE(find(v, "kernels").reason.find("without CUDA"), std::string::npos);
}

TEST(Caps, HostExecutorNeedsNoGpuFeatures) {
  gnio::gpu_info host;
  host.executor = gnio::executor_kind::host;
  host.name = "host executor";
  host.can_map_host_memory = true;
  auto v = gnio::evaluate_caps(full_port(), "gen", host, false);
  for (const char* f : {"kernels", "rx", "tx", "recv_block", "send_warp", "mem_gpu", "mem_cpu_gpu", "mem_gpu_cpu"})
    EXPECT_EQ(find(v, f).code, gnio::status::success) << f << ": " << find(v, f).reason;
  EXPECT_EQ(find(v, "gpudirect_rdma").code, gnio::status::not_supported);
}

TEST(Caps, SourceWithoutTimestampsSaysSo) {
  auto pc = full_port();
  pc.rx_timestamps = false;
  auto v = gnio::evaluate_caps(pc, "gen", h200(), true);
  EXPECT_NE(find(v, "rx_timestamps").reason.find("no source timestamps"), std::string::npos);
}

}  // namespace

// One verdict per feature, in the enum's order, each with its own name.
TEST(Caps, EveryFeatureIsReportedOnceInOrderWithItsName) {
  const auto v = gnio::evaluate_caps(full_port(), "gen", h200(), true);
  ASSERT_EQ(v.size(), static_cast<size_t>(gnio::cap_feature::gpudirect_rdma) + 1);
  std::set<std::string> names;
  for (size_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(static_cast<size_t>(v[i].feature), i);
    EXPECT_TRUE(names.insert(to_string(v[i].feature)).second) << to_string(v[i].feature);
    EXPECT_STRNE(to_string(v[i].feature), "unknown");
  }
  EXPECT_STREQ(to_string(gnio::cap_feature::recv_block), "recv_block");
  EXPECT_STREQ(to_string(gnio::cap_feature::tx_time), "tx_time");
}
