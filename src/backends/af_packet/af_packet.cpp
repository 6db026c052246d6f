// SPDX-License-Identifier: Apache-2.0
// af_packet: a Linux network interface (a NIC, a veth, loopback) as a port,
// through packet sockets.
//
// RX: one socket per queue, each with a TPACKET_V3 memory-mapped ring; with
// queues > 1 they form a PACKET_FANOUT_HASH group so one flow stays on one
// socket. The engine thread walks the blocks the kernel has retired (full, or
// ~1 ms after their first frame) without blocking: the engine already sleeps
// when a burst comes back empty, and a blocking poll() here would also delay
// the transmit side, which runs on the same thread. tpacket=2 takes a
// TPACKET_V2 ring instead: one status word per frame, so a frame is handed
// over as soon as the kernel wrote it, with no block to wait for (the
// low-latency setting; V3 blocks cost less per frame at high rates).
//
// TX: a separate, unbound-protocol packet socket (it receives nothing), with
// PACKET_QDISC_BYPASS, sending a burst per sendmmsg() call. With txtime=1 the
// socket goes through the qdisc instead and every frame with a not-before time
// carries it (SO_TXTIME, an SCM_TXTIME message per frame), for the interface's
// fq qdisc to hold the frame until then (tx_time kernel).
//
// What the kernel changes between the wire and a packet socket is undone so
// the kernel sees the frame as it was sent: VLAN tags the stack strips into
// metadata are put back, and TCP/UDP checksums a local sender left to offload
// (CHECKSUM_PARTIAL: veth, loopback) are completed.

#include <arpa/inet.h>
#include <gnio/filter.hpp>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/net_tstamp.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gnio/backend/backend.hpp"
#include "gnio/device/pkt.hpp"
#include "gnio/backend/log.hpp"

// Older UAPI headers lack these; the kernel answers ENOPROTOOPT/EINVAL where
// it lacks them too, and every use below handles that.
#ifndef PACKET_QDISC_BYPASS
#define PACKET_QDISC_BYPASS 20
#endif
#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif
#ifndef PACKET_FANOUT_FLAG_UNIQUEID
#define PACKET_FANOUT_FLAG_UNIQUEID 0x2000
#endif
#ifndef SO_TXTIME
#define SO_TXTIME 61
#define SCM_TXTIME SO_TXTIME
#endif
#ifndef TP_STATUS_VLAN_TPID_VALID
#define TP_STATUS_VLAN_TPID_VALID (1 << 6)
#endif
#ifndef TP_STATUS_CSUMNOTREADY
#define TP_STATUS_CSUMNOTREADY (1 << 3)
#endif

namespace gnio::backend {
namespace {

constexpr uint32_t k_max_queues = 64;
constexpr uint64_t k_default_blocks = 64;
constexpr uint64_t k_default_block_size = 256 * 1024;
constexpr uint32_t k_frame_size = 2048;  // V3 lays frames out freely; the kernel only checks the arithmetic
constexpr uint32_t k_retire_ms = 1;      // a partly filled block reaches us after ~1 ms (rounded up to a jiffy)
constexpr uint32_t k_tx_batch = 64;      // messages per sendmmsg()
constexpr int k_tx_full_retries = 200;   // ~4 ms of 20 us waits before a full device queue is an error
constexpr uint64_t k_health_period_ns = 1'000'000;
constexpr uint64_t k_gone_grace_ns = 20'000'000;  // drain blocks retired after the interface vanished
constexpr uint32_t k_eth_hdr = 14;
constexpr uint32_t k_vlan_hdr = 4;

uint64_t mono_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(t.tv_nsec);
}

std::string err_text(int e) { return fmt::format("{} ({})", std::strerror(e), e); }

struct rx_sock {
  int fd = -1;
  uint8_t* map = nullptr;
  size_t map_bytes = 0;
  uint32_t block = 0;  // next block to read (V3), next frame (V2)
  uint32_t left = 0;   // frames left in the block being read
  const tpacket3_hdr* next = nullptr;
};

// What one engine lane (lanes=N) keeps to itself: it reads the sockets
// i with i mod N = lane, so no socket has two readers.
struct lane_state {
  uint32_t rr = 0;               // socket to start the next burst at
  std::vector<uint8_t> scratch;  // frames that need their VLAN tag or checksum restored
};

struct port {
  rx_failure failure;  // why receive failed (last_error op); ends every lane
  // options
  std::string ifname;
  uint32_t nqueues = 1;
  uint32_t blocks = 0;
  uint32_t block_size = 0;
  bool promisc = true;
  uint32_t version = 3;     // TPACKET_V3 (blocks) or TPACKET_V2 (a status word per frame)
  bool txtime = false;      // send through the qdisc with SO_TXTIME times (fq holds the frames)
  uint32_t frame_size = 0;  // V2: bytes per frame slot
  uint32_t frame_nr = 0;    // V2: frame slots per socket
  // filter=EXPR as the sockets run it (socket_filter); empty: none.
  std::string filter_expr;
  std::vector<sock_filter> filter;

  // interface, as found at open
  int ifindex = 0;
  uint32_t mtu = 1500;

  std::vector<rx_sock> rx;
  int tx_fd = -1;
  bool started = false;
  bool ignore_outgoing = false;  // the kernel filters our own transmissions; else rx_burst does
  std::vector<lane_state> lanes = std::vector<lane_state>(1);

  // health, lane 0's engine thread only
  uint64_t next_check_ns = 0;
  bool warned_down = false;
  bool gone = false;
  uint64_t gone_at_ns = 0;
  std::atomic<bool> warned_corrupt{false};

  // Counters: the engine thread writes, any thread reads.
  std::atomic<uint64_t> rx_frames{0}, rx_bytes{0}, rx_bad{0}, kernel_drops{0};
  std::atomic<uint64_t> tx_frames{0}, tx_bytes{0}, tx_errors{0};
  // Serialises socket teardown (stop) against statistics reads (get_counters)
  // from other threads, so a closed descriptor number is never read.
  std::mutex mu;
};

void bump(std::atomic<uint64_t>& c, uint64_t n = 1) { c.fetch_add(n, std::memory_order_relaxed); }

// Reads and resets the kernel's per-socket counters; the drops are frames
// that found the ring full and never reached us. Called with p->mu held.
void collect_kernel_stats(port* p) {
  for (auto& s : p->rx) {
    if (s.fd < 0) continue;
    tpacket_stats_v3 st{};
    socklen_t len = sizeof st;
    if (getsockopt(s.fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) != 0) {
      log(log_level::debug, "af_packet: {}: PACKET_STATISTICS failed: {}", p->ifname, err_text(errno));
      continue;
    }
    bump(p->kernel_drops, st.tp_drops);
  }
}

void close_rx(port* p) {
  for (auto& s : p->rx) {
    if (s.map) munmap(s.map, s.map_bytes);
    if (s.fd >= 0) close(s.fd);
  }
  p->rx.clear();
}

void close_sockets(port* p) {
  close_rx(p);
  if (p->tx_fd >= 0) close(p->tx_fd);
  p->tx_fd = -1;
}

void destroy(port* p) {
  if (!p) return;
  close_sockets(p);
  delete p;
}

error socket_error(const port* p, const char* what, int e) {
  if (e == EPERM || e == EACCES)
    return fail(status::not_permitted,
                "af_packet: {} for interface '{}' failed: {}; packet sockets need CAP_NET_RAW (run as root, or "
                "setcap cap_net_raw,cap_net_admin+ep on the program)",
                what, p->ifname, err_text(e));
  if (e == EAFNOSUPPORT)
    return fail(status::not_supported, "af_packet: {} failed: this kernel has no AF_PACKET support: {}", what,
                err_text(e));
  if (e == EMFILE || e == ENFILE)
    return fail(status::no_memory, "af_packet: {} failed: out of file descriptors: {}", what, err_text(e));
  return fail(status_from_errno(e), "af_packet: {} for interface '{}' failed: {}", what, p->ifname, err_text(e));
}

error new_packet_socket(port* p, int* out) {
  // Protocol 0: the socket receives nothing until bind() names ETH_P_ALL at
  // start, so frames from before start() never reach the ring.
  int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
  if (fd < 0) return socket_error(p, "socket(AF_PACKET, SOCK_RAW)", errno);
  *out = fd;
  return {};
}

// Interface flags, MTU and link type, from the kernel's view right now.
error query_interface(port* p, int fd, short* flags) {
  ifreq ifr{};
  std::memcpy(ifr.ifr_name, p->ifname.c_str(), p->ifname.size());
  auto missing = [&](int e) {
    return fail(status::not_found,
                "af_packet: no interface '{}' in this network namespace ({}); `ip link show` lists them", p->ifname,
                err_text(e));
  };
  if (ioctl(fd, SIOCGIFFLAGS, &ifr) != 0) {
    int e = errno;
    if (e == ENODEV || e == ENXIO) return missing(e);
    return fail(status_from_errno(e), "af_packet: reading the flags of '{}' failed: {}", p->ifname, err_text(e));
  }
  *flags = ifr.ifr_flags;
  if (ioctl(fd, SIOCGIFMTU, &ifr) != 0) {
    int e = errno;
    if (e == ENODEV || e == ENXIO) return missing(e);
    return fail(status_from_errno(e), "af_packet: reading the MTU of '{}' failed: {}", p->ifname, err_text(e));
  }
  p->mtu = static_cast<uint32_t>(ifr.ifr_mtu);
  if (ioctl(fd, SIOCGIFHWADDR, &ifr) != 0) {
    int e = errno;
    if (e == ENODEV || e == ENXIO) return missing(e);
    return fail(status_from_errno(e), "af_packet: reading the link type of '{}' failed: {}", p->ifname, err_text(e));
  }
  // Ports carry Ethernet frames; loopback also has a 14-byte Ethernet header.
  const int type = ifr.ifr_hwaddr.sa_family;
  if (type != ARPHRD_ETHER && type != ARPHRD_LOOPBACK)
    return fail(
        status::not_supported,
        "af_packet: interface '{}' has link type {} (ARPHRD), not Ethernet; this backend delivers Ethernet frames "
        "(tun/ip-only devices have no link-layer header)",
        p->ifname, type);
  return {};
}

// Version, ring and mapping for one RX socket; it is bound at start.
error setup_rx_socket(port* p, rx_sock& s) {
  const int v = p->version == 2 ? TPACKET_V2 : TPACKET_V3;
  if (setsockopt(s.fd, SOL_PACKET, PACKET_VERSION, &v, sizeof v) != 0)
    return socket_error(p, p->version == 2 ? "PACKET_VERSION TPACKET_V2" : "PACKET_VERSION TPACKET_V3 (Linux >= 3.2)",
                        errno);
  const int one = 1;
  if (setsockopt(s.fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one) == 0) {
    p->ignore_outgoing = true;
  } else {
    const int e = errno;
    if (e != ENOPROTOOPT && e != EINVAL) return socket_error(p, "PACKET_IGNORE_OUTGOING", e);
    p->ignore_outgoing = false;  // Linux < 4.20: rx_burst skips PACKET_OUTGOING frames itself
  }
  tpacket_req3 req{};
  req.tp_block_size = p->block_size;
  req.tp_block_nr = p->blocks;
  req.tp_frame_size = p->version == 2 ? p->frame_size : k_frame_size;
  req.tp_frame_nr = (p->block_size / req.tp_frame_size) * p->blocks;
  req.tp_retire_blk_tov = k_retire_ms;
  req.tp_sizeof_priv = 0;
  req.tp_feature_req_word = 0;
  // V2 takes the leading tpacket_req part of the same request.
  const socklen_t req_len = p->version == 2 ? sizeof(tpacket_req) : sizeof req;
  if (setsockopt(s.fd, SOL_PACKET, PACKET_RX_RING, &req, req_len) != 0) {
    const int e = errno;
    if (e == ENOMEM)
      return fail(status::no_memory,
                  "af_packet: the kernel could not allocate an RX ring of {} blocks x {} bytes for '{}'; use fewer "
                  "blocks=, a smaller block_size= or fewer queues=",
                  p->blocks, p->block_size, p->ifname);
    return socket_error(p, "PACKET_RX_RING", e);
  }
  s.map_bytes = static_cast<size_t>(p->block_size) * p->blocks;
  void* m = mmap(nullptr, s.map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, s.fd, 0);
  if (m == MAP_FAILED) {
    const int e = errno;
    s.map_bytes = 0;
    return fail(e == ENOMEM ? status::no_memory : status::io_failed,
                "af_packet: mapping the RX ring of '{}' ({} bytes) failed: {}", p->ifname,
                static_cast<size_t>(p->block_size) * p->blocks, err_text(e));
  }
  s.map = static_cast<uint8_t*>(m);
  s.block = 0;
  s.left = 0;
  s.next = nullptr;
  return {};
}

// The kind of the interface's root qdisc ("fq", "noqueue", "mq", ...), asked
// of the kernel over rtnetlink (what `tc qdisc show dev NAME` prints first).
error root_qdisc(const port* p, std::string* kind) {
  const int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0) return socket_error(p, "rtnetlink socket (to read the qdisc)", errno);
  struct {
    nlmsghdr h;
    tcmsg t;
  } req{};
  req.h.nlmsg_len = sizeof req;
  req.h.nlmsg_type = RTM_GETQDISC;
  req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  req.h.nlmsg_seq = 1;
  req.t.tcm_family = AF_UNSPEC;
  req.t.tcm_ifindex = p->ifindex;
  if (send(fd, &req, sizeof req, 0) < 0) {
    const int e = errno;
    close(fd);
    return socket_error(p, "asking rtnetlink for the qdisc", e);
  }
  std::vector<char> buf(64 * 1024);
  kind->clear();
  for (bool done = false; !done;) {
    const ssize_t n = recv(fd, buf.data(), buf.size(), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      close(fd);
      return socket_error(p, "reading the qdisc from rtnetlink", e);
    }
    int left = static_cast<int>(n);
    for (auto* h = reinterpret_cast<nlmsghdr*>(buf.data()); NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
      if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR) {
        done = true;
        break;
      }
      if (h->nlmsg_type != RTM_NEWQDISC) continue;
      const auto* t = static_cast<const tcmsg*>(NLMSG_DATA(h));
      if (t->tcm_ifindex != p->ifindex || t->tcm_parent != TC_H_ROOT) continue;
      int alen = static_cast<int>(h->nlmsg_len - NLMSG_LENGTH(sizeof *t));
      for (auto* a = reinterpret_cast<rtattr*>(const_cast<tcmsg*>(t) + 1); RTA_OK(a, alen); a = RTA_NEXT(a, alen))
        if (a->rta_type == TCA_KIND) kind->assign(static_cast<const char*>(RTA_DATA(a)));
    }
  }
  close(fd);
  return {};
}

error create_sockets(port* p, int probe_fd) {
  p->rx.resize(p->nqueues);
  for (uint32_t i = 0; i < p->nqueues; ++i) {
    rx_sock& s = p->rx[i];
    if (i == 0 && probe_fd >= 0) {
      s.fd = probe_fd;
    } else if (error e = new_packet_socket(p, &s.fd)) {
      return e;
    }
    if (error e = setup_rx_socket(p, s)) return e;
  }
  if (error e = new_packet_socket(p, &p->tx_fd)) return e;
  if (p->txtime) {
    // fq reads the times on CLOCK_MONOTONIC; tx_burst_at converts to it.
    const sock_txtime cfg{.clockid = CLOCK_MONOTONIC, .flags = 0};
    if (setsockopt(p->tx_fd, SOL_SOCKET, SO_TXTIME, &cfg, sizeof cfg) != 0)
      return socket_error(p, "SO_TXTIME (txtime=1; Linux 4.19 or newer)", errno);
    return {};
  }
  const int one = 1;
  if (setsockopt(p->tx_fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one) != 0) {
    const int e = errno;
    if (e != ENOPROTOOPT && e != EINVAL) return socket_error(p, "PACKET_QDISC_BYPASS", e);
    log(log_level::info, "af_packet: {}: no PACKET_QDISC_BYPASS (Linux < 3.14); transmitting through the qdisc",
        p->ifname);
  }
  return {};
}

error bind_socket(port* p, int fd, uint16_t proto) {
  sockaddr_ll a{};
  a.sll_family = AF_PACKET;
  a.sll_protocol = htons(proto);
  a.sll_ifindex = p->ifindex;
  if (bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0) return {};
  const int e = errno;
  if (e == ENODEV || e == ENXIO)
    return fail(status::not_found, "af_packet: interface '{}' (index {}) no longer exists: {}", p->ifname, p->ifindex,
                err_text(e));
  if (e == ENETDOWN)
    return fail(status::not_connected, "af_packet: interface {} is down; ip link set {} up", p->ifname, p->ifname);
  return socket_error(p, "bind", e);
}

// Fanout sockets are bound one by one and only then joined; a drop-everything
// filter on each until the group is complete keeps a frame from reaching a
// bound socket that is not in the group yet (it would be delivered twice).
error set_drop_all(port* p, int fd, bool on) {
  static sock_filter drop[] = {{BPF_RET | BPF_K, 0, 0, 0}};
  sock_fprog prog{1, drop};
  const int unused = 0;  // the kernel checks optlen >= sizeof(int) even here
  int rc = on ? setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog)
              : setsockopt(fd, SOL_SOCKET, SO_DETACH_FILTER, &unused, sizeof unused);
  if (rc != 0) return socket_error(p, on ? "SO_ATTACH_FILTER" : "SO_DETACH_FILTER", errno);
  return {};
}

// filter=EXPR for SO_ATTACH_FILTER: libpcap's program for an Ethernet
// capture behind a prologue that passes every frame whose VLAN tag the
// kernel took into metadata. Linux runs socket filters on the frame without
// that tag (gnio puts it back after), so the expression's offsets would be
// wrong for it: such frames are left to the kernels' own run of the filter,
// which sees them whole. Every other frame the expression refuses never
// reaches the ring.
error socket_filter(port* p, const std::string& expr) {
  auto f = gnio::compile_filter(expr);
  if (!f) return fail(f.err().code(), "af_packet: filter={}: {}", expr, f.err().message());
  constexpr uint32_t prologue = 3;
  if (f->insns.size() + prologue > BPF_MAXINSNS)
    return fail(status::invalid_value, "af_packet: filter={}: {} instructions; a socket filter takes at most {}", expr,
                f->insns.size(), BPF_MAXINSNS - prologue);
  p->filter_expr = expr;
  p->filter.clear();
  // A = 1 when the frame's tag is in metadata; then accept it whole.
  p->filter.push_back({BPF_LD | BPF_W | BPF_ABS, 0, 0, static_cast<uint32_t>(SKF_AD_OFF + SKF_AD_VLAN_TAG_PRESENT)});
  p->filter.push_back({BPF_JMP | BPF_JEQ | BPF_K, 1, 0, 0});
  p->filter.push_back({BPF_RET | BPF_K, 0, 0, 0xffffffffu});
  // The program's jumps are relative: it runs unchanged after the prologue.
  for (const auto& in : f->insns) p->filter.push_back({in.code, in.jt, in.jf, in.k});
  return {};
}

error attach_filter(port* p, int fd) {
  sock_fprog prog{static_cast<unsigned short>(p->filter.size()), p->filter.data()};
  if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog) != 0)
    return socket_error(p, "SO_ATTACH_FILTER (filter=)", errno);
  return {};
}

error join_fanout(port* p) {
  // A kernel-chosen unique id (Linux >= 4.3) cannot collide with another
  // process's group on the same interface, which would share its traffic.
  // Older kernels get an id from the pid and a per-process sequence number.
  static std::atomic<uint32_t> seq{0};
  uint32_t id = 0;
  const uint32_t unique = (PACKET_FANOUT_HASH | PACKET_FANOUT_FLAG_UNIQUEID) << 16;
  if (setsockopt(p->rx[0].fd, SOL_PACKET, PACKET_FANOUT, &unique, sizeof unique) == 0) {
    uint32_t got = 0;
    socklen_t len = sizeof got;
    if (getsockopt(p->rx[0].fd, SOL_PACKET, PACKET_FANOUT, &got, &len) != 0)
      return socket_error(p, "reading the PACKET_FANOUT group id", errno);
    id = got & 0xffff;
  } else {
    const int e = errno;
    if (e != EINVAL) return socket_error(p, "PACKET_FANOUT", e);
    id = (static_cast<uint32_t>(getpid()) + 7919u * seq.fetch_add(1)) & 0xffff;
    const uint32_t arg = id | (PACKET_FANOUT_HASH << 16);
    if (setsockopt(p->rx[0].fd, SOL_PACKET, PACKET_FANOUT, &arg, sizeof arg) != 0) {
      const int e2 = errno;
      return fail(e2 == EINVAL ? status::in_use : status_from_errno(e2),
                  "af_packet: PACKET_FANOUT group {} on '{}' failed: {} (another process may use that group id)", id,
                  p->ifname, err_text(e2));
    }
  }
  const uint32_t arg = id | (PACKET_FANOUT_HASH << 16);
  for (uint32_t i = 1; i < p->rx.size(); ++i) {
    if (setsockopt(p->rx[i].fd, SOL_PACKET, PACKET_FANOUT, &arg, sizeof arg) != 0)
      return socket_error(p, "joining the PACKET_FANOUT group", errno);
  }
  return {};
}

error af_packet_open(const devargs& a, void** priv) {
  *priv = nullptr;
  if (error e = check_keys(a, {"if", "queues", "blocks", "block_size", "promisc", "tpacket", "txtime", "filter"}))
    return e;
  auto* p = new port;
  auto bail = [&](error e) {
    destroy(p);
    return e;
  };
  if (error e = get_string(a, "if", &p->ifname)) return bail(e);
  if (p->ifname.empty())
    return bail(
        fail(status::bad_config, "af_packet: '{}' names no interface; give if=NAME (e.g. af_packet:if=eth0)", a.text));
  if (p->ifname.size() >= IFNAMSIZ || p->ifname.find('/') != std::string::npos)
    return bail(fail(status::invalid_value, "af_packet: if={} is not an interface name (at most {} characters, no '/')",
                     p->ifname, IFNAMSIZ - 1));
  uint64_t queues = 1, blocks = k_default_blocks, block_size = k_default_block_size, promisc = 1, version = 3,
           txtime = 0;
  if (error e = get_u64(a, "queues", 1, k_max_queues, &queues)) return bail(e);
  if (error e = get_u64(a, "blocks", 2, 1u << 16, &blocks)) return bail(e);
  if (error e = get_u64(a, "block_size", 4096, 1u << 27, &block_size)) return bail(e);
  if (error e = get_u64(a, "promisc", 0, 1, &promisc)) return bail(e);
  if (error e = get_u64(a, "tpacket", 2, 3, &version)) return bail(e);
  if (error e = get_u64(a, "txtime", 0, 1, &txtime)) return bail(e);
  std::string filter;
  if (error e = get_string(a, "filter", &filter)) return bail(e);
  if (!filter.empty())
    if (error e = socket_filter(p, filter)) return bail(e);
  const long page = sysconf(_SC_PAGESIZE);
  // The kernel allocates blocks in power-of-two pages; any other size wastes the rest.
  if ((block_size & (block_size - 1)) != 0 || (page > 0 && block_size % static_cast<uint64_t>(page) != 0))
    return bail(fail(status::invalid_value,
                     "af_packet: block_size={} must be a power of two and a multiple of the page size ({})", block_size,
                     page));
  if (blocks * block_size > 0xffffffffull)
    return bail(fail(status::invalid_value,
                     "af_packet: blocks={} x block_size={} is 4 GiB or more per socket; the kernel refuses it", blocks,
                     block_size));
  p->nqueues = static_cast<uint32_t>(queues);
  p->blocks = static_cast<uint32_t>(blocks);
  p->block_size = static_cast<uint32_t>(block_size);
  p->promisc = promisc != 0;
  p->version = static_cast<uint32_t>(version);
  p->txtime = txtime != 0;

  p->ifindex = static_cast<int>(if_nametoindex(p->ifname.c_str()));
  if (p->ifindex == 0) {
    const int e = errno;
    if (e == ENODEV || e == ENXIO || e == 0)
      return bail(fail(status::not_found,
                       "af_packet: no interface '{}' in this network namespace; `ip link show` lists them", p->ifname));
    return bail(fail(status_from_errno(e), "af_packet: looking up interface '{}' failed: {}", p->ifname, err_text(e)));
  }
  int probe = -1;
  if (error e = new_packet_socket(p, &probe)) return bail(e);
  short flags = 0;
  if (error e = query_interface(p, probe, &flags)) {
    close(probe);
    return bail(e);
  }
  if (!(flags & IFF_UP)) {
    close(probe);
    return bail(
        fail(status::not_connected, "af_packet: interface {} is down; ip link set {} up", p->ifname, p->ifname));
  }
  if (!(flags & IFF_RUNNING))
    log(log_level::warn,
        "af_packet: interface {} is up but has no carrier (cable, or a veth whose peer is down); "
        "nothing arrives until it has one",
        p->ifname);
  if (p->txtime) {
    // Only fq honours a time on its own (EDT); without it the frame would
    // leave at once, before its time. etf drops a frame whose time has
    // passed, which this backend cannot count yet.
    std::string kind;
    if (error e = root_qdisc(p, &kind)) {
      close(probe);
      return bail(e);
    }
    if (kind != "fq") {
      close(probe);
      return bail(fail(status::not_supported,
                       "af_packet: txtime=1 needs the fq qdisc at the root of {} (it has '{}'), which holds each frame "
                       "until its time: tc qdisc replace dev {} root fq; or leave txtime out and the engine holds "
                       "the frames",
                       p->ifname, kind.empty() ? "none" : kind, p->ifname));
    }
  }
  // Room for one full frame per block, or the kernel cuts every frame short.
  const uint32_t need = p->mtu + k_eth_hdr + k_vlan_hdr + 128;
  if (p->block_size < need) {
    close(probe);
    return bail(fail(status::invalid_value,
                     "af_packet: block_size={} cannot hold one frame of '{}' (MTU {}); use at least {}", p->block_size,
                     p->ifname, p->mtu, need));
  }
  if (p->version == 2) {
    // Fixed slots, a power of two that holds the header and one MTU-sized
    // frame; block_size (a power of two of at least `need`) is a multiple.
    uint32_t fs = k_frame_size;
    while (fs < need) fs <<= 1;
    p->frame_size = fs;
    p->frame_nr = (p->block_size / fs) * p->blocks;
  }
  if (error e = create_sockets(p, probe)) return bail(e);
  *priv = p;
  return {};
}

void af_packet_caps(void* priv, port_caps* c) {
  auto* p = static_cast<port*>(priv);
  *c = port_caps{};
  c->rx = true;
  c->tx = true;
  c->max_rx_queues = k_max_queues;
  c->max_tx_queues = k_max_queues;
  c->max_pkt_bytes = p->mtu + k_eth_hdr + k_vlan_hdr;
  c->min_ring_descs = 2;
  c->max_ring_descs = 1u << 20;
  c->rx_timestamps = true;
  c->finite = false;
  if (p->txtime) c->tx_time = tx_time_mode::kernel;
}

error af_packet_start(void* priv) {
  auto* p = static_cast<port*>(priv);
  if (p->started) return {};
  std::lock_guard lk(p->mu);
  // A port restarted through the ops table after stop() gets fresh sockets.
  if (p->rx.empty()) {
    if (error e = create_sockets(p, -1)) {
      close_sockets(p);
      return e;
    }
  }
  auto undo = [&](error e) {
    close_sockets(p);  // unbinds everything; the next start builds them again
    return e;
  };
  const bool fanout = p->rx.size() > 1;
  const bool filtered = !p->filter.empty();
  for (auto& s : p->rx) {
    if (fanout) {
      if (error e = set_drop_all(p, s.fd, true)) return undo(e);
    } else if (filtered) {
      // Before bind: no frame reaches the ring unfiltered.
      if (error e = attach_filter(p, s.fd)) return undo(e);
    }
    if (error e = bind_socket(p, s.fd, ETH_P_ALL)) return undo(e);
  }
  if (fanout) {
    if (error e = join_fanout(p)) return undo(e);
    // filter= replaces the drop-everything filter in one step.
    for (auto& s : p->rx)
      if (error e = filtered ? attach_filter(p, s.fd) : set_drop_all(p, s.fd, false)) return undo(e);
  }
  if (p->promisc) {
    // A membership, not IFF_PROMISC: the kernel drops it when the socket closes,
    // even if this process dies.
    packet_mreq mr{};
    mr.mr_ifindex = p->ifindex;
    mr.mr_type = PACKET_MR_PROMISC;
    if (setsockopt(p->rx[0].fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof mr) != 0)
      return undo(socket_error(p, "PACKET_ADD_MEMBERSHIP PACKET_MR_PROMISC (promisc=0 turns it off)", errno));
  }
  if (error e = bind_socket(p, p->tx_fd, 0)) return undo(e);
  // Drops counted before start are not this run's.
  tpacket_stats_v3 st{};
  for (auto& s : p->rx) {
    socklen_t len = sizeof st;
    (void)getsockopt(s.fd, SOL_PACKET, PACKET_STATISTICS, &st, &len);
  }
  p->started = true;
  p->gone = false;
  p->warned_down = false;
  p->next_check_ns = 0;
  return {};
}

error af_packet_stop(void* priv) {
  auto* p = static_cast<port*>(priv);
  std::lock_guard lk(p->mu);
  if (!p->started) return {};
  collect_kernel_stats(p);
  // The port is not restarted; closing now stops the kernel filling rings
  // nobody reads (and counting those frames as drops).
  close_sockets(p);
  p->started = false;
  return {};
}

void af_packet_close(void* priv) { destroy(static_cast<port*>(priv)); }

// Completes the TCP/UDP checksum of a frame whose sender left it to hardware
// offload (the field holds only the pseudo-header sum). A NIC would have put
// the complete one on the wire, which is what a receiver must see.
void complete_l4_checksum(uint8_t* f, uint32_t len) {
  using namespace gnio::device;
  parsed_pkt pp{};
  (void)parse(f, len, pp);
  if (pp.is_fragment || (pp.l4 != l4_kind::tcp && pp.l4 != l4_kind::udp)) return;
  uint32_t end = 0;
  if (pp.l3 == l3_kind::ipv4) {
    end = pp.l3_off + pp.ipv4.total_length;
  } else if (pp.l3 == l3_kind::ipv6) {
    end = pp.l3_off + 40u + pp.ipv6.payload_length;
  } else {
    return;
  }
  const uint32_t field = pp.l4_off + (pp.l4 == l4_kind::tcp ? 16u : 6u);
  if (end > len || end < pp.l4_off || field + 2 > end) return;
  // An IPv4 UDP checksum of 0 means "none" (e.g. a tunnel's outer header
  // whose inner packet carries the offloaded checksum, which stays as it is).
  if (pp.l4 == l4_kind::udp && pp.l3 == l3_kind::ipv4 && f[field] == 0 && f[field + 1] == 0) return;
  uint8_t* l4 = f + pp.l4_off;
  const uint32_t l4_len = end - pp.l4_off;
  const uint8_t proto = pp.l4 == l4_kind::tcp ? ipproto_tcp : ipproto_udp;
  f[field] = 0;
  f[field + 1] = 0;
  uint16_t c = pp.l3 == l3_kind::ipv4 ? l4_checksum_ipv4(pp.ipv4.src, pp.ipv4.dst, proto, l4, l4_len)
                                      : l4_checksum_ipv6(pp.ipv6.src, pp.ipv6.dst, proto, l4, l4_len);
  if (proto == ipproto_udp && c == 0) c = 0xffff;  // 0 would mean "no checksum"
  f[field] = static_cast<uint8_t>(c >> 8);
  f[field + 1] = static_cast<uint8_t>(c);
}

void release_block(port* p, rx_sock& s) {
  auto* b = reinterpret_cast<tpacket_block_desc*>(s.map + static_cast<size_t>(s.block) * p->block_size);
  // Pairs with the kernel's read of block_status: our reads of the block are
  // done before it may refill it.
  __atomic_store_n(&b->hdr.bh1.block_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
  s.block = (s.block + 1) % p->blocks;
  s.left = 0;
  s.next = nullptr;
}

enum class entry { delivered, skipped, damaged };

// The VLAN tag of a V3 or a V2 frame header.
uint16_t vlan_tci(const tpacket3_hdr* h) { return static_cast<uint16_t>(h->hv1.tp_vlan_tci); }
uint16_t vlan_tpid(const tpacket3_hdr* h) { return h->hv1.tp_vlan_tpid; }
uint16_t vlan_tci(const tpacket2_hdr* h) { return h->tp_vlan_tci; }
uint16_t vlan_tpid(const tpacket2_hdr* h) { return h->tp_vlan_tpid; }

// Hands one frame to the lane.
template <class Hdr>
entry deliver_one(port* p, lane_state& l, rx_lane& sink, const uint8_t* block_end, const Hdr* h) {
  const auto* base = reinterpret_cast<const uint8_t*>(h);
  if (base + sizeof(Hdr) > block_end || base + h->tp_mac + h->tp_snaplen > block_end) return entry::damaged;
  if (!p->ignore_outgoing) {
    const auto* sll = reinterpret_cast<const sockaddr_ll*>(base + TPACKET_ALIGN(sizeof(Hdr)));
    if (sll->sll_pkttype == PACKET_OUTGOING) return entry::skipped;  // our own (or the host's) transmission
  }
  const uint8_t* data = base + h->tp_mac;
  uint32_t len = h->tp_snaplen;
  uint32_t wire = h->tp_len;
  const uint32_t st = h->tp_status;
  const bool vlan = (st & TP_STATUS_VLAN_VALID) && len >= 12;
  const bool csum = st & TP_STATUS_CSUMNOTREADY;
  if (vlan || csum) {
    if (l.scratch.size() < len + k_vlan_hdr) l.scratch.resize(len + k_vlan_hdr);
    uint8_t* f = l.scratch.data();
    if (vlan) {
      // The stack moved the outer tag into metadata before packet sockets
      // saw the frame; put it back where it was on the wire.
      const uint16_t tpid = (st & TP_STATUS_VLAN_TPID_VALID) ? vlan_tpid(h) : ETH_P_8021Q;
      const uint16_t tci = vlan_tci(h);
      std::memcpy(f, data, 12);
      f[12] = static_cast<uint8_t>(tpid >> 8);
      f[13] = static_cast<uint8_t>(tpid);
      f[14] = static_cast<uint8_t>(tci >> 8);
      f[15] = static_cast<uint8_t>(tci);
      std::memcpy(f + 16, data + 12, len - 12);
      len += k_vlan_hdr;
      wire += k_vlan_hdr;
    } else {
      std::memcpy(f, data, len);
    }
    if (csum) complete_l4_checksum(f, len);
    data = f;
  }
  const uint64_t ts = static_cast<uint64_t>(h->tp_sec) * 1'000'000'000u + h->tp_nsec;
  (void)sink.deliver(data, len, wire, ts);  // a full ring is counted by the core as missed
  bump(p->rx_frames);
  bump(p->rx_bytes, len);
  return entry::delivered;
}

// TPACKET_V2: frame slots, each with its own status word.
uint32_t drain_v2(port* p, lane_state& l, rx_sock& s, rx_lane& sink, uint32_t budget) {
  uint32_t got = 0;
  while (got < budget) {
    uint8_t* slot = s.map + static_cast<size_t>(s.block) * p->frame_size;
    auto* h = reinterpret_cast<tpacket2_hdr*>(slot);
    // Pairs with the kernel's release of the frame: its bytes are complete
    // once we see TP_STATUS_USER.
    const uint32_t st = __atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE);
    if (!(st & TP_STATUS_USER)) break;
    const entry r = deliver_one(p, l, sink, slot + p->frame_size, h);
    if (r == entry::damaged) {
      bump(p->rx_bad);
      if (!p->warned_corrupt.exchange(true, std::memory_order_relaxed))
        log(log_level::warn, "af_packet: {}: a ring frame points outside its slot; skipped", p->ifname);
    }
    got += r == entry::delivered;
    // Pairs with the kernel's read of tp_status: our reads of the slot are
    // done before it may refill it.
    __atomic_store_n(&h->tp_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
    s.block = (s.block + 1) % p->frame_nr;
  }
  return got;
}

uint32_t drain(port* p, lane_state& l, rx_sock& s, rx_lane& sink, uint32_t budget) {
  if (p->version == 2) return drain_v2(p, l, s, sink, budget);
  uint32_t got = 0;
  while (got < budget) {
    uint8_t* block = s.map + static_cast<size_t>(s.block) * p->block_size;
    auto* b = reinterpret_cast<tpacket_block_desc*>(block);
    if (s.left == 0) {
      // Pairs with the kernel's release of the block: the frames in it are
      // complete once we see TP_STATUS_USER.
      const uint32_t bs = __atomic_load_n(&b->hdr.bh1.block_status, __ATOMIC_ACQUIRE);
      if (!(bs & TP_STATUS_USER)) break;
      const uint32_t n = b->hdr.bh1.num_pkts;
      const uint32_t first = b->hdr.bh1.offset_to_first_pkt;
      if (n == 0 || first >= p->block_size) {
        if (n != 0) bump(p->rx_bad, n);
        release_block(p, s);
        continue;
      }
      s.left = n;
      s.next = reinterpret_cast<const tpacket3_hdr*>(block + first);
    }
    const tpacket3_hdr* h = s.next;
    const uint8_t* end = block + p->block_size;
    const entry r = deliver_one(p, l, sink, end, h);
    if (r == entry::damaged) {
      // Never seen in practice; skipping the rest of the block beats reading
      // outside it.
      bump(p->rx_bad, s.left);
      if (!p->warned_corrupt.exchange(true, std::memory_order_relaxed))
        log(log_level::warn, "af_packet: {}: a ring entry points outside its block; {} frame(s) skipped", p->ifname,
            s.left);
      release_block(p, s);
      continue;
    }
    got += r == entry::delivered;
    if (--s.left == 0) {
      release_block(p, s);
    } else {
      const uint32_t off = h->tp_next_offset;
      const uint8_t* nx = reinterpret_cast<const uint8_t*>(h) + off;
      if (off == 0 || nx + sizeof(tpacket3_hdr) > end) {
        bump(p->rx_bad, s.left);
        release_block(p, s);
        continue;
      }
      s.next = reinterpret_cast<const tpacket3_hdr*>(nx);
    }
  }
  return got;
}

bool interface_exists(const port* p, bool* up) {
  char name[IF_NAMESIZE] = {};
  if (!if_indextoname(static_cast<unsigned>(p->ifindex), name)) return false;
  *up = true;
  ifreq ifr{};
  std::memcpy(ifr.ifr_name, name, sizeof name);
  if (!p->rx.empty() && ioctl(p->rx[0].fd, SIOCGIFFLAGS, &ifr) == 0) *up = (ifr.ifr_flags & IFF_UP) != 0;
  return true;
}

// Logs why receive failed and keeps the first such text for the last_error
// op; every lane then reports the failure, so the whole stream ends.
status rx_failed(port* p, status s, std::string why) {
  log(log_level::error, "{}", why);
  p->failure.set(std::move(why));
  return s;
}

const char* af_packet_last_error(void* priv) { return static_cast<port*>(priv)->failure.text(); }

// Runs when a burst found nothing: notices an interface that went down or away.
status check_health(port* p) {
  const uint64_t now = mono_ns();
  if (p->gone) {
    if (now - p->gone_at_ns < k_gone_grace_ns) return status::again;
    return rx_failed(p, status::io_failed,
                     fmt::format("af_packet: interface {} (index {}) was removed while the port was running ({}); "
                                 "receive stopped, counters are kept",
                                 p->ifname, p->ifindex, err_text(ENODEV)));
  }
  if (now < p->next_check_ns) return status::again;
  p->next_check_ns = now + k_health_period_ns;
  pollfd fds[k_max_queues];
  const size_t n = p->rx.size();
  for (size_t i = 0; i < n; ++i) fds[i] = {p->rx[i].fd, 0, 0};  // POLLERR is always reported
  int rc = poll(fds, n, 0);
  if (rc < 0) {
    const int e = errno;
    if (e == EINTR) return status::again;
    return rx_failed(p, status::io_failed, fmt::format("af_packet: {}: poll failed: {}", p->ifname, err_text(e)));
  }
  bool saw_error = false;
  int last_err = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!(fds[i].revents & (POLLERR | POLLHUP | POLLNVAL))) continue;
    int soerr = 0;
    socklen_t len = sizeof soerr;
    if (getsockopt(p->rx[i].fd, SOL_SOCKET, SO_ERROR, &soerr, &len) == 0 && soerr != 0) {
      saw_error = true;
      last_err = soerr;
    }
  }
  // The kernel reports ENETDOWN both for "down" and for "being removed";
  // which one it was shows in whether the index still names an interface.
  if (!saw_error && !p->warned_down) return status::again;
  bool up = false;
  if (!interface_exists(p, &up)) {
    p->gone = true;
    p->gone_at_ns = now;
    return status::again;
  }
  if (!up && !p->warned_down) {
    log(log_level::warn, "af_packet: interface {} went down ({}); waiting for it to come back up (ip link set {} up)",
        p->ifname, err_text(last_err ? last_err : ENETDOWN), p->ifname);
    p->warned_down = true;
  } else if (up && p->warned_down) {
    log(log_level::info, "af_packet: interface {} is up again", p->ifname);
    p->warned_down = false;
  } else if (saw_error && up) {
    log(log_level::warn, "af_packet: {}: socket error {}", p->ifname, err_text(last_err));
  }
  return status::again;
}

// Lane `lane` of lanes=N reads sockets lane, lane + N, ...: the kernel's
// fanout hash keeps a flow on one socket, so on one lane.
status af_packet_rx_burst(void* priv, rx_lane& sink, uint32_t budget, uint32_t* produced) {
  const uint32_t lane = sink.index();
  auto* p = static_cast<port*>(priv);
  *produced = 0;
  if (!p->started || p->rx.empty() || lane >= p->lanes.size()) {
    return rx_failed(p, status::bad_state,
                     fmt::format("af_packet: {}: receive called on a port that is not started", p->ifname));
  }
  if (p->failure.failed()) return status::io_failed;
  auto& l = p->lanes[lane];
  const uint32_t nl = static_cast<uint32_t>(p->lanes.size());
  const uint32_t ns = static_cast<uint32_t>(p->rx.size());
  const uint32_t mine = (ns - lane + nl - 1) / nl;  // sockets lane, lane + nl, ...
  uint32_t n = 0;
  // Starting at a different socket each call keeps one busy socket from
  // taking every burst.
  for (uint32_t k = 0; k < mine && n < budget; ++k)
    n += drain(p, l, p->rx[lane + ((l.rr + k) % mine) * nl], sink, budget - n);
  l.rr = (l.rr + 1) % mine;
  *produced = n;
  if (n > 0) return status::success;
  return lane == 0 ? check_health(p) : status::again;
}

error af_packet_set_lanes(void* priv, uint32_t lanes) {
  auto* p = static_cast<port*>(priv);
  if (lanes == 0 || lanes > p->nqueues)
    return fail(status::invalid_value,
                "af_packet: lanes={} needs queues={} or more: each lane reads its own fanout sockets", lanes, lanes);
  p->lanes.assign(lanes, lane_state{});
  return {};
}

// Sends n frames; with `times` (CLOCK_MONOTONIC nanoseconds, 0: none) each
// timed frame carries its time for the qdisc (txtime=1).
error send_frames(port* p, const tx_frame* frames, const uint64_t* times, uint32_t n, uint32_t* sent) {
  *sent = 0;
  if (!p->started || p->tx_fd < 0)
    return fail(status::bad_state, "af_packet: {}: transmit on a port that is not started", p->ifname);
  mmsghdr msgs[k_tx_batch];
  iovec iov[k_tx_batch];
  alignas(cmsghdr) char ctrl[k_tx_batch][CMSG_SPACE(sizeof(uint64_t))];
  uint32_t ok = 0, failed = 0, i = 0;
  uint64_t bytes = 0;
  int retries = 0;
  error first;
  while (i < n) {
    const uint32_t m = std::min<uint32_t>(n - i, k_tx_batch);
    for (uint32_t k = 0; k < m; ++k) {
      iov[k] = {const_cast<uint8_t*>(frames[i + k].data), frames[i + k].len};
      msgs[k] = {};
      msgs[k].msg_hdr.msg_iov = &iov[k];
      msgs[k].msg_hdr.msg_iovlen = 1;
      if (times && times[i + k] != 0) {
        msgs[k].msg_hdr.msg_control = ctrl[k];
        msgs[k].msg_hdr.msg_controllen = sizeof ctrl[k];
        cmsghdr* c = CMSG_FIRSTHDR(&msgs[k].msg_hdr);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_TXTIME;
        c->cmsg_len = CMSG_LEN(sizeof(uint64_t));
        std::memcpy(CMSG_DATA(c), &times[i + k], sizeof(uint64_t));
      }
    }
    // Non-blocking: the engine thread must never sleep in the kernel here.
    const int r = sendmmsg(p->tx_fd, msgs, m, MSG_DONTWAIT);
    if (r > 0) {
      for (int k = 0; k < r; ++k) bytes += frames[i + k].len;
      ok += static_cast<uint32_t>(r);
      i += static_cast<uint32_t>(r);
      retries = 0;
      continue;
    }
    const int e = r < 0 ? errno : EIO;
    if (e == EINTR) continue;
    if (e == EAGAIN || e == ENOBUFS) {
      // The device queue (or socket buffer) is full: wait a little, boundedly.
      if (++retries <= k_tx_full_retries) {
        std::this_thread::sleep_for(std::chrono::microseconds(20));
        continue;
      }
      if (!first)
        first = fail(status::full, "af_packet: {}: the transmit queue stayed full ({}); {} frame(s) dropped", p->ifname,
                     err_text(e), n - i);
      failed += n - i;
      break;
    }
    if (e == EMSGSIZE || e == EINVAL) {
      // One bad frame: drop it and keep sending the others.
      if (!first)
        first = fail(e == EMSGSIZE ? status::too_big : status::invalid_value,
                     "af_packet: {}: frame of {} bytes refused ({}); the interface takes {}..{} bytes", p->ifname,
                     frames[i].len, err_text(e), k_eth_hdr, p->mtu + k_eth_hdr + k_vlan_hdr);
      ++failed;
      ++i;
      continue;
    }
    if (!first) {
      if (e == ENXIO || e == ENODEV)
        first = fail(status::io_failed, "af_packet: {}: transmit failed: the interface was removed ({})", p->ifname,
                     err_text(e));
      else if (e == ENETDOWN)
        first = fail(status::io_failed, "af_packet: {}: transmit failed: the interface is down ({})", p->ifname,
                     err_text(e));
      else
        first = fail(status_from_errno(e) == status::invalid_value ? status::io_failed : status_from_errno(e),
                     "af_packet: {}: transmit failed: {}", p->ifname, err_text(e));
    }
    failed += n - i;
    break;
  }
  bump(p->tx_frames, ok);
  bump(p->tx_bytes, bytes);
  bump(p->tx_errors, failed);
  *sent = ok;
  return first;
}

error af_packet_tx_burst(void* priv, const tx_frame* frames, uint32_t n, uint32_t* sent) {
  return send_frames(static_cast<port*>(priv), frames, nullptr, n, sent);
}

// txtime=1: the times (CLOCK_REALTIME) moved to the socket's clock,
// CLOCK_MONOTONIC, at one reading of both clocks per burst.
error af_packet_tx_burst_at(void* priv, const tx_frame* frames, const uint64_t* not_before, uint32_t n,
                            uint32_t* sent) {
  auto* p = static_cast<port*>(priv);
  timespec rt{}, mt{};
  clock_gettime(CLOCK_REALTIME, &rt);
  clock_gettime(CLOCK_MONOTONIC, &mt);
  const int64_t shift = (static_cast<int64_t>(mt.tv_sec) - rt.tv_sec) * 1'000'000'000 + (mt.tv_nsec - rt.tv_nsec);
  uint64_t mono[k_tx_batch];
  uint32_t done = 0;
  while (done < n) {
    const uint32_t m = std::min<uint32_t>(n - done, k_tx_batch);
    for (uint32_t k = 0; k < m; ++k) {
      const uint64_t t = not_before[done + k];
      // A time before the monotonic clock's start is simply due now.
      mono[k] = t == 0 ? 0 : std::max<int64_t>(static_cast<int64_t>(t) + shift, 1);
    }
    uint32_t s = 0;
    error e = send_frames(p, frames + done, mono, m, &s);
    done += s;
    if (e) {
      *sent = done;
      return e;
    }
  }
  *sent = done;
  return {};
}

void af_packet_counters(void* priv, counters* c) {
  auto* p = static_cast<port*>(priv);
  {
    std::lock_guard lk(p->mu);
    if (p->started) collect_kernel_stats(p);
  }
  c->rx_frames = p->rx_frames.load(std::memory_order_relaxed);
  c->rx_bytes = p->rx_bytes.load(std::memory_order_relaxed);
  c->rx_errors = p->rx_bad.load(std::memory_order_relaxed);
  c->rx_dropped = p->kernel_drops.load(std::memory_order_relaxed);
  c->tx_frames = p->tx_frames.load(std::memory_order_relaxed);
  c->tx_bytes = p->tx_bytes.load(std::memory_order_relaxed);
  c->tx_errors = p->tx_errors.load(std::memory_order_relaxed);
}

}  // namespace

extern const ops af_packet_ops;
const ops af_packet_ops = {
    .size = sizeof(ops),
    .name = "af_packet",
    .summary =
        "a Linux network interface through packet sockets: TPACKET_V3 RX rings (PACKET_FANOUT for queues>1), "
        "sendmmsg TX (needs CAP_NET_RAW)",
    .options =
        "if=NAME       interface to receive from and transmit on (required); it must exist in this network namespace\n"
        "              and be up: one that is down fails with not_connected (ip link set NAME up), a missing one with\n"
        "              not_found, and no CAP_NET_RAW with not_permitted\n"
        "queues=N      packet sockets in one PACKET_FANOUT_HASH group, 1..64 (default 1); a flow stays on one socket\n"
        "              (with the core option lanes=L, L <= N engine threads each read every L-th socket)\n"
        "blocks=N      TPACKET_V3 ring blocks per socket, 2..65536 (default 64)\n"
        "block_size=B  bytes per block: a power of two, a multiple of the page size, room for one MTU-sized frame\n"
        "              (default 262144); the kernel hands a block over when it is full or ~1 ms after its first frame\n"
        "              (a jiffy at least: up to 4 ms with HZ=250)\n"
        "tpacket=2|3   ring version (default 3). 3: TPACKET_V3 blocks, the least CPU per frame at high rates; 2:\n"
        "              TPACKET_V2, a status word per frame, so each frame is handed over at once: the low-latency\n"
        "              setting (blocks=N x block_size=B still size the ring)\n"
        "promisc=0|1   receive frames for any MAC address while the port is open (default 1; a socket membership,\n"
        "              dropped by the kernel when the port closes)\n"
        "filter=EXPR   a tcpdump expression (no commas) compiled with libpcap and attached to every socket\n"
        "              (SO_ATTACH_FILTER): frames it refuses never reach the ring and are not counted as received.\n"
        "              Frames whose VLAN tag the kernel stripped pass it and are left to the kernels' own filter.\n"
        "              gnio pp, flow_count and l2fwd set it from --filter\n"
        "Received: every frame the interface receives, not what it transmits; stripped VLAN tags are put back and\n"
        "checksums left to offload by a local sender (veth, lo) are completed. GRO/LRO merge TCP segments before\n"
        "packet sockets see them (ethtool -K NAME gro off lro off for one frame per packet). Frames the kernel\n"
        "dropped on a full ring count as rx_dropped. Transmitted frames bypass the qdisc (PACKET_QDISC_BYPASS).\n"
        "txtime=0|1    1: send through the interface's qdisc, each timed frame (device::tx_prepare_at) with its time\n"
        "              (SO_TXTIME), and let the fq qdisc hold it until then (gnio caps: tx_time kernel); needs fq at\n"
        "              the root (tc qdisc replace dev NAME root fq), else the port refuses to open. Times more than\n"
        "              fq's horizon ahead (10 s unless set) are refused by fq and counted as tx errors. 0 (default):\n"
        "              the engine holds each timed frame until its time (tx_time hold)\n"
        "If the interface goes down the port waits for it; if it is removed, receive fails with io_failed and\n"
        "the stream ends, counters kept.\n",
    .open = af_packet_open,
    .get_caps = af_packet_caps,
    .set_lanes = af_packet_set_lanes,
    .start = af_packet_start,
    .rx_burst = af_packet_rx_burst,
    .tx_burst = af_packet_tx_burst,
    .stop = af_packet_stop,
    .close = af_packet_close,
    .get_counters = af_packet_counters,
    .last_error = af_packet_last_error,
    .tx_burst_at = af_packet_tx_burst_at,
};

}  // namespace gnio::backend
