// SPDX-License-Identifier: Apache-2.0
// gnio pp, device side: what every part of the kernel shares (limits,
// timeouts, the out-of-line marker, byte helpers). Everything in the
// device-side headers (pp_device.hpp lists them) is GNIO_HOST_DEVICE, so that
// the same code runs as a CUDA kernel (one block per RX queue) and on the
// host executor (one thread per queue), and so that the unit tests can call
// each step on hand-built frames.
#pragma once

#include <gnio/device/block.hpp>
#include <gnio/device/flow_table.hpp>
#include <gnio/device/pkt.hpp>
#include <gnio/device/pkt/frag.hpp>
#include <gnio/device/pkt/stream.hpp>
#include <gnio/device/rx.hpp>
#include <gnio/device/sem.hpp>
#include <gnio/device/tx.hpp>

#include "pp.hpp"

namespace gnio::pp {

// Largest TCP payload a reply frame may carry: one 1500-byte IPv4 MTU minus
// 20 bytes of IPv4 and 20 of TCP header. The host keeps pages below it.
inline constexpr uint32_t max_tcp_payload = 1460;
// Minimum Ethernet frame without FCS; built frames are zero-padded to it.
inline constexpr uint32_t min_frame = 60;
// How long a block waits for TX descriptors or completions before giving up
// on a reply (counted in tx_failed).
inline constexpr uint64_t tx_timeout_ns = 500'000'000ull;
// How long the final report waits for the host to free the block's item.
inline constexpr uint64_t final_report_wait_ns = 100'000'000ull;
inline constexpr uint64_t recv_timeout_ns = 100'000;
// Most threads a CUDA block may have (the kernel's per-round shared arrays
// are this long; pp's --threads allows fewer).
inline constexpr uint32_t k_max_block_threads = 1024;
// Slots the conversation and DNS name tables search from a key's hash: a
// table that fills up (more conversations than it holds) then costs each new
// key a bounded search, counted in flow_table_full / dns_names_dropped,
// rather than a walk of the whole table per packet.
inline constexpr uint32_t k_table_max_probe = gnio::device::flow_table_max_probe;  // shared with flow_count

// Out of line in device code (to bound the kernel's registers), an ordinary
// inline function elsewhere.
#if defined(__CUDACC__)
#define GNIO_PP_NOINLINE __noinline__
#else
#define GNIO_PP_NOINLINE inline
#endif

namespace detail {

using device::fnv1a64;
using device::detail::fits;
using device::detail::rd16;
using device::detail::rd32;

// Whether the parser filled in the L4 header fields (ports, TCP seq/flags,
// ICMP type). A truncated_l4 error means it did not, except for TCP whose
// 20-byte base header was all there and only its options were cut by the
// capture.
GNIO_HOST_DEVICE inline bool l4_fields_ok(const device::parsed_pkt& p, uint32_t len) {
  using namespace device;
  if (!(p.malformed && p.error == pkt_error::truncated_l4)) return true;
  if (p.l4 != l4_kind::tcp) return false;
  uint32_t ip_end = len;
  if (p.l3 == l3_kind::ipv4) ip_end = p.l3_off + uint32_t{p.ipv4.total_length};
  else if (p.l3 == l3_kind::ipv6 && !p.ipv6.jumbo) ip_end = p.l3_off + 40u + p.ipv6.payload_length;
  return fits(ip_end < len ? ip_end : len, p.l4_off, 20);
}

}  // namespace detail

}  // namespace gnio::pp
