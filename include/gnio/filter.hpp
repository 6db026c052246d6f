// SPDX-License-Identifier: Apache-2.0
// Packet filters in tcpdump's syntax: compiled with libpcap to classic BPF,
// checked by gnio's own verifier, then run per frame by the kernels
// (gnio/device/bpf.hpp) and, where a backend can, attached to its socket so
// unwanted frames never reach the rings (af_packet; docs/pp.md, "Filters").
//
//   auto f = gnio::compile_filter("udp and dst port 53");
//   if (!f) return fail(f.err());   // invalid_value: "--filter 'udp and': syntax error"
//   gnio::device::bpf_prog p{kernel_copy_of(f->insns), uint32_t(f->insns.size())};
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <gnio/device/bpf.hpp>
#include <gnio/status.hpp>

namespace gnio {

struct packet_filter {
  std::string expr;                     // as given
  std::vector<device::bpf_insn> insns;  // verified (bpf_verify said ok)
};

// Compiles expr as tcpdump does for an Ethernet capture (libpcap's
// pcap_compile for DLT_EN10MB, snaplen 65535, optimized), then verifies it.
// An expression libpcap refuses is invalid_value with libpcap's message and
// the expression; a program the verifier refuses is invalid_value too.
[[nodiscard]] result<packet_filter> compile_filter(std::string_view expr);

// gnio's verifier on a program from elsewhere, with a message naming the
// instruction and the rule it breaks ("instruction 3 of 5: jump leaves the
// program"). what names the program in the message.
[[nodiscard]] error verify_filter(std::span<const device::bpf_insn> insns, std::string_view what);

// "jump leaves the program (or goes backwards)", ...
[[nodiscard]] std::string_view to_string(device::bpf_verdict v) noexcept;

// The program as text that tcpdump -ddd prints ("N" then one "code jt jf k"
// line per instruction), for messages and for backends given it as text.
[[nodiscard]] std::string filter_text(std::span<const device::bpf_insn> insns);

}  // namespace gnio
