// SPDX-License-Identifier: Apache-2.0
// af_xdp: a real Linux interface through AF_XDP sockets (libxdp's xsk API).
//
// One XSK socket per kernel queue (queue=Q .. Q+queues-1). Their UMEMs are
// the port's RX pool: open() only checks the options and the interface, and
// rx_pool_setup() allocates one pool through the core (mapped, GPU-visible
// memory) and cuts it into one region per socket, each registered as that
// socket's UMEM. In each region the lower half of the frames receives, the
// upper half is a private free list for copied transmits. Every gnio TX queue
// sends through the first socket, so frames leave in the order they were
// rung. The XDP program that redirects to the sockets is gnio's own,
// attached through a bpf_link (see attach_program): it goes when the port
// closes, and also when the process is killed, and it runs in the mode=
// asked for or the port fails.
//
// Receive is by reference: each RX descriptor becomes a completion naming its
// UMEM buffer (rx_lane::deliver_ref, pool offset = region base + UMEM
// address), with no copy on the CPU. A held buffer belongs to the consuming
// (GPU) kernel until it released the completion; the engine then hands it
// back through rx_release and it goes on the fill ring again. A buffer the
// lane copied (GPU packet memory) or dropped goes back at once. The fill ring
// is fed only from those free buffers, so a consumer that releases nothing
// starves it and Linux drops (and counts) what arrives, never a buffer we
// hold. In drv mode with a zero-copy driver the NIC writes straight into the
// pool; in copy mode (skb, or drv without zero-copy) Linux copies each frame
// into it.
//
// Transmit of an RX buffer in place (tx_frame::pool_off, e.g. l2fwd) posts
// that UMEM address on the socket whose UMEM holds it, without a copy, and
// waits for its TX completion before tx_burst returns (the core's contract);
// other frames are copied into a TX frame of the first socket.
//
// Threads: each socket's RX and fill rings belong to the engine lane that
// reads it (socket i: lane i mod lanes); a buffer another lane releases
// travels to that lane through the socket's `returned` list. Every TX and
// completion ring is driven by lane 0 (which runs tx_burst) only.
// get_counters may run on any thread.

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <linux/ethtool.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <xdp/libxdp.h>
#include <xdp/xsk.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gnio/backend/backend.hpp"
#include "gnio/backend/log.hpp"

// Older UAPI headers lack these (Linux 5.11); the kernel refuses them where
// it lacks them too, and open says so.
#ifndef SO_PREFER_BUSY_POLL
#define SO_PREFER_BUSY_POLL 69
#endif
#ifndef SO_BUSY_POLL_BUDGET
#define SO_BUSY_POLL_BUDGET 70
#endif

namespace gnio::backend {

extern const ops af_xdp_ops;

namespace {

constexpr uint64_t k_default_frames = 4096;
constexpr uint64_t k_default_frame_size = 2048;
constexpr uint64_t k_max_queues = 64;
// The interface can vanish without any call failing (the socket is just
// unbound), so rx_burst looks for that this often.
constexpr uint64_t k_health_period_ns = 20'000'000;
// A transmit that cannot get a free frame or descriptor for this long gives up
// rather than stall the engine (and every RX queue behind it).
constexpr uint64_t k_tx_stall_ns = 500'000'000;
constexpr int k_busy_retries = 50;
constexpr useconds_t k_busy_retry_us = 10'000;

enum class attach_mode { skb, drv, automatic };

const char* mode_name(uint32_t xdp_flags) { return xdp_flags & XDP_FLAGS_SKB_MODE ? "skb" : "drv"; }

uint64_t clock_ns(clockid_t id) {
  timespec t{};
  clock_gettime(id, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(t.tv_nsec);
}

struct xsk_queue {
  uint32_t qid = 0;
  uint8_t* area = nullptr;  // this queue's region of the RX pool: its UMEM
  uint32_t base = 0;        // the region's byte offset in the pool
  uint32_t lane = 0;        // the engine lane that reads this socket and feeds its fill ring
  xsk_umem* umem = nullptr;
  xsk_socket* xsk = nullptr;
  int fd = -1;
  bool zerocopy = false;
  xsk_ring_prod fill{};
  xsk_ring_cons comp{};
  xsk_ring_cons rx{};
  xsk_ring_prod tx{};
  std::vector<uint64_t> rx_free;  // RX frames owned by us, waiting for the fill ring (lane `lane` only)
  // RX frames other lanes released (a gnio queue several lanes write holds
  // buffers of every lane's sockets), on their way to rx_free.
  std::mutex returned_mu;
  std::vector<uint64_t> returned;
  std::atomic<bool> has_returned{false};
  std::vector<uint64_t> tx_free;  // TX frames owned by us
  std::vector<uint32_t> tx_len;   // length last queued in each TX frame, counted at completion
  uint32_t tx_total = 0;          // TX frames in this UMEM
  // RX frames sent in place and not completed yet, and their lengths in
  // submission order (the same RX frame may be sent twice).
  uint32_t in_place = 0;
  std::deque<uint32_t> in_place_len;
  // Last XDP_STATISTICS read, so counters survive a socket the kernel unbound.
  xdp_statistics last{};
};

struct xdp_attachment;

struct port {
  rx_failure failure;  // why receive failed (last_error op); ends every lane
  std::string ifname;
  unsigned ifindex = 0;
  uint32_t first_queue = 0;
  uint32_t num_queues = 1;
  uint32_t channels = 0;
  attach_mode mode = attach_mode::automatic;
  int zerocopy = -1;  // -1: the kernel decides
  uint32_t frames = k_default_frames;
  uint32_t frame_size = k_default_frame_size;
  uint32_t busy_poll_us = 0;      // busy_poll=: SO_BUSY_POLL on every socket, 0 = off
  uint32_t busy_poll_budget = 0;  // busy_poll_budget=: SO_BUSY_POLL_BUDGET
  uint32_t rx_frames = 0;         // per queue
  uint32_t tx_frames = 0;         // per queue
  uint32_t xdp_flags = 0;         // the mode that was attached
  xdp_attachment* att = nullptr;  // the XDP program the sockets are in the map of (shared per interface)

  // The RX pool (rx_pool_setup): one region of frames * frame_size per socket.
  // The core allocated it and frees it after close.
  uint8_t* pool = nullptr;
  size_t region_bytes = 0;
  std::deque<xsk_queue> q;  // a deque: a queue holds a mutex and never moves

  // Engine state. With lanes=N (core option), lane L reads the sockets
  // L, L + N, ... and keeps its own rr; lane 0 also drives TX (it owns the
  // first socket, which transmits) and the health check.
  std::vector<uint32_t> lane_rr = std::vector<uint32_t>(1, 0);
  uint64_t next_health_ns = 0;
  uint32_t tx_kick_warnings = 0;
  uint32_t tx_sock = 0;  // the socket the last transmitted frame went out on
  std::atomic<uint32_t> bad_release_warnings{0};

  std::atomic<uint64_t> rx_pkts{0}, rx_bytes{0}, tx_pkts{0}, tx_bytes{0}, tx_errors{0};
  std::mutex stats_mu;  // guards xsk_queue::last
};

void bump(std::atomic<uint64_t>& c, uint64_t n = 1) { c.fetch_add(n, std::memory_order_relaxed); }

// libxdp and libbpf report why an attach failed only through their print
// callbacks (the kernel's extack text arrives there too), so while a socket is
// created their output is captured for the error message and forwarded to
// gnio's log instead of stderr. Both hooks are process-global.
// Recursive: a failed open tears down (and captures) inside its own capture.
std::recursive_mutex g_print_mu;
std::string* g_captured = nullptr;

void capture(bool warning, const char* fmt, va_list ap) {
  char buf[1024];
  int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
  if (n <= 0) return;
  std::string line(buf, std::min<size_t>(static_cast<size_t>(n), sizeof buf - 1));
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
  if (line.empty()) return;
  log(log_level::debug, "af_xdp: {}", line);
  // Only warnings explain a failure; the info lines are libbpf's ELF chatter.
  if (!warning || !g_captured || g_captured->find(line) != std::string::npos) return;
  if (!g_captured->empty()) *g_captured += "; ";
  *g_captured += line;
}

int libxdp_print(enum libxdp_print_level level, const char* fmt, va_list ap) {
  if (level != LIBXDP_DEBUG) capture(level == LIBXDP_WARN, fmt, ap);
  return 0;
}

int libbpf_print(enum libbpf_print_level level, const char* fmt, va_list ap) {
  if (level != LIBBPF_DEBUG) capture(level == LIBBPF_WARN, fmt, ap);
  return 0;
}

class print_capture {
 public:
  print_capture() : lk_(g_print_mu), outer_(g_captured) {
    g_captured = &text_;
    old_xdp_ = libxdp_set_print(libxdp_print);
    old_bpf_ = libbpf_set_print(libbpf_print);
  }
  ~print_capture() {
    libxdp_set_print(old_xdp_);
    libbpf_set_print(old_bpf_);
    g_captured = outer_;
  }
  print_capture(const print_capture&) = delete;
  print_capture& operator=(const print_capture&) = delete;
  // The warnings libxdp/libbpf gave since the last take(), as a suffix for
  // an error message ("" when they said nothing).
  std::string take() {
    std::string s;
    if (!text_.empty()) {
      // The last words are the ones nearest the failure.
      constexpr size_t k_max = 700;
      s = " (" + (text_.size() > k_max ? "..." + text_.substr(text_.size() - k_max) : text_) + ")";
    }
    text_.clear();
    return s;
  }

 private:
  std::lock_guard<std::recursive_mutex> lk_;
  std::string* outer_;
  std::string text_;
  libxdp_print_fn_t old_xdp_ = nullptr;
  libbpf_print_fn_t old_bpf_ = nullptr;
};

// --- The XDP program: attached through a bpf_link ------------------------------
//
// gnio loads its own redirect program (the same five instructions as
// libxdp's xsk_def_prog: frames of a queue with a socket in the XSKMAP go to
// it, the rest to the stack) and attaches it through a bpf_link, so the
// kernel detaches it when the last descriptor of the link closes: at close,
// and also when the process is killed (kill -9 left libxdp's netlink-attached
// program behind, and later runs reused it silently, in whatever mode it was).
// Kernels without XDP links (before 5.9) get a netlink attach, detached at
// close. The sockets are bound without libxdp loading anything
// (XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD) and put into the map here. The ports
// of one process share one attachment per interface.

struct xdp_attachment {
  unsigned ifindex = 0;
  uint32_t flags = 0;  // XDP_FLAGS_SKB_MODE or XDP_FLAGS_DRV_MODE
  int prog_fd = -1, map_fd = -1;
  int link_fd = -1;  // -1: attached through netlink (a kernel without XDP links)
  uint32_t map_entries = 0;
  int users = 0;
};

std::mutex g_attach_mu;
std::vector<xdp_attachment*> g_attachments;  // guarded by g_attach_mu

constexpr const char* k_prog_name = "gnio_xsk";

// r2 = ctx->rx_queue_index; r1 = &xsks_map; r3 = XDP_PASS;
// return bpf_redirect_map(r1, r2, r3)
int load_redirect_program(int map_fd) {
  bpf_insn insns[6] = {};
  insns[0].code = BPF_LDX | BPF_MEM | BPF_W;
  insns[0].dst_reg = BPF_REG_2;
  insns[0].src_reg = BPF_REG_1;
  insns[0].off = offsetof(xdp_md, rx_queue_index);
  insns[1].code = BPF_LD | BPF_DW | BPF_IMM;  // a 64-bit immediate: the map, two instructions
  insns[1].dst_reg = BPF_REG_1;
  insns[1].src_reg = BPF_PSEUDO_MAP_FD;
  insns[1].imm = map_fd;
  insns[3].code = BPF_ALU64 | BPF_MOV | BPF_K;
  insns[3].dst_reg = BPF_REG_3;
  insns[3].imm = XDP_PASS;
  insns[4].code = BPF_JMP | BPF_CALL;
  insns[4].imm = BPF_FUNC_redirect_map;
  insns[5].code = BPF_JMP | BPF_EXIT;
  return bpf_prog_load(BPF_PROG_TYPE_XDP, k_prog_name, "Apache-2.0", insns, 6, nullptr);
}

const char* attach_mode_name(uint32_t flags) {
  return flags & XDP_FLAGS_SKB_MODE ? "skb (generic)" : flags & XDP_FLAGS_HW_MODE ? "hw (offloaded)" : "drv (native)";
}

const char* ip_mode_word(uint32_t flags) {
  return flags & XDP_FLAGS_SKB_MODE ? "xdpgeneric" : flags & XDP_FLAGS_HW_MODE ? "xdpoffload" : "xdpdrv";
}

// Processes that hold a descriptor of a BPF object (`what`: "prog_id:" or
// "map_id:", as /proc/PID/fdinfo says) with one of `ids`, as "pid N (comm)".
std::vector<std::string> bpf_holders(const char* what, const std::vector<uint32_t>& ids) {
  std::vector<std::string> out;
  if (ids.empty()) return out;
  std::error_code ec;
  for (const auto& proc : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string pid = proc.path().filename().string();
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code ec2;
    for (const auto& fd : std::filesystem::directory_iterator(proc.path() / "fd", ec2)) {
      std::error_code ec3;
      const std::string target = std::filesystem::read_symlink(fd.path(), ec3).string();
      if (ec3 || target.rfind("anon_inode:bpf", 0) != 0) continue;
      std::ifstream info(proc.path() / "fdinfo" / fd.path().filename());
      bool held = false;
      for (std::string line; !held && std::getline(info, line);) {
        if (line.rfind(what, 0) != 0) continue;
        const unsigned long id = std::strtoul(line.c_str() + std::strlen(what) + 1, nullptr, 10);
        held = std::find(ids.begin(), ids.end(), id) != ids.end();
      }
      if (!held) continue;
      std::string comm;
      std::ifstream(proc.path() / "comm") >> comm;
      out.push_back(fmt::format("pid {} ({})", pid, comm));
      break;
    }
  }
  return out;
}

// Deals with an XDP program some other attach left on the interface: one
// that nobody holds any more and that is an AF_XDP redirect program (libxdp's
// xsk_def_prog, or ours attached through netlink) was left by a process that
// died, and is replaced, with a warning; anything else is someone's, and the
// port is refused rather than share or displace it.
error clear_foreign_program(const port* p) {
  bpf_xdp_query_opts q{};
  q.sz = sizeof q;
  if (bpf_xdp_query(static_cast<int>(p->ifindex), 0, &q) != 0) return {};  // nothing to learn: attach will say
  struct found {
    uint32_t id, flags;
  };
  std::vector<found> progs;
  if (q.skb_prog_id) progs.push_back({q.skb_prog_id, XDP_FLAGS_SKB_MODE});
  if (q.drv_prog_id) progs.push_back({q.drv_prog_id, XDP_FLAGS_DRV_MODE});
  if (q.hw_prog_id) progs.push_back({q.hw_prog_id, XDP_FLAGS_HW_MODE});
  if (progs.empty() && q.prog_id)
    progs.push_back({q.prog_id, q.attach_mode == XDP_ATTACHED_SKB ? uint32_t{XDP_FLAGS_SKB_MODE} : XDP_FLAGS_DRV_MODE});
  for (const found& f : progs) {
    std::string name = "?";
    std::vector<uint32_t> maps;
    if (const int fd = bpf_prog_get_fd_by_id(f.id); fd >= 0) {
      bpf_prog_info info{};
      uint32_t map_ids[8] = {};
      info.nr_map_ids = 8;
      info.map_ids = reinterpret_cast<uintptr_t>(map_ids);
      uint32_t len = sizeof info;
      if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0) {
        name = info.name;
        maps.assign(map_ids, map_ids + std::min<uint32_t>(info.nr_map_ids, 8));
      }
      ::close(fd);  // before looking for holders, this process included
    }
    std::vector<std::string> holders = bpf_holders("prog_id:", {f.id});
    for (auto& h : bpf_holders("map_id:", maps))
      if (std::find(holders.begin(), holders.end(), h) == holders.end()) holders.push_back(h);
    const bool redirect = name == "xsk_def_prog" || name == k_prog_name;
    const int fd = redirect && holders.empty() && !(f.flags & XDP_FLAGS_HW_MODE) ? bpf_prog_get_fd_by_id(f.id) : -1;
    if (fd >= 0) {
      bpf_xdp_attach_opts o{};
      o.sz = sizeof o;
      o.old_prog_fd = fd;  // detach exactly that program, not one attached since
      const int rc = bpf_xdp_detach(static_cast<int>(p->ifindex), f.flags, &o);
      ::close(fd);
      if (rc != 0)
        return fail(status::in_use,
                    "af_xdp: {} has a stale AF_XDP program attached (id {}, '{}', {} mode) that no process holds any "
                    "more, and detaching it failed: {}; detach it by hand: ip link set dev {} {} off",
                    p->ifname, f.id, name, attach_mode_name(f.flags), std::strerror(-rc), p->ifname,
                    ip_mode_word(f.flags));
      log(log_level::warn,
          "af_xdp: {} had a stale AF_XDP program attached (id {}, '{}', {} mode) that no process holds any "
          "more, left by a process that was killed; detached it",
          p->ifname, f.id, name, attach_mode_name(f.flags));
      continue;
    }
    std::string who;
    for (const auto& h : holders) who += (who.empty() ? ", held by " : ", ") + h;
    return fail(status::in_use,
                "af_xdp: {} already has an XDP program attached (id {}, '{}', {} mode{}); gnio attaches its own "
                "redirect program: stop its owner, or detach it (ip link set dev {} {} off, or xdp-loader unload {} "
                "--all; ip -d link show {} shows it)",
                p->ifname, f.id, name, attach_mode_name(f.flags), who, p->ifname, ip_mode_word(f.flags), p->ifname,
                p->ifname);
  }
  return {};
}

error attach_error(const port* p, uint32_t flags, int err, const std::string& libbpf_text) {
  const std::string where = fmt::format("af_xdp: {} ({} mode)", p->ifname, mode_name(flags));
  switch (err) {
    case EPERM:
    case EACCES:
      return fail(status::not_permitted,
                  "{}: loading or attaching the XDP program failed: {}; AF_XDP needs CAP_NET_RAW, and loading the XDP "
                  "program CAP_NET_ADMIN plus CAP_BPF (or CAP_SYS_ADMIN): run as root or grant them (setcap "
                  "cap_net_raw,cap_net_admin,cap_bpf+ep){}",
                  where, std::strerror(err), libbpf_text);
    case EBUSY:
    case EEXIST:
      return fail(status::in_use,
                  "{}: attaching the XDP program failed: {}; another XDP program is attached (ip -d link show {}; "
                  "xdp-loader status {}){}",
                  where, std::strerror(err), p->ifname, p->ifname, libbpf_text);
    case EOPNOTSUPP:
      return fail(status::not_supported, "{}: attaching the XDP program failed: {}{}{}", where, std::strerror(err),
                  flags & XDP_FLAGS_DRV_MODE ? "; the driver has no native XDP, try mode=skb" : "", libbpf_text);
    case ENODEV:
    case ENXIO:
      return fail(status::not_found, "{}: attaching the XDP program failed: {}; the interface disappeared{}", where,
                  std::strerror(err), libbpf_text);
    default:
      return fail(status::driver, "{}: attaching the XDP program failed: {}{}", where, std::strerror(err), libbpf_text);
  }
}

// Attaches the redirect program in the mode mode= asks for (auto: drv, else
// skb), or joins this process's attachment on the interface. Sets
// p->xdp_flags and p->att.
error attach_program(port* p, print_capture& pc) {
  std::lock_guard lk(g_attach_mu);
  const uint32_t need = std::max(p->channels, p->first_queue + p->num_queues);
  for (xdp_attachment* a : g_attachments) {
    if (a->ifindex != p->ifindex) continue;
    const bool mismatch = (p->mode == attach_mode::skb && a->flags != XDP_FLAGS_SKB_MODE) ||
                          (p->mode == attach_mode::drv && a->flags != XDP_FLAGS_DRV_MODE);
    if (mismatch)
      return fail(status::in_use,
                  "af_xdp: another port of this process has {} in {} mode; mode={} cannot share it: open both in the "
                  "same mode",
                  p->ifname, mode_name(a->flags), p->mode == attach_mode::skb ? "skb" : "drv");
    if (p->first_queue + p->num_queues > a->map_entries)
      return fail(status::invalid_value, "af_xdp: {} queue {} is beyond the {} queues it had when first opened",
                  p->ifname, p->first_queue + p->num_queues - 1, a->map_entries);
    ++a->users;
    p->att = a;
    p->xdp_flags = a->flags;
    return {};
  }
  if (auto e = clear_foreign_program(p); e) return e;
  auto a = std::make_unique<xdp_attachment>();
  a->ifindex = p->ifindex;
  a->map_entries = need;
  auto drop = [&] {
    if (a->prog_fd >= 0) ::close(a->prog_fd);
    if (a->map_fd >= 0) ::close(a->map_fd);
  };
  (void)pc.take();
  a->map_fd = bpf_map_create(BPF_MAP_TYPE_XSKMAP, "gnio_xsks", sizeof(int), sizeof(int), need, nullptr);
  if (a->map_fd < 0) {
    const int e = errno;
    drop();
    return attach_error(p, p->mode == attach_mode::skb ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE, e, pc.take());
  }
  a->prog_fd = load_redirect_program(a->map_fd);
  if (a->prog_fd < 0) {
    const int e = errno;
    drop();
    return attach_error(p, p->mode == attach_mode::skb ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE, e, pc.take());
  }
  std::vector<uint32_t> modes;
  if (p->mode != attach_mode::skb) modes.push_back(XDP_FLAGS_DRV_MODE);
  // Zero-copy has no skb mode to fall back to.
  if (p->mode == attach_mode::skb || (p->mode == attach_mode::automatic && p->zerocopy != 1))
    modes.push_back(XDP_FLAGS_SKB_MODE);
  int err = 0;
  for (size_t i = 0; i < modes.size(); ++i) {
    const uint32_t flags = modes[i];
    bpf_link_create_opts lo{};
    lo.sz = sizeof lo;
    lo.flags = flags;
    const int link = bpf_link_create(a->prog_fd, static_cast<int>(p->ifindex), BPF_XDP, &lo);
    err = link >= 0 ? 0 : errno;
    if (link >= 0) {
      a->link_fd = link;
    } else if (err == EINVAL) {
      // No XDP links (Linux < 5.9): attach through netlink, detached at close
      // (but not if the process is killed).
      if (bpf_xdp_attach(static_cast<int>(p->ifindex), a->prog_fd, flags | XDP_FLAGS_UPDATE_IF_NOEXIST, nullptr) == 0) {
        err = 0;
        log(log_level::info,
            "af_xdp: {}: this kernel has no XDP bpf_link; the program is attached through netlink and would "
            "stay attached if the process were killed",
            p->ifname);
      } else {
        err = errno;
      }
    }
    if (err == 0) {
      a->flags = flags;
      break;
    }
    // Permission, busy and missing-device failures would recur in skb mode.
    if (i + 1 < modes.size() && err != EPERM && err != EACCES && err != ENODEV && err != EBUSY && err != EEXIST) {
      log(log_level::info, "af_xdp: {}: native (drv) XDP failed ({}{}); falling back to skb mode", p->ifname,
          std::strerror(err), pc.take());
      continue;
    }
    break;
  }
  if (err != 0) {
    drop();
    return attach_error(p, modes.back(), err, pc.take());
  }
  a->users = 1;
  p->att = a.get();
  p->xdp_flags = a->flags;
  g_attachments.push_back(a.release());
  return {};
}

void detach_program(port* p) {
  if (!p->att) return;
  std::lock_guard lk(g_attach_mu);
  xdp_attachment* a = p->att;
  p->att = nullptr;
  if (--a->users > 0) return;
  if (a->link_fd >= 0) {
    ::close(a->link_fd);  // the kernel detaches the program with its link
  } else {
    bpf_xdp_attach_opts o{};
    o.sz = sizeof o;
    o.old_prog_fd = a->prog_fd;  // only if it is still ours
    (void)bpf_xdp_detach(static_cast<int>(a->ifindex), a->flags, &o);
  }
  ::close(a->prog_fd);
  ::close(a->map_fd);
  std::erase(g_attachments, a);
  delete a;
}

// A socket just for interface ioctls, closed on scope exit.
struct ctl_socket {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ~ctl_socket() {
    if (fd >= 0) ::close(fd);
  }
};

// RX queues the kernel has for the interface: ethtool's channel count, or the
// sysfs queue directories for drivers without ETHTOOL_GCHANNELS.
error count_channels(const std::string& ifname, uint32_t* out) {
  *out = 0;
  ctl_socket s;
  if (s.fd >= 0) {
    ethtool_channels ch{};
    ch.cmd = ETHTOOL_GCHANNELS;
    ifreq ifr{};
    std::snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", ifname.c_str());
    ifr.ifr_data = reinterpret_cast<char*>(&ch);
    if (ioctl(s.fd, SIOCETHTOOL, &ifr) == 0) *out = ch.combined_count + ch.rx_count;
  }
  if (*out == 0) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/sys/class/net/" + ifname + "/queues", ec))
      if (e.path().filename().string().rfind("rx-", 0) == 0) ++*out;
  }
  if (*out == 0)
    return fail(status::not_supported,
                "af_xdp: cannot tell how many RX queues {} has (ETHTOOL_GCHANNELS failed and /sys/class/net/{}/queues "
                "lists none)",
                ifname, ifname);
  return {};
}

// Pinning the UMEM counts against RLIMIT_MEMLOCK unless the process has
// CAP_IPC_LOCK, and old kernels charge BPF maps there too; the defaults (often
// 8 MiB) are below one queue's UMEM, so lift the limit as far as allowed.
void raise_memlock() {
  rlimit r{};
  if (getrlimit(RLIMIT_MEMLOCK, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return;
  rlimit inf{RLIM_INFINITY, RLIM_INFINITY};
  if (setrlimit(RLIMIT_MEMLOCK, &inf) == 0) return;
  if (r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    (void)setrlimit(RLIMIT_MEMLOCK, &r);
  }
}

std::string memlock_text() {
  rlimit r{};
  if (getrlimit(RLIMIT_MEMLOCK, &r) != 0) return "unknown";
  if (r.rlim_cur == RLIM_INFINITY) return "unlimited";
  return fmt::format("{} KiB", r.rlim_cur / 1024);
}

void destroy(port* p) {
  if (!p) return;
  // libxdp explains itself on stderr while detaching (e.g. that there is no
  // bpffs); route that to the log.
  print_capture pc;
  // Sockets before their UMEMs (a UMEM in use refuses deletion with EBUSY);
  // a closed socket leaves the XSKMAP by itself. The program goes with the
  // last port of the process on the interface.
  for (auto& q : p->q) {
    if (q.xsk) xsk_socket__delete(q.xsk);
    q.xsk = nullptr;
  }
  for (auto& q : p->q) {
    if (q.umem) {
      if (int rc = xsk_umem__delete(q.umem); rc != 0)
        log(log_level::warn, "af_xdp: {} queue {}: deleting the UMEM failed: {}", p->ifname, q.qid, std::strerror(-rc));
    }
    q.umem = nullptr;
  }
  detach_program(p);
  // The pool's memory is the core's; it frees it after close.
  delete p;
}

// Turns a failed xsk_umem__create/xsk_socket__create into a status with the remedy.
error xsk_error(const port* p, uint32_t qid, const char* what, int err, const std::string& libxdp_text) {
  const std::string where = p->xdp_flags
                                ? fmt::format("af_xdp: {} queue {} ({} mode)", p->ifname, qid, mode_name(p->xdp_flags))
                                : fmt::format("af_xdp: {} queue {}", p->ifname, qid);
  switch (err) {
    case EPERM:
    case EACCES:
      return fail(status::not_permitted,
                  "{}: {} failed: {}; AF_XDP needs CAP_NET_RAW, and loading the XDP program CAP_NET_ADMIN plus CAP_BPF "
                  "(or CAP_SYS_ADMIN): run as root or grant them (setcap cap_net_raw,cap_net_admin,cap_bpf+ep){}",
                  where, what, std::strerror(err), libxdp_text);
    case ENOBUFS:
    case ENOMEM:
      return fail(status::not_permitted,
                  "{}: {} failed: {}; the {} MiB UMEM could not be pinned under RLIMIT_MEMLOCK ({}): raise it (ulimit "
                  "-l unlimited, LimitMEMLOCK=infinity) or grant CAP_IPC_LOCK, or give a smaller frames={}",
                  where, what, std::strerror(err), (static_cast<uint64_t>(p->frames) * p->frame_size) >> 20,
                  memlock_text(), libxdp_text);
    case ENODEV:
    case ENXIO:
      return fail(status::not_found, "{}: {} failed: {}; the interface disappeared{}", where, what, std::strerror(err),
                  libxdp_text);
    case EBUSY:
    case EEXIST:
      return fail(status::in_use,
                  "{}: {} failed: {}; another AF_XDP socket is bound to this queue or another XDP program is attached "
                  "(ip -d link show {}; xdp-loader status {}){}",
                  where, what, std::strerror(err), p->ifname, p->ifname, libxdp_text);
    case EOPNOTSUPP:
      return fail(status::not_supported, "{}: {} failed: {}{}{}", where, what, std::strerror(err),
                  p->zerocopy == 1 ? "; the driver has no zero-copy AF_XDP support, try zerocopy=0"
                                   : "; the driver does not support this XDP mode, try mode=skb",
                  libxdp_text);
    default: return fail(status::driver, "{}: {} failed: {}{}", where, what, std::strerror(err), libxdp_text);
  }
}

error open_queue(port* p, xsk_queue& q, print_capture& pc) {
  (void)pc.take();  // what earlier queues' successful setup said is no explanation
  const char* what = "";

  // One try, from a fresh UMEM: libxdp gives a UMEM's first socket the UMEM's
  // own fd and keeps it open when the socket cannot be set up, so a second
  // try needs a new UMEM.
  auto attempt = [&](uint32_t xdp_flags) -> int {
    xsk_umem_config ucfg{};
    ucfg.fill_size = p->rx_frames;
    ucfg.comp_size = p->tx_frames;
    ucfg.frame_size = p->frame_size;
    ucfg.frame_headroom = 0;
    ucfg.flags = 0;
    what = "registering the UMEM";
    const uint64_t bytes = static_cast<uint64_t>(p->frames) * p->frame_size;
    if (int rc = xsk_umem__create(&q.umem, q.area, bytes, &q.fill, &q.comp, &ucfg); rc != 0) {
      q.umem = nullptr;
      return rc;
    }
    xsk_socket_config scfg{};
    scfg.rx_size = p->rx_frames;
    scfg.tx_size = p->tx_frames;
    scfg.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD;  // the program is ours (attach_program)
    scfg.xdp_flags = xdp_flags;
    uint16_t bind = XDP_USE_NEED_WAKEUP;
    // Generic (skb) XDP can only copy; saying so keeps the bind from depending
    // on what the driver would offer in native mode.
    if (p->zerocopy == 1) bind |= XDP_ZEROCOPY;
    else if (p->zerocopy == 0 || (xdp_flags & XDP_FLAGS_SKB_MODE)) bind |= XDP_COPY;
    scfg.bind_flags = bind;
    what = "creating the AF_XDP socket";
    int rc = xsk_socket__create(&q.xsk, p->ifname.c_str(), q.qid, q.umem, &q.rx, &q.tx, &scfg);
    if (rc == 0) {
      what = "adding the AF_XDP socket to the XDP program's map";
      rc = xsk_socket__update_xskmap(q.xsk, p->att->map_fd);
      if (rc != 0) {
        xsk_socket__delete(q.xsk);
        rc = rc < 0 ? rc : -errno;
      }
    }
    if (rc != 0) {
      q.xsk = nullptr;
      (void)xsk_umem__delete(q.umem);
      q.umem = nullptr;
    }
    return rc;
  };

  auto create = [&](uint32_t xdp_flags) -> int {
    int rc = 0, tries = 0;
    // A socket closed just before (by this process or another) frees its hold
    // on the queue from a kernel work item, a moment after close() returned;
    // until then bind says EBUSY. Only a lasting EBUSY means the queue is taken.
    for (;; ++tries) {
      rc = attempt(xdp_flags);
      if (rc != -EBUSY || tries >= k_busy_retries) break;
      (void)pc.take();
      usleep(k_busy_retry_us);
    }
    if (rc == 0 && tries)
      log(log_level::debug, "af_xdp: {} queue {}: bound after {} EBUSY retries", p->ifname, q.qid, tries);
    return rc;
  };

  // The mode is the attached program's (attach_program): a socket binds in
  // copy mode for generic XDP, as the driver offers (or zerocopy= asks) for native.
  const int rc = create(p->xdp_flags);
  if (rc != 0) return xsk_error(p, q.qid, what, -rc, pc.take());
  q.fd = xsk_socket__fd(q.xsk);
  if (p->busy_poll_us) {
    // Busy polling: an empty receive drives the device's NAPI poll from the
    // engine thread (recvfrom in af_xdp_rx), instead of waiting for an
    // interrupt and softirq; preferred, so that interrupts stay deferred
    // while the engine polls (napi_defer_hard_irqs, gro_flush_timeout).
    const int one = 1;
    const int us = static_cast<int>(p->busy_poll_us), budget = static_cast<int>(p->busy_poll_budget);
    const struct {
      int opt;
      const int* v;
      const char* name;
    } opts[] = {{SO_PREFER_BUSY_POLL, &one, "SO_PREFER_BUSY_POLL"},
                {SO_BUSY_POLL, &us, "SO_BUSY_POLL"},
                {SO_BUSY_POLL_BUDGET, &budget, "SO_BUSY_POLL_BUDGET"}};
    for (const auto& o : opts) {
      if (setsockopt(q.fd, SOL_SOCKET, o.opt, o.v, sizeof(int)) == 0) continue;
      const int e = errno;
      return fail(e == EPERM         ? status::not_permitted
                  : e == ENOPROTOOPT ? status::not_supported
                                     : status::io_failed,
                  "af_xdp: {} queue {}: busy_poll={}: setsockopt {} failed: {}{}", p->ifname, q.qid, p->busy_poll_us,
                  o.name, std::strerror(e),
                  e == ENOPROTOOPT || e == EINVAL ? " (busy polling of AF_XDP sockets needs Linux 5.11 or newer)"
                  : e == EPERM                    ? " (raising SO_BUSY_POLL needs CAP_NET_ADMIN)"
                                                  : "");
    }
  }

  xdp_options opts{};
  socklen_t optlen = sizeof opts;
  if (getsockopt(q.fd, SOL_XDP, XDP_OPTIONS, &opts, &optlen) == 0) q.zerocopy = opts.flags & XDP_OPTIONS_ZEROCOPY;

  // Lower half of the UMEM receives, upper half transmits.
  q.rx_free.reserve(p->rx_frames);
  for (uint32_t i = 0; i < p->rx_frames; ++i) q.rx_free.push_back(static_cast<uint64_t>(i) * p->frame_size);
  q.tx_total = p->tx_frames;
  q.tx_free.reserve(p->tx_frames);
  for (uint32_t i = 0; i < p->tx_frames; ++i)
    q.tx_free.push_back(static_cast<uint64_t>(p->rx_frames + i) * p->frame_size);
  q.tx_len.assign(p->frames, 0);
  return {};
}

// Hands every RX frame we own back to the kernel: the free ones and those
// other lanes released. On the socket's lane only (the fill ring has one
// producer).
void refill(xsk_queue& q) {
  if (q.has_returned.load(std::memory_order_acquire)) {
    std::lock_guard lk(q.returned_mu);
    q.rx_free.insert(q.rx_free.end(), q.returned.begin(), q.returned.end());
    q.returned.clear();
    q.has_returned.store(false, std::memory_order_relaxed);
  }
  if (q.rx_free.empty()) return;
  const uint32_t n = std::min<uint32_t>(xsk_prod_nb_free(&q.fill, static_cast<uint32_t>(q.rx_free.size())),
                                        static_cast<uint32_t>(q.rx_free.size()));
  uint32_t idx = 0;
  if (n == 0 || xsk_ring_prod__reserve(&q.fill, n, &idx) != n) return;
  for (uint32_t i = 0; i < n; ++i) {
    *xsk_ring_prod__fill_addr(&q.fill, idx + i) = q.rx_free.back();
    q.rx_free.pop_back();
  }
  xsk_ring_prod__submit(&q.fill, n);
}

// Takes finished TX frames back and counts them as sent: only the completion
// says the kernel is done with a frame (in copy mode, after the driver freed it).
void reap(port* p, xsk_queue& q) {
  uint32_t idx = 0;
  const uint32_t n = xsk_ring_cons__peek(&q.comp, q.tx_total, &idx);
  if (n == 0) return;
  uint64_t bytes = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const uint64_t addr = *xsk_ring_cons__comp_addr(&q.comp, idx + i);
    if (addr / p->frame_size < p->rx_frames) {
      // An RX frame sent in place: it stays the consuming kernel's until it
      // releases its RX completion.
      if (q.in_place > 0) --q.in_place;
      if (!q.in_place_len.empty()) {
        bytes += q.in_place_len.front();
        q.in_place_len.pop_front();
      }
      continue;
    }
    bytes += q.tx_len[addr / p->frame_size];
    q.tx_free.push_back(addr);
  }
  xsk_ring_cons__release(&q.comp, n);
  bump(p->tx_pkts, n);
  bump(p->tx_bytes, bytes);
}

uint32_t tx_in_flight(const xsk_queue& q) { return q.tx_total - static_cast<uint32_t>(q.tx_free.size()) + q.in_place; }

// Makes the kernel transmit what is in the TX ring. In copy mode each sendto
// sends one batch and says EAGAIN while more is left, so it is repeated; in
// zero-copy mode it only wakes the driver, which then drains the ring itself.
error kick_tx(port* p, xsk_queue& q) {
  for (int tries = 0; tries < 256; ++tries) {
    if (!xsk_ring_prod__needs_wakeup(&q.tx)) return {};
    if (sendto(q.fd, nullptr, 0, MSG_DONTWAIT, nullptr, 0) >= 0) return {};
    const int e = errno;
    switch (e) {
      case EAGAIN:
      case EBUSY:    // completion ring full or a frame still with the driver
      case ENOBUFS:  // no skb right now
      case EINTR: reap(p, q); continue;
      case ENETDOWN:
        return fail(status::io_failed,
                    "af_xdp: {} is down; frames wait in the TX ring until it is up (ip link set dev {} up)", p->ifname,
                    p->ifname);
      case ENXIO:
        return fail(status::io_failed, "af_xdp: {} queue {}: the socket is no longer bound: the interface was removed",
                    p->ifname, q.qid);
      default:
        return fail(status::io_failed, "af_xdp: {} queue {}: transmit wakeup (sendto) failed: {}", p->ifname, q.qid,
                    std::strerror(e));
    }
  }
  return {};  // still busy; the rest goes on the next kick (tx_burst or rx_burst)
}

// The kernel unbinds a socket whose interface is unregistered (removed, or
// moved to another namespace) and leaves ENETDOWN in its error slot; nothing
// else tells a socket that only receives.
error check_health(port* p) {
  for (auto& q : p->q) {
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(q.fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    if (err == 0) continue;
    if (err == ENETDOWN)
      return fail(status::io_failed,
                  "af_xdp: {} (ifindex {}) was removed or moved to another network namespace; queue {} is unbound and "
                  "receives nothing more",
                  p->ifname, p->ifindex, q.qid);
    return fail(status::io_failed, "af_xdp: {} queue {}: socket error: {}", p->ifname, q.qid, std::strerror(err));
  }
  return {};
}

void fail_engine(port* p, const error& e) {
  // The reason goes to the log and, through the last_error op, into the
  // port's engine_error(). Every lane then reports the failure.
  log(log_level::error, "{}", e.message());
  p->failure.set(e.message());
}

const char* af_xdp_last_error(void* priv) { return static_cast<port*>(priv)->failure.text(); }

error parse_mode(const devargs& a, port* p) {
  std::string m = "auto";
  if (auto e = get_string(a, "mode", &m); e) return e;
  if (m == "skb") p->mode = attach_mode::skb;
  else if (m == "drv") p->mode = attach_mode::drv;
  else if (m == "auto") p->mode = attach_mode::automatic;
  else return fail(status::bad_config, "af_xdp: mode={} must be skb, drv or auto", m);
  return {};
}

error af_xdp_open(const devargs& a, void** priv) {
  *priv = nullptr;
  if (auto e = check_keys(
          a, {"if", "queue", "queues", "mode", "zerocopy", "frames", "frame_size", "busy_poll", "busy_poll_budget"});
      e)
    return e;
  auto* p = new port;
  auto bail = [&](error e) {
    destroy(p);
    return e;
  };
  if (auto e = get_string(a, "if", &p->ifname); e) return bail(e);
  if (p->ifname.empty()) return bail(fail(status::bad_config, "af_xdp: '{}' names no interface; give if=NAME", a.text));
  if (p->ifname.size() >= IFNAMSIZ)
    return bail(fail(status::invalid_value, "af_xdp: if={} is longer than {} characters", p->ifname, IFNAMSIZ - 1));
  uint64_t v = 0;
  if (auto e = get_u64(a, "queue", 0, 65535, &v); e) return bail(e);
  p->first_queue = static_cast<uint32_t>(v);
  v = 1;
  if (auto e = get_u64(a, "queues", 1, k_max_queues, &v); e) return bail(e);
  p->num_queues = static_cast<uint32_t>(v);
  if (auto e = parse_mode(a, p); e) return bail(e);
  if (a.find("zerocopy")) {
    v = 0;
    if (auto e = get_u64(a, "zerocopy", 0, 1, &v); e) return bail(e);
    p->zerocopy = static_cast<int>(v);
  }
  v = k_default_frames;
  if (auto e = get_u64(a, "frames", 64, 1u << 20, &v); e) return bail(e);
  if (!std::has_single_bit(v)) return bail(fail(status::invalid_value, "af_xdp: frames={} must be a power of two", v));
  p->frames = static_cast<uint32_t>(v);
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  v = k_default_frame_size;
  if (auto e = get_u64(a, "frame_size", 2048, page, &v); e) return bail(e);
  // Aligned-mode UMEM chunks: a power of two from 2048 up to the page size.
  if (!std::has_single_bit(v))
    return bail(fail(status::invalid_value, "af_xdp: frame_size={} must be a power of two in [2048, {}]", v, page));
  p->frame_size = static_cast<uint32_t>(v);
  p->rx_frames = p->frames / 2;
  p->tx_frames = p->frames / 2;
  v = 0;
  if (auto e = get_u64(a, "busy_poll", 0, 1'000'000, &v); e) return bail(e);
  p->busy_poll_us = static_cast<uint32_t>(v);
  v = 64;
  if (auto e = get_u64(a, "busy_poll_budget", 1, 65535, &v); e) return bail(e);
  if (a.find("busy_poll_budget") && p->busy_poll_us == 0)
    return bail(fail(status::bad_config, "af_xdp: busy_poll_budget= needs busy_poll=USECS (busy polling is off)"));
  p->busy_poll_budget = static_cast<uint32_t>(v);
  if (p->mode == attach_mode::skb && p->zerocopy == 1)
    return bail(fail(status::bad_config,
                     "af_xdp: zerocopy=1 needs native XDP; mode=skb (generic XDP) always copies: use mode=drv on a "
                     "driver with AF_XDP zero-copy support, or zerocopy=0"));

  // Completions name a buffer by a 32-bit offset into the pool.
  const uint64_t pool_bytes = uint64_t{p->frames} * p->frame_size * p->num_queues;
  if (pool_bytes > (uint64_t{1} << 32))
    return bail(fail(status::invalid_value,
                     "af_xdp: frames={} frame_size={} queues={} make a {} MiB RX pool; it must fit in 4 GiB: give "
                     "fewer frames",
                     p->frames, p->frame_size, p->num_queues, pool_bytes >> 20));
  p->ifindex = if_nametoindex(p->ifname.c_str());
  if (p->ifindex == 0) {
    const int e = errno;
    if (e == ENODEV || e == ENXIO)
      return bail(
          fail(status::not_found, "af_xdp: no interface '{}' in this network namespace (ip link show)", p->ifname));
    return bail(fail(status::io_failed, "af_xdp: looking up interface '{}' failed: {}", p->ifname, std::strerror(e)));
  }
  {
    ctl_socket s;
    if (s.fd < 0)
      return bail(
          fail(status::io_failed, "af_xdp: socket(AF_INET) for interface ioctls failed: {}", std::strerror(errno)));
    ifreq ifr{};
    std::snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", p->ifname.c_str());
    if (ioctl(s.fd, SIOCGIFFLAGS, &ifr) != 0) {
      const int e = errno;
      if (e == ENODEV) return bail(fail(status::not_found, "af_xdp: interface '{}' disappeared", p->ifname));
      return bail(fail(status::io_failed, "af_xdp: reading the flags of {} failed: {}", p->ifname, std::strerror(e)));
    }
    if (!(ifr.ifr_flags & IFF_UP))
      return bail(fail(status::not_connected, "af_xdp: interface {} is down; bring it up first: ip link set dev {} up",
                       p->ifname, p->ifname));
  }
  if (auto e = count_channels(p->ifname, &p->channels); e) return bail(e);
  if (static_cast<uint64_t>(p->first_queue) + p->num_queues > p->channels)
    return bail(fail(status::invalid_value,
                     "af_xdp: queue={} queues={} needs RX queues {}..{}, but {} has {} (ethtool -l {}; more with "
                     "ethtool -L {} combined N)",
                     p->first_queue, p->num_queues, p->first_queue, p->first_queue + p->num_queues - 1, p->ifname,
                     p->channels, p->ifname, p->ifname));

  // The sockets come with the pool, in rx_pool_setup, which the core calls right after open.
  *priv = p;
  return {};
}

// Allocates the RX pool, one UMEM region per socket, and binds the sockets
// over it: the NIC (zero-copy) or the kernel's copy writes frames where the
// GPU reads them.
error af_xdp_rx_pool_setup(void* priv, const pool_alloc& alloc, rx_pool* out) {
  auto* p = static_cast<port*>(priv);
  if (!p->q.empty()) return fail(status::bad_state, "af_xdp: {}: the RX pool is already set up", p->ifname);
  raise_memlock();
  p->region_bytes = static_cast<size_t>(p->frames) * p->frame_size;
  const size_t bytes = p->region_bytes * p->num_queues;
  // Page aligned (every region too: frames * frame_size is a multiple of
  // 64 * 2048), as a UMEM must be; the kernel pins it when it is registered.
  if (auto e = alloc.alloc(alloc.ctx, bytes, &p->pool); e)
    return fail(e.code(), "af_xdp: {}: allocating the {} MiB RX pool (UMEM) failed: {}", p->ifname, bytes >> 20,
                e.message());
  {
    print_capture pc;
    if (auto e = attach_program(p, pc); e) return e;
    for (uint32_t i = 0; i < p->num_queues; ++i) {
      auto& q = p->q.emplace_back();
      q.qid = p->first_queue + i;
      q.base = static_cast<uint32_t>(p->region_bytes * i);
      q.area = p->pool + q.base;
      if (auto e = open_queue(p, q, pc); e) return e;
    }
  }
  for (auto& q : p->q) refill(q);
  log(log_level::info, "af_xdp: {} queues {}..{}: {} mode, {}, {} frames of {} bytes per queue, received by reference",
      p->ifname, p->first_queue, p->first_queue + p->num_queues - 1, mode_name(p->xdp_flags),
      p->q.front().zerocopy ? "zero-copy" : "copy", p->frames, p->frame_size);
  out->host = p->pool;
  out->bytes = bytes;
  // A received frame starts after XDP_PACKET_HEADROOM bytes of its frame.
  out->buf_bytes = p->frame_size - XDP_PACKET_HEADROOM;
  return {};
}

// Buffers the kernel released go back to the fill ring of the socket whose
// UMEM holds them: directly when this lane reads that socket, else through
// the socket's returned list.
void af_xdp_rx_release(void* priv, uint32_t lane, const uint32_t* bufs, uint32_t n) {
  auto* p = static_cast<port*>(priv);
  const uint64_t mask = ~static_cast<uint64_t>(p->frame_size - 1);
  xsk_queue* locked = nullptr;
  std::unique_lock<std::mutex> lk;
  uint64_t mine = 0;  // sockets of this lane that got frames back
  for (uint32_t i = 0; i < n; ++i) {
    const uint64_t r = p->region_bytes ? bufs[i] / p->region_bytes : p->q.size();
    if (r >= p->q.size() || (bufs[i] - r * p->region_bytes) / p->frame_size >= p->rx_frames) {
      // Not an RX frame of ours: a caller's bug. Dropping it loses nothing of ours.
      if (p->bad_release_warnings.fetch_add(1, std::memory_order_relaxed) < 5)
        log(log_level::error, "af_xdp: {}: released buffer {} is no RX frame of the pool; ignored", p->ifname, bufs[i]);
      continue;
    }
    auto& q = p->q[r];
    const uint64_t addr = (bufs[i] - q.base) & mask;
    if (q.lane == lane) {
      q.rx_free.push_back(addr);
      mine |= uint64_t{1} << r;
      continue;
    }
    if (locked != &q) {
      // One lock at a time: lanes returning to each other's sockets must not wait on each other.
      if (locked) {
        locked->has_returned.store(true, std::memory_order_release);
        lk.unlock();
      }
      lk = std::unique_lock(q.returned_mu);
      locked = &q;
    }
    q.returned.push_back(addr);
  }
  if (locked) locked->has_returned.store(true, std::memory_order_release);
  if (lk.owns_lock()) lk.unlock();
  for (uint32_t r = 0; mine; ++r, mine >>= 1)
    if (mine & 1) refill(p->q[r]);
}

void af_xdp_caps(void* priv, port_caps* c) {
  auto* p = static_cast<port*>(priv);
  *c = port_caps{};
  c->rx = true;
  c->tx = true;
  // gnio RX queues are software rings fed by the engine's steering, whatever
  // the number of XSK sockets (kernel channels) behind them.
  (void)p->channels;
  c->max_rx_queues = 64;
  // gnio TX queues are software queues that all drain into one XSK TX ring.
  c->max_tx_queues = 64;
  c->max_pkt_bytes = p->frame_size - XDP_PACKET_HEADROOM;
  c->min_ring_descs = 2;
  c->max_ring_descs = 1u << 20;
  c->rx_timestamps = false;  // no XDP RX metadata timestamps on most drivers (none on veth)
  c->finite = false;
}

status af_xdp_rx(void* priv, rx_lane& sink, uint32_t budget, uint32_t* produced) {
  const uint32_t lane = sink.index();
  auto* p = static_cast<port*>(priv);
  *produced = 0;
  if (p->q.empty()) {
    p->failure.set(fmt::format("af_xdp: {}: no sockets: the RX pool was never set up (rx_pool_setup)", p->ifname));
    return status::bad_state;
  }
  if (p->failure.failed() || lane >= p->lane_rr.size()) return status::io_failed;
  const uint64_t ts = clock_ns(CLOCK_REALTIME);  // one stamp per burst: software time, not the wire's
  uint32_t total = 0;
  uint64_t bytes = 0;
  const uint32_t nl = static_cast<uint32_t>(p->lane_rr.size());
  const uint32_t mine = (static_cast<uint32_t>(p->q.size()) - lane + nl - 1) / nl;  // sockets lane, lane + nl, ...
  uint32_t& rr = p->lane_rr[lane];
  for (uint32_t k = 0; k < mine && total < budget; ++k) {
    auto& q = p->q[lane + ((rr + k) % mine) * nl];
    refill(q);
    uint32_t idx = 0;
    const uint32_t n = xsk_ring_cons__peek(&q.rx, budget - total, &idx);
    if (n == 0) {
      // Drivers in native mode stop taking from an empty fill ring until
      // woken; with busy polling every empty look runs the device's poll.
      if ((p->busy_poll_us || xsk_ring_prod__needs_wakeup(&q.fill)) &&
          recvfrom(q.fd, nullptr, 0, MSG_DONTWAIT, nullptr, nullptr) < 0 && errno == ENXIO) {
        fail_engine(
            p, fail(status::io_failed, "af_xdp: {} queue {}: the socket is no longer bound: the interface was removed",
                    p->ifname, q.qid));
        break;
      }
      continue;
    }
    for (uint32_t i = 0; i < n; ++i) {
      const xdp_desc* d = xsk_ring_cons__rx_desc(&q.rx, idx + i);
      // The descriptor points past the headroom, inside the frame.
      const uint64_t addr = xsk_umem__extract_addr(d->addr);
      bytes += d->len;
      // Held: the consuming kernel owns the frame until it releases it
      // (rx_release). Copied or dropped: it is free again now.
      if (sink.deliver_ref(q.base + static_cast<uint32_t>(addr), d->len, d->len, ts) != rx_lane::ref::held)
        q.rx_free.push_back(addr & ~static_cast<uint64_t>(p->frame_size - 1));
    }
    xsk_ring_cons__release(&q.rx, n);
    refill(q);
    total += n;
  }
  rr = (rr + 1) % mine;
  if (total) {
    bump(p->rx_pkts, total);
    bump(p->rx_bytes, bytes);
  }
  if (lane != 0) {
    *produced = total;
    if (p->failure.failed()) return total ? status::success : status::io_failed;
    return total ? status::success : status::again;
  }
  // Frames a busy kernel left in the TX ring after the last tx_burst.
  for (auto& q : p->q) {
    if (p->failure.failed() || tx_in_flight(q) == 0) continue;
    reap(p, q);
    if (tx_in_flight(q) == 0) continue;
    if (auto e = kick_tx(p, q); e && p->tx_kick_warnings < 5) {
      ++p->tx_kick_warnings;
      log(log_level::warn, "{}", e.message());
    }
  }
  if (!p->failure.failed()) {
    const uint64_t now = clock_ns(CLOCK_MONOTONIC_COARSE);
    if (now >= p->next_health_ns) {
      p->next_health_ns = now + k_health_period_ns;
      if (auto e = check_health(p); e) fail_engine(p, e);
    }
  }
  *produced = total;
  // Frames delivered before the failure count; the next call reports it.
  if (p->failure.failed()) return total ? status::success : status::io_failed;
  return total ? status::success : status::again;
}

error af_xdp_set_lanes(void* priv, uint32_t lanes) {
  auto* p = static_cast<port*>(priv);
  if (lanes == 0 || lanes > p->q.size())
    return fail(status::invalid_value, "af_xdp: lanes={} needs queues={} or more: each lane reads its own XSK sockets",
                lanes, lanes);
  p->lane_rr.assign(lanes, 0);
  for (uint32_t i = 0; i < p->q.size(); ++i) p->q[i].lane = i % lanes;
  return {};
}

// The socket a frame in the RX pool goes out on in place (the one whose UMEM
// holds it), or UINT32_MAX for a frame to copy: outside the pool, in a TX
// frame, or running past the end of its UMEM frame.
uint32_t in_place_socket(const port* p, const tx_frame& f) {
  if (f.pool_off == UINT32_MAX || p->region_bytes == 0) return UINT32_MAX;
  const uint64_t r = f.pool_off / p->region_bytes;
  if (r >= p->q.size()) return UINT32_MAX;
  const uint64_t addr = f.pool_off - r * p->region_bytes;
  if (addr / p->frame_size >= p->rx_frames || addr % p->frame_size + f.len > p->frame_size) return UINT32_MAX;
  return static_cast<uint32_t>(r);
}

// Waits until q's frames in flight completed: all of them, or only those
// sent in place. Bounded: gives up after k_tx_stall_ns without a completion.
error tx_wait(port* p, xsk_queue& q, bool in_place_only) {
  uint64_t since = 0;
  uint32_t last = UINT32_MAX;
  for (uint32_t spins = 0;; ++spins) {
    reap(p, q);
    const uint32_t left = in_place_only ? q.in_place : tx_in_flight(q);
    if (left == 0) return {};
    if (auto e = kick_tx(p, q); e) return e;
    const uint64_t now = clock_ns(CLOCK_MONOTONIC);
    if (left < last) {
      last = left;
      since = now;
    } else if (now - since > k_tx_stall_ns) {
      return fail(status::time_out, "af_xdp: {} queue {}: {} frame(s) {}did not complete within {} ms", p->ifname,
                  q.qid, left, in_place_only ? "sent in place from RX buffers " : "", k_tx_stall_ns / 1'000'000);
    }
    // Copy mode completes within the kick; a zero-copy NIC within microseconds.
    if (spins < 64) sched_yield();
    else usleep(10);
  }
}

// Puts frames f[0, n) on q's TX ring: in place (each names an RX frame in q's
// UMEM) or copied into free TX frames. Empty or too long frames are skipped
// and counted in *bad. *done: frames of f dealt with (placed or skipped).
error tx_run(port* p, xsk_queue& q, const tx_frame* f, uint32_t n, bool in_place, uint32_t* placed, uint32_t* bad,
             uint32_t* done) {
  const uint32_t max_len = p->frame_size - XDP_PACKET_HEADROOM;
  uint64_t stalled_since = 0;
  uint32_t& i = *done;
  while (i < n) {
    reap(p, q);
    // Each frame in flight, copied or in place, will take a completion slot:
    // never more than the completion ring (tx_total entries) holds.
    const uint32_t in_flight = tx_in_flight(q);
    const uint32_t slots = q.tx_total > in_flight ? q.tx_total - in_flight : 0;
    const uint32_t room = std::min(slots, xsk_prod_nb_free(&q.tx, n - i));
    uint32_t take = 0, end = i;
    while (end < n && take < room) {
      if (f[end].len <= max_len && f[end].len > 0) ++take;
      ++end;
    }
    if (take == 0 && end > i) {  // only oversized frames in reach
      *bad += end - i;
      i = end;
      continue;
    }
    uint32_t idx = 0;
    if (take == 0 || xsk_ring_prod__reserve(&q.tx, take, &idx) != take) {
      // Everything is with the kernel: push it on and wait for completions.
      if (auto e = kick_tx(p, q); e) return e;
      const uint64_t now = clock_ns(CLOCK_MONOTONIC);
      if (!stalled_since) stalled_since = now;
      if (now - stalled_since > k_tx_stall_ns)
        return fail(status::full,
                    "af_xdp: {} queue {}: no TX frame came back from the kernel for {} ms; the rest of the burst is "
                    "dropped",
                    p->ifname, q.qid, k_tx_stall_ns / 1'000'000);
      usleep(10);
      continue;
    }
    stalled_since = 0;
    uint32_t slot = 0;
    for (uint32_t j = i; j < end; ++j) {
      const uint32_t len = f[j].len;
      if (len > max_len || len == 0) {
        ++*bad;
        continue;
      }
      uint64_t addr = 0;
      if (in_place) {
        addr = f[j].pool_off - q.base;
        ++q.in_place;
        q.in_place_len.push_back(len);
      } else {
        addr = q.tx_free.back();
        q.tx_free.pop_back();
        std::memcpy(xsk_umem__get_data(q.area, addr), f[j].data, len);
        q.tx_len[addr / p->frame_size] = len;
      }
      xdp_desc* d = xsk_ring_prod__tx_desc(&q.tx, idx + slot++);
      d->addr = addr;
      d->len = len;
      d->options = 0;
    }
    xsk_ring_prod__submit(&q.tx, take);
    *placed += take;
    i = end;
    // What is in the TX ring goes out if the interface comes back.
    if (auto e = kick_tx(p, q); e) return e;
  }
  return {};
}

error af_xdp_tx(void* priv, const tx_frame* frames, uint32_t n, uint32_t* sent) {
  auto* p = static_cast<port*>(priv);
  *sent = 0;
  if (p->failure.failed() || p->q.empty()) {
    bump(p->tx_errors, n);
    return fail(status::io_failed, "af_xdp: {} {}; nothing is sent", p->ifname,
                p->q.empty() ? "has no sockets (the RX pool was never set up)" : "failed earlier (see the log)");
  }
  uint32_t i = 0, placed = 0, too_big = 0;
  uint64_t in_place_sockets = 0;
  error e;
  while (i < n && !e) {
    // A run of frames for one socket: RX frames sent in place go out on the
    // socket whose UMEM holds them, copies on the first socket.
    const uint32_t s = in_place_socket(p, frames[i]);
    uint32_t end = i + 1;
    while (end < n && in_place_socket(p, frames[end]) == s) ++end;
    const uint32_t qi = s == UINT32_MAX ? 0 : s;
    // Frames leave in the order they were rung: a run on another socket
    // starts once the previous socket has sent everything.
    if (qi != p->tx_sock) {
      if ((e = tx_wait(p, p->q[p->tx_sock], false))) break;
      p->tx_sock = qi;
    }
    if (s != UINT32_MAX) in_place_sockets |= uint64_t{1} << qi;
    uint32_t done = 0;
    e = tx_run(p, p->q[qi], frames + i, end - i, s != UINT32_MAX, &placed, &too_big, &done);
    i += done;
  }
  // The consuming kernel reuses (and releases) its RX buffers once tx_burst
  // returns: every frame sent in place must have left by then.
  uint32_t late = 0;
  for (uint32_t qi = 0; qi < p->q.size(); ++qi) {
    if (!((in_place_sockets >> qi) & 1)) continue;
    if (auto we = tx_wait(p, p->q[qi], true); we) {
      late += p->q[qi].in_place;
      if (!e) e = std::move(we);
    }
  }
  reap(p, p->q.front());
  // Frames still in flight when the wait gave up count as sent when they
  // complete, so they are not counted as errors here as well.
  late = std::min(late, placed);
  *sent = placed - late;
  bump(p->tx_errors, too_big + (n - i));
  if (e) return e;
  if (too_big)
    return fail(status::too_big,
                "af_xdp: {}: {} frame(s) empty or longer than {} bytes (frame_size {} minus {} headroom) not sent",
                p->ifname, too_big, p->frame_size - XDP_PACKET_HEADROOM, p->frame_size, XDP_PACKET_HEADROOM);
  return {};
}

error af_xdp_stop(void* priv) {
  auto* p = static_cast<port*>(priv);
  if (p->failure.failed()) return {};
  // Give frames still in the TX ring a last push and count what completed;
  // the port stops either way, so what cannot go out is counted, not fatal.
  for (auto& q : p->q) {
    const uint64_t end = clock_ns(CLOCK_MONOTONIC) + 100'000'000;
    error e;
    while (tx_in_flight(q) > 0 && clock_ns(CLOCK_MONOTONIC) < end) {
      if ((e = kick_tx(p, q))) break;
      reap(p, q);
      if (tx_in_flight(q) > 0) usleep(100);
    }
    reap(p, q);
    if (const uint32_t left = tx_in_flight(q)) {
      bump(p->tx_errors, left);
      log(log_level::warn, "af_xdp: {} queue {}: {} frame(s) never left the TX ring{}{}", p->ifname, q.qid, left,
          e ? ": " : "", e ? e.message() : std::string());
    }
  }
  return {};
}

void af_xdp_close(void* priv) { destroy(static_cast<port*>(priv)); }

void af_xdp_counters(void* priv, counters* c) {
  auto* p = static_cast<port*>(priv);
  c->rx_frames = p->rx_pkts.load(std::memory_order_relaxed);
  c->rx_bytes = p->rx_bytes.load(std::memory_order_relaxed);
  c->tx_frames = p->tx_pkts.load(std::memory_order_relaxed);
  c->tx_bytes = p->tx_bytes.load(std::memory_order_relaxed);
  c->tx_errors = p->tx_errors.load(std::memory_order_relaxed);
  uint64_t rx_err = 0, rx_drop = 0, tx_invalid = 0;
  std::lock_guard lk(p->stats_mu);
  for (auto& q : p->q) {
    xdp_statistics s{};
    socklen_t len = sizeof s;
    // Kernels before 5.9 fill only the first three fields; the rest stay 0.
    if (q.fd >= 0 && getsockopt(q.fd, SOL_XDP, XDP_STATISTICS, &s, &len) == 0) q.last = s;
    // Frames the kernel dropped before they reached the RX ring (no fill-ring
    // buffer, RX ring full) are drops, not read errors; a descriptor the
    // kernel refused (a bad fill-ring address) is ours, an error.
    rx_drop += q.last.rx_dropped + q.last.rx_ring_full;
    rx_err += q.last.rx_invalid_descs;
    // In copy mode a frame dropped for an empty fill ring is already in
    // rx_dropped; only zero-copy drivers count it here alone.
    if (q.zerocopy) rx_drop += q.last.rx_fill_ring_empty_descs;
    tx_invalid += q.last.tx_invalid_descs;
  }
  c->rx_errors = rx_err;
  c->rx_dropped = rx_drop;
  c->tx_errors += tx_invalid;
}

}  // namespace

const ops af_xdp_ops = {
    .size = sizeof(ops),
    .name = "af_xdp",
    .summary =
        "a Linux network interface through AF_XDP sockets (libxdp), one per kernel RX queue; frames are "
        "received into the port's RX pool (the UMEM) and handed to kernels by reference",
    .options =
        "if=NAME       interface to open (must be up); needs CAP_NET_RAW, CAP_NET_ADMIN and CAP_BPF (or root)\n"
        "queue=Q       first kernel RX queue (default 0)\n"
        "queues=N      consecutive kernel queues from Q, one AF_XDP socket each (default 1, at most the channels);\n"
        "              with the core option lanes=L, L <= N engine threads each read every L-th socket\n"
        "mode=M        skb (generic XDP), drv (native XDP) or auto: drv, else skb (default auto); the port runs in\n"
        "              that mode or fails. gnio's XDP program is attached through a bpf_link: it goes with the port,\n"
        "              and with the process if that is killed\n"
        "zerocopy=0|1  1: require zero-copy (drv mode only); 0: force copy; default: whatever the driver offers\n"
        "frames=N      UMEM frames per queue, half RX (buffers kernels hold by reference) and half TX, a power\n"
        "              of two (default 4096)\n"
        "frame_size=B  bytes per UMEM frame, 2048 or the page size (default 2048); frames up to B - 256 bytes\n"
        "busy_poll=US  busy polling (default 0: off): SO_PREFER_BUSY_POLL and SO_BUSY_POLL=US on every socket, and\n"
        "              each empty receive runs the device's NAPI poll from the engine thread (Linux >= 5.11,\n"
        "              CAP_NET_ADMIN); lowest latency with the core option engine_poll=busy\n"
        "busy_poll_budget=N  frames per busy poll, SO_BUSY_POLL_BUDGET (default 64; needs busy_poll=)\n",
    .open = af_xdp_open,
    .get_caps = af_xdp_caps,
    .rx_pool_setup = af_xdp_rx_pool_setup,
    .rx_release = af_xdp_rx_release,
    .set_lanes = af_xdp_set_lanes,
    .start = nullptr,
    .rx_burst = af_xdp_rx,
    .tx_burst = af_xdp_tx,
    .stop = af_xdp_stop,
    .close = af_xdp_close,
    .get_counters = af_xdp_counters,
    .last_error = af_xdp_last_error,
};

}  // namespace gnio::backend
