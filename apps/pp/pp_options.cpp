// SPDX-License-Identifier: Apache-2.0
// gnio pp: the options' checks (pp_options.hpp).
#include "pp_options.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <gnio/console.hpp>

#include "cli.hpp"
#include "pp_device.hpp"
#include "pp_report.hpp"

namespace gnio::pp {

namespace {

bool parse_ipv4(const std::string& s, uint32_t* host_order) {
  in_addr a{};
  if (inet_pton(AF_INET, s.c_str(), &a) != 1) return false;
  *host_order = ntohl(a.s_addr);
  return true;
}

bool parse_mac(const std::string& s, uint8_t out[6]) {
  unsigned v[6];
  char tail;
  if (std::sscanf(s.c_str(), "%2x:%2x:%2x:%2x:%2x:%2x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &tail) != 6 &&
      std::sscanf(s.c_str(), "%2x-%2x-%2x-%2x-%2x-%2x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &tail) != 6)
    return false;
  for (int i = 0; i < 6; ++i) out[i] = static_cast<uint8_t>(v[i]);
  return true;
}

}  // namespace

int check_options(const options& opt, app_config* cfg, json* result) {
  if (opt.port.empty()) return bad_option("--port is required (e.g. pcap:file=x.pcap, pair:name=a)", result);
  if (opt.queues < 1 || opt.queues > k_max_queues)
    return bad_option(fmt::format("--queues {} is outside 1..{} (queues per traffic class)", opt.queues, k_max_queues),
                      result);
  if (opt.batch < 1 || opt.batch > 65536)
    return bad_option(fmt::format("--batch {} is outside 1..65536", opt.batch), result);
  if (opt.poll != "adaptive" && opt.poll != "busy" && opt.poll != "latency")
    return bad_option(fmt::format("--poll {} must be adaptive, busy or latency", opt.poll), result);
  if (opt.threads < 32 || opt.threads > 1024)
    return bad_option(fmt::format("--threads {} is outside 32..1024", opt.threads), result);
  if (!(opt.stats_interval >= 0)) return bad_option("--stats-interval must be >= 0", result);
  if (opt.tcp_streams > k_max_stream_capacity || (opt.tcp_streams & (opt.tcp_streams - 1)) != 0)
    return bad_option(
        fmt::format("--tcp-streams {} is not 0 or a power of two up to {}", opt.tcp_streams, k_max_stream_capacity),
        result);
  if (opt.frag_table > k_max_frag_slots || (opt.frag_table & (opt.frag_table - 1)) != 0)
    return bad_option(
        fmt::format("--frag-table {} is not 0 or a power of two up to {}", opt.frag_table, k_max_frag_slots), result);
  if (!(opt.duration >= 0)) return bad_option("--duration must be >= 0", result);
  if (opt.ring < 2 || (opt.ring & (opt.ring - 1)) != 0)
    return bad_option(fmt::format("--ring {} is not a power of two >= 2", opt.ring), result);
  if (opt.rx_slot < 64 || opt.rx_slot > (1u << 20) || opt.rx_slot % 64 != 0)
    return bad_option(fmt::format("--rx-slot {} is not a multiple of 64 in 64..1048576", opt.rx_slot), result);
  if (!opt.ip.empty()) {
    if (!parse_ipv4(opt.ip, &cfg->ip))
      return bad_option(fmt::format("--ip {}: not an IPv4 address (a.b.c.d)", printable(opt.ip)), result);
    // The address pp answers ARP, ICMP echo and HTTP for: one host's own.
    const char* why = cfg->ip == 0             ? "0.0.0.0 means no address; give this host's own address"
                      : cfg->ip == 0xffffffffu ? "a broadcast address cannot be a host's own address"
                      : (cfg->ip >> 28) == 0xe ? "a multicast address (224.0.0.0/4) cannot be a host's own address"
                      : (cfg->ip >> 28) == 0xf ? "240.0.0.0/4 is reserved, not a host address"
                                               : nullptr;
    if (why) return bad_option(fmt::format("--ip {}: {}", printable(opt.ip), why), result);
  }
  if (!opt.mac.empty()) {
    if (!parse_mac(opt.mac, cfg->mac))
      return bad_option(fmt::format("--mac {}: not a MAC address (aa:bb:cc:dd:ee:ff)", printable(opt.mac)), result);
    static const uint8_t zero[6] = {};
    const char* why = (cfg->mac[0] & 1)                     ? (std::memcmp(cfg->mac, "\xff\xff\xff\xff\xff\xff", 6) == 0
                                                                   ? "the broadcast address cannot be a host's own address"
                                                                   : "a multicast address (the first byte is odd) cannot be a host's own "
                                                                     "address")
                      : std::memcmp(cfg->mac, zero, 6) == 0 ? "00:00:00:00:00:00 is not an address"
                                                            : nullptr;
    if (why) return bad_option(fmt::format("--mac {}: {}", printable(opt.mac), why), result);
  } else {
    cfg->mac[0] = 0x02;  // locally administered, unicast
    cfg->mac[1] = 0x00;
    for (int i = 0; i < 4; ++i) cfg->mac[2 + i] = static_cast<uint8_t>(cfg->ip >> (24 - 8 * i));
  }
  if (opt.http_server && cfg->ip == 0)
    return bad_option("--http-server needs --ip (the address it serves on port 80)", result);
  cfg->reply_all = opt.reply_all ? 1 : 0;
  cfg->http_server = opt.http_server ? 1 : 0;
  return 0;
}

std::string memory_refusal(const options& opt, const pp_plan& plan, uint64_t host_blocks) {
  const uint32_t n = opt.queues;
  const uint64_t num_blocks = plan.num_blocks;
  const uint64_t ring_bytes = num_blocks * gnio::cli::rx_ring_bytes(opt.ring, opt.rx_slot) +
                              uint64_t{plan.num_block_txq} * gnio::cli::tx_ring_bytes(txq_config{}.num_descs);
  const uint64_t stream_bytes = host_blocks * uint64_t{opt.tcp_streams} * sizeof(device::tcp_conn);
  const uint64_t frag_bytes =
      opt.frag_table == 0 ? 0 : host_blocks * device::frag_table_bytes(opt.frag_table, k_frag_max_datagram);
  const gnio::cli::memory_room room = gnio::cli::available_memory();
  const std::string rings =
      fmt::format("--ring {} on {} RX queues (--queues {}: 3 x {} + 1)", opt.ring, num_blocks, n, n);
  std::string why =
      gnio::cli::memory_refusal(fmt::format("--tcp-streams {} ({} blocks on the host executor x {} streams x {} bytes)",
                                            opt.tcp_streams, host_blocks, opt.tcp_streams, sizeof(device::tcp_conn)),
                                stream_bytes, room);
  if (why.empty())
    why = gnio::cli::memory_refusal(
        fmt::format("--frag-table {} ({} blocks on the host executor x {} bytes)", opt.frag_table, host_blocks,
                    frag_bytes / std::max<uint64_t>(host_blocks, 1)),
        frag_bytes, room);
  if (why.empty()) why = gnio::cli::memory_refusal(rings, ring_bytes, room);
  if (why.empty())
    why = gnio::cli::memory_refusal(
        fmt::format("{} with --tcp-streams {} and --frag-table {}", rings, opt.tcp_streams, opt.frag_table),
        ring_bytes + stream_bytes + frag_bytes, room);
  return why;
}

}  // namespace gnio::pp
