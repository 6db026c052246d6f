// SPDX-License-Identifier: Apache-2.0
// One ring conformance suite, run against every backend (pcap, gen, pair, dpdk
// over DPDK's net_pcap driver (by reference into its RX pool), and af_packet
// and af_xdp on a veth pair) on the executor chosen by GNIO_TEST_EXEC (host, or
// cuda on a GPU machine), and the lifecycle rules of DESIGN §6.
//
// The af_packet and af_xdp cases need a veth pair whose ends are named by GNIO_CONF_IF
// (the port under test) and GNIO_CONF_PEER (where a raw socket feeds frames
// and reads what the port sends), both in this process's network namespace,
// with IPv6 off so only the test's frames flow; tests/integration/netns.sh
// conformance sets that up. Without GNIO_CONF_IF they are skipped.
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <pcap/pcap.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <gnio/backend/backend.hpp>
#include <gnio/gnio.hpp>

#include "conformance_kernels.hpp"
#include "support/frames.hpp"
#include "support/process.hpp"

using namespace std::chrono_literals;
using frames = std::vector<std::vector<uint8_t>>;

namespace {

// tests/data, from the environment ctest sets.
const bool k_env = gnio::test::env_check({"GNIO_TEST_DATA_DIR"});

std::string data(const char* name) { return gnio::test::data_path(name); }

bool use_cuda() {
  const char* e = std::getenv("GNIO_TEST_EXEC");
  return e && std::string(e) == "cuda";
}

// The launch mode the suite's record and echo kernels run in:
// GNIO_TEST_LAUNCH=persistent (default), per-burst or graph (CUDA only).
gnio::device::launch_mode test_launch_mode() {
  const std::string m = [] {
    const char* e = std::getenv("GNIO_TEST_LAUNCH");
    return std::string(e ? e : "");
  }();
  if (m == "per-burst" || m == "per_burst") return gnio::device::launch_mode::per_burst;
  if (m == "graph") return gnio::device::launch_mode::graph;
  if (!m.empty() && m != "persistent")
    ADD_FAILURE() << "GNIO_TEST_LAUNCH=" << m << ": use persistent, per-burst or graph";
  return gnio::device::launch_mode::persistent;
}

// Dimensions for the suite's kernels in the launch mode under test: a burst
// of 32 (at most the ring) and the default timeout.
gnio::launch_dims test_dims(uint32_t threads, uint32_t ring) {
  gnio::launch_dims d;
  d.blocks = 1;
  d.threads = threads;
  d.mode = test_launch_mode();
  d.burst = std::min<uint32_t>(32, ring);
  return d;
}

gnio::gpu open_gpu() {
  auto g = gnio::gpu::open(use_cuda() ? "0" : "host");
  EXPECT_TRUE(g.ok()) << g.err().what();
  return std::move(g).value();
}

// A bundled capture's frames; the suite's ports deliver Ethernet.
frames read_ethernet_pcap(const std::string& path) {
  int link = -1;
  frames out = gnio::test::read_pcap(path, &link);
  EXPECT_EQ(link, DLT_EN10MB) << path;
  return out;
}

// The same, for a capture the test repeats: never empty (the test fails,
// through gtest's handling of the exception, rather than divide by zero).
frames read_frames_to_repeat(const std::string& path) {
  frames out = read_ethernet_pcap(path);
  if (out.empty()) throw std::runtime_error("no frames read from " + path);
  return out;
}

// Frames the gen backend produces for these options, read straight from it.
frames gen_frames(const std::string& dev, size_t n) {
  frames out;
  auto a = gnio::backend::parse_devargs(dev);
  EXPECT_TRUE(a.ok());
  const auto* ops = gnio::backend::find("gen");
  void* priv = nullptr;
  auto e = ops->open(*a, &priv);
  EXPECT_FALSE(e) << e.what();
  if (e) return out;
  if (ops->start) EXPECT_FALSE(ops->start(priv));
  struct collect : gnio::backend::rx_lane::collector {
    frames* out;
    bool take(const uint8_t* f, uint32_t len, uint32_t, uint64_t) override {
      out->emplace_back(f, f + len);
      return true;
    }
  } c;
  c.out = &out;
  gnio::backend::rx_lane sink(c);
  while (out.size() < n) {
    uint32_t got = 0;
    auto s = ops->rx_burst(priv, sink, static_cast<uint32_t>(std::min<size_t>(256, n - out.size())), &got);
    if (s == gnio::status::shutdown) break;
  }
  if (ops->stop) (void)ops->stop(priv);
  ops->close(priv);
  out.resize(std::min(out.size(), n));
  return out;
}

// Receives n frames on the host from an RX queue of a host-executor port.
frames host_recv(const gnio::device::rxq& q, size_t n, std::chrono::milliseconds timeout) {
  frames out;
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (out.size() < n && std::chrono::steady_clock::now() < end) {
    uint64_t first = 0;
    uint32_t num = 0;
    if (gnio::device::recv<gnio::device::scope::thread>(q, 64, 1'000'000, &first, &num) != gnio::status::success)
      continue;
    for (uint32_t i = 0; i < num; ++i) {
      const uint8_t* p = gnio::device::pkt_addr(q, first + i);
      out.emplace_back(p, p + gnio::device::pkt_len(q, first + i));
    }
  }
  return out;
}

enum class kind { pcap, gen, pair, af_packet, af_xdp, dpdk };
// Backends on a real link (the veth the harness made), fed from a raw socket on its peer.
bool on_link(kind k) { return k == kind::af_packet || k == kind::af_xdp; }
std::string to_string(kind k) {
  return k == kind::pcap        ? "pcap"
         : k == kind::gen       ? "gen"
         : k == kind::pair      ? "pair"
         : k == kind::af_packet ? "af_packet"
         : k == kind::af_xdp    ? "af_xdp"
                                : "dpdk";
}

std::string env_str(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

// A packet socket on the peer end of the af_packet veth: the wire's far side.
// receive=false: send only (protocol 0 receives nothing).
int open_raw(const std::string& ifname, bool receive) {
  const uint16_t proto = receive ? htons(ETH_P_ALL) : 0;
  const int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, proto);
  EXPECT_GE(fd, 0) << "socket(AF_PACKET): " << std::strerror(errno);
  if (fd < 0) return -1;
  const int one = 1;
  (void)setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one);  // raw_recv filters too
  // Echoed frames pile up while the feeder still sends: the default ~200 KB
  // receive buffer would drop some.
  const int big = 64 << 20;
  if (receive && setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big) != 0)
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
  sockaddr_ll a{};
  a.sll_family = AF_PACKET;
  a.sll_protocol = proto;
  a.sll_ifindex = static_cast<int>(if_nametoindex(ifname.c_str()));
  EXPECT_NE(a.sll_ifindex, 0) << "GNIO_CONF_PEER=" << ifname << ": no such interface";
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << std::strerror(errno);
  return fd;
}

void raw_send(int fd, const std::vector<uint8_t>& f) {
  for (int tries = 0; tries < 10000; ++tries) {
    if (send(fd, f.data(), f.size(), 0) == static_cast<ssize_t>(f.size())) return;
    if (errno != ENOBUFS && errno != EAGAIN) break;
    std::this_thread::sleep_for(100us);
  }
  ADD_FAILURE() << "raw send of " << f.size() << " bytes failed: " << std::strerror(errno);
}

frames raw_recv(int fd, size_t n, std::chrono::milliseconds timeout) {
  frames out;
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

int g_pair_seq = 0;
int g_dpdk_seq = 0;  // vdev names are unique per process

// A capture of these frames, for net_pcap to replay.
std::string write_ethernet_pcap(const frames& fs) {
  const std::string path = gnio::test::temp_path("conf_dpdk") + ".pcap";
  pcap_t* dead = pcap_open_dead(DLT_EN10MB, 65535);
  pcap_dumper_t* d = pcap_dump_open(dead, path.c_str());
  EXPECT_NE(d, nullptr) << pcap_geterr(dead);
  for (size_t i = 0; d && i < fs.size(); ++i) {
    pcap_pkthdr h{};
    h.caplen = h.len = static_cast<uint32_t>(fs[i].size());
    h.ts.tv_sec = static_cast<long>(i);
    pcap_dump(reinterpret_cast<u_char*>(d), &h, fs[i].data());
  }
  if (d) pcap_dump_close(d);
  pcap_close(dead);
  return path;
}

// A traffic source: the device string the port under test opens, the exact
// frames it will receive, and for pair the peer port that sends them.
struct source {
  kind k;
  std::string dev;
  frames expected;
  // pair only
  std::optional<gnio::gpu> host;
  std::optional<gnio::port> peer;
  gnio::device::txq peer_tx{};
  gnio::device::rxq peer_rx{};
  // af_packet only: raw sockets on GNIO_CONF_PEER
  int raw_tx = -1, raw_rx = -1;

  // dpdk only: the capture net_pcap replays (removed with the source)
  std::string capture;

  // Sources that run until stopped; all but dpdk (net_pcap replays its file
  // by itself) are fed by the test.
  bool live() const { return k == kind::pair || k == kind::dpdk || on_link(k); }
  bool fed() const { return live() && k != kind::dpdk; }
  void open_raw_peer() {
    raw_tx = open_raw(env_str("GNIO_CONF_PEER"), false);
    raw_rx = open_raw(env_str("GNIO_CONF_PEER"), true);
  }
  void send_one(const std::vector<uint8_t>& f) {
    if (on_link(k)) raw_send(raw_tx, f);
    else gnio::test::host_send(peer_tx, f);
  }
  frames peer_recv(size_t n, std::chrono::milliseconds timeout) {
    return on_link(k) ? raw_recv(raw_rx, n, timeout) : host_recv(peer_rx, n, timeout);
  }

  void open_peer(const std::string& name) {
    host = std::move(gnio::gpu::open("host")).value();
    auto p = gnio::port::open(*host, "pair:name=" + name);
    ASSERT_TRUE(p.ok()) << p.err().what();
    peer = std::move(p).value();
    gnio::txq_config tc;
    tc.num_descs = 256;
    auto t = peer->create_txq(tc);
    ASSERT_TRUE(t.ok());
    auto r = peer->create_rxq();
    ASSERT_TRUE(r.ok());
    ASSERT_FALSE(peer->start());
    peer_tx = *peer->txq(*t);
    peer_rx = *peer->rxq(*r);
  }
  void feed() {
    if (fed())
      for (const auto& f : expected) send_one(f);
  }
  ~source() {
    if (!capture.empty()) std::filesystem::remove(capture);
    if (peer) (void)peer->stop();
    if (raw_tx >= 0) close(raw_tx);
    if (raw_rx >= 0) close(raw_rx);
  }
};

// n frames (at least; pcap rounds up to whole passes of the file).
std::unique_ptr<source> make_source(kind k, size_t n, const std::string& extra = "") {
  auto s = std::make_unique<source>();
  s->k = k;
  if (k == kind::pcap) {
    if (n == 1) {
      s->dev = "pcap:file=" + data("truncated_dns.pcap");
      s->expected = read_ethernet_pcap(data("truncated_dns.pcap"));
    } else {
      const frames one = read_frames_to_repeat(data("dns_icmp.pcap"));
      const size_t loops = (n + one.size() - 1) / one.size();
      s->dev = "pcap:file=" + data("dns_icmp.pcap") + ",loop=" + std::to_string(loops);
      for (size_t i = 0; i < loops; ++i) s->expected.insert(s->expected.end(), one.begin(), one.end());
    }
  } else if (k == kind::gen) {
    const std::string opts = "size=64-1500,flows=16,seed=7";
    s->dev = "gen:count=" + std::to_string(n) + "," + opts;
    s->expected = gen_frames("gen:" + opts, n);
  } else if (k == kind::dpdk) {
    // n frames of dns_icmp.pcap, over and over, in a capture of their own
    // (net_pcap keeps no original length, so no truncated frame here).
    const frames one = read_frames_to_repeat(data("dns_icmp.pcap"));
    for (size_t i = 0; i < n; ++i) s->expected.push_back(one[i % one.size()]);
    s->capture = write_ethernet_pcap(s->expected);
    s->dev = "dpdk:vdev=net_pcap" + std::to_string(g_dpdk_seq++) + ";rx_pcap=" + s->capture;
  } else if (k == kind::pair) {
    const std::string name = "conf" + std::to_string(g_pair_seq++);
    s->dev = "pair:name=" + name;
    s->expected = gen_frames("gen:size=60-1514,flows=32,seed=11", n);
  } else {
    // Generated frames have valid Ethernet/IP headers and fit a 1500-byte MTU,
    // so the veth passes them unchanged.
    s->dev = (k == kind::af_packet ? "af_packet:if=" : "af_xdp:mode=skb,if=") + env_str("GNIO_CONF_IF");
    s->expected = gen_frames("gen:size=60-1514,flows=32,seed=11", n);
  }
  if (!extra.empty()) s->dev += "," + extra;
  return s;
}

// The port under test with one RX queue and a record kernel.
struct dut {
  gnio::gpu& g;
  gnio::port p;
  uint32_t rxq = 0;
  std::optional<uint32_t> txq;
  gnio::mem_block rec, processed, failed;
  uint64_t cap = 0;
  uint32_t ring = 0;
  std::optional<gnio::kernel_runner> runner;

  dut(gnio::gpu& gpu, const std::string& dev, uint32_t ring_descs, uint64_t capacity, bool with_tx = false,
      gnio::mem_type pkt_mem = gnio::mem_type::automatic, uint32_t inline_bytes = 0)
      : g(gpu), cap(capacity), ring(ring_descs) {
    auto pr = gnio::port::open(g, dev);
    EXPECT_TRUE(pr.ok()) << pr.err().what();
    if (!pr) return;
    p = std::move(pr).value();
    gnio::rxq_config rc;
    rc.num_descs = ring_descs;
    rc.pkt_mem = pkt_mem;
    rc.inline_bytes = inline_bytes;
    auto q = p.create_rxq(rc);
    EXPECT_TRUE(q.ok()) << q.err().what();
    rxq = *q;
    if (with_tx) {
      auto t = p.create_txq();
      EXPECT_TRUE(t.ok()) << t.err().what();
      txq = *t;
    }
    rec = *g.alloc(sizeof(conf::record) * std::max<uint64_t>(cap, 1), gnio::mem_type::gpu);
    processed = *g.alloc(64, gnio::mem_type::gpu);
    failed = *g.alloc(64, gnio::mem_type::gpu);
  }

  gnio::error start() { return p.start(); }

  // In the launch mode under test (GNIO_TEST_LAUNCH), or as dims says.
  gnio::error launch_record(std::optional<gnio::launch_dims> dims = std::nullopt, uint32_t batch = 64,
                            uint64_t timeout_ns = 100'000) {
    auto r = gnio::kernel_runner::create(g, {&p});
    if (!r) return r.err();
    runner = std::move(r).value();
    conf::record_body b{*p.rxq(rxq), static_cast<conf::record*>(rec.exec_ptr),
                        cap,         static_cast<uint64_t*>(processed.exec_ptr),
                        batch,       timeout_ns};
    return conf::launch(*runner, dims ? *dims : test_dims(128, ring), b);
  }

  gnio::error launch_echo() {
    auto r = gnio::kernel_runner::create(g, {&p});
    if (!r) return r.err();
    runner = std::move(r).value();
    conf::echo_body b{*p.rxq(rxq), *p.txq(*txq), static_cast<uint64_t*>(processed.exec_ptr),
                      static_cast<uint64_t*>(failed.exec_ptr), 64};
    return conf::launch(*runner, test_dims(64, ring), b);
  }

  uint64_t read_u64(const gnio::mem_block& b) {
    uint64_t v = 0;
    EXPECT_FALSE(g.copy_to_host(&v, b, 0, sizeof v));
    return v;
  }
  std::vector<conf::record> records(size_t n) {
    std::vector<conf::record> r(std::min<uint64_t>(n, cap));
    if (!r.empty()) EXPECT_FALSE(g.copy_to_host(r.data(), rec, 0, r.size() * sizeof(conf::record)));
    return r;
  }

  // Waits until the kernel consumed everything the port delivered and the
  // port saw `total` frames (delivered + missed).
  bool wait_drained(uint64_t total, std::chrono::milliseconds timeout) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
      auto st = p.stats();
      const auto& q = st.rxq[rxq];
      if (q.delivered + q.missed >= total && q.consumed == q.delivered) return true;
      std::this_thread::sleep_for(2ms);
    }
    return false;
  }

  void finish() {
    if (runner && runner->running()) EXPECT_FALSE(runner->stop(5s));
    EXPECT_FALSE(p.stop());
    release();
  }

  // What finish() does after the kernel and the port have stopped (for a
  // test that stops them itself to read the final stats).
  void release() {
    if (runner) *runner = {};
    runner.reset();
    EXPECT_FALSE(g.free(rec));
    EXPECT_FALSE(g.free(processed));
    EXPECT_FALSE(g.free(failed));
    EXPECT_FALSE(p.destroy_rxq(rxq));
    if (txq) EXPECT_FALSE(p.destroy_txq(*txq));
    EXPECT_FALSE(p.close());
  }
};

void expect_records(const std::vector<conf::record>& got, const frames& want, size_t n) {
  ASSERT_GE(got.size(), n);
  ASSERT_GE(want.size(), n);
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    if (got[i].len != want[i].size() ||
        got[i].fnv != conf::fnv64(want[i].data(), static_cast<uint32_t>(want[i].size()))) {
      if (++bad <= 3) {
        long match = -1;
        for (size_t j = 0; j < want.size(); ++j)
          if (got[i].fnv == conf::fnv64(want[j].data(), static_cast<uint32_t>(want[j].size())))
            match = static_cast<long>(j);
        ADD_FAILURE() << "packet " << i << ": got len " << got[i].len << ", want " << want[i].size()
                      << " (the bytes received are those of source frame " << match << ")";
      }
    }
  }
  EXPECT_EQ(bad, 0u) << "packets differing from the source, out of " << n;
}

// Buffers by reference: every completion names a buffer inside the queue's
// packet memory, and the buffers of one batch (held together until the next
// recv) never overlap. Frames in an area of the queue's own start on 64-byte
// boundaries.
// umem_frame: the buffers are an AF_XDP UMEM's frames of this size (by
// reference), so each frame starts XDP_PACKET_HEADROOM (256) bytes into one.
void expect_buffers(const std::vector<conf::record>& got, const gnio::mem_block& mem, bool own_area,
                    uint32_t umem_frame = 0) {
  std::map<uint32_t, std::vector<std::pair<uint64_t, uint64_t>>> batches;
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const auto& r = got[i];
    if (uint64_t{r.buf} + r.len > mem.bytes || (own_area && r.buf % 64 != 0) ||
        (umem_frame && r.buf % umem_frame != 256)) {
      if (++bad <= 3)
        ADD_FAILURE() << "packet " << i << ": buffer at " << r.buf << " (+" << r.len << ") in " << mem.bytes
                      << " bytes of packet memory";
    }
    batches[r.batch].push_back({r.buf, uint64_t{r.buf} + r.len});
  }
  EXPECT_EQ(bad, 0u) << "buffers outside the packet memory";
  size_t overlaps = 0;
  for (auto& [b, spans] : batches) {
    std::sort(spans.begin(), spans.end());
    for (size_t i = 1; i < spans.size(); ++i)
      if (spans[i].first < spans[i - 1].second && ++overlaps <= 3)
        ADD_FAILURE() << "batch " << b << ": buffers [" << spans[i - 1].first << ", " << spans[i - 1].second
                      << ") and [" << spans[i].first << ", " << spans[i].second << ") overlap";
  }
  EXPECT_EQ(overlaps, 0u);
}

// Whether DPDK's virtual-device drivers load here: a machine may have the
// dpdk backend built in but not DPDK's driver plugins (a copied build). Empty
// when they do, else why not.
std::string dpdk_drivers_missing(gnio::gpu& g) {
  static const std::string why = [&g] {
    auto p = gnio::port::open(g, "dpdk:vdev=net_null_probe0");
    return p.ok() ? std::string() : std::string(p.err().what());
  }();
  return why;
}

class ring_conformance : public testing::TestWithParam<kind> {
 protected:
  gnio::gpu g = open_gpu();
  void SetUp() override {
    if (GetParam() == kind::dpdk && !gnio::backend::find("dpdk")) GTEST_SKIP() << "the dpdk backend is not built";
    if (GetParam() == kind::dpdk) {
      // GNIO_TEST_REQUIRE_DPDK=1 (scripts/test.sh, which installs DPDK) turns a missing driver into a failure.
      const std::string why = dpdk_drivers_missing(g);
      if (!why.empty() && env_str("GNIO_TEST_REQUIRE_DPDK") == "1") FAIL() << "DPDK's drivers do not load: " << why;
      if (!why.empty()) GTEST_SKIP() << "DPDK's drivers do not load here: " << why;
    }
    if (!on_link(GetParam())) return;
    if (!gnio::backend::find(to_string(GetParam())))
      GTEST_SKIP() << "the " << to_string(GetParam()) << " backend is not built";
    if (env_str("GNIO_CONF_IF").empty() || env_str("GNIO_CONF_PEER").empty())
      GTEST_SKIP() << "GNIO_CONF_IF/GNIO_CONF_PEER unset: run tests/integration/netns.sh conformance";
  }
  void TearDown() override { g = {}; }

  // Runs a record kernel over n frames of the source through a ring of `ring` slots.
  // inline_bytes: the queue's inline headers, which the record kernel hashes
  // in place of the buffer's first bytes.
  void run_records(size_t n, uint32_t ring, const std::string& extra = "",
                   gnio::mem_type pkt_mem = gnio::mem_type::automatic, uint32_t inline_bytes = 0) {
    auto src = make_source(GetParam(), n, extra);
    const size_t total = src->expected.size();
    dut d(g, src->dev, ring, total, false, pkt_mem, inline_bytes);
    if (src->k == kind::pair) {
      std::string name = src->dev.substr(src->dev.find("name=") + 5);
      name = name.substr(0, name.find(','));
      src->open_peer(name);
    } else if (on_link(src->k)) {
      src->open_raw_peer();
    }
    ASSERT_FALSE(d.start());
    ASSERT_FALSE(d.launch_record());
    if (src->live()) {
      src->feed();
      ASSERT_TRUE(d.wait_drained(total, 30s)) << to_string(src->k) << ": frames did not all arrive";
      ASSERT_FALSE(d.runner->stop(5s));
    } else {
      auto w = d.runner->wait(60s);
      ASSERT_FALSE(w) << w.what();
    }
    auto st = d.p.stats();
    EXPECT_EQ(d.read_u64(d.processed), total);
    EXPECT_EQ(st.rxq[d.rxq].delivered, total);
    EXPECT_EQ(st.rx_missed, 0u);
    EXPECT_EQ(st.rx_frames, total);
    expect_records(d.records(total), src->expected, total);
    auto mem = d.p.rxq_memory(d.rxq);
    ASSERT_TRUE(mem.ok()) << mem.err().what();
    EXPECT_EQ(mem->exec_ptr, d.p.rxq(d.rxq)->pkts) << "rxq::pkts is where completions' offsets count from";
    // af_xdp receives into its UMEM and dpdk into its mbufs, the port's RX
    // pool, unless the queue asks for GPU memory.
    const bool own_area = pkt_mem == gnio::mem_type::gpu || (src->k != kind::af_xdp && src->k != kind::dpdk);
    // By reference, af_xdp's completions name the UMEM's own frames (frame_size 2048).
    expect_buffers(d.records(total), *mem, own_area, !own_area && src->k == kind::af_xdp ? 2048 : 0);
    d.finish();
  }
};

TEST_P(ring_conformance, single_packet_gives_exactly_one_completion) {
  auto src = make_source(GetParam(), 1);
  ASSERT_EQ(src->expected.size(), 1u);
  run_records(1, 64);
}

TEST_P(ring_conformance, burst_of_1000_loses_nothing) { run_records(1000, 1024, "overflow=wait"); }

TEST_P(ring_conformance, ring_wraps_many_times_in_order) {
  // 8 slots and >= 1000 packets: the ring wraps at least 125 times.
  run_records(1000, 8, "overflow=wait");
}

TEST_P(ring_conformance, gpu_packet_memory_is_filled_by_copies_before_publish) {
  // Packet memory the CPU cannot write (GPU memory; on the host executor too,
  // memory of type gpu has no host address): frames go through pinned
  // staging and asynchronous copies, and are published only once copied.
  // A small ring wraps often, so the copies cross the area's end.
  run_records(1000, 16, "overflow=wait", gnio::mem_type::gpu);
}

TEST_P(ring_conformance, inline_headers_are_each_frames_first_bytes) {
  // Every producer fills the entry's copy of the frame's first bytes: the
  // kernel hashes them from the entry and the rest from the buffer. Frames
  // shorter and longer than the copy; a small ring wraps often.
  for (const uint32_t inl : {64u, 224u}) {
    SCOPED_TRACE("inline_bytes=" + std::to_string(inl));
    run_records(1000, 16, "overflow=wait", gnio::mem_type::automatic, inl);
  }
}

TEST_P(ring_conformance, inline_headers_with_gpu_packet_memory_come_from_the_staged_bytes) {
  run_records(1000, 16, "overflow=wait", gnio::mem_type::gpu, 128);
}

TEST_P(ring_conformance, full_ring_drops_and_counts_never_overwrites) {
  constexpr uint32_t ring = 64;
  auto src = make_source(GetParam(), 1000, "overflow=drop");
  const uint64_t total = src->expected.size();
  dut d(g, src->dev, ring, total);
  if (src->k == kind::pair)
    src->open_peer(src->dev.substr(src->dev.find("name=") + 5, src->dev.find(',') - src->dev.find("name=") - 5));
  if (on_link(src->k)) src->open_raw_peer();
  ASSERT_FALSE(d.start());
  // Fill the ring with no consumer running: everything past 64 must be dropped and counted.
  const auto end = std::chrono::steady_clock::now() + 30s;
  if (src->live()) src->feed();
  for (;;) {
    auto st = d.p.stats();
    if (st.rxq[d.rxq].delivered + st.rxq[d.rxq].missed >= total) break;
    ASSERT_LT(std::chrono::steady_clock::now(), end) << "the source did not finish";
    std::this_thread::sleep_for(2ms);
  }
  ASSERT_FALSE(d.launch_record());
  ASSERT_TRUE(d.wait_drained(total, 30s));
  ASSERT_FALSE(d.runner->stop(5s));
  auto st = d.p.stats();
  const uint64_t processed = d.read_u64(d.processed);
  EXPECT_EQ(processed, ring);
  EXPECT_EQ(st.rx_missed, total - ring);
  EXPECT_EQ(st.rx_frames, total);
  EXPECT_EQ(st.rx_frames, processed + st.rx_missed) << "received must equal processed + missed";
  // The first 64 frames survived intact: nothing was overwritten.
  expect_records(d.records(ring), src->expected, ring);
  d.finish();
}

TEST_P(ring_conformance, tx_round_trip) {
  constexpr size_t n = 200;
  auto src = make_source(GetParam(), n);
  const size_t total = src->expected.size();
  const std::string out = gnio::test::temp_path("conf_tx") + ".pcap";
  if (src->k == kind::pcap) src->dev += ",tx=" + out;
  if (src->k == kind::dpdk) src->dev += ";tx_pcap=" + out;
  dut d(g, src->dev, 256, 0, true);
  if (src->k == kind::pair) src->open_peer(src->dev.substr(src->dev.find("name=") + 5));
  if (on_link(src->k)) src->open_raw_peer();
  ASSERT_FALSE(d.start());
  ASSERT_FALSE(d.launch_echo());
  frames back;
  if (src->k == kind::dpdk) {
    // Everything received was echoed; the port sends what is left when it stops.
    ASSERT_TRUE(d.wait_drained(total, 30s)) << "frames did not all arrive";
    ASSERT_FALSE(d.runner->stop(5s));
  } else if (src->live()) {
    src->feed();
    back = src->peer_recv(total, 30s);
    ASSERT_FALSE(d.runner->stop(5s));
  } else {
    ASSERT_FALSE(d.runner->wait(60s));
  }
  EXPECT_EQ(d.read_u64(d.processed), total);
  EXPECT_EQ(d.read_u64(d.failed), 0u);
  auto st = d.p.stats();
  EXPECT_EQ(st.txq[*d.txq].sent, total);
  EXPECT_EQ(st.txq[*d.txq].bad_addr, 0u);
  EXPECT_EQ(st.tx_frames, total);
  d.finish();
  if (src->k == kind::pcap || src->k == kind::dpdk) back = read_ethernet_pcap(out);
  if (src->k != kind::gen) {
    ASSERT_EQ(back.size(), total);
    for (size_t i = 0; i < total; ++i) ASSERT_EQ(back[i], src->expected[i]) << "frame " << i << " differs";
  }
  std::filesystem::remove(out);
}

TEST_P(ring_conformance, stop_while_traffic_flows) {
  std::unique_ptr<source> src;
  if (GetParam() == kind::gen) {
    src = make_source(kind::gen, 1);
    src->dev = "gen:size=64,flows=256";  // endless
  } else if (GetParam() == kind::pcap) {
    src = make_source(kind::pcap, 2);
    src->dev = "pcap:file=" + data("dns_icmp.pcap") + ",loop=0";  // endless
  } else if (GetParam() == kind::dpdk) {
    src = make_source(kind::dpdk, 2);
    src->dev += ";infinite_rx=1";  // net_pcap replays the capture endlessly
  } else {
    src = make_source(GetParam(), 64);
  }
  dut d(g, src->dev, 256, 0);
  if (src->k == kind::pair) src->open_peer(src->dev.substr(src->dev.find("name=") + 5));
  if (on_link(src->k)) src->open_raw_peer();
  ASSERT_FALSE(d.start());
  ASSERT_FALSE(d.launch_record());
  std::atomic<bool> feeding{true};
  std::thread feeder;
  if (src->fed())
    feeder = std::thread([&] {
      while (feeding.load())
        for (const auto& f : src->expected) src->send_one(f);
    });
  std::this_thread::sleep_for(300ms);
  auto e = d.runner->stop(5s);
  EXPECT_FALSE(e) << e.what();
  feeding = false;
  if (feeder.joinable()) feeder.join();
  ASSERT_FALSE(d.p.stop());
  auto st = d.p.stats();
  const auto& q = st.rxq[d.rxq];
  const uint64_t processed = d.read_u64(d.processed);
  EXPECT_GT(processed, 0u);
  EXPECT_LE(processed, q.delivered);
  EXPECT_EQ(q.offered, q.delivered + q.missed);
  EXPECT_EQ(st.rx_frames, q.offered + st.rx_unsteered);
  const uint64_t pending = q.delivered - processed;
  EXPECT_EQ(st.rx_frames, processed + st.rx_missed + st.rx_unsteered + pending)
      << "received = processed + missed + unsteered + pending must hold exactly";
  EXPECT_EQ(q.consumed, processed) << "the kernel released exactly what it processed";
  d.release();
}

INSTANTIATE_TEST_SUITE_P(backends, ring_conformance,
                         testing::Values(kind::pcap, kind::gen, kind::pair, kind::af_packet, kind::af_xdp, kind::dpdk),
                         [](const auto& info) { return to_string(info.param); });

// --- Timed TX (device::tx_prepare_at) --------------------------------------------

// Runs conf::timed_send_body on TX queue txq of p with these times, until it
// returns (after its completions when wait).
void run_timed_send(gnio::gpu& g, gnio::port& p, uint32_t txq, const std::vector<uint64_t>& times, bool wait = true) {
  auto tb = g.alloc(sizeof(uint64_t) * times.size(), gnio::mem_type::cpu_gpu);
  ASSERT_TRUE(tb.ok()) << tb.err().what();
  std::memcpy(tb->host_ptr, times.data(), sizeof(uint64_t) * times.size());
  auto failed = g.alloc(64, gnio::mem_type::cpu_gpu);
  ASSERT_TRUE(failed.ok());
  auto rr = gnio::kernel_runner::create(g, {&p});
  ASSERT_TRUE(rr.ok()) << rr.err().what();
  std::optional<gnio::kernel_runner> r(std::move(rr).value());
  gnio::launch_dims d;
  d.threads = 32;
  ASSERT_FALSE(conf::launch(
      *r, d,
      conf::timed_send_body{*p.txq(txq), static_cast<const uint64_t*>(tb->exec_ptr),
                            static_cast<uint32_t>(times.size()), static_cast<uint64_t*>(failed->exec_ptr), wait}));
  ASSERT_FALSE(r->wait(std::chrono::seconds(60)));
  EXPECT_EQ(*static_cast<uint64_t*>(failed->host_ptr), 0u) << "sends that got no descriptor or completion";
  r.reset();
  (void)g.free(*tb);
  (void)g.free(*failed);
}

// Frame index (bytes 14..17) of a frame timed_send_body built.
uint32_t timed_index(const uint8_t* f) {
  return (uint32_t{f[14]} << 24) | (uint32_t{f[15]} << 16) | (uint32_t{f[16]} << 8) | f[17];
}

TEST(timed_tx, a_capture_file_gets_each_frame_with_its_time) {
  auto g = open_gpu();
  const std::string out = gnio::test::temp_path("timed_tx") + ".pcap";
  auto pr = gnio::port::open(g, "pcap:tx=" + out);
  ASSERT_TRUE(pr.ok()) << pr.err().what();
  gnio::port p = std::move(pr).value();
  EXPECT_EQ(p.caps().tx_time, gnio::tx_time_mode::timestamp);
  auto t = p.create_txq();
  ASSERT_TRUE(t.ok()) << t.err().what();
  ASSERT_FALSE(p.start());
  // Times an hour ahead and spread over nanoseconds: written as they are,
  // nobody waits. Every fourth frame has none: it gets the time of writing.
  const uint64_t base = gnio::tx_clock_ns() + 3'600'000'000'000ull;
  std::vector<uint64_t> times;
  for (uint64_t i = 0; i < 100; ++i) times.push_back(i % 4 == 3 ? 0 : base + i * 1'000'003);
  const uint64_t t0 = gnio::tx_clock_ns();
  run_timed_send(g, p, *t, times);
  const uint64_t t1 = gnio::tx_clock_ns();
  ASSERT_FALSE(p.stop());
  EXPECT_EQ(p.stats().txq[*t].sent, times.size());
  p = {};
  char err[PCAP_ERRBUF_SIZE];
  pcap_t* pc = pcap_open_offline_with_tstamp_precision(out.c_str(), PCAP_TSTAMP_PRECISION_NANO, err);
  ASSERT_NE(pc, nullptr) << err;
  pcap_pkthdr* h = nullptr;
  const u_char* data = nullptr;
  size_t i = 0;
  while (pcap_next_ex(pc, &h, &data) == 1) {
    ASSERT_LT(i, times.size());
    ASSERT_EQ(h->caplen, 60u);
    EXPECT_EQ(timed_index(data), i) << "frames leave in descriptor order";
    const uint64_t ts = static_cast<uint64_t>(h->ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(h->ts.tv_usec);
    if (times[i] != 0) {
      EXPECT_EQ(ts, times[i]) << "frame " << i;
    } else {
      EXPECT_GE(ts, t0 - t0 % 1000) << "frame " << i;
      EXPECT_LE(ts, t1) << "frame " << i;
    }
    ++i;
  }
  pcap_close(pc);
  EXPECT_EQ(i, times.size());
  std::filesystem::remove(out);
}

TEST(timed_tx, the_engine_holds_a_frame_until_its_time_and_never_sends_early) {
  auto g = open_gpu();
  auto host = gnio::gpu::open("host");
  ASSERT_TRUE(host.ok());
  const std::string name = "timed" + std::to_string(g_pair_seq++);
  auto pa = gnio::port::open(g, "pair:name=" + name);
  ASSERT_TRUE(pa.ok()) << pa.err().what();
  gnio::port a = std::move(pa).value();
  EXPECT_EQ(a.caps().tx_time, gnio::tx_time_mode::hold);
  auto pb = gnio::port::open(*host, "pair:name=" + name);
  ASSERT_TRUE(pb.ok()) << pb.err().what();
  gnio::port b = std::move(pb).value();
  auto ta = a.create_txq();
  ASSERT_TRUE(ta.ok());
  auto rb = b.create_rxq();
  ASSERT_TRUE(rb.ok());
  ASSERT_FALSE(b.start());
  ASSERT_FALSE(a.start());
  // 20 frames 5 ms apart from 50 ms on, a frame without a time between two
  // timed ones (it waits behind the one before it), and one in the past.
  const uint64_t base = gnio::tx_clock_ns() + 50'000'000;
  std::vector<uint64_t> times;
  for (uint64_t i = 0; i < 20; ++i) times.push_back(base + i * 5'000'000);
  times[7] = 0;
  times[0] = base - 1'000'000'000;
  std::thread sender([&] { run_timed_send(g, a, *ta, times); });
  // The pair hands each frame over with the time it was sent (CLOCK_REALTIME).
  const gnio::device::rxq q = *b.rxq(*rb);
  std::vector<std::pair<uint32_t, uint64_t>> got;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (got.size() < times.size() && std::chrono::steady_clock::now() < end) {
    uint64_t first = 0;
    uint32_t num = 0;
    if (gnio::device::recv<gnio::device::scope::thread>(q, 64, 1'000'000, &first, &num) != gnio::status::success)
      continue;
    for (uint32_t i = 0; i < num; ++i)
      got.emplace_back(timed_index(gnio::device::pkt_addr(q, first + i)), q.cqe(first + i).ts_ns);
  }
  sender.join();
  ASSERT_EQ(got.size(), times.size());
  uint64_t late_max = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].first, i) << "frames leave in descriptor order";
    // A frame without a time waits for the timed frame before it.
    const uint64_t want = times[i] != 0 ? times[i] : times[i - 1];
    EXPECT_GE(got[i].second, want) << "frame " << i << " left " << (want - got[i].second) << " ns early";
    if (i > 0 && got[i].second > want)
      late_max = std::max(late_max, got[i].second - want);  // frame 0's time had passed
  }
  std::printf("timed_tx: %zu frames held for their time; latest %.1f us after it\n", got.size(), late_max / 1e3);
  ASSERT_FALSE(a.stop());
  ASSERT_FALSE(b.stop());
}

TEST(timed_tx, frames_still_waiting_when_the_port_stops_are_counted_not_sent) {
  auto g = open_gpu();
  auto host = gnio::gpu::open("host");
  ASSERT_TRUE(host.ok());
  const std::string name = "timed" + std::to_string(g_pair_seq++);
  gnio::port a = std::move(gnio::port::open(g, "pair:name=" + name)).value();
  gnio::port b = std::move(gnio::port::open(*host, "pair:name=" + name)).value();
  auto ta = a.create_txq();
  ASSERT_TRUE(ta.ok());
  ASSERT_TRUE(b.create_rxq().ok());
  ASSERT_FALSE(b.start());
  ASSERT_FALSE(a.start());
  // Two frames now, then three an hour from now (the last without a time of
  // its own, behind them); the kernel does not wait for the completions.
  const uint64_t later = gnio::tx_clock_ns() + 3'600'000'000'000ull;
  const std::vector<uint64_t> times = {0, 0, later, later + 1, 0};
  run_timed_send(g, a, *ta, times, false);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the two untimed frames leave
  EXPECT_EQ(a.stats().txq[*ta].sent, 2u);
  ASSERT_FALSE(a.stop());
  const auto st = a.stats();
  EXPECT_EQ(st.txq[*ta].sent, 2u);
  EXPECT_EQ(st.txq[*ta].errors, 3u) << "held frames are counted when the port stops";
  ASSERT_FALSE(b.stop());
}

// --- Semaphores ----------------------------------------------------------------

TEST(semaphore, items_cycle_ready_free_in_order) {
  auto g = open_gpu();
  auto sem = gnio::semaphore::create(g, 16, 64);
  ASSERT_TRUE(sem.ok()) << sem.err().what();
  auto stuck = *g.alloc(64, gnio::mem_type::gpu);
  auto runner = gnio::kernel_runner::create(g);
  ASSERT_TRUE(runner.ok());
  constexpr uint32_t n = 1000;
  ASSERT_FALSE(
      conf::launch(*runner, {1, 32, 0}, conf::sem_body{sem->view(), n, static_cast<uint64_t*>(stuck.exec_ptr)}));
  const auto h = sem->host_view();
  const auto end = std::chrono::steady_clock::now() + 30s;
  for (uint32_t i = 0; i <= n; ++i) {
    gnio::device::sem_status s;
    while ((s = gnio::device::sem_get_status(h, i)) == gnio::device::sem_status::free)
      ASSERT_LT(std::chrono::steady_clock::now(), end) << "item " << i << " never became ready";
    if (i == n) {
      EXPECT_EQ(s, gnio::device::sem_status::exit);
      break;
    }
    ASSERT_EQ(s, gnio::device::sem_status::ready);
    EXPECT_EQ(*gnio::device::sem_custom_as<uint64_t>(h, i), uint64_t{i} * 7 + 1);
    EXPECT_EQ(h.items[i % h.num_items].first_pkt, i);
    gnio::device::sem_set_status(h, i, gnio::device::sem_status::free);
  }
  ASSERT_FALSE(runner->wait(10s));
  uint64_t st = 1;
  ASSERT_FALSE(g.copy_to_host(&st, stuck, 0, sizeof st));
  EXPECT_EQ(st, 0u);
  *runner = {};
  *sem = {};
  EXPECT_FALSE(g.free(stuck));
}

// sem_set_ready_count: the count arrives in the same word as the status, each
// item's own (a stale count with a fresh status would show as a wrong value).
TEST(semaphore, ready_count_arrives_with_its_status) {
  auto g = open_gpu();
  auto sem = gnio::semaphore::create(g, 8, 0);
  ASSERT_TRUE(sem.ok()) << sem.err().what();
  auto stuck = *g.alloc(64, gnio::mem_type::gpu);
  auto runner = gnio::kernel_runner::create(g);
  ASSERT_TRUE(runner.ok());
  constexpr uint32_t n = 20000;
  conf::sem_body body{sem->view(), n, static_cast<uint64_t*>(stuck.exec_ptr)};
  body.count_only = true;
  ASSERT_FALSE(conf::launch(*runner, {1, 32, 0}, body));
  const auto h = sem->host_view();
  const auto end = std::chrono::steady_clock::now() + 30s;
  for (uint32_t i = 0; i <= n; ++i) {
    gnio::device::sem_status s;
    uint32_t count = 0;
    while ((s = gnio::device::sem_get_status_count(h, i, &count)) == gnio::device::sem_status::free)
      ASSERT_LT(std::chrono::steady_clock::now(), end) << "item " << i << " never became ready";
    if (i == n) {
      EXPECT_EQ(s, gnio::device::sem_status::exit);
      break;
    }
    ASSERT_EQ(s, gnio::device::sem_status::ready);
    ASSERT_EQ(count, i * 7 + 1) << "item " << i;
    gnio::device::sem_set_status(h, i, gnio::device::sem_status::free);
  }
  ASSERT_FALSE(runner->wait(10s));
  *runner = {};
  *sem = {};
  EXPECT_FALSE(g.free(stuck));
}

// --- Poll policies ---------------------------------------------------------------

// busy and latency hand a partial batch to the kernel without waiting for
// the batch timeout (here 120 s, past the 30 s the test waits), for a warp
// and for a block of four.
TEST(poll_policy, busy_and_latency_return_a_partial_batch_without_the_timeout) {
  for (auto pol : {gnio::device::poll_policy::busy, gnio::device::poll_policy::latency}) {
    for (uint32_t threads : {32u, 128u}) {
      SCOPED_TRACE("poll " + std::to_string(static_cast<int>(pol)) + ", threads " + std::to_string(threads));
      auto g = open_gpu();
      auto src = make_source(kind::pair, 5);
      const size_t total = src->expected.size();
      dut d(g, src->dev, 64, total);
      src->open_peer(src->dev.substr(src->dev.find("name=") + 5));
      ASSERT_FALSE(d.start());
      gnio::launch_dims dims;
      dims.blocks = 1;
      dims.threads = threads;
      dims.poll = pol;
      ASSERT_FALSE(d.launch_record(dims, 64, 120'000'000'000ull));
      src->feed();
      ASSERT_TRUE(d.wait_drained(total, 30s)) << "the partial batch waited for the timeout";
      // The kernel sits in recv until a frame comes: one more, after the
      // exit flag, is returned at once too and lets it see the flag.
      std::thread nudge([&] {
        std::this_thread::sleep_for(50ms);
        src->send_one(src->expected[0]);
      });
      const auto stopped = d.runner->stop(30s);
      nudge.join();
      ASSERT_FALSE(stopped) << stopped.what();
      EXPECT_EQ(d.read_u64(d.processed), total + 1);
      expect_records(d.records(total), src->expected, total);
      d.finish();
    }
  }
}

// --- Lifecycle -----------------------------------------------------------------

#define EXPECT_BAD_STATE(expr)                                                   \
  do {                                                                           \
    gnio::error e_ = (expr);                                                     \
    EXPECT_EQ(e_.code(), gnio::status::bad_state) << #expr << ": " << e_.what(); \
  } while (0)

TEST(lifecycle, out_of_order_calls_return_bad_state_and_change_nothing) {
  auto g = open_gpu();
  auto p = std::move(gnio::port::open(g, "gen:size=64,count=5000")).value();
  gnio::kernel_runner early = std::move(gnio::kernel_runner::create(g, {&p})).value();

  // Before start.
  EXPECT_BAD_STATE(p.start());  // no queues yet
  EXPECT_BAD_STATE(p.stop());
  EXPECT_BAD_STATE(early.stop(1s));  // nothing running
  auto q = p.create_rxq();
  ASSERT_TRUE(q.ok());
  auto rec = *g.alloc(sizeof(conf::record) * 8, gnio::mem_type::gpu);
  auto processed = *g.alloc(64, gnio::mem_type::gpu);
  conf::record_body body{*p.rxq(*q), static_cast<conf::record*>(rec.exec_ptr), 8,
                         static_cast<uint64_t*>(processed.exec_ptr), 64};
  EXPECT_BAD_STATE(conf::launch(early, {1, 64, 0}, body));  // port not started
  EXPECT_FALSE(early.running());

  ASSERT_FALSE(p.start());
  // After start.
  EXPECT_BAD_STATE(p.start());
  EXPECT_BAD_STATE(p.create_rxq().err());
  EXPECT_BAD_STATE(p.create_txq().err());
  EXPECT_BAD_STATE(p.register_memory(rec));
  EXPECT_BAD_STATE(p.set_steering({}));
  EXPECT_BAD_STATE(p.destroy_rxq(*q));
  EXPECT_BAD_STATE(p.close());
  EXPECT_EQ(p.num_rxq(), 1u);  // nothing changed

  ASSERT_FALSE(conf::launch(early, {1, 64, 0}, body));
  EXPECT_BAD_STATE(conf::launch(early, {1, 64, 0}, body));  // already running
  ASSERT_FALSE(early.wait(30s));                            // count=5000 ends the stream, the kernel returns
  uint64_t n = 0;
  ASSERT_FALSE(g.copy_to_host(&n, processed, 0, sizeof n));
  EXPECT_EQ(n, 5000u) << "the port kept working after the refused calls";

  ASSERT_FALSE(p.stop());
  EXPECT_BAD_STATE(p.stop());
  EXPECT_BAD_STATE(p.start());  // a stopped port is not restarted
  EXPECT_BAD_STATE(p.close());  // queue still exists
  early = {};
  EXPECT_FALSE(p.destroy_rxq(*q));
  EXPECT_BAD_STATE(p.destroy_rxq(*q));
  EXPECT_FALSE(g.free(rec));
  EXPECT_FALSE(g.free(processed));
  EXPECT_FALSE(p.close());
  EXPECT_BAD_STATE(p.close());
}

TEST(lifecycle, stop_flag_ends_a_persistent_kernel) {
  auto g = open_gpu();
  auto p = std::move(gnio::port::open(g, "gen:size=64")).value();  // endless source
  auto q = *p.create_rxq();
  auto rec = *g.alloc(64, gnio::mem_type::gpu);
  auto processed = *g.alloc(64, gnio::mem_type::gpu);
  ASSERT_FALSE(p.start());
  auto r = std::move(gnio::kernel_runner::create(g, {&p})).value();
  conf::record_body body{*p.rxq(q), static_cast<conf::record*>(rec.exec_ptr), 0,
                         static_cast<uint64_t*>(processed.exec_ptr), 64};
  ASSERT_FALSE(conf::launch(r, {1, 64, 0}, body));
  std::this_thread::sleep_for(100ms);
  EXPECT_TRUE(r.running());
  EXPECT_BAD_STATE(p.stop());  // kernels still use the port
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(r.stop(5s));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  EXPECT_FALSE(r.running());
  EXPECT_FALSE(p.stop());
  r = {};
  EXPECT_FALSE(g.free(rec));
  EXPECT_FALSE(g.free(processed));
  EXPECT_FALSE(p.destroy_rxq(q));
  EXPECT_FALSE(p.close());
}

TEST(lifecycle, a_lossless_lane_counts_its_wait_for_a_full_queue_apart_from_busy) {
  // 1000 frames into a ring of 64 with no consumer for 300 ms: the lane
  // fills the ring, then can take no burst until the kernel starts. That
  // wait is full_ns, not busy_ns, and everything still arrives.
  auto g = open_gpu();
  constexpr uint64_t n = 1000;
  auto src = make_source(kind::gen, n, "overflow=wait");
  dut d(g, src->dev, 64, n);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_FALSE(d.start());
  for (;;) {  // the ring is full: 64 frames delivered
    if (d.p.stats().rxq[d.rxq].delivered >= 64) break;
    ASSERT_LT(std::chrono::steady_clock::now() - t0, 30s) << "the ring never filled";
    std::this_thread::sleep_for(1ms);
  }
  std::this_thread::sleep_for(300ms);
  ASSERT_FALSE(d.launch_record());
  auto w = d.runner->wait(60s);
  ASSERT_FALSE(w) << w.what();
  const auto since_start = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(d.read_u64(d.processed), n);
  expect_records(d.records(n), src->expected, n);
  const auto st = d.p.stats();
  ASSERT_EQ(st.lanes.size(), 1u);
  EXPECT_EQ(st.lanes[0].frames, n);
  // The lane waited through most of the 300 ms without a consumer (it found
  // the ring full at most microseconds after this test saw it full), and no
  // longer than the whole run.
  EXPECT_GE(st.lanes[0].full_ns, 250'000'000u);
  EXPECT_LE(st.lanes[0].full_ns, static_cast<uint64_t>(std::chrono::nanoseconds(since_start).count()));
  EXPECT_LT(st.lanes[0].busy_ns, st.lanes[0].full_ns);
  EXPECT_DOUBLE_EQ(gnio::engine_full_ns_per_frame(st), static_cast<double>(st.lanes[0].full_ns) / n);
  d.finish();
}

TEST(lifecycle, a_body_past_the_parameter_limit_runs_from_a_copy) {
  static_assert(!gnio::detail::body_by_value<conf::large_body>, "the test needs a body past the limit");
  static_assert(gnio::detail::body_by_value<conf::record_body>);
  auto g = open_gpu();
  auto p = std::move(gnio::port::open(g, "gen:size=64,count=3000")).value();
  auto q = *p.create_rxq();
  auto processed = *g.alloc(64, gnio::mem_type::gpu);
  auto sum = *g.alloc(64, gnio::mem_type::gpu);
  const uint64_t zero[8] = {};
  ASSERT_FALSE(g.copy_to_block(processed, 0, zero, sizeof zero));
  ASSERT_FALSE(g.copy_to_block(sum, 0, zero, sizeof zero));
  ASSERT_FALSE(p.start());
  auto r = std::move(gnio::kernel_runner::create(g, {&p})).value();
  auto body = std::make_unique<conf::large_body>();
  body->inner = conf::record_body{*p.rxq(q), nullptr, 0, static_cast<uint64_t*>(processed.exec_ptr), 64};
  body->table_sum = static_cast<uint64_t*>(sum.exec_ptr);
  uint64_t expect = 0;
  for (uint32_t i = 0; i < std::size(body->table); ++i) expect += body->table[i] = i * 2654435761u;
  ASSERT_FALSE(conf::launch(r, {1, 64, 0}, *body));
  ASSERT_FALSE(r.wait(30s));
  uint64_t n = 0, got = 0;
  ASSERT_FALSE(g.copy_to_host(&n, processed, 0, sizeof n));
  ASSERT_FALSE(g.copy_to_host(&got, sum, 0, sizeof got));
  EXPECT_EQ(n, 3000u);
  EXPECT_EQ(got, expect) << "the kernel saw every word of the " << sizeof(conf::large_body) << "-byte body";
  ASSERT_FALSE(p.stop());
}

TEST(lifecycle, kernel_ignoring_the_flag_times_out_and_keeps_memory) {
  auto g = open_gpu();
  auto p = std::move(gnio::port::open(g, "gen:size=64,count=10")).value();
  auto q = *p.create_rxq();
  ASSERT_FALSE(p.start());
  auto hb = *g.alloc(64, gnio::mem_type::cpu_gpu);
  auto r = std::move(gnio::kernel_runner::create(g, {&p})).value();
  ASSERT_FALSE(conf::launch(r, {1, 32, 0}, conf::stubborn_body{static_cast<uint64_t*>(hb.exec_ptr), 1'500'000'000ull}));
  const auto t0 = std::chrono::steady_clock::now();
  auto e = r.stop(200ms);
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(e.code(), gnio::status::time_out) << e.what();
  EXPECT_GE(took, 200ms);
  EXPECT_LT(took, 1200ms) << "stop must return by its deadline";
  // Fail closed: the port cannot be stopped or the runner destroyed while the kernel runs.
  EXPECT_BAD_STATE(p.stop());
  EXPECT_BAD_STATE(p.close());
  const uint64_t before = __atomic_load_n(static_cast<uint64_t*>(hb.host_ptr), __ATOMIC_RELAXED);
  std::this_thread::sleep_for(100ms);
  const uint64_t after = __atomic_load_n(static_cast<uint64_t*>(hb.host_ptr), __ATOMIC_RELAXED);
  EXPECT_GT(after, before) << "the kernel kept running and writing its (still allocated) memory";
  EXPECT_FALSE(r.wait(10s));
  EXPECT_FALSE(p.stop());
  r = {};
  EXPECT_FALSE(g.free(hb));
  EXPECT_FALSE(p.destroy_rxq(q));
  EXPECT_FALSE(p.close());
}

TEST(lifecycle, bad_queue_sizes_are_refused) {
  auto g = open_gpu();
  auto p = std::move(gnio::port::open(g, "gen:count=1")).value();
  for (uint32_t n : {0u, 1u, 3u, 1000u, 1u << 31}) {
    gnio::rxq_config c;
    c.num_descs = n;
    auto r = p.create_rxq(c);
    EXPECT_FALSE(r.ok()) << n;
    EXPECT_TRUE(r.code() == gnio::status::invalid_value || r.code() == gnio::status::too_big)
        << gnio::to_string(r.code());
  }
  gnio::rxq_config c;
  c.stride = 100;
  EXPECT_EQ(p.create_rxq(c).code(), gnio::status::invalid_value);
  c.stride = 1u << 20;
  c.num_descs = 1u << 20;
  EXPECT_EQ(p.create_rxq(c).code(), gnio::status::too_big);
  for (uint32_t inl : {1u, 48u, 256u}) {
    gnio::rxq_config ci;
    ci.inline_bytes = inl;
    auto r = p.create_rxq(ci);
    EXPECT_EQ(r.code(), gnio::status::invalid_value) << inl;
    if (!r) EXPECT_NE(std::string(r.err().what()).find("inline_bytes"), std::string::npos) << r.err().what();
  }
  EXPECT_EQ(p.num_rxq(), 0u);
  EXPECT_FALSE(p.close());
}

TEST(lifecycle, gpu_memory_types) {
  auto g = open_gpu();
  for (auto t : {gnio::mem_type::gpu, gnio::mem_type::cpu_gpu}) {
    auto b = g.alloc(4096, t);
    ASSERT_TRUE(b.ok()) << b.err().what();
    std::vector<uint8_t> in(4096), out(4096);
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i * 13);
    ASSERT_FALSE(g.copy_to_block(*b, 0, in.data(), in.size()));
    ASSERT_FALSE(g.copy_to_host(out.data(), *b, 0, out.size()));
    EXPECT_EQ(in, out);
    EXPECT_EQ(g.copy_to_host(out.data(), *b, 1, 4096).code(), gnio::status::invalid_value);
    EXPECT_FALSE(g.free(*b));
    EXPECT_EQ(g.free(*b).code(), gnio::status::invalid_value);
  }
  auto gc = g.alloc(4096, gnio::mem_type::gpu_cpu);
  if (use_cuda()) {
    EXPECT_EQ(gc.code(), gnio::status::not_supported);
    EXPECT_NE(gc.err().message().find("GDRCopy"), std::string::npos) << "the reason is given";
  } else {
    EXPECT_TRUE(gc.ok());
    if (gc) EXPECT_FALSE(g.free(*gc));
  }
}

TEST(lifecycle, gpu_memory_packet_buffers_are_staged) {
  // Packet slots in GPU memory: the engine stages frames and copies them in.
  auto g = open_gpu();
  auto src = make_source(kind::gen, 500);
  auto p = std::move(gnio::port::open(g, src->dev)).value();
  gnio::rxq_config rc;
  rc.num_descs = 64;
  rc.pkt_mem = gnio::mem_type::gpu;
  auto q = *p.create_rxq(rc);
  auto rec = *g.alloc(sizeof(conf::record) * 500, gnio::mem_type::gpu);
  auto processed = *g.alloc(64, gnio::mem_type::gpu);
  ASSERT_FALSE(p.start());
  auto r = std::move(gnio::kernel_runner::create(g, {&p})).value();
  ASSERT_FALSE(conf::launch(r, {1, 64, 0},
                            conf::record_body{*p.rxq(q), static_cast<conf::record*>(rec.exec_ptr), 500,
                                              static_cast<uint64_t*>(processed.exec_ptr), 32}));
  ASSERT_FALSE(r.wait(30s));
  std::vector<conf::record> got(500);
  ASSERT_FALSE(g.copy_to_host(got.data(), rec, 0, got.size() * sizeof(conf::record)));
  expect_records(got, src->expected, 500);
  EXPECT_FALSE(p.stop());
  r = {};
  EXPECT_FALSE(g.free(rec));
  EXPECT_FALSE(g.free(processed));
  EXPECT_FALSE(p.destroy_rxq(q));
  EXPECT_FALSE(p.close());
}

// --- Launch modes ----------------------------------------------------------------
// The per-burst modes' runner: what it refuses, and that it ends as the
// persistent kernel does (end of stream, exit flag) without losing a packet.
// The suite above runs in these modes too (GNIO_TEST_LAUNCH).

const char* mode_name(gnio::device::launch_mode m) {
  return m == gnio::device::launch_mode::graph       ? "graph"
         : m == gnio::device::launch_mode::per_burst ? "per_burst"
                                                     : "persistent";
}

gnio::launch_dims burst_dims(gnio::device::launch_mode m, uint32_t burst) {
  gnio::launch_dims d;
  d.blocks = 1;
  d.threads = 128;
  d.mode = m;
  d.burst = burst;
  return d;
}

TEST(launch_modes, bad_dims_are_refused_and_change_nothing) {
  auto g = open_gpu();
  auto src = make_source(kind::gen, 100);
  dut d(g, src->dev, 64, 100);
  ASSERT_FALSE(d.start());
  auto r = std::move(gnio::kernel_runner::create(g, {&d.p})).value();
  conf::record_body body{*d.p.rxq(d.rxq), static_cast<conf::record*>(d.rec.exec_ptr), 100,
                         static_cast<uint64_t*>(d.processed.exec_ptr), 32};
  const auto mode = use_cuda() ? gnio::device::launch_mode::graph : gnio::device::launch_mode::per_burst;
  auto expect_invalid = [&](gnio::launch_dims dims, const char* what) {
    auto e = conf::launch(r, dims, body);
    EXPECT_EQ(e.code(), gnio::status::invalid_value) << what << ": " << e.what();
    EXPECT_FALSE(r.running()) << what;
  };
  auto dims = burst_dims(mode, 0);
  expect_invalid(dims, "burst 0");
  dims = burst_dims(mode, 65);
  expect_invalid(dims, "burst larger than the 64-slot ring");
  dims = burst_dims(mode, 32);
  dims.burst_timeout_ns = 11'000'000'000ull;
  expect_invalid(dims, "burst timeout over 10 s");
  dims = burst_dims(mode, 32);
  dims.blocks = 0;
  expect_invalid(dims, "no blocks");
  dims = burst_dims(mode, 32);
  dims.mode = static_cast<gnio::device::launch_mode>(7);
  expect_invalid(dims, "an unknown mode");
  {
    // A runner without ports has no RX queue to wait for bursts in.
    auto bare = std::move(gnio::kernel_runner::create(g)).value();
    auto e = conf::launch(bare, burst_dims(mode, 32), body);
    EXPECT_EQ(e.code(), gnio::status::invalid_value) << e.what();
    EXPECT_NE(e.message().find("RX queue"), std::string::npos) << e.what();
  }
  // Nothing was consumed: a valid launch afterwards gets every packet.
  ASSERT_FALSE(conf::launch(r, burst_dims(mode, 32), body));
  ASSERT_FALSE(r.wait(30s));
  EXPECT_EQ(d.read_u64(d.processed), 100u);
  expect_records(d.records(100), src->expected, 100);
  r = {};
  d.finish();
}

TEST(launch_modes, graph_on_the_host_executor_is_refused) {
  if (use_cuda()) GTEST_SKIP() << "the CUDA executor runs graphs (launch_modes.* cases in graph mode)";
  auto g = open_gpu();
  auto src = make_source(kind::gen, 10);
  dut d(g, src->dev, 64, 10);
  ASSERT_FALSE(d.start());
  auto e = d.launch_record(burst_dims(gnio::device::launch_mode::graph, 8));
  EXPECT_EQ(e.code(), gnio::status::not_supported) << e.what();
  EXPECT_NE(e.message().find("host executor"), std::string::npos) << "the message says why: " << e.what();
  EXPECT_FALSE(d.runner->running());
  d.finish();
}

class launch_modes_p : public testing::TestWithParam<gnio::device::launch_mode> {
 protected:
  gnio::gpu g = open_gpu();
  void SetUp() override {
    if (GetParam() == gnio::device::launch_mode::graph && !use_cuda())
      GTEST_SKIP() << "graph needs the CUDA executor (launch_modes.graph_on_the_host_executor_is_refused)";
  }
  void TearDown() override { g = {}; }
};

TEST_P(launch_modes_p, end_of_stream_finishes_and_every_launch_takes_at_most_a_burst) {
  constexpr size_t n = 1000;
  constexpr uint32_t burst = 32;
  auto src = make_source(kind::gen, n);
  dut d(g, src->dev, 256, n);
  ASSERT_FALSE(d.start());
  // batch = burst: a launch takes at most one burst.
  ASSERT_FALSE(d.launch_record(burst_dims(GetParam(), burst), burst));
  auto w = d.runner->wait(60s);
  ASSERT_FALSE(w) << w.what();
  EXPECT_FALSE(d.runner->running());
  EXPECT_EQ(d.read_u64(d.processed), n);
  const auto recs = d.records(n);
  expect_records(recs, src->expected, n);
  std::map<uint32_t, uint32_t> per_batch;
  for (const auto& r : recs) ++per_batch[r.batch];
  for (const auto& [first, num] : per_batch) EXPECT_LE(num, burst) << "the batch from ring index " << first;
  const auto ls = d.runner->stats();
  EXPECT_EQ(ls.mode, GetParam());
  EXPECT_EQ(ls.packets, n) << "the runner counts what the launches consumed";
  EXPECT_GE(ls.launches, per_batch.size()) << "one batch per launch";
  EXPECT_GE(ls.launches, (n + burst - 1) / burst);
  EXPECT_GT(ls.busy_ns, 0u);
  auto st = d.p.stats();
  EXPECT_EQ(st.rxq[d.rxq].consumed, n) << "every launch released what it took";
  d.finish();
}

TEST_P(launch_modes_p, a_partial_burst_is_launched_after_the_timeout) {
  // 5 frames on a link that stays open (no end of stream): fewer than a
  // burst, so only the timeout launches them.
  auto src = make_source(kind::pair, 5);
  const size_t total = src->expected.size();
  dut d(g, src->dev, 64, total);
  src->open_peer(src->dev.substr(src->dev.find("name=") + 5));
  ASSERT_FALSE(d.start());
  auto dims = burst_dims(GetParam(), 32);
  dims.burst_timeout_ns = 200'000;
  ASSERT_FALSE(d.launch_record(dims));
  src->feed();
  ASSERT_TRUE(d.wait_drained(total, 30s)) << "the partial burst was never launched";
  EXPECT_TRUE(d.runner->running()) << "the stream has not ended";
  ASSERT_FALSE(d.runner->stop(5s));
  EXPECT_EQ(d.read_u64(d.processed), total);
  expect_records(d.records(total), src->expected, total);
  const auto ls = d.runner->stats();
  EXPECT_GE(ls.launches, 1u);
  EXPECT_LE(ls.launches, total);
  EXPECT_EQ(ls.packets, total);
  d.finish();
}

TEST_P(launch_modes_p, stop_while_bursts_flow_ends_the_launches) {
  auto src = make_source(kind::gen, 1);
  src->dev = "gen:size=64,flows=256";  // endless
  dut d(g, src->dev, 256, 0);
  ASSERT_FALSE(d.start());
  ASSERT_FALSE(d.launch_record(burst_dims(GetParam(), 32)));
  std::this_thread::sleep_for(300ms);
  auto e = d.runner->stop(5s);
  ASSERT_FALSE(e) << e.what();
  EXPECT_FALSE(d.runner->running());
  const auto ls = d.runner->stats();
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(d.runner->stats().launches, ls.launches) << "no launch after stop()";
  ASSERT_FALSE(d.p.stop());
  auto st = d.p.stats();
  const auto& q = st.rxq[d.rxq];
  const uint64_t processed = d.read_u64(d.processed);
  EXPECT_GT(ls.launches, 1u);
  EXPECT_GT(processed, 0u);
  EXPECT_EQ(ls.packets, processed);
  EXPECT_EQ(q.consumed, processed) << "the launches released exactly what they processed";
  EXPECT_EQ(st.rx_frames, processed + st.rx_missed + st.rx_unsteered + (q.delivered - processed));
  d.release();
}

TEST_P(launch_modes_p, exit_flag_ends_an_idle_runner_that_never_launched) {
  auto src = make_source(kind::pair, 1);
  dut d(g, src->dev, 64, 1);
  src->open_peer(src->dev.substr(src->dev.find("name=") + 5));
  ASSERT_FALSE(d.start());
  ASSERT_FALSE(d.launch_record(burst_dims(GetParam(), 32)));
  std::this_thread::sleep_for(50ms);
  EXPECT_TRUE(d.runner->running()) << "no traffic and no end of stream: the runner waits";
  EXPECT_EQ(d.runner->wait(20ms).code(), gnio::status::time_out);
  ASSERT_FALSE(d.runner->stop(5s));
  EXPECT_FALSE(d.runner->running());
  EXPECT_EQ(d.runner->stats().launches, 0u);
  EXPECT_EQ(d.read_u64(d.processed), 0u);
  // The runner can launch again, and the next launch gets what comes.
  ASSERT_FALSE(conf::launch(*d.runner, burst_dims(GetParam(), 32),
                            conf::record_body{*d.p.rxq(d.rxq), static_cast<conf::record*>(d.rec.exec_ptr), 1,
                                              static_cast<uint64_t*>(d.processed.exec_ptr), 32}));
  src->send_one(src->expected[0]);
  ASSERT_TRUE(d.wait_drained(1, 30s));
  ASSERT_FALSE(d.runner->stop(5s));  // before reading what the kernel wrote
  EXPECT_EQ(d.read_u64(d.processed), 1u);
  EXPECT_EQ(d.runner->stats().launches, 1u);
  d.finish();
}

TEST_P(launch_modes_p, a_queue_the_body_leaves_alone_does_not_keep_the_runner_launching) {
  // Two RX queues (RSS spreads the flows), a body that receives from the
  // first only: the runner stops relaunching for the second queue's
  // completions, and at the end of the stream it finishes rather than spin.
  auto g2 = std::move(gnio::port::open(g, "gen:count=2000,flows=64,size=64")).value();
  auto q0 = *g2.create_rxq();
  auto q1 = *g2.create_rxq();
  auto rec = *g.alloc(sizeof(conf::record) * 2000, gnio::mem_type::gpu);
  auto processed = *g.alloc(64, gnio::mem_type::gpu);
  ASSERT_FALSE(g2.start());
  auto r = std::move(gnio::kernel_runner::create(g, {&g2})).value();
  ASSERT_FALSE(conf::launch(r, burst_dims(GetParam(), 32),
                            conf::record_body{*g2.rxq(q0), static_cast<conf::record*>(rec.exec_ptr), 2000,
                                              static_cast<uint64_t*>(processed.exec_ptr), 32}));
  auto w = r.wait(60s);
  EXPECT_FALSE(w) << w.what();
  auto st = g2.stats();
  uint64_t n = 0;
  ASSERT_FALSE(g.copy_to_host(&n, processed, 0, sizeof n));
  EXPECT_GT(st.rxq[q1].delivered, 0u) << "RSS gave the second queue some flows";
  EXPECT_EQ(n, st.rxq[q0].delivered) << "the first queue was drained";
  EXPECT_EQ(st.rxq[q0].consumed, st.rxq[q0].delivered);
  EXPECT_EQ(st.rxq[q1].consumed, 0u);
  EXPECT_EQ(r.stats().packets, n);
  EXPECT_FALSE(g2.stop());
  r = {};
  EXPECT_FALSE(g.free(rec));
  EXPECT_FALSE(g.free(processed));
  EXPECT_FALSE(g2.destroy_rxq(q0));
  EXPECT_FALSE(g2.destroy_rxq(q1));
  EXPECT_FALSE(g2.close());
}

TEST_P(launch_modes_p, a_failed_launch_is_reported_by_wait) {
  if (!use_cuda()) GTEST_SKIP() << "a CUDA launch error (the host executor has none to make)";
  auto src = make_source(kind::gen, 100);
  dut d(g, src->dev, 64, 100);
  ASSERT_FALSE(d.start());
  // More dynamic shared memory than any GPU has: every launch fails.
  auto dims = burst_dims(GetParam(), 32);
  dims.shared_bytes = 64u << 20;
  auto e = d.launch_record(dims);
  if (GetParam() == gnio::device::launch_mode::graph && e) {
    // The graph is captured and instantiated in launch(): the error comes from there.
    EXPECT_EQ(e.code(), gnio::status::driver) << e.what();
  } else {
    ASSERT_FALSE(e) << e.what();
    e = d.runner->wait(30s);
    EXPECT_EQ(e.code(), gnio::status::driver) << e.what();
    EXPECT_NE(e.message().find("cuda"), std::string::npos) << "the CUDA error is named: " << e.what();
  }
  EXPECT_FALSE(d.runner->running());
  EXPECT_EQ(d.read_u64(d.processed), 0u);
  d.finish();
}

INSTANTIATE_TEST_SUITE_P(modes, launch_modes_p,
                         testing::Values(gnio::device::launch_mode::per_burst, gnio::device::launch_mode::graph),
                         [](const auto& info) { return std::string(mode_name(info.param)); });

}  // namespace
