// SPDX-License-Identifier: Apache-2.0
// capacity: how many packets per second gnio's own kernels consume, with the
// engine out of the way. A producer that costs next to nothing per frame
// writes completions into 1..64 RX rings; the consumer is the real
// flow_count body and the real gnio pp body (its counting path: no replies).
//
//   --mem gpu   rings and frames in GPU memory, the producer a GPU kernel
//               (one warp per ring): what the device side could take from a
//               NIC that writes GPU memory.
//   --mem host  rings and frames in mapped pinned host memory, the producer
//               one CPU thread per ring (backend::rx_ring_writer, by
//               reference): what the kernels take over PCIe.
//
// Frames come from the gen backend (real Ethernet/IPv4 UDP/TCP/ICMP with
// valid checksums); completions name them by reference, so the producer
// writes 32 bytes per frame. Every run checks that the kernel counted every
// frame. Prints the command, the machine and the inputs, writes JSON.
//
//   capacity --app flow_count,pp --mem gpu --rings 1,8,64 --json out.json
//
// CUDA loads modules lazily by default: a kernel launched for the first time
// while a persistent kernel spins may never start. main() asks for eager
// loading before CUDA starts, and the producer kernel is loaded before the
// consumer is launched.
#include <sys/utsname.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <gnio/backend/backend.hpp>
#include <gnio/backend/ring.hpp>
#include <gnio/gnio.hpp>

#include "capacity.hpp"
#include "machine.hpp"
#include "result_schema.hpp"

using gnio::device::rx_cqe;

namespace {

// "1,8,64" -> {1, 8, 64}; empty when an item is not a number.
std::vector<uint32_t> parse_list(const std::string& s) {
  std::vector<uint32_t> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    const size_t c = std::min(s.find(',', pos), s.size());
    uint32_t v = 0;
    const auto [p, ec] = std::from_chars(s.data() + pos, s.data() + c, v);
    if (ec != std::errc() || p != s.data() + c) return {};
    out.push_back(v);
    pos = c + 1;
  }
  return out;
}

// Frames of the gen backend, laid out 64-byte aligned in one area.
struct frame_set {
  std::vector<uint8_t> bytes;
  std::vector<frame_ref> refs;
};

gnio::result<frame_set> gen_frames(const std::string& opts, uint32_t n) {
  struct collect : gnio::backend::rx_lane::collector {
    frame_set* fs;
    bool take(const uint8_t* f, uint32_t len, uint32_t, uint64_t) override {
      const uint32_t off = static_cast<uint32_t>(fs->bytes.size());
      fs->bytes.insert(fs->bytes.end(), f, f + len);
      fs->bytes.resize((fs->bytes.size() + 63) & ~size_t{63}, 0);
      const auto s = gnio::backend::steer_of(f, len);
      fs->refs.push_back({off, len, s.hash, s.cls, s.flags});
      return true;
    }
  };
  frame_set fs;
  collect c;
  c.fs = &fs;
  const auto* ops = gnio::backend::find("gen");
  auto args = gnio::backend::parse_devargs("gen:" + opts + ",count=" + std::to_string(n));
  if (!args) return args.err();
  void* priv = nullptr;
  if (auto e = ops->open(*args, &priv); e) return e;
  if (ops->start) (void)ops->start(priv);
  gnio::backend::rx_lane lane(c);
  while (fs.refs.size() < n) {
    uint32_t got = 0;
    if (ops->rx_burst(priv, lane, 256, &got) == gnio::status::shutdown) break;
  }
  ops->close(priv);
  return fs;
}

struct ring_set {
  gnio::gpu* g = nullptr;
  std::vector<gnio::mem_block> blocks;
  std::vector<gnio::device::rxq> views;
  std::vector<ring_prod> host_prod;  // host addresses (host memory rings)
  std::vector<ring_prod> exec_prod;  // executor addresses
  gnio::mem_block frames;

  ~ring_set() {
    for (auto& b : blocks) (void)g->free(b);
  }
  gnio::result<gnio::mem_block> take(size_t bytes, gnio::mem_type t) {
    auto b = g->alloc(bytes, t);
    if (b) blocks.push_back(*b);
    return b;
  }
};

gnio::error make_rings(gnio::gpu& g, ring_set& rs, uint32_t nrings, uint32_t ring, gnio::mem_type mt,
                       const frame_set& fs) {
  rs.g = &g;
  const gnio::mem_type private_mem = g.executor() == gnio::executor_kind::cuda ? gnio::mem_type::gpu : mt;
  auto fr = rs.take(fs.bytes.size(), mt);
  if (!fr) return fr.err();
  rs.frames = *fr;
  if (auto e = g.copy_to_block(rs.frames, 0, fs.bytes.data(), fs.bytes.size()); e) return e;
  uint32_t log2 = 0;
  while ((1u << log2) < ring) ++log2;
  for (uint32_t i = 0; i < nrings; ++i) {
    auto cq = rs.take(sizeof(rx_cqe) * ring, mt);
    auto cons = rs.take(64, mt);
    auto next = rs.take(64, private_mem);
    auto eos = rs.take(64, mt);
    if (!cq) return cq.err();
    if (!cons) return cons.err();
    if (!next) return next.err();
    if (!eos) return eos.err();
    gnio::device::rxq v{};
    v.pkts = static_cast<uint8_t*>(rs.frames.exec_ptr);
    v.cq = static_cast<const rx_cqe*>(cq->exec_ptr);
    v.cons = static_cast<uint64_t*>(cons->exec_ptr);
    v.next = static_cast<uint64_t*>(next->exec_ptr);
    v.eos = static_cast<const uint32_t*>(eos->exec_ptr);
    v.num_descs = ring;
    v.log2_descs = log2;
    v.stride = 2048;
    v.queue_id = i;
    rs.views.push_back(v);
    rs.exec_prod.push_back({static_cast<rx_cqe*>(cq->exec_ptr), static_cast<const uint64_t*>(cons->exec_ptr),
                            static_cast<uint32_t*>(eos->exec_ptr), ring, log2});
    rs.host_prod.push_back({static_cast<rx_cqe*>(cq->host_ptr), static_cast<const uint64_t*>(cons->host_ptr),
                            static_cast<uint32_t*>(eos->host_ptr), ring, log2});
  }
  return {};
}

// Entries of a pool ring free for posting. They come free through reclaim();
// the frames here are static, so their buffers need not go anywhere.
uint32_t free_now(gnio::backend::rx_ring_writer& w) {
  (void)w.reclaim([](uint32_t) {});
  return w.free_entries();
}

// One CPU thread per ring (threads wrap around when there are more rings than
// CPUs): posts `count` completions by reference, 256 per publish.
void cpu_produce(const ring_prod& r, uint64_t count, const std::vector<frame_ref>& frames, uint32_t skew) {
  gnio::backend::rx_ring_writer w;
  w.init({r.cq, r.cons, r.eos, nullptr, r.num_descs, 2048});
  uint64_t i = 0;
  const size_t nf = frames.size();
  while (i < count) {
    const uint32_t room = free_now(w);
    if (room == 0) {
      std::this_thread::yield();
      continue;
    }
    const uint64_t n = std::min<uint64_t>({room, 256, count - i});
    for (uint64_t k = 0; k < n; ++k, ++i) {
      const frame_ref& f = frames[(i + skew) % nf];
      (void)w.post(f.off, f.len, f.len, 0, f.hash, f.cls, f.flags);
    }
    w.publish();
  }
  w.end_of_stream();
}

struct result_row {
  std::string app, mem;
  uint32_t rings;
  uint64_t frames;
  uint64_t counted;
  double seconds;
};

}  // namespace

int main(int argc, char** argv) {
  // Before anything starts CUDA: see the file comment.
  gnio::prefer_eager_module_loading();
  CLI::App app{"capacity: packets per second gnio's kernels consume from rings fed by a producer that costs nothing"};
  std::string apps = "flow_count,pp", mems = "gpu,host", rings_s = "1,2,4,8,16,32,64", gpu_sel = "auto", json_path;
  std::string traffic = "size=64,flows=4096,mix=all";
  uint64_t per_ring = 4'000'000;
  uint32_t ring = 4096, batch = 512, threads = 256, nframes = 4096;
  app.add_option("--app", apps, "consumers: flow_count, pp (comma-separated)")->capture_default_str();
  app.add_option("--mem", mems, "ring memory: gpu (GPU producer kernel), host (CPU producer threads)")
      ->capture_default_str();
  app.add_option("--rings", rings_s, "ring counts to sweep, 1..64")->capture_default_str();
  app.add_option("--gpu", gpu_sel, "GPU: ordinal, bus id, auto, or host (host executor)")->capture_default_str();
  app.add_option("--frames", per_ring, "completions per ring per run")->capture_default_str();
  app.add_option("--ring", ring, "descriptors per ring (power of two)")->capture_default_str();
  app.add_option("--batch", batch, "max packets per recv")->capture_default_str();
  app.add_option("--threads", threads, "CUDA threads per consumer block")->capture_default_str();
  app.add_option("--traffic", traffic, "gen options for the frames")->capture_default_str();
  app.add_option("--json", json_path, "write results as JSON to FILE");
  bool h2d = false;
  app.add_flag("--h2d", h2d,
               "also measure the host-to-device copy bandwidth from pinned memory (256 MiB x 20), the PCIe ceiling "
               "for rates from host memory; --rings 0 measures only that");
  CLI11_PARSE(app, argc, argv);

  if (parse_list(rings_s).empty()) {
    fmt::print(stderr, "capacity: --rings: '{}' is not a comma-separated list of numbers\n", rings_s);
    return 2;
  }
  std::string cmdline;
  for (int i = 0; i < argc; ++i) cmdline += (i ? " " : "") + std::string(argv[i]);
  auto g = gnio::gpu::open(gpu_sel);
  if (!g) {
    fmt::print(stderr, "capacity: gpu: {}\n", g.err().what());
    return 1;
  }
  utsname un{};
  uname(&un);
  const auto& info = g->info();
  const std::string device = info.executor == gnio::executor_kind::cuda ? info.name : "host executor";
  fmt::print("capacity: {}\ncapacity: machine {} ({}, {} CPUs), device {}\n", cmdline, un.nodename, bench::cpu_model(),
             std::thread::hardware_concurrency(), device);
  auto fs = gen_frames(traffic, nframes);
  if (!fs) {
    fmt::print(stderr, "capacity: frames: {}\n", fs.err().what());
    return 1;
  }
  fmt::print("capacity: {} frames of gen:{} ({} bytes), {} completions per ring, ring {}, batch {}\n", fs->refs.size(),
             traffic, fs->bytes.size(), per_ring, ring, batch);

  std::vector<result_row> rows;
  int rc = 0;
  h2d_result pcie;
  if (h2d) {
    if (info.executor != gnio::executor_kind::cuda) {
      fmt::print("capacity: --h2d needs a CUDA GPU; skipped\n");
    } else {
      pcie = h2d_bandwidth(info.ordinal, size_t{256} << 20, 20);
      if (pcie.gbps > 0) {
        fmt::print("capacity: host-to-device copy from pinned memory: {:.1f} Gb/s ({:.1f} GB/s)\n", pcie.gbps,
                   pcie.gbps / 8);
      } else {
        fmt::print(stderr, "capacity: --h2d: {}\n", pcie.why);
        rc = 1;
      }
    }
  }
  for (const std::string& mem : {std::string("gpu"), std::string("host")}) {
    if (mems.find(mem) == std::string::npos) continue;
    if (mem == "gpu" && info.executor != gnio::executor_kind::cuda) {
      fmt::print("capacity: --mem gpu needs a CUDA GPU (the producer is a GPU kernel); skipped\n");
      continue;
    }
    for (const std::string& which : {std::string("flow_count"), std::string("pp")}) {
      if (apps.find(which) == std::string::npos) continue;
      for (uint32_t nr : parse_list(rings_s)) {
        if (nr == 0 || nr > 64) continue;
        ring_set rs;
        const auto mt = mem == "gpu" ? gnio::mem_type::gpu : gnio::mem_type::cpu_gpu;
        if (auto e = make_rings(*g, rs, nr, ring, mt, *fs); e) {
          fmt::print(stderr, "capacity: rings: {}\n", e.what());
          return 1;
        }
        auto runner = gnio::kernel_runner::create(*g);
        if (!runner) {
          fmt::print(stderr, "capacity: runner: {}\n", runner.err().what());
          return 1;
        }
        // Consumer state.
        gnio::mem_block table{}, tot{}, ctr{}, conv{}, dns{};
        auto take = [&](size_t bytes) {
          auto b = g->alloc(bytes,
                            info.executor == gnio::executor_kind::cuda ? gnio::mem_type::gpu : gnio::mem_type::cpu_gpu);
          return b ? *b : gnio::mem_block{};
        };
        gnio::error le;  // assigned by the launch below
        const gnio::launch_dims dims{nr, threads, 0};
        gpu_producer* prod = nullptr;
        if (mem == "gpu") {
          // Load the producer now, while nothing spins (lazy loading).
          std::string why;
          prod =
              producer_prepare(rs.exec_prod.data(), nr, fs->refs.data(), static_cast<uint32_t>(fs->refs.size()), &why);
          if (!prod) {
            fmt::print(stderr, "capacity: preparing the producer: {}\n", why);
            return 1;
          }
        }
        if (which == "flow_count") {
          flow_count::body b{};
          for (uint32_t i = 0; i < nr; ++i) b.q[i] = rs.views[i];
          b.num_queues = nr;
          b.capacity = 1u << 16;
          table = take(sizeof(flow_count::flow_entry) * b.capacity);
          tot = take(sizeof(flow_count::totals) * nr);
          b.table[0] = static_cast<flow_count::flow_entry*>(table.exec_ptr);  // one table, never flipped (flip null)
          b.tot = static_cast<flow_count::totals*>(tot.exec_ptr);
          b.batch = batch;
          le = launch_flow_count(*runner, dims, b);
        } else {
          gnio::pp::body b{};
          for (uint32_t i = 0; i < nr; ++i) b.blocks[i] = {gnio::pp::role::udp, 0, rs.views[i], {}};
          b.num_blocks = nr;
          ctr = take(sizeof(gnio::pp::counters) * nr);
          b.conv_capacity = 1u << 16;
          conv = take(sizeof(gnio::device::flow_entry) * b.conv_capacity);
          b.dns_capacity = 1u << 12;
          dns = take(sizeof(gnio::pp::dns_entry) * b.dns_capacity);
          b.ctr = static_cast<gnio::pp::counters*>(ctr.exec_ptr);
          b.conv = static_cast<gnio::device::flow_entry*>(conv.exec_ptr);
          b.dns = static_cast<gnio::pp::dns_entry*>(dns.exec_ptr);
          b.batch = batch;
          le = launch_pp(*runner, dims, b);
        }
        if (le) {
          fmt::print(stderr, "capacity: launch: {}\n", le.what());
          return 1;
        }
        const auto t0 = std::chrono::steady_clock::now();
        std::vector<std::thread> producers;
        if (mem == "gpu") {
          std::string why;
          if (!producer_start(prod, per_ring, &why)) {
            fmt::print(stderr, "capacity: producer: {}\n", why);
            (void)runner->stop(std::chrono::seconds(5));
            return 1;
          }
        } else {
          const uint32_t nt = std::max(1u, std::min<uint32_t>(nr, std::thread::hardware_concurrency() - 1));
          for (uint32_t t = 0; t < nt; ++t)
            producers.emplace_back([&, t] {
              // Rings t, t + nt, ...: each produced in turn, a share at a time.
              std::vector<uint32_t> mine;
              for (uint32_t i = t; i < nr; i += nt) mine.push_back(i);
              if (mine.size() == 1) {
                cpu_produce(rs.host_prod[mine[0]], per_ring, fs->refs, mine[0] * 977u);
                return;
              }
              std::vector<gnio::backend::rx_ring_writer> ws(mine.size());
              std::vector<uint64_t> done(mine.size(), 0);
              for (size_t k = 0; k < mine.size(); ++k) {
                const auto& r = rs.host_prod[mine[k]];
                ws[k].init({r.cq, r.cons, r.eos, nullptr, r.num_descs, 2048});
              }
              size_t open = mine.size();
              while (open) {
                for (size_t k = 0; k < mine.size(); ++k) {
                  if (done[k] >= per_ring) continue;
                  const uint64_t n = std::min<uint64_t>({free_now(ws[k]), 256, per_ring - done[k]});
                  for (uint64_t j = 0; j < n; ++j, ++done[k]) {
                    const frame_ref& f = fs->refs[(done[k] + mine[k] * 977u) % fs->refs.size()];
                    (void)ws[k].post(f.off, f.len, f.len, 0, f.hash, f.cls, f.flags);
                  }
                  ws[k].publish();
                  if (done[k] >= per_ring) {
                    ws[k].end_of_stream();
                    --open;
                  }
                }
              }
            });
        }
        auto we = runner->wait(std::chrono::seconds(120));
        const auto t1 = std::chrono::steady_clock::now();
        for (auto& t : producers) t.join();
        if (we) {
          fmt::print(stderr, "capacity: {} {} rings={}: {}\n", which, mem, nr, we.what());
          (void)runner->stop(std::chrono::seconds(5));
          return 1;
        }
        uint64_t counted = 0;
        if (which == "flow_count") {
          std::vector<flow_count::totals> t(nr);
          (void)g->copy_to_host(t.data(), tot, 0, sizeof(flow_count::totals) * nr);
          for (auto& x : t) counted += x.packets;
        } else {
          std::vector<gnio::pp::counters> c(nr);
          (void)g->copy_to_host(c.data(), ctr, 0, sizeof(gnio::pp::counters) * nr);
          for (auto& x : c) counted += x.packets;
        }
        *runner = {};
        producer_free(prod);
        for (auto* b : {&table, &tot, &ctr, &conv, &dns})
          if (!b->empty()) (void)g->free(*b);
        const double s = std::chrono::duration<double>(t1 - t0).count();
        const uint64_t frames = per_ring * nr;
        rows.push_back({which, mem, nr, frames, counted, s});
        fmt::print("capacity: {:<10} mem={:<4} rings={:>2}: {:>8.1f} Mpps ({:>6.1f} per ring), {:.3f} s{}\n", which,
                   mem, nr, frames / s / 1e6, frames / s / 1e6 / nr, s,
                   counted == frames ? "" : fmt::format("  COUNTED {} OF {}", counted, frames));
        if (counted != frames) rc = 1;
      }
    }
  }
  if (!json_path.empty()) {
    nlohmann::json runs = nlohmann::json::array();
    for (const auto& r : rows)
      runs.push_back({{"app", r.app},
                      {"mem", r.mem},
                      {"rings", r.rings},
                      {"frames", r.frames},
                      {"counted", r.counted},
                      {"seconds", r.seconds},
                      {"mpps", r.frames / r.seconds / 1e6},
                      {"mpps_per_ring", r.frames / r.seconds / 1e6 / r.rings}});
    nlohmann::json j{{"benchmark", "capacity"},
                     {"command", cmdline},
                     {"machine",
                      {{"host", un.nodename},
                       {"cpu", bench::cpu_model()},
                       {"cpus", std::thread::hardware_concurrency()},
                       {"device", device},
                       {"bus_id", info.bus_id}}},
                     {"inputs",
                      {{"traffic", traffic},
                       {"frames", fs->refs.size()},
                       {"completions_per_ring", per_ring},
                       {"ring", ring},
                       {"batch", batch},
                       {"threads", threads}}},
                     {"runs", runs}};
    if (h2d && pcie.gbps > 0) j["h2d_gbps"] = pcie.gbps;
    std::ofstream f(json_path);
    gnio::result_schema::stamp(j, gnio::result_schema::bench_capacity);
    f << j.dump(2) << "\n";
    if (!f) {
      fmt::print(stderr, "capacity: cannot write {}\n", json_path);
      return 1;
    }
  }
  return rc;
}
