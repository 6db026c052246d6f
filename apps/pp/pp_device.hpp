// SPDX-License-Identifier: Apache-2.0
// gnio pp, device side: the kernel body and its per-packet logic, by role:
//   pp_device_base.hpp  limits and timeouts shared by all parts
//   pp_count.hpp        counting, as tshark counts
//   pp_http_server.hpp  the HTTP server's pages and segments
//   pp_reply.hpp        ICMP echo, ARP and HTTP replies
//   pp_kernel.hpp       the kernel loop (both executors), counters, reports
#pragma once

#include "pp_count.hpp"
#include "pp_device_base.hpp"
#include "pp_http_server.hpp"
#include "pp_kernel.hpp"
#include "pp_reply.hpp"
