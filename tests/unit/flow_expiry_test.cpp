// SPDX-License-Identifier: Apache-2.0
// flow_count's host-side flow table (examples/flow_count/expiry.hpp): device
// tables given back are added by key, and flows end on FIN/RST or idleness
// with their counts whole.
#include <gtest/gtest.h>

#include <vector>

#include "expiry.hpp"

namespace {

namespace dev = gnio::device;
using flow_count::flow_end;
using flow_count::flow_expiry;

dev::flow_entry entry(uint8_t last_octet, uint8_t proto, uint64_t packets, uint32_t flags = 0) {
  dev::flow_entry e{};
  e.state = dev::flow_slot_used;
  e.key.family = 4;
  e.key.proto = proto;
  e.key.src[0] = 10;
  e.key.src[3] = last_octet;
  e.key.dst[0] = 192;
  e.key.src_port = 1000;
  e.key.dst_port = 80;
  e.packets = packets;
  e.bytes = 100 * packets;
  e.meta = flags;
  return e;
}

uint64_t live_packets(const flow_expiry& x) {
  uint64_t n = 0;
  x.for_each_live([&](const flow_count::flow_row& r) { n += r.e.packets; });
  return n;
}

// The same key in two tables (a flow that went on across a flip) is one
// flow; the VLAN stays the first packet's, TCP flags are ORed.
TEST(FlowExpiry, TablesAreAddedByKey) {
  flow_expiry x(0, nullptr, 0);
  std::vector<dev::flow_entry> a(8), b(8);
  a[1] = entry(1, 6, 3, dev::tcp_syn | dev::flow_meta_tagged | (7u << dev::flow_meta_vlan_shift));
  a[2] = entry(2, 17, 5);
  b[6] = entry(1, 6, 2, dev::tcp_ack | dev::flow_meta_tagged | (9u << dev::flow_meta_vlan_shift));
  b[7].packets = 4;  // not used: ignored
  x.merge(a.data(), a.size(), 1000);
  x.expire(1000, false);
  x.merge(b.data(), b.size(), 2000);
  x.expire(2000, false);
  ASSERT_EQ(x.live(), 2u);
  EXPECT_EQ(x.packets(), 10u);
  x.for_each_live([](const flow_count::flow_row& r) {
    if (r.e.key.proto != 6) return;
    EXPECT_EQ(r.e.packets, 5u);
    EXPECT_EQ(r.e.bytes, 500u);
    EXPECT_EQ(r.e.meta & dev::flow_meta_tcp_flags, uint32_t{dev::tcp_syn | dev::tcp_ack});
    EXPECT_EQ((r.e.meta >> dev::flow_meta_vlan_shift) & dev::flow_meta_vlan_mask, 7u);
    EXPECT_EQ(r.first_ms, 1000u);
    EXPECT_EQ(r.last_ms, 2000u);
  });
  EXPECT_TRUE(x.finished().empty());
}

// IP bytes add up across tables, and the capture times are the earliest and
// latest of them: the table a flip took back may hold later packets of a
// queue than the one in use holds of another, and a table without
// timestamps (0) changes nothing.
TEST(FlowExpiry, TablesKeepIpBytesAndTheEarliestAndLatestCaptureTime) {
  flow_expiry x(0, nullptr, 0);
  std::vector<dev::flow_entry> a(4), b(4), c(4);
  a[0] = entry(1, 17, 2);
  a[0].ip_bytes = 172;
  a[0].first_ns = 5'000;
  a[0].last_ns = 9'000;
  b[1] = entry(1, 17, 1);
  b[1].ip_bytes = 86;
  b[1].first_ns = 3'000;
  b[1].last_ns = 4'000;
  c[2] = entry(1, 17, 1);
  c[2].ip_bytes = 86;
  x.merge(a.data(), a.size(), 1000);
  x.merge(b.data(), b.size(), 2000);
  x.merge(c.data(), c.size(), 3000);
  ASSERT_EQ(x.live(), 1u);
  x.for_each_live([](const flow_count::flow_row& r) {
    EXPECT_EQ(r.e.packets, 4u);
    EXPECT_EQ(r.e.ip_bytes, 344u);
    EXPECT_EQ(r.e.first_ns, 3'000u);
    EXPECT_EQ(r.e.last_ns, 9'000u);
  });
}

// FIN or RST ends a TCP flow at the first harvest without its packets, not
// at the one that saw the FIN (the closing ACKs still belong to it); the
// same flags on UDP mean nothing.
TEST(FlowExpiry, FinAndRstEndTcpFlowsOnceQuiet) {
  flow_expiry x(60'000, nullptr, 0);
  std::vector<dev::flow_entry> t(8), empty(8);
  t[0] = entry(1, 6, 3, dev::tcp_syn | dev::tcp_fin);
  t[1] = entry(2, 6, 2, dev::tcp_rst);
  t[2] = entry(3, 6, 4, dev::tcp_ack);
  t[3] = entry(4, 17, 1, dev::tcp_fin);  // no TCP: the bits are not flags
  x.merge(t.data(), t.size(), 1000);
  x.expire(1000, false);
  EXPECT_EQ(x.live(), 4u);
  x.merge(empty.data(), empty.size(), 2000);
  x.expire(2000, false);
  ASSERT_EQ(x.finished().size(), 2u);
  EXPECT_EQ(x.ended_end_of_flow(), 2u);
  EXPECT_EQ(x.ended_idle(), 0u);
  for (const auto& r : x.finished()) {
    EXPECT_EQ(r.end, flow_end::end_of_flow);
    EXPECT_EQ(r.e.key.proto, 6);
    EXPECT_NE(r.e.meta & (dev::tcp_fin | dev::tcp_rst), 0u);
  }
  EXPECT_EQ(x.live(), 2u);
  EXPECT_EQ(live_packets(x) + x.finished()[0].e.packets + x.finished()[1].e.packets, 10u);
  // The key comes back: a new flow of its own.
  std::vector<dev::flow_entry> again(8);
  again[5] = entry(1, 6, 1, dev::tcp_syn);
  x.merge(again.data(), again.size(), 3000);
  x.expire(3000, false);
  EXPECT_EQ(x.live(), 3u);
  EXPECT_EQ(x.packets(), 11u);
}

// Several merges between two expires (a table filling fast is flipped more
// often than flows are looked at): a FIN flow that grew in any of them is
// not quiet yet.
TEST(FlowExpiry, GrowthInAnyMergeSinceTheLastExpireCounts) {
  flow_expiry x(60'000, nullptr, 0);
  std::vector<dev::flow_entry> fin(4), empty(4);
  fin[0] = entry(1, 6, 2, dev::tcp_fin);
  x.merge(empty.data(), empty.size(), 1000);
  x.expire(1000, false);
  x.merge(fin.data(), fin.size(), 1100);
  x.merge(empty.data(), empty.size(), 1200);
  x.expire(1200, false);
  EXPECT_TRUE(x.finished().empty());
  x.merge(empty.data(), empty.size(), 2200);
  x.expire(2200, false);
  ASSERT_EQ(x.finished().size(), 1u);
  EXPECT_EQ(x.finished()[0].end, flow_end::end_of_flow);
}

// Idle for the timeout: ended; the end of the run ends nothing.
TEST(FlowExpiry, IdleFlowsEndAndTheFinalHarvestKeepsTheRest) {
  flow_expiry x(1500, nullptr, 0);
  std::vector<dev::flow_entry> a(4), b(4), empty(4);
  a[0] = entry(1, 17, 1);
  a[1] = entry(2, 17, 1);
  b[1] = entry(2, 17, 1);
  x.merge(a.data(), a.size(), 1000);
  x.expire(1000, false);
  x.merge(b.data(), b.size(), 2000);
  x.expire(2000, false);
  EXPECT_TRUE(x.finished().empty());  // 1 s idle
  x.merge(empty.data(), empty.size(), 2500);
  x.expire(2500, false);
  ASSERT_EQ(x.finished().size(), 1u);  // 1.5 s idle
  EXPECT_EQ(x.finished()[0].end, flow_end::idle_timeout);
  EXPECT_EQ(x.finished()[0].e.key.src[3], 1);
  EXPECT_EQ(x.ended_idle(), 1u);
  x.merge(empty.data(), empty.size(), 9000);
  x.expire(9000, true);
  EXPECT_EQ(x.live(), 1u);
  EXPECT_EQ(x.finished().size(), 1u);
  EXPECT_EQ(live_packets(x), 2u);
}

// Timeout 0: flows never end, however quiet.
TEST(FlowExpiry, NoIdleTimeoutKeepsFlows) {
  flow_expiry x(0, nullptr, 0);
  std::vector<dev::flow_entry> a(4), empty(4);
  a[0] = entry(1, 17, 1);
  x.merge(a.data(), a.size(), 0);
  x.expire(0, false);
  x.merge(empty.data(), empty.size(), 1'000'000);
  x.expire(1'000'000, false);
  EXPECT_EQ(x.live(), 1u);
  EXPECT_TRUE(x.finished().empty());
}

}  // namespace
