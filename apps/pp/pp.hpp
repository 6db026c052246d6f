// SPDX-License-Identifier: Apache-2.0
// gnio pp: the GPU packet-processing reference application. Types shared by
// the kernels (pp_device.hpp) and the host side (the .cpp files). Trivially
// copyable, fixed-width, no STL: the body is copied to the GPU by value.
#pragma once

#include <gnio/device/bpf.hpp>
#include <gnio/device/flow_table.hpp>
#include <gnio/device/pkt/frag.hpp>
#include <gnio/device/pkt/stream.hpp>
#include <gnio/device/rx.hpp>
#include <gnio/device/sem.hpp>
#include <gnio/device/tx.hpp>

namespace gnio::pp {

// Every counter the kernels keep, in one list so the host can name them. Names
// that are also MANIFEST.tsv columns count what tshark counts there.
// One group of counters per line, kept as written:
// clang-format off
#define GNIO_PP_COUNTERS(X)                                                                        \
  X(packets) X(bytes) X(ipv4) X(ipv6) X(tcp) X(udp) X(icmp) X(icmpv6) X(arp) X(vlan)               \
  X(other) X(malformed) X(fragments)                                                               \
  X(dns_queries) X(dns_responses) X(dns_names_dropped) X(udp_other)                                \
  X(http_requests) X(http_get) X(http_head) X(http_post) X(http_other_requests)                    \
  X(http_responses) X(tcp_syn) X(tcp_fin) X(tcp_rst) X(tcp_ack) X(tcp_other)                       \
  X(icmp_echo_req) X(icmp_echo_reply) X(icmp_echo_reply_sent) X(icmp_other)                        \
  X(icmpv6_echo_req) X(icmpv6_echo_reply)                                                          \
  X(arp_requests) X(arp_replies) X(arp_replies_sent)                                               \
  X(http_pages_sent) X(http_404_sent) X(tx_failed) X(flow_table_full)                              \
  X(gre) X(erspan) X(vxlan) X(geneve) X(gtpu) X(ipip) X(mpls) X(pppoe) X(l2tp) X(encap_limit)      \
  X(frag_reassembled) X(frag_timed_out) X(frag_overlapping) X(frag_duplicates)                     \
  X(frag_over_limit) X(frag_bad) X(frag_pending)                                                   \
  X(http_request_messages) X(http_response_messages) X(tcp_retransmitted) X(tcp_gaps)              \
  X(stream_messages_dropped) X(stream_table_full) X(stream_reclaimed)                              \
  X(filtered)
// clang-format on

struct counters {
#define GNIO_PP_FIELD(name) uint64_t name;
  GNIO_PP_COUNTERS(GNIO_PP_FIELD)
#undef GNIO_PP_FIELD
};

inline constexpr uint32_t num_counters = sizeof(counters) / sizeof(uint64_t);

// The traffic classes the steering sends to separate queues (DOCA's app has
// the same split).
enum class role : uint32_t { udp = 0, tcp = 1, icmp = 2, arp_other = 3 };

struct app_config {
  uint32_t ip;          // the app's own IPv4 address, host byte order; 0 = none
  uint8_t mac[6];       // the app's MAC for ARP and HTTP replies
  uint8_t reply_all;    // answer every ICMP echo request, not only those to ip
  uint8_t http_server;  // answer HTTP GETs to ip:80 from the GPU
};

// DNS query names counted on the GPU (first question of each query).
inline constexpr uint32_t dns_name_bytes = 128;
struct dns_entry {
  uint32_t state;  // flow_slot_* protocol, as in flow_table.hpp
  uint32_t len;
  uint64_t hash;
  uint64_t count;
  char name[dns_name_bytes];  // len bytes of wire labels (dns_read_name_labels), cut at a label; root: one 0
};

// Prebuilt HTTP responses (status line, headers and body), in executor memory.
struct http_pages {
  const uint8_t* data;
  uint32_t index_off, index_len;      // "/" and "/index.html"
  uint32_t second_off, second_len;    // second_path
  uint32_t missing_off, missing_len;  // 404 for anything else
  char second_path[32];
};

struct block_role {
  role r;
  uint32_t has_tx;
  device::rxq rx;
  device::txq tx;
};

inline constexpr uint32_t max_blocks = 64;

// Semaphore item custom bytes: a snapshot of one block's counters.
struct report {
  uint32_t block;
  uint32_t final_report;  // 1 on the last report before the kernel returns
  uint64_t t_ns;
  counters c;
};

struct body {
  block_role blocks[max_blocks];
  uint32_t num_blocks;
  app_config cfg;
  counters* ctr;             // num_blocks entries, executor memory
  device::flow_entry* conv;  // conversations (both directions one key)
  uint32_t conv_capacity;
  dns_entry* dns;
  uint32_t dns_capacity;
  device::frag_table* frag;       // num_blocks tables (one per block, used by one thread), or null: no reassembly
  device::stream_table* streams;  // num_blocks tables (one per block), or null: HTTP/DNS-over-TCP per segment
  http_pages pages;
  device::sem sem;  // num_blocks items per round; item = block
  uint64_t report_interval_ns;
  uint32_t batch;  // max packets per recv
  // --filter, verified; frames it refuses are counted in `filtered` and
  // nothing else (no instructions: every frame passes).
  device::bpf_prog filter;

  GNIO_HOST_DEVICE void operator()(const device::exec_ctx& ctx) const;
};

}  // namespace gnio::pp
