// SPDX-License-Identifier: Apache-2.0
// flow_count's host-side flow table and its expiry (expiry.hpp).
#include "expiry.hpp"

#include <algorithm>

namespace flow_count {

namespace dev = gnio::device;

const char* to_string(flow_end e) noexcept {
  switch (e) {
    case flow_end::end_of_flow: return "end_of_flow";
    case flow_end::idle_timeout: return "idle_timeout";
    case flow_end::live: break;
  }
  return "live";
}

flow_expiry::flow_expiry(uint64_t idle_ms, gnio::ipfix::session* ipfix, uint32_t domain)
    : idle_ms_(idle_ms), ipfix_(ipfix), domain_(domain) {}

void flow_expiry::merge(const dev::flow_entry* table, size_t capacity, uint64_t now_ms) {
  ++merges_;
  for (size_t i = 0; i < capacity; ++i) {
    const dev::flow_entry& f = table[i];
    if (f.state != dev::flow_slot_used || f.packets == 0) continue;
    auto [it, fresh] = live_.try_emplace(f.key);
    flow_row& r = it->second.row;
    if (fresh) {
      r.e = f;
      r.first_ms = now_ms;
    } else {
      r.e.packets += f.packets;
      r.e.bytes += f.bytes;
      r.e.ip_bytes += f.ip_bytes;
      // Capture times: the earliest and latest over the tables (0: none).
      if (f.first_ns != 0 && (r.e.first_ns == 0 || f.first_ns < r.e.first_ns)) r.e.first_ns = f.first_ns;
      r.e.last_ns = std::max(r.e.last_ns, f.last_ns);
      // The VLAN stays the first packet's, as in one device table.
      r.e.meta |= f.meta & dev::flow_meta_tcp_flags;
      flow_count::merge_times(r.e, f);
    }
    r.last_ms = now_ms;
    it->second.merged = merges_;
    packets_ += f.packets;
  }
}

void flow_expiry::expire(uint64_t now_ms, bool final) {
  const gnio::ipfix::end_reason forced = gnio::ipfix::end_reason::forced_end;
  const gnio::ipfix::end_reason end_of_flow = gnio::ipfix::end_reason::end_of_flow;
  const gnio::ipfix::end_reason idle = gnio::ipfix::end_reason::idle_timeout;
  for (auto it = live_.begin(); it != live_.end();) {
    live_flow& lf = it->second;
    flow_end end = flow_end::live;
    if (!final) {
      const bool grew = lf.merged > merges_at_expire_;
      // A FIN or RST ends a TCP flow once a harvest passes without its
      // packets: the ACKs that close the connection still count in it.
      if (!grew && lf.row.e.key.proto == dev::ipproto_tcp && (lf.row.e.meta & (dev::tcp_fin | dev::tcp_rst)) != 0)
        end = flow_end::end_of_flow;
      else if (idle_ms_ != 0 && now_ms - lf.row.last_ms >= idle_ms_) end = flow_end::idle_timeout;
    }
    if (ipfix_ != nullptr) {
      const gnio::ipfix::end_reason* why = final                           ? &forced
                                           : end == flow_end::end_of_flow  ? &end_of_flow
                                           : end == flow_end::idle_timeout ? &idle
                                                                           : nullptr;
      ipfix_->observe(domain_, lf.ipfix, lf.row.e, now_ms, why);
    }
    if (end == flow_end::live) {
      ++it;
      continue;
    }
    lf.row.end = end;
    (end == flow_end::end_of_flow ? ended_end_of_flow_ : ended_idle_) += 1;
    finished_.push_back(lf.row);
    it = live_.erase(it);
  }
  merges_at_expire_ = merges_;
  if (ipfix_ != nullptr) ipfix_->flush(domain_, now_ms);
}

}  // namespace flow_count
