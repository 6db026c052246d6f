// SPDX-License-Identifier: Apache-2.0
// An XDP program as a killed AF_XDP user leaves it, for af_xdp_test: libbpf's
// BPF instructions clash with libpcap's (both name struct bpf_insn), so this
// lives apart from the test that includes pcap.h.
#pragma once

namespace gnio::test {

// Attaches through netlink, to interface `ifindex` in skb (generic) or drv
// mode, an AF_XDP redirect program named xsk_def_prog with an XSKMAP, as
// libxdp does. Returns the program's descriptor (the map's in *map_fd), or
// -errno.
int attach_xsk_def_prog(unsigned ifindex, bool skb_mode, int* map_fd);

// Detaches whatever XDP program the interface has in that mode.
void detach_xdp(unsigned ifindex, bool skb_mode);

}  // namespace gnio::test
