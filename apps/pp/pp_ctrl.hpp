// SPDX-License-Identifier: Apache-2.0
// gnio pp: the host side of the HTTP server (--http-server). The kernels
// answer GET requests from prebuilt pages in executor memory; TCP connection
// control (SYN, FIN, RST) is steered to an RX queue a CPU thread consumes,
// which answers SYN with SYN-ACK and FIN with FIN-ACK through a TX queue of
// its own and counts those frames as the kernels count theirs.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include <gnio/device/flow_table.hpp>
#include <gnio/device/rx.hpp>
#include <gnio/device/tx.hpp>

#include "pp.hpp"

namespace gnio::pp {

inline constexpr uint32_t k_ctrl_ring = 1024;               // descriptors of the CPU thread's RX queue
inline constexpr uint32_t k_ctrl_tx_ring = 256;             // and of its TX queue
inline constexpr uint32_t k_ctrl_conv_capacity = 1u << 14;  // the CPU thread's own tables (host memory)
inline constexpr uint32_t k_ctrl_dns_capacity = 1u << 10;

// The HTTP server's pages one after the other in data (index, /hello, 404),
// as the kernels find them through index; index.data is set once data is in
// executor memory.
struct page_set {
  std::string data;
  http_pages index{};
};
[[nodiscard]] page_set make_pages();

struct ctrl_state {
  device::rxq rx{};       // host view of the host_consumer queue
  device::txq tx{};       // host view of the host_producer queue
  device::txq tx_exec{};  // kernel view of the same queue: descriptor addresses
  bool has_tx = false;
  app_config cfg{};
  uint64_t isn_secret = 0;
  uint32_t batch = 64;
  device::bpf_prog filter{};  // --filter, as the kernels run it (host memory)
  std::atomic<bool> stop{false};
  std::atomic<bool> ended{false};  // the queue reached end of stream

  counters c{};  // this thread's, merged into the totals at the end
  uint64_t synack_sent = 0, finack_sent = 0;
  // The same tables as the kernels', in host memory: the kernels' are in
  // executor memory this thread may not reach. Merged at the end.
  std::vector<device::flow_entry> conv = std::vector<device::flow_entry>(k_ctrl_conv_capacity);
  std::vector<dns_entry> dns = std::vector<dns_entry>(k_ctrl_dns_capacity);

  std::mutex mu;  // guards snap
  counters snap{};
};

// RFC 6528 in spirit: a keyed hash of the 4-tuple, so that a retransmitted SYN

// The CPU thread: consumes s->rx until s->stop or the queue's end of stream
// (then s->ended), and releases every slot it took before it returns.
void ctrl_main(ctrl_state* s);

}  // namespace gnio::pp
