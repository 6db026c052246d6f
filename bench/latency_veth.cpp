// SPDX-License-Identifier: Apache-2.0
// bench/latency's veth test: two network namespaces joined by a veth pair,
// gnio pp (a child process, host executor) on one end through af_packet or
// af_xdp, and an ICMP client of our own (a raw socket, its own timestamps) in
// the other namespace. The Linux kernel answering ping on the same veth is
// the reference, measured in the same run. Needs root (CAP_NET_ADMIN,
// CAP_SYS_ADMIN for the namespaces, CAP_NET_RAW).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <gnio/device/pkt.hpp>

#include "latency_common.hpp"

extern char** environ;

namespace {

uint64_t now_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

std::string g_srv, g_cli;
constexpr const char* k_srv_if = "lat-s";
constexpr const char* k_cli_if = "lat-c";
constexpr uint32_t k_payload = 56;

int sh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()); }

// Enters a namespace on the calling thread only (setns affects one thread).
bool enter_ns(const std::string& ns) {
  const std::string path = "/var/run/netns/" + ns;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = setns(fd, CLONE_NEWNET) == 0;
  close(fd);
  return ok;
}

}  // namespace

namespace latency {

// "BACKEND [OPTION...] poll=P": the port's device-string options and gnio
// pp's --poll (busy also sets engine_poll=busy); "kernel" is Linux itself.
std::vector<std::string> veth_settings() {
  return {"kernel", "af_packet poll=adaptive", "af_packet tpacket=2 poll=busy", "af_xdp poll=adaptive",
          "af_xdp busy_poll=50 poll=busy"};
}

namespace {
std::string setting_name(const std::string& s) {
  const size_t p = s.find(" poll=");
  return p == std::string::npos ? s : s.substr(0, p);
}
}  // namespace

bool veth_setup(std::string* ns_srv, std::string* ns_cli, std::string* why) {
  if (geteuid() != 0) {
    *why = "needs root (network namespaces, a veth pair, raw sockets); skipped";
    return false;
  }
  g_srv = fmt::format("lat-srv-{}", getpid());
  g_cli = fmt::format("lat-cli-{}", getpid());
  const std::string s = g_srv, c = g_cli;
  const std::vector<std::string> cmds = {
      "ip netns add " + s,
      "ip netns add " + c,
      fmt::format("ip link add {} netns {} type veth peer name {} netns {}", k_srv_if, s, k_cli_if, c),
      fmt::format("ip netns exec {} sysctl -qw net.ipv6.conf.all.disable_ipv6=1", s),
      fmt::format("ip netns exec {} sysctl -qw net.ipv6.conf.all.disable_ipv6=1", c),
      fmt::format("ip -n {} addr add 10.12.0.2/24 dev {}", s, k_srv_if),
      fmt::format("ip -n {} addr add 10.12.0.1/24 dev {}", c, k_cli_if),
      fmt::format("ip -n {} link set {} up", s, k_srv_if),
      fmt::format("ip -n {} link set {} up", c, k_cli_if),
      fmt::format("ip -n {} link set lo up", s),
      // gnio pp answers for 10.12.0.3 with MAC 02:00:0a:0c:00:03; a static
      // entry keeps ARP out of the timed path.
      fmt::format("ip -n {} neigh replace 10.12.0.3 lladdr 02:00:0a:0c:00:03 dev {} nud permanent", c, k_cli_if),
  };
  for (const auto& cmd : cmds) {
    if (sh(cmd) != 0) {
      *why = "setting up the namespaces failed at: " + cmd;
      sh("ip netns del " + s);
      sh("ip netns del " + c);
      return false;
    }
  }
  *ns_srv = s;
  *ns_cli = c;
  return true;
}

void veth_teardown() {
  sh("ip netns del " + g_srv);  // takes the veth pair with it
  sh("ip netns del " + g_cli);
}

namespace {

using nlohmann::json;

std::vector<uint8_t> icmp_echo(uint16_t id, uint16_t seq, uint64_t stamp) {
  using namespace gnio::device;
  std::vector<uint8_t> m(8 + k_payload, 0);
  m[0] = 8;
  m[4] = static_cast<uint8_t>(id >> 8);
  m[5] = static_cast<uint8_t>(id);
  m[6] = static_cast<uint8_t>(seq >> 8);
  m[7] = static_cast<uint8_t>(seq);
  for (int b = 0; b < 8; ++b) m[8 + b] = static_cast<uint8_t>(stamp >> (8 * b));
  for (uint32_t i = 8; i < k_payload; ++i) m[8 + i] = static_cast<uint8_t>(i * 13 + seq);
  const uint16_t c = csum_fold(csum_partial(m.data(), static_cast<uint32_t>(m.size()), 0));
  m[2] = static_cast<uint8_t>(c >> 8);
  m[3] = static_cast<uint8_t>(c);
  return m;
}

pid_t spawn(const std::vector<std::string>& args, const std::string& log) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = -1;
  const int e = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  return e == 0 ? pid : -1;
}

// Stops a child with SIGINT (gnio pp then prints its totals and writes its
// JSON), SIGKILL after 10 s. Returns its exit status, or -1.
int stop_child(pid_t pid) {
  kill(pid, SIGINT);
  int st = 0;
  for (int i = 0; i < 1000; ++i) {
    if (waitpid(pid, &st, WNOHANG) == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(pid, SIGKILL);
  waitpid(pid, &st, 0);
  return -1;
}

}  // namespace

run_result run_veth(const std::string& setting, bool load, const config& c, const std::string& ns_srv,
                    const std::string& ns_cli, uint32_t target_ip) {
  run_result r;
  r.load = load;
  r.test = "veth";
  r.exec = setting == "kernel" ? "linux" : "host";
  r.setting = setting_name(setting);
  r.poll = setting.find("poll=busy") != std::string::npos ? "busy" : "adaptive";
  pid_t child = -1;
  std::string log = fmt::format("/tmp/latency-veth-{}-{}.log", getpid(), setting.substr(0, setting.find(' ')));
  if (setting != "kernel") {
    // "af_packet tpacket=2 poll=busy" -> af_packet:if=lat-s,tpacket=2,engine_poll=busy and gnio pp --poll busy
    std::string dev = setting.substr(0, setting.find(' ')) + ":if=" + k_srv_if;
    size_t pos = setting.find(' ');
    while (pos != std::string::npos) {
      const size_t next = setting.find(' ', pos + 1);
      const std::string kv = setting.substr(pos + 1, next == std::string::npos ? std::string::npos : next - pos - 1);
      if (kv.rfind("poll=", 0) != 0) dev += "," + kv;
      pos = next;
    }
    if (r.poll == "busy") dev += ",engine_poll=busy";
    std::vector<std::string> args = {
        "ip",    "netns", "exec", ns_srv,      c.gnio_bin, "pp",   "--port",           dev,
        "--gpu", "host",  "--ip", "10.12.0.3", "--poll",   r.poll, "--stats-interval", "0"};
    r.extra["pp_command"] = fmt::format("{}", fmt::join(args, " "));
    child = spawn(args, log);
    if (child < 0) {
      r.error = "could not start " + c.gnio_bin;
      return r;
    }
  }
  std::atomic<bool> load_stop{false};
  std::atomic<uint64_t> load_sent{0};
  std::thread client([&] {
    if (!enter_ns(ns_cli)) {
      r.error = "cannot enter namespace " + ns_cli;
      return;
    }
    const int fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP);
    if (fd < 0) {
      r.error = fmt::format("raw ICMP socket: {}", std::strerror(errno));
      return;
    }
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_addr.s_addr = htonl(target_ip);
    const uint16_t id = static_cast<uint16_t>(0x4c00 | (getpid() & 0xff)), load_id = static_cast<uint16_t>(id ^ 0x0080);
    std::thread loader;
    uint64_t load_t0 = 0;
    // Receives until the reply to (id, seq) with the payload of m arrives or
    // the deadline passes; returns its arrival time or 0.
    auto wait_reply = [&](uint16_t seq, const std::vector<uint8_t>& m, uint64_t deadline) -> uint64_t {
      uint8_t buf[2048];
      for (;;) {
        const uint64_t now = now_ns();
        if (now >= deadline) return 0;
        pollfd p{fd, POLLIN, 0};
        const int left_ms = static_cast<int>((deadline - now) / 1'000'000) + 1;
        if (poll(&p, 1, left_ms) <= 0) continue;
        const ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        const uint64_t t = now_ns();
        if (n < 20) continue;
        const uint32_t ihl = (buf[0] & 0xfu) * 4u;
        if (static_cast<size_t>(n) < ihl + m.size()) continue;
        const uint8_t* ic = buf + ihl;
        const uint16_t rid = static_cast<uint16_t>(ic[4] << 8 | ic[5]);
        if (ic[0] != 0) continue;  // our own requests are seen as well
        if (rid == load_id) {
          ++r.load_seen;
          continue;
        }
        if (rid != id || (ic[6] << 8 | ic[7]) != seq) continue;
        if (std::memcmp(ic + 8, m.data() + 8, m.size() - 8) != 0 ||
            gnio::device::csum_fold(gnio::device::csum_partial(ic, static_cast<uint32_t>(m.size()), 0)) != 0) {
          ++r.bad;
          continue;
        }
        return t;
      }
    };
    // Warm-up: until the answering side is up.
    bool up = false;
    for (int i = 0; i < 300 && !up; ++i) {
      const auto m = icmp_echo(id, static_cast<uint16_t>(60000 + i), now_ns());
      (void)sendto(fd, m.data(), m.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to);
      up = wait_reply(static_cast<uint16_t>(60000 + i), m, now_ns() + 100'000'000) != 0;
    }
    if (!up) {
      r.error = fmt::format("no echo reply from 10.12.0.{} within 30 s (log: {})", target_ip & 0xff, log);
      close(fd);
      return;
    }
    if (c.load_pps > 0 && r.load) {
      load_t0 = now_ns();
      loader = std::thread([&] {
        if (!enter_ns(ns_cli)) return;
        const int lfd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP);
        if (lfd < 0) return;
        uint64_t n = 0;
        const uint64_t start = now_ns();
        while (!load_stop.load(std::memory_order_relaxed)) {
          const uint64_t due =
              start + static_cast<uint64_t>(static_cast<double>(n) * 1e9 / static_cast<double>(c.load_pps));
          if (now_ns() < due) {
            std::this_thread::yield();
            continue;
          }
          const auto m = icmp_echo(load_id, static_cast<uint16_t>(n), 0);
          if (sendto(lfd, m.data(), m.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof to) > 0) ++n;
          load_sent.store(n, std::memory_order_relaxed);
        }
        close(lfd);
      });
    }
    const uint64_t interval = static_cast<uint64_t>(c.interval_us * 1000);
    uint64_t next = now_ns();
    for (uint64_t k = 0; k < c.warmup + c.samples; ++k) {
      while (now_ns() < next) std::this_thread::yield();
      const uint16_t seq = static_cast<uint16_t>(k);
      const uint64_t t0 = now_ns();
      const auto m = icmp_echo(id, seq, t0);
      if (sendto(fd, m.data(), m.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to) < 0) {
        r.error = fmt::format("sendto: {}", std::strerror(errno));
        break;
      }
      if (k >= c.warmup) ++r.sent;
      const uint64_t t1 = wait_reply(seq, m, t0 + static_cast<uint64_t>(c.timeout_s * 1e9));
      next = t0 + interval;
      if (!t1) {
        if (k >= c.warmup) ++r.lost;
        if (r.lost > 100) {
          r.error = "more than 100 echo requests were not answered";
          break;
        }
        continue;
      }
      if (k >= c.warmup) r.ns.push_back(t1 - t0);
    }
    load_stop = true;
    if (loader.joinable()) loader.join();
    r.load_sent = load_sent.load();
    r.load_seconds = load_t0 ? static_cast<double>(now_ns() - load_t0) / 1e9 : 0;
    close(fd);
  });
  client.join();
  if (child > 0) {
    const int st = stop_child(child);
    r.extra["pp_exit_status"] = st;
    if (st != 0 && r.error.empty()) r.error = fmt::format("gnio pp exited with status {} (log: {})", st, log);
    if (r.error.empty()) unlink(log.c_str());
  }
  return r;
}

}  // namespace latency
