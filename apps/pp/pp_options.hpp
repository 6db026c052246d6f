// SPDX-License-Identifier: Apache-2.0
// gnio pp: the options' limits and their checks, before anything is opened.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "pp.hpp"
#include "pp_app.hpp"
#include "pp_plan.hpp"

namespace gnio::pp {

inline constexpr uint32_t k_max_queues = 15;           // per class: 3 * 15 + 1 blocks
inline constexpr uint32_t k_conv_capacity = 1u << 16;  // conversations (power of two)
inline constexpr uint32_t k_dns_capacity = 1u << 12;   // distinct DNS names (power of two)
// IP reassembly, per block: datagrams in reassembly at once, their largest
// size (a DNSSEC answer or an EDNS(0) UDP payload of 16 KB fits), and how long
// the first fragment waits for the rest (Linux's ipfrag_time).
inline constexpr uint32_t k_max_frag_slots = 1024;
inline constexpr uint32_t k_frag_max_datagram = 16384 + 60;
inline constexpr uint64_t k_frag_timeout_ns = 30'000'000'000ull;
// TCP connections each block follows for HTTP and DNS-over-TCP framing
// (--tcp-streams, a power of two; more are counted per segment, in
// stream_table_full).
inline constexpr uint32_t k_max_stream_capacity = 1u << 20;

// Checks opt's values (a usage error names the option and returns 2, with
// the error in *result) and fills cfg with --ip, --mac (the default one
// derived from --ip), --reply-all and --http-server. Returns 0 when they hold.
[[nodiscard]] int check_options(const options& opt, app_config* cfg, nlohmann::json* result);

// Counted before it is taken (F19, R8): every ring slot is touched, and so
// are the TCP stream and reassembly tables, one of each per block, zeroed
// when a host executor allocates them; sizes that cannot be backed are
// refused (a usage error) rather than left to the OOM killer (or a failed
// allocation after gigabytes were zeroed). host_blocks: the blocks on a
// host executor, whose tables are in host memory. "" when they fit.
[[nodiscard]] std::string memory_refusal(const options& opt, const pp_plan& plan, uint64_t host_blocks);

}  // namespace gnio::pp
