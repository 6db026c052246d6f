// SPDX-License-Identifier: Apache-2.0
// The ring contract shared by backends (producers, on the CPU) and persistent
// kernels (consumers, on the GPU or the host executor). Plain, trivially
// copyable structs: a kernel receives them by value.
//
// RX: the backend writes packet bytes into a buffer of the queue's packet
// memory, then the completion entry, which names that buffer by its offset
// (buffers by reference: the buffer need not be the ring position's) and,
// when the queue asks for inline headers, carries a copy of the frame's
// first bytes right after its fields (rxq::inline_bytes), then
// stores the entry's owner word with RELEASE; the kernel loads the owner word,
// then an ACQUIRE fence, then reads the entry and the bytes. The owner word
// carries a phase bit that flips every lap, so an entry left over from the
// previous lap never looks new. The kernel publishes its consumer index with
// RELEASE: every buffer named by an entry below it goes back to the backend,
// which ACQUIRE-loads the index before reusing one, and drops-and-counts a
// packet (rx_missed) rather than overwrite a buffer or an entry the kernel
// has not released. The producer half is gnio/backend/ring.hpp.
//
// TX: the kernel reserves descriptors (private producer index), writes them,
// then stores the doorbell (producer index) with RELEASE; the backend
// ACQUIRE-loads the doorbell, transmits, and stores the completion index with
// RELEASE; the kernel ACQUIRE-loads it before reusing descriptors.
#pragma once

#include <cstdint>

#include <cuda/atomic>

#include "gnio/device/config.hpp"

// The layout of rx_cqe, rxq, tx_desc and txq, and the protocol on them. 4:
// a completion entry may be followed by a copy of the frame's first bytes
// (rxq::inline_bytes; entries are rxq::cqe_stride() bytes apart); 3: a TX
// descriptor may carry a not-before time (tx_desc_flag_not_before,
// txq::times); 2: completions name their buffer (rx_cqe::buf); 1 (gnio
// 0.1): slot = ring position. A producer and a consumer must agree on it.
#define GNIO_RING_ABI_VERSION 4

namespace gnio::device {

inline constexpr uint32_t ring_abi_version = GNIO_RING_ABI_VERSION;

// All cross-agent atomics are system scope: producer and consumer may be a
// CPU thread and a GPU thread.
template <class T>
using sys_atomic_ref = cuda::atomic_ref<T, cuda::thread_scope_system>;
// Atomics among the threads of one executor only (counters and tables in
// executor memory that the host reads after the kernel returned).
template <class T>
using dev_atomic_ref = cuda::atomic_ref<T, cuda::thread_scope_device>;

// Completion entry flags.
enum rx_flags : uint16_t {
  rx_flag_truncated = 1u << 0,  // the frame was longer than the slot or the capture's snaplen
  rx_flag_vlan = 1u << 1,       // steering saw at least one VLAN tag
};

// Steering class recorded by the software flow steering (one of them).
enum rx_class : uint16_t {
  rx_class_other = 0,
  rx_class_udp = 1,
  rx_class_tcp = 2,
  rx_class_tcp_ctrl = 3,  // SYN/FIN/RST
  rx_class_icmp = 4,
  rx_class_arp = 5,
};

struct alignas(32) rx_cqe {
  uint32_t len;       // bytes stored in the buffer
  uint32_t wire_len;  // length on the wire (>= len when truncated)
  uint64_t ts_ns;     // receive (or capture) timestamp, ns since the Unix epoch
  uint32_t buf;       // byte offset of the frame from rxq::pkts (so packet memory is at most 4 GiB)
  uint32_t rss_hash;  // 5-tuple hash used for queue selection
  uint16_t cls;       // rx_class
  uint16_t flags;     // rx_flags
  uint32_t owner;     // phase bit (bit 0); written last, with release
};
static_assert(sizeof(rx_cqe) == 32, "rx_cqe layout is part of the ABI");

// Inline headers: a queue may ask for the first inline_bytes bytes of every
// frame to be copied into its completion entry, right after the rx_cqe
// fields, so that a kernel doing header-only work reads the entry and the
// headers together and never the frame's buffer (one dependent read across
// PCIe fewer). A multiple of rx_inline_unit, at most rx_inline_max.
inline constexpr uint32_t rx_inline_unit = 32;
inline constexpr uint32_t rx_inline_max = 224;
GNIO_HOST_DEVICE constexpr bool rx_inline_valid(uint32_t bytes) noexcept {
  return bytes % rx_inline_unit == 0 && bytes <= rx_inline_max;
}
// Bytes from one completion entry to the next.
GNIO_HOST_DEVICE constexpr uint32_t rx_cqe_stride(uint32_t inline_bytes) noexcept {
  return static_cast<uint32_t>(sizeof(rx_cqe)) + inline_bytes;
}

// Expected owner value for ring position idx: 1 on the first lap, 0 on the
// second, ... A zero-filled ring therefore starts empty.
GNIO_HOST_DEVICE constexpr uint32_t rx_phase(uint64_t idx, uint32_t log2_descs) noexcept {
  return static_cast<uint32_t>(((idx >> log2_descs) & 1u) ^ 1u);
}

// The kernel's view of one RX queue. Addresses are valid on the executor that
// runs the kernel (device pointers for CUDA, host pointers for the host executor).
struct rxq {
  uint8_t* pkts;        // packet memory the completions' buf offsets refer into
  const rx_cqe* cq;     // num_descs completion entries, cqe_stride() bytes apart (host-visible memory)
  uint64_t* cons;       // consumer index published to the backend (host-visible)
  uint64_t* next;       // consumer's private read index (executor memory)
  const uint32_t* eos;  // backend sets 1 after publishing its last completion
  uint32_t num_descs;   // power of two
  uint32_t log2_descs;
  uint32_t stride;  // the largest frame a buffer holds; longer ones are cut and flagged
  uint32_t queue_id;
  // Bytes of each frame copied into its entry (0: none); rx_inline_valid.
  uint32_t inline_bytes;

  GNIO_HOST_DEVICE uint32_t cqe_stride() const noexcept { return rx_cqe_stride(inline_bytes); }
  GNIO_HOST_DEVICE uint8_t* pkt_addr(uint64_t idx) const noexcept { return pkts + cqe(idx).buf; }
  GNIO_HOST_DEVICE const rx_cqe& cqe(uint64_t idx) const noexcept {
    return *reinterpret_cast<const rx_cqe*>(reinterpret_cast<const uint8_t*>(cq) +
                                            (idx & (num_descs - 1u)) * static_cast<uint64_t>(cqe_stride()));
  }
  // The entry's copy of the frame's first min(len, inline_bytes) bytes.
  GNIO_HOST_DEVICE const uint8_t* inline_addr(uint64_t idx) const noexcept {
    return reinterpret_cast<const uint8_t*>(&cqe(idx)) + sizeof(rx_cqe);
  }
};

// tx_desc::flags: the frame must not leave before txq::times[its slot].
inline constexpr uint32_t tx_desc_flag_not_before = 1u;

struct alignas(16) tx_desc {
  uint64_t addr;  // executor address of the frame (a TX buffer or an RX slot)
  uint32_t len;
  uint32_t flags;  // 0, or tx_desc_flag_not_before
};

// The kernel's view of one TX queue.
struct txq {
  tx_desc* ring;         // num_descs descriptors (host-visible)
  uint8_t* bufs;         // num_descs * stride bytes of TX packet memory
  uint64_t* doorbell;    // producer index published to the backend (host-visible)
  const uint64_t* done;  // completion index written by the backend (host-visible)
  uint64_t* prod;        // kernel's private producer index, then the last done it loaded (2 words, executor memory)
  uint32_t num_descs;    // power of two
  uint32_t log2_descs;
  uint32_t stride;
  uint32_t queue_id;
  // num_descs not-before times, one per descriptor slot (host-visible), in
  // CLOCK_REALTIME nanoseconds; read only for descriptors flagged
  // tx_desc_flag_not_before (device::tx_prepare_at).
  uint64_t* times;

  GNIO_HOST_DEVICE uint8_t* buf_addr(uint64_t idx) const noexcept {
    return bufs + (idx & (num_descs - 1u)) * static_cast<uint64_t>(stride);
  }
};

// Semaphore item status, as in DOCA GPUNetIO.
enum class sem_status : uint32_t { free = 0, ready = 1, done = 2, hold = 3, error = 4, exit = 5 };

struct alignas(16) sem_item {
  uint32_t status;     // sem_status; written last by the kernel, with release
  uint32_t num_pkts;   // packet info: how many packets this item covers
  uint64_t first_pkt;  // packet info: ring index of the first one
};

// The kernel's view of a semaphore: a ring of items with custom bytes each,
// all in host-visible memory.
struct sem {
  sem_item* items;
  uint8_t* custom;  // num_items * custom_bytes
  uint32_t num_items;
  uint32_t custom_bytes;
};

}  // namespace gnio::device
