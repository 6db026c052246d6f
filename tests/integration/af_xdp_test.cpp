// SPDX-License-Identifier: Apache-2.0
// The af_xdp backend on a veth pair the test creates: the port opens one end
// (in this namespace, so /sys/class/net shows its counters); the other end
// lives in a network namespace of the test's own, where a raw packet socket
// plays the outside world. Nothing but the test's frames crosses the pair:
// IPv6 is off on both ends and neither has an address.
//
// Needs CAP_NET_ADMIN (interfaces, XDP) plus what AF_XDP needs (CAP_NET_RAW,
// CAP_BPF or CAP_SYS_ADMIN); skipped without them, without `ip`, or when the
// backend was not built (no libxdp/libbpf).
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <gnio/backend/backend.hpp>
#include <gnio/device/rx.hpp>
#include <gnio/device/tx.hpp>
#include <gnio/gnio.hpp>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/frames.hpp"
#include "support/process.hpp"

#if defined(GNIO_TEST_HAVE_LIBBPF)
#include "integration/xdp_stale.hpp"
#endif

using namespace std::chrono_literals;
using frame = std::vector<uint8_t>;
using gnio::test::host_send;

namespace {

constexpr uint16_t k_ethertype = 0x88B5;  // IEEE local experimental: no stack reacts to it
constexpr std::array<uint8_t, 6> k_mac_a = {0x02, 0x67, 0x6e, 0x78, 0x00, 0x0a};
constexpr std::array<uint8_t, 6> k_mac_b = {0x02, 0x67, 0x6e, 0x78, 0x00, 0x0b};

bool has_cap(int cap) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("CapEff:", 0) != 0) continue;
    return (std::stoull(line.substr(7), nullptr, 16) >> cap) & 1u;
  }
  return false;
}

int sh(const std::string& cmd) {
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

std::string run(const std::string& cmd) {
  std::string out;
  if (FILE* f = popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
    pclose(f);
  }
  return out;
}

std::string mac_text(const std::array<uint8_t, 6>& m) {
  char s[18];
  std::snprintf(s, sizeof s, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
  return s;
}

uint64_t sys_stat(const std::string& ifname, const char* name) {
  std::ifstream in("/sys/class/net/" + ifname + "/statistics/" + name);
  uint64_t v = 0;
  in >> v;
  return v;
}

struct if_stats {
  uint64_t rx_packets, rx_bytes, tx_packets, tx_bytes;
};
if_stats read_stats(const std::string& ifname) {
  return {sys_stat(ifname, "rx_packets"), sys_stat(ifname, "rx_bytes"), sys_stat(ifname, "tx_packets"),
          sys_stat(ifname, "tx_bytes")};
}

// Ethernet to `dst` from `src`, the test EtherType, a sequence number and a
// pattern that differs per frame, `size` bytes in all.
frame make_frame(const std::array<uint8_t, 6>& dst, const std::array<uint8_t, 6>& src, uint32_t seq, uint32_t size) {
  frame f(dst.begin(), dst.end());
  f.insert(f.end(), src.begin(), src.end());
  f.push_back(k_ethertype >> 8);
  f.push_back(k_ethertype & 0xff);
  for (int i = 0; i < 4; ++i) f.push_back(static_cast<uint8_t>(seq >> (24 - 8 * i)));
  while (f.size() < size) f.push_back(static_cast<uint8_t>(f.size() * 31 + seq * 7));
  return f;
}

std::string fmt_hex(unsigned long v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lx", v);
  return buf;
}

uint64_t total_bytes(const std::vector<frame>& v) {
  uint64_t n = 0;
  for (const auto& f : v) n += f.size();
  return n;
}

// A raw packet socket on the peer end, created inside the peer's namespace (a
// socket stays in the namespace it was made in; only this helper thread
// switches, so the test process itself never leaves its own).
struct peer_socket {
  int fd = -1;
  ~peer_socket() {
    if (fd >= 0) close(fd);
  }
  std::string open(const std::string& netns, const std::string& ifname) {
    std::string why;
    std::thread([&] {
      const int nsfd = ::open(("/var/run/netns/" + netns).c_str(), O_RDONLY | O_CLOEXEC);
      if (nsfd < 0 || setns(nsfd, CLONE_NEWNET) != 0) {
        why = std::string("entering netns ") + netns + ": " + std::strerror(errno);
        if (nsfd >= 0) ::close(nsfd);
        return;
      }
      ::close(nsfd);
      // Bound to the test EtherType: incoming frames only (outgoing ones are
      // delivered to ETH_P_ALL taps alone).
      fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(k_ethertype));
      if (fd < 0) {
        why = std::string("socket(AF_PACKET): ") + std::strerror(errno);
        return;
      }
      // Room for every frame a test sends at once: the reader thread shares
      // two cores with the sender and the engine.
      const int rcvbuf = 32 << 20;
      (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf);
      sockaddr_ll sa{};
      sa.sll_family = AF_PACKET;
      sa.sll_protocol = htons(k_ethertype);
      sa.sll_ifindex = static_cast<int>(if_nametoindex(ifname.c_str()));
      if (sa.sll_ifindex == 0 || bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0)
        why = "binding to " + ifname + ": " + std::strerror(errno);
    }).join();
    return why;
  }
  bool send(const frame& f) const {
    for (int tries = 0; tries < 10000; ++tries) {
      if (::send(fd, f.data(), f.size(), 0) == static_cast<ssize_t>(f.size())) return true;
      if (errno != ENOBUFS && errno != EAGAIN) return false;
      std::this_thread::sleep_for(100us);
    }
    return false;
  }
  std::vector<frame> recv(size_t n, std::chrono::milliseconds timeout) const {
    std::vector<frame> out;
    std::vector<uint8_t> buf(65536);
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (out.size() < n) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      const ssize_t r = ::recv(fd, buf.data(), buf.size(), 0);
      if (r > 0) out.emplace_back(buf.begin(), buf.begin() + r);
    }
    return out;
  }
};

// What a kernel would see on an RX queue, drained on the host with the
// device API until n frames came or the time ran out. Each recv releases the
// batch before it (up to `batch` frames), as a kernel's does. offs: where
// each frame lay, as a byte offset into the queue's packet memory; count:
// frames so far, for a sender that paces itself on the consumer.
struct consumer {
  std::vector<frame> frames;
  std::vector<uint64_t> offs;
  std::atomic<size_t> count{0};
  std::atomic<bool> stop{false};
  void drain(const gnio::device::rxq& q, size_t n, std::chrono::milliseconds timeout, uint32_t batch = 64) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (frames.size() < n && !stop.load() && std::chrono::steady_clock::now() < end) {
      uint64_t first = 0;
      uint32_t num = 0;
      const auto s = gnio::device::recv<gnio::device::scope::thread>(q, batch, 1'000'000, &first, &num);
      if (s == gnio::status::shutdown) break;
      if (s != gnio::status::success) continue;
      for (uint32_t i = 0; i < num; ++i) {
        const uint8_t* p = gnio::device::pkt_addr(q, first + i);
        frames.emplace_back(p, p + gnio::device::pkt_len(q, first + i));
        offs.push_back(static_cast<uint64_t>(p - q.pkts));
      }
      count.store(frames.size());
    }
  }
};

// A received frame lies in an RX frame of the UMEM (the lower half of
// frames x frame_size bytes), XDP_PACKET_HEADROOM (256) bytes past its start.
void expect_umem_rx_frames(const std::vector<uint64_t>& offs, uint32_t frames, uint32_t frame_size = 2048) {
  size_t bad = 0;
  for (size_t i = 0; i < offs.size(); ++i)
    if ((offs[i] % frame_size != 256 || offs[i] >= uint64_t{frames / 2} * frame_size) && ++bad <= 3)
      ADD_FAILURE() << "frame " << i << " at offset " << offs[i] << ": not in an RX frame of the UMEM";
  EXPECT_EQ(bad, 0u) << "received frames must be the UMEM's own buffers (by reference)";
}

template <class Pred>
bool wait_for(Pred pred, std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

// Backend messages, for checking what an engine failure logged.
struct log_capture {
  std::mutex mu;
  std::vector<std::string> lines;
  gnio::log_hook old;
  log_capture() {
    old = gnio::set_log_hook([this](gnio::log_level, std::string_view m) {
      std::lock_guard lk(mu);
      lines.emplace_back(m);
    });
  }
  ~log_capture() { gnio::set_log_hook(old); }
  bool has(const std::string& needle) {
    std::lock_guard lk(mu);
    for (const auto& l : lines)
      if (l.find(needle) != std::string::npos) return true;
    return false;
  }
};

class af_xdp : public testing::Test {
 protected:
  std::string a, b, ns;  // port end, peer end, peer namespace
  bool created = false, ns_created = false;
  std::optional<gnio::gpu> g;

  void SetUp() override {
    if (!gnio::backend::find("af_xdp"))
      GTEST_SKIP() << "the af_xdp backend is not built (needs libxdp-dev, libbpf-dev)";
    if (!has_cap(CAP_NET_ADMIN) || !has_cap(CAP_NET_RAW) || !(has_cap(CAP_BPF) || has_cap(CAP_SYS_ADMIN)))
      GTEST_SKIP() << "needs CAP_NET_ADMIN, CAP_NET_RAW and CAP_BPF or CAP_SYS_ADMIN (run as root)";
    if (sh("command -v ip >/dev/null 2>&1") != 0) GTEST_SKIP() << "needs the ip command (Debian package iproute2)";
    static int seq = 0;
    const std::string tag = std::to_string(getpid() % 100000) + "x" + std::to_string(seq++);
    a = "gxa" + tag;
    b = "gxb" + tag;
    ns = "gnio-afxdp-" + tag;
    auto r = gnio::gpu::open("host");
    ASSERT_TRUE(r.ok()) << r.err().what();
    g = std::move(r).value();
  }

  void TearDown() override {
    // Deleting either end removes both; the interface may already be gone.
    if (created) (void)sh("ip link del " + a + " 2>/dev/null");
    if (ns_created) (void)sh("ip netns del " + ns + " 2>/dev/null");
  }

  void make_veth(bool up = true, int queues = 1) {
    ASSERT_EQ(sh("ip netns add " + ns), 0) << "ip netns add failed";
    ns_created = true;
    const std::string nq = " numrxqueues " + std::to_string(queues) + " numtxqueues " + std::to_string(queues);
    ASSERT_EQ(sh("ip link add " + a + " address " + mac_text(k_mac_a) + nq + " type veth peer name " + b + " address " +
                 mac_text(k_mac_b) + nq),
              0)
        << "ip link add failed";
    created = true;
    // Before the links come up, so no router solicitation or DAD frame is sent.
    if (std::ofstream f("/proc/sys/net/ipv6/conf/" + a + "/disable_ipv6"); f) f << "1\n";
    ASSERT_EQ(sh("ip link set " + b + " netns " + ns), 0);
    (void)sh("ip netns exec " + ns + " sh -c 'test -e /proc/sys/net/ipv6/conf/" + b +
             " && echo 1 > /proc/sys/net/ipv6/conf/" + b + "/disable_ipv6'");
    ASSERT_EQ(sh("ip -n " + ns + " link set " + b + " up"), 0);
    if (up) {
      ASSERT_EQ(sh("ip link set " + a + " up"), 0);
      ASSERT_TRUE(wait_for([&] { return sh("ip link show " + a + " | grep -q LOWER_UP") == 0; }, 5s)) << "no carrier";
    }
  }

  bool xdp_attached() { return run("ip -d link show " + a).find("prog/xdp") != std::string::npos; }

  // An opened port with one RX and one TX queue, the RX queue deep enough
  // that the host consumer never has to keep pace with the sender.
  struct opened {
    gnio::port p;
    uint32_t rq = 0, tq = 0;
    std::vector<uint32_t> extra_rq;  // more RX queues, destroyed with the port
  };
  void open_port(const std::string& opts, opened& o, gnio::mem_type pkt_mem = gnio::mem_type::automatic) {
    auto pr = gnio::port::open(*g, "af_xdp:if=" + a + opts);
    ASSERT_TRUE(pr.ok()) << pr.err().what();
    o.p = std::move(pr).value();
    gnio::rxq_config rc;
    rc.num_descs = 2048;
    rc.pkt_mem = pkt_mem;
    auto rq = o.p.create_rxq(rc);
    ASSERT_TRUE(rq.ok()) << rq.err().what();
    o.rq = *rq;
    auto tq = o.p.create_txq();
    ASSERT_TRUE(tq.ok()) << tq.err().what();
    o.tq = *tq;
  }
  void close_port(opened& o) {
    EXPECT_FALSE(o.p.stop());
    for (uint32_t id : o.extra_rq) EXPECT_FALSE(o.p.destroy_rxq(id));
    EXPECT_FALSE(o.p.destroy_rxq(o.rq));
    EXPECT_FALSE(o.p.destroy_txq(o.tq));
    EXPECT_FALSE(o.p.close());
  }

  // 1000 frames from the peer: they must arrive byte-exact, in order, and
  // the port's RX counters must match the kernel's for the port's end.
  // kernel_hdr_skew: bytes per frame the kernel leaves out of rx_bytes (veth
  // counts native-XDP frames after eth_type_trans pulled the 14-byte header).
  void receive_1000(opened& o, peer_socket& peer, uint32_t kernel_hdr_skew = 0) {
    // By reference: the queue's packet memory is the port's RX pool, one UMEM of 4096 frames.
    auto mem = o.p.rxq_memory(o.rq);
    ASSERT_TRUE(mem.ok()) << mem.err().what();
    EXPECT_EQ(mem->bytes, 4096u * 2048u) << "the RX queue's packet memory must be the UMEM";
    std::vector<frame> sent;
    for (uint32_t i = 0; i < 1000; ++i) sent.push_back(make_frame(k_mac_a, k_mac_b, i, 60 + (i * 37) % 1455));
    const auto before = read_stats(a);
    const auto q = *o.p.rxq(o.rq);
    consumer c;
    std::thread t([&] { c.drain(q, sent.size(), 20s); });
    for (size_t i = 0; i < sent.size(); ++i) {
      ASSERT_TRUE(peer.send(sent[i])) << std::strerror(errno);
      // Bounded lead over the engine, so a slow CI machine measures
      // correctness, not whether the XSK rings can absorb a burst.
      if (i % 64 == 63) (void)wait_for([&] { return o.p.stats().rx_frames + 512 >= i + 1; }, 2s);
    }
    t.join();
    ASSERT_EQ(c.frames.size(), sent.size());
    for (size_t i = 0; i < sent.size(); ++i) ASSERT_EQ(c.frames[i], sent[i]) << "received frame " << i << " differs";
    expect_umem_rx_frames(c.offs, 4096);
    const auto st = o.p.stats();
    const auto after = read_stats(a);
    EXPECT_EQ(st.rx_frames, sent.size());
    EXPECT_EQ(st.rx_bytes, total_bytes(sent));
    EXPECT_EQ(st.rx_frames, after.rx_packets - before.rx_packets) << "port RX vs /sys/class/net/" << a << "/statistics";
    EXPECT_EQ(st.rx_bytes, after.rx_bytes - before.rx_bytes + uint64_t{kernel_hdr_skew} * sent.size())
        << "port RX bytes vs /sys/class/net/" << a << "/statistics";
    EXPECT_EQ(st.rx_errors, 0u);
    EXPECT_EQ(st.rx_missed, 0u);
  }

  // lanes > 1: that many engine threads, each reading its share of the four
  // sockets into its own RX queue (one per lane).
  void four_queues(const std::string& mode, uint32_t lanes = 1) {
    make_veth(true, 4);
    opened o;
    ASSERT_NO_FATAL_FAILURE(
        open_port(",queues=4,mode=" + mode + (lanes > 1 ? ",lanes=" + std::to_string(lanes) : ""), o));
    EXPECT_EQ(o.p.caps().max_rx_queues, 64u) << "gnio RX queues are software rings, whatever the XSK sockets";
    for (uint32_t i = 1; i < lanes; ++i) {
      gnio::rxq_config rc;
      rc.num_descs = 2048;
      auto id = o.p.create_rxq(rc);
      ASSERT_TRUE(id.ok()) << id.err().what();
      o.extra_rq.push_back(*id);
    }
    const auto& extra = o.extra_rq;
    peer_socket peer;
    ASSERT_EQ(peer.open(ns, b), "");
    ASSERT_FALSE(o.p.start());
    if (lanes > 1) {
      // Transmit queue i of the peer for CPU i (XPS): as the sender moves over
      // the CPUs its frames use several veth queues, so every lane gets some.
      const long n = std::min(4L, std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
      for (long i = 0; i < n; ++i)
        (void)sh("ip netns exec " + ns + " sh -c 'echo " + fmt_hex(1ul << i) + " > /sys/class/net/" + b +
                 "/queues/tx-" + std::to_string(i) + "/xps_cpus'");
    }
    std::vector<gnio::device::rxq> qs{*o.p.rxq(o.rq)};
    for (uint32_t id : extra) qs.push_back(*o.p.rxq(id));
    consumer c;
    std::vector<consumer> more(extra.size());
    std::thread t([&] {
      // Round robin over the lanes' queues until all 1000 came.
      const auto end = std::chrono::steady_clock::now() + 20s;
      while (std::chrono::steady_clock::now() < end) {
        size_t got = c.frames.size();
        for (auto& m : more) got += m.frames.size();
        if (got >= 1000) break;
        c.drain(qs[0], c.frames.size() + 1, 2ms);
        for (size_t i = 0; i < more.size(); ++i) more[i].drain(qs[i + 1], more[i].frames.size() + 1, 2ms);
      }
      for (auto& m : more) c.frames.insert(c.frames.end(), m.frames.begin(), m.frames.end());
    });
    const long ncpu = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
    std::atomic<bool> send_ok{true};
    std::thread sender([&] {
      for (uint32_t i = 0; i < 1000 && send_ok; ++i) {
        if (i % 50 == 0) {
          cpu_set_t set;
          CPU_ZERO(&set);
          CPU_SET(static_cast<int>((i / 50) % ncpu), &set);
          (void)sched_setaffinity(0, sizeof set, &set);
        }
        send_ok = peer.send(make_frame(k_mac_a, k_mac_b, i, 60 + i % 1000));
        if (i % 64 == 63) (void)wait_for([&] { return o.p.stats().rx_frames + 512 >= i + 1; }, 2s);
      }
    });
    sender.join();
    t.join();
    ASSERT_TRUE(send_ok) << std::strerror(errno);
    ASSERT_EQ(c.frames.size(), 1000u);
    std::vector<uint32_t> seqs;
    for (const auto& f : c.frames) {
      const uint32_t s = uint32_t{f[14]} << 24 | uint32_t{f[15]} << 16 | uint32_t{f[16]} << 8 | f[17];
      ASSERT_LT(s, 1000u);
      EXPECT_EQ(f, make_frame(k_mac_a, k_mac_b, s, 60 + s % 1000));
      seqs.push_back(s);
    }
    std::sort(seqs.begin(), seqs.end());
    EXPECT_EQ(std::adjacent_find(seqs.begin(), seqs.end()), seqs.end()) << "a frame arrived twice";
    EXPECT_EQ(o.p.stats().rx_frames, 1000u);
    EXPECT_EQ(o.p.stats().rx_errors, 0u);
    if (lanes > 1 && ncpu >= 2) {
      // The sender moved over the CPUs, so veth used several kernel queues: each lane's queue got frames.
      const auto st = o.p.stats();
      EXPECT_GT(st.rxq[o.rq].delivered, 0u);
      for (uint32_t id : extra) EXPECT_GT(st.rxq[id].delivered, 0u) << "lane of RX queue " << id;
    }
    close_port(o);
    EXPECT_FALSE(xdp_attached()) << run("ip -d link show " + a);
  }

  // Frames through the port's TX queue reach the peer byte-exact and in
  // order; TX counters match the kernel's.
  void transmit_500(opened& o, peer_socket& peer) {
    std::vector<frame> out;
    for (uint32_t i = 0; i < 500; ++i) out.push_back(make_frame(k_mac_b, k_mac_a, 100000 + i, 60 + (i * 53) % 1455));
    const auto before = read_stats(a);
    const auto tx_before = o.p.stats().tx_frames;
    const auto t = *o.p.txq(o.tq);
    std::vector<frame> back;
    std::thread r([&] { back = peer.recv(out.size(), 20s); });
    for (const auto& f : out) host_send(t, f);
    r.join();
    ASSERT_EQ(back.size(), out.size()) << "the kernel counted " << read_stats(a).tx_packets - before.tx_packets
                                       << " frames sent by " << a;
    for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(back[i], out[i]) << "transmitted frame " << i << " differs";
    // TX frames count when the kernel completes them.
    EXPECT_TRUE(wait_for([&] { return o.p.stats().tx_frames - tx_before >= out.size(); }, 5s));
    const auto st = o.p.stats();
    const auto after = read_stats(a);
    EXPECT_EQ(st.tx_frames - tx_before, out.size());
    EXPECT_EQ(st.tx_frames - tx_before, after.tx_packets - before.tx_packets) << "port TX vs /sys/class/net/" << a;
    EXPECT_EQ(after.tx_bytes - before.tx_bytes, total_bytes(out)) << "/sys/class/net/" << a << " tx_bytes";
    EXPECT_EQ(st.tx_errors, 0u);
    ASSERT_EQ(st.txq.size(), 1u);
    EXPECT_EQ(st.txq[0].sent, out.size());
  }

  // Sends v from the peer, at most `lead` frames ahead of what the consumer
  // got (less `base`, what it had before): with a UMEM of a few RX frames, a
  // sender that ran ahead would find the fill ring empty and lose frames by
  // its own doing. A consumer that gets nothing for 5 s lost a frame: the
  // sender gives up and sets stop, so the consumer ends too.
  void paced_send(peer_socket& peer, const std::vector<frame>& v, const std::atomic<size_t>& got, size_t lead,
                  std::atomic<bool>& stop, size_t base = 0) {
    for (size_t i = 0; i < v.size(); ++i) {
      if (!peer.send(v[i])) {
        stop = true;
        FAIL() << "sending frame " << i << ": " << std::strerror(errno);
      }
      if (!wait_for([&] { return got.load() + lead >= base + i + 1; }, 5s)) {
        stop = true;
        FAIL() << "after frame " << i << " the consumer had " << got.load() - base << " of " << v.size();
      }
    }
  }
};

TEST_F(af_xdp, bad_options_are_refused_with_the_reason) {
  EXPECT_EQ(gnio::port::open(*g, "af_xdp:").code(), gnio::status::bad_config);
  EXPECT_EQ(gnio::port::open(*g, "af_xdp:if=lo,bogus=1").code(), gnio::status::bad_config);
  EXPECT_EQ(gnio::port::open(*g, "af_xdp:if=lo,mode=fast").code(), gnio::status::bad_config);
  EXPECT_EQ(gnio::port::open(*g, "af_xdp:if=lo,frames=1000").code(), gnio::status::invalid_value);
  EXPECT_EQ(gnio::port::open(*g, "af_xdp:if=lo,frame_size=3000").code(), gnio::status::invalid_value);
  // The UMEMs together are the RX pool, addressed by 32-bit offsets: 2 x 4 GiB is too much.
  auto big = gnio::port::open(*g, "af_xdp:if=lo,queues=2,frames=1048576,frame_size=4096");
  EXPECT_EQ(big.code(), gnio::status::invalid_value);
  if (!big.ok()) EXPECT_NE(big.err().message().find("4 GiB"), std::string::npos) << big.err().what();
  auto p = gnio::port::open(*g, "af_xdp:if=lo,mode=skb,zerocopy=1");
  EXPECT_EQ(p.code(), gnio::status::bad_config);
  EXPECT_NE(p.err().message().find("zerocopy"), std::string::npos) << p.err().what();
  EXPECT_EQ(gnio::port::open(*g, "af_xdp:if=lo,busy_poll=fast").code(), gnio::status::invalid_value);
  EXPECT_EQ(gnio::port::open(*g, "af_xdp:if=lo,busy_poll=2000000").code(), gnio::status::invalid_value);
  EXPECT_EQ(gnio::port::open(*g, "af_xdp:if=lo,busy_poll=50,busy_poll_budget=0").code(), gnio::status::invalid_value);
  p = gnio::port::open(*g, "af_xdp:if=lo,busy_poll_budget=16");
  EXPECT_EQ(p.code(), gnio::status::bad_config);
  EXPECT_NE(p.err().message().find("busy_poll="), std::string::npos) << p.err().what();
}

// Busy polling (SO_PREFER_BUSY_POLL, SO_BUSY_POLL, SO_BUSY_POLL_BUDGET on
// every socket, the engine polling the device from recvfrom) with an engine
// that never sleeps: the same traffic, byte for byte.
TEST_F(af_xdp, busy_polling_rx_and_tx_are_byte_exact) {
  make_veth();
  opened o;
  ASSERT_NO_FATAL_FAILURE(open_port(",mode=skb,busy_poll=50,busy_poll_budget=32,engine_poll=busy", o));
  peer_socket peer;
  ASSERT_EQ(peer.open(ns, b), "");
  ASSERT_FALSE(o.p.start());
  ASSERT_NO_FATAL_FAILURE(receive_1000(o, peer));
  ASSERT_NO_FATAL_FAILURE(transmit_500(o, peer));
  EXPECT_EQ(o.p.stats().rx_frames, 1000u);
  close_port(o);
}

TEST_F(af_xdp, missing_interface_is_not_found_and_named) {
  auto p = gnio::port::open(*g, "af_xdp:if=gnio-nosuch0,mode=skb");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.code(), gnio::status::not_found) << p.err().what();
  EXPECT_NE(p.err().message().find("gnio-nosuch0"), std::string::npos) << p.err().what();
}

TEST_F(af_xdp, interface_down_is_not_connected_with_the_fix) {
  make_veth(false);
  auto p = gnio::port::open(*g, "af_xdp:if=" + a + ",mode=skb");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.code(), gnio::status::not_connected) << p.err().what();
  const auto& d = gnio::describe(p.code());
  EXPECT_EQ(d.where, gnio::layer::env);
  EXPECT_NE(d.next.find("ip link set"), std::string::npos) << "the hint must point at the link: " << d.next;
  EXPECT_NE(p.err().message().find("ip link set dev " + a + " up"), std::string::npos) << p.err().what();
  EXPECT_FALSE(xdp_attached()) << "a refused open must not leave an XDP program";
}

TEST_F(af_xdp, more_queues_than_channels_is_refused) {
  make_veth();
  auto p = gnio::port::open(*g, "af_xdp:if=" + a + ",mode=skb,queue=0,queues=2");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.code(), gnio::status::invalid_value) << p.err().what();
  EXPECT_NE(p.err().message().find("ethtool"), std::string::npos) << p.err().what();
  EXPECT_FALSE(xdp_attached());
}

TEST_F(af_xdp, without_privileges_is_not_permitted) {
  make_veth();
  // A child drops what AF_XDP and XDP need and opens a port; the parent keeps its rights.
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2]{};
    if (syscall(SYS_capget, &hdr, data) != 0) _exit(3);
    for (int cap : {CAP_NET_RAW, CAP_NET_ADMIN, CAP_SYS_ADMIN, CAP_BPF}) {
      data[cap / 32].effective &= ~(1u << (cap % 32));
      data[cap / 32].permitted &= ~(1u << (cap % 32));
    }
    if (syscall(SYS_capset, &hdr, data) != 0) _exit(3);
    auto cg = gnio::gpu::open("host");
    if (!cg) _exit(3);
    auto p = gnio::port::open(*cg, "af_xdp:if=" + a + ",mode=skb");
    const bool ok = !p.ok() && p.code() == gnio::status::not_permitted &&
                    p.err().message().find("CAP_NET_RAW") != std::string::npos;
    if (!ok) std::fprintf(stderr, "child got: %s\n", p.ok() ? "success" : p.err().what().c_str());
    _exit(ok ? 0 : 1);
  }
  int st = 0;
  ASSERT_EQ(waitpid(pid, &st, 0), pid);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_NE(WEXITSTATUS(st), 3) << "the child could not drop its capabilities";
  EXPECT_EQ(WEXITSTATUS(st), 0) << "without the capabilities, open must fail with not_permitted naming them";
}

TEST_F(af_xdp, caps_follow_the_interface) {
  make_veth();
  auto p = gnio::port::open(*g, "af_xdp:if=" + a + ",mode=skb");
  ASSERT_TRUE(p.ok()) << p.err().what();
  EXPECT_TRUE(p->caps().rx);
  EXPECT_TRUE(p->caps().tx);
  EXPECT_EQ(p->caps().max_rx_queues, 64u) << "software RX queues: steering feeds any number from one XSK socket";
  EXPECT_EQ(p->caps().max_pkt_bytes, 2048u - 256u);
  EXPECT_FALSE(p->caps().rx_timestamps);
  EXPECT_FALSE(p->caps().finite);
  EXPECT_TRUE(xdp_attached()) << run("ip -d link show " + a);
  EXPECT_FALSE(p->close());
  EXPECT_FALSE(xdp_attached()) << "the XDP program must go with the last socket:\n" << run("ip -d link show " + a);
}

TEST_F(af_xdp, skb_mode_rx_and_tx_are_byte_exact_and_counters_match_the_kernel) {
  make_veth();
  opened o;
  ASSERT_NO_FATAL_FAILURE(open_port(",mode=skb", o));
  peer_socket peer;
  ASSERT_EQ(peer.open(ns, b), "");
  ASSERT_FALSE(o.p.start());
  ASSERT_NO_FATAL_FAILURE(receive_1000(o, peer));
  ASSERT_NO_FATAL_FAILURE(transmit_500(o, peer));
  // Nothing the port sent came back in through its own RX queue.
  EXPECT_EQ(o.p.stats().rx_frames, 1000u);
  close_port(o);
  EXPECT_FALSE(xdp_attached()) << "no XDP program may remain after close:\n" << run("ip -d link show " + a);
}

// Native XDP on veth (kernel 4.19+ has it): the same traffic must pass. A
// kernel without it reports not_supported, which skips rather than fails.
TEST_F(af_xdp, drv_mode_rx_and_tx_are_byte_exact) {
  make_veth();
  auto pr = gnio::port::open(*g, "af_xdp:if=" + a + ",mode=drv");
  if (!pr.ok() && pr.code() == gnio::status::not_supported) GTEST_SKIP() << pr.err().what();
  ASSERT_TRUE(pr.ok()) << pr.err().what();
  EXPECT_FALSE(pr->close());
  opened o;
  ASSERT_NO_FATAL_FAILURE(open_port(",mode=drv", o));
  peer_socket peer;
  ASSERT_EQ(peer.open(ns, b), "");
  ASSERT_FALSE(o.p.start());
  ASSERT_NO_FATAL_FAILURE(receive_1000(o, peer, 14));
  ASSERT_NO_FATAL_FAILURE(transmit_500(o, peer));
  close_port(o);
  EXPECT_FALSE(xdp_attached()) << run("ip -d link show " + a);
}

// One socket per kernel queue: a packet socket transmits on the queue of the
// CPU it runs on and veth receives on the same index, so a sender that moves
// between CPUs feeds several of them. Every frame must arrive exactly once.
TEST_F(af_xdp, four_queues_skb_mode_deliver_every_frame_once) { four_queues("skb"); }
TEST_F(af_xdp, four_queues_drv_mode_deliver_every_frame_once) { four_queues("drv"); }
TEST_F(af_xdp, four_queues_with_2_engine_lanes_deliver_every_frame_once) { four_queues("drv", 2); }

TEST_F(af_xdp, oversized_tx_frame_is_counted_not_fatal) {
  make_veth();
  opened o;
  ASSERT_NO_FATAL_FAILURE(open_port(",mode=skb", o));
  peer_socket peer;
  ASSERT_EQ(peer.open(ns, b), "");
  ASSERT_FALSE(o.p.start());
  const auto t = *o.p.txq(o.tq);
  log_capture quiet;                                    // the engine warns about the refused frame
  host_send(t, make_frame(k_mac_b, k_mac_a, 1, 1900));  // over 2048 - 256
  host_send(t, make_frame(k_mac_b, k_mac_a, 2, 100));
  const auto back = peer.recv(1, 5s);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0], make_frame(k_mac_b, k_mac_a, 2, 100));
  EXPECT_TRUE(wait_for([&] { return o.p.stats().tx_frames == 1; }, 5s));
  const auto st = o.p.stats();
  EXPECT_EQ(st.tx_errors, 1u);
  EXPECT_EQ(st.txq[0].errors, 1u);
  EXPECT_FALSE(o.p.engine_error()) << "a refused frame is counted, not fatal";
  close_port(o);
}

TEST_F(af_xdp, interface_removed_while_running_is_an_engine_error_and_stats_stay) {
  make_veth();
  opened o;
  ASSERT_NO_FATAL_FAILURE(open_port(",mode=skb", o));
  peer_socket peer;
  ASSERT_EQ(peer.open(ns, b), "");
  ASSERT_FALSE(o.p.start());
  const auto q = *o.p.rxq(o.rq);
  consumer c;
  for (uint32_t i = 0; i < 100; ++i) ASSERT_TRUE(peer.send(make_frame(k_mac_a, k_mac_b, i, 200)));
  c.drain(q, 100, 10s);
  ASSERT_EQ(c.frames.size(), 100u);

  log_capture logs;
  ASSERT_EQ(sh("ip link del " + a), 0);
  created = false;
  ASSERT_TRUE(wait_for([&] { return static_cast<bool>(o.p.engine_error()); }, 5s)) << "the removal went unnoticed";
  EXPECT_EQ(o.p.engine_error().code(), gnio::status::io_failed) << o.p.engine_error().what();
  EXPECT_TRUE(logs.has("removed")) << "the backend must say why";
  EXPECT_NE(std::string(o.p.engine_error().what()).find("removed"), std::string::npos)
      << "engine_error() carries the reason: " << o.p.engine_error().what();
  // The consumer sees the end of the stream, not a hang.
  c.drain(q, 101, 5s);
  EXPECT_EQ(c.frames.size(), 100u);
  EXPECT_TRUE(o.p.rx_ended());
  const auto st = o.p.stats();
  EXPECT_EQ(st.rx_frames, 100u) << "counters survive the interface";
  EXPECT_EQ(st.rx_bytes, 100u * 200u);
  const auto t0 = std::chrono::steady_clock::now();
  close_port(o);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s) << "closing after the removal must not hang";
}

// --- The XDP program goes with the process (F10) --------------------------------

// What `ip -d -j link show` says about the interface's XDP program: the mode
// ("drv", "skb", "" for none) and the program's name.
struct xdp_seen {
  std::string mode, name;
};
xdp_seen xdp_state(const std::string& ifname) {
  xdp_seen s;
  nlohmann::json j = nlohmann::json::parse(run("ip -d -j link show dev " + ifname), nullptr, false);
  if (!j.is_array() || j.empty() || !j[0].contains("xdp")) return s;
  const auto& x = j[0]["xdp"];
  const int mode = x.value("mode", 0);  // XDP_ATTACHED_DRV 1, SKB 2, HW 3
  s.mode = mode == 1 ? "drv" : mode == 2 ? "skb" : mode == 3 ? "hw" : "other";
  if (x.contains("prog")) s.name = x["prog"].value("name", "");
  return s;
}

// The pid of a running process whose command line contains `needle`, or 0.
pid_t find_process(const std::string& needle) {
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string pid = e.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "cmdline");
    std::string cmd((std::istreambuf_iterator<char>(in)), {});
    std::replace(cmd.begin(), cmd.end(), '\0', ' ');
    if (cmd.find(needle) != std::string::npos && std::stoi(pid) != getpid()) return std::stoi(pid);
  }
  return 0;
}

TEST_F(af_xdp, kill_9_leaves_no_xdp_program_and_the_next_run_gets_the_mode_it_asks_for) {
  make_veth();
  const std::string dev = "af_xdp:if=" + a + ",mode=skb";
  gnio::test::proc_result r;
  std::thread t([&] {
    gnio::test::run_options o;
    o.limit = std::chrono::seconds(120);
    r = gnio::test::run_process({gnio::test::tool_bin(), "pp", "--port", dev, "--gpu", "host", "--stats-interval", "0"},
                                o);
  });
  // Attached means the port is open: then the process dies without a word.
  const bool up = wait_for([&] { return xdp_state(a).mode == "skb"; }, 60s);
  const pid_t pid = up ? find_process(dev) : 0;
  if (pid > 0) kill(pid, SIGKILL);
  t.join();
  ASSERT_TRUE(up) << "gnio pp never attached its program:\n" << r.describe();
  ASSERT_GT(pid, 0);
  EXPECT_EQ(r.signal, SIGKILL) << r.describe();
  EXPECT_TRUE(wait_for([&] { return !xdp_attached(); }, 5s)) << "the XDP program must go with the killed process:\n"
                                                             << run("ip -d link show " + a);

  // The next run asks for another mode and gets it, and leaves nothing either.
  auto p = gnio::port::open(*g, "af_xdp:if=" + a + ",mode=drv");
  ASSERT_TRUE(p.ok()) << p.err().what();
  const xdp_seen s = xdp_state(a);
  EXPECT_EQ(s.mode, "drv") << run("ip -d link show " + a);
  EXPECT_EQ(s.name, "gnio_xsk");
  EXPECT_FALSE(p->close());
  EXPECT_FALSE(xdp_attached()) << run("ip -d link show " + a);
}

#if defined(GNIO_TEST_HAVE_LIBBPF)
using gnio::test::attach_xsk_def_prog;

TEST_F(af_xdp, stale_xsk_program_of_a_dead_process_is_replaced_with_a_warning) {
  make_veth();
  // A process attaches the program (in skb mode) and dies without detaching
  // it: what a killed libxdp user, or gnio before it used bpf_links, left.
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int map = -1;
    _exit(attach_xsk_def_prog(if_nametoindex(a.c_str()), true, &map) >= 0 ? 0 : 1);
  }
  int st = 0;
  ASSERT_EQ(waitpid(child, &st, 0), child);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "could not attach the stale program";
  ASSERT_EQ(xdp_state(a).mode, "skb");
  ASSERT_EQ(xdp_state(a).name, "xsk_def_prog");

  log_capture logs;
  opened o;
  ASSERT_NO_FATAL_FAILURE(open_port(",mode=drv", o));
  EXPECT_TRUE(logs.has("stale AF_XDP program")) << "replacing it must be said";
  const xdp_seen s = xdp_state(a);
  EXPECT_EQ(s.mode, "drv") << "mode=drv must run in drv mode, not through the stale generic program";
  EXPECT_EQ(s.name, "gnio_xsk");
  // And it receives through its own program.
  peer_socket peer;
  ASSERT_EQ(peer.open(ns, b), "");
  ASSERT_FALSE(o.p.start());
  const auto q = *o.p.rxq(o.rq);
  consumer c;
  for (uint32_t i = 0; i < 10; ++i) ASSERT_TRUE(peer.send(make_frame(k_mac_a, k_mac_b, i, 100)));
  c.drain(q, 10, 10s);
  EXPECT_EQ(c.frames.size(), 10u);
  close_port(o);
  EXPECT_FALSE(xdp_attached()) << run("ip -d link show " + a);
}

TEST_F(af_xdp, xdp_program_another_process_holds_is_refused_not_replaced) {
  make_veth();
  // This process holds it (its descriptors stay open): someone's live program.
  int map = -1;
  const int prog = attach_xsk_def_prog(if_nametoindex(a.c_str()), true, &map);
  ASSERT_GE(prog, 0) << std::strerror(-prog);
  auto p = gnio::port::open(*g, "af_xdp:if=" + a + ",mode=skb");
  EXPECT_EQ(p.code(), gnio::status::in_use) << (p ? "opened" : p.err().what());
  if (!p) {
    EXPECT_NE(p.err().message().find("held by pid " + std::to_string(getpid())), std::string::npos) << p.err().what();
    EXPECT_NE(p.err().message().find("xdpgeneric off"), std::string::npos) << p.err().what();
  }
  EXPECT_EQ(xdp_state(a).name, "xsk_def_prog") << "a program someone holds must stay";
  gnio::test::detach_xdp(if_nametoindex(a.c_str()), true);
  close(prog);
  close(map);
}
#endif

// --- Receive by reference: the UMEM is the port's RX pool --------------------

// frames=128: 64 RX frames in the UMEM. 2000 frames pass through them, so
// each buffer goes back to the fill ring many times, as the consumer
// releases it; none is lost (every frame arrives) or handed out twice (no
// frame overwritten while held: each arrives byte-exact).
TEST_F(af_xdp, more_frames_than_umem_rx_buffers_arrive_once_each) {
  make_veth();
  opened o;
  ASSERT_NO_FATAL_FAILURE(open_port(",mode=skb,frames=128", o));
  auto mem = o.p.rxq_memory(o.rq);
  ASSERT_TRUE(mem.ok()) << mem.err().what();
  EXPECT_EQ(mem->bytes, 128u * 2048u) << "the RX queue's packet memory must be the UMEM";
  peer_socket peer;
  ASSERT_EQ(peer.open(ns, b), "");
  ASSERT_FALSE(o.p.start());
  std::vector<frame> sent;
  for (uint32_t i = 0; i < 2000; ++i) sent.push_back(make_frame(k_mac_a, k_mac_b, i, 60 + (i * 37) % 1455));
  const auto q = *o.p.rxq(o.rq);
  consumer c;
  std::thread t([&] { c.drain(q, sent.size(), 60s, 8); });
  paced_send(peer, sent, c.count, 8, c.stop);
  t.join();
  ASSERT_EQ(c.frames.size(), sent.size());
  for (size_t i = 0; i < sent.size(); ++i) ASSERT_EQ(c.frames[i], sent[i]) << "received frame " << i << " differs";
  expect_umem_rx_frames(c.offs, 128);
  std::vector<uint64_t> used = c.offs;
  std::sort(used.begin(), used.end());
  used.erase(std::unique(used.begin(), used.end()), used.end());
  EXPECT_LE(used.size(), 64u) << "only the UMEM's 64 RX frames carry frames";
  const auto st = o.p.stats();
  EXPECT_EQ(st.rx_frames, sent.size());
  EXPECT_EQ(st.rx_dropped, 0u) << "the fill ring never ran dry: every released buffer came back";
  EXPECT_EQ(st.rx_errors, 0u);
  EXPECT_EQ(st.rx_missed, 0u);
  close_port(o);
}

// A consumer that releases nothing holds every RX buffer: the fill ring runs
// dry and the kernel drops what arrives, counted in rx_dropped (drops before
// the engine saw the frames, not read errors), while the port's accounting
// still balances. Once the consumer releases, the buffers return and receive
// goes on.
TEST_F(af_xdp, consumer_that_does_not_release_starves_the_fill_ring_and_drops_are_counted) {
  make_veth();
  opened o;
  ASSERT_NO_FATAL_FAILURE(open_port(",mode=skb,frames=128", o));
  peer_socket peer;
  ASSERT_EQ(peer.open(ns, b), "");
  ASSERT_FALSE(o.p.start());
  std::vector<frame> sent;
  for (uint32_t i = 0; i < 300; ++i) sent.push_back(make_frame(k_mac_a, k_mac_b, i, 60 + (i * 37) % 1455));
  // One at a time, each received or dropped before the next is sent.
  for (size_t i = 0; i < sent.size(); ++i) {
    ASSERT_TRUE(peer.send(sent[i])) << std::strerror(errno);
    (void)wait_for(
        [&] {
          const auto st = o.p.stats();
          return st.rx_frames + st.rx_dropped >= i + 1;
        },
        5s);
  }
  ASSERT_TRUE(wait_for(
      [&] {
        const auto st = o.p.stats();
        return st.rx_frames + st.rx_dropped >= sent.size();
      },
      5s));
  auto st = o.p.stats();
  EXPECT_EQ(st.rx_frames, 64u) << "the 64 RX frames of the UMEM, then nothing";
  EXPECT_EQ(st.rx_dropped, sent.size() - 64) << "the kernel counts what found the fill ring empty";
  EXPECT_EQ(st.rx_errors, 0u) << "a drop for want of a buffer is no read error";
  EXPECT_EQ(st.rxq[o.rq].delivered, 64u);
  EXPECT_EQ(st.rxq[o.rq].consumed, 0u);
  // received = processed + missed + unsteered + pending, nothing processed yet.
  EXPECT_EQ(st.rx_frames, 0 + st.rx_missed + st.rx_unsteered + st.rxq[o.rq].delivered);

  // Now the consumer takes the 64 and releases them (each recv releases the
  // batch before it): the buffers go back to the fill ring.
  const auto q = *o.p.rxq(o.rq);
  consumer c;
  c.drain(q, 64, 10s, 8);
  ASSERT_EQ(c.frames.size(), 64u);
  for (size_t i = 0; i < 64; ++i) ASSERT_EQ(c.frames[i], sent[i]) << "held frame " << i << " changed";
  // Release the last batch too, and wait until the engine has handed every
  // buffer back (rxq_stats::returned): a frame that came before that would
  // find the fill ring still short and be dropped, by the test's doing.
  gnio::device::release_all(q);
  ASSERT_TRUE(wait_for([&] { return o.p.stats().rxq[o.rq].returned == 64; }, 5s))
      << "returned " << o.p.stats().rxq[o.rq].returned << " of 64 released buffers";
  std::vector<frame> more;
  for (uint32_t i = 0; i < 200; ++i) more.push_back(make_frame(k_mac_a, k_mac_b, 1000 + i, 60 + (i * 53) % 1455));
  std::thread t([&] { c.drain(q, 64 + more.size(), 30s, 8); });
  paced_send(peer, more, c.count, 8, c.stop, 64);
  t.join();
  {
    const auto s2 = o.p.stats();
    ASSERT_EQ(c.frames.size(), 64 + more.size())
        << "receive must resume once buffers are released; port: rx_frames " << s2.rx_frames << ", rx_dropped "
        << s2.rx_dropped << ", rx_missed " << s2.rx_missed << ", delivered " << s2.rxq[o.rq].delivered << ", consumed "
        << s2.rxq[o.rq].consumed << ", engine error '" << o.p.engine_error().what() << "'";
  }
  for (size_t i = 0; i < more.size(); ++i)
    ASSERT_EQ(c.frames[64 + i], more[i]) << "frame " << i << " after the release";
  st = o.p.stats();
  const uint64_t processed = c.frames.size();
  EXPECT_EQ(st.rx_frames, processed);
  EXPECT_EQ(st.rx_dropped, sent.size() - 64) << "no drop once buffers came back";
  EXPECT_EQ(st.rx_errors, 0u);
  EXPECT_EQ(st.rx_frames, processed + st.rx_missed + st.rx_unsteered + (st.rxq[o.rq].delivered - processed));
  close_port(o);
}

// Two sockets read by two engine lanes feed one RX queue (a steering group
// smaller than the lanes is shared), so a lane often releases buffers the
// other lane's socket received. Each must reach its own socket's fill ring:
// with 64 RX frames per socket and 2000 frames, a misplaced buffer would
// starve a socket or corrupt a frame.
TEST_F(af_xdp, buffers_released_on_another_lane_go_back_to_their_socket) {
  make_veth(true, 2);
  opened o;
  // drv: veth hands generic (skb) XDP every frame on queue 0, native XDP on the sender's queue.
  ASSERT_NO_FATAL_FAILURE(open_port(",mode=drv,queues=2,lanes=2,frames=128", o));
  gnio::rxq_config rc;
  rc.num_descs = 2048;
  auto idle = o.p.create_rxq(rc);  // lanes=2 needs two RX queues; nothing is steered here
  ASSERT_TRUE(idle.ok()) << idle.err().what();
  o.extra_rq.push_back(*idle);
  ASSERT_FALSE(o.p.set_steering({}, {o.rq}));
  peer_socket peer;
  ASSERT_EQ(peer.open(ns, b), "");
  ASSERT_FALSE(o.p.start());
  // Transmit queue i of the peer for CPU i (XPS), as in four_queues.
  const long ncpu = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  for (long i = 0; i < std::min(2L, ncpu); ++i)
    (void)sh("ip netns exec " + ns + " sh -c 'echo " + fmt_hex(1ul << i) + " > /sys/class/net/" + b + "/queues/tx-" +
             std::to_string(i) + "/xps_cpus'");
  const auto q = *o.p.rxq(o.rq);
  consumer c;
  std::thread t([&] { c.drain(q, 2000, 60s, 8); });
  std::atomic<bool> send_ok{true};
  std::thread sender([&] {
    for (uint32_t i = 0; i < 2000 && send_ok && !c.stop; ++i) {
      if (i % 50 == 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(static_cast<int>((i / 50) % ncpu), &set);
        (void)sched_setaffinity(0, sizeof set, &set);
      }
      send_ok = peer.send(make_frame(k_mac_a, k_mac_b, i, 60 + (i * 37) % 1455));
      // Nothing for 5 s: a frame was lost; the count below says so.
      if (!wait_for([&] { return c.count.load() + 8 >= i + 1; }, 5s)) c.stop = true;
    }
  });
  sender.join();
  t.join();
  ASSERT_TRUE(send_ok) << std::strerror(errno);
  ASSERT_EQ(c.frames.size(), 2000u);
  std::vector<uint32_t> seqs;
  for (const auto& f : c.frames) {
    const uint32_t s = uint32_t{f[14]} << 24 | uint32_t{f[15]} << 16 | uint32_t{f[16]} << 8 | f[17];
    ASSERT_LT(s, 2000u);
    EXPECT_EQ(f, make_frame(k_mac_a, k_mac_b, s, 60 + (s * 37) % 1455));
    seqs.push_back(s);
  }
  std::sort(seqs.begin(), seqs.end());
  EXPECT_EQ(std::adjacent_find(seqs.begin(), seqs.end()), seqs.end()) << "a frame arrived twice";
  // Both sockets' regions of the pool carried frames.
  size_t in_second = 0;
  for (uint64_t off : c.offs) in_second += off >= 128u * 2048u;
  const auto st = o.p.stats();
  EXPECT_EQ(st.rx_frames, 2000u);
  EXPECT_EQ(st.rx_dropped, 0u) << "a socket's fill ring ran dry: released buffers did not all come back";
  if (ncpu >= 2) {
    ASSERT_EQ(st.lanes.size(), 2u);
    EXPECT_GT(st.lanes[0].frames, 0u);
    EXPECT_GT(st.lanes[1].frames, 0u);
    EXPECT_GT(in_second, 0u);
    EXPECT_LT(in_second, c.offs.size());
  }
  close_port(o);
}

// l2fwd in place: the consumer swaps the MACs in the RX buffer and sends that
// very buffer (its address is in the RX pool, so the backend posts the UMEM
// frame itself), waiting for the TX completion before its next recv releases
// it. 500 frames through 64 RX frames: every buffer is sent and reused many
// times, and each reply is byte-exact.
// In skb and drv mode (veth: native XDP, copy mode).
class af_xdp_echo : public af_xdp, public testing::WithParamInterface<std::string> {};

TEST_P(af_xdp_echo, in_place_from_rx_buffers_is_byte_exact) {
  make_veth();
  opened o;
  ASSERT_NO_FATAL_FAILURE(open_port(",frames=128,mode=" + GetParam(), o));
  peer_socket peer;
  ASSERT_EQ(peer.open(ns, b), "");
  ASSERT_FALSE(o.p.start());
  const auto q = *o.p.rxq(o.rq);
  const auto tq = *o.p.txq(o.tq);
  constexpr size_t n = 500;
  std::atomic<size_t> echoed{0};
  std::atomic<bool> echo_ok{true}, echo_stop{false};
  std::thread echo([&] {
    using namespace gnio::device;
    const auto end = std::chrono::steady_clock::now() + 30s;
    while (echoed.load() < n && !echo_stop.load() && std::chrono::steady_clock::now() < end) {
      uint64_t first = 0;
      uint32_t num = 0;
      if (recv<scope::thread>(q, 8, 1'000'000, &first, &num) != gnio::status::success) continue;
      for (uint32_t i = 0; i < num; ++i) {
        uint8_t* f = pkt_addr(q, first + i);
        uint8_t mac[6];
        std::memcpy(mac, f, 6);
        std::memcpy(f, f + 6, 6);
        std::memcpy(f + 6, mac, 6);
        uint64_t idx = 0;
        if (tx_reserve(tq, 1, 5'000'000'000ull, &idx) != gnio::status::success) {
          echo_ok = false;
          return;
        }
        tx_prepare(tq, idx, f, pkt_len(q, first + i));
        tx_commit(tq, 1);
      }
      tx_doorbell(tq);
      // The buffers go back with the next recv: their frames must have left.
      if (tx_wait(tq, 5'000'000'000ull) != gnio::status::success) {
        echo_ok = false;
        return;
      }
      echoed.fetch_add(num);
    }
    release_all(q);
  });
  std::vector<frame> sent, want;
  for (uint32_t i = 0; i < n; ++i) {
    sent.push_back(make_frame(k_mac_a, k_mac_b, i, 60 + (i * 53) % 1455));
    want.push_back(make_frame(k_mac_b, k_mac_a, i, 60 + (i * 53) % 1455));
  }
  std::vector<frame> back;
  std::thread r([&] { back = peer.recv(n, 30s); });
  paced_send(peer, sent, echoed, 8, echo_stop);
  echo.join();
  r.join();
  ASSERT_TRUE(echo_ok) << "the TX queue did not complete";
  ASSERT_EQ(back.size(), n);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(back[i], want[i]) << "echoed frame " << i << " differs";
  EXPECT_TRUE(wait_for([&] { return o.p.stats().tx_frames >= n; }, 5s));
  const auto st = o.p.stats();
  EXPECT_EQ(st.tx_frames, n);
  EXPECT_EQ(st.tx_errors, 0u);
  EXPECT_EQ(st.txq[0].sent, n);
  EXPECT_EQ(st.txq[0].bad_addr, 0u);
  EXPECT_EQ(st.rx_frames, n);
  EXPECT_EQ(st.rx_dropped, 0u) << "every RX buffer came back after its frame was sent";
  close_port(o);
}

INSTANTIATE_TEST_SUITE_P(modes, af_xdp_echo, testing::Values("skb", "drv"),
                         [](const auto& info) { return info.param; });

// A queue with packet memory of its own (GPU memory; on the host executor it
// has no host address either) cannot take UMEM frames by reference: the
// engine copies them in and each UMEM frame goes back to the fill ring at
// once, so 1000 frames pass through 64 RX frames with no release involved.
TEST_F(af_xdp, queue_with_gpu_packet_memory_gets_copies) {
  make_veth();
  opened o;
  ASSERT_NO_FATAL_FAILURE(open_port(",mode=skb,frames=128", o, gnio::mem_type::gpu));
  auto mem = o.p.rxq_memory(o.rq);
  ASSERT_TRUE(mem.ok()) << mem.err().what();
  EXPECT_NE(mem->bytes, 128u * 2048u) << "a gpu queue has an area of its own, not the UMEM";
  peer_socket peer;
  ASSERT_EQ(peer.open(ns, b), "");
  ASSERT_FALSE(o.p.start());
  std::vector<frame> sent;
  for (uint32_t i = 0; i < 1000; ++i) sent.push_back(make_frame(k_mac_a, k_mac_b, i, 60 + (i * 37) % 1455));
  const auto q = *o.p.rxq(o.rq);
  consumer c;
  std::thread t([&] { c.drain(q, sent.size(), 30s); });
  paced_send(peer, sent, c.count, 32, c.stop);
  t.join();
  ASSERT_EQ(c.frames.size(), sent.size());
  for (size_t i = 0; i < sent.size(); ++i) ASSERT_EQ(c.frames[i], sent[i]) << "received frame " << i << " differs";
  const auto st = o.p.stats();
  EXPECT_EQ(st.rx_frames, sent.size());
  EXPECT_EQ(st.rx_errors, 0u);
  EXPECT_EQ(st.rx_missed, 0u);
  close_port(o);
}

}  // namespace
