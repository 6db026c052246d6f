// SPDX-License-Identifier: Apache-2.0
// pair: two ports back to back, like a cable between two NICs. The first
// `pair:name=X` opened is side A, the second side B; what one side transmits
// the other receives, byte for byte.
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "gnio/backend/backend.hpp"
#include "gnio/backend/log.hpp"

namespace gnio::backend {
namespace {

constexpr size_t k_max_inflight = 1u << 20;  // frames on the "wire" per direction

struct frame {
  std::vector<uint8_t> bytes;
  uint64_t ts_ns;
};

struct wire {
  std::mutex mu;
  std::deque<frame> frames;
};

struct channel {
  std::string name;
  wire dir[2];  // dir[i]: frames travelling towards side i
  int sides_open = 0;
};

std::mutex g_mu;
std::map<std::string, std::weak_ptr<channel>>& channels() {
  static std::map<std::string, std::weak_ptr<channel>> m;
  return m;
}

struct pair_port {
  std::shared_ptr<channel> ch;
  int side = 0;
  counters c;
  std::mutex cmu;  // counters are read by other threads
};

uint64_t now_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

error pair_open(const devargs& a, void** priv) {
  if (auto e = check_keys(a, {"name"}); e) return e;
  std::string name = "0";
  if (auto e = get_string(a, "name", &name); e) return e;
  std::lock_guard lk(g_mu);
  auto& slot = channels()[name];
  auto ch = slot.lock();
  if (!ch) {
    ch = std::make_shared<channel>();
    ch->name = name;
    slot = ch;
  }
  if (ch->sides_open >= 2)
    return fail(status::in_use, "pair: both sides of pair '{}' are already open; use name= for another pair", name);
  auto* p = new pair_port;
  p->ch = ch;
  p->side = ch->sides_open++;
  *priv = p;
  return {};
}

void pair_caps(void*, port_caps* c) {
  c->rx = true;
  c->tx = true;
  c->max_rx_queues = 64;
  c->max_tx_queues = 64;
  c->max_pkt_bytes = 65535;
  c->min_ring_descs = 2;
  c->max_ring_descs = 1u << 20;
  c->rx_timestamps = true;
  c->finite = false;
}

status pair_rx(void* priv, rx_lane& lane, uint32_t budget, uint32_t* produced) {
  auto* p = static_cast<pair_port*>(priv);
  wire& w = p->ch->dir[p->side];
  std::deque<frame> batch;
  {
    std::lock_guard lk(w.mu);
    while (!w.frames.empty() && batch.size() < budget) {
      batch.push_back(std::move(w.frames.front()));
      w.frames.pop_front();
    }
  }
  uint64_t bytes = 0;
  for (auto& f : batch) {
    (void)lane.deliver(f.bytes.data(), static_cast<uint32_t>(f.bytes.size()), static_cast<uint32_t>(f.bytes.size()),
                       f.ts_ns);
    bytes += f.bytes.size();
  }
  {
    std::lock_guard lk(p->cmu);
    p->c.rx_frames += batch.size();
    p->c.rx_bytes += bytes;
  }
  *produced = static_cast<uint32_t>(batch.size());
  return batch.empty() ? status::again : status::success;
}

error pair_tx(void* priv, const tx_frame* frames, uint32_t n, uint32_t* sent) {
  auto* p = static_cast<pair_port*>(priv);
  wire& w = p->ch->dir[1 - p->side];
  uint32_t ok = 0;
  uint64_t bytes = 0;
  const uint64_t ts = now_ns();
  {
    std::lock_guard lk(w.mu);
    for (uint32_t i = 0; i < n && w.frames.size() < k_max_inflight; ++i, ++ok) {
      w.frames.push_back({std::vector<uint8_t>(frames[i].data, frames[i].data + frames[i].len), ts});
      bytes += frames[i].len;
    }
  }
  {
    std::lock_guard lk(p->cmu);
    p->c.tx_frames += ok;
    p->c.tx_bytes += bytes;
    p->c.tx_errors += n - ok;
  }
  *sent = ok;
  if (ok < n)
    return fail(status::full, "pair '{}': {} frames already in flight; {} dropped", p->ch->name, k_max_inflight,
                n - ok);
  return {};
}

void pair_close(void* priv) {
  auto* p = static_cast<pair_port*>(priv);
  {
    std::lock_guard lk(g_mu);
    --p->ch->sides_open;
  }
  delete p;
}

void pair_counters(void* priv, counters* c) {
  auto* p = static_cast<pair_port*>(priv);
  std::lock_guard lk(p->cmu);
  *c = p->c;
}

}  // namespace

extern const ops pair_ops = {
    .size = sizeof(ops),
    .name = "pair",
    .summary = "two ports back to back: what one transmits the other receives",
    .options = "name=ID   which pair (default 0); the first open is side A, the second side B",
    .open = pair_open,
    .get_caps = pair_caps,
    .start = nullptr,
    .rx_burst = pair_rx,
    .tx_burst = pair_tx,
    .stop = nullptr,
    .close = pair_close,
    .get_counters = pair_counters,
};

}  // namespace gnio::backend
