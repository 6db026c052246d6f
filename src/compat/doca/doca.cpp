// SPDX-License-Identifier: Apache-2.0
// gnio_doca: the DOCA-compatible API (include/gnio/compat/doca/) mapped onto
// gnio's public API. gnio is not affiliated with NVIDIA; this implements a
// compatible API written from public documentation and the public samples'
// call sites (docs/doca-compat.md). It uses only the public gnio API, never
// core internals, so everything it does a gnio program could do too.
#include <arpa/inet.h>
#include <dirent.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cctype>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "doca_argp.h"
#include "doca_buf.h"
#include "doca_buf_array.h"
#include "doca_buf_inventory.h"
#include "doca_buf_pool.h"
#include "doca_ctx.h"
#include "doca_dev.h"
#include "doca_error.h"
#include "doca_eth_rxq.h"
#include "doca_eth_rxq_gpu_data_path.h"
#include "doca_eth_txq.h"
#include "doca_eth_txq_gpu_data_path.h"
#include "doca_flow.h"
#include "doca_gpunetio.h"
#include "doca_gpunetio_dev_eth_rxq.cuh"
#include "doca_gpunetio_dev_buf.cuh"
#include "doca_gpunetio_dev_eth_txq.cuh"
#include "doca_gpunetio_dev_sem.cuh"
#include "doca_log.h"
#include "doca_mmap.h"
#include "doca_pe.h"
#include "doca_version.h"
#include "gnio/gpu.hpp"
#include "gnio/log.hpp"
#include "gnio/port.hpp"
#include "gnio/semaphore.hpp"
#include "gnio/status.hpp"

// --- Objects
// ------------------------------------------------------------------ Opaque to
// DOCA programs: their layout is gnio's own.

struct doca_gpu {
  gnio::gpu g;
  // Aligned address handed out -> the block it lies in.
  std::map<void*, gnio::mem_block> blocks;
};

struct doca_devinfo {
  std::string pci;      // "0000:ca:00.0"
  std::string devargs;  // the gnio device string
  std::string iface;    // Linux interface name, when sysfs named one
  bool from_sysfs = false;
};

struct doca_eth_rxq;
struct doca_eth_txq;
struct doca_flow_port;
struct doca_mmap;

struct doca_dev {
  doca_devinfo info;
  std::optional<gnio::port> port;  // opened when the first queue's context starts
  bool port_started = false;
  std::vector<doca_eth_rxq*> rxqs;
  std::vector<doca_eth_txq*> txqs;
  // Started mmaps that name this device: registered with the port when it
  // opens (or at once when it is open and not started).
  std::vector<doca_mmap*> mmaps;
  doca_flow_port* flow = nullptr;
};

struct doca_ctx {
  doca_eth_rxq* rxq = nullptr;  // the queue behind the context: one of these
  doca_eth_txq* txq = nullptr;
  doca_gpu* gpu = nullptr;  // the data path's GPU; null: CPU data path
  doca_ctx_states state = DOCA_CTX_STATE_IDLE;
  doca_data user{};
};

struct doca_mmap {
  void* addr = nullptr;
  size_t len = 0;
  uint32_t access = DOCA_ACCESS_FLAG_LOCAL_READ_ONLY;
  bool started = false;
  std::vector<doca_dev*> devs;
  std::vector<doca_dev*> registered;  // ports the range is registered with
  uint32_t mkey = 0;                  // handed out by doca_mmap_get_mkey
};

struct doca_eth_rxq {
  doca_ctx ctx;
  doca_dev* dev = nullptr;
  uint32_t max_burst = 0;
  uint32_t max_pkt_bytes = 0;
  doca_eth_rxq_type type = DOCA_ETH_RXQ_TYPE_REGULAR;
  doca_mmap* mmap = nullptr;
  uint16_t flow_queue_id = 0;
  std::optional<uint32_t> gnio_id;  // the gnio RX queue, once the context started
  gnio::mem_block handle;           // a doca_gpu_eth_rxq in executor memory
};

struct doca_eth_txq {
  doca_ctx ctx;
  doca_dev* dev = nullptr;
  uint32_t num_descs = 0;
  bool l3_csum = false, l4_csum = false;  // recorded; gnio computes none
  bool wait_on_time = false;
  uint16_t queue_id = 0;
  std::optional<uint32_t> gnio_id;  // the gnio TX queue, once the context started
  gnio::mem_block handle;           // doca_gpu_eth_txq, counters, notification ring
};

struct doca_flow_cfg {
  uint16_t pipe_queues = 1;
};
struct doca_flow_port_cfg {
  uint16_t port_id = 0;
  doca_dev* dev = nullptr;
};

struct doca_flow_pipe;
struct doca_flow_pipe_entry {
  doca_flow_pipe* pipe = nullptr;
  uint32_t classes = 0;  // rx_class bits the match admits
  uint32_t priority = 0;
  bool has_fwd = false;
  doca_flow_fwd fwd{};
  std::vector<uint16_t> rss_queues;
};

struct doca_flow_port {
  doca_dev* dev = nullptr;
  std::vector<doca_flow_pipe*> pipes;
  bool dirty = false;  // entries added since steering was last applied
};

struct doca_flow_pipe_cfg {
  doca_flow_port* port = nullptr;
  std::string name;
  doca_flow_pipe_type type = DOCA_FLOW_PIPE_BASIC;
  bool is_root = false;
  bool has_match = false;
  doca_flow_match match{};
};

struct doca_flow_pipe {
  doca_flow_port* port = nullptr;
  std::string name;
  doca_flow_pipe_type type = DOCA_FLOW_PIPE_BASIC;
  bool is_root = false;
  uint32_t classes = 0;  // what the pipe's own match admits
  doca_flow_fwd fwd{}, miss{};
  std::vector<uint16_t> fwd_queues, miss_queues;
  std::vector<std::unique_ptr<doca_flow_pipe_entry>> entries;
};

struct doca_pe {
  int unused = 0;
};

struct doca_gpu_semaphore {
  doca_gpu* gpu = nullptr;
  doca_gpu_mem_type mem_type = DOCA_GPU_MEM_TYPE_CPU_GPU;  // recorded only
  doca_gpu_mem_type custom_mem_type = DOCA_GPU_MEM_TYPE_CPU_GPU;
  uint32_t num_items = 0;
  uint32_t custom_bytes = 0;  // as asked; each record is rounded up to 16
  gnio::semaphore sem;        // valid while started
  gnio::device::sem host;     // the CPU's view of sem
  gnio::mem_block handle;     // a doca_gpu_semaphore_gpu in executor memory
};

struct doca_buf_pool;
struct doca_buf {
  doca_buf_pool* pool = nullptr;
  uint8_t* head = nullptr;  // the element's first byte
  size_t bytes = 0;         // the element's size
  uint8_t* data = nullptr;  // within [head, head + bytes]
  size_t data_len = 0;
  uint16_t refcount = 0;  // 0: in the pool
};

struct doca_buf_pool {
  size_t num_elem = 0, elem_bytes = 0;
  const doca_mmap* mmap = nullptr;
  std::mutex mu;  // guards everything below: CPU threads share a pool
  bool started = false;
  std::vector<doca_buf> bufs;
  std::vector<doca_buf*> free_list;
};

struct doca_buf_arr {
  size_t num_elem = 0;
  doca_mmap* mmap = nullptr;
  size_t elem_bytes = 0;
  uint64_t start_offset = 0;
  doca_gpu* gpu = nullptr;
  bool started = false;
  gnio::mem_block handle;  // doca_gpu_buf_arr and its element table, executor memory
};

namespace {

using gnio::status;

doca_error_t to_doca(status s) { return static_cast<doca_error_t>(static_cast<int32_t>(s)); }

// Logs e (naming the DOCA call) and returns its DOCA code.
doca_error_t fail(const char* call, const gnio::error& e) {
  gnio::log_write(gnio::log_level::error, std::string("doca compat: ") + call + ": " + e.what());
  return to_doca(e.code());
}
doca_error_t fail(const char* call, doca_error_t code, const std::string& why) {
  gnio::log_write(gnio::log_level::error, std::string("doca compat: ") + call + ": " + why);
  return code;
}

std::mutex g_mu;  // guards the flow library state and the log levels below

// Every open doca_gpu, so an mmap's range can be traced to the allocation it
// lies in (for the CPU's view of it). Guarded by g_gpus_mu.
std::mutex g_gpus_mu;
std::vector<doca_gpu*> g_gpus;

// --- PCIe addresses
// -----------------------------------------------------------

bool hex_run(std::string_view s, size_t n) {
  if (s.size() != n) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; });
}

// "ca:00.0" or "0000:ca:00.0" -> "0000:ca:00.0"; nullopt when malformed.
std::optional<std::string> normalize_pci(std::string_view a) {
  std::string dom = "0000";
  if (a.size() == 12) {
    if (a[4] != ':' || !hex_run(a.substr(0, 4), 4)) return std::nullopt;
    dom = std::string(a.substr(0, 4));
    a.remove_prefix(5);
  }
  if (a.size() != 7 || a[2] != ':' || a[5] != '.' || !hex_run(a.substr(0, 2), 2) || !hex_run(a.substr(3, 2), 2) ||
      a[6] < '0' || a[6] > '7')
    return std::nullopt;
  std::string out = dom + ":" + std::string(a);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The devices a DOCA program can open: GNIO_DOCA_DEVICES first, then every PCI
// network function sysfs shows (its first interface).
std::vector<doca_devinfo> discover(doca_error_t& err) {
  std::vector<doca_devinfo> out;
  err = DOCA_SUCCESS;
  if (const char* env = std::getenv("GNIO_DOCA_DEVICES"); env && *env) {
    std::string_view rest(env);
    while (!rest.empty()) {
      const size_t semi = rest.find(';');
      std::string_view item = rest.substr(0, semi);
      rest = semi == std::string_view::npos ? std::string_view{} : rest.substr(semi + 1);
      if (item.empty()) continue;
      const size_t eq = item.find('=');
      auto pci = eq == std::string_view::npos ? std::nullopt : normalize_pci(item.substr(0, eq));
      if (!pci || eq + 1 >= item.size()) {
        err = fail("doca_devinfo_create_list", DOCA_ERROR_INVALID_VALUE,
                   "GNIO_DOCA_DEVICES entry '" + std::string(item) +
                       "' is not <PCIe address>=<gnio device string> (e.g. "
                       "ca:00.0=pcap:file=x.pcap)");
        return {};
      }
      doca_devinfo d;
      d.pci = *pci;
      d.devargs = std::string(item.substr(eq + 1));
      out.push_back(std::move(d));
    }
  }
  const char* root = std::getenv("GNIO_DOCA_SYSFS");  // tests point this at a fake tree
  const std::string base = std::string(root ? root : "/sys") + "/bus/pci/devices";
  if (DIR* dir = opendir(base.c_str())) {
    std::vector<std::string> names;
    while (dirent* e = readdir(dir))
      if (e->d_name[0] != '.') names.emplace_back(e->d_name);
    closedir(dir);
    std::sort(names.begin(), names.end());
    for (const auto& n : names) {
      auto pci = normalize_pci(n);
      if (!pci) continue;
      if (std::any_of(out.begin(), out.end(), [&](const doca_devinfo& d) { return d.pci == *pci; })) continue;
      DIR* net = opendir((base + "/" + n + "/net").c_str());
      if (!net) continue;
      std::string iface;
      while (dirent* e = readdir(net))
        if (e->d_name[0] != '.' && (iface.empty() || iface > e->d_name)) iface = e->d_name;
      closedir(net);
      if (iface.empty()) continue;
      doca_devinfo d;
      d.pci = *pci;
      d.iface = iface;
      d.devargs = "af_xdp:if=" + iface;
      d.from_sysfs = true;
      out.push_back(std::move(d));
    }
  }
  return out;
}

bool copy_name(const std::string& s, char* out, uint32_t size) {
  if (s.size() + 1 > size) return false;
  std::memcpy(out, s.c_str(), s.size() + 1);
  return true;
}

// --- Ports and steering
// ---------------------------------------------------------

constexpr uint32_t bit(gnio::device::rx_class c) { return 1u << c; }
constexpr uint32_t k_all_classes = (1u << (gnio::device::rx_class_arp + 1)) - 1;
constexpr uint32_t k_ip_classes = k_all_classes & ~bit(gnio::device::rx_class_arp);
constexpr uint32_t k_udp = bit(gnio::device::rx_class_udp);
constexpr uint32_t k_tcp = bit(gnio::device::rx_class_tcp) | bit(gnio::device::rx_class_tcp_ctrl);
constexpr uint32_t k_icmp = bit(gnio::device::rx_class_icmp);
constexpr uint32_t k_other = bit(gnio::device::rx_class_other);

bool all_zero(const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  return std::all_of(b, b + n, [](uint8_t x) { return x == 0; });
}

// The packet classes a match admits; NOT_SUPPORTED when it names a field
// gnio's class steering cannot test.
doca_error_t classes_of(const doca_flow_match* m, uint32_t& out, std::string& why) {
  out = k_all_classes;
  if (!m) return DOCA_SUCCESS;
  const auto& o = m->outer;
  if (!all_zero(o.eth.src_mac, 6) || !all_zero(o.eth.dst_mac, 6) || o.ip4.src_ip || o.ip4.dst_ip || o.ip4.ttl ||
      o.ip4.dscp_ecn || o.udp.l4_port.src_port || o.udp.l4_port.dst_port || o.tcp.l4_port.src_port ||
      o.tcp.l4_port.dst_port || o.tcp.flags) {
    why =
        "gnio steers by protocol class only; addresses, ports, TTL, DSCP and "
        "TCP flags cannot be matched";
    return DOCA_ERROR_NOT_SUPPORTED;
  }
  auto l4 = [&](uint32_t c) { out &= c; };
  switch (m->parser_meta.outer_l3_type) {
    case DOCA_FLOW_L3_META_NONE: break;
    case DOCA_FLOW_L3_META_IPV4:
    case DOCA_FLOW_L3_META_IPV6: out &= k_ip_classes; break;
    default: why = "unknown parser_meta.outer_l3_type"; return DOCA_ERROR_INVALID_VALUE;
  }
  switch (m->parser_meta.outer_l4_type) {
    case DOCA_FLOW_L4_META_NONE: break;
    case DOCA_FLOW_L4_META_UDP: l4(k_udp); break;
    case DOCA_FLOW_L4_META_TCP: l4(k_tcp); break;
    case DOCA_FLOW_L4_META_ICMP: l4(k_icmp); break;
    case DOCA_FLOW_L4_META_ESP: why = "ESP has no gnio packet class"; return DOCA_ERROR_NOT_SUPPORTED;
    default: why = "unknown parser_meta.outer_l4_type"; return DOCA_ERROR_INVALID_VALUE;
  }
  const uint16_t et = ntohs(o.eth.type);
  if (et == DOCA_FLOW_ETHER_TYPE_IPV4 || et == DOCA_FLOW_ETHER_TYPE_IPV6) out &= k_ip_classes;
  else if (et == DOCA_FLOW_ETHER_TYPE_ARP) out &= bit(gnio::device::rx_class_arp);
  else if (et != 0) out &= k_other;
  switch (o.l3_type) {
    case DOCA_FLOW_L3_TYPE_NONE: break;
    case DOCA_FLOW_L3_TYPE_IP4:
    case DOCA_FLOW_L3_TYPE_IP6: out &= k_ip_classes; break;
    default: why = "unknown outer.l3_type"; return DOCA_ERROR_INVALID_VALUE;
  }
  switch (o.l4_type_ext) {
    case DOCA_FLOW_L4_TYPE_EXT_NONE: break;
    case DOCA_FLOW_L4_TYPE_EXT_UDP: l4(k_udp); break;
    case DOCA_FLOW_L4_TYPE_EXT_TCP: l4(k_tcp); break;
    case DOCA_FLOW_L4_TYPE_EXT_ICMP:
    case DOCA_FLOW_L4_TYPE_EXT_ICMP6: l4(k_icmp); break;
    default: why = "unknown outer.l4_type_ext"; return DOCA_ERROR_INVALID_VALUE;
  }
  switch (o.ip4.next_proto) {
    case 0: break;
    case 17: l4(k_udp); break;
    case 6: l4(k_tcp); break;
    case 1: l4(k_icmp); break;
    default: l4(k_other); break;
  }
  return DOCA_SUCCESS;
}

doca_error_t check_fwd(const doca_flow_fwd* f, std::vector<uint16_t>& queues, std::string& why) {
  queues.clear();
  if (!f) return DOCA_SUCCESS;
  switch (f->type) {
    case DOCA_FLOW_FWD_NONE:
    case DOCA_FLOW_FWD_DROP: return DOCA_SUCCESS;
    case DOCA_FLOW_FWD_PIPE:
      if (!f->next_pipe) {
        why = "DOCA_FLOW_FWD_PIPE without next_pipe";
        return DOCA_ERROR_INVALID_VALUE;
      }
      return DOCA_SUCCESS;
    case DOCA_FLOW_FWD_RSS:
      if (f->rss.nr_queues <= 0 || !f->rss.queues_array) {
        why = "RSS forwarding with no queues";
        return DOCA_ERROR_INVALID_VALUE;
      }
      queues.assign(f->rss.queues_array, f->rss.queues_array + f->rss.nr_queues);
      return DOCA_SUCCESS;
    default: why = "only RSS, PIPE and DROP forwarding are supported"; return DOCA_ERROR_NOT_SUPPORTED;
  }
}

// Steering groups per class, filled first-match-wins while walking pipes.
struct steering_plan {
  std::optional<std::vector<uint32_t>> group[gnio::device::rx_class_arp + 1];
};

doca_error_t apply_fwd(doca_dev& dev, const doca_flow_fwd& f, const std::vector<uint16_t>& qs, uint32_t classes,
                       steering_plan& plan, int depth, std::string& why);

doca_error_t walk(doca_dev& dev, const doca_flow_pipe& p, uint32_t classes, steering_plan& plan, int depth,
                  std::string& why) {
  if (depth > 8) {
    why = "pipes forward to each other in a loop deeper than 8";
    return DOCA_ERROR_NOT_SUPPORTED;
  }
  classes &= p.classes;
  std::vector<const doca_flow_pipe_entry*> es;
  for (const auto& e : p.entries) es.push_back(e.get());
  std::stable_sort(es.begin(), es.end(), [](auto* a, auto* b) { return a->priority < b->priority; });
  for (const auto* e : es) {
    const auto& f = e->has_fwd ? e->fwd : p.fwd;
    const auto& qs = e->has_fwd ? e->rss_queues : p.fwd_queues;
    if (auto r = apply_fwd(dev, f, qs, classes & e->classes, plan, depth, why); r != DOCA_SUCCESS) return r;
  }
  return apply_fwd(dev, p.miss, p.miss_queues, classes, plan, depth, why);
}

doca_error_t apply_fwd(doca_dev& dev, const doca_flow_fwd& f, const std::vector<uint16_t>& qs, uint32_t classes,
                       steering_plan& plan, int depth, std::string& why) {
  if (f.type == DOCA_FLOW_FWD_PIPE) return walk(dev, *f.next_pipe, classes, plan, depth + 1, why);
  if (f.type != DOCA_FLOW_FWD_RSS && f.type != DOCA_FLOW_FWD_DROP) return DOCA_SUCCESS;
  std::vector<uint32_t> ids;
  for (uint16_t q : qs) {
    auto it = std::find_if(dev.rxqs.begin(), dev.rxqs.end(), [&](doca_eth_rxq* r) { return r->flow_queue_id == q; });
    if (it == dev.rxqs.end() || !(*it)->gnio_id) {
      why = "RSS names queue " + std::to_string(q) + ", which no started RX queue of this device has";
      return DOCA_ERROR_INVALID_VALUE;
    }
    ids.push_back(*(*it)->gnio_id);
  }
  for (uint32_t c = 0; c <= gnio::device::rx_class_arp; ++c)
    if ((classes >> c & 1u) && !plan.group[c]) plan.group[c] = ids;
  return DOCA_SUCCESS;
}

// The gnio block for an mmap's range: inside a doca_gpu_mem_alloc allocation
// it carries that allocation's CPU address and type; other memory is taken
// as executor memory the CPU cannot read (the engine copies from it).
gnio::mem_block block_of(const doca_mmap& m) {
  gnio::mem_block b;
  b.exec_ptr = m.addr;
  b.bytes = m.len;
  b.type = gnio::mem_type::gpu;
  const auto lo = reinterpret_cast<uintptr_t>(m.addr);
  std::lock_guard lk(g_gpus_mu);
  for (auto* g : g_gpus)
    for (auto& [p, blk] : g->blocks) {
      const auto base = reinterpret_cast<uintptr_t>(blk.exec_ptr);
      if (lo >= base && lo + m.len <= base + blk.bytes) {
        b.type = blk.type;
        if (blk.host_ptr) b.host_ptr = static_cast<uint8_t*>(blk.host_ptr) + (lo - base);
        return b;
      }
    }
  return b;
}

// Registers the started mmap m with dev's port (open, not started) so
// kernels may send from it.
doca_error_t register_mmap(doca_dev& dev, doca_mmap& m, const char* call) {
  if (std::find(m.registered.begin(), m.registered.end(), &dev) != m.registered.end()) return DOCA_SUCCESS;
  if (auto e = dev.port->register_memory(block_of(m)); e) return fail(call, e);
  m.registered.push_back(&dev);
  return DOCA_SUCCESS;
}

// Opens the device's gnio port on first use: the configured string, or for a
// sysfs interface AF_XDP and then AF_PACKET.
doca_error_t open_port(doca_dev& dev, doca_gpu& gpu) {
  if (dev.port) return DOCA_SUCCESS;
  auto p = gnio::port::open(gpu.g, dev.info.devargs);
  if (!p && dev.info.from_sysfs) {
    gnio::log_write(gnio::log_level::info, "doca compat: " + dev.info.devargs + ": " + p.err().what() +
                                               "; trying af_packet:if=" + dev.info.iface);
    p = gnio::port::open(gpu.g, "af_packet:if=" + dev.info.iface);
  }
  if (!p) return fail("doca_ctx_start", p.err());
  dev.port.emplace(std::move(*p));
  for (auto* m : dev.mmaps)
    if (auto r = register_mmap(dev, *m, "doca_ctx_start"); r != DOCA_SUCCESS) return r;
  return DOCA_SUCCESS;
}

// Starts the device's port once it can. A device with RX queues: at once
// without DOCA Flow, else when a root pipe exists (its steering is applied
// first). A send-only device: once a TX queue runs and memory to send from
// is registered (gnio registers memory only before a port starts, and DOCA
// programs map their send buffers after starting the queue).
doca_error_t try_start(doca_dev& dev, const char* call) {
  if (!dev.port || dev.port_started) return DOCA_SUCCESS;
  if (dev.rxqs.empty()) {
    const bool running =
        std::any_of(dev.txqs.begin(), dev.txqs.end(), [](const doca_eth_txq* q) { return q->gnio_id.has_value(); });
    const bool mapped = std::any_of(dev.mmaps.begin(), dev.mmaps.end(), [&](doca_mmap* m) {
      return std::find(m->registered.begin(), m->registered.end(), &dev) != m->registered.end();
    });
    if (!running || !mapped) return DOCA_SUCCESS;
  } else if (dev.flow) {
    const doca_flow_pipe* root = nullptr;
    for (auto* p : dev.flow->pipes)
      if (p->is_root) root = p;
    if (!root) return DOCA_SUCCESS;
    steering_plan plan;
    std::string why;
    if (auto r = walk(dev, *root, k_all_classes, plan, 0, why); r != DOCA_SUCCESS) return fail(call, r, why);
    std::vector<gnio::steering_rule> rules;
    for (uint32_t c = 0; c <= gnio::device::rx_class_arp; ++c) {
      gnio::steering_rule r;
      r.cls = static_cast<gnio::device::rx_class>(c);
      // A class no entry forwards is dropped: an empty group (gnio counts the
      // frames as unsteered).
      if (plan.group[c]) r.queues = *plan.group[c];
      rules.push_back(std::move(r));
    }
    if (auto e = dev.port->set_steering(std::move(rules)); e) return fail(call, e);
    dev.flow->dirty = false;
  }
  if (auto e = dev.port->start(); e) return fail(call, e);
  dev.port_started = true;
  return DOCA_SUCCESS;
}

// --- argp
// -----------------------------------------------------------------------

struct argp_state {
  void* config = nullptr;
  std::string program;
  std::vector<std::unique_ptr<doca_argp_param>> params;
  doca_argp_validation_cb_t validate = nullptr;
  bool initialized = false;
};
argp_state g_argp;

}  // namespace

struct doca_argp_param {
  std::string short_name, long_name, arguments, description;
  doca_argp_param_cb_t callback = nullptr;
  doca_argp_type type = DOCA_ARGP_TYPE_UNKNOWN;
  bool mandatory = false;
  bool registered = false;
  bool seen = false;
};

struct doca_log_backend {
  FILE* file = nullptr;
  uint32_t level = DOCA_LOG_LEVEL_INFO;
};

namespace {
uint32_t g_log_level = DOCA_LOG_LEVEL_INFO;
std::vector<std::unique_ptr<doca_log_backend>> g_log_backends;
}  // namespace

extern "C" {

// --- Errors, version, log
// -------------------------------------------------------

const char* doca_error_get_name(doca_error_t error) {
  static std::string names[gnio::num_statuses];
  static std::once_flag once;
  std::call_once(once, [] {
    for (int32_t i = 0; i < gnio::num_statuses; ++i) {
      std::string n(gnio::to_string(static_cast<status>(i)));
      for (auto& c : n) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      names[i] = i == 0 ? "DOCA_SUCCESS" : "DOCA_ERROR_" + n;
    }
  });
  const auto i = static_cast<int32_t>(error);
  return i >= 0 && i < gnio::num_statuses ? names[i].c_str() : "DOCA_ERROR_UNKNOWN";
}

const char* doca_error_get_descr(doca_error_t error) {
  const auto i = static_cast<int32_t>(error);
  if (i < 0 || i >= gnio::num_statuses) return "unknown error";
  // describe() returns views of static strings that end in NUL.
  return gnio::describe(static_cast<status>(i)).meaning.data();
}

const char* doca_version(void) { return DOCA_VER_STRING " (gnio " GNIO_VERSION_STRING ")"; }
const char* doca_version_runtime(void) { return DOCA_VER_STRING " (gnio " GNIO_VERSION_STRING ")"; }

doca_error_t doca_log_backend_create_standard(void) { return DOCA_SUCCESS; }

doca_error_t doca_log_backend_create_with_file(FILE* fptr, doca_log_backend** backend) {
  if (!fptr || !backend) return DOCA_ERROR_INVALID_VALUE;
  std::lock_guard lk(g_mu);
  g_log_backends.push_back(std::make_unique<doca_log_backend>());
  g_log_backends.back()->file = fptr;
  *backend = g_log_backends.back().get();
  return DOCA_SUCCESS;
}

doca_error_t doca_log_backend_create_with_file_sdk(FILE* fptr, doca_log_backend** backend) {
  return doca_log_backend_create_with_file(fptr, backend);
}

// The SDK's own messages are gnio's log: its level follows.
doca_error_t doca_log_backend_set_sdk_level(doca_log_backend* backend, uint32_t level) {
  if (!backend || level < DOCA_LOG_LEVEL_DISABLE || level > DOCA_LOG_LEVEL_TRACE) return DOCA_ERROR_INVALID_VALUE;
  backend->level = level;
  gnio::log_level l = gnio::log_level::off;
  if (level >= DOCA_LOG_LEVEL_TRACE) l = gnio::log_level::trace;
  else if (level >= DOCA_LOG_LEVEL_DEBUG) l = gnio::log_level::debug;
  else if (level >= DOCA_LOG_LEVEL_INFO) l = gnio::log_level::info;
  else if (level >= DOCA_LOG_LEVEL_WARNING) l = gnio::log_level::warn;
  else if (level >= DOCA_LOG_LEVEL_CRIT) l = gnio::log_level::error;
  gnio::set_log_level(l);
  return DOCA_SUCCESS;
}

doca_error_t doca_log_backend_set_level_lower_limit(doca_log_backend* backend, uint32_t level) {
  if (!backend) return DOCA_ERROR_INVALID_VALUE;
  backend->level = level;
  return DOCA_SUCCESS;
}

doca_error_t doca_log_level_set_global_lower_limit(uint32_t level) {
  if (level < DOCA_LOG_LEVEL_DISABLE || level > DOCA_LOG_LEVEL_TRACE) return DOCA_ERROR_INVALID_VALUE;
  std::lock_guard lk(g_mu);
  g_log_level = level;
  return DOCA_SUCCESS;
}

uint32_t doca_log_level_get_global_lower_limit(void) {
  std::lock_guard lk(g_mu);
  return g_log_level;
}

void gnio_doca_log(uint32_t level, const char* source, int line, const char* func, const char* format, ...) {
  {
    std::lock_guard lk(g_mu);
    if (level > g_log_level) return;
  }
  const char* name = level <= DOCA_LOG_LEVEL_CRIT      ? "CRIT"
                     : level <= DOCA_LOG_LEVEL_ERROR   ? "ERR"
                     : level <= DOCA_LOG_LEVEL_WARNING ? "WARN"
                     : level <= DOCA_LOG_LEVEL_INFO    ? "INFO"
                     : level <= DOCA_LOG_LEVEL_DEBUG   ? "DBG"
                                                       : "TRC";
  char msg[2048];
  va_list ap;
  va_start(ap, format);
  std::vsnprintf(msg, sizeof msg, format, ap);
  va_end(ap);
  std::fprintf(stderr, "[%s][%s:%d][%s] %s\n", name, source ? source : "?", line, func ? func : "?", msg);
}

// --- argp
// -------------------------------------------------------------------------

doca_error_t doca_argp_init(const char* program_name, void* program_config) {
  if (g_argp.initialized) return DOCA_ERROR_BAD_STATE;
  g_argp = argp_state{};
  g_argp.config = program_config;
  g_argp.program = program_name ? program_name : "";
  g_argp.initialized = true;
  return DOCA_SUCCESS;
}

doca_error_t doca_argp_param_create(doca_argp_param** param) {
  if (!param) return DOCA_ERROR_INVALID_VALUE;
  if (!g_argp.initialized) return DOCA_ERROR_BAD_STATE;
  g_argp.params.push_back(std::make_unique<doca_argp_param>());
  *param = g_argp.params.back().get();
  return DOCA_SUCCESS;
}

void doca_argp_param_set_short_name(doca_argp_param* p, const char* name) {
  if (p && name) p->short_name = name;
}
void doca_argp_param_set_long_name(doca_argp_param* p, const char* name) {
  if (p && name) p->long_name = name;
}
void doca_argp_param_set_arguments(doca_argp_param* p, const char* a) {
  if (p && a) p->arguments = a;
}
void doca_argp_param_set_description(doca_argp_param* p, const char* d) {
  if (p && d) p->description = d;
}
void doca_argp_param_set_callback(doca_argp_param* p, doca_argp_param_cb_t cb) {
  if (p) p->callback = cb;
}
void doca_argp_param_set_type(doca_argp_param* p, doca_argp_type t) {
  if (p) p->type = t;
}
void doca_argp_param_set_mandatory(doca_argp_param* p) {
  if (p) p->mandatory = true;
}
void doca_argp_param_set_cli_only(doca_argp_param*) {}
void doca_argp_param_set_multiplicity(doca_argp_param*) {}

doca_error_t doca_argp_register_param(doca_argp_param* p) {
  if (!p || !p->callback || (p->short_name.empty() && p->long_name.empty())) return DOCA_ERROR_INVALID_VALUE;
  if (p->type != DOCA_ARGP_TYPE_STRING && p->type != DOCA_ARGP_TYPE_INT && p->type != DOCA_ARGP_TYPE_BOOLEAN)
    return DOCA_ERROR_NOT_SUPPORTED;
  p->registered = true;
  return DOCA_SUCCESS;
}

doca_error_t doca_argp_register_validation_callback(doca_argp_validation_cb_t cb) {
  if (!g_argp.initialized) return DOCA_ERROR_BAD_STATE;
  g_argp.validate = cb;
  return DOCA_SUCCESS;
}

void doca_argp_usage(void) {
  std::fprintf(stderr, "Usage: %s [options]\n", g_argp.program.empty() ? "program" : g_argp.program.c_str());
  for (const auto& p : g_argp.params) {
    if (!p->registered) continue;
    std::string names = p->short_name.empty() ? "    " : "  -" + p->short_name + ",";
    if (!p->long_name.empty()) names += " --" + p->long_name;
    if (!p->arguments.empty()) names += " " + p->arguments;
    std::fprintf(stderr, "%-40s %s%s\n", names.c_str(), p->description.c_str(), p->mandatory ? " (required)" : "");
  }
}

doca_error_t doca_argp_start(int argc, char** argv) {
  if (!g_argp.initialized) return DOCA_ERROR_BAD_STATE;
  if (g_argp.program.empty() && argc > 0) g_argp.program = argv[0];
  for (int i = 1; i < argc; ++i) {
    std::string_view a(argv[i]);
    if (a == "-h" || a == "--help") {
      doca_argp_usage();
      std::exit(EXIT_SUCCESS);
    }
    std::string_view name, value;
    bool has_value = false;
    doca_argp_param* p = nullptr;
    if (a.size() > 2 && a.substr(0, 2) == "--") {
      name = a.substr(2);
      if (auto eq = name.find('='); eq != std::string_view::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
        has_value = true;
      }
      for (auto& q : g_argp.params)
        if (q->registered && q->long_name == name) p = q.get();
    } else if (a.size() > 1 && a[0] == '-') {
      name = a.substr(1);
      for (auto& q : g_argp.params)
        if (q->registered && q->short_name == name) p = q.get();
    }
    if (!p) {
      std::fprintf(stderr, "unknown option '%s'\n", argv[i]);
      doca_argp_usage();
      return DOCA_ERROR_INVALID_VALUE;
    }
    doca_error_t r = DOCA_SUCCESS;
    if (p->type == DOCA_ARGP_TYPE_BOOLEAN) {
      bool v = true;
      if (has_value) v = value == "true" || value == "1";
      r = p->callback(&v, g_argp.config);
    } else {
      std::string v;
      if (has_value) {
        v = std::string(value);
      } else if (i + 1 < argc) {
        v = argv[++i];
      } else {
        std::fprintf(stderr, "option '%s' needs a value\n", argv[i]);
        return DOCA_ERROR_INVALID_VALUE;
      }
      if (p->type == DOCA_ARGP_TYPE_INT) {
        char* end = nullptr;
        const long n = std::strtol(v.c_str(), &end, 0);
        if (v.empty() || *end != '\0') {
          std::fprintf(stderr, "option '%s' takes a number, not '%s'\n", argv[i], v.c_str());
          return DOCA_ERROR_INVALID_VALUE;
        }
        int iv = static_cast<int>(n);
        r = p->callback(&iv, g_argp.config);
      } else {
        r = p->callback(v.data(), g_argp.config);
      }
    }
    if (r != DOCA_SUCCESS) return r;
    p->seen = true;
  }
  for (auto& p : g_argp.params)
    if (p->registered && p->mandatory && !p->seen) {
      std::fprintf(stderr, "missing required option --%s\n", p->long_name.c_str());
      doca_argp_usage();
      return DOCA_ERROR_INVALID_VALUE;
    }
  if (g_argp.validate) return g_argp.validate(g_argp.config);
  return DOCA_SUCCESS;
}

doca_error_t doca_argp_destroy(void) {
  g_argp = argp_state{};
  return DOCA_SUCCESS;
}

// --- Devices
// ------------------------------------------------------------------------

doca_error_t doca_devinfo_create_list(doca_devinfo*** dev_list, uint32_t* nb_devs) {
  if (!dev_list || !nb_devs) return DOCA_ERROR_INVALID_VALUE;
  doca_error_t err;
  auto found = discover(err);
  if (err != DOCA_SUCCESS) return err;
  if (found.empty())
    return fail("doca_devinfo_create_list", DOCA_ERROR_NOT_FOUND,
                "no network device: no PCI function with a network interface "
                "in sysfs and GNIO_DOCA_DEVICES unset "
                "(e.g. GNIO_DOCA_DEVICES=\"ca:00.0=pcap:file=x.pcap\")");
  // A null-terminated array; its entries are owned by the list.
  auto** list = new doca_devinfo*[found.size() + 1];
  for (size_t i = 0; i < found.size(); ++i) list[i] = new doca_devinfo(std::move(found[i]));
  list[found.size()] = nullptr;
  *dev_list = list;
  *nb_devs = static_cast<uint32_t>(found.size());
  return DOCA_SUCCESS;
}

doca_error_t doca_devinfo_destroy_list(doca_devinfo** dev_list) {
  if (!dev_list) return DOCA_ERROR_INVALID_VALUE;
  for (auto** p = dev_list; *p; ++p) delete *p;
  delete[] dev_list;
  return DOCA_SUCCESS;
}

doca_error_t doca_devinfo_is_equal_pci_addr(const doca_devinfo* devinfo, const char* pci_addr, uint8_t* is_equal) {
  if (!devinfo || !pci_addr || !is_equal) return DOCA_ERROR_INVALID_VALUE;
  auto n = normalize_pci(pci_addr);
  if (!n) return DOCA_ERROR_INVALID_VALUE;
  *is_equal = *n == devinfo->pci ? 1 : 0;
  return DOCA_SUCCESS;
}

doca_error_t doca_devinfo_get_pci_addr_str(const doca_devinfo* devinfo, char* out) {
  if (!devinfo || !out) return DOCA_ERROR_INVALID_VALUE;
  return copy_name(devinfo->pci, out, DOCA_DEVINFO_PCI_ADDR_SIZE) ? DOCA_SUCCESS : DOCA_ERROR_UNEXPECTED;
}

doca_error_t doca_devinfo_get_iface_name(const doca_devinfo* devinfo, char* out, uint32_t size) {
  if (!devinfo || !out) return DOCA_ERROR_INVALID_VALUE;
  if (devinfo->iface.empty()) return DOCA_ERROR_NOT_FOUND;  // a configured device has no interface
  return copy_name(devinfo->iface, out, size) ? DOCA_SUCCESS : DOCA_ERROR_INVALID_VALUE;
}

doca_error_t doca_devinfo_get_ibdev_name(const doca_devinfo* devinfo, char*, uint32_t) {
  return devinfo ? DOCA_ERROR_NOT_SUPPORTED : DOCA_ERROR_INVALID_VALUE;
}

doca_error_t doca_devinfo_get_pci_func_type(const doca_devinfo* devinfo, doca_pci_func_type* type) {
  if (!devinfo || !type) return DOCA_ERROR_INVALID_VALUE;
  *type = DOCA_PCI_FUNC_TYPE_PF;
  return DOCA_SUCCESS;
}

doca_error_t doca_devinfo_get_sf_index(const doca_devinfo* devinfo, uint32_t*) {
  return devinfo ? DOCA_ERROR_NOT_SUPPORTED : DOCA_ERROR_INVALID_VALUE;
}

doca_error_t doca_dev_open(doca_devinfo* devinfo, doca_dev** dev) {
  if (!devinfo || !dev) return DOCA_ERROR_INVALID_VALUE;
  auto* d = new doca_dev;
  d->info = *devinfo;
  *dev = d;
  return DOCA_SUCCESS;
}

doca_error_t doca_dev_close(doca_dev* dev) {
  if (!dev) return DOCA_ERROR_INVALID_VALUE;
  if (!dev->rxqs.empty() || !dev->txqs.empty())
    return fail("doca_dev_close", DOCA_ERROR_IN_USE, "the device still has queues; destroy them first");
  if (dev->flow)
    return fail("doca_dev_close", DOCA_ERROR_IN_USE, "a DOCA Flow port still uses the device; stop it first");
  if (dev->port) {
    if (dev->port_started)
      if (auto e = dev->port->stop(); e) return fail("doca_dev_close", e);
    if (auto e = dev->port->close(); e) return fail("doca_dev_close", e);
  }
  for (auto* m : dev->mmaps) {
    m->devs.erase(std::remove(m->devs.begin(), m->devs.end(), dev), m->devs.end());
    m->registered.erase(std::remove(m->registered.begin(), m->registered.end(), dev), m->registered.end());
  }
  delete dev;
  return DOCA_SUCCESS;
}

doca_devinfo* doca_dev_as_devinfo(const doca_dev* dev) { return dev ? const_cast<doca_devinfo*>(&dev->info) : nullptr; }

doca_error_t doca_devinfo_rep_create_list(doca_dev* dev, doca_devinfo_rep_filter, doca_devinfo_rep*** list,
                                          uint32_t* nb) {
  if (!dev || !list || !nb) return DOCA_ERROR_INVALID_VALUE;
  return DOCA_ERROR_NOT_SUPPORTED;
}
doca_error_t doca_devinfo_rep_destroy_list(doca_devinfo_rep**) { return DOCA_ERROR_NOT_SUPPORTED; }
doca_error_t doca_devinfo_rep_get_vuid(const doca_devinfo_rep*, char*, uint32_t) { return DOCA_ERROR_NOT_SUPPORTED; }
doca_error_t doca_devinfo_rep_is_equal_pci_addr(const doca_devinfo_rep*, const char*, uint8_t*) {
  return DOCA_ERROR_NOT_SUPPORTED;
}
doca_error_t doca_dev_rep_open(doca_devinfo_rep*, doca_dev_rep**) { return DOCA_ERROR_NOT_SUPPORTED; }
doca_error_t doca_dev_rep_close(doca_dev_rep*) { return DOCA_ERROR_NOT_SUPPORTED; }

// --- GPU
// ------------------------------------------------------------------------------

doca_error_t doca_gpu_create(const char* gpu_bus_id, doca_gpu** gpu_dev) {
  if (!gpu_bus_id || !gpu_dev) return DOCA_ERROR_INVALID_VALUE;
  std::string sel = gpu_bus_id;
  if (sel != "host") {
    auto n = normalize_pci(sel);
    if (!n) return fail("doca_gpu_create", DOCA_ERROR_INVALID_VALUE, "'" + sel + "' is not a PCIe address (ca:00.0)");
    sel = *n;
  }
  auto g = gnio::gpu::open(sel);
  if (!g) return fail("doca_gpu_create", g.err());
  auto* d = new doca_gpu;
  d->g = std::move(*g);
  {
    std::lock_guard lk(g_gpus_mu);
    g_gpus.push_back(d);
  }
  *gpu_dev = d;
  return DOCA_SUCCESS;
}

doca_error_t doca_gpu_destroy(doca_gpu* gpu_dev) {
  if (!gpu_dev) return DOCA_ERROR_INVALID_VALUE;
  {
    std::lock_guard lk(g_gpus_mu);
    g_gpus.erase(std::find(g_gpus.begin(), g_gpus.end(), gpu_dev));
  }
  for (auto& [p, b] : gpu_dev->blocks) (void)gpu_dev->g.free(b);
  delete gpu_dev;
  return DOCA_SUCCESS;
}

doca_error_t doca_gpu_mem_alloc(doca_gpu* gpu_dev, size_t size, size_t alignment, doca_gpu_mem_type mtype,
                                void** memptr_gpu, void** memptr_cpu) {
  if (!gpu_dev || !memptr_gpu || size == 0) return DOCA_ERROR_INVALID_VALUE;
  if (alignment != 0 && !std::has_single_bit(alignment)) return DOCA_ERROR_INVALID_VALUE;
  gnio::mem_type t;
  switch (mtype) {
    case DOCA_GPU_MEM_TYPE_GPU: t = gnio::mem_type::gpu; break;
    case DOCA_GPU_MEM_TYPE_GPU_CPU: t = gnio::mem_type::gpu_cpu; break;
    case DOCA_GPU_MEM_TYPE_CPU_GPU: t = gnio::mem_type::cpu_gpu; break;
    default: return DOCA_ERROR_INVALID_VALUE;
  }
  if (mtype != DOCA_GPU_MEM_TYPE_GPU && !memptr_cpu) return DOCA_ERROR_INVALID_VALUE;
  const size_t pad = alignment > 1 ? alignment : 0;
  auto b = gpu_dev->g.alloc(size + pad, t);
  // GPU memory the CPU can map needs GDRCopy or a mappable BAR; pinned host
  // memory mapped for the GPU gives both sides the same bytes.
  if (!b && mtype == DOCA_GPU_MEM_TYPE_GPU_CPU && b.code() == status::not_supported)
    b = gpu_dev->g.alloc(size + pad, gnio::mem_type::cpu_gpu);
  if (!b) return fail("doca_gpu_mem_alloc", b.err());
  const auto base = reinterpret_cast<uintptr_t>(b->exec_ptr);
  const uintptr_t off = pad ? ((base + alignment - 1) & ~(uintptr_t{alignment} - 1)) - base : 0;
  void* exec = static_cast<uint8_t*>(b->exec_ptr) + off;
  gpu_dev->blocks[exec] = *b;
  *memptr_gpu = exec;
  if (memptr_cpu) *memptr_cpu = b->host_ptr ? static_cast<uint8_t*>(b->host_ptr) + off : nullptr;
  return DOCA_SUCCESS;
}

doca_error_t doca_gpu_mem_free(doca_gpu* gpu_dev, void* memptr_gpu) {
  if (!gpu_dev || !memptr_gpu) return DOCA_ERROR_INVALID_VALUE;
  auto it = gpu_dev->blocks.find(memptr_gpu);
  if (it == gpu_dev->blocks.end())
    return fail("doca_gpu_mem_free", DOCA_ERROR_INVALID_VALUE, "the pointer was not returned by doca_gpu_mem_alloc");
  gnio::mem_block b = it->second;
  gpu_dev->blocks.erase(it);
  if (auto e = gpu_dev->g.free(b); e) return fail("doca_gpu_mem_free", e);
  return DOCA_SUCCESS;
}

doca_error_t doca_gpu_dmabuf_fd(doca_gpu* gpu_dev, void* memptr_gpu, size_t size, int* dmabuf_fd) {
  if (!gpu_dev || !memptr_gpu || size == 0 || !dmabuf_fd) return DOCA_ERROR_INVALID_VALUE;
  return DOCA_ERROR_NOT_SUPPORTED;
}

// --- mmap
// -----------------------------------------------------------------------------

doca_error_t doca_mmap_create(doca_mmap** mmap) {
  if (!mmap) return DOCA_ERROR_INVALID_VALUE;
  *mmap = new doca_mmap;
  return DOCA_SUCCESS;
}
namespace {
// Takes m off its devices' lists of started mmaps (what the ports
// registered stays registered until they close).
void unlist_mmap(doca_mmap& m) {
  for (auto* d : m.devs) {
    auto& v = d->mmaps;
    v.erase(std::remove(v.begin(), v.end(), &m), v.end());
  }
}
}  // namespace

doca_error_t doca_mmap_destroy(doca_mmap* mmap) {
  if (!mmap) return DOCA_ERROR_INVALID_VALUE;
  unlist_mmap(*mmap);
  delete mmap;
  return DOCA_SUCCESS;
}
// Registers the range with the gnio port of every device added: now if the
// port is open and not started, else when it opens. A send-only device's
// port starts here once its TX queue runs (try_start).
doca_error_t doca_mmap_start(doca_mmap* mmap) {
  if (!mmap) return DOCA_ERROR_INVALID_VALUE;
  if (mmap->started) return DOCA_ERROR_BAD_STATE;
  if (!mmap->addr || mmap->len == 0)
    return fail("doca_mmap_start", DOCA_ERROR_BAD_STATE, "no memory range set (doca_mmap_set_memrange first)");
  for (auto* d : mmap->devs)
    if (d->port_started)
      return fail("doca_mmap_start", DOCA_ERROR_BAD_STATE,
                  "the gnio port of device " + d->info.pci +
                      " already started; gnio registers memory before a "
                      "port starts (start the mmap before the DOCA Flow "
                      "entries are processed)");
  // Only distinct numbers: no other memory is published with them.
  static std::atomic<uint32_t> next_mkey{0};
  mmap->started = true;
  mmap->mkey = ++next_mkey;
  for (auto* d : mmap->devs) {
    d->mmaps.push_back(mmap);
    if (d->port) {
      if (auto r = register_mmap(*d, *mmap, "doca_mmap_start"); r != DOCA_SUCCESS) return r;
      if (auto r = try_start(*d, "doca_mmap_start"); r != DOCA_SUCCESS) return r;
    }
  }
  return DOCA_SUCCESS;
}
doca_error_t doca_mmap_stop(doca_mmap* mmap) {
  if (!mmap) return DOCA_ERROR_INVALID_VALUE;
  if (!mmap->started) return DOCA_ERROR_BAD_STATE;
  unlist_mmap(*mmap);
  mmap->started = false;
  return DOCA_SUCCESS;
}
doca_error_t doca_mmap_add_dev(doca_mmap* mmap, doca_dev* dev) {
  if (!mmap || !dev) return DOCA_ERROR_INVALID_VALUE;
  if (mmap->started) return DOCA_ERROR_BAD_STATE;
  if (std::find(mmap->devs.begin(), mmap->devs.end(), dev) != mmap->devs.end()) return DOCA_ERROR_ALREADY_EXIST;
  mmap->devs.push_back(dev);
  return DOCA_SUCCESS;
}
doca_error_t doca_mmap_rm_dev(doca_mmap* mmap, doca_dev* dev) {
  if (!mmap || !dev) return DOCA_ERROR_INVALID_VALUE;
  if (mmap->started) return DOCA_ERROR_BAD_STATE;
  auto it = std::find(mmap->devs.begin(), mmap->devs.end(), dev);
  if (it == mmap->devs.end()) return DOCA_ERROR_NOT_FOUND;
  mmap->devs.erase(it);
  return DOCA_SUCCESS;
}
doca_error_t doca_mmap_set_memrange(doca_mmap* mmap, void* addr, size_t len) {
  if (!mmap || !addr || len == 0) return DOCA_ERROR_INVALID_VALUE;
  if (mmap->started) return DOCA_ERROR_BAD_STATE;
  mmap->addr = addr;
  mmap->len = len;
  return DOCA_SUCCESS;
}
doca_error_t doca_mmap_set_dmabuf_memrange(doca_mmap* mmap, int, void*, size_t, size_t) {
  if (!mmap) return DOCA_ERROR_INVALID_VALUE;
  return DOCA_ERROR_NOT_SUPPORTED;  // doca_gpu_dmabuf_fd never hands out a
                                    // descriptor
}
doca_error_t doca_mmap_set_permissions(doca_mmap* mmap, uint32_t access_mask) {
  if (!mmap) return DOCA_ERROR_INVALID_VALUE;
  if (mmap->started) return DOCA_ERROR_BAD_STATE;
  mmap->access = access_mask;
  return DOCA_SUCCESS;
}
doca_error_t doca_mmap_get_memrange(const doca_mmap* mmap, void** addr, size_t* len) {
  if (!mmap || !addr || !len) return DOCA_ERROR_INVALID_VALUE;
  *addr = mmap->addr;
  *len = mmap->len;
  return DOCA_SUCCESS;
}
// gnio has no memory keys; the number identifies the started mmap, and the
// device calls accept and ignore it.
doca_error_t doca_mmap_get_mkey(const doca_mmap* mmap, doca_dev* dev, uint32_t* mkey) {
  if (!mmap || !dev || !mkey) return DOCA_ERROR_INVALID_VALUE;
  if (std::find(mmap->devs.begin(), mmap->devs.end(), dev) == mmap->devs.end())
    return fail("doca_mmap_get_mkey", DOCA_ERROR_INVALID_VALUE,
                "the device was not added to the mmap (doca_mmap_add_dev)");
  if (!mmap->started)
    return fail("doca_mmap_get_mkey", DOCA_ERROR_BAD_STATE, "the mmap is not started (doca_mmap_start first)");
  *mkey = mmap->mkey;
  return DOCA_SUCCESS;
}

// --- CPU buffers and pools; progress engines
// ---------------------------

// A buffer's calls assume the caller holds it (refcount > 0), as DOCA's do;
// only taking from and giving back to the pool lock it.
doca_error_t doca_buf_set_data(doca_buf* buf, void* data, size_t data_len) {
  if (!buf || !data) return DOCA_ERROR_INVALID_VALUE;
  auto* d = static_cast<uint8_t*>(data);
  if (d < buf->head || d > buf->head + buf->bytes || data_len > static_cast<size_t>(buf->head + buf->bytes - d))
    return DOCA_ERROR_INVALID_VALUE;
  buf->data = d;
  buf->data_len = data_len;
  return DOCA_SUCCESS;
}
doca_error_t doca_buf_get_data(const doca_buf* buf, void** data) {
  if (!buf || !data) return DOCA_ERROR_INVALID_VALUE;
  *data = buf->data;
  return DOCA_SUCCESS;
}
doca_error_t doca_buf_get_data_len(const doca_buf* buf, size_t* data_len) {
  if (!buf || !data_len) return DOCA_ERROR_INVALID_VALUE;
  *data_len = buf->data_len;
  return DOCA_SUCCESS;
}
doca_error_t doca_buf_set_data_len(doca_buf* buf, size_t data_len) {
  if (!buf || data_len > static_cast<size_t>(buf->head + buf->bytes - buf->data)) return DOCA_ERROR_INVALID_VALUE;
  buf->data_len = data_len;
  return DOCA_SUCCESS;
}
doca_error_t doca_buf_chain_list(doca_buf*, doca_buf*) { return DOCA_ERROR_NOT_SUPPORTED; }
doca_error_t doca_buf_dec_refcount(doca_buf* buf, uint16_t* refcount) {
  if (!buf) return DOCA_ERROR_INVALID_VALUE;
  std::lock_guard lk(buf->pool->mu);
  if (buf->refcount == 0) return fail("doca_buf_dec_refcount", DOCA_ERROR_BAD_STATE, "the buffer is not held");
  if (--buf->refcount == 0) buf->pool->free_list.push_back(buf);
  if (refcount) *refcount = buf->refcount;
  return DOCA_SUCCESS;
}

doca_error_t doca_buf_pool_create(size_t num_elements, size_t element_size, const doca_mmap* mmap,
                                  doca_buf_pool** buf_pool) {
  if (!buf_pool || !mmap || num_elements == 0 || element_size == 0) return DOCA_ERROR_INVALID_VALUE;
  auto* p = new doca_buf_pool;
  p->num_elem = num_elements;
  p->elem_bytes = element_size;
  p->mmap = mmap;
  *buf_pool = p;
  return DOCA_SUCCESS;
}
doca_error_t doca_buf_pool_destroy(doca_buf_pool* buf_pool) {
  if (!buf_pool) return DOCA_ERROR_INVALID_VALUE;
  {
    std::lock_guard lk(buf_pool->mu);
    if (buf_pool->started)
      return fail("doca_buf_pool_destroy", DOCA_ERROR_BAD_STATE, "the pool is started (doca_buf_pool_stop first)");
  }
  delete buf_pool;
  return DOCA_SUCCESS;
}
// Element i is the mmap's address + i * element_size: the address the mmap
// was given, which for CPU code must be one the CPU can use.
doca_error_t doca_buf_pool_start(doca_buf_pool* buf_pool) {
  if (!buf_pool) return DOCA_ERROR_INVALID_VALUE;
  std::lock_guard lk(buf_pool->mu);
  if (buf_pool->started) return DOCA_ERROR_BAD_STATE;
  const doca_mmap& m = *buf_pool->mmap;
  if (!m.started)
    return fail("doca_buf_pool_start", DOCA_ERROR_BAD_STATE, "the mmap is not started (doca_mmap_start first)");
  if (buf_pool->num_elem > m.len / buf_pool->elem_bytes)
    return fail("doca_buf_pool_start", DOCA_ERROR_INVALID_VALUE,
                std::to_string(buf_pool->num_elem) + " buffers of " + std::to_string(buf_pool->elem_bytes) +
                    " bytes exceed the mmap's " + std::to_string(m.len) + " bytes");
  buf_pool->bufs.assign(buf_pool->num_elem, doca_buf{});
  buf_pool->free_list.clear();
  auto* base = static_cast<uint8_t*>(m.addr);
  // Handed out lowest address first: the list is taken from its back.
  for (size_t i = buf_pool->num_elem; i-- > 0;) {
    doca_buf& b = buf_pool->bufs[i];
    b.pool = buf_pool;
    b.head = base + i * buf_pool->elem_bytes;
    b.bytes = buf_pool->elem_bytes;
    buf_pool->free_list.push_back(&b);
  }
  buf_pool->started = true;
  return DOCA_SUCCESS;
}
doca_error_t doca_buf_pool_stop(doca_buf_pool* buf_pool) {
  if (!buf_pool) return DOCA_ERROR_INVALID_VALUE;
  std::lock_guard lk(buf_pool->mu);
  if (!buf_pool->started) return DOCA_ERROR_BAD_STATE;
  if (buf_pool->free_list.size() != buf_pool->bufs.size())
    return fail("doca_buf_pool_stop", DOCA_ERROR_IN_USE,
                std::to_string(buf_pool->bufs.size() - buf_pool->free_list.size()) +
                    " buffers are still held (doca_buf_dec_refcount them first)");
  buf_pool->bufs.clear();
  buf_pool->free_list.clear();
  buf_pool->started = false;
  return DOCA_SUCCESS;
}
doca_error_t doca_buf_pool_buf_alloc(doca_buf_pool* buf_pool, doca_buf** buf) {
  if (!buf_pool || !buf) return DOCA_ERROR_INVALID_VALUE;
  std::lock_guard lk(buf_pool->mu);
  if (!buf_pool->started) return DOCA_ERROR_BAD_STATE;
  if (buf_pool->free_list.empty()) return DOCA_ERROR_EMPTY;
  doca_buf* b = buf_pool->free_list.back();
  buf_pool->free_list.pop_back();
  b->data = b->head;
  b->data_len = 0;
  b->refcount = 1;
  *buf = b;
  return DOCA_SUCCESS;
}
doca_error_t doca_buf_inventory_create(size_t, doca_buf_inventory**) { return DOCA_ERROR_NOT_SUPPORTED; }
doca_error_t doca_buf_inventory_destroy(doca_buf_inventory*) { return DOCA_ERROR_NOT_SUPPORTED; }
doca_error_t doca_buf_inventory_start(doca_buf_inventory*) { return DOCA_ERROR_NOT_SUPPORTED; }
doca_error_t doca_buf_inventory_stop(doca_buf_inventory*) { return DOCA_ERROR_NOT_SUPPORTED; }
doca_error_t doca_buf_inventory_buf_get_by_addr(doca_buf_inventory*, doca_mmap*, void*, size_t, doca_buf**) {
  return DOCA_ERROR_NOT_SUPPORTED;
}

doca_error_t doca_pe_create(doca_pe** pe) {
  if (!pe) return DOCA_ERROR_INVALID_VALUE;
  *pe = new doca_pe;
  return DOCA_SUCCESS;
}
doca_error_t doca_pe_destroy(doca_pe* pe) {
  if (!pe) return DOCA_ERROR_INVALID_VALUE;
  delete pe;
  return DOCA_SUCCESS;
}
uint8_t doca_pe_progress(doca_pe*) { return 0; }
doca_error_t doca_pe_connect_ctx(doca_pe* pe, doca_ctx* ctx) {
  if (!pe || !ctx) return DOCA_ERROR_INVALID_VALUE;
  return DOCA_ERROR_NOT_SUPPORTED;  // no CPU-side events in gnio's data path yet
}

// --- Semaphores: gnio::semaphore
// ------------------------------------------------------

namespace {
bool mem_type_ok(doca_gpu_mem_type t) {
  return t == DOCA_GPU_MEM_TYPE_GPU || t == DOCA_GPU_MEM_TYPE_GPU_CPU || t == DOCA_GPU_MEM_TYPE_CPU_GPU;
}
bool sem_running(const doca_gpu_semaphore& s) { return s.sem.valid(); }
// Copies obj into a new block of executor memory of the GPU, where kernels
// read their handles.
gnio::result<gnio::mem_block> to_exec(doca_gpu& g, const void* obj, size_t bytes) {
  auto h = g.g.alloc(bytes, gnio::mem_type::gpu);
  if (!h) return h;
  if (auto e = g.g.copy_to_block(*h, 0, obj, bytes); e) {
    (void)g.g.free(*h);
    return e;
  }
  return h;
}
}  // namespace

doca_error_t doca_gpu_semaphore_create(doca_gpu* gpu_dev, doca_gpu_semaphore** semaphore) {
  if (!gpu_dev || !semaphore) return DOCA_ERROR_INVALID_VALUE;
  auto* s = new doca_gpu_semaphore;
  s->gpu = gpu_dev;
  *semaphore = s;
  return DOCA_SUCCESS;
}

doca_error_t doca_gpu_semaphore_destroy(doca_gpu_semaphore* semaphore) {
  if (!semaphore) return DOCA_ERROR_INVALID_VALUE;
  if (sem_running(*semaphore))
    return fail("doca_gpu_semaphore_destroy", DOCA_ERROR_BAD_STATE,
                "the semaphore is started (doca_gpu_semaphore_stop first)");
  delete semaphore;
  return DOCA_SUCCESS;
}

doca_error_t doca_gpu_semaphore_set_memory_type(doca_gpu_semaphore* semaphore, doca_gpu_mem_type mtype) {
  if (!semaphore || !mem_type_ok(mtype)) return DOCA_ERROR_INVALID_VALUE;
  if (sem_running(*semaphore)) return DOCA_ERROR_BAD_STATE;
  semaphore->mem_type = mtype;
  return DOCA_SUCCESS;
}

doca_error_t doca_gpu_semaphore_set_items_num(doca_gpu_semaphore* semaphore, uint32_t num_items) {
  if (!semaphore || num_items == 0 || num_items > (1u << 20)) return DOCA_ERROR_INVALID_VALUE;
  if (sem_running(*semaphore)) return DOCA_ERROR_BAD_STATE;
  semaphore->num_items = num_items;
  return DOCA_SUCCESS;
}

doca_error_t doca_gpu_semaphore_set_custom_info(doca_gpu_semaphore* semaphore, uint32_t nbytes,
                                                doca_gpu_mem_type mtype) {
  if (!semaphore || nbytes == 0 || nbytes > (1u << 16) || !mem_type_ok(mtype)) return DOCA_ERROR_INVALID_VALUE;
  if (sem_running(*semaphore)) return DOCA_ERROR_BAD_STATE;
  semaphore->custom_bytes = nbytes;
  semaphore->custom_mem_type = mtype;
  return DOCA_SUCCESS;
}

// gnio::semaphore places items and custom bytes in pinned host memory mapped
// for the GPU (cpu_gpu) whatever type was asked for: both sides, and the
// CPU calls below, see the same bytes.
doca_error_t doca_gpu_semaphore_start(doca_gpu_semaphore* semaphore) {
  if (!semaphore) return DOCA_ERROR_INVALID_VALUE;
  if (sem_running(*semaphore)) return DOCA_ERROR_BAD_STATE;
  if (semaphore->num_items == 0)
    return fail("doca_gpu_semaphore_start", DOCA_ERROR_BAD_STATE,
                "no number of items set (doca_gpu_semaphore_set_items_num first)");
  // Records 16-byte aligned, as gnio's items are, so a kernel may cast them
  // to structures of 64-bit counters.
  const uint32_t stride = (semaphore->custom_bytes + 15u) & ~15u;
  auto sem = gnio::semaphore::create(semaphore->gpu->g, semaphore->num_items, stride);
  if (!sem) return fail("doca_gpu_semaphore_start", sem.err());
  const doca_gpu_semaphore_gpu view{sem->view()};
  auto h = to_exec(*semaphore->gpu, &view, sizeof view);
  if (!h) return fail("doca_gpu_semaphore_start", h.err());
  semaphore->host = sem->host_view();
  semaphore->handle = *h;
  semaphore->sem = std::move(*sem);
  return DOCA_SUCCESS;
}

doca_error_t doca_gpu_semaphore_stop(doca_gpu_semaphore* semaphore) {
  if (!semaphore) return DOCA_ERROR_INVALID_VALUE;
  if (!sem_running(*semaphore)) return DOCA_ERROR_BAD_STATE;
  (void)semaphore->gpu->g.free(semaphore->handle);
  semaphore->handle = {};
  semaphore->host = {};
  semaphore->sem = gnio::semaphore();
  return DOCA_SUCCESS;
}

doca_error_t doca_gpu_semaphore_get_gpu_handle(doca_gpu_semaphore* semaphore, doca_gpu_semaphore_gpu** semaphore_gpu) {
  if (!semaphore || !semaphore_gpu) return DOCA_ERROR_INVALID_VALUE;
  if (!sem_running(*semaphore)) return DOCA_ERROR_BAD_STATE;
  *semaphore_gpu = static_cast<doca_gpu_semaphore_gpu*>(semaphore->handle.exec_ptr);
  return DOCA_SUCCESS;
}

namespace {
// The checks every CPU-side item call makes.
doca_error_t check_item(const doca_gpu_semaphore* s, uint32_t idx) {
  if (!s) return DOCA_ERROR_INVALID_VALUE;
  if (!sem_running(*s)) return DOCA_ERROR_BAD_STATE;
  return idx < s->num_items ? DOCA_SUCCESS : DOCA_ERROR_INVALID_VALUE;
}
}  // namespace

doca_error_t doca_gpu_semaphore_get_status(doca_gpu_semaphore* semaphore, uint32_t idx,
                                           doca_gpu_semaphore_status* status) {
  if (!status) return DOCA_ERROR_INVALID_VALUE;
  if (auto r = check_item(semaphore, idx); r != DOCA_SUCCESS) return r;
  // sem_get_status's acquire load pairs with the kernel's release store in
  // doca_gpu_dev_semaphore_set_status: its custom bytes are visible now.
  *status = static_cast<doca_gpu_semaphore_status>(gnio::device::sem_get_status(semaphore->host, idx));
  return DOCA_SUCCESS;
}

doca_error_t doca_gpu_semaphore_set_status(doca_gpu_semaphore* semaphore, uint32_t idx,
                                           doca_gpu_semaphore_status status) {
  if (static_cast<uint32_t>(status) > static_cast<uint32_t>(DOCA_GPU_SEMAPHORE_STATUS_EXIT))
    return DOCA_ERROR_INVALID_VALUE;
  if (auto r = check_item(semaphore, idx); r != DOCA_SUCCESS) return r;
  // sem_set_status's release store pairs with the acquire load of
  // doca_gpu_dev_semaphore_get_status: the CPU's reads of the item are done
  // before a kernel that sees FREE refills it.
  gnio::device::sem_set_status(semaphore->host, idx, static_cast<gnio::device::sem_status>(status));
  return DOCA_SUCCESS;
}

doca_error_t doca_gpu_semaphore_get_custom_info_addr(doca_gpu_semaphore* semaphore, uint32_t idx, void** custom_info) {
  if (!custom_info) return DOCA_ERROR_INVALID_VALUE;
  if (auto r = check_item(semaphore, idx); r != DOCA_SUCCESS) return r;
  if (semaphore->custom_bytes == 0)
    return fail("doca_gpu_semaphore_get_custom_info_addr", DOCA_ERROR_INVALID_VALUE,
                "the semaphore has no custom info (doca_gpu_semaphore_set_custom_info before the start)");
  *custom_info = gnio::device::sem_custom(semaphore->host, idx);
  return DOCA_SUCCESS;
}

// --- Buffer arrays: an element table over a started mmap
// ------------------------------

doca_error_t doca_buf_arr_create(size_t num_elem, doca_buf_arr** buf_arr) {
  if (!buf_arr || num_elem == 0) return DOCA_ERROR_INVALID_VALUE;
  auto* a = new doca_buf_arr;
  a->num_elem = num_elem;
  *buf_arr = a;
  return DOCA_SUCCESS;
}

doca_error_t doca_buf_arr_destroy(doca_buf_arr* buf_arr) {
  if (!buf_arr) return DOCA_ERROR_INVALID_VALUE;
  if (buf_arr->started)
    return fail("doca_buf_arr_destroy", DOCA_ERROR_BAD_STATE, "the array is started (doca_buf_arr_stop first)");
  delete buf_arr;
  return DOCA_SUCCESS;
}

doca_error_t doca_buf_arr_set_params(doca_buf_arr* buf_arr, doca_mmap* mmap, size_t elem_size, uint64_t start_offset) {
  if (!buf_arr || !mmap || elem_size == 0) return DOCA_ERROR_INVALID_VALUE;
  if (buf_arr->started) return DOCA_ERROR_BAD_STATE;
  buf_arr->mmap = mmap;
  buf_arr->elem_bytes = elem_size;
  buf_arr->start_offset = start_offset;
  return DOCA_SUCCESS;
}

doca_error_t doca_buf_arr_set_target_gpu(doca_buf_arr* buf_arr, doca_gpu* gpu_handler) {
  if (!buf_arr || !gpu_handler) return DOCA_ERROR_INVALID_VALUE;
  if (buf_arr->started) return DOCA_ERROR_BAD_STATE;
  buf_arr->gpu = gpu_handler;
  return DOCA_SUCCESS;
}

// Element i is mmap.addr + start_offset + i * elem_size, each with the
// mmap's number as its key (network byte order, as the samples pass keys
// to the send calls). The range is checked and read now.
doca_error_t doca_buf_arr_start(doca_buf_arr* buf_arr) {
  if (!buf_arr) return DOCA_ERROR_INVALID_VALUE;
  if (buf_arr->started) return DOCA_ERROR_BAD_STATE;
  if (!buf_arr->mmap)
    return fail("doca_buf_arr_start", DOCA_ERROR_BAD_STATE, "no mmap set (doca_buf_arr_set_params first)");
  if (!buf_arr->gpu)
    return fail("doca_buf_arr_start", DOCA_ERROR_BAD_STATE,
                "no target GPU (doca_buf_arr_set_target_gpu first): gnio's buffer arrays are for kernels");
  const doca_mmap& m = *buf_arr->mmap;
  if (!m.started)
    return fail("doca_buf_arr_start", DOCA_ERROR_BAD_STATE, "the mmap is not started (doca_mmap_start first)");
  const size_t n = buf_arr->num_elem, sz = buf_arr->elem_bytes;
  if (buf_arr->start_offset > m.len || n > (m.len - buf_arr->start_offset) / sz)
    return fail("doca_buf_arr_start", DOCA_ERROR_INVALID_VALUE,
                std::to_string(n) + " elements of " + std::to_string(sz) + " bytes from offset " +
                    std::to_string(buf_arr->start_offset) + " exceed the mmap's " + std::to_string(m.len) + " bytes");
  if (n > (SIZE_MAX - sizeof(doca_gpu_buf_arr)) / sizeof(doca_gpu_buf)) return DOCA_ERROR_INVALID_VALUE;
  auto h = buf_arr->gpu->g.alloc(sizeof(doca_gpu_buf_arr) + n * sizeof(doca_gpu_buf), gnio::mem_type::gpu);
  if (!h) return fail("doca_buf_arr_start", h.err());
  // The table is written in pieces through a bounded staging buffer, so a
  // large array needs no host copy of its whole size.
  auto* base = static_cast<uint8_t*>(h->exec_ptr);
  const doca_gpu_buf_arr head{reinterpret_cast<doca_gpu_buf*>(base + sizeof(doca_gpu_buf_arr)), n};
  gnio::error e = buf_arr->gpu->g.copy_to_block(*h, 0, &head, sizeof head);
  const uint32_t mkey = htonl(m.mkey);
  const auto first = reinterpret_cast<uint64_t>(m.addr) + buf_arr->start_offset;
  std::vector<doca_gpu_buf> chunk;
  constexpr size_t k_chunk = 4096;
  for (size_t i = 0; !e && i < n; i += k_chunk) {
    const size_t c = std::min(k_chunk, n - i);
    chunk.resize(c);
    for (size_t j = 0; j < c; ++j) chunk[j] = doca_gpu_buf{first + (i + j) * sz, mkey, 0};
    e = buf_arr->gpu->g.copy_to_block(*h, sizeof head + i * sizeof(doca_gpu_buf), chunk.data(),
                                      c * sizeof(doca_gpu_buf));
  }
  if (e) {
    (void)buf_arr->gpu->g.free(*h);
    return fail("doca_buf_arr_start", e);
  }
  buf_arr->handle = *h;
  buf_arr->started = true;
  return DOCA_SUCCESS;
}

doca_error_t doca_buf_arr_stop(doca_buf_arr* buf_arr) {
  if (!buf_arr) return DOCA_ERROR_INVALID_VALUE;
  if (!buf_arr->started) return DOCA_ERROR_BAD_STATE;
  (void)buf_arr->gpu->g.free(buf_arr->handle);
  buf_arr->handle = {};
  buf_arr->started = false;
  return DOCA_SUCCESS;
}

doca_error_t doca_buf_arr_get_gpu_handle(const doca_buf_arr* buf_arr, doca_gpu_buf_arr** gpu_buf_arr) {
  if (!buf_arr || !gpu_buf_arr) return DOCA_ERROR_INVALID_VALUE;
  if (!buf_arr->started) return DOCA_ERROR_BAD_STATE;
  *gpu_buf_arr = static_cast<doca_gpu_buf_arr*>(buf_arr->handle.exec_ptr);
  return DOCA_SUCCESS;
}

// --- Ethernet RX queues
// ---------------------------------------------------------------

doca_error_t doca_eth_rxq_create(doca_dev* dev, uint32_t max_burst_size, uint32_t max_packet_size,
                                 doca_eth_rxq** eth_rxq) {
  if (!dev || !eth_rxq || max_burst_size == 0 || max_packet_size == 0) return DOCA_ERROR_INVALID_VALUE;
  if (max_burst_size > (1u << 20) || max_packet_size > 65535)
    return fail("doca_eth_rxq_create", DOCA_ERROR_INVALID_VALUE,
                "max_burst_size above 2^20 or max_packet_size above 65535");
  auto* q = new doca_eth_rxq;
  q->ctx.rxq = q;
  q->dev = dev;
  q->max_burst = max_burst_size;
  q->max_pkt_bytes = max_packet_size;
  q->flow_queue_id = static_cast<uint16_t>(dev->rxqs.size());
  dev->rxqs.push_back(q);
  *eth_rxq = q;
  return DOCA_SUCCESS;
}

doca_error_t doca_eth_rxq_destroy(doca_eth_rxq* q) {
  if (!q) return DOCA_ERROR_INVALID_VALUE;
  if (q->ctx.state != DOCA_CTX_STATE_IDLE)
    return fail("doca_eth_rxq_destroy", DOCA_ERROR_BAD_STATE, "the queue's context is running; doca_ctx_stop first");
  auto& v = q->dev->rxqs;
  v.erase(std::find(v.begin(), v.end(), q));
  delete q;
  return DOCA_SUCCESS;
}

doca_ctx* doca_eth_rxq_as_doca_ctx(doca_eth_rxq* q) { return q ? &q->ctx : nullptr; }

doca_error_t doca_eth_rxq_set_type(doca_eth_rxq* q, doca_eth_rxq_type type) {
  if (!q) return DOCA_ERROR_INVALID_VALUE;
  if (q->ctx.state != DOCA_CTX_STATE_IDLE) return DOCA_ERROR_BAD_STATE;
  switch (type) {
    case DOCA_ETH_RXQ_TYPE_CYCLIC:
    case DOCA_ETH_RXQ_TYPE_REGULAR: q->type = type; return DOCA_SUCCESS;
    case DOCA_ETH_RXQ_TYPE_MANAGED_MEMPOOL:
      return fail("doca_eth_rxq_set_type", DOCA_ERROR_NOT_SUPPORTED,
                  "managed-mempool queues (a CPU data path with events) are not "
                  "supported by gnio");
    default: return DOCA_ERROR_INVALID_VALUE;
  }
}

doca_error_t doca_eth_rxq_estimate_packet_buf_size(doca_eth_rxq_type type, uint32_t, uint16_t, uint32_t max_packet_size,
                                                   uint32_t max_burst_size, uint8_t, uint16_t head_size,
                                                   uint16_t tail_size, uint32_t* buf_size) {
  if (!buf_size || max_packet_size == 0 || max_burst_size == 0) return DOCA_ERROR_INVALID_VALUE;
  if (type != DOCA_ETH_RXQ_TYPE_CYCLIC && type != DOCA_ETH_RXQ_TYPE_REGULAR) {
    return type == DOCA_ETH_RXQ_TYPE_MANAGED_MEMPOOL ? DOCA_ERROR_NOT_SUPPORTED : DOCA_ERROR_INVALID_VALUE;
  }
  if (max_burst_size > (1u << 20)) return DOCA_ERROR_INVALID_VALUE;
  const uint64_t bytes = uint64_t{std::bit_ceil(max_burst_size)} * (uint64_t{max_packet_size} + head_size + tail_size);
  if (bytes > UINT32_MAX) return DOCA_ERROR_TOO_BIG;
  *buf_size = static_cast<uint32_t>(bytes);
  return DOCA_SUCCESS;
}

doca_error_t doca_eth_rxq_set_pkt_buf(doca_eth_rxq* q, doca_mmap* mmap, uint32_t mmap_offset, uint32_t mmap_len) {
  if (!q || !mmap || mmap_len == 0) return DOCA_ERROR_INVALID_VALUE;
  if (q->ctx.state != DOCA_CTX_STATE_IDLE) return DOCA_ERROR_BAD_STATE;
  if (!mmap->started)
    return fail("doca_eth_rxq_set_pkt_buf", DOCA_ERROR_BAD_STATE, "the mmap is not started (doca_mmap_start first)");
  if (uint64_t{mmap_offset} + mmap_len > mmap->len)
    return fail("doca_eth_rxq_set_pkt_buf", DOCA_ERROR_INVALID_VALUE, "offset + length run past the mmap's range");
  // gnio places frames in the queue's own memory; the caller's range is
  // checked and kept, and the kernel reads packets where get_pkt_addr says.
  q->mmap = mmap;
  return DOCA_SUCCESS;
}

doca_error_t doca_eth_rxq_apply_queue_id(doca_eth_rxq* q, uint16_t queue_id) {
  if (!q) return DOCA_ERROR_INVALID_VALUE;
  for (auto* o : q->dev->rxqs)
    if (o != q && o->flow_queue_id == queue_id) {
      // Swap, so numbers stay unique on the device.
      o->flow_queue_id = q->flow_queue_id;
    }
  q->flow_queue_id = queue_id;
  return DOCA_SUCCESS;
}

doca_error_t doca_eth_rxq_cap_is_type_supported(const doca_devinfo* devinfo, doca_eth_rxq_type type,
                                                doca_eth_rxq_data_path_type data_path_type, uint8_t* is_supported) {
  if (!devinfo || !is_supported) return DOCA_ERROR_INVALID_VALUE;
  if (type != DOCA_ETH_RXQ_TYPE_CYCLIC && type != DOCA_ETH_RXQ_TYPE_REGULAR &&
      type != DOCA_ETH_RXQ_TYPE_MANAGED_MEMPOOL)
    return DOCA_ERROR_INVALID_VALUE;
  if (data_path_type != DOCA_ETH_RXQ_DATA_PATH_TYPE_CPU && data_path_type != DOCA_ETH_RXQ_DATA_PATH_TYPE_GPU)
    return DOCA_ERROR_INVALID_VALUE;
  // gnio's queues are consumed by kernels (or the host executor running them).
  *is_supported = data_path_type == DOCA_ETH_RXQ_DATA_PATH_TYPE_GPU && type != DOCA_ETH_RXQ_TYPE_MANAGED_MEMPOOL;
  return DOCA_SUCCESS;
}

doca_error_t doca_eth_rxq_cap_get_max_burst_size(const doca_devinfo* devinfo, uint32_t, uint32_t* max_burst_size) {
  if (!devinfo || !max_burst_size) return DOCA_ERROR_INVALID_VALUE;
  *max_burst_size = 1u << 20;
  return DOCA_SUCCESS;
}

doca_error_t doca_eth_rxq_cap_get_max_packet_size(const doca_devinfo* devinfo, uint16_t* max_packet_size) {
  if (!devinfo || !max_packet_size) return DOCA_ERROR_INVALID_VALUE;
  *max_packet_size = 65535;
  return DOCA_SUCCESS;
}

doca_error_t doca_eth_rxq_get_gpu_handle(const doca_eth_rxq* q, doca_gpu_eth_rxq** out) {
  if (!q || !out) return DOCA_ERROR_INVALID_VALUE;
  if (q->ctx.state != DOCA_CTX_STATE_RUNNING || q->handle.empty())
    return fail("doca_eth_rxq_get_gpu_handle", DOCA_ERROR_BAD_STATE,
                "the queue's context is not running on a GPU "
                "(doca_ctx_set_datapath_on_gpu, doca_ctx_start first)");
  *out = static_cast<doca_gpu_eth_rxq*>(q->handle.exec_ptr);
  return DOCA_SUCCESS;
}

doca_error_t doca_eth_rxq_gpu_enable_mcst_qp(doca_eth_rxq* q) {
  if (!q) return DOCA_ERROR_INVALID_VALUE;
  return q->ctx.state == DOCA_CTX_STATE_IDLE ? DOCA_SUCCESS : DOCA_ERROR_BAD_STATE;
}

// --- Ethernet TX queues
// ---------------------------------------------------------------

namespace {

constexpr uint32_t k_max_txq_descs = 1u << 15;  // WQE indices are 16 bits

// What the device's gnio port does with send times, from its device string
// (the port need not be open): the pcap backend writes them as timestamps
// when it has a tx= file; af_packet with txtime=1 leaves it to the fq qdisc;
// every other backend that sends holds the frame until its time (docs/ring.md,
// Timed TX).
gnio::tx_time_mode tx_time_of(const doca_devinfo& info) {
  const std::string& d = info.devargs;
  const auto colon = d.find(':');
  const std::string kind = d.substr(0, colon);
  if (kind == "pcap") {
    const std::string args = colon == std::string::npos ? "" : "," + d.substr(colon + 1);
    return args.find(",tx=") != std::string::npos ? gnio::tx_time_mode::timestamp : gnio::tx_time_mode::none;
  }
  if (kind == "af_packet" && ("," + d.substr(colon + 1) + ",").find(",txtime=1,") != std::string::npos)
    return gnio::tx_time_mode::kernel;
  for (const char* k : {"af_packet", "af_xdp", "dpdk", "pair", "gen"})
    if (kind == k) return gnio::tx_time_mode::hold;
  return gnio::tx_time_mode::none;
}

doca_error_t start_txq(doca_ctx* ctx) {
  auto& q = *ctx->txq;
  auto& dev = *q.dev;
  if (dev.port_started)
    return fail("doca_ctx_start", DOCA_ERROR_BAD_STATE,
                "the device's gnio port already started; start every queue's "
                "context before it starts (docs/doca-compat.md)");
  if (auto r = open_port(dev, *ctx->gpu); r != DOCA_SUCCESS) return r;
  gnio::txq_config cfg;
  cfg.num_descs = q.num_descs;
  cfg.owner = &ctx->gpu->g;
  auto id = dev.port->create_txq(cfg);
  if (!id) return fail("doca_ctx_start", id.err());
  auto view = dev.port->txq(*id);
  // One block in executor memory: the handle, its counters, the ring. GPU
  // memory on a GPU (host memory on the host executor): kernels take the
  // producer lock and notification numbers with device-scope atomics, which
  // are atomic there and not on mapped host memory.
  namespace gd = gnio::compat::doca;
  const size_t counters_off = sizeof(doca_gpu_eth_txq);
  const size_t ring_off = counters_off + sizeof(gd::txq_counters);
  const size_t bytes = ring_off + sizeof(gd::notify_entry) * q.num_descs;
  auto h = view ? ctx->gpu->g.alloc(bytes, gnio::mem_type::gpu) : gnio::result<gnio::mem_block>(view.err());
  if (h) {
    std::vector<uint8_t> init(bytes, 0);
    auto* base = static_cast<uint8_t*>(h->exec_ptr);
    doca_gpu_eth_txq dq{};
    dq.q = *view;
    dq.counters = reinterpret_cast<gd::txq_counters*>(base + counters_off);
    dq.notify = reinterpret_cast<gd::notify_entry*>(base + ring_off);
    dq.num_notify = q.num_descs;
    std::memcpy(init.data(), &dq, sizeof dq);
    if (auto e = ctx->gpu->g.copy_to_block(*h, 0, init.data(), bytes); e) {
      (void)ctx->gpu->g.free(*h);
      h = gnio::result<gnio::mem_block>(e);
    }
  }
  if (!h) {
    (void)dev.port->destroy_txq(*id);
    return fail("doca_ctx_start", h.err());
  }
  q.gnio_id = *id;
  q.handle = *h;
  ctx->state = DOCA_CTX_STATE_RUNNING;
  return try_start(dev, "doca_ctx_start");
}

doca_error_t stop_txq(doca_ctx* ctx) {
  auto& q = *ctx->txq;
  auto& dev = *q.dev;
  // The port stops with the first queue stopped: gnio stops ports whole.
  if (dev.port_started) {
    if (auto e = dev.port->stop(); e) return fail("doca_ctx_stop", e);
    dev.port_started = false;
  }
  if (auto e = dev.port->destroy_txq(*q.gnio_id); e) return fail("doca_ctx_stop", e);
  (void)ctx->gpu->g.free(q.handle);
  q.handle = {};
  q.gnio_id.reset();
  ctx->state = DOCA_CTX_STATE_IDLE;
  return DOCA_SUCCESS;
}

}  // namespace

doca_error_t doca_eth_txq_create(doca_dev* dev, uint32_t max_burst_size, doca_eth_txq** eth_txq) {
  if (!dev || !eth_txq || max_burst_size == 0) return DOCA_ERROR_INVALID_VALUE;
  if (max_burst_size > k_max_txq_descs)
    return fail("doca_eth_txq_create", DOCA_ERROR_INVALID_VALUE, "max_burst_size above 32768");
  auto* q = new doca_eth_txq;
  q->ctx.txq = q;
  q->dev = dev;
  // At least a warp's worth: a warp-scope send reserves for all its lanes.
  q->num_descs = std::max<uint32_t>(std::bit_ceil(max_burst_size), 32);
  q->queue_id = static_cast<uint16_t>(dev->txqs.size());
  dev->txqs.push_back(q);
  *eth_txq = q;
  return DOCA_SUCCESS;
}

doca_error_t doca_eth_txq_destroy(doca_eth_txq* q) {
  if (!q) return DOCA_ERROR_INVALID_VALUE;
  if (q->ctx.state != DOCA_CTX_STATE_IDLE)
    return fail("doca_eth_txq_destroy", DOCA_ERROR_BAD_STATE, "the queue's context is running; doca_ctx_stop first");
  auto& v = q->dev->txqs;
  v.erase(std::find(v.begin(), v.end(), q));
  delete q;
  return DOCA_SUCCESS;
}

doca_ctx* doca_eth_txq_as_doca_ctx(doca_eth_txq* q) { return q ? &q->ctx : nullptr; }

doca_error_t doca_eth_txq_set_type(doca_eth_txq* q, doca_eth_txq_type type) {
  if (!q || type != DOCA_ETH_TXQ_TYPE_REGULAR) return DOCA_ERROR_INVALID_VALUE;
  return q->ctx.state == DOCA_CTX_STATE_IDLE ? DOCA_SUCCESS : DOCA_ERROR_BAD_STATE;
}

doca_error_t doca_eth_txq_set_l3_chksum_offload(doca_eth_txq* q, uint8_t enable) {
  if (!q) return DOCA_ERROR_INVALID_VALUE;
  if (q->ctx.state != DOCA_CTX_STATE_IDLE) return DOCA_ERROR_BAD_STATE;
  q->l3_csum = enable != 0;
  return DOCA_SUCCESS;
}

doca_error_t doca_eth_txq_set_l4_chksum_offload(doca_eth_txq* q, uint8_t enable) {
  if (!q) return DOCA_ERROR_INVALID_VALUE;
  if (q->ctx.state != DOCA_CTX_STATE_IDLE) return DOCA_ERROR_BAD_STATE;
  q->l4_csum = enable != 0;
  return DOCA_SUCCESS;
}

doca_error_t doca_eth_txq_cap_get_wait_on_time_offload_supported(const doca_devinfo* devinfo,
                                                                 doca_eth_wait_on_time_type* mode) {
  if (!devinfo || !mode) return DOCA_ERROR_INVALID_VALUE;
  *mode = tx_time_of(*devinfo) == gnio::tx_time_mode::none ? DOCA_ETH_WAIT_ON_TIME_TYPE_NONE
                                                           : DOCA_ETH_WAIT_ON_TIME_TYPE_NATIVE;
  return DOCA_SUCCESS;
}

doca_error_t doca_eth_txq_set_wait_on_time_offload(doca_eth_txq* q) {
  if (!q) return DOCA_ERROR_INVALID_VALUE;
  if (q->ctx.state != DOCA_CTX_STATE_IDLE) return DOCA_ERROR_BAD_STATE;
  if (tx_time_of(q->dev->info) == gnio::tx_time_mode::none)
    return fail("doca_eth_txq_set_wait_on_time_offload", DOCA_ERROR_NOT_SUPPORTED,
                "device " + q->dev->info.devargs +
                    " does not send, or "
                    "has no use for send times (gnio caps: tx_time none)");
  q->wait_on_time = true;
  return DOCA_SUCCESS;
}

doca_error_t doca_eth_txq_calculate_timestamp(doca_eth_txq* q, uint64_t timestamp_ns, uint64_t* value) {
  if (!q || !value || timestamp_ns == 0) return DOCA_ERROR_INVALID_VALUE;
  if (!q->wait_on_time)
    return fail("doca_eth_txq_calculate_timestamp", DOCA_ERROR_BAD_STATE,
                "wait on time is off (doca_eth_txq_set_wait_on_time_offload "
                "first)");
  // gnio's send times are CLOCK_REALTIME nanoseconds, which is what DOCA
  // programs compute theirs from.
  *value = timestamp_ns;
  return DOCA_SUCCESS;
}

doca_error_t doca_eth_txq_apply_queue_id(doca_eth_txq* q, uint16_t queue_id) {
  if (!q) return DOCA_ERROR_INVALID_VALUE;
  q->queue_id = queue_id;
  return DOCA_SUCCESS;
}

doca_error_t doca_eth_txq_get_gpu_handle(const doca_eth_txq* q, doca_gpu_eth_txq** out) {
  if (!q || !out) return DOCA_ERROR_INVALID_VALUE;
  if (q->ctx.state != DOCA_CTX_STATE_RUNNING || q->handle.empty())
    return fail("doca_eth_txq_get_gpu_handle", DOCA_ERROR_BAD_STATE,
                "the queue's context is not running on a GPU "
                "(doca_ctx_set_datapath_on_gpu, doca_ctx_start first)");
  *out = static_cast<doca_gpu_eth_txq*>(q->handle.exec_ptr);
  return DOCA_SUCCESS;
}

doca_error_t doca_eth_txq_gpu_set_completion_on_gpu(doca_eth_txq* q) {
  if (!q) return DOCA_ERROR_INVALID_VALUE;
  return q->ctx.state == DOCA_CTX_STATE_IDLE ? DOCA_SUCCESS : DOCA_ERROR_BAD_STATE;
}

doca_error_t doca_eth_txq_gpu_set_uar_on_cpu(doca_eth_txq* q) {
  if (!q) return DOCA_ERROR_INVALID_VALUE;
  return q->ctx.state == DOCA_CTX_STATE_IDLE ? DOCA_SUCCESS : DOCA_ERROR_BAD_STATE;
}

doca_error_t doca_eth_txq_gpu_cpu_proxy_progress(doca_eth_txq* q) {
  return q ? DOCA_SUCCESS : DOCA_ERROR_INVALID_VALUE;
}

// --- Contexts
// ---------------------------------------------------------------------------

doca_error_t doca_ctx_set_datapath_on_gpu(doca_ctx* ctx, doca_gpu* gpu_dev) {
  if (!ctx || !gpu_dev) return DOCA_ERROR_INVALID_VALUE;
  if (ctx->state != DOCA_CTX_STATE_IDLE) return DOCA_ERROR_BAD_STATE;
  ctx->gpu = gpu_dev;
  return DOCA_SUCCESS;
}

doca_error_t doca_ctx_set_user_data(doca_ctx* ctx, doca_data user_data) {
  if (!ctx) return DOCA_ERROR_INVALID_VALUE;
  ctx->user = user_data;
  return DOCA_SUCCESS;
}

doca_error_t doca_ctx_get_user_data(const doca_ctx* ctx, doca_data* user_data) {
  if (!ctx || !user_data) return DOCA_ERROR_INVALID_VALUE;
  *user_data = ctx->user;
  return DOCA_SUCCESS;
}

doca_error_t doca_ctx_get_state(const doca_ctx* ctx, doca_ctx_states* state) {
  if (!ctx || !state) return DOCA_ERROR_INVALID_VALUE;
  *state = ctx->state;
  return DOCA_SUCCESS;
}

namespace {
doca_error_t start_txq(doca_ctx* ctx);
doca_error_t stop_txq(doca_ctx* ctx);
}  // namespace

doca_error_t doca_ctx_start(doca_ctx* ctx) {
  if (!ctx || (!ctx->rxq && !ctx->txq)) return DOCA_ERROR_INVALID_VALUE;
  if (ctx->state != DOCA_CTX_STATE_IDLE)
    return fail("doca_ctx_start", DOCA_ERROR_BAD_STATE, "the context already runs");
  if (!ctx->gpu)
    return fail("doca_ctx_start", DOCA_ERROR_NOT_SUPPORTED,
                "gnio runs queues only with a GPU data path "
                "(doca_ctx_set_datapath_on_gpu first)");
  if (ctx->txq) return start_txq(ctx);
  auto& q = *ctx->rxq;
  auto& dev = *q.dev;
  if (dev.port_started)
    return fail("doca_ctx_start", DOCA_ERROR_BAD_STATE,
                "the device's gnio port already started; start every queue's "
                "context before DOCA Flow entries are "
                "processed (or, without DOCA Flow, before the first context)");
  if (auto r = open_port(dev, *ctx->gpu); r != DOCA_SUCCESS) return r;
  gnio::rxq_config cfg;
  cfg.num_descs = std::bit_ceil(q.max_burst);
  cfg.stride = q.max_pkt_bytes;
  cfg.owner = &ctx->gpu->g;
  auto id = dev.port->create_rxq(cfg);
  if (!id) return fail("doca_ctx_start", id.err());
  auto view = dev.port->rxq(*id);
  auto h = view ? ctx->gpu->g.alloc(sizeof(doca_gpu_eth_rxq), gnio::mem_type::automatic)
                : gnio::result<gnio::mem_block>(view.err());
  if (h) {
    doca_gpu_eth_rxq dq{*view};
    if (auto e = ctx->gpu->g.copy_to_block(*h, 0, &dq, sizeof dq); e) {
      (void)ctx->gpu->g.free(*h);
      h = gnio::result<gnio::mem_block>(e);
    }
  }
  if (!h) {
    (void)dev.port->destroy_rxq(*id);
    return fail("doca_ctx_start", h.err());
  }
  q.gnio_id = *id;
  q.handle = *h;
  ctx->state = DOCA_CTX_STATE_RUNNING;
  if (auto r = try_start(dev, "doca_ctx_start"); r != DOCA_SUCCESS) return r;
  return DOCA_SUCCESS;
}

doca_error_t doca_ctx_stop(doca_ctx* ctx) {
  if (!ctx || (!ctx->rxq && !ctx->txq)) return DOCA_ERROR_INVALID_VALUE;
  if (ctx->state != DOCA_CTX_STATE_RUNNING)
    return fail("doca_ctx_stop", DOCA_ERROR_BAD_STATE, "the context is not running");
  if (ctx->txq) return stop_txq(ctx);
  auto& q = *ctx->rxq;
  auto& dev = *q.dev;
  // The port stops with the first queue stopped: gnio stops ports whole.
  if (dev.port_started) {
    if (auto e = dev.port->stop(); e) return fail("doca_ctx_stop", e);
    dev.port_started = false;
  }
  if (auto e = dev.port->destroy_rxq(*q.gnio_id); e) return fail("doca_ctx_stop", e);
  (void)ctx->gpu->g.free(q.handle);
  q.handle = {};
  q.gnio_id.reset();
  ctx->state = DOCA_CTX_STATE_IDLE;
  return DOCA_SUCCESS;
}

// --- DOCA Flow
// ---------------------------------------------------------------------------

doca_error_t doca_flow_cfg_create(doca_flow_cfg** cfg) {
  if (!cfg) return DOCA_ERROR_INVALID_VALUE;
  *cfg = new doca_flow_cfg;
  return DOCA_SUCCESS;
}
doca_error_t doca_flow_cfg_destroy(doca_flow_cfg* cfg) {
  if (!cfg) return DOCA_ERROR_INVALID_VALUE;
  delete cfg;
  return DOCA_SUCCESS;
}
doca_error_t doca_flow_cfg_set_pipe_queues(doca_flow_cfg* cfg, uint16_t n) {
  if (!cfg || n == 0) return DOCA_ERROR_INVALID_VALUE;
  cfg->pipe_queues = n;
  return DOCA_SUCCESS;
}
doca_error_t doca_flow_cfg_set_mode_args(doca_flow_cfg* cfg, const char* mode) {
  if (!cfg || !mode) return DOCA_ERROR_INVALID_VALUE;
  // gnio steers received packets only: the "vnf" mode (with its options).
  if (std::strncmp(mode, "vnf", 3) != 0)
    return fail("doca_flow_cfg_set_mode_args", DOCA_ERROR_NOT_SUPPORTED, std::string("mode '") + mode + "': only vnf");
  return DOCA_SUCCESS;
}
doca_error_t doca_flow_cfg_set_nr_counters(doca_flow_cfg* cfg, uint32_t) {
  return cfg ? DOCA_SUCCESS : DOCA_ERROR_INVALID_VALUE;
}
doca_error_t doca_flow_init(const doca_flow_cfg* cfg) { return cfg ? DOCA_SUCCESS : DOCA_ERROR_INVALID_VALUE; }
void doca_flow_destroy(void) {}

doca_error_t doca_flow_port_cfg_create(doca_flow_port_cfg** cfg) {
  if (!cfg) return DOCA_ERROR_INVALID_VALUE;
  *cfg = new doca_flow_port_cfg;
  return DOCA_SUCCESS;
}
doca_error_t doca_flow_port_cfg_destroy(doca_flow_port_cfg* cfg) {
  if (!cfg) return DOCA_ERROR_INVALID_VALUE;
  delete cfg;
  return DOCA_SUCCESS;
}
doca_error_t doca_flow_port_cfg_set_port_id(doca_flow_port_cfg* cfg, uint16_t id) {
  if (!cfg) return DOCA_ERROR_INVALID_VALUE;
  cfg->port_id = id;
  return DOCA_SUCCESS;
}
doca_error_t doca_flow_port_cfg_set_dev(doca_flow_port_cfg* cfg, doca_dev* dev) {
  if (!cfg || !dev) return DOCA_ERROR_INVALID_VALUE;
  cfg->dev = dev;
  return DOCA_SUCCESS;
}
doca_error_t doca_flow_port_start(const doca_flow_port_cfg* cfg, doca_flow_port** port) {
  if (!cfg || !port) return DOCA_ERROR_INVALID_VALUE;
  if (!cfg->dev)
    return fail("doca_flow_port_start", DOCA_ERROR_NOT_SUPPORTED,
                "gnio binds DOCA Flow ports to a device only "
                "(doca_flow_port_cfg_set_dev)");
  if (cfg->dev->flow)
    return fail("doca_flow_port_start", DOCA_ERROR_ALREADY_EXIST, "the device already has a flow port");
  if (cfg->dev->port_started)
    return fail("doca_flow_port_start", DOCA_ERROR_BAD_STATE, "the device's queues already run without DOCA Flow");
  auto* p = new doca_flow_port;
  p->dev = cfg->dev;
  cfg->dev->flow = p;
  *port = p;
  return DOCA_SUCCESS;
}
doca_error_t doca_flow_port_stop(doca_flow_port* port) {
  if (!port) return DOCA_ERROR_INVALID_VALUE;
  for (auto* p : port->pipes) delete p;
  port->dev->flow = nullptr;
  delete port;
  return DOCA_SUCCESS;
}

doca_error_t doca_flow_pipe_cfg_create(doca_flow_pipe_cfg** cfg, doca_flow_port* port) {
  if (!cfg || !port) return DOCA_ERROR_INVALID_VALUE;
  *cfg = new doca_flow_pipe_cfg;
  (*cfg)->port = port;
  return DOCA_SUCCESS;
}
doca_error_t doca_flow_pipe_cfg_destroy(doca_flow_pipe_cfg* cfg) {
  if (!cfg) return DOCA_ERROR_INVALID_VALUE;
  delete cfg;
  return DOCA_SUCCESS;
}
doca_error_t doca_flow_pipe_cfg_set_name(doca_flow_pipe_cfg* cfg, const char* name) {
  if (!cfg || !name) return DOCA_ERROR_INVALID_VALUE;
  cfg->name = name;
  return DOCA_SUCCESS;
}
doca_error_t doca_flow_pipe_cfg_set_type(doca_flow_pipe_cfg* cfg, doca_flow_pipe_type type) {
  if (!cfg) return DOCA_ERROR_INVALID_VALUE;
  if (type != DOCA_FLOW_PIPE_BASIC && type != DOCA_FLOW_PIPE_CONTROL) {
    if (type > DOCA_FLOW_PIPE_HASH) return DOCA_ERROR_INVALID_VALUE;
    return fail("doca_flow_pipe_cfg_set_type", DOCA_ERROR_NOT_SUPPORTED, "only BASIC and CONTROL pipes are supported");
  }
  cfg->type = type;
  return DOCA_SUCCESS;
}
doca_error_t doca_flow_pipe_cfg_set_is_root(doca_flow_pipe_cfg* cfg, bool is_root) {
  if (!cfg) return DOCA_ERROR_INVALID_VALUE;
  cfg->is_root = is_root;
  return DOCA_SUCCESS;
}
doca_error_t doca_flow_pipe_cfg_set_nr_entries(doca_flow_pipe_cfg* cfg, uint32_t) {
  return cfg ? DOCA_SUCCESS : DOCA_ERROR_INVALID_VALUE;
}
doca_error_t doca_flow_pipe_cfg_set_match(doca_flow_pipe_cfg* cfg, const doca_flow_match* match,
                                          const doca_flow_match* mask) {
  if (!cfg || !match) return DOCA_ERROR_INVALID_VALUE;
  if (mask && !all_zero(mask, sizeof *mask) && std::memcmp(mask, match, sizeof *mask) != 0)
    return fail("doca_flow_pipe_cfg_set_match", DOCA_ERROR_NOT_SUPPORTED, "match masks other than the match itself");
  cfg->has_match = true;
  cfg->match = *match;
  return DOCA_SUCCESS;
}
doca_error_t doca_flow_pipe_cfg_set_monitor(doca_flow_pipe_cfg* cfg, const doca_flow_monitor* monitor) {
  // Counters: gnio counts per queue and per port anyway (gnio::port::stats).
  return cfg && monitor ? DOCA_SUCCESS : DOCA_ERROR_INVALID_VALUE;
}

doca_error_t doca_flow_pipe_create(const doca_flow_pipe_cfg* cfg, const doca_flow_fwd* fwd,
                                   const doca_flow_fwd* fwd_miss, doca_flow_pipe** pipe) {
  if (!cfg || !pipe) return DOCA_ERROR_INVALID_VALUE;
  auto p = std::make_unique<doca_flow_pipe>();
  p->port = cfg->port;
  p->name = cfg->name;
  p->type = cfg->type;
  p->is_root = cfg->is_root;
  std::string why;
  if (auto r = classes_of(cfg->has_match ? &cfg->match : nullptr, p->classes, why); r != DOCA_SUCCESS)
    return fail("doca_flow_pipe_create", r, why);
  if (auto r = check_fwd(fwd, p->fwd_queues, why); r != DOCA_SUCCESS) return fail("doca_flow_pipe_create", r, why);
  if (auto r = check_fwd(fwd_miss, p->miss_queues, why); r != DOCA_SUCCESS)
    return fail("doca_flow_pipe_create", r, why);
  if (fwd_miss && fwd_miss->type == DOCA_FLOW_FWD_PIPE)
    return fail("doca_flow_pipe_create", DOCA_ERROR_NOT_SUPPORTED, "a miss forwarding to another pipe");
  if (fwd) p->fwd = *fwd;
  if (fwd_miss) p->miss = *fwd_miss;
  if (p->is_root)
    for (auto* o : cfg->port->pipes)
      if (o->is_root)
        return fail("doca_flow_pipe_create", DOCA_ERROR_ALREADY_EXIST, "the port already has a root pipe");
  *pipe = p.get();
  cfg->port->pipes.push_back(p.release());
  return DOCA_SUCCESS;
}

void doca_flow_pipe_destroy(doca_flow_pipe* pipe) {
  if (!pipe) return;
  auto& v = pipe->port->pipes;
  v.erase(std::remove(v.begin(), v.end(), pipe), v.end());
  delete pipe;
}

}  // extern "C"

namespace {
doca_error_t add_entry(const char* call, doca_flow_pipe* pipe, const doca_flow_match* match, const doca_flow_fwd* fwd,
                       uint32_t priority, doca_flow_pipe_entry** entry) {
  if (!pipe) return DOCA_ERROR_INVALID_VALUE;
  auto e = std::make_unique<doca_flow_pipe_entry>();
  e->pipe = pipe;
  e->priority = priority;
  std::string why;
  if (auto r = classes_of(match, e->classes, why); r != DOCA_SUCCESS) return fail(call, r, why);
  if (fwd) {
    if (auto r = check_fwd(fwd, e->rss_queues, why); r != DOCA_SUCCESS) return fail(call, r, why);
    e->has_fwd = true;
    e->fwd = *fwd;
  }
  if (pipe->port->dev->port_started)
    return fail(call, DOCA_ERROR_NOT_SUPPORTED,
                "gnio's steering is fixed once the port starts; add every "
                "entry before the first doca_flow_entries_process "
                "that has a root pipe");
  if (entry) *entry = e.get();
  pipe->entries.push_back(std::move(e));
  pipe->port->dirty = true;
  return DOCA_SUCCESS;
}
}  // namespace

extern "C" {

doca_error_t doca_flow_pipe_basic_add_entry(uint16_t, doca_flow_pipe* pipe, const doca_flow_match* match, uint8_t,
                                            const doca_flow_actions* actions, const doca_flow_monitor*,
                                            const doca_flow_fwd* fwd, uint32_t, void*, doca_flow_pipe_entry** entry) {
  if (actions) return fail("doca_flow_pipe_basic_add_entry", DOCA_ERROR_NOT_SUPPORTED, "entry actions");
  if (pipe && pipe->type != DOCA_FLOW_PIPE_BASIC) return DOCA_ERROR_INVALID_VALUE;
  // A BASIC pipe's match names the fields; an entry's values equal to the
  // pipe's (as the samples pass) admit the same classes.
  return add_entry("doca_flow_pipe_basic_add_entry", pipe, match, fwd, 0, entry);
}

doca_error_t doca_flow_pipe_control_add_entry(uint16_t, doca_flow_pipe* pipe, const doca_flow_match* match,
                                              const doca_flow_match* match_mask,
                                              const doca_flow_match_condition* condition,
                                              const doca_flow_actions* actions, const doca_flow_actions* actions_mask,
                                              const doca_flow_action_descs* action_descs, const doca_flow_monitor*,
                                              uint32_t priority, const doca_flow_fwd* fwd, void*,
                                              doca_flow_pipe_entry** entry) {
  if (condition || actions || actions_mask || action_descs)
    return fail("doca_flow_pipe_control_add_entry", DOCA_ERROR_NOT_SUPPORTED, "conditions and actions");
  if (match_mask && match && !all_zero(match_mask, sizeof *match_mask) &&
      std::memcmp(match_mask, match, sizeof *match) != 0)
    return fail("doca_flow_pipe_control_add_entry", DOCA_ERROR_NOT_SUPPORTED,
                "match masks other than the match itself");
  if (pipe && pipe->type != DOCA_FLOW_PIPE_CONTROL) return DOCA_ERROR_INVALID_VALUE;
  return add_entry("doca_flow_pipe_control_add_entry", pipe, match, fwd, priority, entry);
}

doca_error_t doca_flow_pipe_remove_entry(uint16_t, uint32_t, doca_flow_pipe_entry* entry) {
  if (!entry) return DOCA_ERROR_INVALID_VALUE;
  auto* pipe = entry->pipe;
  if (pipe->port->dev->port_started)
    return fail("doca_flow_pipe_remove_entry", DOCA_ERROR_NOT_SUPPORTED,
                "gnio's steering is fixed once the port starts");
  auto& v = pipe->entries;
  v.erase(std::find_if(v.begin(), v.end(), [&](const auto& e) { return e.get() == entry; }));
  pipe->port->dirty = true;
  return DOCA_SUCCESS;
}

doca_error_t doca_flow_entries_process(doca_flow_port* port, uint16_t, uint64_t, uint32_t) {
  if (!port) return DOCA_ERROR_INVALID_VALUE;
  if (port->dev->port_started) return DOCA_SUCCESS;  // nothing added since (add_entry refuses)
  return try_start(*port->dev, "doca_flow_entries_process");
}

}  // extern "C"
