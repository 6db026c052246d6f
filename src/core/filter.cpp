// SPDX-License-Identifier: Apache-2.0
#include "gnio/filter.hpp"

#include <mutex>

#include <fmt/format.h>
#include <pcap/pcap.h>

namespace gnio {

std::string_view to_string(device::bpf_verdict v) noexcept {
  using device::bpf_verdict;
  switch (v) {
    case bpf_verdict::ok: return "ok";
    case bpf_verdict::empty: return "the program has no instructions";
    case bpf_verdict::too_long: return "the program is longer than 4096 instructions";
    case bpf_verdict::unknown_opcode: return "unknown opcode";
    case bpf_verdict::jump_out_of_range: return "jump leaves the program (or goes backwards)";
    case bpf_verdict::no_ret_at_end: return "the last instruction is not a ret (a path runs off the end)";
    case bpf_verdict::bad_scratch_index: return "scratch memory index is 16 or more";
    case bpf_verdict::bad_shift: return "shift by 32 or more";
    case bpf_verdict::divide_by_zero: return "division by the constant 0";
  }
  return "unknown verdict";
}

error verify_filter(std::span<const device::bpf_insn> insns, std::string_view what) {
  if (insns.size() > device::bpf_max_insns)
    return error(status::invalid_value,
                 fmt::format("{}: {} instructions; at most {} are allowed", what, insns.size(), device::bpf_max_insns));
  uint32_t pc = 0;
  const auto n = static_cast<uint32_t>(insns.size());
  const device::bpf_verdict v = device::bpf_verify(insns.data(), n, &pc);
  if (v == device::bpf_verdict::ok) return {};
  if (pc >= n)
    return error(status::invalid_value, fmt::format("{}: refused by the BPF verifier: {}", what, to_string(v)));
  const device::bpf_insn& in = insns[pc];
  return error(status::invalid_value,
               fmt::format("{}: refused by the BPF verifier: instruction {} of {} (code 0x{:04x} jt {} jf {} k {}): {}",
                           what, pc, n, in.code, in.jt, in.jf, in.k, to_string(v)));
}

result<packet_filter> compile_filter(std::string_view expr) {
  const std::string what = fmt::format("filter '{}'", expr);
  packet_filter f;
  f.expr = std::string(expr);
  pcap_t* p = pcap_open_dead(DLT_EN10MB, 65535);
  if (!p) return error(status::no_memory, fmt::format("{}: libpcap could not open a dead handle", what));
  bpf_program prog{};
  int rc = 0;
  {
    // pcap_compile is thread-safe since libpcap 1.8, but older ones share a
    // parser: one compile at a time costs nothing here.
    static std::mutex mu;
    std::lock_guard lk(mu);
    rc = pcap_compile(p, &prog, f.expr.c_str(), 1, PCAP_NETMASK_UNKNOWN);
  }
  if (rc != 0) {
    error e(status::invalid_value,
            fmt::format("{}: libpcap: {} (tcpdump syntax, see pcap-filter(7))", what, pcap_geterr(p)));
    pcap_close(p);
    return e;
  }
  f.insns.resize(prog.bf_len);
  for (u_int i = 0; i < prog.bf_len; ++i) {
    const bpf_insn& in = prog.bf_insns[i];
    f.insns[i] = device::bpf_insn{in.code, in.jt, in.jf, in.k};
  }
  pcap_freecode(&prog);
  pcap_close(p);
  if (error e = verify_filter(f.insns, what); e) return e;
  return f;
}

std::string filter_text(std::span<const device::bpf_insn> insns) {
  std::string s = fmt::format("{}\n", insns.size());
  for (const auto& in : insns) s += fmt::format("{} {} {} {}\n", in.code, in.jt, in.jf, in.k);
  return s;
}

}  // namespace gnio
