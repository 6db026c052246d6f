// SPDX-License-Identifier: Apache-2.0
// gnio pp's plan (apps/pp/pp_plan.hpp): block roles, GPU contexts, TX queues
// and steering for the layouts the app runs, checked against the rules
// written in pp_plan.hpp and docs/pp.md.
#include <gtest/gtest.h>

#include "pp_plan.hpp"

using gnio::pp::make_plan;
using gnio::pp::plan_input;
using gnio::pp::pp_plan;
using gnio::pp::role;

TEST(PpPlan, OneQueueOneGpuNoTx) {
  pp_plan p;
  ASSERT_EQ(make_plan(plan_input{1, 1, false, false}, &p), "");
  EXPECT_EQ(p.num_blocks, 4u);
  const role want[] = {role::udp, role::tcp, role::icmp, role::arp_other};
  for (uint32_t b = 0; b < 4; ++b) {
    EXPECT_EQ(p.blocks[b].r, want[b]);
    EXPECT_EQ(p.blocks[b].ctx, 0u);
    EXPECT_EQ(p.blocks[b].local, b);
    EXPECT_FALSE(p.blocks[b].has_tx);
  }
  EXPECT_EQ(p.num_block_txq, 0u);
  EXPECT_FALSE(p.ctrl);
  ASSERT_EQ(p.rxqs.size(), 4u);
  EXPECT_EQ(p.rxqs[3].cls, "arp_other");
  // Without the CPU thread, TCP connection control stays with the TCP blocks.
  ASSERT_EQ(p.steering.size(), 6u);
  EXPECT_EQ(p.steering[2].cls, gnio::device::rx_class_tcp_ctrl);
  EXPECT_EQ(p.steering[2].rxqs, std::vector<uint32_t>{1});
  EXPECT_EQ(p.steering_default, std::vector<uint32_t>{3});
}

TEST(PpPlan, RepliesGetTxQueuesWhenThePortTransmits) {
  pp_plan p;
  ASSERT_EQ(make_plan(plan_input{2, 1, false, true}, &p), "");
  // udp 0,1  tcp 2,3  icmp 4,5  arp_other 6: icmp and arp_other reply.
  for (uint32_t b = 0; b < p.num_blocks; ++b) EXPECT_EQ(p.blocks[b].has_tx, b >= 4) << "block " << b;
  EXPECT_EQ(p.num_block_txq, 3u);
  ASSERT_EQ(make_plan(plan_input{2, 1, true, true}, &p), "");
  for (uint32_t b = 0; b < p.num_blocks; ++b)
    EXPECT_EQ(p.blocks[b].has_tx, b >= 2) << "block " << b << " with the HTTP server";
  EXPECT_TRUE(p.ctrl);
  EXPECT_TRUE(p.ctrl_tx);
  ASSERT_EQ(p.rxqs.size(), 8u);
  EXPECT_EQ(p.rxqs.back().cls, "tcp_ctrl");
  EXPECT_EQ(p.rxqs.back().block, -1);
  EXPECT_EQ(p.steering[2].rxqs, std::vector<uint32_t>{7});
}

TEST(PpPlan, QueuesSpreadOverGpusArpOnTheFirst) {
  pp_plan p;
  ASSERT_EQ(make_plan(plan_input{3, 2, false, false}, &p), "");
  ASSERT_EQ(p.num_blocks, 10u);
  // Queue i of each class on context i mod 2.
  const uint32_t ctx[] = {0, 1, 0, 0, 1, 0, 0, 1, 0, 0};
  for (uint32_t b = 0; b < 10; ++b) EXPECT_EQ(p.blocks[b].ctx, ctx[b]) << "block " << b;
  ASSERT_EQ(p.ctx_blocks.size(), 2u);
  EXPECT_EQ(p.ctx_blocks[0], (std::vector<uint32_t>{0, 2, 3, 5, 6, 8, 9}));
  EXPECT_EQ(p.ctx_blocks[1], (std::vector<uint32_t>{1, 4, 7}));
  for (uint32_t k = 0; k < 2; ++k)
    for (uint32_t i = 0; i < p.ctx_blocks[k].size(); ++i) EXPECT_EQ(p.blocks[p.ctx_blocks[k][i]].local, i);
  EXPECT_EQ(p.steering[0].rxqs, (std::vector<uint32_t>{0, 1, 2}));
}

TEST(PpPlan, RefusesWhatCannotRun) {
  pp_plan p;
  EXPECT_NE(make_plan(plan_input{1, 2, false, false}, &p).find("fewer than the 2 GPUs"), std::string::npos);
  EXPECT_NE(make_plan(plan_input{0, 1, false, false}, &p), "");
  EXPECT_NE(make_plan(plan_input{22, 1, false, false}, &p), "");
}
