// SPDX-License-Identifier: Apache-2.0
// The engine's table-driven RSS hash must equal the device-side Toeplitz hash
// (which pkt_test checks against Microsoft's published vectors).
#include <random>

#include <gtest/gtest.h>

#include "internal.hpp"

TEST(Steering, TableToeplitzEqualsDeviceToeplitz) {
  std::mt19937 rng(42);
  for (int i = 0; i < 20000; ++i) {
    gnio::device::flow_key k{};
    k.family = (i % 3 == 0) ? 6 : 4;
    for (auto& b : k.src) b = static_cast<uint8_t>(rng());
    for (auto& b : k.dst) b = static_cast<uint8_t>(rng());
    if (k.family == 4)
      for (int j = 4; j < 16; ++j) k.src[j] = k.dst[j] = 0;
    k.src_port = static_cast<uint16_t>(rng());
    k.dst_port = static_cast<uint16_t>(rng());
    k.proto = 6;
    ASSERT_EQ(gnio::detail::steering_hash(k), gnio::device::flow_hash(k)) << i;
  }
  gnio::device::flow_key none{};
  EXPECT_EQ(gnio::detail::steering_hash(none), 0u);
}

// ---------------------------------------------------------------------------
// Steering with engine lanes: a generator split over 3 lanes, classes steered
// to groups larger and smaller than the lane count (the smaller ones shared by
// the lanes). Every frame arrives once, in its class's group, every flow on
// one queue, and every queue ends.
// ---------------------------------------------------------------------------

#include <map>
#include <set>
#include <thread>
#include <vector>

#include <gnio/gnio.hpp>
#include <gnio/device/pkt.hpp>
#include <gnio/device/rx.hpp>

namespace {

struct queue_seen {
  uint64_t frames = 0;
  std::set<std::string> flows;  // flow keys as bytes
  std::set<uint16_t> classes;
  bool ended = false;
};

void drain(const gnio::device::rxq& q, queue_seen& seen) {
  namespace dev = gnio::device;
  for (;;) {
    uint64_t first = 0;
    uint32_t num = 0;
    const auto s = dev::recv<dev::scope::thread>(q, 64, 1'000'000, &first, &num);
    if (s == gnio::status::shutdown) {
      seen.ended = true;
      return;
    }
    if (s != gnio::status::success) continue;
    for (uint32_t i = 0; i < num; ++i) {
      dev::parsed_pkt p;
      (void)dev::parse(dev::pkt_addr(q, first + i), dev::pkt_len(q, first + i), p);
      const dev::flow_key k = dev::make_flow_key(p);
      seen.flows.insert(std::string(reinterpret_cast<const char*>(&k), sizeof k));
      seen.classes.insert(q.cq[(first + i) & (q.num_descs - 1)].cls);
    }
    seen.frames += num;
    dev::release_all(q);
  }
}

}  // namespace

TEST(Steering, LanesWithRulesKeepEveryFrameAndFlowOnOneQueue) {
  namespace dev = gnio::device;
  constexpr uint64_t k_count = 300'000;
  auto g = gnio::gpu::open("host");
  ASSERT_TRUE(g) << g.err().what();
  auto p = gnio::port::open(*g, "gen:count=" + std::to_string(k_count) + ",flows=999,mix=all,lanes=3");
  ASSERT_TRUE(p) << p.err().what();
  std::vector<uint32_t> ids;
  for (int i = 0; i < 10; ++i) {
    gnio::rxq_config rc;
    rc.num_descs = 512;
    auto id = p->create_rxq(rc);
    ASSERT_TRUE(id) << id.err().what();
    ids.push_back(*id);
  }
  // udp: 4 queues (split over the lanes), tcp: 2 (shared), icmp: 3 (one
  // each), everything else: 1 (shared).
  const std::vector<uint32_t> udp{ids[0], ids[1], ids[2], ids[3]}, tcp{ids[4], ids[5]}, icmp{ids[6], ids[7], ids[8]},
      other{ids[9]};
  ASSERT_FALSE(p->set_steering(
      {{dev::rx_class_udp, udp}, {dev::rx_class_tcp, tcp}, {dev::rx_class_tcp_ctrl, tcp}, {dev::rx_class_icmp, icmp}},
      other));
  ASSERT_FALSE(p->start());
  std::vector<queue_seen> seen(ids.size());
  std::vector<std::thread> consumers;
  for (size_t i = 0; i < ids.size(); ++i) {
    auto v = p->rxq(ids[i]);
    ASSERT_TRUE(v);
    consumers.emplace_back(drain, *v, std::ref(seen[i]));
  }
  for (auto& t : consumers) t.join();
  ASSERT_FALSE(p->stop());
  const auto st = p->stats();

  uint64_t total = 0;
  std::map<std::string, int> queues_of_flow;
  for (size_t i = 0; i < seen.size(); ++i) {
    SCOPED_TRACE("queue " + std::to_string(i));
    EXPECT_TRUE(seen[i].ended) << "every queue sees the end of the stream";
    total += seen[i].frames;
    EXPECT_EQ(seen[i].frames, st.rxq[ids[i]].delivered);
    for (const auto& f : seen[i].flows) ++queues_of_flow[f];
    for (uint16_t c : seen[i].classes) {
      if (i < 4) EXPECT_EQ(c, dev::rx_class_udp);
      else if (i < 6) EXPECT_TRUE(c == dev::rx_class_tcp || c == dev::rx_class_tcp_ctrl) << c;
      else if (i < 9) EXPECT_EQ(c, dev::rx_class_icmp);
    }
    if (i < 9) EXPECT_GT(seen[i].frames, 0u) << "every queue of a steered group gets traffic";
  }
  EXPECT_EQ(total, k_count);
  EXPECT_EQ(st.rx_frames, k_count);
  EXPECT_EQ(st.rx_missed, 0u) << "a finite source waits for space, shared queues too";
  EXPECT_EQ(queues_of_flow.size(), 999u);
  for (const auto& [f, n] : queues_of_flow) EXPECT_EQ(n, 1) << "a flow reached " << n << " queues";
  for (uint32_t q = 0; q < p->num_rxq(); ++q) (void)p->destroy_rxq(q);
  (void)p->close();
}
