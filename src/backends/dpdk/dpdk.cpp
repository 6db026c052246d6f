// SPDX-License-Identifier: Apache-2.0
// dpdk backend: an ethdev port of DPDK (a PCI NIC bound to vfio-pci, or a
// virtual device such as net_pcap, net_af_packet, net_af_xdp, net_tap, net_ring)
// as a gnio port. The engine polls the port's RX queues with rte_eth_rx_burst
// and copies each frame into the steered gnio RX ring; TX frames are copied
// into mbufs and sent with rte_eth_tx_burst on queue 0.
//
// DPDK's EAL is initialised once per process, by the first dpdk port opened;
// later ports reuse it. Virtual devices are created per port (EAL hotplug)
// and removed when the port closes.
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "gnio/backend/backend.hpp"
#include "log_internal.hpp"

namespace gnio::backend {

namespace {

using detail::fail;

constexpr uint32_t k_max_queues = 64;
constexpr uint32_t k_burst = 32;
constexpr uint32_t k_max_frame = RTE_MBUF_DEFAULT_DATAROOM;  // one mbuf per TX frame

// --- EAL: once per process ----------------------------------------------------

struct eal_state {
  std::mutex mu;
  bool tried = false;
  error result;           // the outcome of the one rte_eal_init
  std::string args_text;  // the arguments it got, for messages
};

eal_state& eal() {
  static eal_state s;
  return s;
}

std::vector<std::string> split_spaces(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// Defaults that need no hugepages, no PCI access and no files under /var/run:
// enough for virtual devices. eal= replaces them (e.g. for a PCI NIC).
const char* const k_default_eal = "--no-huge -m 512 --no-pci --no-shconf --no-telemetry --log-level=4";

error init_eal(const std::string& user_args) {
  auto& s = eal();
  std::lock_guard lk(s.mu);
  const std::string text = user_args.empty() ? k_default_eal : user_args;
  if (s.tried) {
    if (!s.result && !user_args.empty() && text != s.args_text)
      detail::log(log_level::warn, "dpdk: EAL already initialised with '{}'; eal='{}' is ignored", s.args_text,
                  user_args);
    return s.result;
  }
  s.tried = true;
  s.args_text = text;
  std::vector<std::string> args{"gnio"};
  for (auto& w : split_spaces(text)) args.push_back(w);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // rte_eal_init pins the calling thread to the main lcore's CPU; gnio's
  // threads keep the affinity they had.
  cpu_set_t before;
  const bool have_affinity = pthread_getaffinity_np(pthread_self(), sizeof before, &before) == 0;
  const int rc = rte_eal_init(static_cast<int>(args.size()), argv.data());
  const int err = rte_errno;
  if (have_affinity) (void)pthread_setaffinity_np(pthread_self(), sizeof before, &before);
  if (rc < 0) {
    const status st = err == EACCES || err == EPERM ? status::not_permitted
                      : err == EALREADY             ? status::bad_state
                                                    : status::initialization;
    s.result = error(st, fmt::format("dpdk: EAL initialisation with '{}' failed: {} (rte_errno {}){}", text,
                                     rte_strerror(err), err,
                                     err == EACCES || err == EPERM ? "; run as root or with the capabilities DPDK needs"
                                                                   : ""));
  }
  return s.result;
}

// --- the port ----------------------------------------------------------------------

struct port {
  // options
  std::string vdev_name, vdev_args;  // vdev=NAME;ARGS (';' standing for DPDK's ',')
  uint16_t port_id = 0;
  bool own_vdev = false;  // created here, removed at close
  uint32_t nqueues = 1;
  uint32_t descs = 1024;
  bool promisc = true;

  rte_eth_dev_info info{};
  rte_mempool* pool = nullptr;
  bool started = false;
  // What one engine lane (lanes=N) keeps to itself: it polls the DPDK queues
  // lane, lane + N, ...
  struct lane_state {
    uint32_t rr = 0;               // queue to start the next burst at
    std::vector<uint8_t> scratch;  // chained (jumbo) frames made contiguous
  };
  std::vector<lane_state> lanes = std::vector<lane_state>(1);

  rx_failure failure;  // why receive failed (last_error op)

  std::atomic<uint64_t> rx_frames{0}, rx_bytes{0}, tx_frames{0}, tx_bytes{0}, tx_errors{0};
};

void bump(std::atomic<uint64_t>& c, uint64_t n = 1) { c.fetch_add(n, std::memory_order_relaxed); }

error dpdk_fail(status s, int rte_err, const std::string& what) {
  return error(s, fmt::format("{}: {} (rte_errno {})", what, rte_strerror(rte_err), rte_err));
}

status errno_status(int e) {
  switch (e) {
    case ENODEV:
    case ENOENT: return status::not_found;
    case ENOMEM: return status::no_memory;
    case EINVAL: return status::invalid_value;
    case ENOTSUP: return status::not_supported;
    case EEXIST: return status::already_exist;
    case EBUSY: return status::in_use;
    case EACCES:
    case EPERM: return status::not_permitted;
    default: return status::driver;
  }
}

void release(port* p) {
  if (p->started) (void)rte_eth_dev_stop(p->port_id);
  p->started = false;
  if (p->own_vdev) {
    (void)rte_eth_dev_close(p->port_id);
    (void)rte_eal_hotplug_remove("vdev", p->vdev_name.c_str());
    p->own_vdev = false;
  }
  if (p->pool) rte_mempool_free(p->pool);
  p->pool = nullptr;
}

error configure(port* p) {
  if (int rc = rte_eth_dev_info_get(p->port_id, &p->info); rc != 0)
    return dpdk_fail(errno_status(-rc), -rc, fmt::format("dpdk: port {}: rte_eth_dev_info_get", p->port_id));
  if (p->nqueues > p->info.max_rx_queues || p->nqueues > p->info.max_tx_queues)
    return fail(status::invalid_value, "dpdk: queues={} but {} ({}) has at most {} RX and {} TX queues", p->nqueues,
                p->vdev_name.empty() ? fmt::format("port {}", p->port_id) : p->vdev_name, p->info.driver_name,
                p->info.max_rx_queues, p->info.max_tx_queues);
  rte_eth_conf conf{};
  if (p->nqueues > 1) {
    // Spread flows over the DPDK queues (and so over engine lanes) by the NIC's RSS.
    const uint64_t want = RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP;
    conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
    conf.rx_adv_conf.rss_conf.rss_hf = want & p->info.flow_type_rss_offloads;
    if (conf.rx_adv_conf.rss_conf.rss_hf == 0) conf.rxmode.mq_mode = RTE_ETH_MQ_RX_NONE;
  }
  if (int rc = rte_eth_dev_configure(p->port_id, p->nqueues, p->nqueues, &conf); rc != 0)
    return dpdk_fail(errno_status(-rc), -rc, fmt::format("dpdk: port {}: rte_eth_dev_configure", p->port_id));
  uint16_t rxd = static_cast<uint16_t>(p->descs), txd = static_cast<uint16_t>(p->descs);
  (void)rte_eth_dev_adjust_nb_rx_tx_desc(p->port_id, &rxd, &txd);
  const int socket = rte_eth_dev_socket_id(p->port_id);  // SOCKET_ID_ANY when unknown
  const unsigned n_mbufs = std::max(8191u, p->nqueues * (rxd + txd) + 2u * k_burst * p->nqueues + 1024u);
  const std::string pool_name = fmt::format("gnio_dpdk_{}", p->port_id);
  p->pool = rte_pktmbuf_pool_create(pool_name.c_str(), n_mbufs, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
                                    socket);
  if (!p->pool)
    return dpdk_fail(status::no_memory, rte_errno,
                     fmt::format("dpdk: port {}: creating a pool of {} mbufs (raise -m in eal=)", p->port_id, n_mbufs));
  for (uint16_t q = 0; q < p->nqueues; ++q) {
    if (int rc = rte_eth_rx_queue_setup(p->port_id, q, rxd, socket, nullptr, p->pool);
        rc != 0)
      return dpdk_fail(errno_status(-rc), -rc, fmt::format("dpdk: port {}: RX queue {} setup", p->port_id, q));
    if (int rc = rte_eth_tx_queue_setup(p->port_id, q, txd, socket, nullptr); rc != 0)
      return dpdk_fail(errno_status(-rc), -rc, fmt::format("dpdk: port {}: TX queue {} setup", p->port_id, q));
  }
  return {};
}

error dpdk_open(const devargs& a, void** priv) {
  if (auto e = check_keys(a, {"vdev", "port", "eal", "queues", "descs", "promisc"}); e) return e;
  auto p = std::make_unique<port>();
  std::string vdev, eal_args;
  if (auto e = get_string(a, "vdev", &vdev); e) return e;
  if (auto e = get_string(a, "eal", &eal_args); e) return e;
  uint64_t port_id = UINT64_MAX, queues = 1, descs = 1024, promisc = 1;
  if (auto e = get_u64(a, "port", 0, RTE_MAX_ETHPORTS - 1, &port_id); e) return e;
  if (auto e = get_u64(a, "queues", 1, k_max_queues, &queues); e) return e;
  if (auto e = get_u64(a, "descs", 64, 32768, &descs); e) return e;
  if (auto e = get_u64(a, "promisc", 0, 1, &promisc); e) return e;
  if (vdev.empty() == (port_id == UINT64_MAX))
    return fail(status::bad_config,
                "dpdk: give exactly one of vdev=NAME;ARGS (a virtual device, ';' between its arguments, e.g. "
                "vdev=net_pcap0;rx_pcap=x.pcap) or port=N (a port EAL probed, e.g. with eal=-a 0000:ca:00.0)");
  p->nqueues = static_cast<uint32_t>(queues);
  p->descs = static_cast<uint32_t>(descs);
  p->promisc = promisc != 0;
  if (auto e = init_eal(eal_args); e) return e;

  if (!vdev.empty()) {
    std::replace(vdev.begin(), vdev.end(), ';', ',');
    const size_t comma = vdev.find(',');
    p->vdev_name = vdev.substr(0, comma);
    p->vdev_args = comma == std::string::npos ? "" : vdev.substr(comma + 1);
    if (int rc = rte_eal_hotplug_add("vdev", p->vdev_name.c_str(), p->vdev_args.c_str()); rc != 0)
      return fail(rc == -EEXIST ? status::in_use : status::not_found,
                  "dpdk: cannot create virtual device '{}' with arguments '{}' (DPDK's reason is in the EAL lines "
                  "above): the name must start with a DPDK driver (net_pcap, net_af_packet, net_af_xdp, net_tap, "
                  "net_ring, net_null), be unique in the process, and its arguments must be the driver's",
                  p->vdev_name, p->vdev_args);
    p->own_vdev = true;
    uint16_t id = 0;
    if (rte_eth_dev_get_port_by_name(p->vdev_name.c_str(), &id) != 0) {
      (void)rte_eal_hotplug_remove("vdev", p->vdev_name.c_str());
      return fail(status::not_found, "dpdk: virtual device '{}' made no ethdev port", p->vdev_name);
    }
    p->port_id = id;
  } else {
    p->port_id = static_cast<uint16_t>(port_id);
    if (!rte_eth_dev_is_valid_port(p->port_id))
      return fail(status::not_found, "dpdk: no port {}: EAL probed {} port(s) (check eal= and the NIC's binding)",
                  p->port_id, rte_eth_dev_count_avail());
  }
  if (auto e = configure(p.get()); e) {
    release(p.get());
    return e;
  }
  *priv = p.release();
  return {};
}

void dpdk_caps(void*, port_caps* c) {
  c->rx = true;
  c->tx = true;
  c->max_rx_queues = k_max_queues;  // gnio RX rings are software rings the engine steers into
  c->max_tx_queues = k_max_queues;
  c->max_pkt_bytes = k_max_frame;
  c->min_ring_descs = 2;
  c->max_ring_descs = 1u << 20;
  c->rx_timestamps = false;
  c->finite = false;
}

error dpdk_start(void* priv) {
  auto* p = static_cast<port*>(priv);
  if (int rc = rte_eth_dev_start(p->port_id); rc != 0)
    return dpdk_fail(errno_status(-rc), -rc, fmt::format("dpdk: port {}: rte_eth_dev_start", p->port_id));
  p->started = true;
  if (p->promisc) (void)rte_eth_promiscuous_enable(p->port_id);  // not every PMD has it
  rte_eth_link link{};
  if (rte_eth_link_get_nowait(p->port_id, &link) == 0 && link.link_status == RTE_ETH_LINK_DOWN)
    detail::log(log_level::warn, "dpdk: port {} ({}) link is down", p->port_id, p->info.driver_name);
  return {};
}

status dpdk_rx(void* priv, rx_lane& sink, uint32_t budget, uint32_t* produced) {
  const uint32_t lane = sink.index();
  auto* p = static_cast<port*>(priv);
  *produced = 0;
  if (!p->started || lane >= p->lanes.size()) {
    p->failure.set(fmt::format("dpdk: port {}: receive on a port that is not started", p->port_id));
    return status::bad_state;
  }
  const uint32_t nl = static_cast<uint32_t>(p->lanes.size());
  const uint32_t mine = (p->nqueues - lane + nl - 1) / nl;  // DPDK queues lane, lane + nl, ...
  uint32_t& rr = p->lanes[lane].rr;
  auto& scratch = p->lanes[lane].scratch;
  uint32_t total = 0;
  uint64_t bytes = 0;
  rte_mbuf* bufs[k_burst];
  for (uint32_t k = 0; k < mine && total < budget; ++k) {
    const uint16_t q = static_cast<uint16_t>(lane + ((rr + k) % mine) * nl);
    const uint16_t n = rte_eth_rx_burst(p->port_id, q, bufs, static_cast<uint16_t>(std::min(k_burst, budget - total)));
    for (uint16_t i = 0; i < n; ++i) {
      rte_mbuf* m = bufs[i];
      const uint32_t len = rte_pktmbuf_pkt_len(m);
      const uint8_t* data = rte_pktmbuf_mtod(m, const uint8_t*);
      if (m->nb_segs > 1) {
        // A chained frame (jumbo): one contiguous copy for the engine.
        if (scratch.size() < len) scratch.resize(len);
        data = static_cast<const uint8_t*>(rte_pktmbuf_read(m, 0, len, scratch.data()));
      }
      (void)sink.deliver(data, len, len, 0);  // a full ring is counted by the core as missed
      bytes += len;
    }
    rte_pktmbuf_free_bulk(bufs, n);
    total += n;
  }
  rr = (rr + 1) % mine;
  if (total) {
    bump(p->rx_frames, total);
    bump(p->rx_bytes, bytes);
  }
  *produced = total;
  return total ? status::success : status::again;
}


error dpdk_set_lanes(void* priv, uint32_t lanes) {
  auto* p = static_cast<port*>(priv);
  if (lanes == 0 || lanes > p->nqueues)
    return fail(status::invalid_value, "dpdk: lanes={} needs queues={} or more: each lane polls its own DPDK queues",
                lanes, lanes);
  p->lanes.assign(lanes, {});
  return {};
}

error dpdk_tx(void* priv, const tx_frame* frames, uint32_t n, uint32_t* sent) {
  auto* p = static_cast<port*>(priv);
  *sent = 0;
  if (!p->started) return fail(status::bad_state, "dpdk: port {}: transmit on a port that is not started", p->port_id);
  uint32_t too_big = 0, i = 0;
  uint64_t bytes = 0;
  error stopped;  // why the rest of the frames (from i on) were not sent
  while (i < n && !stopped) {
    rte_mbuf* bufs[k_burst];
    uint32_t lens[k_burst];  // the driver may free an mbuf as soon as it takes it
    uint16_t m = 0;
    for (; i < n && m < k_burst; ++i) {
      if (frames[i].len == 0 || frames[i].len > k_max_frame) {
        ++too_big;
        continue;
      }
      rte_mbuf* b = rte_pktmbuf_alloc(p->pool);
      if (!b) {
        stopped = fail(status::no_memory, "dpdk: port {}: no free mbuf for TX", p->port_id);
        break;
      }
      std::memcpy(rte_pktmbuf_append(b, static_cast<uint16_t>(frames[i].len)), frames[i].data, frames[i].len);
      lens[m] = frames[i].len;
      bufs[m++] = b;
    }
    uint16_t done = 0;
    // A full TX ring drains within microseconds; give it a bounded while.
    for (int tries = 0; done < m && tries < 10000; ++tries)
      done = static_cast<uint16_t>(done + rte_eth_tx_burst(p->port_id, 0, bufs + done, static_cast<uint16_t>(m - done)));
    for (uint16_t k = 0; k < done; ++k) bytes += lens[k];
    *sent += done;
    if (done < m) {
      rte_pktmbuf_free_bulk(bufs + done, m - done);
      stopped = fail(status::full, "dpdk: port {}: the TX ring stayed full", p->port_id);
    }
  }
  bump(p->tx_frames, *sent);
  bump(p->tx_bytes, bytes);
  if (*sent < n) bump(p->tx_errors, n - *sent);
  if (stopped) return error(stopped.code(), fmt::format("{}; {} frame(s) not sent", stopped.message(), n - *sent));
  if (too_big)
    return fail(status::too_big, "dpdk: port {}: {} frame(s) empty or longer than {} bytes not sent", p->port_id,
                too_big, k_max_frame);
  return {};
}

error dpdk_stop(void* priv) {
  auto* p = static_cast<port*>(priv);
  if (!p->started) return {};
  p->started = false;
  if (int rc = rte_eth_dev_stop(p->port_id); rc != 0)
    return dpdk_fail(errno_status(-rc), -rc, fmt::format("dpdk: port {}: rte_eth_dev_stop", p->port_id));
  return {};
}

void dpdk_close(void* priv) {
  auto* p = static_cast<port*>(priv);
  release(p);
  delete p;
}

void dpdk_counters(void* priv, counters* c) {
  auto* p = static_cast<port*>(priv);
  c->rx_frames = p->rx_frames.load(std::memory_order_relaxed);
  c->rx_bytes = p->rx_bytes.load(std::memory_order_relaxed);
  rte_eth_stats st{};
  // Frames the NIC (or virtual device) dropped before the engine saw them.
  if (rte_eth_stats_get(p->port_id, &st) == 0) c->rx_errors = st.imissed + st.ierrors + st.rx_nombuf;
  c->tx_frames = p->tx_frames.load(std::memory_order_relaxed);
  c->tx_bytes = p->tx_bytes.load(std::memory_order_relaxed);
  c->tx_errors = p->tx_errors.load(std::memory_order_relaxed);
}

const char* dpdk_last_error(void* priv) { return static_cast<port*>(priv)->failure.text(); }

}  // namespace

extern const ops dpdk_ops = {
    .size = sizeof(ops),
    .name = "dpdk",
    .summary = "a DPDK ethdev port: a PCI NIC EAL probed, or a virtual device (net_pcap, net_af_packet, net_tap, ...)",
    .options =
        "vdev=NAME;ARGS  create a DPDK virtual device for this port, its arguments separated by ';' where DPDK\n"
        "                uses ',' (e.g. vdev=net_pcap0;rx_pcap=in.pcap;tx_pcap=out.pcap, vdev=net_af_packet0;iface=eth0);\n"
        "                removed when the port closes. The name must be unique in the process\n"
        "port=N          use ethdev port N that EAL probed instead (e.g. a PCI NIC: eal=-a 0000:ca:00.0 ...)\n"
        "eal=ARGS        EAL arguments, space separated, for the first dpdk port of the process (default\n"
        "                --no-huge -m 512 --no-pci --no-shconf --no-telemetry --log-level=4: virtual devices only)\n"
        "queues=N        DPDK RX and TX queues, 1..64 (default 1); with N > 1 the device's RSS spreads flows,\n"
        "                and the core option lanes=L (L <= N) polls them from L engine threads\n"
        "descs=N         descriptors per DPDK queue (default 1024, adjusted to the device's limits)\n"
        "promisc=0|1     promiscuous mode where the device has it (default 1)\n"
        "Live: the stream never ends by itself (stop with --duration or Ctrl-C). Frames the device dropped\n"
        "(imissed, ierrors, no mbuf) count as rx_errors. TX frames go out on queue 0, at most 2048 bytes each.\n",
    .open = dpdk_open,
    .get_caps = dpdk_caps,
    .set_lanes = dpdk_set_lanes,
    .start = dpdk_start,
    .rx_burst = dpdk_rx,
    .tx_burst = dpdk_tx,
    .stop = dpdk_stop,
    .close = dpdk_close,
    .get_counters = dpdk_counters,
    .last_error = dpdk_last_error,
};

}  // namespace gnio::backend
