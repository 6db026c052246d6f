// SPDX-License-Identifier: Apache-2.0
// Environment and capability checks GPU networking needs before anything else
// works, as commands with stable JSON (docs/schema/*.schema.json).
#include "diag.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/if_xdp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <gnio/backends.hpp>
#include <gnio/console.hpp>
#include <gnio/gnio.hpp>

#include "result_schema.hpp"

namespace gnio::tool {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

// Console output that never throws: a failed write is remembered and
// reported once when the program ends (gnio/console.hpp).
template <class... A>
void say(fmt::format_string<A...> f, A&&... a) {
  gnio::console::out(fmt::format(f, std::forward<A>(a)...));
}
template <class... A>
void warn(fmt::format_string<A...> f, A&&... a) {
  gnio::console::err(fmt::format(f, std::forward<A>(a)...));
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) return {};
  std::stringstream ss;
  ss << f.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

struct check {
  std::string id, title, result, evidence, remedy;  // result: pass, warn, fail, skip
  bool required = false;
};

std::string cuda_version_text(int v) { return v ? fmt::format("{}.{}", v / 1000, (v % 1000) / 10) : "unknown"; }

// CapEff bits from /proc/self/status.
uint64_t effective_caps() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("CapEff:", 0) == 0) return std::stoull(line.substr(7), nullptr, 16);
  return 0;
}

bool kernel_at_least(int major, int minor, std::string* release) {
  utsname u{};
  uname(&u);
  *release = u.release;
  int a = 0, b = 0;
  std::sscanf(u.release, "%d.%d", &a, &b);
  return a > major || (a == major && b >= minor);
}

// Drivers with native XDP in mainline Linux (generic/skb mode works everywhere).
bool native_xdp_driver(const std::string& d) {
  static const char* k[] = {"mlx5_core", "mlx4_en",    "i40e",   "ice",     "ixgbe",         "igb", "igc",
                            "bnxt_en",   "virtio_net", "veth",   "ena",     "qede",          "nfp", "tun",
                            "stmmaceth", "fec",        "mvneta", "mvpp2",   "thunder-nicvf", "sfc", "netsec",
                            "cpsw",      "dpaa2-eth",  "enetc",  "ixgbevf", "hv_netvsc",     "xsc"};
  for (const char* n : k)
    if (d == n) return true;
  return false;
}

json checks_json(const std::vector<check>& cs) {
  json a = json::array();
  for (const auto& c : cs)
    a.push_back({{"id", c.id},
                 {"title", c.title},
                 {"result", c.result},
                 {"evidence", c.evidence},
                 {"remedy", c.remedy},
                 {"required", c.required}});
  return a;
}

json gpu_json(const gpu_info& g) {
  return {{"executor", std::string(to_string(g.executor))},
          {"ordinal", g.ordinal},
          {"name", g.name},
          {"bus_id", g.bus_id},
          {"compute_capability", fmt::format("{}.{}", g.cc_major, g.cc_minor)},
          {"sms", g.num_sms},
          {"memory_bytes", g.total_mem_bytes},
          {"can_map_host_memory", g.can_map_host_memory},
          {"unified_addressing", g.unified_addressing},
          {"warp_size", g.warp_size},
          {"max_threads_per_block", g.max_threads_per_block},
          {"shared_mem_per_block", g.shared_mem_per_block},
          {"l2_cache_bytes", g.l2_cache_bytes},
          {"integrated", g.integrated},
          {"host_native_atomics", g.host_native_atomics},
          {"pageable_memory_access", g.pageable_memory_access},
          {"concurrent_managed_access", g.concurrent_managed_access},
          {"gpudirect_rdma", g.gpudirect_rdma},
          {"gpudirect_rdma_flush_writes", g.gpudirect_rdma_flush_writes},
          {"gpudirect_rdma_writes_ordering", g.gpudirect_rdma_writes_ordering},
          {"dma_buf", g.dma_buf}};
}

int run_doctor(const std::string& for_path, bool want_gpu, bool as_json) {
  std::vector<check> cs;
  auto add = [&](check c) { cs.push_back(std::move(c)); };

  // gnio itself.
  std::string names;
  for (const auto& b : list_backends())
    if (b.available) names += (names.empty() ? "" : ",") + b.name;
  add({"gnio", "gnio version and build options", "pass",
       fmt::format("gnio {}; cuda {}; backends {}", GNIO_VERSION_STRING, built_with_cuda() ? "on" : "off", names), "",
       false});

  // CUDA driver and runtime.
  const auto env = query_cuda_env();
  std::string why;
  const auto gpus = list_gpus(&why);
  if (!env.built) {
    add({"cuda_versions", "CUDA driver and runtime versions", want_gpu ? "fail" : "skip", env.error,
         "rebuild with the CUDA toolkit installed (GNIO_BUILD_CUDA=ON)", want_gpu});
  } else {
    const bool ok = env.driver_version >= env.runtime_version && env.driver_version > 0;
    add({"cuda_versions", "CUDA driver and runtime versions",
         ok ? "pass" : (env.driver_version == 0 ? (want_gpu ? "fail" : "skip") : "fail"),
         env.driver_version == 0
             ? fmt::format("no NVIDIA driver answered; runtime {}", cuda_version_text(env.runtime_version))
             : fmt::format("driver supports CUDA {}, runtime {}{}", cuda_version_text(env.driver_version),
                           cuda_version_text(env.runtime_version), env.error.empty() ? "" : "; " + env.error),
         ok ? "" : "install an NVIDIA driver that supports the CUDA runtime gnio was built with", want_gpu});
  }

  // CUDA module loading: lazy loading can keep a kernel launched beside a
  // persistent one from ever starting.
  if (env.built && env.driver_version > 0) {
    const module_loading mode = cuda_module_loading();
    const char* var = std::getenv("CUDA_MODULE_LOADING");
    const std::string ev = fmt::format("{}; CUDA_MODULE_LOADING={}", to_string(mode), var && *var ? var : "(unset)");
    add({"cuda_module_loading", "CUDA module loading (lazy loading can stall kernels launched beside a persistent one)",
         mode == module_loading::eager ? "pass" : "warn", ev,
         mode == module_loading::eager
             ? ""
             : "set CUDA_MODULE_LOADING=EAGER (gnio's programs do when it is unset), or preload every kernel launched "
               "beside a persistent kernel with gnio::preload_kernel (docs/kernels.md)",
         false});
  }

  // GPUs.
  if (gpus.empty()) {
    add({"gpus", "CUDA GPUs enumerable", want_gpu ? "fail" : "skip", why.empty() ? "no CUDA GPU" : why,
         "install the NVIDIA driver (nvidia-smi must list the GPU), or use --gpu host", want_gpu});
  } else {
    std::string ev;
    for (const auto& g : gpus)
      ev += fmt::format("{}{} {} ({}), cc {}.{}, {:.1f} GiB", ev.empty() ? "" : "; ", g.ordinal, g.name, g.bus_id,
                        g.cc_major, g.cc_minor, g.total_mem_bytes / 1073741824.0);
    bool usable = false;
    for (const auto& g : gpus)
      usable |= g.can_map_host_memory && g.cc_major * 10 + g.cc_minor >= min_compute_capability;
    add({"gpus", "CUDA GPUs enumerable", usable ? "pass" : "fail", ev,
         usable ? "" : "gnio needs compute capability 7.5+ and mapped host memory", want_gpu});
    std::string rdma;
    bool any_rdma = false;
    for (const auto& g : gpus) {
      rdma += fmt::format("{}{}: supported={} flush_writes=0x{:x} writes_ordering={}", rdma.empty() ? "" : "; ",
                          g.ordinal, g.gpudirect_rdma, g.gpudirect_rdma_flush_writes, g.gpudirect_rdma_writes_ordering);
      any_rdma |= g.gpudirect_rdma;
    }
    add({"gpudirect_rdma", "GPUDirect RDMA attributes", any_rdma ? "pass" : "warn", rdma,
         any_rdma ? "" : "only a NIC writing GPU memory directly needs it; gnio's CPU-proxy engines do not", false});
  }

  // dma-buf, and nvidia_peermem as the fallback.
  {
    std::string rel;
    const bool kernel_ok = kernel_at_least(6, 2, &rel);
    const std::string nv = read_file("/proc/driver/nvidia/version");
    const bool open_module = nv.find("Open Kernel Module") != std::string::npos;
    bool cuda_dmabuf = false;
    for (const auto& g : gpus) cuda_dmabuf |= g.dma_buf;
    const bool dmabuf = kernel_ok && open_module && cuda_dmabuf;
    const std::string mods = read_file("/proc/modules");
    const bool peermem = mods.find("nvidia_peermem") != std::string::npos;
    std::string ev =
        fmt::format("kernel {} ({} 6.2); NVIDIA module: {}; CUDA dma-buf attribute: {}; nvidia_peermem {}", rel,
                    kernel_ok ? ">=" : "<", nv.empty() ? "not loaded" : (open_module ? "open" : "proprietary"),
                    gpus.empty() ? "n/a" : (cuda_dmabuf ? "yes" : "no"), peermem ? "loaded" : "not loaded");
    std::string result = gpus.empty() ? "skip" : dmabuf ? "pass" : peermem ? "warn" : "warn";
    add({"dma_buf", "GPU memory registration for NICs (dma-buf, else nvidia_peermem)", result, ev,
         dmabuf    ? ""
         : peermem ? "dma-buf is unavailable; nvidia_peermem is loaded and serves as the fallback"
                   : "for NIC-direct GPU memory: kernel >= 6.2 with the open NVIDIA module, or load nvidia_peermem; "
                     "gnio's CPU-proxy backends work without either",
         false});
  }

  // Hugepages (DPDK).
  {
    const std::string mi = read_file("/proc/meminfo");
    auto field = [&](const char* k) {
      auto p = mi.find(k);
      return p == std::string::npos ? 0L : std::atol(mi.c_str() + p + std::strlen(k));
    };
    const long total = field("HugePages_Total:"), free_ = field("HugePages_Free:"), size_kb = field("Hugepagesize:");
    // gnio's default EAL arguments use --no-huge (virtual devices); a PCI NIC
    // through eal= wants hugepages, so their absence is a warning, not a failure.
    add({"hugepages", "hugepages (DPDK)", total > 0 ? "pass" : "warn",
         fmt::format("{} total, {} free, {} kB each", total, free_, size_kb),
         total > 0 ? ""
                   : "echo 1024 > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages (for DPDK with a PCI NIC; "
                     "gnio's default EAL arguments run virtual devices without them)",
         for_path == "dpdk"});
  }

  // Network interfaces.
  {
    std::string ev;
    int up = 0;
    for (const auto& e : fs::directory_iterator("/sys/class/net", fs::directory_options::skip_permission_denied)) {
      const std::string n = e.path().filename();
      std::error_code ec;
      auto drv = fs::read_symlink(e.path() / "device/driver", ec);
      std::string driver = ec ? (fs::exists(e.path() / "bridge") ? "bridge"
                                 : n == "lo"                     ? "loopback"
                                                                 : "virtual")
                              : drv.filename().string();
      if (driver == "virtual" && fs::exists("/sys/class/net/" + n + "/veth") == false) {
        // veth has no device/ link; its peer index file tells it apart.
        if (!read_file("/sys/class/net/" + n + "/iflink").empty() &&
            read_file("/sys/class/net/" + n + "/iflink") != read_file("/sys/class/net/" + n + "/ifindex"))
          driver = "veth";
      }
      const std::string state = read_file(e.path() / "operstate");
      if (state == "up" || state == "unknown") ++up;
      size_t nq = 0;
      for (const auto& q : fs::directory_iterator(e.path() / "queues", ec))
        nq += q.path().filename().string().rfind("rx-", 0) == 0;
      ev +=
          fmt::format("{}{}: driver {}, {}, mtu {}, {} rx queue(s), XDP {}", ev.empty() ? "" : "; ", n, driver, state,
                      read_file(e.path() / "mtu"), nq, native_xdp_driver(driver) ? "native+generic" : "generic (skb)");
    }
    const bool need = for_path == "af_packet" || for_path == "af_xdp" || for_path == "dpdk";
    add({"interfaces", "network interfaces, drivers and XDP support", up > 0 ? "pass" : (need ? "fail" : "warn"), ev,
         up > 0 ? "" : "bring an interface up: ip link set DEV up", need});
  }

  // AF_XDP and libxdp, DPDK.
  {
    const bool xdp_backend = backend_available("af_xdp");
    int fd = socket(AF_XDP, SOCK_RAW, 0);
    const int err = errno;
    if (fd >= 0) close(fd);
    const std::string sock =
        fd >= 0 ? "AF_XDP sockets available" : fmt::format("socket(AF_XDP): {}", std::strerror(err));
    add({"af_xdp", "AF_XDP (libxdp) backend",
         xdp_backend && fd >= 0 ? "pass" : (for_path == "af_xdp" ? "fail" : "warn"),
         fmt::format("backend {}; {}", xdp_backend ? "built (libxdp + libbpf)" : "not built", sock),
         xdp_backend ? (fd >= 0 ? "" : "run as root or grant CAP_NET_RAW; the kernel needs CONFIG_XDP_SOCKETS")
                     : "apt-get install libxdp-dev libbpf-dev and rebuild",
         for_path == "af_xdp"});
    const bool dpdk_backend = backend_available("dpdk");
    const bool testpmd = fs::exists("/usr/bin/dpdk-testpmd");
    add({"dpdk", "DPDK backend", dpdk_backend ? "pass" : (for_path == "dpdk" ? "fail" : "skip"),
         fmt::format("gnio dpdk backend {}; dpdk-testpmd {}", dpdk_backend ? "built" : "not in this build",
                     testpmd ? "installed" : "not installed"),
         dpdk_backend ? "" : "this gnio build has no dpdk backend; use af_xdp or af_packet", for_path == "dpdk"});
    const bool pcap_ok = backend_available("pcap");
    add({"pcap", "pcap backend (libpcap)", pcap_ok ? "pass" : "fail", pcap_ok ? "built with libpcap" : "missing", "",
         for_path == "pcap"});
    if (for_path == "af_packet") {
      const bool afp = backend_available("af_packet");
      add({"af_packet", "AF_PACKET backend", afp ? "pass" : "fail", afp ? "built" : "not in this build",
           afp ? "" : "rebuild with GNIO_BACKEND_AF_PACKET=ON", true});
    }
  }

  // Privileges.
  {
    const uint64_t caps = effective_caps();
    auto has = [&](int bit) { return (caps >> bit) & 1u; };
    rlimit ml{};
    getrlimit(RLIMIT_MEMLOCK, &ml);
    const bool raw = has(13), admin = has(12), bpf = has(39) || has(21);
    const std::string ev = fmt::format(
        "uid {}; CAP_NET_RAW {}; CAP_NET_ADMIN {}; CAP_BPF/CAP_SYS_ADMIN {}; memlock {}", getuid(), raw ? "yes" : "no",
        admin ? "yes" : "no", bpf ? "yes" : "no",
        ml.rlim_cur == RLIM_INFINITY ? std::string("unlimited") : fmt::format("{} KiB", ml.rlim_cur / 1024));
    bool ok = true;
    if (for_path == "af_packet") ok = raw;
    if (for_path == "af_xdp" || for_path == "dpdk") ok = raw && admin && bpf;
    const bool need = for_path == "af_packet" || for_path == "af_xdp" || for_path == "dpdk";
    add({"privileges", "privileges for raw sockets and XDP", ok ? (raw && admin ? "pass" : "warn") : "fail", ev,
         ok && raw && admin ? "" : "run as root, or setcap cap_net_raw,cap_net_admin,cap_bpf+ep on the binary", need});
  }

  bool usable = true;
  for (const auto& c : cs)
    if (c.required && c.result == "fail") usable = false;

  if (as_json) {
    json j{{"schema", result_schema::doctor.schema},
           {"version", result_schema::doctor.version},
           {"gnio", {{"version", GNIO_VERSION_STRING}, {"cuda", built_with_cuda()}}},
           {"for", for_path.empty() ? json(nullptr) : json(for_path)},
           {"gpu_required", want_gpu},
           {"usable", usable},
           {"checks", checks_json(cs)}};
    json gj = json::array();
    for (const auto& g : gpus) gj.push_back(gpu_json(g));
    j["gpus"] = gj;
    gnio::console::out(j.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
  } else {
    for (const auto& c : cs) {
      say("[{:<4}] {}{}\n        {}\n", c.result, c.title, c.required ? " (required)" : "", c.evidence);
      if (!c.remedy.empty() && c.result != "pass") say("        -> {}\n", c.remedy);
    }
    say("\n{}: {}\n", for_path.empty() ? std::string("gnio") : "path " + for_path + (want_gpu ? " + gpu" : ""),
        usable ? "usable" : "NOT usable (see the failed required checks above)");
  }
  return usable ? 0 : 1;
}

int run_caps(const std::string& gpu_sel, const std::string& dev, bool as_json) {
  auto g = gpu::open(gpu_sel);
  if (!g) {
    warn("gnio caps: gpu: {}\n", g.err().what());
    return 1;
  }
  auto p = port::open(*g, dev);
  if (!p) {
    warn("gnio caps: port: {}\n", p.err().what());
    return 1;
  }
  const auto& pc = p->caps();
  const std::string backend_name = dev.substr(0, dev.find(':'));
  const auto verdicts = evaluate_caps(pc, backend_name, g->info(), built_with_cuda());
  int supported = 0;
  for (const auto& v : verdicts) supported += v.code == status::success;
  if (as_json) {
    json j{{"schema", result_schema::caps.schema},
           {"version", result_schema::caps.version},
           {"port",
            {{"device", dev},
             {"backend", backend_name},
             {"rx", pc.rx},
             {"tx", pc.tx},
             {"max_rx_queues", pc.max_rx_queues},
             {"max_tx_queues", pc.max_tx_queues},
             {"max_pkt_bytes", pc.max_pkt_bytes},
             {"min_ring_descs", pc.min_ring_descs},
             {"max_ring_descs", pc.max_ring_descs},
             {"rx_timestamps", pc.rx_timestamps},
             {"finite", pc.finite},
             {"hw_steering", pc.hw_steering},
             {"ipv4_csum_offload", pc.ipv4_csum_offload},
             {"l4_csum_offload", pc.l4_csum_offload},
             {"tx_time", to_string(pc.tx_time)}}},
           {"device", gpu_json(g->info())}};
    json v = json::array();
    for (const auto& x : verdicts)
      v.push_back({{"feature", to_string(x.feature)},
                   {"supported", x.code == status::success},
                   {"status", std::string(to_string(x.code))},
                   {"reason", x.reason}});
    j["verdicts"] = v;
    gnio::console::out(j.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
  } else {
    say("port {}: rx {}, tx {}, queues rx {} tx {}, max frame {} B, ring {}..{}, timestamps {}, {}, timed tx {}\n", dev,
        pc.rx, pc.tx, pc.max_rx_queues, pc.max_tx_queues, pc.max_pkt_bytes, pc.min_ring_descs, pc.max_ring_descs,
        pc.rx_timestamps, pc.finite ? "finite source" : "live source", to_string(pc.tx_time));
    const auto& i = g->info();
    say("device {} ({}): cc {}.{}, {} SMs, map host memory {}, unified addressing {}, GPUDirect RDMA {}\n", i.name,
        to_string(i.executor), i.cc_major, i.cc_minor, i.num_sms, i.can_map_host_memory, i.unified_addressing,
        i.gpudirect_rdma);
    for (const auto& x : verdicts)
      say("  {:<15} {:<14} {}\n", to_string(x.feature), x.code == status::success ? "supported" : "not_supported",
          x.reason);
  }
  (void)p->close();
  return 0;
}

int run_explain(const std::string& what, bool as_json) {
  status s;
  if (!parse_status(what, s)) {
    warn(
        "gnio explain: '{}' is not a gnio status code or name (0..{}, e.g. bad_state or DOCA_ERROR_BAD_STATE); "
        "`gnio explain --all` lists them\n",
        gnio::printable(what), num_statuses - 1);
    return 2;
  }
  const auto& d = describe(s);
  if (as_json) {
    gnio::console::out(json{{"schema", result_schema::explain.schema},
                            {"version", result_schema::explain.version},
                            {"code", static_cast<int>(s)},
                            {"name", std::string(d.name)},
                            {"meaning", std::string(d.meaning)},
                            {"layer", std::string(to_string(d.where))},
                            {"next", std::string(d.next)}}
                           .dump(2) +
                       "\n");
  } else {
    say("{} ({}): {}\nusual layer: {}\ncheck next: {}\n", d.name, static_cast<int>(s), d.meaning, to_string(d.where),
        d.next);
  }
  return 0;
}

}  // namespace

void add_diag_commands(CLI::App& app, int* exit_code) {
  auto* doctor = app.add_subcommand("doctor",
                                    "check every precondition for GPU packet I/O: pass / warn / fail / skip, "
                                    "with the evidence read and the remedy");
  static std::string for_path;
  static bool want_gpu = false, doctor_json = false;
  doctor->add_option("--for", for_path, "the path to judge usable: pcap, af_packet, af_xdp or dpdk")
      ->check(CLI::IsMember({"pcap", "af_packet", "af_xdp", "dpdk"}));
  doctor->add_flag("--gpu", want_gpu, "also require a usable CUDA GPU");
  doctor->add_flag("--json", doctor_json, "print JSON (schema: docs/schema/doctor.schema.json)");
  doctor->footer("Exit status: 0 when the requested path (and --gpu) is usable, 1 when not.");
  doctor->callback([exit_code] { *exit_code = run_doctor(for_path, want_gpu, doctor_json); });

  auto* caps = app.add_subcommand("caps",
                                  "dual capability check: the port's queue capabilities and the device's, "
                                  "with a verdict per feature");
  static std::string caps_gpu = "auto", caps_port;
  static bool caps_json = false;
  caps->add_option("--gpu", caps_gpu, "GPU selector: ordinal, PCIe bus id, host or auto")->capture_default_str();
  caps->add_option("--port", caps_port, "device string, e.g. pcap:file=x.pcap or af_xdp:if=eth0")->required();
  caps->add_flag("--json", caps_json, "print JSON (schema: docs/schema/caps.schema.json)");
  caps->callback([exit_code] { *exit_code = run_caps(caps_gpu, caps_port, caps_json); });

  auto* explain =
      app.add_subcommand("explain", "what a status code means, where it usually comes from, what to check next");
  static std::string code;
  static bool explain_json = false, all = false;
  explain->add_option("code", code, "a status number, name (bad_state) or DOCA name (DOCA_ERROR_BAD_STATE)");
  explain->add_flag("--all", all, "list every status code");
  explain->add_flag("--json", explain_json, "print JSON (schema: docs/schema/explain.schema.json)");
  explain->footer("Exit status: 0 for a known code, 2 for unknown input.");
  explain->callback([exit_code] {
    if (all) {
      if (!code.empty()) {
        warn("gnio explain: --all lists every code; give it alone or give one code ('{}' was given too)\n",
             gnio::printable(code));
        *exit_code = 2;
        return;
      }
      if (explain_json) {
        json list = json::array();
        for (const auto& d : all_statuses())
          list.push_back({{"code", static_cast<int>(d.code)},
                          {"name", std::string(d.name)},
                          {"meaning", std::string(d.meaning)},
                          {"layer", std::string(to_string(d.where))},
                          {"next", std::string(d.next)}});
        gnio::console::out(json{{"schema", result_schema::explain_all.schema},
                                {"version", result_schema::explain_all.version},
                                {"statuses", list}}
                               .dump(2) +
                           "\n");
      } else {
        for (const auto& d : all_statuses())
          say("{:>2} {:<22} {:<8} {}\n", static_cast<int>(d.code), d.name, to_string(d.where), d.meaning);
      }
      *exit_code = 0;
      return;
    }
    if (code.empty()) {
      warn("gnio explain: give a status code or name, or --all\n");
      *exit_code = 2;
      return;
    }
    *exit_code = run_explain(code, explain_json);
  });
}

}  // namespace gnio::tool
