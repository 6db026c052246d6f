// SPDX-License-Identifier: Apache-2.0
// gnio pp: the host side of the GPU packet-processing application (the open
// counterpart of DOCA's GPU Packet Processing application). run() does the
// whole lifecycle and can be called in-process (tests do); add_command()
// registers the `gnio pp` subcommand. See docs/pp.md.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "cli.hpp"
#include "metrics.hpp"
#include "ipfix.hpp"

namespace CLI {
class App;
}

namespace gnio::pp {

struct options {
  std::string port;               // device string (required): pcap:file=x.pcap, pair:name=a, gen:...
  std::string gpu = "auto";       // PCIe bus id, CUDA ordinal, host or auto (first GPU, else host);
                                  // a comma-separated list (0,1) runs one context and kernel per GPU
  uint32_t queues = 1;            // RX queues per traffic class (udp, tcp, icmp), 1..15
  std::string ip;                 // own IPv4 address (ARP, ICMP echo, HTTP); empty = none
  std::string mac;                // own MAC; empty = 02:00 + the 4 bytes of ip
  bool http_server = false;       // answer HTTP on ip:80; TCP SYN/FIN/RST go to a CPU thread
  bool reply_all = false;         // answer every ICMP echo request, not only those to ip
  double stats_interval = 1.0;    // seconds between stats lines (0 = none)
  std::string json_path;          // final stats as JSON
  std::string jsonl_path;         // --jsonl: stats lines and the final JSON as JSON Lines ("-": stdout)
  std::string pcap_out;           // everything transmitted, as a pcap file
  double duration = 0;            // stop after this many seconds (0 = end of stream or stop)
  uint32_t batch = 512;           // max packets per recv
  uint32_t threads = 256;         // CUDA threads per block
  uint32_t ring = 4096;           // descriptors per RX queue (power of two)
  uint32_t rx_slot = 2048;        // bytes per RX buffer slot (a multiple of 64, 64..1 MiB): longer frames are cut
  uint32_t inline_headers = 0;    // --inline-headers: bytes of each frame in its completion entry
  std::string poll = "adaptive";  // how kernels poll an empty queue: adaptive or busy (device::poll_policy)
  uint32_t tcp_streams = 2048;    // TCP connections each block follows for per-message HTTP/DNS counting
                                  // (a power of two; 0 = classify every segment on its own)
  uint32_t frag_table = 32;       // IP datagrams each block reassembles at once (0 = count fragments as they are)
  ipfix::options ipfix;           // --ipfix HOST:PORT and its timeouts: conversations as IPFIX records (docs/ipfix.md)
  std::string filter;             // --filter: tcpdump syntax; frames it refuses count as filtered
  cli::write_options write;       // --write: received frames --filter accepts, to pcap files
  std::string command;            // command line, for the JSON
  bool quiet = false;             // no console output except errors (in-process callers)
  metrics::options metrics;       // --metrics ADDR:PORT and --metrics-linger S (docs/monitoring.md)
};

// Runs the application until the stream ends, *stop becomes true (may be
// null), or duration passes. Returns the process exit status: 0 on success,
// 1 when a step failed or the accounting does not add up, 2 for bad options.
// *result (may be null) receives the final JSON (also when --json is not set).
int run(const options& opt, std::atomic<bool>* stop, nlohmann::json* result);

// The complete HTTP/1.1 response the server sends for a request path: the
// index for "/" and "/index.html", a second page for "/hello", and a 404 page
// for anything else.
std::string http_page(std::string_view path);

// A DNS name kept as wire labels (a length byte, then the label's bytes, as
// dns_read_name_labels writes them; the root name is one 0 byte) as text,
// escaped as dig prints names: labels joined by '.', no final dot; '.', '\\',
// '"', '(', ')', ';', '@' and '$' inside a label get a backslash; bytes
// outside 0x21..0x7e (controls, space, DEL, and every byte >= 0x80) are
// written \DDD in decimal. The result is printable ASCII, safe for a
// terminal and valid UTF-8 for JSON. "" gives "", the root ".".
std::string dns_name_text(std::string_view labels);

// Registers `pp` on app; its callback runs pp with SIGINT/SIGTERM stopping it
// cleanly, and exits with run()'s status.
void add_command(CLI::App& app);

}  // namespace gnio::pp
