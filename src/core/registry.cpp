// SPDX-License-Identifier: Apache-2.0

#include "gnio/backend/backend.hpp"

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
    &pcap_ops,
    &gen_ops,
    &pair_ops,
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
}

std::span<const ops* const> registered() { return k_backends; }

const ops* find(std::string_view name) {
  for (const ops* o : k_backends)
    if (name == o->name) return o;
  return nullptr;
}

}  // namespace gnio::backend
