// SPDX-License-Identifier: Apache-2.0
// gnio pp: the run's plan (pp_plan.hpp).
#include "pp_plan.hpp"

#include <fmt/format.h>

namespace gnio::pp {

const char* role_name(role r) {
  switch (r) {
    case role::udp: return "udp";
    case role::tcp: return "tcp";
    case role::icmp: return "icmp";
    case role::arp_other: return "arp_other";
  }
  return "?";
}

std::string make_plan(const plan_input& in, pp_plan* out) {
  *out = pp_plan{};
  const uint32_t n = in.queues;
  if (n < 1 || 3 * n + 1 > max_blocks)
    return fmt::format("--queues {} is outside 1..{} (queues per traffic class)", n, (max_blocks - 1) / 3);
  if (in.gpus < 1) return "no GPU context to plan for";
  if (n < in.gpus)
    return fmt::format(
        "--queues {} is fewer than the {} GPUs: each GPU needs at least one queue of every class, so "
        "give --queues {} or more",
        n, in.gpus, in.gpus);
  pp_plan& p = *out;
  p.num_blocks = 3 * n + 1;
  p.blocks.resize(p.num_blocks);
  p.ctx_blocks.resize(in.gpus);
  std::vector<uint32_t> group[4];
  for (uint32_t blk = 0; blk < p.num_blocks; ++blk) {
    plan_block& b = p.blocks[blk];
    b.r = blk < n ? role::udp : blk < 2 * n ? role::tcp : blk < 3 * n ? role::icmp : role::arp_other;
    b.ctx = b.r == role::arp_other ? 0 : (blk % n) % in.gpus;
    b.local = static_cast<uint32_t>(p.ctx_blocks[b.ctx].size());
    p.ctx_blocks[b.ctx].push_back(blk);
    auto& g = group[static_cast<uint32_t>(b.r)];
    b.class_queue = static_cast<uint32_t>(g.size());
    g.push_back(blk);  // block k's RX queue is at position k
    b.has_tx = in.can_tx && (b.r == role::icmp || b.r == role::arp_other || (b.r == role::tcp && in.http_server));
    p.num_block_txq += b.has_tx ? 1 : 0;
    p.rxqs.push_back({role_name(b.r), b.class_queue, static_cast<int>(blk)});
  }
  p.ctrl = in.http_server;
  p.ctrl_tx = in.http_server && in.can_tx;
  if (p.ctrl) p.rxqs.push_back({"tcp_ctrl", 0, -1});
  // Each class to its group (RSS by 5-tuple hash inside a group); TCP
  // connection control (SYN, FIN, RST) to the CPU thread when it runs.
  const std::vector<uint32_t> ctrl_q = p.ctrl ? std::vector<uint32_t>{p.num_blocks} : group[1];
  p.steering = {{device::rx_class_udp, group[0]},    {device::rx_class_tcp, group[1]},
                {device::rx_class_tcp_ctrl, ctrl_q}, {device::rx_class_icmp, group[2]},
                {device::rx_class_arp, group[3]},    {device::rx_class_other, group[3]}};
  p.steering_default = group[3];
  return {};
}

}  // namespace gnio::pp
