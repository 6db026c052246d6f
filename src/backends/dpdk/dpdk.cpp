// SPDX-License-Identifier: Apache-2.0
// dpdk backend: an ethdev port of DPDK (a PCI NIC bound to vfio-pci, or a
// virtual device such as net_pcap, net_af_packet, net_af_xdp, net_tap, net_ring)
// as a gnio port. The engine polls the port's RX queues with rte_eth_rx_burst.
//
// By reference (by_ref=1, the default): the RX mbufs' data buffers are the
// port's RX pool, GPU-visible memory the core allocates (rx_pool_setup). It is
// registered with EAL (rte_extmem_register), mapped for DMA where the device
// takes it (rte_dev_dma_map), and carved into a pinned-external-buffer mempool
// (rte_pktmbuf_pool_create_extbuf), so the device writes frames where the
// kernel reads them. A completion names the mbuf's data by its pool offset;
// the mbuf stays out of the mempool until the kernel released it
// (rx_release). Frames sent in place from RX buffers go out as mbufs attached
// to that memory, without a copy. By copy (by_ref=0): each frame is copied
// into the steered ring's area and TX frames into mbufs, on queue 0.
//
// DPDK's EAL is initialised once per process, by the first dpdk port opened;
// later ports reuse it. Virtual devices are created per port (EAL hotplug)
// and removed when the port closes. Engine threads register as EAL threads
// (rte_thread_register) so they free mbufs through per-lcore mempool caches.
#include <linux/if_packet.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <sys/socket.h>
#include <time.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include <rte_bus.h>
#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_memory.h>
#include <rte_mempool.h>
#include <rte_pause.h>

#include "gnio/backend/backend.hpp"
#include "gnio/backend/log.hpp"

namespace gnio::backend {

namespace {

constexpr uint32_t k_max_queues = 64;
constexpr uint32_t k_burst = 32;
constexpr uint32_t k_max_frame = RTE_MBUF_DEFAULT_DATAROOM;  // one mbuf per TX frame
constexpr uint64_t k_max_pool_mbufs = 1u << 20;              // 2.1 GiB of buffers; completions carry 32-bit offsets
// A kernel interface behind a virtual device (net_af_packet, net_af_xdp) can
// vanish without any DPDK call failing, so lane 0 looks for that this often.
constexpr uint64_t k_health_period_ns = 20'000'000;

uint64_t mono_coarse_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(t.tv_nsec);
}

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
      log(log_level::warn, "dpdk: EAL already initialised with '{}'; eal='{}' is ignored", s.args_text, user_args);
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
    s.result = error(
        st, fmt::format("dpdk: EAL initialisation with '{}' failed: {} (rte_errno {}){}", text, rte_strerror(err), err,
                        err == EACCES || err == EPERM ? "; run as root or with the capabilities DPDK needs" : ""));
  }
  return s.result;
}

// --- engine threads as EAL threads ----------------------------------------------

// Mempool caches are per lcore; a thread without one (LCORE_ID_ANY) gets and
// puts every mbuf through the shared ring. Each engine thread registers once,
// on its first call into the backend, and gives its lcore back when it ends.
// Registration can fail (all RTE_MAX_LCORE ids taken): the thread then works
// without a cache, which is correct, only slower.
struct lcore_registration {
  bool tried = false;
  bool registered = false;
  ~lcore_registration() {
    if (registered) rte_thread_unregister();
  }
};

void register_thread() {
  thread_local lcore_registration r;
  if (r.tried) return;
  r.tried = true;
  if (rte_lcore_id() != LCORE_ID_ANY) return;  // the EAL main thread or an lcore of its own
  r.registered = rte_thread_register() == 0;
  if (!r.registered)
    log(log_level::debug, "dpdk: engine thread not registered with EAL ({}): mbufs bypass the mempool cache",
        rte_strerror(rte_errno));
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
  bool by_ref = true;       // by_ref=: receive into the RX pool and send from it without copies
  uint32_t want_mbufs = 0;  // mbufs=: RX pool size (0: sized from queues and descs)

  rte_eth_dev_info info{};
  uint16_t rxd = 0, txd = 0;    // descriptors per queue, as the device adjusted them
  rte_mempool* pool = nullptr;  // TX copies; RX too when frames are received by copy
  bool queues_ready = false;
  bool started = false;

  // The RX pool (by reference): mbufs whose data buffers are gnio's pool
  // memory, buffer i at [i * elt, (i + 1) * elt) of it.
  rte_mempool* rx_ext = nullptr;
  uint8_t* pool_host = nullptr;
  size_t pool_bytes = 0;  // page-rounded, as registered with EAL
  uint32_t elt = 0;       // bytes per buffer (headroom + data room)
  uint32_t num_bufs = 0;
  rte_iova_t pool_iova = RTE_BAD_IOVA;  // IOVA of pool_host (IOVA as VA: the address itself)
  bool extmem = false, dma_mapped = false;
  bool pci = false;                // a PCI device (DMA), not a virtual one
  std::vector<rte_mbuf*> mbuf_of;  // buffer index -> its mbuf (fixed: the buffers are pinned)
  // Buffer index -> whether a completion holds it. Set by the lane that
  // received it, cleared by the lane that gives it back; the RX ring orders
  // the two (publish's release, the kernel's release of cons, reclaim's acquire).
  std::vector<uint8_t> held;
  // TX by reference: every attached mbuf takes a reference on this shared
  // info; 1 means the device let go of all of them. The free callback never
  // runs (the count never reaches 0): the memory is the RX pool's.
  rte_mbuf_ext_shared_info tx_shinfo{};
  bool tx_ref = false;

  // What one engine lane (lanes=N) keeps to itself: it polls the DPDK queues
  // lane, lane + N, ...
  struct lane_state {
    uint32_t rr = 0;               // queue to start the next burst at
    std::vector<uint8_t> scratch;  // chained (jumbo) frames made contiguous
  };
  std::vector<lane_state> lanes = std::vector<lane_state>(1);

  rx_failure failure;  // why receive failed (last_error op)

  // Promiscuous mode (promisc=1). A device with a kernel interface behind it
  // (dev_info if_index: net_af_packet, net_af_xdp, net_tap) gets it as a
  // packet-socket membership, which the kernel drops when the socket closes,
  // also when the process is killed; DPDK's promiscuous_enable would set
  // IFF_PROMISC, which outlives the process. Other devices get DPDK's, turned
  // off again at stop when this port turned it on.
  int promisc_fd = -1;
  bool promisc_set = false;
  // The kernel interface behind the device (0: none), and its name, for the
  // health check (lane 0's engine thread).
  unsigned kernel_ifindex = 0;
  std::string kernel_ifname;
  uint64_t next_health_ns = 0;

  std::atomic<uint64_t> rx_frames{0}, rx_bytes{0}, tx_frames{0}, tx_bytes{0}, tx_errors{0};
  // How frames went: held by reference, copied by the core (a queue in GPU
  // memory), copied into a pool mbuf here (an mbuf from another pool, e.g.
  // net_ring's), dropped for want of a pool mbuf; cut chained frames; releases
  // of buffers not held (never freed twice); TX by reference and by copy.
  std::atomic<uint64_t> rx_ref{0}, rx_core_copied{0}, rx_copied_in{0}, rx_no_mbuf{0}, rx_cut{0}, bad_release{0};
  std::atomic<uint64_t> tx_ref_frames{0}, tx_copied{0};
};

void bump(std::atomic<uint64_t>& c, uint64_t n = 1) { c.fetch_add(n, std::memory_order_relaxed); }

error dpdk_fail(status s, int rte_err, const std::string& what) {
  return error(s, fmt::format("{}: {} (rte_errno {})", what, rte_strerror(rte_err), rte_err));
}

// DPDK's negative errnos: the SDK's mapping, and driver for what it calls io_failed.
status errno_status(int e) {
  const status s = status_from_errno(e);
  return s == status::io_failed ? status::driver : s;
}

std::string port_text(const port* p) {
  return p->vdev_name.empty() ? fmt::format("port {} ({})", p->port_id, p->info.driver_name)
                              : fmt::format("port {} ({})", p->port_id, p->vdev_name);
}

// Turns promiscuous mode on as the port's promisc= asks, in a way that is
// undone when the port stops or the process dies (see port::promisc_fd).
void promisc_on(port* p) {
  if (p->kernel_ifindex != 0) {
    const int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);  // protocol 0: receives nothing
    packet_mreq mr{};
    mr.mr_ifindex = static_cast<int>(p->kernel_ifindex);
    mr.mr_type = PACKET_MR_PROMISC;
    if (fd >= 0 && setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof mr) == 0) {
      p->promisc_fd = fd;
      return;
    }
    const int e = errno;
    if (fd >= 0) ::close(fd);
    log(log_level::warn,
        "dpdk: {}: promiscuous mode through a packet-socket membership on {} failed ({}); using the driver's, "
        "which stays on if the process is killed (ip link set dev {} promisc off)",
        port_text(p), p->kernel_ifname, std::strerror(e), p->kernel_ifname);
  }
  if (rte_eth_promiscuous_get(p->port_id) == 1) return;  // on already: not ours to turn off
  // Not every PMD has it.
  if (rte_eth_promiscuous_enable(p->port_id) == 0) p->promisc_set = true;
}

void promisc_off(port* p) {
  if (p->promisc_fd >= 0) ::close(p->promisc_fd);  // the kernel drops the membership
  p->promisc_fd = -1;
  if (p->promisc_set) (void)rte_eth_promiscuous_disable(p->port_id);
  p->promisc_set = false;
}

void release(port* p) {
  promisc_off(p);
  if (p->started) (void)rte_eth_dev_stop(p->port_id);
  p->started = false;
  if (p->own_vdev) {
    (void)rte_eth_dev_close(p->port_id);
    (void)rte_eal_hotplug_remove("vdev", p->vdev_name.c_str());
    p->own_vdev = false;
  }
  if (p->rx_ext) {
    // What the kernel still held when the port stopped goes back now; then
    // every mbuf of the pool must be in it (a closed device holds none).
    uint64_t held = 0;
    for (uint32_t i = 0; i < p->num_bufs; ++i)
      if (p->held[i]) {
        p->held[i] = 0;
        rte_pktmbuf_free(p->mbuf_of[i]);
        ++held;
      }
    const unsigned in_use = rte_mempool_in_use_count(p->rx_ext);
    log(log_level::info,
        "dpdk: {}: RX {} by reference, {} copied by the core, {} copied into the pool, {} dropped (no mbuf), "
        "{} cut (chained); TX {} by reference, {} by copy; {} held at close",
        port_text(p), p->rx_ref.load(), p->rx_core_copied.load(), p->rx_copied_in.load(), p->rx_no_mbuf.load(),
        p->rx_cut.load(), p->tx_ref_frames.load(), p->tx_copied.load(), held);
    // A device we did not close (port=N) may keep its RX descriptors' mbufs.
    if (in_use != 0 && !p->vdev_name.empty())
      log(log_level::warn, "dpdk: {}: {} mbuf(s) of the RX pool were not returned", port_text(p), in_use);
    if (p->bad_release)
      log(log_level::warn, "dpdk: {}: {} release(s) of RX buffers that were not held (ignored)", port_text(p),
          p->bad_release.load());
    rte_mempool_free(p->rx_ext);
    p->rx_ext = nullptr;
  }
  if (p->dma_mapped) (void)rte_dev_dma_unmap(p->info.device, p->pool_host, p->pool_iova, p->pool_bytes);
  p->dma_mapped = false;
  if (p->extmem) (void)rte_extmem_unregister(p->pool_host, p->pool_bytes);
  p->extmem = false;
  if (p->pool) rte_mempool_free(p->pool);
  p->pool = nullptr;
}

error configure(port* p) {
  if (int rc = rte_eth_dev_info_get(p->port_id, &p->info); rc != 0)
    return dpdk_fail(errno_status(-rc), -rc, fmt::format("dpdk: port {}: rte_eth_dev_info_get", p->port_id));
  char ifname[IF_NAMESIZE] = "";
  if (p->info.if_index != 0 && if_indextoname(p->info.if_index, ifname)) {
    p->kernel_ifindex = p->info.if_index;
    p->kernel_ifname = ifname;
  }
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
  p->rxd = static_cast<uint16_t>(p->descs);
  p->txd = static_cast<uint16_t>(p->descs);
  (void)rte_eth_dev_adjust_nb_rx_tx_desc(p->port_id, &p->rxd, &p->txd);
  const int socket = rte_eth_dev_socket_id(p->port_id);  // SOCKET_ID_ANY when unknown
  const unsigned n_mbufs = std::max(8191u, p->nqueues * (p->rxd + p->txd) + 2u * k_burst * p->nqueues + 1024u);
  const std::string pool_name = fmt::format("gnio_dpdk_{}", p->port_id);
  p->pool = rte_pktmbuf_pool_create(pool_name.c_str(), n_mbufs, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE, socket);
  if (!p->pool)
    return dpdk_fail(status::no_memory, rte_errno,
                     fmt::format("dpdk: port {}: creating a pool of {} mbufs (raise -m in eal=)", p->port_id, n_mbufs));
  return {};
}

// RX and TX queues, on the RX pool when there is one. Before the device starts.
error setup_queues(port* p) {
  if (p->queues_ready) return {};
  const int socket = rte_eth_dev_socket_id(p->port_id);
  rte_mempool* rx_pool = p->rx_ext ? p->rx_ext : p->pool;
  for (uint16_t q = 0; q < p->nqueues; ++q) {
    if (int rc = rte_eth_rx_queue_setup(p->port_id, q, p->rxd, socket, nullptr, rx_pool); rc != 0)
      return dpdk_fail(errno_status(-rc), -rc, fmt::format("dpdk: port {}: RX queue {} setup", p->port_id, q));
    if (int rc = rte_eth_tx_queue_setup(p->port_id, q, p->txd, socket, nullptr); rc != 0)
      return dpdk_fail(errno_status(-rc), -rc, fmt::format("dpdk: port {}: TX queue {} setup", p->port_id, q));
  }
  p->queues_ready = true;
  return {};
}

error dpdk_open(const devargs& a, void** priv) {
  if (auto e = check_keys(a, {"vdev", "port", "eal", "queues", "descs", "promisc", "by_ref", "mbufs"}); e) return e;
  auto p = std::make_unique<port>();
  std::string vdev, eal_args;
  if (auto e = get_string(a, "vdev", &vdev); e) return e;
  if (auto e = get_string(a, "eal", &eal_args); e) return e;
  uint64_t port_id = UINT64_MAX, queues = 1, descs = 1024, promisc = 1, by_ref = 1, mbufs = 0;
  if (auto e = get_u64(a, "port", 0, RTE_MAX_ETHPORTS - 1, &port_id); e) return e;
  if (auto e = get_u64(a, "queues", 1, k_max_queues, &queues); e) return e;
  if (auto e = get_u64(a, "descs", 64, 32768, &descs); e) return e;
  if (auto e = get_u64(a, "promisc", 0, 1, &promisc); e) return e;
  if (auto e = get_u64(a, "by_ref", 0, 1, &by_ref); e) return e;
  if (auto e = get_u64(a, "mbufs", 256, k_max_pool_mbufs, &mbufs); e) return e;
  if (vdev.empty() == (port_id == UINT64_MAX))
    return fail(status::bad_config,
                "dpdk: give exactly one of vdev=NAME;ARGS (a virtual device, ';' between its arguments, e.g. "
                "vdev=net_pcap0;rx_pcap=x.pcap) or port=N (a port EAL probed, e.g. with eal=-a 0000:ca:00.0)");
  p->nqueues = static_cast<uint32_t>(queues);
  p->descs = static_cast<uint32_t>(descs);
  p->promisc = promisc != 0;
  p->by_ref = by_ref != 0;
  p->want_mbufs = static_cast<uint32_t>(mbufs);
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

// What rte_pktmbuf_pool_create_extbuf builds (mbufs whose pinned external
// buffers are consecutive elt-byte pieces of one memory area), but on the
// "stack" mempool driver: a LIFO hands out the buffers freed last, still in
// cache, where the default ring cycles through the whole pool (a pool of
// 16383 buffers is 35 MiB: every frame a cache miss for the kernel). Null
// when the stack driver is missing; the caller falls back to DPDK's function.
struct extmem_init {
  const rte_pktmbuf_extmem* ext;
  size_t off = 0;
};

rte_mempool* create_lifo_extbuf_pool(const std::string& name, unsigned n, unsigned cache, int socket,
                                     const rte_pktmbuf_extmem& ext) {
  const unsigned elt_size = sizeof(rte_mbuf) + sizeof(rte_mbuf_ext_shared_info);
  rte_mempool* mp =
      rte_mempool_create_empty(name.c_str(), n, elt_size, cache, sizeof(rte_pktmbuf_pool_private), socket, 0);
  if (!mp) return nullptr;
  if (rte_mempool_set_ops_byname(mp, "stack", nullptr) != 0) {
    rte_mempool_free(mp);
    return nullptr;
  }
  rte_pktmbuf_pool_private priv{};
  priv.mbuf_data_room_size = ext.elt_size;
  priv.mbuf_priv_size = 0;
  priv.flags = RTE_PKTMBUF_POOL_F_PINNED_EXT_BUF;
  rte_pktmbuf_pool_init(mp, &priv);
  if (rte_mempool_populate_default(mp) < 0) {
    rte_mempool_free(mp);
    return nullptr;
  }
  extmem_init ctx{&ext};
  // As DPDK's __rte_pktmbuf_init_extmem, with one area.
  rte_mempool_obj_iter(
      mp,
      [](rte_mempool* m, void* arg, void* obj, unsigned) {
        auto& c = *static_cast<extmem_init*>(arg);
        auto* mb = static_cast<rte_mbuf*>(obj);
        std::memset(mb, 0, sizeof(rte_mbuf));
        mb->priv_size = 0;
        mb->buf_len = c.ext->elt_size;
        mb->buf_addr = static_cast<uint8_t*>(c.ext->buf_ptr) + c.off;
        rte_mbuf_iova_set(mb, c.ext->buf_iova == RTE_BAD_IOVA ? RTE_BAD_IOVA : c.ext->buf_iova + c.off);
        c.off += c.ext->elt_size;
        mb->data_off = std::min<uint16_t>(RTE_PKTMBUF_HEADROOM, mb->buf_len);
        mb->pool = m;
        mb->nb_segs = 1;
        mb->port = RTE_MBUF_PORT_INVALID;
        mb->ol_flags = RTE_MBUF_F_EXTERNAL;
        rte_mbuf_refcnt_set(mb, 1);
        mb->next = nullptr;
        auto* shinfo = reinterpret_cast<rte_mbuf_ext_shared_info*>(mb + 1);
        mb->shinfo = shinfo;
        // As DPDK's rte_pktmbuf_free_pinned_extmem: the last clone of the
        // mbuf (rte_pktmbuf_attach) gave the buffer back.
        shinfo->free_cb = [](void*, void* opaque) {
          auto* owner = static_cast<rte_mbuf*>(opaque);
          rte_mbuf_ext_refcnt_set(owner->shinfo, 1);
          owner->ol_flags = RTE_MBUF_F_EXTERNAL;
          owner->next = nullptr;
          owner->nb_segs = 1;
          rte_mbuf_raw_free(owner);
        };
        shinfo->fcb_opaque = mb;
        rte_mbuf_ext_refcnt_set(shinfo, 1);
      },
      &ctx);
  return mp;
}

// The RX pool: gnio's GPU-visible memory as the mbufs' data buffers.
error dpdk_rx_pool_setup(void* priv, const pool_alloc& alloc, rx_pool* out) {
  auto* p = static_cast<port*>(priv);
  *out = {};
  if (!p->by_ref) return {};  // by copy: no pool, the queues get areas of their own
  p->pci = p->info.device && std::strcmp(rte_bus_name(rte_dev_bus(p->info.device)), "pci") == 0;
  const bool pci = p->pci;
  if (rte_eal_iova_mode() != RTE_IOVA_VA && pci) {
    // The pool is page-granular anonymous memory: without an IOMMU (IOVA as
    // PA) its pages are not physically contiguous, so one IOVA per buffer
    // cannot be given. Receive by copy instead.
    log(log_level::warn,
        "dpdk: {}: EAL runs with IOVA as PA, so the device cannot DMA into gnio's RX pool; receiving by copy "
        "(bind the NIC to vfio-pci with an IOMMU, or pass --iova-mode=va in eal=)",
        port_text(p));
    p->by_ref = false;
    return {};
  }
  const uint32_t n =
      p->want_mbufs ? p->want_mbufs : std::max(16383u, p->nqueues * (2u * p->rxd + 2u * k_burst) + 8192u);
  const long page = sysconf(_SC_PAGESIZE);
  const size_t pg = page > 0 ? static_cast<size_t>(page) : 4096;
  p->elt = RTE_MBUF_DEFAULT_BUF_SIZE;  // RTE_PKTMBUF_HEADROOM + a 2048-byte data room; a multiple of 64
  p->pool_bytes = (uint64_t{n} * p->elt + pg - 1) / pg * pg;
  if (auto e = alloc.alloc(alloc.ctx, p->pool_bytes, &p->pool_host); e) return e;
  if (int rc = rte_extmem_register(p->pool_host, p->pool_bytes, nullptr, 0, pg); rc != 0)
    return dpdk_fail(errno_status(rte_errno), rte_errno,
                     fmt::format("dpdk: {}: registering the RX pool ({} bytes) with EAL", port_text(p), p->pool_bytes));
  p->extmem = true;
  p->pool_iova = rte_eal_iova_mode() == RTE_IOVA_VA ? reinterpret_cast<uintptr_t>(p->pool_host) : RTE_BAD_IOVA;
  if (p->pool_iova != RTE_BAD_IOVA && p->info.device) {
    // A PCI device behind vfio gets the pool into its IOMMU domain; virtual
    // devices (and drivers that map memory their own way) answer ENOTSUP.
    const int rc = rte_dev_dma_map(p->info.device, p->pool_host, p->pool_iova, p->pool_bytes);
    if (rc == 0) p->dma_mapped = true;
    else if (rc < 0 && rte_errno != ENOTSUP && pci)
      return dpdk_fail(
          errno_status(rte_errno), rte_errno,
          fmt::format("dpdk: {}: mapping the RX pool for the device's DMA (rte_dev_dma_map)", port_text(p)));
  }
  rte_pktmbuf_extmem ext{};
  ext.buf_ptr = p->pool_host;
  ext.buf_iova = p->pool_iova;
  ext.buf_len = p->pool_bytes;
  ext.elt_size = static_cast<uint16_t>(p->elt);
  // Each lcore's cache may hold 1.5 x its size; keep that a small part of a small pool.
  const unsigned cache = std::min(256u, n / 16);
  const std::string name = fmt::format("gnio_dpdk_rx_{}", p->port_id);
  const int socket = rte_eth_dev_socket_id(p->port_id);
  p->rx_ext = create_lifo_extbuf_pool(name, n, cache, socket, ext);
  if (!p->rx_ext) {
    log(log_level::debug, "dpdk: {}: no LIFO (stack) mempool ({}); the RX pool is a ring", port_text(p),
        rte_strerror(rte_errno));
    p->rx_ext =
        rte_pktmbuf_pool_create_extbuf(name.c_str(), n, cache, 0, static_cast<uint16_t>(p->elt), socket, &ext, 1);
  }
  if (!p->rx_ext)
    return dpdk_fail(status::no_memory, rte_errno,
                     fmt::format("dpdk: {}: creating the RX mempool of {} mbufs over gnio's pool (raise -m in eal=)",
                                 port_text(p), n));
  p->num_bufs = n;
  p->mbuf_of.assign(n, nullptr);
  p->held.assign(n, 0);
  uint32_t mapped = 0;
  struct iter_ctx {
    port* p;
    uint32_t* mapped;
  } ctx{p, &mapped};
  rte_mempool_obj_iter(
      p->rx_ext,
      [](rte_mempool*, void* arg, void* obj, unsigned) {
        auto& c = *static_cast<iter_ctx*>(arg);
        auto* m = static_cast<rte_mbuf*>(obj);
        const size_t off = static_cast<size_t>(static_cast<uint8_t*>(m->buf_addr) - c.p->pool_host);
        const size_t i = off / c.p->elt;
        if (off % c.p->elt == 0 && i < c.p->num_bufs && !c.p->mbuf_of[i]) {
          c.p->mbuf_of[i] = m;
          ++*c.mapped;
        }
      },
      &ctx);
  if (mapped != n)
    return fail(status::unexpected, "dpdk: {}: {} of {} RX mbufs have a buffer where gnio's pool expects one",
                port_text(p), mapped, n);
  if (auto e = setup_queues(p); e) return e;
  rte_mbuf_ext_refcnt_set(&p->tx_shinfo, 1);
  p->tx_shinfo.free_cb = [](void*, void*) {};
  p->tx_shinfo.fcb_opaque = nullptr;
  out->host = p->pool_host;
  out->bytes = p->pool_bytes;
  out->buf_bytes = p->elt - RTE_PKTMBUF_HEADROOM;
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

// Drivers known to be done with a TX mbuf when rte_eth_tx_burst returns (they
// copy it out and free it). Others qualify when they free on demand
// (rte_eth_tx_done_cleanup). net_ring, which passes mbufs on, does neither.
bool frees_tx_promptly(const port* p) {
  for (const char* d : {"net_pcap", "net_null", "net_af_packet", "net_tap"})
    if (std::strcmp(p->info.driver_name, d) == 0) return true;
  return rte_eth_tx_done_cleanup(p->port_id, 0, 0) >= 0;
}

error dpdk_start(void* priv) {
  auto* p = static_cast<port*>(priv);
  if (auto e = setup_queues(p); e) return e;
  if (int rc = rte_eth_dev_start(p->port_id); rc != 0)
    return dpdk_fail(errno_status(-rc), -rc, fmt::format("dpdk: port {}: rte_eth_dev_start", p->port_id));
  p->started = true;
  if (p->promisc) promisc_on(p);
  p->next_health_ns = 0;
  rte_eth_link link{};
  if (rte_eth_link_get_nowait(p->port_id, &link) == 0 && link.link_status == RTE_ETH_LINK_DOWN)
    log(log_level::warn, "dpdk: port {} ({}) link is down", p->port_id, p->info.driver_name);
  p->tx_ref = p->rx_ext && frees_tx_promptly(p);
  if (p->rx_ext)
    log(log_level::info, "dpdk: {}: RX by reference into gnio's pool ({} mbufs of {} bytes{}), TX from RX buffers {}",
        port_text(p), p->num_bufs, p->elt, p->dma_mapped && p->pci ? ", mapped for the device's DMA" : "",
        p->tx_ref ? "by reference" : "by copy (the driver may keep mbufs after sending)");
  else log(log_level::info, "dpdk: {}: RX and TX by copy (by_ref=0)", port_text(p));
  return {};
}

// When the engine took a burst: one clock read for all its frames, where the
// core would read the clock for each frame that comes without a timestamp.
uint64_t burst_ts_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

// The copy path (by_ref=0, or no pool).
status rx_by_copy(port* p, rx_lane& sink, uint32_t lane, uint32_t budget, uint32_t* produced) {
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
    const uint64_t ts = n ? burst_ts_ns() : 0;
    for (uint16_t i = 0; i < n; ++i) {
      rte_mbuf* m = bufs[i];
      const uint32_t len = rte_pktmbuf_pkt_len(m);
      const uint8_t* data = rte_pktmbuf_mtod(m, const uint8_t*);
      if (m->nb_segs > 1) {
        // A chained frame (jumbo): one contiguous copy for the engine.
        if (scratch.size() < len) scratch.resize(len);
        data = static_cast<const uint8_t*>(rte_pktmbuf_read(m, 0, len, scratch.data()));
      }
      (void)sink.deliver(data, len, len, ts);  // a full ring is counted by the core as missed
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

// An mbuf of the RX pool holding m's frame (cut to one buffer), for an mbuf
// from elsewhere: some drivers hand over mbufs of other pools (net_ring passes
// on what was sent to it). Null when the pool has no mbuf free.
rte_mbuf* copy_into_pool(port* p, rte_mbuf* m) {
  rte_mbuf* c = rte_pktmbuf_alloc(p->rx_ext);
  if (!c) return nullptr;
  const uint32_t n = std::min<uint32_t>(rte_pktmbuf_pkt_len(m), rte_pktmbuf_tailroom(c));
  const void* src = rte_pktmbuf_read(m, 0, n, rte_pktmbuf_mtod(c, uint8_t*));
  if (src != rte_pktmbuf_mtod(c, uint8_t*)) std::memcpy(rte_pktmbuf_mtod(c, uint8_t*), src, n);
  c->data_len = static_cast<uint16_t>(n);
  c->pkt_len = n;
  return c;
}

// A driver that strips a VLAN tag (net_af_packet: the kernel hands the tag
// over beside the frame) puts it back with rte_vlan_insert(), which refuses
// mbufs with an external buffer: the tag stays in vlan_tci and
// RTE_MBUF_F_RX_VLAN_STRIPPED stays set. Puts it back into the frame, in the
// buffer's headroom, so the kernel sees the frame as it was on the wire.
void reinsert_vlan(rte_mbuf* m) {
  if (!(m->ol_flags & RTE_MBUF_F_RX_VLAN_STRIPPED) || rte_pktmbuf_headroom(m) < 4 || m->data_len < 12) return;
  uint8_t* d = rte_pktmbuf_mtod(m, uint8_t*);
  std::memmove(d - 4, d, 12);  // the two MAC addresses
  d -= 4;
  d[12] = 0x81;
  d[13] = 0x00;
  d[14] = static_cast<uint8_t>(m->vlan_tci >> 8);
  d[15] = static_cast<uint8_t>(m->vlan_tci);
  m->data_off = static_cast<uint16_t>(m->data_off - 4);
  m->data_len = static_cast<uint16_t>(m->data_len + 4);
  m->pkt_len += 4;
  m->ol_flags &= ~(RTE_MBUF_F_RX_VLAN_STRIPPED | RTE_MBUF_F_RX_VLAN);
}

// The by-reference path: completions name the mbufs' data in the pool.
status rx_by_ref(port* p, rx_lane& sink, uint32_t lane, uint32_t budget, uint32_t* produced) {
  const uint32_t nl = static_cast<uint32_t>(p->lanes.size());
  const uint32_t mine = (p->nqueues - lane + nl - 1) / nl;
  uint32_t& rr = p->lanes[lane].rr;
  uint32_t total = 0;
  uint64_t bytes = 0, held = 0, core_copied = 0, copied_in = 0, no_mbuf = 0, cut = 0;
  rte_mbuf* bufs[k_burst];
  rte_mbuf* done[2 * k_burst];  // copied or dropped, and mbufs of other pools: free again at once
  for (uint32_t k = 0; k < mine && total < budget; ++k) {
    const uint16_t q = static_cast<uint16_t>(lane + ((rr + k) % mine) * nl);
    const uint16_t n = rte_eth_rx_burst(p->port_id, q, bufs, static_cast<uint16_t>(std::min(k_burst, budget - total)));
    const uint64_t ts = n ? burst_ts_ns() : 0;
    uint16_t nd = 0;
    for (uint16_t i = 0; i < n; ++i) {
      rte_mbuf* m = bufs[i];
      if (m->pool == p->rx_ext) reinsert_vlan(m);
      const uint32_t wire = rte_pktmbuf_pkt_len(m);
      bytes += wire;
      if (m->pool != p->rx_ext) {
        rte_mbuf* c = copy_into_pool(p, m);
        done[nd++] = m;
        if (!c) {
          ++no_mbuf;
          continue;
        }
        ++copied_in;
        m = c;
      } else if (m->nb_segs > 1) {
        // A chained frame (longer than one buffer): its first buffer goes by
        // reference, cut and flagged truncated as an area ring cuts a frame
        // to its max_frame; the rest of the chain is freed.
        rte_mbuf* rest = m->next;
        m->next = nullptr;
        m->nb_segs = 1;
        m->pkt_len = m->data_len;
        rte_pktmbuf_free(rest);
        ++cut;
      }
      const uint8_t* data = rte_pktmbuf_mtod(m, const uint8_t*);
      const auto off = static_cast<uint32_t>(data - p->pool_host);
      const uint32_t idx = off / p->elt;
      p->held[idx] = 1;
      const rx_lane::ref r = sink.deliver_ref(off, m->data_len, wire, ts);
      if (r == rx_lane::ref::held) {
        ++held;
        continue;
      }
      if (r == rx_lane::ref::copied) ++core_copied;
      p->held[idx] = 0;  // the core copied it, or dropped it (missed, unsteered): counted there
      done[nd++] = m;
    }
    if (nd) rte_pktmbuf_free_bulk(done, nd);
    total += n;
  }
  rr = (rr + 1) % mine;
  if (total) {
    bump(p->rx_frames, total);
    bump(p->rx_bytes, bytes);
    if (held) bump(p->rx_ref, held);
    if (core_copied) bump(p->rx_core_copied, core_copied);
    if (copied_in) bump(p->rx_copied_in, copied_in);
    if (no_mbuf) bump(p->rx_no_mbuf, no_mbuf);
    if (cut) bump(p->rx_cut, cut);
  }
  *produced = total;
  return total ? status::success : status::again;
}

// Whether the device is still there: a hot-unplugged one (a PCI NIC), or the
// kernel interface behind a virtual device removed or moved to another
// network namespace (net_af_packet just stops receiving; its link status
// never changes).
void check_health(port* p) {
  if (rte_eth_dev_is_removed(p->port_id)) {
    p->failure.set(fmt::format("dpdk: {} was removed; it receives nothing more", port_text(p)));
    return;
  }
  if (p->kernel_ifindex == 0) return;
  char name[IF_NAMESIZE];
  if (if_indextoname(p->kernel_ifindex, name)) return;
  const int e = errno;
  if (e != ENXIO && e != ENODEV) return;  // a failure to ask is not a missing interface
  p->failure.set(
      fmt::format("dpdk: {}: its interface {} (ifindex {}) was removed or moved to another network "
                  "namespace; it receives nothing more",
                  port_text(p), p->kernel_ifname, p->kernel_ifindex));
}

status dpdk_rx(void* priv, rx_lane& sink, uint32_t budget, uint32_t* produced) {
  const uint32_t lane = sink.index();
  auto* p = static_cast<port*>(priv);
  *produced = 0;
  if (!p->started || lane >= p->lanes.size()) {
    p->failure.set(fmt::format("dpdk: port {}: receive on a port that is not started", p->port_id));
    return status::bad_state;
  }
  if (p->failure.failed()) return status::io_failed;
  register_thread();
  const status s = p->rx_ext ? rx_by_ref(p, sink, lane, budget, produced) : rx_by_copy(p, sink, lane, budget, produced);
  if (lane == 0 && *produced == 0) {
    const uint64_t now = mono_coarse_ns();
    if (now >= p->next_health_ns) {
      p->next_health_ns = now + k_health_period_ns;
      check_health(p);
      if (p->failure.failed()) return status::io_failed;  // the engine logs it as the port's engine error
    }
  }
  return s;
}

void dpdk_rx_release(void* priv, uint32_t, const uint32_t* bufs, uint32_t n) {
  auto* p = static_cast<port*>(priv);
  register_thread();
  rte_mbuf* batch[64];
  uint32_t nb = 0;
  uint64_t bad = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t idx = bufs[i] / p->elt;
    if (idx >= p->num_bufs || !p->held[idx]) {
      ++bad;  // never free an mbuf twice
      continue;
    }
    p->held[idx] = 0;
    batch[nb++] = p->mbuf_of[idx];
    if (nb == 64) {
      rte_pktmbuf_free_bulk(batch, nb);
      nb = 0;
    }
  }
  if (nb) rte_pktmbuf_free_bulk(batch, nb);
  if (bad) bump(p->bad_release, bad);
}

error dpdk_set_lanes(void* priv, uint32_t lanes) {
  auto* p = static_cast<port*>(priv);
  if (lanes == 0 || lanes > p->nqueues)
    return fail(status::invalid_value, "dpdk: lanes={} needs queues={} or more: each lane polls its own DPDK queues",
                lanes, lanes);
  p->lanes.assign(lanes, {});
  return {};
}

// Waits until the device let go of every mbuf attached to RX buffers, so the
// kernel may reuse them when tx_burst returns. False after a second: the
// driver keeps them (TX by reference is then turned off for the port).
bool wait_tx_refs(port* p) {
  if (rte_mbuf_ext_refcnt_read(&p->tx_shinfo) == 1) return true;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  for (uint32_t spins = 0; rte_mbuf_ext_refcnt_read(&p->tx_shinfo) != 1; ++spins) {
    (void)rte_eth_tx_done_cleanup(p->port_id, 0, 0);
    if ((spins & 255) == 255 && std::chrono::steady_clock::now() > deadline) return false;
    rte_pause();
  }
  return true;
}

error dpdk_tx(void* priv, const tx_frame* frames, uint32_t n, uint32_t* sent) {
  auto* p = static_cast<port*>(priv);
  *sent = 0;
  if (!p->started) return fail(status::bad_state, "dpdk: port {}: transmit on a port that is not started", p->port_id);
  register_thread();
  uint32_t too_big = 0, i = 0;
  uint64_t bytes = 0, by_ref = 0;
  error stopped;  // why the rest of the frames (from i on) were not sent
  while (i < n && !stopped) {
    rte_mbuf* bufs[k_burst];
    uint32_t lens[k_burst];  // the driver may free an mbuf as soon as it takes it
    uint16_t m = 0;
    for (; i < n && m < k_burst; ++i) {
      const tx_frame& f = frames[i];
      if (f.len == 0 || f.len > k_max_frame) {
        ++too_big;
        continue;
      }
      rte_mbuf* b = rte_pktmbuf_alloc(p->pool);
      if (!b) {
        stopped = fail(status::no_memory, "dpdk: port {}: no free mbuf for TX", p->port_id);
        break;
      }
      if (p->tx_ref && f.pool_off != UINT32_MAX && uint64_t{f.pool_off} + f.len <= p->pool_bytes) {
        // In place from an RX buffer: the mbuf points at the frame. Its
        // reference on tx_shinfo goes when the driver frees it.
        rte_mbuf_ext_refcnt_update(&p->tx_shinfo, 1);
        const rte_iova_t iova = p->pool_iova == RTE_BAD_IOVA ? RTE_BAD_IOVA : p->pool_iova + f.pool_off;
        rte_pktmbuf_attach_extbuf(b, const_cast<uint8_t*>(f.data), iova, static_cast<uint16_t>(f.len), &p->tx_shinfo);
        b->data_len = static_cast<uint16_t>(f.len);
        b->pkt_len = f.len;
        ++by_ref;
      } else {
        std::memcpy(rte_pktmbuf_append(b, static_cast<uint16_t>(f.len)), f.data, f.len);
      }
      lens[m] = f.len;
      bufs[m++] = b;
    }
    uint16_t done = 0;
    // A full TX ring drains within microseconds; give it a bounded while.
    for (int tries = 0; done < m && tries < 10000; ++tries)
      done =
          static_cast<uint16_t>(done + rte_eth_tx_burst(p->port_id, 0, bufs + done, static_cast<uint16_t>(m - done)));
    for (uint16_t k = 0; k < done; ++k) bytes += lens[k];
    *sent += done;
    if (done < m) {
      rte_pktmbuf_free_bulk(bufs + done, m - done);
      stopped = fail(status::full, "dpdk: port {}: the TX ring stayed full", p->port_id);
    }
  }
  // The frames are the kernel's again when this returns: wait for the device
  // to let go of those sent from RX buffers.
  if (by_ref && !wait_tx_refs(p)) {
    p->tx_ref = false;
    log(log_level::error,
        "dpdk: {}: the driver kept frames sent from RX buffers for over a second; TX by reference is off "
        "for this port (frames are copied from now on)",
        port_text(p));
    if (!stopped) stopped = fail(status::time_out, "dpdk: {}: TX completions did not come back", port_text(p));
  }
  bump(p->tx_frames, *sent);
  bump(p->tx_bytes, bytes);
  bump(p->tx_ref_frames, by_ref);
  bump(p->tx_copied, *sent >= by_ref ? *sent - by_ref : 0);
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
  promisc_off(p);
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
  // Frames the NIC (or virtual device) dropped before the engine saw them
  // (no descriptor or no mbuf free) are drops; frames it received damaged,
  // and those no pool mbuf was free to copy into here, are errors.
  if (rte_eth_stats_get(p->port_id, &st) == 0) {
    c->rx_dropped = st.imissed + st.rx_nombuf;
    c->rx_errors = st.ierrors;
  }
  c->rx_errors += p->rx_no_mbuf.load(std::memory_order_relaxed);
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
        "                uses ',' (e.g. vdev=net_pcap0;rx_pcap=in.pcap;tx_pcap=out.pcap, "
        "vdev=net_af_packet0;iface=eth0);\n"
        "                removed when the port closes. The name must be unique in the process\n"
        "port=N          use ethdev port N that EAL probed instead (e.g. a PCI NIC: eal=-a 0000:ca:00.0 ...)\n"
        "eal=ARGS        EAL arguments, space separated, for the first dpdk port of the process (default\n"
        "                --no-huge -m 512 --no-pci --no-shconf --no-telemetry --log-level=4: virtual devices only)\n"
        "queues=N        DPDK RX and TX queues, 1..64 (default 1); with N > 1 the device's RSS spreads flows,\n"
        "                and the core option lanes=L (L <= N) polls them from L engine threads\n"
        "descs=N         descriptors per DPDK queue (default 1024, adjusted to the device's limits)\n"
        "promisc=0|1     promiscuous mode where the device has it (default 1); on a device with a kernel interface\n"
        "                (net_af_packet, net_af_xdp) a packet-socket membership the kernel drops when the process\n"
        "                ends, killed or not; on others DPDK's, turned off again at stop if the port turned it on\n"
        "by_ref=0|1      1 (default): the device receives into gnio's RX pool and completions name the mbufs'\n"
        "                data, no CPU copy; frames sent in place from RX buffers go out without a copy.\n"
        "                0: every frame is copied into the ring's area, and every TX frame into an mbuf\n"
        "mbufs=N         mbufs in the RX pool (by_ref=1), 256..1048576 (default: 16383, more with many queues\n"
        "                or descriptors); frames the kernel holds stay out of it until released\n"
        "Live: the stream never ends by itself (stop with --duration or Ctrl-C); if the device, or the kernel\n"
        "interface behind it, is removed, receive fails with io_failed and the stream ends. Frames the device dropped\n"
        "(imissed, no mbuf) count as rx_dropped, damaged ones (ierrors) as rx_errors. TX frames go out on\n"
        "queue 0, at most 2048 bytes each.\n",
    .open = dpdk_open,
    .get_caps = dpdk_caps,
    .rx_pool_setup = dpdk_rx_pool_setup,
    .rx_release = dpdk_rx_release,
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
