// SPDX-License-Identifier: Apache-2.0
// engine_cost: what the engine (the CPU thread that plays the NIC) spends per
// frame, with consumers that cost almost nothing. A port on the host executor
// is fed by a backend (gen by default), and one consumer thread per RX queue
// group releases every batch through device::recv without touching the
// bytes. The engine's CPU time is the process's CPU time minus the
// consumers' and the main thread's (each measures its own), so the number
// holds for any engine design and needs nothing from the library's
// internals.
//
//   engine_cost --port gen:size=64,flows=4096,count=20000000 --queues 4 --json out.json
//
// Prints the command, the machine and the inputs, and writes JSON.
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <gnio/device/rx.hpp>
#include <gnio/gnio.hpp>
#include "machine.hpp"
#include "result_schema.hpp"

namespace {

uint64_t thread_cpu_ns() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(t.tv_nsec);
}

uint64_t process_cpu_ns() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto ns = [](const timeval& v) { return static_cast<uint64_t>(v.tv_sec) * 1'000'000'000ull + v.tv_usec * 1000ull; };
  return ns(u.ru_utime) + ns(u.ru_stime);
}

}  // namespace

int main(int argc, char** argv) {
  gnio::prefer_eager_module_loading();  // before any CUDA call (docs/kernels.md)
  CLI::App app{"engine_cost: CPU time the engine spends per frame, with consumers that only release"};
  std::string port_dev = "gen:size=64,flows=4096,count=20000000", json_path;
  uint32_t queues = 4, ring = 4096, batch = 256, consumers = 1, repeat = 3;
  app.add_option("--port", port_dev, "device string (a finite source: gen with count=, or a pcap file)")
      ->capture_default_str();
  app.add_option("--queues", queues, "RX queues")->check(CLI::Range(1u, 64u))->capture_default_str();
  app.add_option("--ring", ring, "descriptors per RX queue")->capture_default_str();
  app.add_option("--batch", batch, "max packets per recv")->capture_default_str();
  app.add_option("--consumers", consumers, "consumer threads (each drains queues i, i+C, ...)")
      ->check(CLI::Range(1u, 64u))
      ->capture_default_str();
  app.add_option("--repeat", repeat, "runs; the JSON has each and the median")
      ->check(CLI::Range(1u, 100u))
      ->capture_default_str();
  app.add_option("--json", json_path, "write results as JSON to FILE");
  CLI11_PARSE(app, argc, argv);

  std::string cmdline;
  for (int i = 0; i < argc; ++i) cmdline += (i ? " " : "") + std::string(argv[i]);
  utsname un{};
  uname(&un);
  const unsigned ncpu = std::thread::hardware_concurrency();
  fmt::print("engine_cost: {}\nengine_cost: machine {} ({}, {} CPUs, {})\n", cmdline, un.nodename, bench::cpu_model(),
             ncpu, un.release);

  nlohmann::json runs = nlohmann::json::array();
  std::vector<double> ns_per_frame;
  for (uint32_t r = 0; r < repeat; ++r) {
    auto g = gnio::gpu::open("host");
    if (!g) {
      fmt::print(stderr, "engine_cost: gpu: {}\n", g.err().what());
      return 1;
    }
    auto p = gnio::port::open(*g, port_dev);
    if (!p) {
      fmt::print(stderr, "engine_cost: port: {}\n", p.err().what());
      return 1;
    }
    std::vector<gnio::device::rxq> qs;
    for (uint32_t i = 0; i < queues; ++i) {
      gnio::rxq_config rc;
      rc.num_descs = ring;
      auto id = p->create_rxq(rc);
      if (!id) {
        fmt::print(stderr, "engine_cost: create_rxq: {}\n", id.err().what());
        return 1;
      }
      qs.push_back(*p->rxq(*id));
    }
    std::atomic<uint64_t> consumer_cpu{0}, received{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (uint32_t c = 0; c < consumers; ++c) {
      threads.emplace_back([&, c] {
        while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
        const uint64_t t0 = thread_cpu_ns();
        std::vector<bool> done(queues, false);
        uint32_t open = 0;
        for (uint32_t i = c; i < queues; i += consumers) ++open;
        uint64_t n = 0;
        while (open > 0) {
          for (uint32_t i = c; i < queues; i += consumers) {
            if (done[i]) continue;
            uint64_t first = 0;
            uint32_t num = 0;
            const gnio::status s = gnio::device::recv<gnio::device::scope::thread>(qs[i], batch, 0, &first, &num);
            n += num;
            if (s == gnio::status::shutdown) {
              gnio::device::release_all(qs[i]);
              done[i] = true;
              --open;
            }
          }
        }
        received.fetch_add(n);
        consumer_cpu.fetch_add(thread_cpu_ns() - t0);
      });
    }
    const uint64_t main0 = thread_cpu_ns();
    const uint64_t cpu0 = process_cpu_ns();
    const auto w0 = std::chrono::steady_clock::now();
    if (auto e = p->start(); e) {
      fmt::print(stderr, "engine_cost: start: {}\n", e.what());
      go = true;
      for (auto& t : threads) t.join();
      return 1;
    }
    go.store(true, std::memory_order_release);
    for (auto& t : threads) t.join();
    const auto w1 = std::chrono::steady_clock::now();
    const uint64_t cpu1 = process_cpu_ns();
    const uint64_t main1 = thread_cpu_ns();
    const gnio::port_stats st = p->stats();
    if (auto e = p->stop(); e) fmt::print(stderr, "engine_cost: stop: {}\n", e.what());
    for (uint32_t i = 0; i < queues; ++i) (void)p->destroy_rxq(i);
    (void)p->close();

    const double wall_s = std::chrono::duration<double>(w1 - w0).count();
    const uint64_t engine_ns = (cpu1 - cpu0) - consumer_cpu.load() - (main1 - main0);
    const uint64_t frames = received.load();
    const double per = frames ? static_cast<double>(engine_ns) / static_cast<double>(frames) : 0.0;
    ns_per_frame.push_back(per);
    fmt::print(
        "engine_cost: run {}: {} frames in {:.3f} s ({:.2f} Mpps), engine CPU {:.3f} s = {:.1f} ns/frame, "
        "consumers {:.3f} s, missed {}\n",
        r + 1, frames, wall_s, frames / wall_s / 1e6, engine_ns / 1e9, per, consumer_cpu.load() / 1e9, st.rx_missed);
    runs.push_back({{"frames", frames},
                    {"rx_frames", st.rx_frames},
                    {"missed", st.rx_missed},
                    {"wall_s", wall_s},
                    {"mpps", frames / wall_s / 1e6},
                    {"engine_cpu_s", engine_ns / 1e9},
                    {"consumer_cpu_s", consumer_cpu.load() / 1e9},
                    {"engine_ns_per_frame", per}});
  }
  std::vector<double> sorted = ns_per_frame;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2];
  fmt::print("engine_cost: median engine cost {:.1f} ns/frame over {} run(s)\n", median, repeat);
  if (!json_path.empty()) {
    nlohmann::json j{
        {"benchmark", "engine_cost"},
        {"command", cmdline},
        {"machine", {{"host", un.nodename}, {"cpu", bench::cpu_model()}, {"cpus", ncpu}, {"kernel", un.release}}},
        {"inputs",
         {{"port", port_dev}, {"queues", queues}, {"ring", ring}, {"batch", batch}, {"consumers", consumers}}},
        {"gnio_version", GNIO_VERSION_STRING},
        {"runs", runs},
        {"engine_ns_per_frame_median", median}};
    std::ofstream f(json_path);
    gnio::result_schema::stamp(j, gnio::result_schema::bench_engine_cost);
    f << j.dump(2) << "\n";
    if (!f) {
      fmt::print(stderr, "engine_cost: cannot write {}\n", json_path);
      return 1;
    }
  }
  return 0;
}
