// SPDX-License-Identifier: Apache-2.0
// The classic-BPF verifier and interpreter (gnio/device/bpf.hpp) on
// hand-built programs and frames, and gnio::compile_filter on libpcap's
// output for frames whose answer is known.
#include <gnio/device/bpf.hpp>
#include <gnio/filter.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace {

namespace gd = gnio::device;
using bytes = std::vector<uint8_t>;
using prog = std::vector<gd::bpf_insn>;

static_assert(std::is_trivially_copyable_v<gd::bpf_insn>);
static_assert(std::is_trivially_copyable_v<gd::bpf_prog>);

gd::bpf_verdict verify(const prog& p, uint32_t* pc = nullptr) {
  return gd::bpf_verify(p.data(), static_cast<uint32_t>(p.size()), pc);
}
uint32_t run(const prog& p, const bytes& f, uint32_t wire = 0) {
  EXPECT_EQ(verify(p), gd::bpf_verdict::ok);
  return gd::bpf_run(p.data(), static_cast<uint32_t>(p.size()),
                     gd::whole_frame(f.data(), static_cast<uint32_t>(f.size())),
                     wire ? wire : static_cast<uint32_t>(f.size()));
}

// Ethernet + IPv4 (IHL 5 or 6) + UDP or TCP, ports given.
bytes frame(uint8_t proto, uint16_t sport, uint16_t dport, uint8_t ihl = 5, uint8_t tcp_flags = 0) {
  bytes f(14, 0);
  f[12] = 0x08;
  f[13] = 0x00;
  bytes ip(ihl * 4u, 0);
  ip[0] = static_cast<uint8_t>(0x40 | ihl);
  ip[8] = 64;
  ip[9] = proto;
  ip[12] = 10;
  ip[15] = 1;
  ip[16] = 192;
  ip[17] = 168;
  ip[19] = 2;
  bytes l4(proto == 6 ? 20 : 8, 0);
  l4[0] = static_cast<uint8_t>(sport >> 8);
  l4[1] = static_cast<uint8_t>(sport);
  l4[2] = static_cast<uint8_t>(dport >> 8);
  l4[3] = static_cast<uint8_t>(dport);
  if (proto == 6) {
    l4[12] = 0x50;
    l4[13] = tcp_flags;
  }
  const auto total = static_cast<uint16_t>(ip.size() + l4.size());
  ip[2] = static_cast<uint8_t>(total >> 8);
  ip[3] = static_cast<uint8_t>(total);
  f.insert(f.end(), ip.begin(), ip.end());
  f.insert(f.end(), l4.begin(), l4.end());
  return f;
}

// --- verifier -------------------------------------------------------------

TEST(BpfVerify, AcceptsAMinimalProgram) {
  EXPECT_EQ(verify({gd::bpf_stmt(gd::bpf_ret | gd::bpf_k, 1)}), gd::bpf_verdict::ok);
}

TEST(BpfVerify, RefusesAnEmptyProgramAndOneTooLong) {
  EXPECT_EQ(verify({}), gd::bpf_verdict::empty);
  prog p(gd::bpf_max_insns + 1, gd::bpf_stmt(gd::bpf_ret | gd::bpf_k, 0));
  EXPECT_EQ(verify(p), gd::bpf_verdict::too_long);
  p.pop_back();
  EXPECT_EQ(verify(p), gd::bpf_verdict::ok);
}

TEST(BpfVerify, RefusesBackwardAndOutOfRangeJumps) {
  // ja with a k that wraps a 32-bit pc back to instruction 0.
  uint32_t pc = 99;
  EXPECT_EQ(verify({gd::bpf_stmt(gd::bpf_ld | gd::bpf_w | gd::bpf_imm, 1),
                    gd::bpf_stmt(gd::bpf_jmp | gd::bpf_ja, 0xfffffffeu), gd::bpf_stmt(gd::bpf_ret | gd::bpf_k, 0)},
                   &pc),
            gd::bpf_verdict::jump_out_of_range);
  EXPECT_EQ(pc, 1u);
  // A conditional jump past the end.
  EXPECT_EQ(
      verify({gd::bpf_jump(gd::bpf_jmp | gd::bpf_jeq | gd::bpf_k, 0, 5, 0), gd::bpf_stmt(gd::bpf_ret | gd::bpf_k, 0)}),
      gd::bpf_verdict::jump_out_of_range);
  // ja onto the last instruction is fine, one further is not.
  EXPECT_EQ(verify({gd::bpf_stmt(gd::bpf_jmp | gd::bpf_ja, 1), gd::bpf_stmt(gd::bpf_ret | gd::bpf_k, 0),
                    gd::bpf_stmt(gd::bpf_ret | gd::bpf_k, 1)}),
            gd::bpf_verdict::ok);
  EXPECT_EQ(verify({gd::bpf_stmt(gd::bpf_jmp | gd::bpf_ja, 2), gd::bpf_stmt(gd::bpf_ret | gd::bpf_k, 0),
                    gd::bpf_stmt(gd::bpf_ret | gd::bpf_k, 1)}),
            gd::bpf_verdict::jump_out_of_range);
}

TEST(BpfVerify, RefusesAPathWithoutRet) {
  uint32_t pc = 0;
  EXPECT_EQ(
      verify({gd::bpf_stmt(gd::bpf_ld | gd::bpf_w | gd::bpf_imm, 1), gd::bpf_stmt(gd::bpf_misc | gd::bpf_tax, 0)}, &pc),
      gd::bpf_verdict::no_ret_at_end);
  EXPECT_EQ(pc, 1u);
  // A jump last: its targets lie past the end.
  EXPECT_EQ(verify({gd::bpf_stmt(gd::bpf_ret | gd::bpf_k, 0), gd::bpf_jump(gd::bpf_jmp | gd::bpf_jeq, 0, 0, 0)}),
            gd::bpf_verdict::jump_out_of_range);
}

TEST(BpfVerify, RefusesScratchIndicesOf16OrMore) {
  for (uint16_t code : {uint16_t(gd::bpf_ld | gd::bpf_mem), uint16_t(gd::bpf_ldx | gd::bpf_mem), uint16_t(gd::bpf_st),
                        uint16_t(gd::bpf_stx)}) {
    EXPECT_EQ(verify({gd::bpf_stmt(code, 15), gd::bpf_stmt(gd::bpf_ret | gd::bpf_k, 0)}), gd::bpf_verdict::ok) << code;
    EXPECT_EQ(verify({gd::bpf_stmt(code, 16), gd::bpf_stmt(gd::bpf_ret | gd::bpf_k, 0)}),
              gd::bpf_verdict::bad_scratch_index)
        << code;
  }
}

TEST(BpfVerify, RefusesUnknownOpcodesConstantShiftsAndDivisionByZero) {
  const auto ret = gd::bpf_stmt(gd::bpf_ret | gd::bpf_k, 0);
  // Linux's ancillary loads are negative offsets, not opcodes; these are not opcodes at all.
  for (uint16_t code : {uint16_t(0x0e), uint16_t(0x18), uint16_t(0xc4), uint16_t(0x55 | 0x100), uint16_t(0x8c),
                        uint16_t(0x61 | 0x08), uint16_t(0xff)})
    EXPECT_EQ(verify({gd::bpf_stmt(code, 0), ret}), gd::bpf_verdict::unknown_opcode) << code;
  EXPECT_EQ(verify({gd::bpf_stmt(gd::bpf_alu | gd::bpf_lsh | gd::bpf_k, 32), ret}), gd::bpf_verdict::bad_shift);
  EXPECT_EQ(verify({gd::bpf_stmt(gd::bpf_alu | gd::bpf_div | gd::bpf_k, 0), ret}), gd::bpf_verdict::divide_by_zero);
  EXPECT_EQ(verify({gd::bpf_stmt(gd::bpf_alu | gd::bpf_mod | gd::bpf_k, 0), ret}), gd::bpf_verdict::divide_by_zero);
}

TEST(BpfVerify, MessagesNameTheInstructionAndTheRule) {
  const prog p = {gd::bpf_stmt(gd::bpf_st, 16), gd::bpf_stmt(gd::bpf_ret | gd::bpf_k, 0)};
  const gnio::error e = gnio::verify_filter(p, "filter 'x'");
  EXPECT_EQ(e.code(), gnio::status::invalid_value);
  EXPECT_NE(e.message().find("filter 'x'"), std::string::npos) << e.message();
  EXPECT_NE(e.message().find("instruction 0 of 2"), std::string::npos) << e.message();
  EXPECT_NE(e.message().find("scratch"), std::string::npos) << e.message();
}

// --- interpreter ----------------------------------------------------------

TEST(BpfRun, LoadsAreBigEndianAndOutOfBoundsLoadsReturnZero) {
  const bytes f = {0x12, 0x34, 0x56, 0x78, 0x9a};
  const prog word = {gd::bpf_stmt(gd::bpf_ld | gd::bpf_w | gd::bpf_abs, 1), gd::bpf_stmt(gd::bpf_ret | gd::bpf_a, 0)};
  EXPECT_EQ(run(word, f), 0x3456789au);
  const prog half = {gd::bpf_stmt(gd::bpf_ld | gd::bpf_h | gd::bpf_abs, 3), gd::bpf_stmt(gd::bpf_ret | gd::bpf_a, 0)};
  EXPECT_EQ(run(half, f), 0x789au);
  // One byte short: no match, whatever the program would have returned.
  const prog past = {gd::bpf_stmt(gd::bpf_ld | gd::bpf_w | gd::bpf_abs, 2), gd::bpf_stmt(gd::bpf_ret | gd::bpf_k, 7)};
  EXPECT_EQ(run(past, f), 0u);
  // Indirect: X + k, bounds in 64 bits (no wrap with a huge k).
  const prog ind = {gd::bpf_stmt(gd::bpf_ldx | gd::bpf_w | gd::bpf_imm, 2),
                    gd::bpf_stmt(gd::bpf_ld | gd::bpf_b | gd::bpf_ind, 2), gd::bpf_stmt(gd::bpf_ret | gd::bpf_a, 0)};
  EXPECT_EQ(run(ind, f), 0x9au);
  const prog wrap = {gd::bpf_stmt(gd::bpf_ldx | gd::bpf_w | gd::bpf_imm, 2),
                     gd::bpf_stmt(gd::bpf_ld | gd::bpf_b | gd::bpf_ind, 0xffffffffu),
                     gd::bpf_stmt(gd::bpf_ret | gd::bpf_k, 1)};
  EXPECT_EQ(run(wrap, f), 0u);
  // msh: 4 * (low nibble).
  const prog msh = {gd::bpf_stmt(gd::bpf_ldx | gd::bpf_b | gd::bpf_msh, 4), gd::bpf_stmt(gd::bpf_misc | gd::bpf_txa, 0),
                    gd::bpf_stmt(gd::bpf_ret | gd::bpf_a, 0)};
  EXPECT_EQ(run(msh, f), 40u);
}

TEST(BpfRun, LenIsTheWireLength) {
  const prog p = {gd::bpf_stmt(gd::bpf_ld | gd::bpf_w | gd::bpf_len, 0), gd::bpf_stmt(gd::bpf_ret | gd::bpf_a, 0)};
  EXPECT_EQ(run(p, bytes(60, 0), 1514), 1514u);
}

TEST(BpfRun, AluScratchAndRegisters) {
  const prog p = {gd::bpf_stmt(gd::bpf_ld | gd::bpf_imm, 10),
                  gd::bpf_stmt(gd::bpf_st, 3),
                  gd::bpf_stmt(gd::bpf_alu | gd::bpf_mul | gd::bpf_k, 7),   // 70
                  gd::bpf_stmt(gd::bpf_misc | gd::bpf_tax, 0),              // X = 70
                  gd::bpf_stmt(gd::bpf_ld | gd::bpf_mem, 3),                // A = 10
                  gd::bpf_stmt(gd::bpf_alu | gd::bpf_add | gd::bpf_x, 0),   // 80
                  gd::bpf_stmt(gd::bpf_alu | gd::bpf_mod | gd::bpf_k, 30),  // 20
                  gd::bpf_stmt(gd::bpf_alu | gd::bpf_lsh | gd::bpf_k, 2),   // 80
                  gd::bpf_stmt(gd::bpf_alu | gd::bpf_xor | gd::bpf_k, 1),   // 81
                  gd::bpf_stmt(gd::bpf_ret | gd::bpf_a, 0)};
  EXPECT_EQ(run(p, bytes(1, 0)), 81u);
  // Division by a zero X ends with 0; a shift by X >= 32 leaves nothing.
  const prog div = {gd::bpf_stmt(gd::bpf_ld | gd::bpf_imm, 10), gd::bpf_stmt(gd::bpf_alu | gd::bpf_div | gd::bpf_x, 0),
                    gd::bpf_stmt(gd::bpf_ret | gd::bpf_k, 5)};
  EXPECT_EQ(run(div, bytes(1, 0)), 0u);
  const prog shl = {gd::bpf_stmt(gd::bpf_ldx | gd::bpf_imm, 40), gd::bpf_stmt(gd::bpf_ld | gd::bpf_imm, 1),
                    gd::bpf_stmt(gd::bpf_alu | gd::bpf_lsh | gd::bpf_x, 0), gd::bpf_stmt(gd::bpf_ret | gd::bpf_a, 0)};
  EXPECT_EQ(run(shl, bytes(1, 0)), 0u);
  const prog neg = {gd::bpf_stmt(gd::bpf_ld | gd::bpf_imm, 1), gd::bpf_stmt(gd::bpf_alu | gd::bpf_neg, 0),
                    gd::bpf_stmt(gd::bpf_ret | gd::bpf_a, 0)};
  EXPECT_EQ(run(neg, bytes(1, 0)), 0xffffffffu);
}

TEST(BpfRun, ConditionalJumps) {
  // ret 1 when byte 0 satisfies the condition against k (or X = k), else 0.
  auto cond = [](uint16_t op, uint32_t k, uint8_t b, bool via_x) {
    const prog p = {gd::bpf_stmt(gd::bpf_ldx | gd::bpf_imm, k), gd::bpf_stmt(gd::bpf_ld | gd::bpf_b | gd::bpf_abs, 0),
                    gd::bpf_jump(static_cast<uint16_t>(gd::bpf_jmp | op | (via_x ? gd::bpf_x : gd::bpf_k)), k, 0, 1),
                    gd::bpf_stmt(gd::bpf_ret | gd::bpf_k, 1), gd::bpf_stmt(gd::bpf_ret | gd::bpf_k, 0)};
    return run(p, bytes{b});
  };
  for (bool x : {false, true}) {
    EXPECT_EQ(cond(gd::bpf_jeq, 5, 5, x), 1u);
    EXPECT_EQ(cond(gd::bpf_jeq, 5, 6, x), 0u);
    EXPECT_EQ(cond(gd::bpf_jgt, 5, 6, x), 1u);
    EXPECT_EQ(cond(gd::bpf_jgt, 5, 5, x), 0u);
    EXPECT_EQ(cond(gd::bpf_jge, 5, 5, x), 1u);
    EXPECT_EQ(cond(gd::bpf_jge, 5, 4, x), 0u);
    EXPECT_EQ(cond(gd::bpf_jset, 0x12, 0x02, x), 1u);
    EXPECT_EQ(cond(gd::bpf_jset, 0x12, 0x01, x), 0u);
  }
}

TEST(BpfRun, AnEmptyProgMatchesEverything) {
  const gd::bpf_prog none{nullptr, 0};
  const uint8_t b = 0;
  EXPECT_TRUE(gd::bpf_match(none, &b, 0, 0));
}

// --- libpcap's programs through the interpreter -----------------------------

bool matches(const std::string& expr, const bytes& f) {
  auto c = gnio::compile_filter(expr);
  EXPECT_TRUE(c.ok()) << c.err().what();
  if (!c) return false;
  const gd::bpf_prog p{c->insns.data(), static_cast<uint32_t>(c->insns.size())};
  return gd::bpf_match(p, f.data(), static_cast<uint32_t>(f.size()), static_cast<uint32_t>(f.size()));
}

TEST(CompileFilter, LibpcapProgramsOnHandBuiltFrames) {
  const bytes dns = frame(17, 40000, 53);
  const bytes web = frame(6, 40000, 80, 5, 0x02);
  const bytes web_opts = frame(6, 40000, 80, 6, 0x10);  // an IPv4 option: the TCP header moves by 4
  EXPECT_TRUE(matches("udp", dns));
  EXPECT_FALSE(matches("udp", web));
  EXPECT_TRUE(matches("udp and dst port 53", dns));
  EXPECT_FALSE(matches("udp and src port 53", dns));
  EXPECT_TRUE(matches("tcp port 80", web));
  EXPECT_TRUE(matches("tcp port 80", web_opts));
  EXPECT_TRUE(matches("tcp[tcpflags] & tcp-syn != 0", web));
  EXPECT_FALSE(matches("tcp[tcpflags] & tcp-syn != 0", web_opts));
  EXPECT_TRUE(matches("net 10.0.0.0/8", dns));
  EXPECT_FALSE(matches("net 172.16.0.0/12", dns));
  EXPECT_FALSE(matches("ip6", dns));
  EXPECT_FALSE(matches("icmp or arp", dns));
  EXPECT_TRUE(matches("greater 40", dns));
  // Cut short before the ports: no match, as libpcap's own filter says.
  bytes cut = dns;
  cut.resize(14 + 20 + 1);
  EXPECT_FALSE(matches("udp and dst port 53", cut));
}

TEST(CompileFilter, ABadExpressionNamesItselfAndLibpcapsMessage) {
  auto c = gnio::compile_filter("udp and and");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.code(), gnio::status::invalid_value);
  EXPECT_NE(c.err().message().find("'udp and and'"), std::string::npos) << c.err().message();
  EXPECT_NE(c.err().message().find("syntax error"), std::string::npos) << c.err().message();
  EXPECT_FALSE(gnio::compile_filter("port 99999").ok());
}

}  // namespace
