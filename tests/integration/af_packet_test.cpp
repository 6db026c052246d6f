// SPDX-License-Identifier: Apache-2.0
// The af_packet backend on a veth pair the test creates: one end is the port
// under test, the other a raw packet socket playing the outside world.
//
// Needs CAP_NET_ADMIN (to create interfaces) and CAP_NET_RAW; skipped without
// them or without `ip`. With CAP_SYS_ADMIN each test process first moves into
// a network namespace of its own, so nothing it creates is visible outside it
// and the kernel removes everything when the process ends, even on a crash;
// without it the pair is created in the current namespace and TearDown
// deletes it.
#include <arpa/inet.h>
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
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <gnio/backend/backend.hpp>
#include <gnio/device/rx.hpp>
#include <gnio/device/tx.hpp>
#include <gnio/gnio.hpp>

#include "support/frames.hpp"

using namespace std::chrono_literals;
using frame = std::vector<uint8_t>;
using gnio::test::host_send;

namespace {

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

bool has_cap(int cap) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("CapEff:", 0) != 0) continue;
    const uint64_t eff = std::stoull(line.substr(7), nullptr, 16);
    return (eff >> cap) & 1u;
  }
  return false;
}

bool have_ip_tool() { return std::system("command -v ip >/dev/null 2>&1") == 0; }

int sh(const std::string& cmd) {
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// Interface counters from /proc/net/dev, which (unlike /sys, fixed at mount
// time) always shows the namespace of the reading process.
struct if_counters {
  uint64_t rx_packets = 0, tx_packets = 0;
};
std::optional<if_counters> read_if_counters(const std::string& ifname) {
  std::ifstream in("/proc/self/net/dev");
  std::string line;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    name.erase(0, name.find_first_not_of(' '));
    if (name != ifname) continue;
    std::istringstream f(line.substr(colon + 1));
    uint64_t v[16] = {};
    for (auto& x : v) f >> x;
    return if_counters{v[1], v[9]};
  }
  return std::nullopt;
}

// A frame the kernel passes through a veth unchanged: Ethernet, optional VLAN
// tags, IPv4/UDP with a valid header checksum, a sequence number in the payload.
frame make_frame(uint32_t seq, uint32_t size, uint32_t flow,
                 std::initializer_list<std::pair<uint16_t, uint16_t>> tags = {}) {
  frame f;
  const uint8_t dst[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
  const uint8_t src[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x02};
  f.insert(f.end(), dst, dst + 6);
  f.insert(f.end(), src, src + 6);
  for (auto [tpid, tci] : tags) {
    f.push_back(static_cast<uint8_t>(tpid >> 8));
    f.push_back(static_cast<uint8_t>(tpid));
    f.push_back(static_cast<uint8_t>(tci >> 8));
    f.push_back(static_cast<uint8_t>(tci));
  }
  f.push_back(0x08);
  f.push_back(0x00);
  const size_t l3 = f.size();
  const uint32_t ip_len = size > l3 ? size - static_cast<uint32_t>(l3) : 28;
  uint8_t ip[20] = {
      0x45, 0,  static_cast<uint8_t>(ip_len >> 8), static_cast<uint8_t>(ip_len), 0,   0,  0x40, 0, 64, 17, 0, 0,
      198,  18, static_cast<uint8_t>(flow >> 8),   static_cast<uint8_t>(flow),   198, 19, 0,    1};
  uint32_t sum = 0;
  for (int i = 0; i < 20; i += 2) sum += static_cast<uint32_t>(ip[i] << 8 | ip[i + 1]);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  ip[10] = static_cast<uint8_t>(~sum >> 8);
  ip[11] = static_cast<uint8_t>(~sum);
  f.insert(f.end(), ip, ip + 20);
  const uint16_t sport = static_cast<uint16_t>(1024 + flow), ulen = static_cast<uint16_t>(ip_len - 20);
  const uint8_t udp[8] = {static_cast<uint8_t>(sport >> 8), static_cast<uint8_t>(sport), 0x30, 0x39,
                          static_cast<uint8_t>(ulen >> 8),  static_cast<uint8_t>(ulen),  0,    0};  // checksum 0: none
  f.insert(f.end(), udp, udp + 8);
  for (int i = 0; i < 4; ++i) f.push_back(static_cast<uint8_t>(seq >> (24 - 8 * i)));
  while (f.size() < std::max<size_t>(size, l3 + 28)) f.push_back(static_cast<uint8_t>(f.size() * 7 + seq));
  return f;
}

uint32_t seq_of(const frame& f) {
  // Sequence number right after the UDP header; the frame may carry VLAN tags.
  size_t off = 12;
  while (off + 2 <= f.size() && (f[off] == 0x81 || f[off] == 0x88) && (f[off + 1] == 0x00 || f[off + 1] == 0xa8))
    off += 4;
  off += 2 + 20 + 8;
  if (off + 4 > f.size()) return ~0u;
  return uint32_t{f[off]} << 24 | uint32_t{f[off + 1]} << 16 | uint32_t{f[off + 2]} << 8 | f[off + 3];
}

// The outside world: a raw packet socket on the peer end of the veth.
struct peer_socket {
  int fd = -1;
  ~peer_socket() {
    if (fd >= 0) close(fd);
  }
  // receive=false opens a send-only socket (protocol 0 receives nothing).
  bool open(const std::string& ifname, bool receive) {
    const uint16_t proto = receive ? htons(ETH_P_ALL) : 0;
    fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, proto);
    if (fd < 0) return false;
    const int one = 1;
    (void)setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one);  // recv() also filters
    // The test reads after the port has sent a whole burst: the default
    // ~200 KB buffer would drop most of it.
    const int big = 64 << 20;
    if (receive && setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big) != 0)
      (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    sockaddr_ll a{};
    a.sll_family = AF_PACKET;
    a.sll_protocol = proto;
    a.sll_ifindex = static_cast<int>(if_nametoindex(ifname.c_str()));
    return a.sll_ifindex != 0 && bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  bool send(const frame& f) const {
    for (int tries = 0; tries < 1000; ++tries) {
      if (::send(fd, f.data(), f.size(), 0) == static_cast<ssize_t>(f.size())) return true;
      if (errno != ENOBUFS && errno != EAGAIN) return false;
      std::this_thread::sleep_for(100us);
    }
    return false;
  }
  // Frames arriving at the peer (not its own sends), up to n or the timeout.
  std::vector<frame> recv(size_t n, std::chrono::milliseconds timeout) const {
    std::vector<frame> out;
    std::vector<uint8_t> buf(65536);
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (out.size() < n) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      sockaddr_ll from{};
      socklen_t fl = sizeof from;
      const ssize_t r = recvfrom(fd, buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&from), &fl);
      if (r <= 0 || from.sll_pkttype == PACKET_OUTGOING) continue;
      out.emplace_back(buf.begin(), buf.begin() + r);
    }
    return out;
  }
};

// Drains a host-executor RX queue: what a kernel would see, in order.
struct collected {
  std::vector<frame> frames;
  std::vector<uint32_t> wire_lens;
  std::vector<uint64_t> ts;
};
void collect(const gnio::device::rxq& q, collected& c) {
  uint64_t first = 0;
  uint32_t num = 0;
  if (gnio::device::recv<gnio::device::scope::thread>(q, 256, 200'000, &first, &num) != gnio::status::success) return;
  for (uint32_t i = 0; i < num; ++i) {
    const uint8_t* p = gnio::device::pkt_addr(q, first + i);
    c.frames.emplace_back(p, p + gnio::device::pkt_len(q, first + i));
    c.wire_lens.push_back(gnio::device::pkt_wire_len(q, first + i));
    c.ts.push_back(gnio::device::pkt_timestamp_ns(q, first + i));
  }
}

uint64_t realtime_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

// Tests that create interfaces or open packet sockets start with this.
#define REQUIRE_NET()                                                                      \
  do {                                                                                     \
    if (!has_cap(12 /* CAP_NET_ADMIN */) || !has_cap(13 /* CAP_NET_RAW */))                \
      GTEST_SKIP() << "needs CAP_NET_ADMIN and CAP_NET_RAW (run as root)";                 \
    if (!have_ip_tool()) GTEST_SKIP() << "needs the ip command (Debian package iproute2)"; \
  } while (0)

class af_packet : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    // Fresh namespace per test process, when allowed: see the file comment.
    static bool tried = false;
    if (!tried && has_cap(21 /* CAP_SYS_ADMIN */)) {
      tried = true;
      if (unshare(CLONE_NEWNET) == 0) {
        own_netns() = true;
        (void)sh("ip link set lo up");
      }
    }
  }
  static bool& own_netns() {
    static bool v = false;
    return v;
  }

  std::string a, b;  // port end, peer end
  bool created = false;
  std::optional<gnio::gpu> g;

  void SetUp() override {
    if (!gnio::backend::find("af_packet")) GTEST_SKIP() << "the af_packet backend is not built";
    const std::string tag = std::to_string(getpid() % 100000);
    a = "gnpa" + tag;
    b = "gnpb" + tag;
    auto r = gnio::gpu::open("host");
    ASSERT_TRUE(r.ok()) << r.err().what();
    g = std::move(r).value();
  }

  void TearDown() override {
    if (created) (void)sh("ip link del " + a + " 2>/dev/null");
  }

  // Sends 4000 frames of 256 flows from the peer into a 4-socket fanout port
  // (device string + extra) and checks each arrives once, flows in order.
  void fanout_run(const std::string& extra);
  // 504 frames (VLAN tags and full MTU among them) from the peer and 300
  // back, byte for byte, with the port's counters against the kernel's.
  void byte_exact_run(const std::string& extra);

  // The veth pair with IPv6 off (no router solicitations or ND: only the
  // test's frames flow) and no addresses; up unless asked otherwise.
  void make_veth(bool up = true) {
    ASSERT_EQ(sh("ip link add " + a + " type veth peer name " + b), 0) << "ip link add failed";
    created = true;
    for (const auto& n : {a, b}) {
      std::ofstream f("/proc/sys/net/ipv6/conf/" + n + "/disable_ipv6");
      if (f) f << "1\n";
    }
    if (up) {
      ASSERT_EQ(sh("ip link set " + a + " up && ip link set " + b + " up"), 0);
      // Carrier comes up asynchronously after both ends are up.
      for (int i = 0; i < 200; ++i) {
        if (sh("ip link show " + a + " | grep -q LOWER_UP") == 0) break;
        std::this_thread::sleep_for(10ms);
      }
    }
  }
};

TEST_F(af_packet, bad_options_are_refused_with_the_reason) {
  auto p = gnio::port::open(*g, "af_packet:");
  EXPECT_EQ(p.code(), gnio::status::bad_config);
  p = gnio::port::open(*g, "af_packet:if=lo,bogus=1");
  EXPECT_EQ(p.code(), gnio::status::bad_config);
  p = gnio::port::open(*g, "af_packet:if=lo,block_size=5000");
  EXPECT_EQ(p.code(), gnio::status::invalid_value);
  p = gnio::port::open(*g, "af_packet:if=lo,queues=65");
  EXPECT_EQ(p.code(), gnio::status::invalid_value);
  for (const char* v : {"1", "4", "v2"}) {
    p = gnio::port::open(*g, std::string("af_packet:if=lo,tpacket=") + v);
    EXPECT_EQ(p.code(), gnio::status::invalid_value) << v;
    EXPECT_NE(p.err().message().find("tpacket"), std::string::npos) << p.err().what();
  }
  p = gnio::port::open(*g, "af_packet:if=lo,engine_poll=never");
  EXPECT_EQ(p.code(), gnio::status::invalid_value);
}

TEST_F(af_packet, missing_interface_is_not_found_and_named) {
  auto p = gnio::port::open(*g, "af_packet:if=gnio-nosuch0");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.code(), gnio::status::not_found) << p.err().what();
  EXPECT_NE(p.err().message().find("gnio-nosuch0"), std::string::npos) << p.err().what();
}

TEST_F(af_packet, interface_down_is_not_connected_with_the_fix) {
  REQUIRE_NET();
  make_veth(false);
  auto p = gnio::port::open(*g, "af_packet:if=" + a);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.code(), gnio::status::not_connected) << p.err().what();
  EXPECT_NE(p.err().message().find("ip link set " + a + " up"), std::string::npos) << p.err().what();
  // The hint the tools print under it points at the link, not at the API's call order.
  const auto& d = gnio::describe(p.code());
  EXPECT_EQ(d.where, gnio::layer::env);
  EXPECT_NE(d.next.find("ip link set"), std::string::npos) << d.next;
}

TEST_F(af_packet, without_cap_net_raw_is_not_permitted) {
  // A child drops CAP_NET_RAW and opens a port: the parent keeps its rights.
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2]{};
    if (syscall(SYS_capget, &hdr, data) != 0) _exit(3);
    data[0].effective &= ~(1u << 13);
    data[0].permitted &= ~(1u << 13);
    if (syscall(SYS_capset, &hdr, data) != 0) _exit(3);
    auto cg = gnio::gpu::open("host");
    if (!cg) _exit(3);
    auto p = gnio::port::open(*cg, "af_packet:if=lo");
    const bool ok = !p.ok() && p.code() == gnio::status::not_permitted &&
                    p.err().message().find("CAP_NET_RAW") != std::string::npos;
    if (!ok) std::fprintf(stderr, "child got: %s\n", p.ok() ? "success" : p.err().what().c_str());
    _exit(ok ? 0 : 1);
  }
  int st = 0;
  ASSERT_EQ(waitpid(pid, &st, 0), pid);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_NE(WEXITSTATUS(st), 3) << "the child could not drop CAP_NET_RAW";
  EXPECT_EQ(WEXITSTATUS(st), 0) << "without CAP_NET_RAW, open must fail with not_permitted naming CAP_NET_RAW";
}

// filter= (what --filter pushes down): frames the expression refuses never
// reach the ring, so received counts only the others; frames whose VLAN tag
// the kernel keeps in metadata pass the socket and are left to the kernels'
// run of the same filter (gnio/device/bpf.hpp), which sees them whole.
TEST_F(af_packet, filter_option_keeps_refused_frames_off_the_ring) {
  REQUIRE_NET();
  make_veth();
  // Flow 6 (make_frame: source port 1024 + flow), untagged or in a VLAN.
  const std::string expr = "udp and src port 1030 or (vlan and udp and src port 1030)";
  auto pr = gnio::port::open(*g, "af_packet:if=" + a + ",filter=" + expr);
  ASSERT_TRUE(pr.ok()) << pr.err().what();
  auto& p = *pr;
  gnio::rxq_config rc;
  rc.num_descs = 1024;
  const uint32_t id = *p.create_rxq(rc);
  peer_socket tx_peer;
  ASSERT_TRUE(tx_peer.open(b, false));
  ASSERT_FALSE(p.start());
  constexpr uint32_t untagged = 200, tagged = 50;
  for (uint32_t i = 0; i < untagged; ++i) ASSERT_TRUE(tx_peer.send(make_frame(i, 128, i % 10)));
  for (uint32_t i = 0; i < tagged; ++i) ASSERT_TRUE(tx_peer.send(make_frame(untagged + i, 128, i % 10, {{0x8100, 5}})));
  const uint32_t want = untagged / 10 + tagged;  // every tagged frame passes the socket
  collected c;
  const auto end = std::chrono::steady_clock::now() + 10s;
  while (c.frames.size() < want && std::chrono::steady_clock::now() < end) collect(*p.rxq(id), c);
  // Anything the socket should have refused would come within this too.
  const auto settle = std::chrono::steady_clock::now() + 300ms;
  while (std::chrono::steady_clock::now() < settle) collect(*p.rxq(id), c);
  uint32_t plain = 0, with_tag = 0, matched = 0;
  auto compiled = gnio::compile_filter(expr);
  ASSERT_TRUE(compiled.ok()) << compiled.err().what();
  const gnio::device::bpf_prog prog{compiled->insns.data(), static_cast<uint32_t>(compiled->insns.size())};
  for (size_t i = 0; i < c.frames.size(); ++i) {
    const frame& f = c.frames[i];
    (f[12] == 0x81 ? with_tag : plain) += 1;
    matched += gnio::device::bpf_match(prog, f.data(), static_cast<uint32_t>(f.size()), c.wire_lens[i]) ? 1 : 0;
  }
  EXPECT_EQ(plain, untagged / 10) << "untagged frames the filter refuses must not reach the ring";
  EXPECT_EQ(with_tag, tagged) << "tagged frames pass the socket, tag restored";
  EXPECT_EQ(matched, untagged / 10 + tagged / 10) << "the kernels' filter decides the tagged ones";
  EXPECT_EQ(p.stats().rx_frames, want);
  ASSERT_FALSE(p.stop());
  EXPECT_FALSE(p.destroy_rxq(id));
  EXPECT_FALSE(p.close());
}

TEST_F(af_packet, a_bad_filter_option_is_refused_with_libpcaps_message) {
  REQUIRE_NET();
  make_veth();
  auto pr = gnio::port::open(*g, "af_packet:if=" + a + ",filter=udp and and");
  ASSERT_FALSE(pr.ok());
  EXPECT_EQ(pr.code(), gnio::status::invalid_value);
  EXPECT_NE(pr.err().message().find("syntax error"), std::string::npos) << pr.err().what();
}

TEST_F(af_packet, caps_follow_the_interface) {
  REQUIRE_NET();
  make_veth();
  auto p = gnio::port::open(*g, "af_packet:if=" + a);
  ASSERT_TRUE(p.ok()) << p.err().what();
  EXPECT_TRUE(p->caps().rx);
  EXPECT_TRUE(p->caps().tx);
  EXPECT_EQ(p->caps().max_rx_queues, 64u);
  EXPECT_EQ(p->caps().max_pkt_bytes, 1500u + 14 + 4);
  EXPECT_TRUE(p->caps().rx_timestamps);
  EXPECT_FALSE(p->caps().finite);
  EXPECT_FALSE(p->close());
}

// Frames from the peer arrive byte-exact and in order (VLAN and QinQ tags
// included), TX from the port arrives at the peer byte-exact, and the port's
// counters agree with the kernel's interface counters.
TEST_F(af_packet, rx_and_tx_are_byte_exact_and_counters_match_the_kernel) {
  REQUIRE_NET();
  make_veth();
  byte_exact_run("");
}

// The low-latency setting: a TPACKET_V2 ring (a status word per frame) and
// an engine that never sleeps; the same frames, VLAN tags and counters.
TEST_F(af_packet, tpacket_v2_with_a_busy_engine_is_byte_exact_too) {
  REQUIRE_NET();
  make_veth();
  byte_exact_run(",tpacket=2,engine_poll=busy");
}

TEST_F(af_packet, fanout_over_tpacket_v2_rings_delivers_every_frame_exactly_once) {
  REQUIRE_NET();
  make_veth();
  fanout_run(",tpacket=2");
}

void af_packet::byte_exact_run(const std::string& extra) {
  auto pr = gnio::port::open(*g, "af_packet:if=" + a + extra);
  ASSERT_TRUE(pr.ok()) << pr.err().what();
  auto& p = *pr;
  gnio::rxq_config rc;
  rc.num_descs = 4096;
  auto rq = p.create_rxq(rc);
  ASSERT_TRUE(rq.ok()) << rq.err().what();
  auto tq = p.create_txq();
  ASSERT_TRUE(tq.ok()) << tq.err().what();
  peer_socket tx_peer, rx_peer;
  ASSERT_TRUE(tx_peer.open(b, false)) << std::strerror(errno);
  ASSERT_TRUE(rx_peer.open(b, true)) << std::strerror(errno);
  const auto before = read_if_counters(a);
  ASSERT_TRUE(before);
  ASSERT_FALSE(p.start());
  const auto q = *p.rxq(*rq);

  std::vector<frame> sent;
  for (uint32_t i = 0; i < 500; ++i) sent.push_back(make_frame(i, 60 + (i * 37) % 1455, i % 8));
  sent.push_back(make_frame(500, 100, 1, {{0x8100, 0x2005}}));              // 802.1Q, PCP 1, VID 5
  sent.push_back(make_frame(501, 1518, 2, {{0x8100, 7}}));                  // tagged, full MTU
  sent.push_back(make_frame(502, 200, 3, {{0x88a8, 100}, {0x8100, 200}}));  // QinQ
  sent.push_back(make_frame(503, 64, 4, {{0x8100, 0}}));                    // priority tag, VID 0
  const uint64_t t0 = realtime_ns();
  for (const auto& f : sent) ASSERT_TRUE(tx_peer.send(f)) << std::strerror(errno);

  collected got;
  const auto end = std::chrono::steady_clock::now() + 10s;
  while (got.frames.size() < sent.size() && std::chrono::steady_clock::now() < end) collect(q, got);
  const uint64_t t1 = realtime_ns();
  ASSERT_EQ(got.frames.size(), sent.size());
  for (size_t i = 0; i < sent.size(); ++i) {
    ASSERT_EQ(got.frames[i], sent[i]) << "frame " << i << " (seq " << seq_of(got.frames[i]) << ") differs";
    EXPECT_EQ(got.wire_lens[i], sent[i].size()) << i;
    EXPECT_GE(got.ts[i], t0 - 1'000'000'000ull) << "timestamps come from the kernel, in UNIX time";
    EXPECT_LE(got.ts[i], t1 + 1'000'000'000ull);
  }

  // TX: the port's frames reach the peer unchanged.
  const auto t = *p.txq(*tq);
  std::vector<frame> out;
  for (uint32_t i = 0; i < 300; ++i) out.push_back(make_frame(10000 + i, 60 + (i * 53) % 1455, i % 5));
  for (const auto& f : out) host_send(t, f);
  const auto back = rx_peer.recv(out.size(), 10s);
  ASSERT_EQ(back.size(), out.size());
  for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(back[i], out[i]) << "transmitted frame " << i << " differs";
  // Nothing the port sent came back in through its own RX queue.
  collect(q, got);
  EXPECT_EQ(got.frames.size(), sent.size()) << "the port received its own transmissions";

  const auto st = p.stats();
  const auto after = read_if_counters(a);
  ASSERT_TRUE(after);
  EXPECT_EQ(st.rx_frames, sent.size());
  EXPECT_EQ(st.rx_frames, after->rx_packets - before->rx_packets) << "port RX vs the kernel's rx_packets of " << a;
  EXPECT_EQ(st.tx_frames, out.size());
  EXPECT_EQ(st.tx_frames, after->tx_packets - before->tx_packets) << "port TX vs the kernel's tx_packets of " << a;
  EXPECT_EQ(st.rx_errors, 0u);
  EXPECT_EQ(st.tx_errors, 0u);
  EXPECT_EQ(st.rx_missed, 0u);

  ASSERT_FALSE(p.stop());
  EXPECT_FALSE(p.destroy_rxq(*rq));
  EXPECT_FALSE(p.destroy_txq(*tq));
  EXPECT_FALSE(p.close());
}

// txtime=1 hands timed frames to the qdisc with SO_TXTIME; only fq holds
// them, so any other root qdisc is refused, named as `tc` names it, with the fix.
TEST_F(af_packet, txtime_without_fq_at_the_root_is_refused_with_the_fix) {
  REQUIRE_NET();
  make_veth();
  auto p = gnio::port::open(*g, "af_packet:if=" + a + ",txtime=1");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.code(), gnio::status::not_supported);
  EXPECT_NE(p.err().message().find("(it has 'noqueue')"), std::string::npos) << p.err().what();
  EXPECT_NE(p.err().message().find("tc qdisc replace dev " + a + " root fq"), std::string::npos) << p.err().what();
  if (sh("tc qdisc replace dev " + a + " root pfifo 2>/dev/null") == 0) {
    auto q = gnio::port::open(*g, "af_packet:if=" + a + ",txtime=1");
    ASSERT_FALSE(q.ok());
    EXPECT_NE(q.err().message().find("(it has 'pfifo')"), std::string::npos) << q.err().what();
  }
  // Without txtime the engine holds timed frames.
  auto h = gnio::port::open(*g, "af_packet:if=" + a);
  ASSERT_TRUE(h.ok()) << h.err().what();
  EXPECT_EQ(h->caps().tx_time, gnio::tx_time_mode::hold);
  EXPECT_FALSE(h->close());
}

// With fq at the root (where the kernel has sch_fq), txtime=1 frames reach
// the peer byte for byte and none before its time (the kernel's receive
// timestamp on the peer against the requested time).
TEST_F(af_packet, txtime_with_fq_sends_no_frame_before_its_time) {
  REQUIRE_NET();
  make_veth();
  if (sh("tc qdisc replace dev " + a + " root fq 2>/dev/null") != 0)
    GTEST_SKIP() << "this kernel has no fq qdisc (sch_fq): tc qdisc replace dev " << a << " root fq failed";
  auto pr = gnio::port::open(*g, "af_packet:if=" + a + ",txtime=1");
  ASSERT_TRUE(pr.ok()) << pr.err().what();
  auto& p = *pr;
  EXPECT_EQ(p.caps().tx_time, gnio::tx_time_mode::kernel);
  auto tq = p.create_txq();
  ASSERT_TRUE(tq.ok()) << tq.err().what();
  peer_socket rx_peer;
  ASSERT_TRUE(rx_peer.open(b, true)) << std::strerror(errno);
  const int one = 1;
  ASSERT_EQ(setsockopt(rx_peer.fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one), 0);
  ASSERT_FALSE(p.start());
  const auto t = *p.txq(*tq);
  std::vector<frame> out;
  std::vector<uint64_t> due;
  const uint64_t t0 = realtime_ns() + 20'000'000;
  for (uint32_t i = 0; i < 50; ++i) {
    out.push_back(make_frame(20000 + i, 60 + i * 17, i % 3));
    due.push_back(t0 + uint64_t{i} * 2'000'000);
  }
  for (size_t i = 0; i < out.size(); ++i) host_send(t, out[i], due[i]);
  // The peer's frames with the kernel's receive time of each.
  std::vector<uint8_t> buf(65536);
  size_t got = 0;
  const auto end = std::chrono::steady_clock::now() + 10s;
  while (got < out.size() && std::chrono::steady_clock::now() < end) {
    pollfd pf{rx_peer.fd, POLLIN, 0};
    if (poll(&pf, 1, 100) <= 0) continue;
    alignas(cmsghdr) char ctrl[256];
    iovec iov{buf.data(), buf.size()};
    msghdr m{};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = ctrl;
    m.msg_controllen = sizeof ctrl;
    const ssize_t r = recvmsg(rx_peer.fd, &m, 0);
    if (r <= 0) continue;
    const frame f(buf.begin(), buf.begin() + r);
    if (f != out[got]) continue;  // not ours (the peer sees nothing else: IPv6 is off)
    uint64_t seen = 0;
    for (cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
        timespec ts{};
        std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
        seen = static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
      }
    ASSERT_NE(seen, 0u) << "no receive timestamp";
    EXPECT_GE(seen, due[got]) << "frame " << got << " arrived " << (due[got] - seen) << " ns before its time";
    ++got;
  }
  EXPECT_EQ(got, out.size()) << "frames reached the peer in order, byte for byte";
  EXPECT_EQ(p.stats().tx_errors, 0u);
  ASSERT_FALSE(p.stop());
  EXPECT_FALSE(p.destroy_txq(*tq));
  EXPECT_FALSE(p.close());
}

TEST_F(af_packet, oversized_tx_frame_is_an_error_not_a_hang) {
  REQUIRE_NET();
  make_veth();
  auto pr = gnio::port::open(*g, "af_packet:if=" + a);
  ASSERT_TRUE(pr.ok()) << pr.err().what();
  auto& p = *pr;
  auto rq = *p.create_rxq();
  gnio::txq_config tc;
  tc.stride = 4096;
  auto tq = *p.create_txq(tc);
  peer_socket rx_peer;
  ASSERT_TRUE(rx_peer.open(b, true));
  ASSERT_FALSE(p.start());
  const auto t = *p.txq(tq);
  host_send(t, make_frame(1, 3000, 1));  // beyond MTU 1500
  host_send(t, make_frame(2, 100, 1));
  const auto back = rx_peer.recv(1, 5s);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(seq_of(back[0]), 2u);
  const auto end = std::chrono::steady_clock::now() + 5s;
  while (p.stats().tx_errors == 0 && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(5ms);
  const auto st = p.stats();
  EXPECT_EQ(st.tx_frames, 1u);
  EXPECT_EQ(st.tx_errors, 1u);
  EXPECT_FALSE(p.engine_error()) << "a refused frame is counted, not fatal";
  ASSERT_FALSE(p.stop());
  EXPECT_FALSE(p.destroy_rxq(rq));
  EXPECT_FALSE(p.destroy_txq(tq));
  EXPECT_FALSE(p.close());
}

TEST_F(af_packet, interface_removed_while_running_ends_the_stream_with_an_error) {
  REQUIRE_NET();
  make_veth();
  auto pr = gnio::port::open(*g, "af_packet:if=" + a);
  ASSERT_TRUE(pr.ok()) << pr.err().what();
  auto& p = *pr;
  auto rq = *p.create_rxq();
  peer_socket tx_peer;
  ASSERT_TRUE(tx_peer.open(b, false));
  ASSERT_FALSE(p.start());
  const auto q = *p.rxq(rq);
  for (uint32_t i = 0; i < 100; ++i) ASSERT_TRUE(tx_peer.send(make_frame(i, 200, 1)));
  collected got;
  auto end = std::chrono::steady_clock::now() + 10s;
  while (got.frames.size() < 100 && std::chrono::steady_clock::now() < end) collect(q, got);
  ASSERT_EQ(got.frames.size(), 100u);

  ASSERT_EQ(sh("ip link del " + a), 0);
  created = false;
  end = std::chrono::steady_clock::now() + 10s;
  while (!p.rx_ended() && std::chrono::steady_clock::now() < end) {
    collect(q, got);
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_TRUE(p.rx_ended()) << "the engine did not notice the interface disappearing";
  const auto e = p.engine_error();
  EXPECT_EQ(e.code(), gnio::status::io_failed) << e.what();
  EXPECT_NE(std::string(e.what()).find("was removed"), std::string::npos) << "the error says why: " << e.what();
  // A consumer sees end of stream rather than waiting forever.
  uint64_t first = 0;
  uint32_t num = 0;
  EXPECT_EQ(gnio::device::recv<gnio::device::scope::thread>(q, 64, 1'000'000, &first, &num), gnio::status::shutdown);
  const auto st = p.stats();
  EXPECT_EQ(st.rx_frames, 100u) << "counters survive the interface";
  EXPECT_EQ(got.frames.size(), 100u);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(p.stop());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  EXPECT_EQ(p.stats().rx_frames, 100u);
  EXPECT_FALSE(p.destroy_rxq(rq));
  EXPECT_FALSE(p.close());
}

// With lanes=2, the lane that notices the removal ends the other lane too:
// every queue sees the end of the stream and the error says why.
TEST_F(af_packet, interface_removed_with_2_lanes_ends_every_queue) {
  REQUIRE_NET();
  make_veth();
  auto pr = gnio::port::open(*g, "af_packet:if=" + a + ",queues=2,lanes=2");
  ASSERT_TRUE(pr.ok()) << pr.err().what();
  auto& p = *pr;
  const uint32_t r0 = *p.create_rxq(), r1 = *p.create_rxq();
  ASSERT_FALSE(p.start());
  ASSERT_EQ(sh("ip link del " + a), 0);
  created = false;
  const auto end = std::chrono::steady_clock::now() + 10s;
  while (!p.rx_ended() && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(5ms);
  ASSERT_TRUE(p.rx_ended()) << "a lane kept running after the interface disappeared";
  EXPECT_NE(std::string(p.engine_error().what()).find("was removed"), std::string::npos) << p.engine_error().what();
  for (uint32_t id : {r0, r1}) {
    uint64_t first = 0;
    uint32_t num = 0;
    EXPECT_EQ(gnio::device::recv<gnio::device::scope::thread>(*p.rxq(id), 64, 1'000'000, &first, &num),
              gnio::status::shutdown)
        << "queue " << id;
  }
  EXPECT_FALSE(p.stop());
  for (uint32_t id : {r0, r1}) EXPECT_FALSE(p.destroy_rxq(id));
  EXPECT_FALSE(p.close());
}

TEST_F(af_packet, interface_down_while_running_waits_for_it_to_come_back) {
  REQUIRE_NET();
  make_veth();
  auto pr = gnio::port::open(*g, "af_packet:if=" + a);
  ASSERT_TRUE(pr.ok()) << pr.err().what();
  auto& p = *pr;
  auto rq = *p.create_rxq();
  peer_socket tx_peer;
  ASSERT_TRUE(tx_peer.open(b, false));
  ASSERT_FALSE(p.start());
  const auto q = *p.rxq(rq);
  ASSERT_EQ(sh("ip link set " + a + " down"), 0);
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(p.rx_ended()) << "a link going down is not the end of the stream";
  EXPECT_FALSE(p.engine_error());
  ASSERT_EQ(sh("ip link set " + a + " up"), 0);
  collected got;
  const auto end = std::chrono::steady_clock::now() + 10s;
  uint32_t seq = 0;
  // Carrier returns asynchronously; keep sending until frames flow again.
  while (got.frames.empty() && std::chrono::steady_clock::now() < end) {
    (void)tx_peer.send(make_frame(seq++, 100, 1));
    collect(q, got);
  }
  EXPECT_FALSE(got.frames.empty()) << "nothing arrived after the interface came back up";
  EXPECT_FALSE(p.engine_error());
  ASSERT_FALSE(p.stop());
  EXPECT_FALSE(p.destroy_rxq(rq));
  EXPECT_FALSE(p.close());
}

TEST_F(af_packet, fanout_over_4_queues_delivers_every_frame_exactly_once) {
  REQUIRE_NET();
  make_veth();
  fanout_run("");
}

// lanes=2: two engine threads, each reading two of the four fanout sockets
// and feeding its own two RX queues. Still every frame once, flows in order.
TEST_F(af_packet, fanout_with_2_engine_lanes_delivers_every_frame_exactly_once) {
  REQUIRE_NET();
  make_veth();
  fanout_run(",lanes=2");
  auto bad = gnio::port::open(*g, "af_packet:if=" + a + ",queues=2,lanes=3");
  ASSERT_TRUE(bad.ok()) << bad.err().what();
  gnio::rxq_config rc;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(bad->create_rxq(rc).ok());
  const auto e = bad->start();
  EXPECT_EQ(e.code(), gnio::status::invalid_value) << e.what();
  EXPECT_NE(std::string(e.what()).find("queues=3 or more"), std::string::npos) << e.what();
  for (uint32_t i = 0; i < 3; ++i) (void)bad->destroy_rxq(i);
  EXPECT_FALSE(bad->close());
}

void af_packet::fanout_run(const std::string& extra) {
  auto pr = gnio::port::open(*g, "af_packet:if=" + a + ",queues=4,overflow=wait" + extra);
  ASSERT_TRUE(pr.ok()) << pr.err().what();
  auto& p = *pr;
  std::vector<uint32_t> ids;
  gnio::rxq_config rc;
  rc.num_descs = 2048;
  for (int i = 0; i < 4; ++i) ids.push_back(*p.create_rxq(rc));
  peer_socket tx_peer;
  ASSERT_TRUE(tx_peer.open(b, false));
  const auto se = p.start();
  ASSERT_FALSE(se) << se.what();
  constexpr uint32_t n = 4000, flows = 256;
  std::vector<frame> sent;
  for (uint32_t i = 0; i < n; ++i) sent.push_back(make_frame(i, 64 + (i % 7) * 100, i % flows));
  std::atomic<bool> done{false};
  std::thread feeder([&] {
    for (const auto& f : sent)
      if (!tx_peer.send(f)) break;
    done = true;
  });
  std::vector<collected> per(4);
  const auto end = std::chrono::steady_clock::now() + 20s;
  size_t total = 0;
  while (total < n && std::chrono::steady_clock::now() < end) {
    total = 0;
    for (int i = 0; i < 4; ++i) {
      collect(*p.rxq(ids[i]), per[i]);
      total += per[i].frames.size();
    }
  }
  feeder.join();
  std::vector<int> seen(n, 0);
  std::map<uint32_t, std::vector<uint32_t>> by_flow;
  int queues_used = 0;
  for (int i = 0; i < 4; ++i) {
    queues_used += !per[i].frames.empty();
    for (const auto& f : per[i].frames) {
      const uint32_t s = seq_of(f);
      ASSERT_LT(s, n);
      ++seen[s];
      EXPECT_EQ(f, sent[s]) << "seq " << s;
      by_flow[s % flows].push_back(s);
    }
  }
  size_t missing = 0, dup = 0;
  for (uint32_t s = 0; s < n; ++s) missing += seen[s] == 0, dup += seen[s] > 1;
  EXPECT_EQ(missing, 0u);
  EXPECT_EQ(dup, 0u) << "a frame arrived on more than one fanout socket";
  EXPECT_GT(queues_used, 1) << "256 flows should spread over the 4 queues";
  for (auto& [flow, seqs] : by_flow)
    EXPECT_TRUE(std::is_sorted(seqs.begin(), seqs.end())) << "flow " << flow << " reordered";
  const auto st = p.stats();
  EXPECT_EQ(st.rx_frames, n);
  EXPECT_EQ(st.rx_dropped, 0u) << "kernel ring drops";
  EXPECT_EQ(st.rx_errors, 0u);
  EXPECT_EQ(st.rx_missed, 0u);
  ASSERT_FALSE(p.stop());
  for (auto id : ids) EXPECT_FALSE(p.destroy_rxq(id));
  EXPECT_FALSE(p.close());
}

}  // namespace
