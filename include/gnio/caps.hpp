// SPDX-License-Identifier: Apache-2.0
// Capabilities a backend reports for its queues.
#pragma once

#include <cstdint>

namespace gnio {

struct port_caps {
  bool rx = false;
  bool tx = false;
  uint32_t max_rx_queues = 0;
  uint32_t max_tx_queues = 0;
  uint32_t max_pkt_bytes = 0;     // largest frame it can deliver or send
  uint32_t min_ring_descs = 0;
  uint32_t max_ring_descs = 0;
  bool rx_timestamps = false;     // real receive/capture timestamps
  bool finite = false;            // the source ends by itself (a file, a count)
  bool hw_steering = false;       // steering done by the NIC, not in software
  bool ipv4_csum_offload = false;
  bool l4_csum_offload = false;
};

}  // namespace gnio
