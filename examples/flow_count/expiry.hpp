// SPDX-License-Identifier: Apache-2.0
// flow_count's host-side flow table. The kernels count into one of two
// device tables at a time; the host gives the other back (flow_count.hpp's
// epoch protocol) and adds what it held here, by flow key. Here flows end:
// a TCP flow that sent FIN or RST and then nothing for a harvest, or any flow
// idle for the idle timeout, leaves with its IPFIX final record, as
// softflowd's expiry does; the device tables stay small however many flows a
// run sees.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <unordered_map>
#include <vector>

#include <gnio/device/flow_table.hpp>

#include "ipfix.hpp"

namespace flow_count {

// Why a flow left the host table before the end of the run (flow_row::end).
enum class flow_end : uint8_t { live = 0, end_of_flow = 1, idle_timeout = 2 };
[[nodiscard]] const char* to_string(flow_end e) noexcept;

// A flow as the JSON lists it: key, meta (TCP flags ORed, the VLAN its first
// packet carried) and counters, with the harvests that first and last saw it
// grow.
struct flow_row {
  gnio::device::flow_entry e{};
  uint64_t first_ms = 0, last_ms = 0;
  flow_end end = flow_end::live;
  bool streamed = false;  // its --jsonl flow line is written (flow_count's report)
};

// The host table's hash and equality: a key has no padding (reserved is
// always 0), so both read it as words. FNV-1a byte by byte (the device
// table's hash) made the merge of a 65,536-slot table take most of the host
// thread's time.
static_assert(sizeof(gnio::device::flow_key) == 44, "flow_key_hash reads the key as 5 words and 4 bytes");
struct flow_key_hash {
  size_t operator()(const gnio::device::flow_key& k) const noexcept {
    uint64_t w[5];
    uint32_t tail = 0;
    std::memcpy(w, &k, sizeof w);
    std::memcpy(&tail, reinterpret_cast<const char*>(&k) + sizeof w, sizeof tail);
    uint64_t h = (tail + 1) * 0x9e3779b97f4a7c15ull;
    for (const uint64_t x : w) {
      h ^= x;
      h *= 0xbf58476d1ce4e5b9ull;
      h ^= h >> 31;
    }
    return static_cast<size_t>(h);
  }
};
struct flow_key_equal {
  bool operator()(const gnio::device::flow_key& a, const gnio::device::flow_key& b) const noexcept {
    return std::memcmp(&a, &b, sizeof a) == 0;
  }
};

// Into a row's entry, the capture times of another part of the same flow
// (another table or GPU): the earlier first_ns and later last_ns, 0 being none.
inline void merge_times(gnio::device::flow_entry& into, const gnio::device::flow_entry& from) noexcept {
  if (from.first_ns != 0 && (into.first_ns == 0 || from.first_ns < into.first_ns)) into.first_ns = from.first_ns;
  if (from.last_ns > into.last_ns) into.last_ns = from.last_ns;
}

class flow_expiry {
 public:
  // idle_ms: a flow with no packet for this long ends (0: never). ipfix
  // (may be disabled, or null) gets each flow's records in table `domain`.
  flow_expiry(uint64_t idle_ms, gnio::ipfix::session* ipfix, uint32_t domain);

  // Adds the used slots of a device table that was given back (or, at the
  // end of the run, of every table) at now_ms.
  void merge(const gnio::device::flow_entry* table, size_t capacity, uint64_t now_ms);

  // After one or more merges, at now_ms: finished flows leave for
  // finished() with their final IPFIX record (end_of_flow: FIN or RST seen
  // and no packet merged since the previous expire; idle_timeout: no packet
  // for idle_ms); the others get the records their IPFIX timeouts make due.
  // final (the end of the run): every open record is sent (forced_end) and
  // the flows stay. It looks at every live flow, so a caller that merges
  // often (a table filling fast) calls it less often than merge.
  void expire(uint64_t now_ms, bool final);

  [[nodiscard]] const std::vector<flow_row>& finished() const noexcept { return finished_; }
  [[nodiscard]] size_t live() const noexcept { return live_.size(); }
  template <class F>
  void for_each_live(F&& f) const {
    for (const auto& [k, v] : live_) f(v.row);
  }
  [[nodiscard]] uint64_t ended_end_of_flow() const noexcept { return ended_end_of_flow_; }
  [[nodiscard]] uint64_t ended_idle() const noexcept { return ended_idle_; }
  // Packets in every flow merged so far, live or finished.
  [[nodiscard]] uint64_t packets() const noexcept { return packets_; }

 private:
  struct live_flow {
    flow_row row;
    gnio::ipfix::flow_state ipfix;
    uint64_t merged = 0;  // the last merge that added to it (merges_)
  };
  uint64_t idle_ms_;
  gnio::ipfix::session* ipfix_;
  uint32_t domain_;
  std::unordered_map<gnio::device::flow_key, live_flow, flow_key_hash, flow_key_equal> live_;
  std::vector<flow_row> finished_;
  uint64_t ended_end_of_flow_ = 0, ended_idle_ = 0, packets_ = 0;
  uint64_t merges_ = 0, merges_at_expire_ = 0;
};

}  // namespace flow_count
