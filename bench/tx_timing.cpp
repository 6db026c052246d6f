// SPDX-License-Identifier: Apache-2.0
// tx_timing: how close to its requested time a frame leaves, per backend, for
// a timed send (device::tx_prepare_at, all frames queued ahead with their
// times) next to a plain send (each frame sent when its time comes, by a CPU
// thread that waits for it). Frame k is asked for at start + lead + k *
// interval (CLOCK_REALTIME). Where it is seen leaving:
//   pcap       the timestamp the backend wrote into the capture file;
//   pair       the time the peer port received it (the pair stamps a frame
//              with the time it was handed over);
//   af_packet  the kernel's receive timestamp (SO_TIMESTAMPNS) on the other
//              end of a veth pair this program creates (root; removed after).
//   af_packet_fq  the same with txtime=1 and an fq qdisc on the sending end:
//              the kernel's qdisc holds the timed frames (tx_time kernel).
// The error is seen - requested, in microseconds: p50, p99, max and the number
// of frames seen early (negative error), which must be 0 for a timed send.
// The producer is a CPU thread (a host-produced TX queue) in both modes, so
// the figures are the engine's and the backend's, whichever executor fills
// the queue.
//
//   tx_timing --backends pcap,pair,af_packet,af_packet_fq --frames 2000 --interval-us 200 --json out.json
//
// Prints the command, the machine and the inputs, and writes JSON.
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/net_tstamp.h>
#include <net/if.h>
#include <pcap/pcap.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <gnio/device/rx.hpp>
#include <gnio/device/tx.hpp>
#include <gnio/gnio.hpp>

#include "machine.hpp"
#include "result_schema.hpp"

namespace {

constexpr uint16_t k_ethertype = 0x88b5;  // local experimental
constexpr uint32_t k_frame = 60;

struct inputs {
  uint32_t frames = 2000;
  uint64_t interval_ns = 200'000;
  uint64_t lead_ns = 20'000'000;
};

// Frame k: broadcast, ethertype 0x88b5, k in bytes 14..17.
void build(uint8_t* f, uint32_t k) {
  std::memset(f, 0, k_frame);
  std::memset(f, 0xff, 6);
  f[6] = 0x02;
  f[12] = k_ethertype >> 8;
  f[13] = k_ethertype & 0xff;
  f[14] = static_cast<uint8_t>(k >> 24);
  f[15] = static_cast<uint8_t>(k >> 16);
  f[16] = static_cast<uint8_t>(k >> 8);
  f[17] = static_cast<uint8_t>(k);
}

uint32_t index_of(const uint8_t* f) {
  return (uint32_t{f[14]} << 24) | (uint32_t{f[15]} << 16) | (uint32_t{f[16]} << 8) | f[17];
}

// Sends the frames through a host-produced TX queue of p: timed, all queued
// at once with their times; plain, each when its time has come.
bool produce(gnio::port& p, uint32_t txq, const std::vector<uint64_t>& want, bool timed) {
  auto tq = p.txq_host(txq);
  if (!tq) {
    fmt::print(stderr, "tx_timing: {}\n", tq.err().what());
    return false;
  }
  const gnio::device::txq& q = *tq;
  for (uint32_t k = 0; k < want.size(); ++k) {
    if (!timed)
      while (gnio::tx_clock_ns() < want[k]) {}
    uint64_t idx = 0;
    if (gnio::device::tx_reserve(q, 1, 5'000'000'000ull, &idx) != gnio::status::success) {
      fmt::print(stderr, "tx_timing: no TX descriptor for frame {}\n", k);
      return false;
    }
    uint8_t* f = q.buf_addr(idx);
    build(f, k);
    if (timed) gnio::device::tx_prepare_at(q, idx, f, k_frame, want[k]);
    else gnio::device::tx_prepare(q, idx, f, k_frame);
    gnio::device::tx_commit(q, 1);
    gnio::device::tx_doorbell(q);
  }
  const uint64_t last = want.empty() ? 0 : want.back();
  const uint64_t left = last > gnio::tx_clock_ns() ? last - gnio::tx_clock_ns() : 0;
  return gnio::device::tx_wait(q, left + 10'000'000'000ull) == gnio::status::success;
}

// A raw socket on ifname that keeps the kernel's receive timestamps.
int open_capture(const std::string& ifname) {
  const int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(k_ethertype));
  if (fd < 0) return -1;
  sockaddr_ll a{};
  a.sll_family = AF_PACKET;
  a.sll_protocol = htons(k_ethertype);
  a.sll_ifindex = static_cast<int>(if_nametoindex(ifname.c_str()));
  const int on = 1;
  if (a.sll_ifindex == 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Reads n frames from a capture socket: seen[k] = receive timestamp.
void read_capture(int fd, std::vector<uint64_t>& seen, uint32_t n, std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  uint32_t got = 0;
  while (got < n && std::chrono::steady_clock::now() < end) {
    pollfd pf{fd, POLLIN, 0};
    if (poll(&pf, 1, 100) <= 0) continue;
    uint8_t buf[256];
    char ctrl[256];
    iovec iov{buf, sizeof buf};
    msghdr m{};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = ctrl;
    m.msg_controllen = sizeof ctrl;
    const ssize_t r = recvmsg(fd, &m, 0);
    if (r < 18) continue;
    uint64_t ts = 0;
    for (cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
        timespec t{};
        std::memcpy(&t, CMSG_DATA(c), sizeof t);
        ts = static_cast<uint64_t>(t.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(t.tv_nsec);
      }
    const uint32_t k = index_of(buf);
    if (k < seen.size() && seen[k] == 0) {
      seen[k] = ts;
      ++got;
    }
  }
}

int sh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()); }

struct outcome {
  bool ran = false;
  std::string why;             // when not ran
  std::vector<double> err_us;  // seen - requested, frames seen
  uint32_t lost = 0;
  std::string tx_time;
};

outcome run_one(gnio::gpu& g, const std::string& backend, bool timed, const inputs& in) {
  outcome o;
  std::string dev, pcap_out, veth_a = "gtxt0", veth_b = "gtxt1";
  std::optional<gnio::port> peer;
  int cap_fd = -1;
  static int seq = 0;
  const bool veth = backend == "af_packet" || backend == "af_packet_fq";
  if (backend == "pcap") {
    pcap_out = fmt::format("/tmp/gnio_tx_timing_{}_{}.pcap", getpid(), seq++);
    dev = "pcap:tx=" + pcap_out;
  } else if (backend == "pair") {
    dev = fmt::format("pair:name=tx_timing{}", seq++);
  } else if (veth) {
    sh("ip link del " + veth_a);
    if (sh("ip link add " + veth_a + " type veth peer name " + veth_b) != 0 ||
        sh("ip link set " + veth_a + " up") != 0 || sh("ip link set " + veth_b + " up") != 0) {
      o.why = "cannot create a veth pair (needs root and iproute2)";
      return o;
    }
    if (backend == "af_packet_fq" && sh("tc qdisc replace dev " + veth_a + " root fq") != 0) {
      o.why = "cannot put an fq qdisc on the veth (needs tc and sch_fq)";
      sh("ip link del " + veth_a);
      return o;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    dev = "af_packet:if=" + veth_a + (backend == "af_packet_fq" ? ",txtime=1" : "");
    cap_fd = open_capture(veth_b);
    if (cap_fd < 0) {
      o.why = fmt::format("cannot capture on {}: {}", veth_b, std::strerror(errno));
      sh("ip link del " + veth_a);
      return o;
    }
  } else {
    o.why = "unknown backend (pcap, pair, af_packet, af_packet_fq)";
    return o;
  }
  auto pr = gnio::port::open(g, dev);
  if (!pr) {
    o.why = pr.err().what();
    if (cap_fd >= 0) close(cap_fd);
    if (veth) sh("ip link del " + veth_a);
    return o;
  }
  gnio::port p = std::move(pr).value();
  o.tx_time = gnio::to_string(p.caps().tx_time);
  gnio::txq_config tc;
  tc.num_descs = 1u << 13;
  tc.host_producer = true;
  auto t = p.create_txq(tc);
  std::optional<uint32_t> prx;
  if (backend == "pair") {
    peer = std::move(gnio::port::open(g, dev)).value();
    gnio::rxq_config rc;
    rc.num_descs = 1u << 13;
    rc.host_consumer = true;
    prx = *peer->create_rxq(rc);
    (void)peer->start();
  }
  if (!t || p.start()) {
    o.why = "cannot create or start the TX queue";
    return o;
  }
  std::vector<uint64_t> want(in.frames), seen(in.frames, 0);
  const uint64_t start = gnio::tx_clock_ns() + in.lead_ns;
  for (uint32_t k = 0; k < in.frames; ++k) want[k] = start + k * in.interval_ns;
  std::thread cap;
  std::atomic<bool> pair_done{false};
  if (cap_fd >= 0)
    cap = std::thread([&] {
      read_capture(cap_fd, seen, in.frames,
                   std::chrono::milliseconds(in.lead_ns / 1'000'000) +
                       std::chrono::milliseconds(in.frames * in.interval_ns / 1'000'000 + 5000));
    });
  if (peer)
    cap = std::thread([&] {
      auto rq = *peer->rxq_host(*prx);
      uint32_t got = 0;
      const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (got < in.frames && std::chrono::steady_clock::now() < end) {
        uint64_t first = 0;
        uint32_t num = 0;
        if (gnio::device::recv<gnio::device::scope::thread>(rq, 256, 1'000'000, &first, &num) != gnio::status::success)
          continue;
        for (uint32_t i = 0; i < num; ++i) {
          const uint32_t k = index_of(gnio::device::pkt_addr(rq, first + i));
          if (k < seen.size() && seen[k] == 0) {
            seen[k] = rq.cqe(first + i).ts_ns;
            ++got;
          }
        }
      }
    });
  const bool ok = produce(p, *t, want, timed);
  if (cap.joinable()) cap.join();
  (void)p.stop();
  (void)p.destroy_txq(*t);
  (void)p.close();
  if (peer) {
    (void)peer->stop();
    (void)peer->destroy_rxq(*prx);
    (void)peer->close();
  }
  if (cap_fd >= 0) close(cap_fd);
  if (veth) sh("ip link del " + veth_a);
  if (!pcap_out.empty()) {
    char err[PCAP_ERRBUF_SIZE];
    if (pcap_t* pc = pcap_open_offline_with_tstamp_precision(pcap_out.c_str(), PCAP_TSTAMP_PRECISION_NANO, err)) {
      pcap_pkthdr* h = nullptr;
      const u_char* d = nullptr;
      while (pcap_next_ex(pc, &h, &d) == 1) {
        const uint32_t k = index_of(d);
        if (k < seen.size())
          seen[k] = static_cast<uint64_t>(h->ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(h->ts.tv_usec);
      }
      pcap_close(pc);
    }
    std::remove(pcap_out.c_str());
  }
  if (!ok) {
    o.why = "the producer could not send every frame";
    return o;
  }
  o.ran = true;
  for (uint32_t k = 0; k < in.frames; ++k) {
    if (seen[k] == 0) {
      ++o.lost;
      continue;
    }
    o.err_us.push_back((static_cast<double>(seen[k]) - static_cast<double>(want[k])) / 1e3);
  }
  return o;
}

double pct(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tx_timing: how close to its requested time a frame leaves, per backend, timed next to plain sends"};
  std::string backends = "pcap,pair,af_packet,af_packet_fq", json_path;
  inputs in;
  uint64_t interval_us = 200, lead_ms = 20;
  app.add_option("--backends", backends,
                 "comma-separated: pcap, pair, af_packet, af_packet_fq (the af_packet ones make a veth pair; root; "
                 "af_packet_fq puts fq on it and opens the port with txtime=1)")
      ->capture_default_str();
  app.add_option("--frames", in.frames, "frames per run (at most 8192)")
      ->check(CLI::Range(1u, 8192u))
      ->capture_default_str();
  app.add_option("--interval-us", interval_us, "time between two frames' requested times")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1'000'000}))
      ->capture_default_str();
  app.add_option("--lead-ms", lead_ms, "how far ahead the first frame is asked for")
      ->check(CLI::Range(uint64_t{1}, uint64_t{10'000}))
      ->capture_default_str();
  app.add_option("--json", json_path, "write the results here");
  CLI11_PARSE(app, argc, argv);
  in.interval_ns = interval_us * 1000;
  in.lead_ns = lead_ms * 1'000'000;
  std::string cmdline;
  for (int i = 0; i < argc; ++i) cmdline += (i ? " " : "") + std::string(argv[i]);
  utsname un{};
  uname(&un);
  const unsigned ncpu = std::thread::hardware_concurrency();
  fmt::print("tx_timing: {}\ntx_timing: machine {} ({}, {} CPUs, {})\n", cmdline, un.nodename, bench::cpu_model(), ncpu,
             un.release);
  fmt::print("tx_timing: {} frames, {} us apart, first {} ms ahead; host executor, CPU producer\n", in.frames,
             interval_us, lead_ms);
  auto g = gnio::gpu::open("host");
  if (!g) {
    fmt::print(stderr, "tx_timing: {}\n", g.err().what());
    return 1;
  }
  nlohmann::json rows = nlohmann::json::array();
  fmt::print("{:<10} {:<6} {:<9} {:>7} {:>10} {:>10} {:>10} {:>6} {:>5}\n", "backend", "mode", "tx_time", "frames",
             "p50 us", "p99 us", "max us", "early", "lost");
  bool failed = false;
  size_t pos = 0;
  while (pos <= backends.size()) {
    const size_t comma = backends.find(',', pos);
    const std::string b = backends.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? backends.size() + 1 : comma + 1;
    if (b.empty()) continue;
    for (bool timed : {false, true}) {
      const outcome o = run_one(*g, b, timed, in);
      const char* mode = timed ? "timed" : "plain";
      if (!o.ran) {
        fmt::print("{:<10} {:<6} skipped: {}\n", b, mode, o.why);
        rows.push_back({{"backend", b}, {"mode", mode}, {"skipped", o.why}});
        continue;
      }
      const auto early =
          static_cast<uint32_t>(std::count_if(o.err_us.begin(), o.err_us.end(), [](double e) { return e < 0; }));
      const double mx = o.err_us.empty() ? 0 : *std::max_element(o.err_us.begin(), o.err_us.end());
      fmt::print("{:<10} {:<6} {:<9} {:>7} {:>10.1f} {:>10.1f} {:>10.1f} {:>6} {:>5}\n", b, mode, o.tx_time,
                 o.err_us.size(), pct(o.err_us, 0.5), pct(o.err_us, 0.99), mx, early, o.lost);
      if (timed && early) failed = true;
      rows.push_back({{"backend", b},
                      {"mode", mode},
                      {"tx_time", o.tx_time},
                      {"frames_seen", o.err_us.size()},
                      {"lost", o.lost},
                      {"early", early},
                      {"error_us_p50", pct(o.err_us, 0.5)},
                      {"error_us_p99", pct(o.err_us, 0.99)},
                      {"error_us_max", mx},
                      {"error_us_min", o.err_us.empty() ? 0 : *std::min_element(o.err_us.begin(), o.err_us.end())}});
    }
  }
  if (!json_path.empty()) {
    nlohmann::json j{
        {"benchmark", "tx_timing"},
        {"command", cmdline},
        {"machine", {{"host", un.nodename}, {"cpu", bench::cpu_model()}, {"cpus", ncpu}, {"kernel", un.release}}},
        {"inputs",
         {{"frames", in.frames},
          {"interval_us", interval_us},
          {"lead_ms", lead_ms},
          {"producer", "CPU thread, host-produced TX queue"},
          {"executor", "host"}}},
        {"gnio_version", GNIO_VERSION_STRING},
        {"runs", rows}};
    std::ofstream f(json_path);
    gnio::result_schema::stamp(j, gnio::result_schema::bench_tx_timing);
    f << j.dump(2) << "\n";
    if (!f) {
      fmt::print(stderr, "tx_timing: cannot write {}\n", json_path);
      return 1;
    }
  }
  if (failed) fmt::print(stderr, "tx_timing: a timed frame left before its time\n");
  return failed ? 1 : 0;
}
