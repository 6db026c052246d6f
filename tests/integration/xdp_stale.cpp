// SPDX-License-Identifier: Apache-2.0
#include "integration/xdp_stale.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <linux/if_link.h>

#include <cerrno>
#include <cstddef>

namespace gnio::test {

int attach_xsk_def_prog(unsigned ifindex, bool skb_mode, int* map_fd) {
  *map_fd = bpf_map_create(BPF_MAP_TYPE_XSKMAP, "xsks_map", 4, 4, 64, nullptr);
  if (*map_fd < 0) return -errno;
  // return bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS)
  bpf_insn insns[6] = {};
  insns[0].code = BPF_LDX | BPF_MEM | BPF_W;
  insns[0].dst_reg = BPF_REG_2;
  insns[0].src_reg = BPF_REG_1;
  insns[0].off = offsetof(xdp_md, rx_queue_index);
  insns[1].code = BPF_LD | BPF_DW | BPF_IMM;
  insns[1].dst_reg = BPF_REG_1;
  insns[1].src_reg = BPF_PSEUDO_MAP_FD;
  insns[1].imm = *map_fd;
  insns[3].code = BPF_ALU64 | BPF_MOV | BPF_K;
  insns[3].dst_reg = BPF_REG_3;
  insns[3].imm = XDP_PASS;
  insns[4].code = BPF_JMP | BPF_CALL;
  insns[4].imm = BPF_FUNC_redirect_map;
  insns[5].code = BPF_JMP | BPF_EXIT;
  const int prog = bpf_prog_load(BPF_PROG_TYPE_XDP, "xsk_def_prog", "GPL", insns, 6, nullptr);
  if (prog < 0) return -errno;
  if (bpf_xdp_attach(static_cast<int>(ifindex), prog, skb_mode ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE, nullptr) != 0)
    return -errno;
  return prog;
}

void detach_xdp(unsigned ifindex, bool skb_mode) {
  (void)bpf_xdp_detach(static_cast<int>(ifindex), skb_mode ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE, nullptr);
}

}  // namespace gnio::test
