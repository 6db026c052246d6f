// SPDX-License-Identifier: Apache-2.0
// gnio pp: the plan of a run, computed before any device is touched: which
// kernel block serves which traffic class on which GPU context, the RX and TX
// queues in the order the app creates them, and the steering rules over them.
// A pure function of the options and what the port can do, so that the unit
// tests check every layout (tests/unit/pp_plan_test.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <gnio/device/rx.hpp>

#include "pp.hpp"

namespace gnio::pp {

struct plan_input {
  uint32_t queues = 1;       // --queues: RX queues per traffic class (udp, tcp, icmp)
  uint32_t gpus = 1;         // GPU contexts the blocks are spread over
  bool http_server = false;  // --http-server: TCP blocks reply, the CPU thread takes connection control
  bool can_tx = false;       // the port can transmit
};

struct plan_block {
  role r = role::udp;
  uint32_t ctx = 0;          // the GPU context whose kernel runs it
  uint32_t local = 0;        // its block number in that kernel
  uint32_t class_queue = 0;  // its queue's number within its class
  bool has_tx = false;       // it gets a TX queue of its own (in its context)
};

// An RX queue, in creation order: block k's queue is rxqs[k]; the CPU
// thread's TCP control queue (--http-server) comes last.
struct plan_rxq {
  std::string cls;  // udp, tcp, icmp, arp_other or tcp_ctrl
  uint32_t class_queue = 0;
  int block = -1;  // -1: the CPU thread's
};

// A steering rule over plan positions (indexes into rxqs).
struct plan_rule {
  device::rx_class cls;
  std::vector<uint32_t> rxqs;
};

struct pp_plan {
  uint32_t num_blocks = 0;                        // 3 * queues + 1
  std::vector<plan_block> blocks;                 // by the app's block number
  std::vector<std::vector<uint32_t>> ctx_blocks;  // per context: its blocks' numbers, in local order
  std::vector<plan_rxq> rxqs;
  bool ctrl = false;           // the CPU thread runs (--http-server): rxqs.back() is its queue
  bool ctrl_tx = false;        // and it has a TX queue (the port can transmit)
  uint32_t num_block_txq = 0;  // TX queues the blocks get
  std::vector<plan_rule> steering;
  std::vector<uint32_t> steering_default;  // where frames no rule takes go
};

// The block numbering is udp[queues], tcp[queues], icmp[queues], arp_other;
// queue i of each class runs on context i mod gpus, arp_other on the first.
// Blocks that reply get a TX queue when the port can transmit: every icmp
// block and arp_other, and the tcp blocks with the HTTP server. Returns ""
// and fills *out, or the reason the input cannot be planned (a usage error).
[[nodiscard]] std::string make_plan(const plan_input& in, pp_plan* out);

[[nodiscard]] const char* role_name(role r);

}  // namespace gnio::pp
