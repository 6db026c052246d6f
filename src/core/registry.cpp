// SPDX-License-Identifier: Apache-2.0
#include <array>

#include "gnio/backend/backend.hpp"

namespace gnio::backend {

extern const ops pcap_ops;
extern const ops gen_ops;
extern const ops pair_ops;

namespace {
const std::array<const ops*, 3> k_backends{&pcap_ops, &gen_ops, &pair_ops};
}

std::span<const ops* const> registered() { return k_backends; }

const ops* find(std::string_view name) {
  for (const ops* o : k_backends)
    if (name == o->name) return o;
  return nullptr;
}

}  // namespace gnio::backend
