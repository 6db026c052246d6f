// SPDX-License-Identifier: Apache-2.0
// latency: per-packet turnaround through gnio, one packet at a time (every
// --interval-us), optionally under background load through the same port
// and queues, on the CUDA and the host executor in the same run. Reports
// p50/p90/p99/p99.9/max and the sample count for each test, writes JSON.
//
//   flag  the floor: the CPU writes a word in mapped host memory, a kernel
//         echoes it into another word, the CPU sees it (no ring protocol).
//   ring  a pair port: the CPU transmits a frame on side A, side B's engine
//         publishes its completion, the kernel's recv(ctx, ...) returns it,
//         the kernel acknowledges it through a gnio semaphore item, the CPU
//         sees the item. Load: frames of another EtherType on a second TX
//         queue of side A, into the same RX queue.
//   echo  a pair port: a client on side A sends ICMP echo requests stamped
//         with their send time to gnio pp (run in-process through its app
//         API, gnio::pp::run) on side B and timestamps each reply; every
//         reply's bytes are checked. Load: echo requests of another ICMP id
//         from a second TX queue, answered by pp as well.
//   veth  (root, host executor) gnio pp as a child in a network namespace on
//         af_packet and af_xdp, and the Linux kernel answering ping on the
//         same veth: an ICMP client of our own (raw socket) in a second
//         namespace. The namespaces and the veth pair are created and
//         removed by this program.
//
// --poll busy|latency|adaptive sets both the kernel's poll policy
// (launch_dims::poll / gnio pp --poll) and the ports' engine_poll.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/ip.h>
#include <netinet/ip_icmp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <gnio/atomic_file.hpp>
#include <gnio/backend/ring.hpp>
#include <gnio/device/pkt.hpp>
#include <gnio/device/tx.hpp>
#include <gnio/gnio.hpp>

#include "cli.hpp"
#include "latency.hpp"
#include "latency_common.hpp"
#include "pp_app.hpp"
#include "machine.hpp"
#include "result_schema.hpp"

using nlohmann::json;

extern char** environ;

namespace {

uint64_t mono_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

// CPU seconds this process has used, every thread together.
double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// How many CPUs the process kept busy between two points (the client's own
// thread, the engines and, on the host executor, the kernel's threads).
struct cpu_meter {
  double c0 = cpu_seconds();
  uint64_t t0 = mono_ns();
  double cores() const {
    const uint64_t t1 = mono_ns();
    return t1 > t0 ? (cpu_seconds() - c0) / (static_cast<double>(t1 - t0) / 1e9) : 0.0;
  }
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    const size_t c = std::min(s.find(',', pos), s.size());
    if (c > pos) out.push_back(s.substr(pos, c - pos));
    pos = c + 1;
  }
  return out;
}

using latency::config;
using latency::run_result;

double pct(const std::vector<uint64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  const double rank = p / 100.0 * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(sorted.size() - 1, lo + 1);
  const double f = rank - static_cast<double>(lo);
  return (static_cast<double>(sorted[lo]) * (1 - f) + static_cast<double>(sorted[hi]) * f) / 1000.0;
}

json summarize(run_result& r) {
  std::vector<uint64_t> s = r.ns;
  std::sort(s.begin(), s.end());
  json j;
  j["test"] = r.test;
  j["exec"] = r.exec;
  j["poll"] = r.poll;
  if (!r.setting.empty()) j["setting"] = r.setting;
  j["load"] = r.load;
  j["samples"] = s.size();
  j["sent"] = r.sent;
  j["lost"] = r.lost;
  j["bad_replies"] = r.bad;
  if (!s.empty()) {
    j["min_us"] = s.front() / 1000.0;
    j["p50_us"] = pct(s, 50);
    j["p90_us"] = pct(s, 90);
    j["p99_us"] = pct(s, 99);
    j["p99_9_us"] = pct(s, 99.9);
    j["max_us"] = s.back() / 1000.0;
    double sum = 0;
    for (auto v : s) sum += static_cast<double>(v);
    j["mean_us"] = sum / static_cast<double>(s.size()) / 1000.0;
  }
  if (r.load) {
    j["load_frames_sent"] = r.load_sent;
    j["load_frames_seen"] = r.load_seen;
    j["load_pps"] = r.load_seconds > 0 ? static_cast<double>(r.load_sent) / r.load_seconds : 0.0;
  }
  for (auto& [k, v] : r.extra.items()) j[k] = v;
  if (!r.error.empty()) j["error"] = r.error;
  return j;
}

void print_row(const json& j) {
  const std::string name = fmt::format("{} {}{} poll={}{}", j["test"].get<std::string>(), j["exec"].get<std::string>(),
                                       j.contains("setting") ? " " + j["setting"].get<std::string>() : "",
                                       j["poll"].get<std::string>(), j["load"].get<bool>() ? " +load" : "");
  if (j.contains("p50_us")) {
    fmt::print(
        "latency: {:<44} n={:<6} p50 {:>8.2f}  p90 {:>8.2f}  p99 {:>8.2f}  p99.9 {:>8.2f}  max {:>9.2f} us{}{}{}\n",
        name, j["samples"].get<uint64_t>(), j["p50_us"].get<double>(), j["p90_us"].get<double>(),
        j["p99_us"].get<double>(), j["p99_9_us"].get<double>(), j["max_us"].get<double>(),
        j["lost"].get<uint64_t>() ? fmt::format("  LOST {}", j["lost"].get<uint64_t>()) : "",
        j.contains("load_pps") ? fmt::format("  load {:.0f} pps", j["load_pps"].get<double>()) : "",
        j.contains("cpu_cores") ? fmt::format("  cpu {:.2f}", j["cpu_cores"].get<double>()) : "");
  }
  if (j.contains("error")) fmt::print("latency: {:<44} FAILED: {}\n", name, j["error"].get<std::string>());
}

// Waits until t (monotonic ns), yielding; the client thread stays ready to run.
void wait_until(uint64_t t) {
  while (mono_ns() < t) std::this_thread::yield();
}

// Sends one frame on a host-produced TX queue; false if the ring stayed full.
bool host_send(const gnio::device::txq& t, const uint8_t* f, uint32_t len, uint64_t* sent_ns) {
  using namespace gnio::device;
  uint64_t idx = 0;
  if (tx_reserve(t, 1, 1'000'000'000ull, &idx) != gnio::status::success) return false;
  uint8_t* buf = t.buf_addr(idx);
  std::memcpy(buf, f, len);
  tx_prepare(t, idx, buf, len);
  tx_commit(t, 1);
  if (sent_ns) *sent_ns = mono_ns();
  tx_doorbell(t);
  return true;
}

// Background load: bursts of frames from `make` on txq t at `pps` (0: as fast
// as the ring takes them) until stop.
struct load_gen {
  std::thread th;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> sent{0};
  uint64_t t0 = 0, t1 = 0;

  template <class Make>
  void start(const gnio::device::txq& t, uint64_t pps, uint32_t burst, Make make) {
    t0 = mono_ns();
    th = std::thread([this, t, pps, burst, make] {
      using namespace gnio::device;
      std::vector<uint8_t> f;
      uint64_t n = 0;
      const uint64_t start = mono_ns();
      while (!stop.load(std::memory_order_relaxed)) {
        if (pps) {
          const uint64_t due = start + static_cast<uint64_t>(static_cast<double>(n) * 1e9 / static_cast<double>(pps));
          if (mono_ns() < due) {
            std::this_thread::yield();
            continue;
          }
        }
        uint64_t first = 0;
        if (tx_reserve(t, burst, 10'000'000, &first) != gnio::status::success) continue;
        for (uint32_t i = 0; i < burst; ++i) {
          make(n + i, f);
          uint8_t* buf = t.buf_addr(first + i);
          std::memcpy(buf, f.data(), f.size());
          tx_prepare(t, first + i, buf, static_cast<uint32_t>(f.size()));
        }
        tx_commit(t, burst);
        tx_doorbell(t);
        n += burst;
        sent.store(n, std::memory_order_relaxed);
      }
    });
  }
  void finish() {
    if (!th.joinable()) return;
    stop = true;
    th.join();
    t1 = mono_ns();
  }
  double seconds() const { return t1 > t0 ? static_cast<double>(t1 - t0) / 1e9 : 0; }
  ~load_gen() { finish(); }
};

std::string kernel_gpu(const std::string& exec, const config& c) { return exec == "cuda" ? c.gpu : "host"; }
gnio::device::poll_policy policy_of(const std::string& p) {
  if (p == "latency") return gnio::device::poll_policy::latency;
  return p == "busy" ? gnio::device::poll_policy::busy : gnio::device::poll_policy::adaptive;
}
std::string engine_arg(const std::string& poll) { return poll != "adaptive" ? ",engine_poll=busy" : ""; }

int g_pair_id = 0;

// A run's variant of the kernel side: inline headers, the acknowledgement,
// the chain test's depth.
struct variant {
  uint32_t inline_bytes = 0;
  bool relaxed_ack = false;
  uint32_t depth = 0;  // chain test only
  std::string label() const {
    std::vector<std::string> parts;
    if (depth) {
      static const char* names[] = {"", "owner", "fence", "entry", "frame", "acquire"};
      parts.push_back(fmt::format("depth={}", names[depth]));
    }
    if (inline_bytes) parts.push_back(fmt::format("inline={}", inline_bytes));
    if (relaxed_ack) parts.push_back("ack=relaxed");
    std::string out;
    for (const auto& p : parts) out += (out.empty() ? "" : " ") + p;
    return out;
  }
};

// Waits for semaphore item `item` to be marked ready, until timeout_s after
// t0; *t1 gets the time it was seen, *seq what the kernel reported: the
// custom bytes, or (relaxed) the count of sem_set_ready_count.
bool wait_ack(const gnio::device::sem& hs, uint32_t item, bool relaxed, uint64_t t0, double timeout_s, uint64_t* t1,
              uint64_t* seq) {
  using namespace gnio::device;
  for (uint32_t spins = 1;; ++spins) {
    if (relaxed) {
      uint32_t count = 0;
      // Pairs with the kernel's sem_set_ready_count(): the count is in the same word.
      if (sem_get_status_count(hs, item, &count) == sem_status::ready) {
        *t1 = mono_ns();
        *seq = count;
        return true;
      }
    } else if (sem_get_status(hs, item) == sem_status::ready) {
      *t1 = mono_ns();
      *seq = *sem_custom_as<uint64_t>(hs, item);
      return true;
    }
    if ((spins & 15u) == 0) std::this_thread::yield();  // the kernel's host thread may share this core
    if (mono_ns() - t0 > static_cast<uint64_t>(timeout_s * 1e9)) return false;
  }
}

// Starts the ring test's kernel (latency::ring_body: recv<block> with
// c.threads threads, one semaphore item per timed frame) on rq, counting
// into counts; used by ring (a pair port's queue) and cqe (the direct ring).
gnio::error launch_ring_body(gnio::kernel_runner& runner, const gnio::device::rxq& rq, const gnio::semaphore& sem,
                             const gnio::mem_block& counts, const config& c, const std::string& poll,
                             const variant& v) {
  const latency::ring_body body{
      rq,           sem.view(), static_cast<latency::ring_counts*>(counts.exec_ptr), c.batch, c.batch_timeout_us * 1000,
      v.relaxed_ack};
  gnio::launch_dims d;
  d.blocks = 1;
  d.threads = c.threads;
  d.poll = policy_of(poll);
  return latency::launch_ring(runner, d, body);
}

// ---------------------------------------------------------------------------
// flag: the host <-> kernel round trip through two words in mapped memory.
run_result run_flag(const std::string& exec, const config& c, bool relaxed) {
  run_result r{"flag", exec, "busy", relaxed ? "ack=relaxed" : "", false, {}};
  auto g = gnio::gpu::open(kernel_gpu(exec, c));
  if (!g) return r.error = g.err().what(), r;
  auto words = g->alloc(128, gnio::mem_type::cpu_gpu);
  if (!words) return r.error = words.err().what(), r;
  auto* h = static_cast<uint64_t*>(words->host_ptr);
  auto* x = static_cast<uint64_t*>(words->exec_ptr);
  h[0] = h[8] = 0;
  auto runner = gnio::kernel_runner::create(*g);
  if (!runner) return r.error = runner.err().what(), r;
  latency::flag_body b{x, x + 8, relaxed};
  gnio::launch_dims d;
  d.blocks = 1;
  d.threads = 32;
  d.poll = gnio::device::poll_policy::busy;
  if (auto e = latency::launch_flag(*runner, d, b); e) return r.error = e.what(), r;
  using gnio::device::sys_atomic_ref;
  const uint64_t interval = static_cast<uint64_t>(c.interval_us * 1000);
  uint64_t next = mono_ns();
  for (uint64_t k = 1; k <= c.warmup + c.samples; ++k) {
    wait_until(next);
    const uint64_t t0 = mono_ns();
    // Pairs with the kernel's acquire load of *ping.
    sys_atomic_ref<uint64_t>(h[0]).store(k, cuda::std::memory_order_release);
    ++r.sent;
    bool ok = true;
    // Pairs with the kernel's release store of *pong.
    for (uint32_t spins = 1; sys_atomic_ref<uint64_t>(h[8]).load(cuda::std::memory_order_acquire) != k; ++spins) {
      if ((spins & 15u) == 0) std::this_thread::yield();  // the kernel's host thread may share this core
      if (mono_ns() - t0 > static_cast<uint64_t>(c.timeout_s * 1e9)) {
        ok = false;
        break;
      }
    }
    const uint64_t t1 = mono_ns();
    if (!ok) {
      ++r.lost;
      r.error = fmt::format("the kernel did not echo word {} within {} s", k, c.timeout_s);
      break;
    }
    if (k > c.warmup) r.ns.push_back(t1 - t0);
    next = t0 + interval;
  }
  r.sent -= std::min(r.sent, c.warmup);
  if (auto e = runner->stop(std::chrono::seconds(5)); e && r.error.empty()) r.error = e.what();
  *runner = {};
  (void)g->free(*words);
  return r;
}

// ---------------------------------------------------------------------------
// ring: pair side A (host) transmits; side B's engine publishes; the kernel
// acknowledges through a semaphore item.
std::vector<uint8_t> ring_frame(uint16_t ethertype, uint64_t seq) {
  std::vector<uint8_t> f(64, 0);
  const uint8_t dst[6] = {0x02, 0, 0, 0, 0, 0xb}, src[6] = {0x02, 0, 0, 0, 0, 0xa};
  std::memcpy(f.data(), dst, 6);
  std::memcpy(f.data() + 6, src, 6);
  f[12] = static_cast<uint8_t>(ethertype >> 8);
  f[13] = static_cast<uint8_t>(ethertype);
  for (int b = 0; b < 8; ++b) f[latency::k_seq_off + b] = static_cast<uint8_t>(seq >> (8 * b));
  return f;
}

// v.inline_bytes: the RX queue's inline headers (rxq_config::inline_bytes);
// the kernel reads the frame's type and sequence number from them.
// v.relaxed_ack: the kernel acknowledges with sem_set_ready_count.
run_result run_ring(const std::string& exec, const std::string& poll, bool load, const config& c, const variant& v) {
  const uint32_t inline_bytes = v.inline_bytes;
  run_result r{"ring", exec, poll, v.label(), load, {}};
  auto hg = gnio::gpu::open("host");
  if (!hg) return r.error = hg.err().what(), r;
  auto g = gnio::gpu::open(kernel_gpu(exec, c));
  if (!g) return r.error = g.err().what(), r;
  const std::string name = fmt::format("pair:name=latency-ring-{}{}", ++g_pair_id, engine_arg(poll));
  auto a = gnio::port::open(*hg, name);
  if (!a) return r.error = a.err().what(), r;
  auto b = gnio::port::open(*g, name);
  if (!b) return r.error = b.err().what(), r;
  gnio::txq_config tc;
  tc.num_descs = 1024;
  tc.host_producer = true;
  auto tq = a->create_txq(tc);
  auto lq = a->create_txq(tc);
  gnio::rxq_config rc;
  rc.num_descs = 1024;
  rc.inline_bytes = inline_bytes;
  auto rq = b->create_rxq(rc);
  if (!tq || !lq || !rq) return r.error = "creating the queues failed", r;
  auto sem = gnio::semaphore::create(*g, 64, sizeof(uint64_t));
  if (!sem) return r.error = sem.err().what(), r;
  auto counts = g->alloc(sizeof(latency::ring_counts), gnio::mem_type::gpu);
  if (!counts) return r.error = counts.err().what(), r;
  // gpu::alloc's memory comes zeroed: the counts start at 0.
  if (auto e = a->start(); e) return r.error = e.what(), r;
  if (auto e = b->start(); e) return r.error = e.what(), r;
  auto runner = gnio::kernel_runner::create(*g, {&*b});
  if (!runner) return r.error = runner.err().what(), r;
  if (auto e = launch_ring_body(*runner, *b->rxq(*rq), *sem, *counts, c, poll, v); e) return r.error = e.what(), r;
  const auto t = *a->txq_host(*tq);
  load_gen lg;
  if (load)
    lg.start(*a->txq_host(*lq), c.load_pps, c.load_burst,
             [](uint64_t n, std::vector<uint8_t>& f) { f = ring_frame(latency::k_ethertype_load, n); });
  const gnio::device::sem hs = sem->host_view();
  const uint64_t interval = static_cast<uint64_t>(c.interval_us * 1000);
  uint64_t next = mono_ns();
  uint32_t item = 0;
  const cpu_meter cpu;
  for (uint64_t k = 0; k < c.warmup + c.samples; ++k) {
    wait_until(next);
    const auto f = ring_frame(latency::k_ethertype_timed, k);
    uint64_t t0 = 0;
    if (!host_send(t, f.data(), static_cast<uint32_t>(f.size()), &t0)) {
      r.error = "side A's TX ring stayed full for 1 s";
      break;
    }
    ++r.sent;
    uint64_t t1 = 0, seq = 0;
    const bool ok = wait_ack(hs, item, v.relaxed_ack, t0, c.timeout_s, &t1, &seq);
    next = t0 + interval;
    if (!ok) {
      ++r.lost;  // the frame was dropped (a full ring under load): its item never comes
      if (r.lost > 100) {
        r.error = "more than 100 frames were not acknowledged";
        break;
      }
      continue;
    }
    // Pairs with the kernel's acquire load when it looks at the item again.
    gnio::device::sem_set_status(hs, item, gnio::device::sem_status::free);
    ++item;
    if (seq != (v.relaxed_ack ? uint32_t(k) : k)) {
      ++r.bad;
      continue;
    }
    if (k >= c.warmup) r.ns.push_back(t1 - t0);
  }
  r.sent -= std::min(r.sent, c.warmup);
  r.extra["cpu_cores"] = cpu.cores();
  lg.finish();
  // Let the last load frames arrive before the kernel is stopped.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (auto e = runner->stop(std::chrono::seconds(5)); e && r.error.empty()) r.error = e.what();
  latency::ring_counts got{};
  if (auto e = g->copy_to_host(&got, *counts, 0, sizeof got); e && r.error.empty()) r.error = e.what();
  r.load_sent = lg.sent.load();
  r.load_seen = got.load;
  r.load_seconds = lg.seconds();
  r.extra["kernel_batches"] = got.batches;
  r.extra["kernel_timed"] = got.timed;
  r.extra["kernel_other"] = got.other;
  r.extra["rx_missed"] = b->stats().rx_missed;
  *runner = {};
  (void)a->stop();
  (void)b->stop();
  *sem = {};
  (void)g->free(*counts);
  return r;
}

// ---------------------------------------------------------------------------
// chain and cqe: an RX ring the CPU fills itself through the backends'
// producer half (backend::rx_ring_writer), without a port or an engine.
struct direct_ring {
  static constexpr uint32_t num_descs = 1024, max_frame = 64;
  gnio::gpu* g = nullptr;
  gnio::mem_block cq{}, area{}, words{}, next{};
  gnio::backend::rx_ring_writer w;
  gnio::device::rxq q{};

  gnio::error open(gnio::gpu& gpu, uint32_t inline_bytes) {
    g = &gpu;
    auto a = g->alloc(uint64_t{num_descs} * gnio::device::rx_cqe_stride(inline_bytes), gnio::mem_type::cpu_gpu);
    if (!a) return a.err();
    cq = *a;
    auto b = g->alloc(gnio::backend::rx_ring_writer::area_bytes(num_descs, max_frame), gnio::mem_type::cpu_gpu);
    if (!b) return b.err();
    area = *b;
    auto c = g->alloc(128, gnio::mem_type::cpu_gpu);  // the consumer index, then the end-of-stream flag
    if (!c) return c.err();
    words = *c;
    auto d = g->alloc(sizeof(uint64_t), gnio::mem_type::gpu);
    if (!d) return d.err();
    next = *d;
    auto* hw = static_cast<uint8_t*>(words.host_ptr);
    auto* xw = static_cast<uint8_t*>(words.exec_ptr);
    gnio::backend::rx_ring_writer::layout l;
    l.cq = static_cast<gnio::device::rx_cqe*>(cq.host_ptr);
    l.cons = reinterpret_cast<const uint64_t*>(hw);
    l.eos = reinterpret_cast<uint32_t*>(hw + 64);
    l.area = static_cast<uint8_t*>(area.host_ptr);
    l.num_descs = num_descs;
    l.max_frame = max_frame;
    l.inline_bytes = inline_bytes;
    w.init(l);
    q.pkts = static_cast<uint8_t*>(area.exec_ptr);
    q.cq = static_cast<const gnio::device::rx_cqe*>(cq.exec_ptr);
    q.cons = reinterpret_cast<uint64_t*>(xw);
    q.next = static_cast<uint64_t*>(next.exec_ptr);
    q.eos = reinterpret_cast<const uint32_t*>(xw + 64);
    q.num_descs = num_descs;
    q.log2_descs = 10;
    q.stride = max_frame;
    q.inline_bytes = inline_bytes;
    return {};
  }
  // Writes the frame and publishes its completion (the owner word last, with
  // release); false when the kernel has not released a free entry.
  bool publish(const std::vector<uint8_t>& f) {
    uint32_t len = 0;
    uint8_t* dst = w.reserve(static_cast<uint32_t>(f.size()), &len);
    if (!dst) return false;
    std::memcpy(dst, f.data(), len);
    w.commit(static_cast<uint32_t>(f.size()), 0, 0, 0, 0);
    w.publish();
    return true;
  }
  // After the kernel returned.
  void close() {
    if (!g) return;
    for (auto* b : {&cq, &area, &words, &next})
      if (b->host_ptr || b->exec_ptr) (void)g->free(*b);
    g = nullptr;
  }
  ~direct_ring() { close(); }
};

// The timed loop of chain and cqe: one frame every interval into the direct
// ring, each acknowledged through semaphore item k % num_items.
void direct_loop(run_result& r, direct_ring& ring, const gnio::device::sem& hs, bool relaxed, const config& c) {
  const uint64_t interval = static_cast<uint64_t>(c.interval_us * 1000);
  uint64_t next = mono_ns();
  for (uint64_t k = 0; k < c.warmup + c.samples; ++k) {
    wait_until(next);
    const auto f = ring_frame(latency::k_ethertype_timed, k);
    const uint64_t t0 = mono_ns();
    if (!ring.publish(f)) {
      r.error = fmt::format("frame {}: the kernel did not release a ring entry", k);
      break;
    }
    ++r.sent;
    next = t0 + interval;
    uint64_t t1 = 0, seq = 0;
    const uint32_t item = static_cast<uint32_t>(k);
    if (!wait_ack(hs, item, relaxed, t0, c.timeout_s, &t1, &seq)) {
      ++r.lost;
      r.error = fmt::format("frame {} was not acknowledged within {} s", k, c.timeout_s);
      break;
    }
    // Pairs with the kernel's next look at the item (the chain kernel does
    // not look; the ring body's items are 64 apart in time).
    gnio::device::sem_set_status(hs, item, gnio::device::sem_status::free);
    if (seq != (relaxed ? uint32_t(k) : k)) {
      ++r.bad;
      continue;
    }
    if (k >= c.warmup) r.ns.push_back(t1 - t0);
  }
  r.sent -= std::min(r.sent, c.warmup);
}

// Percentiles of one step's nanoseconds, as the runs' own (pct).
json step_summary(std::vector<uint64_t> ns) {
  if (ns.empty()) return json::object();
  std::sort(ns.begin(), ns.end());
  return {{"p50_ns", pct(ns, 50) * 1000}, {"p90_ns", pct(ns, 90) * 1000}, {"p99_ns", pct(ns, 99) * 1000}};
}

// chain: the consumer's steps by hand on one thread (latency::chain_body),
// each timed on the executor's clock; the CPU times the whole turnaround.
run_result run_chain(const std::string& exec, const config& c, const variant& v) {
  run_result r{"chain", exec, "busy", v.label(), false, {}};
  auto g = gnio::gpu::open(kernel_gpu(exec, c));
  if (!g) return r.error = g.err().what(), r;
  direct_ring ring;
  if (auto e = ring.open(*g, v.inline_bytes); e) return r.error = e.what(), r;
  auto sem = gnio::semaphore::create(*g, 64, sizeof(uint64_t));
  if (!sem) return r.error = sem.err().what(), r;
  const uint64_t total = c.warmup + c.samples;
  auto steps = g->alloc(total * sizeof(latency::chain_steps), gnio::mem_type::gpu);
  auto clock = g->alloc(sizeof(latency::chain_clock), gnio::mem_type::gpu);
  if (!steps || !clock) return r.error = "allocating the step records failed", r;
  auto runner = gnio::kernel_runner::create(*g);
  if (!runner) return r.error = runner.err().what(), r;
  latency::chain_body body{ring.q,
                           sem->view(),
                           static_cast<latency::chain_steps*>(steps->exec_ptr),
                           total,
                           static_cast<latency::chain_clock*>(clock->exec_ptr),
                           v.depth,
                           v.relaxed_ack};
  gnio::launch_dims d;
  d.blocks = 1;
  d.threads = 32;
  d.poll = gnio::device::poll_policy::busy;
  if (auto e = latency::launch_chain(*runner, d, body); e) return r.error = e.what(), r;
  const cpu_meter cpu;
  direct_loop(r, ring, sem->host_view(), v.relaxed_ack, c);
  r.extra["cpu_cores"] = cpu.cores();
  if (auto e = runner->stop(std::chrono::seconds(5)); e && r.error.empty()) r.error = e.what();
  std::vector<latency::chain_steps> got(total);
  latency::chain_clock clk{};
  if (auto e = g->copy_to_host(got.data(), *steps, 0, total * sizeof(latency::chain_steps)); e) r.error = e.what();
  if (auto e = g->copy_to_host(&clk, *clock, 0, sizeof clk); e) r.error = e.what();
  // Cycles to nanoseconds by the kernel's own clock ratio over its run.
  const double ns_per = clk.cycles1 > clk.cycles0 && clk.ns1 > clk.ns0
                            ? static_cast<double>(clk.ns1 - clk.ns0) / static_cast<double>(clk.cycles1 - clk.cycles0)
                            : 0.0;
  if (ns_per > 0 && r.error.empty()) {
    const auto ns = [ns_per](uint64_t cycles) {
      return static_cast<uint64_t>(std::llround(static_cast<double>(cycles) * ns_per));
    };
    std::vector<uint64_t> fence, entry, frame, ack, sum;
    for (uint64_t k = c.warmup; k < c.warmup + r.ns.size() && k < total; ++k) {
      const auto& s = got[k];
      fence.push_back(ns(s.fence));
      entry.push_back(ns(s.entry));
      frame.push_back(ns(s.frame));
      ack.push_back(ns(s.ack));
      sum.push_back(ns(s.fence + s.entry + s.frame + s.ack));
    }
    r.extra["kernel_steps"] = {{"fence", step_summary(fence)},
                               {"entry", step_summary(entry)},
                               {"frame", step_summary(frame)},
                               {"ack", step_summary(ack)},
                               {"seen_to_acked", step_summary(sum)}};
    r.extra["kernel_clock_ghz"] = 1.0 / ns_per;
  }
  *runner = {};
  *sem = {};
  (void)g->free(*steps);
  (void)g->free(*clock);
  return r;
}

// cqe: the ring test's kernel (recv<block> and a semaphore item per frame) on
// the direct ring: the ring test without the pair's two engines.
run_result run_cqe(const std::string& exec, const std::string& poll, const config& c, const variant& v) {
  run_result r{"cqe", exec, poll, v.label(), false, {}};
  auto g = gnio::gpu::open(kernel_gpu(exec, c));
  if (!g) return r.error = g.err().what(), r;
  direct_ring ring;
  if (auto e = ring.open(*g, v.inline_bytes); e) return r.error = e.what(), r;
  auto sem = gnio::semaphore::create(*g, 64, sizeof(uint64_t));
  if (!sem) return r.error = sem.err().what(), r;
  auto counts = g->alloc(sizeof(latency::ring_counts), gnio::mem_type::gpu);
  if (!counts) return r.error = counts.err().what(), r;
  auto runner = gnio::kernel_runner::create(*g);
  if (!runner) return r.error = runner.err().what(), r;
  if (auto e = launch_ring_body(*runner, ring.q, *sem, *counts, c, poll, v); e) return r.error = e.what(), r;
  const cpu_meter cpu;
  direct_loop(r, ring, sem->host_view(), v.relaxed_ack, c);
  r.extra["cpu_cores"] = cpu.cores();
  if (auto e = runner->stop(std::chrono::seconds(5)); e && r.error.empty()) r.error = e.what();
  latency::ring_counts got{};
  if (auto e = g->copy_to_host(&got, *counts, 0, sizeof got); e && r.error.empty()) r.error = e.what();
  r.extra["kernel_batches"] = got.batches;
  r.extra["kernel_timed"] = got.timed;
  *runner = {};
  *sem = {};
  (void)g->free(*counts);
  return r;
}

// ---------------------------------------------------------------------------
// echo: ICMP echo through gnio pp on a pair.
constexpr uint16_t k_id_timed = 0x4c41, k_id_load = 0x4c4f;
constexpr uint32_t k_icmp_payload = 56;

void put16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}

// An Ethernet + IPv4 + ICMP echo request with correct checksums; the
// payload starts with the send time and the sample number.
std::vector<uint8_t> echo_request(const uint8_t dst_mac[6], const uint8_t src_mac[6], uint32_t src_ip, uint32_t dst_ip,
                                  uint16_t id, uint16_t seq, uint64_t stamp, uint64_t k) {
  using namespace gnio::device;
  std::vector<uint8_t> f(14 + 20 + 8 + k_icmp_payload, 0);
  std::memcpy(f.data(), dst_mac, 6);
  std::memcpy(f.data() + 6, src_mac, 6);
  put16(f.data() + 12, 0x0800);
  uint8_t* ip = f.data() + 14;
  ip[0] = 0x45;
  put16(ip + 2, static_cast<uint16_t>(20 + 8 + k_icmp_payload));
  put16(ip + 4, seq);
  ip[8] = 64;
  ip[9] = 1;
  for (int i = 0; i < 4; ++i) ip[12 + i] = static_cast<uint8_t>(src_ip >> (24 - 8 * i));
  for (int i = 0; i < 4; ++i) ip[16 + i] = static_cast<uint8_t>(dst_ip >> (24 - 8 * i));
  put16(ip + 10, ipv4_header_checksum(ip, 20));
  uint8_t* ic = ip + 20;
  ic[0] = 8;
  put16(ic + 4, id);
  put16(ic + 6, seq);
  uint8_t* pl = ic + 8;
  for (int b = 0; b < 8; ++b) pl[b] = static_cast<uint8_t>(stamp >> (8 * b));
  for (int b = 0; b < 8; ++b) pl[8 + b] = static_cast<uint8_t>(k >> (8 * b));
  for (uint32_t i = 16; i < k_icmp_payload; ++i) pl[i] = static_cast<uint8_t>(i * 7 + k);
  put16(ic + 2, csum_fold(csum_partial(ic, 8 + k_icmp_payload, 0)));
  return f;
}

enum class reply_kind { timed_ok, timed_bad, load, other };

// What a received frame is, relative to the request req: the timed reply of
// the same id, sequence and payload (addresses swapped, type 0, checksums
// valid), a load reply, or something else.
reply_kind classify_reply(const uint8_t* p, uint32_t len, const std::vector<uint8_t>* req) {
  using namespace gnio::device;
  parsed_pkt pp{};
  if (!parse(p, len, pp) || pp.l4 != l4_kind::icmp) return reply_kind::other;
  const uint8_t* ic = p + pp.l4_off;
  if (pp.l4_off + 8 + k_icmp_payload > len) return reply_kind::other;
  const uint16_t id = static_cast<uint16_t>(ic[4] << 8 | ic[5]);
  if (id == k_id_load) return reply_kind::load;
  if (id != k_id_timed || !req) return reply_kind::other;
  const uint8_t* q = req->data();
  const uint8_t* qi = q + 14;
  const uint8_t* ri = p + pp.l3_off;
  const bool ok = ic[0] == 0 && ic[1] == 0 && std::memcmp(ic + 4, q + 34 + 4, 4) == 0 &&
                  std::memcmp(ic + 8, q + 42, k_icmp_payload) == 0 && std::memcmp(ri + 12, qi + 16, 4) == 0 &&
                  std::memcmp(ri + 16, qi + 12, 4) == 0 && std::memcmp(p, q + 6, 6) == 0 &&
                  std::memcmp(p + 6, q, 6) == 0 && csum_fold(csum_partial(ic, 8 + k_icmp_payload, 0)) == 0 &&
                  ipv4_header_checksum(ri, 20) == 0;
  if (ok) return reply_kind::timed_ok;
  // An earlier sample's reply that came after its deadline is not this one's.
  return std::memcmp(ic + 6, q + 40, 2) == 0 ? reply_kind::timed_bad : reply_kind::other;
}

uint64_t stamp_of(const uint8_t* icmp) {
  uint64_t v = 0;
  for (int b = 0; b < 8; ++b) v |= static_cast<uint64_t>(icmp[8 + b]) << (8 * b);
  return v;
}

run_result run_echo(const std::string& exec, const std::string& poll, bool load, const config& c,
                    uint32_t inline_bytes) {
  run_result r{"echo", exec, poll, inline_bytes ? fmt::format("inline={}", inline_bytes) : "", load, {}};
  auto hg = gnio::gpu::open("host");
  if (!hg) return r.error = hg.err().what(), r;
  const std::string name = fmt::format("pair:name=latency-echo-{}{}", ++g_pair_id, engine_arg(poll));
  auto a = gnio::port::open(*hg, name);
  if (!a) return r.error = a.err().what(), r;
  gnio::txq_config tc;
  tc.num_descs = 1024;
  tc.host_producer = true;
  auto tq = a->create_txq(tc);
  auto lq = a->create_txq(tc);
  gnio::rxq_config rc;
  rc.num_descs = 4096;
  rc.host_consumer = true;
  auto rq = a->create_rxq(rc);
  if (!tq || !lq || !rq) return r.error = "creating the client's queues failed", r;
  if (auto e = a->start(); e) return r.error = e.what(), r;
  const auto t = *a->txq_host(*tq);
  const auto rx = *a->rxq_host(*rq);

  gnio::pp::options o;
  o.port = name;
  o.gpu = kernel_gpu(exec, c);
  o.ip = "10.11.0.1";
  o.poll = poll;
  o.inline_headers = inline_bytes;
  o.quiet = true;
  o.stats_interval = 0;
  o.command = "in-process gnio pp --port " + name + " --gpu " + o.gpu + " --ip 10.11.0.1 --poll " + poll +
              " --inline-headers " + std::to_string(inline_bytes);
  std::atomic<bool> stop{false};
  json ppj;
  int pp_rc = -1;
  std::thread pp([&] { pp_rc = gnio::pp::run(o, &stop, &ppj); });
  const uint8_t pp_mac[6] = {0x02, 0x00, 10, 11, 0, 1}, my_mac[6] = {0x02, 0x00, 10, 11, 0, 2};
  const uint32_t pp_ip = 0x0a0b0001, my_ip = 0x0a0b0002;

  load_gen lg;
  uint64_t load_seen = 0, other = 0;
  // Receives everything ready; returns the arrival time of the timed reply to req, if it came.
  auto drain = [&](const std::vector<uint8_t>* req, bool* got, uint64_t* stamp) {
    uint64_t first = 0;
    uint32_t num = 0;
    if (gnio::device::recv<gnio::device::scope::thread>(rx, 256, 0, &first, &num) != gnio::status::success) {
      std::this_thread::yield();  // pp's and the engines' threads may share this core
      return;
    }
    const uint64_t now = mono_ns();
    for (uint32_t i = 0; i < num; ++i) {
      const uint8_t* p = gnio::device::pkt_addr(rx, first + i);
      const uint32_t len = gnio::device::pkt_len(rx, first + i);
      switch (classify_reply(p, len, req)) {
        case reply_kind::timed_ok:
          *got = true;
          *stamp = stamp_of(p + 34);
          r.extra["last_arrival_ns"] = now;
          break;
        case reply_kind::timed_bad: ++r.bad; break;
        case reply_kind::load: ++load_seen; break;
        case reply_kind::other: ++other; break;
      }
    }
  };
  // Warm-up: pp is up once it answers.
  bool up = false;
  const uint64_t start_deadline = mono_ns() + 30'000'000'000ull;
  for (uint16_t s = 0; !up && mono_ns() < start_deadline && pp_rc < 0; ++s) {
    const auto f = echo_request(pp_mac, my_mac, my_ip, pp_ip, k_id_timed, s, mono_ns(), s);
    (void)host_send(t, f.data(), static_cast<uint32_t>(f.size()), nullptr);
    const uint64_t until = mono_ns() + 20'000'000;
    uint64_t st = 0;
    while (!up && mono_ns() < until) drain(&f, &up, &st);
  }
  if (!up) {
    r.error = pp_rc >= 0 ? fmt::format("gnio pp ended with status {} before it answered", pp_rc)
                         : "gnio pp did not answer an echo request within 30 s";
  } else {
    if (load)
      lg.start(*a->txq_host(*lq), c.load_pps, c.load_burst, [&](uint64_t n, std::vector<uint8_t>& f) {
        f = echo_request(pp_mac, my_mac, my_ip, pp_ip, k_id_load, static_cast<uint16_t>(n), 0, n);
      });
    const uint64_t interval = static_cast<uint64_t>(c.interval_us * 1000);
    uint64_t next = mono_ns();
    const cpu_meter cpu;
    for (uint64_t k = 0; k < c.warmup + c.samples; ++k) {
      while (mono_ns() < next) {
        uint64_t st = 0;
        bool g = false;
        drain(nullptr, &g, &st);
      }
      const uint64_t t0 = mono_ns();
      const auto f = echo_request(pp_mac, my_mac, my_ip, pp_ip, k_id_timed, static_cast<uint16_t>(k), t0, k);
      if (!host_send(t, f.data(), static_cast<uint32_t>(f.size()), nullptr)) {
        r.error = "the client's TX ring stayed full for 1 s";
        break;
      }
      ++r.sent;
      bool got = false;
      uint64_t stamp = 0;
      while (!got && mono_ns() - t0 < static_cast<uint64_t>(c.timeout_s * 1e9)) drain(&f, &got, &stamp);
      const uint64_t t1 = mono_ns();
      next = t0 + interval;
      if (!got) {
        ++r.lost;
        if (r.lost > 100) {
          r.error = "more than 100 echo requests were not answered";
          break;
        }
        continue;
      }
      // The reply carries the request's send stamp back; it must be this one's.
      if (stamp != t0) {
        ++r.bad;
        continue;
      }
      if (k >= c.warmup) r.ns.push_back(t1 - stamp);
    }
    r.sent -= std::min(r.sent, c.warmup);
    r.extra["cpu_cores"] = cpu.cores();
  }
  lg.finish();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  {
    uint64_t st = 0;
    bool g = false;
    drain(nullptr, &g, &st);
  }
  stop = true;
  pp.join();
  r.load_sent = lg.sent.load();
  r.load_seen = load_seen;
  r.load_seconds = lg.seconds();
  r.extra["other_frames"] = other;
  r.extra["pp_exit_status"] = pp_rc;
  r.extra["pp_command"] = o.command;
  if (ppj.contains("icmp_echo_reply_sent")) r.extra["pp_icmp_echo_reply_sent"] = ppj["icmp_echo_reply_sent"];
  if (pp_rc != 0 && r.error.empty())
    r.error = fmt::format("gnio pp exited with status {}{}", pp_rc,
                          ppj.contains("error") ? ": " + ppj["error"].get<std::string>() : "");
  r.extra.erase("last_arrival_ns");
  (void)a->stop();
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  gnio::prefer_eager_module_loading();
  CLI::App app{"latency: per-packet turnaround through gnio (flag, ring, echo, veth) on the CUDA and host executors"};
  config c;
  std::string tests = "flag,ring,echo", exec = "both", polls = "busy,adaptive", json_path, loads = "off,on",
              inlines = "0", acks = "release", depths = "owner,fence,entry,frame,acquire";
  app.add_option("--test", tests,
                 "tests, comma-separated: flag (host<->kernel word round trip, the floor), chain (the consumer's "
                 "steps one by one on a ring the CPU fills, each timed on the GPU's clock), cqe (recv<block> -> "
                 "semaphore item on a ring the CPU fills: ring without the engines), ring (pair port -> "
                 "recv -> semaphore item -> CPU), echo (ICMP echo through gnio pp on a pair), veth (gnio pp on "
                 "af_packet and af_xdp against the Linux kernel on a veth; root, host executor)")
      ->capture_default_str();
  app.add_option("--ack", acks,
                 "flag, chain, cqe and ring: how the kernel acknowledges, comma-separated: release (custom bytes, "
                 "then the semaphore status with a release store) and relaxed (sem_set_ready_count: status and "
                 "count in one store without a fence)")
      ->capture_default_str();
  app.add_option("--depth", depths,
                 "chain: how many of the consumer's steps the kernel takes before it acknowledges, comma-separated: "
                 "owner (the owner word), fence (+ the acquire fence), entry (+ len and buf), frame (+ the frame's "
                 "bytes), acquire (the four with the owner word loaded with acquire and no fence)")
      ->capture_default_str();
  app.add_option("--inline", inlines,
                 "ring and echo: the RX queue's inline headers to run with, comma-separated byte counts (0, or a "
                 "multiple of 32 up to 224): each frame's first bytes in its completion entry")
      ->capture_default_str();
  app.add_option("--exec", exec, "executors: cuda, host or both")
      ->check(CLI::IsMember({"cuda", "host", "both"}))
      ->capture_default_str();
  app.add_option("--gpu", c.gpu, "CUDA GPU for --exec cuda: ordinal or bus id")->capture_default_str();
  app.add_option("--poll", polls,
                 "poll policies to run, comma-separated: busy (kernel never sleeps and returns a batch once it stops "
                 "growing; engines engine_poll=busy), latency (busy, and a batch returned at first sight) and "
                 "adaptive (the defaults)")
      ->capture_default_str();
  app.add_option("--load", loads, "off, on or off,on: background load through the same port and queues")
      ->capture_default_str();
  app.add_option("--samples", c.samples, "timed packets per run (after the warm-up)")
      ->check(gnio::cli::whole(1, 100'000'000))
      ->capture_default_str();
  app.add_option("--warmup", c.warmup, "timed packets sent first and not counted")
      ->check(gnio::cli::whole(0, 1'000'000))
      ->capture_default_str();
  app.add_option("--interval-us", c.interval_us, "one timed packet every this many microseconds (at the lowest)")
      ->check(gnio::cli::number(0, 1e6))
      ->capture_default_str();
  app.add_option("--load-pps", c.load_pps, "background load in frames per second (0: as fast as the TX ring takes it)")
      ->check(gnio::cli::whole(0, 1'000'000'000))
      ->capture_default_str();
  app.add_option("--load-burst", c.load_burst, "background load frames per doorbell")
      ->check(gnio::cli::whole(1, 256))
      ->capture_default_str();
  app.add_option("--batch", c.batch, "ring test: max packets per recv")
      ->check(gnio::cli::whole(1, 1024))
      ->capture_default_str();
  app.add_option("--batch-timeout-us", c.batch_timeout_us, "ring test: recv's timeout for a batch to fill")
      ->check(gnio::cli::whole(0, 1'000'000))
      ->capture_default_str();
  app.add_option("--threads", c.threads, "ring test: CUDA threads of the consumer block")
      ->check(gnio::cli::whole(32, 1024))
      ->capture_default_str();
  app.add_option("--timeout", c.timeout_s, "seconds after which an unanswered packet counts as lost")
      ->check(gnio::cli::number(0.001, 60))
      ->capture_default_str();
  app.add_option("--gnio-bin", c.gnio_bin,
                 "veth test: the gnio program (default: ../tools/gnio/gnio next to this one)");
  auto* json_opt = app.add_option("--json", json_path, "write every run as JSON to FILE");
  if (auto usage = gnio::cli::parse(app, argc, argv)) return gnio::console::finish("latency", *usage);
  std::vector<std::string> test_list = split(tests), poll_list = split(polls), load_list = split(loads);
  for (const auto& t : test_list)
    if (t != "flag" && t != "chain" && t != "cqe" && t != "ring" && t != "echo" && t != "veth") {
      fmt::print(stderr, "latency: --test: '{}' is not one of flag, chain, cqe, ring, echo, veth\n",
                 gnio::printable(t));
      return 2;
    }
  std::vector<bool> ack_list;
  for (const auto& a : split(acks)) {
    if (a != "release" && a != "relaxed") {
      fmt::print(stderr, "latency: --ack: '{}' is not release or relaxed\n", gnio::printable(a));
      return 2;
    }
    ack_list.push_back(a == "relaxed");
  }
  std::vector<uint32_t> depth_list;
  for (const auto& d : split(depths)) {
    const uint32_t n = d == "owner"     ? latency::chain_owner
                       : d == "fence"   ? latency::chain_fence
                       : d == "entry"   ? latency::chain_entry
                       : d == "frame"   ? latency::chain_frame
                       : d == "acquire" ? latency::chain_acquire
                                        : 0;
    if (n == 0) {
      fmt::print(stderr, "latency: --depth: '{}' is not owner, fence, entry, frame or acquire\n", gnio::printable(d));
      return 2;
    }
    depth_list.push_back(n);
  }
  if (ack_list.empty() || depth_list.empty()) {
    fmt::print(stderr, "latency: --ack and --depth need at least one value\n");
    return 2;
  }
  for (const auto& p : poll_list)
    if (p != "busy" && p != "adaptive" && p != "latency") {
      fmt::print(stderr, "latency: --poll: '{}' is not busy, latency or adaptive\n", gnio::printable(p));
      return 2;
    }
  for (const auto& l : load_list)
    if (l != "off" && l != "on") {
      fmt::print(stderr, "latency: --load: '{}' is not off or on\n", gnio::printable(l));
      return 2;
    }
  std::vector<uint32_t> inline_list;
  for (const auto& s : split(inlines)) {
    uint32_t n = 0;
    if (const std::string why = gnio::cli::inline_bytes_problem(s, &n); !why.empty()) {
      fmt::print(stderr, "latency: --inline: {}\n", why);
      return 2;
    }
    inline_list.push_back(n);
  }
  if (test_list.empty() || poll_list.empty() || load_list.empty() || inline_list.empty()) {
    fmt::print(stderr, "latency: --test, --poll and --load need at least one value\n");
    return 2;
  }
  std::optional<gnio::atomic_file> out;
  if (*json_opt) {
    auto f = gnio::prepare_output("--json", json_path, {});
    if (!f) {
      fmt::print(stderr, "latency: {}\n", f.err().what());
      return 2;
    }
    out.emplace(std::move(*f));
  }
  if (c.gnio_bin.empty()) {
    char self[4096] = {};
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    std::string dir = n > 0 ? std::string(self, static_cast<size_t>(n)) : std::string(argv[0]);
    dir = dir.substr(0, dir.rfind('/'));
    c.gnio_bin = dir + "/../tools/gnio/gnio";
  }

  std::string cmdline;
  for (int i = 0; i < argc; ++i) cmdline += (i ? " " : "") + std::string(argv[i]);
  utsname un{};
  uname(&un);
  std::vector<std::string> execs;
  if (exec == "both" || exec == "cuda") execs.push_back("cuda");
  if (exec == "both" || exec == "host") execs.push_back("host");
  std::string gpu_name = "none";
  if (std::find(execs.begin(), execs.end(), "cuda") != execs.end()) {
    auto g = gnio::gpu::open(c.gpu);
    if (g && g->executor() == gnio::executor_kind::cuda) {
      gpu_name = g->info().name;
    } else {
      fmt::print("latency: no CUDA GPU ({}); the cuda runs are skipped\n",
                 g ? std::string("not a CUDA device") : g.err().what());
      std::erase(execs, std::string("cuda"));
    }
  }
  fmt::print("latency: {}\n", cmdline);
  fmt::print("latency: machine {} ({}, {} CPUs), kernel {} {}, GPU {}\n", un.nodename, bench::cpu_model(),
             std::thread::hardware_concurrency(), un.sysname, un.release, gpu_name);
  fmt::print(
      "latency: {} samples (+{} warm-up) per run, one every {} us; load {} frames/s in bursts of {}; ring "
      "batch {}, batch timeout {} us\n",
      c.samples, c.warmup, c.interval_us, c.load_pps, c.load_burst, c.batch, c.batch_timeout_us);

  json j;
  gnio::result_schema::stamp(j, gnio::result_schema::bench_latency);
  j["command"] = cmdline;
  j["machine"] = {{"host", un.nodename},
                  {"cpu", bench::cpu_model()},
                  {"cpus", std::thread::hardware_concurrency()},
                  {"kernel", std::string(un.sysname) + " " + un.release},
                  {"gpu", gpu_name}};
  j["inputs"] = {{"samples", c.samples}, {"ack", acks},
                 {"warmup", c.warmup},   {"interval_us", c.interval_us},
                 {"batch", c.batch},     {"batch_timeout_us", c.batch_timeout_us},
                 {"threads", c.threads}, {"timeout_s", c.timeout_s}};
  j["load"] = {{"what",
                "ring: 64-byte frames of EtherType 0x88b6 from a second TX queue of the same pair side into the "
                "kernel's RX queue; echo: ICMP echo requests (id 0x4c4f) from a second TX queue to the same "
                "gnio pp address, answered and received by the client like the timed ones; veth: a flood of "
                "the same echo requests from the client namespace"},
               {"pps", c.load_pps},
               {"burst", c.load_burst}};
  j["runs"] = json::array();
  int rc = 0;
  auto record = [&](run_result r) {
    json row = summarize(r);
    print_row(row);
    if (!r.error.empty() || r.ns.empty()) rc = 1;
    j["runs"].push_back(row);
  };
  for (const auto& t : test_list) {
    if (t == "veth") continue;
    for (const auto& e : execs) {
      if (t == "flag") {
        for (const bool relaxed : ack_list) record(run_flag(e, c, relaxed));
        continue;
      }
      if (t == "chain") {
        for (const uint32_t depth : depth_list)
          for (const uint32_t inl : inline_list)
            for (const bool relaxed : ack_list) record(run_chain(e, c, variant{inl, relaxed, depth}));
        continue;
      }
      if (t == "cqe") {
        for (const auto& p : poll_list)
          for (const uint32_t inl : inline_list)
            for (const bool relaxed : ack_list) record(run_cqe(e, p, c, variant{inl, relaxed, 0}));
        continue;
      }
      for (const auto& l : load_list)
        for (const auto& p : poll_list)
          for (const uint32_t inl : inline_list) {
            if (t == "echo") {
              record(run_echo(e, p, l == "on", c, inl));
              continue;
            }
            for (const bool relaxed : ack_list) record(run_ring(e, p, l == "on", c, variant{inl, relaxed, 0}));
          }
    }
  }
  if (std::find(test_list.begin(), test_list.end(), "veth") != test_list.end()) {
    std::string srv, cli, why;
    if (!latency::veth_setup(&srv, &cli, &why)) {
      fmt::print(stderr, "latency: veth: {}\n", why);
      j["veth_error"] = why;
      rc = 1;
    } else {
      std::vector<json> rows;
      for (const auto& l : load_list)
        for (const auto& s : latency::veth_settings()) {
          run_result r = latency::run_veth(s, l == "on", c, srv, cli, s == "kernel" ? 0x0a0c0002 : 0x0a0c0003);
          rows.push_back(summarize(r));
          print_row(rows.back());
          if (!r.error.empty() || r.ns.empty()) rc = 1;
        }
      latency::veth_teardown();
      // The kernel's own reply is the reference: every gnio row gets its ratio.
      for (auto& row : rows) {
        const json* ref = nullptr;
        for (const auto& k : rows)
          if (k["setting"] == "kernel" && k["load"] == row["load"]) ref = &k;
        if (ref && ref->contains("p50_us") && row.contains("p50_us") && row["setting"] != "kernel") {
          row["p50_vs_kernel"] = row["p50_us"].get<double>() / (*ref)["p50_us"].get<double>();
          row["p99_vs_kernel"] = row["p99_us"].get<double>() / (*ref)["p99_us"].get<double>();
          fmt::print("latency: veth {:<32}{} p50 {:.2f}x, p99 {:.2f}x the kernel's\n",
                     row["setting"].get<std::string>(), row["load"].get<bool>() ? " +load" : "      ",
                     row["p50_vs_kernel"].get<double>(), row["p99_vs_kernel"].get<double>());
        }
        j["runs"].push_back(row);
      }
    }
  }
  if (out) {
    if (auto e = out->commit(j.dump(2) + "\n"); e) {
      fmt::print(stderr, "latency: {}\n", e.what());
      rc = 1;
    }
  }
  return rc;
}
