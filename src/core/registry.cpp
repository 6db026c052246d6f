// SPDX-License-Identifier: Apache-2.0

#include "gnio/backend/backend.hpp"
#include "gnio/backends.hpp"

namespace gnio::backend {

extern const ops pcap_ops;
extern const ops gen_ops;
extern const ops pair_ops;
#if defined(GNIO_HAVE_AF_PACKET)
extern const ops af_packet_ops;
#endif
#if defined(GNIO_HAVE_AF_XDP)
extern const ops af_xdp_ops;
#endif
#if defined(GNIO_HAVE_DPDK)
extern const ops dpdk_ops;
#endif

namespace {
const ops* const k_backends[] = {
    &pcap_ops,      &gen_ops, &pair_ops,
#if defined(GNIO_HAVE_AF_PACKET)
    &af_packet_ops,
#endif
#if defined(GNIO_HAVE_AF_XDP)
    &af_xdp_ops,
#endif
#if defined(GNIO_HAVE_DPDK)
    &dpdk_ops,
#endif
};
}  // namespace

std::span<const ops* const> registered() { return k_backends; }

const ops* find(std::string_view name) {
  for (const ops* o : k_backends)
    if (name == o->name) return o;
  return nullptr;
}

}  // namespace gnio::backend

namespace gnio {

std::vector<backend_info> list_backends() {
  std::vector<backend_info> out;
  for (const backend::ops* o : backend::k_backends)
    out.push_back({o->name, o->summary ? o->summary : "", o->options ? o->options : "", true, ""});
  // Built only where their libraries were found when gnio was configured.
  const struct {
    const char* name;
    const char* summary;
    const char* needs;
  } optional[] = {
      {"af_packet", "Linux AF_PACKET sockets (TPACKET_V3 RX ring, TX ring) on a network interface",
       "gnio was built for a system without AF_PACKET (Linux only)"},
      {"af_xdp", "Linux AF_XDP sockets (UMEM shared with the kernel, zero-copy where the driver has it)",
       "gnio was configured without libxdp and libbpf (apt-get install libxdp-dev libbpf-dev, then configure again; "
       "GNIO_BACKEND_AF_XDP=ON makes their absence an error)"},
      {"dpdk", "DPDK poll-mode drivers (mbufs handed over by reference)",
       "gnio was configured without DPDK (apt-get install dpdk-dev, then configure again; GNIO_BACKEND_DPDK=ON makes "
       "its absence an error)"},
  };
  for (const auto& o : optional)
    if (backend::find(o.name) == nullptr) out.push_back({o.name, o.summary, "", false, o.needs});
  return out;
}

bool backend_available(const std::string& name) { return backend::find(name) != nullptr; }

std::string common_backend_options() {
  return "overflow=drop|wait       full RX ring: drop and count (default for live sources) or wait (default for files "
         "and counted generators)\n"
         "tx_pcap=PATH             also write every transmitted frame to this pcap file\n"
         "engine_poll=adaptive|busy  an idle engine thread spins 200 us after its last frame, then sleeps 20-200 us "
         "(adaptive, the default), or never sleeps (busy: lowest latency, a core kept busy)\n";
}

}  // namespace gnio
