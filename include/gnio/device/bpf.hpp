// SPDX-License-Identifier: Apache-2.0
// Classic BPF (the filters tcpdump and libpcap compile, Linux's
// SO_ATTACH_FILTER) on the device: a verifier the host runs once at load and
// an interpreter the kernels run per frame. Written from the instruction
// set's documented meaning (bpf(4), Linux Documentation/networking/filter.rst):
//
//   A, X      32-bit accumulator and index register, 0 at the start
//   M[0..15]  32-bit scratch words, 0 at the start
//   ld/ldx    A (X) <- an immediate, M[k], the frame's length, or a big-endian
//             word, half or byte of the frame at k (ld only: also at X + k);
//             ldx 4*([k]&0xf) loads an IPv4 header length into X
//   st/stx    M[k] <- A (X)
//   alu       A <- A op k|X: + - * / | & << >> % ^, and neg
//   jmp       ja k (pc += k), and jeq/jgt/jge/jset k|X with a true and a
//             false offset; every offset is forward, from the next instruction
//   ret       ends with k or A: the bytes to keep, 0 drops the frame
//   misc      tax (X <- A), txa (A <- X)
//
// A load past the captured bytes ends the program with 0 (no match), as
// Linux and libpcap do; so does a division by a zero X. The length a program
// sees (ld #len) is the frame's length on the wire, as libpcap gives it.
//
//   gnio::device::bpf_prog f{insns, n};      // insns verified by bpf_verify
//   if (!bpf_match(f, pkt, len, wire_len)) ++filtered;
//
// The verifier makes the interpreter's loop bounded: jumps only go forward
// and stay inside the program, every path ends in a ret, scratch indices are
// below 16, and only the opcodes below appear (no Linux ancillary loads).
#pragma once

#include "gnio/device/config.hpp"
#include "gnio/device/pkt/load.hpp"

namespace gnio::device {

// One instruction, laid out as Linux's struct sock_filter and libpcap's
// struct bpf_insn, so compiled programs are copied over as they are.
struct bpf_insn {
  uint16_t code;
  uint8_t jt;  // offset from the next instruction when the condition holds
  uint8_t jf;  // ... when it does not
  uint32_t k;
};
static_assert(sizeof(bpf_insn) == 8, "bpf_insn must match struct sock_filter");

// The most instructions a program may have (Linux's BPF_MAXINSNS).
inline constexpr uint32_t bpf_max_insns = 4096;
inline constexpr uint32_t bpf_scratch_words = 16;

// Opcode fields.
enum : uint16_t {
  bpf_ld = 0x00,
  bpf_ldx = 0x01,
  bpf_st = 0x02,
  bpf_stx = 0x03,
  bpf_alu = 0x04,
  bpf_jmp = 0x05,
  bpf_ret = 0x06,
  bpf_misc = 0x07,
  // sizes (ld, ldx)
  bpf_w = 0x00,
  bpf_h = 0x08,
  bpf_b = 0x10,
  // modes (ld, ldx)
  bpf_imm = 0x00,
  bpf_abs = 0x20,
  bpf_ind = 0x40,
  bpf_mem = 0x60,
  bpf_len = 0x80,
  bpf_msh = 0xa0,
  // alu operations
  bpf_add = 0x00,
  bpf_sub = 0x10,
  bpf_mul = 0x20,
  bpf_div = 0x30,
  bpf_or = 0x40,
  bpf_and = 0x50,
  bpf_lsh = 0x60,
  bpf_rsh = 0x70,
  bpf_neg = 0x80,
  bpf_mod = 0x90,
  bpf_xor = 0xa0,
  // jumps
  bpf_ja = 0x00,
  bpf_jeq = 0x10,
  bpf_jgt = 0x20,
  bpf_jge = 0x30,
  bpf_jset = 0x40,
  // operand source (alu, jmp) and ret value
  bpf_k = 0x00,
  bpf_x = 0x08,
  bpf_a = 0x10,
  // misc
  bpf_tax = 0x00,
  bpf_txa = 0x80,
};

GNIO_HOST_DEVICE constexpr bpf_insn bpf_stmt(uint16_t code, uint32_t k) { return bpf_insn{code, 0, 0, k}; }
GNIO_HOST_DEVICE constexpr bpf_insn bpf_jump(uint16_t code, uint32_t k, uint8_t jt, uint8_t jf) {
  return bpf_insn{code, jt, jf, k};
}

// A verified program in memory the kernel reads (executor memory, or any
// memory the host executor reaches). No instructions: every frame matches.
struct bpf_prog {
  const bpf_insn* insns;
  uint32_t num_insns;
};

// Why bpf_verify refused a program (ok: it did not).
enum class bpf_verdict : uint32_t {
  ok = 0,
  empty,              // no instructions
  too_long,           // more than bpf_max_insns
  unknown_opcode,     // not one of the opcodes this interpreter runs
  jump_out_of_range,  // a jump that leaves the program (or wraps back)
  no_ret_at_end,      // the last instruction is not a ret: a path runs off the end
  bad_scratch_index,  // M[k] with k >= 16
  bad_shift,          // a constant shift by 32 or more
  divide_by_zero,     // a division or modulo by the constant 0
};

// True for the opcodes the interpreter runs.
GNIO_HOST_DEVICE constexpr bool bpf_known_opcode(uint16_t code) {
  switch (code) {
    case bpf_ld | bpf_w | bpf_imm:
    case bpf_ld | bpf_w | bpf_abs:
    case bpf_ld | bpf_h | bpf_abs:
    case bpf_ld | bpf_b | bpf_abs:
    case bpf_ld | bpf_w | bpf_ind:
    case bpf_ld | bpf_h | bpf_ind:
    case bpf_ld | bpf_b | bpf_ind:
    case bpf_ld | bpf_w | bpf_mem:
    case bpf_ld | bpf_w | bpf_len:
    case bpf_ldx | bpf_w | bpf_imm:
    case bpf_ldx | bpf_w | bpf_mem:
    case bpf_ldx | bpf_w | bpf_len:
    case bpf_ldx | bpf_b | bpf_msh:
    case bpf_st:
    case bpf_stx:
    case bpf_alu | bpf_neg:
    case bpf_jmp | bpf_ja:
    case bpf_ret | bpf_k:
    case bpf_ret | bpf_a:
    case bpf_misc | bpf_tax:
    case bpf_misc | bpf_txa: return true;
    default: break;
  }
  if ((code & 0x07) == bpf_alu && (code & ~0xf8u) == bpf_alu) {
    switch (code & 0xf0) {
      case bpf_add:
      case bpf_sub:
      case bpf_mul:
      case bpf_div:
      case bpf_or:
      case bpf_and:
      case bpf_lsh:
      case bpf_rsh:
      case bpf_mod:
      case bpf_xor: return true;
      default: return false;
    }
  }
  if ((code & 0x07) == bpf_jmp && (code & ~0xf8u) == bpf_jmp) {
    switch (code & 0xf0) {
      case bpf_jeq:
      case bpf_jgt:
      case bpf_jge:
      case bpf_jset: return true;
      default: return false;
    }
  }
  return false;
}

// Checks a program once, before any frame meets it. *bad_pc (optional) gets
// the index of the instruction refused (num_insns for a program too long or
// empty).
GNIO_HOST_DEVICE constexpr bpf_verdict bpf_verify(const bpf_insn* insns, uint32_t num_insns,
                                                  uint32_t* bad_pc = nullptr) {
  if (bad_pc) *bad_pc = num_insns;
  if (num_insns == 0) return bpf_verdict::empty;
  if (num_insns > bpf_max_insns) return bpf_verdict::too_long;
  for (uint32_t pc = 0; pc < num_insns; ++pc) {
    const bpf_insn& in = insns[pc];
    if (bad_pc) *bad_pc = pc;
    if (!bpf_known_opcode(in.code)) return bpf_verdict::unknown_opcode;
    const uint16_t cls = in.code & 0x07;
    // Offsets are counted from the next instruction, in 64 bits so that no
    // k wraps a jump back to an earlier instruction.
    const uint64_t next = uint64_t{pc} + 1;
    if (cls == bpf_jmp) {
      if ((in.code & 0xf0) == bpf_ja) {
        if (next + in.k >= num_insns) return bpf_verdict::jump_out_of_range;
      } else if (next + in.jt >= num_insns || next + in.jf >= num_insns) {
        return bpf_verdict::jump_out_of_range;
      }
    }
    const uint16_t mode = in.code & 0xe0;
    if (((cls == bpf_ld || cls == bpf_ldx) && mode == bpf_mem) || cls == bpf_st || cls == bpf_stx)
      if (in.k >= bpf_scratch_words) return bpf_verdict::bad_scratch_index;
    if (cls == bpf_alu && (in.code & 0x08) == bpf_k) {
      const uint16_t op = in.code & 0xf0;
      if ((op == bpf_lsh || op == bpf_rsh) && in.k >= 32) return bpf_verdict::bad_shift;
      if ((op == bpf_div || op == bpf_mod) && in.k == 0) return bpf_verdict::divide_by_zero;
    }
  }
  // Every instruction but a ret or a jump continues with the next one, and
  // every jump lands inside the program: a ret last closes every path.
  if ((insns[num_insns - 1].code & 0x07) != bpf_ret) {
    if (bad_pc) *bad_pc = num_insns - 1;
    return bpf_verdict::no_ret_at_end;
  }
  if (bad_pc) *bad_pc = 0;
  return bpf_verdict::ok;
}

// Runs a verified program over one frame (len captured bytes at pkt,
// wire_len bytes on the wire). Returns the program's ret value: 0 means no
// match. A program that failed verification must never come here; the
// interpreter still refuses to leave it (pc past the end returns 0).
GNIO_HOST_DEVICE inline uint32_t bpf_run(const bpf_insn* insns, uint32_t num_insns, const frame_ref& pkt,
                                         uint32_t wire_len) {
  const uint32_t len = pkt.len;
  uint32_t a = 0, x = 0;
  uint32_t m[bpf_scratch_words] = {};
  uint64_t pc = 0;  // 64 bits: no jump of an unverified program wraps back
  while (pc < num_insns) {
    const bpf_insn in = insns[pc++];
    const uint16_t cls = in.code & 0x07;
    switch (cls) {
      case bpf_ld:
      case bpf_ldx: {
        const uint16_t mode = in.code & 0xe0;
        uint32_t v = 0;
        if (mode == bpf_imm) {
          v = in.k;
        } else if (mode == bpf_mem) {
          v = m[in.k & (bpf_scratch_words - 1)];
        } else if (mode == bpf_len) {
          v = wire_len;
        } else if (mode == bpf_msh) {
          if (in.k >= len) return 0;
          v = 4u * (pkt.at(in.k) & 0x0fu);
        } else {
          // abs or ind: a big-endian load, bounds checked in 64 bits.
          const uint64_t off = uint64_t{in.k} + (mode == bpf_ind ? x : 0u);
          const uint16_t size = in.code & 0x18;
          const uint32_t n = size == bpf_w ? 4u : size == bpf_h ? 2u : 1u;
          if (off + n > len) return 0;
          v = 0;
          for (uint32_t i = 0; i < n; ++i) v = (v << 8) | pkt.at(static_cast<uint32_t>(off) + i);
        }
        if (cls == bpf_ld) a = v;
        else x = v;
        break;
      }
      case bpf_st: m[in.k & (bpf_scratch_words - 1)] = a; break;
      case bpf_stx: m[in.k & (bpf_scratch_words - 1)] = x; break;
      case bpf_alu: {
        const uint32_t v = (in.code & 0x08) == bpf_x ? x : in.k;
        switch (in.code & 0xf0) {
          case bpf_add: a += v; break;
          case bpf_sub: a -= v; break;
          case bpf_mul: a *= v; break;
          case bpf_div:
            if (v == 0) return 0;
            a /= v;
            break;
          case bpf_mod:
            if (v == 0) return 0;
            a %= v;
            break;
          case bpf_or: a |= v; break;
          case bpf_and: a &= v; break;
          case bpf_xor: a ^= v; break;
          // A shift by 32 or more (only X can ask for one after
          // verification) leaves no bits, rather than C's undefined result.
          case bpf_lsh: a = v < 32 ? a << v : 0u; break;
          case bpf_rsh: a = v < 32 ? a >> v : 0u; break;
          case bpf_neg: a = 0u - a; break;
          default: return 0;
        }
        break;
      }
      case bpf_jmp: {
        const uint16_t op = in.code & 0xf0;
        if (op == bpf_ja) {
          pc += in.k;
          break;
        }
        const uint32_t v = (in.code & 0x08) == bpf_x ? x : in.k;
        bool take = false;
        if (op == bpf_jeq) take = a == v;
        else if (op == bpf_jgt) take = a > v;
        else if (op == bpf_jge) take = a >= v;
        else if (op == bpf_jset) take = (a & v) != 0;
        else return 0;
        pc += take ? in.jt : in.jf;
        break;
      }
      case bpf_ret: return (in.code & 0x18) == bpf_a ? a : in.k;
      case bpf_misc:
        if ((in.code & 0xf8) == bpf_txa) a = x;
        else x = a;
        break;
      default: return 0;
    }
  }
  return 0;
}

// True when the frame passes the filter (a program with no instructions
// passes every frame).
GNIO_HOST_DEVICE inline bool bpf_match(const bpf_prog& f, const frame_ref& pkt, uint32_t wire_len) {
  if (f.num_insns == 0) return true;
  return bpf_run(f.insns, f.num_insns, pkt, wire_len) != 0;
}
GNIO_HOST_DEVICE inline bool bpf_match(const bpf_prog& f, const uint8_t* pkt, uint32_t len, uint32_t wire_len) {
  return bpf_match(f, whole_frame(pkt, len), wire_len);
}

}  // namespace gnio::device
