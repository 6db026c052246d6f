// SPDX-License-Identifier: Apache-2.0
// Software flow steering: a frame's class and RSS hash, and the plan of which
// engine lane writes which RX queue.
#include <algorithm>

#include "gnio/device/pkt.hpp"
#include "internal.hpp"

namespace gnio {
namespace detail {

// Frame class for steering, from the parsed headers.
// The innermost packet decides (a TCP segment in a VXLAN tunnel goes with
// TCP). Every fragment of a datagram goes where its protocol goes, so that
// the queue that gets them all can reassemble it (later fragments have no
// transport header to look at).
device::rx_class classify(const device::parsed_pkt& p) {
  if (p.l3 == device::l3_kind::arp) return device::rx_class_arp;
  if (p.is_fragment) {
    switch (p.l4_proto) {
      case device::ipproto_udp: return device::rx_class_udp;
      case device::ipproto_tcp: return device::rx_class_tcp;
      case device::ipproto_icmp:
      case device::ipproto_icmpv6: return device::rx_class_icmp;
      default: return device::rx_class_other;
    }
  }
  switch (p.l4) {
    case device::l4_kind::udp: return device::rx_class_udp;
    case device::l4_kind::tcp:
      if (p.tcp.flags & (device::tcp_syn | device::tcp_fin | device::tcp_rst)) return device::rx_class_tcp_ctrl;
      return device::rx_class_tcp;
    case device::l4_kind::icmp:
    case device::l4_kind::icmpv6: return device::rx_class_icmp;
    default: return device::rx_class_other;
  }
}

namespace {

// Toeplitz with the Microsoft key, one table lookup per input byte instead of
// eight shift-and-xor steps per byte: the same value as device::flow_hash (a
// test checks), cheap enough for the engine's per-frame steering.
class fast_toeplitz {
 public:
  fast_toeplitz() {
    const auto key = device::microsoft_rss_key();
    for (uint32_t pos = 0; pos < k_max; ++pos) {
      for (uint32_t b = 0; b < 256; ++b) {
        uint32_t h = 0;
        for (uint32_t bit = 0; bit < 8; ++bit) {
          if (!((b >> (7 - bit)) & 1u)) continue;
          // The 32-bit key window starting at key bit pos*8+bit.
          const uint32_t kb = pos * 8 + bit;
          uint32_t w = 0;
          for (uint32_t i = 0; i < 32; ++i) {
            const uint32_t k = kb + i;
            const uint32_t kbit = k / 8 < sizeof key.bytes ? (key.bytes[k / 8] >> (7 - k % 8)) & 1u : 0u;
            w = (w << 1) | kbit;
          }
          h ^= w;
        }
        table_[pos][b] = h;
      }
    }
  }
  [[nodiscard]] uint32_t hash(const device::flow_key& k) const noexcept {
    const uint32_t alen = k.family == 6 ? 16u : (k.family == 4 ? 4u : 0u);
    if (alen == 0) return 0;
    uint32_t h = 0, pos = 0;
    for (uint32_t i = 0; i < alen; ++i) h ^= table_[pos++][k.src[i]];
    for (uint32_t i = 0; i < alen; ++i) h ^= table_[pos++][k.dst[i]];
    h ^= table_[pos++][k.src_port >> 8];
    h ^= table_[pos++][k.src_port & 0xff];
    h ^= table_[pos++][k.dst_port >> 8];
    h ^= table_[pos++][k.dst_port & 0xff];
    return h;
  }

 private:
  static constexpr uint32_t k_max = 36;
  uint32_t table_[k_max][256];
};

const fast_toeplitz& toeplitz() {
  static const fast_toeplitz t;
  return t;
}

}  // namespace

uint32_t steering_hash(const device::flow_key& k) { return toeplitz().hash(k); }

lane_plan plan_lanes(const std::vector<uint32_t>& rx_ids, const std::vector<steering_rule>& rules,
                     const std::vector<uint32_t>& default_queues, uint32_t num_lanes) {
  const size_t nq = rx_ids.size();
  // Queue id -> position in rx_ids (ids were checked by set_steering).
  auto pos = [&](uint32_t id) {
    for (size_t i = 0; i < nq; ++i)
      if (rx_ids[i] == id) return static_cast<uint32_t>(i);
    return 0u;
  };
  // Steering groups, per class, as queue positions: a rule's queues, else the
  // default queues, else every queue.
  std::vector<uint32_t> groups[8];
  std::vector<uint32_t> defaults;
  if (default_queues.empty()) {
    for (size_t i = 0; i < nq; ++i) defaults.push_back(static_cast<uint32_t>(i));
  } else {
    for (uint32_t id : default_queues) defaults.push_back(pos(id));
  }
  for (auto& g : groups) g = defaults;
  for (const auto& r : rules) {
    auto& g = groups[r.cls];
    g.clear();
    for (uint32_t id : r.queues) g.push_back(pos(id));
  }
  // Lanes: a source split into lanes never sends one flow through two lanes,
  // so each lane may take its own share of a group (members i with
  // i mod lanes = lane) and still keep every flow on one queue. A group with
  // fewer members than lanes is shared by all lanes. With one lane this is
  // plain steering over the whole group.
  lane_plan plan;
  plan.lanes.resize(num_lanes);
  plan.writers.assign(nq, 0);
  for (uint32_t i = 0; i < num_lanes; ++i) {
    auto& l = plan.lanes[i];
    std::vector<int> local(nq, -1);  // queue position -> index in l.rx
    auto use = [&](uint32_t p) {
      if (local[p] < 0) {
        local[p] = static_cast<int>(l.rx.size());
        l.rx.push_back(p);
        ++plan.writers[p];
      }
      return static_cast<uint32_t>(local[p]);
    };
    for (size_t c = 0; c < 8; ++c) {
      const auto& g = groups[c];
      for (size_t k = 0; k < g.size(); ++k)
        if (g.size() < num_lanes || k % num_lanes == i) l.groups[c].push_back(use(g[k]));
    }
  }
  for (size_t p = 0; p < nq; ++p) {
    if (plan.writers[p] == 0 && num_lanes > 0) {
      // In no group: lane 0 carries its end mark.
      plan.lanes.front().rx.push_back(static_cast<uint32_t>(p));
      plan.writers[p] = 1;
    }
  }
  return plan;
}

}  // namespace detail

namespace backend {

steer_info steer_of(const uint8_t* frame, uint32_t len) noexcept {
  device::parsed_pkt p;
  (void)device::parse(frame, len, p);
  steer_info s;
  s.cls = detail::classify(p);
  s.hash = detail::steering_hash(device::make_flow_key(p));
  s.flags = p.vlan_count ? device::rx_flag_vlan : 0;
  return s;
}

}  // namespace backend
}  // namespace gnio
