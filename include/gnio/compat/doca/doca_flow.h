/* SPDX-License-Identifier: Apache-2.0
 *
 * gnio DOCA compatibility layer. gnio is not affiliated with, sponsored or
 * endorsed by NVIDIA. This header implements an API compatible with part of
 * NVIDIA DOCA, written from public documentation and the call sites of
 * public samples (docs/doca-compat.md); it contains no text from NVIDIA SDK
 * headers. DOCA is a trademark of NVIDIA Corporation.
 *
 * The subset of DOCA Flow that steers received packets to GPU queues, mapped
 * onto gnio's software steering (gnio::port::set_steering): a root CONTROL
 * pipe whose entries forward to BASIC pipes, matches on the L3/L4 protocol
 * (parser_meta, outer.eth.type, outer.l3_type, outer.ip4.next_proto,
 * outer.l4_type_ext), RSS or DROP forwarding. Anything a packet class cannot
 * express (addresses, ports, TCP flags, actions, modify headers) returns
 * DOCA_ERROR_NOT_SUPPORTED. Packets no entry forwards are dropped (and
 * counted by gnio as unsteered). The steering takes effect when
 * doca_flow_entries_process runs with a root pipe in place, and the gnio port
 * starts then (docs/doca-compat.md).
 */
#ifndef GNIO_COMPAT_DOCA_FLOW_H
#define GNIO_COMPAT_DOCA_FLOW_H

#include <stdbool.h>
#include <stdint.h>

#include "doca_compat.h"
#include "doca_dev.h"
#include "doca_error.h"

GNIO_DOCA_BEGIN_C

typedef uint16_t doca_be16_t;
typedef uint32_t doca_be32_t;

#define DOCA_FLOW_ETHER_TYPE_IPV4 0x0800
#define DOCA_FLOW_ETHER_TYPE_IPV6 0x86DD
#define DOCA_FLOW_ETHER_TYPE_ARP 0x0806

struct doca_flow_cfg;
struct doca_flow_port_cfg;
struct doca_flow_port;
struct doca_flow_pipe_cfg;
struct doca_flow_pipe;
struct doca_flow_pipe_entry;
struct doca_flow_actions;
struct doca_flow_action_descs;
struct doca_flow_match_condition;

enum doca_flow_l3_meta {
  DOCA_FLOW_L3_META_NONE = 0,
  DOCA_FLOW_L3_META_IPV4,
  DOCA_FLOW_L3_META_IPV6,
};

enum doca_flow_l4_meta {
  DOCA_FLOW_L4_META_NONE = 0,
  DOCA_FLOW_L4_META_TCP,
  DOCA_FLOW_L4_META_UDP,
  DOCA_FLOW_L4_META_ICMP,
  DOCA_FLOW_L4_META_ESP,
};

enum doca_flow_l3_type {
  DOCA_FLOW_L3_TYPE_NONE = 0,
  DOCA_FLOW_L3_TYPE_IP4,
  DOCA_FLOW_L3_TYPE_IP6,
};

enum doca_flow_l4_type_ext {
  DOCA_FLOW_L4_TYPE_EXT_NONE = 0,
  DOCA_FLOW_L4_TYPE_EXT_TCP,
  DOCA_FLOW_L4_TYPE_EXT_UDP,
  DOCA_FLOW_L4_TYPE_EXT_ICMP,
  DOCA_FLOW_L4_TYPE_EXT_ICMP6,
};

enum doca_flow_fwd_type {
  DOCA_FLOW_FWD_NONE = 0,
  DOCA_FLOW_FWD_RSS,
  DOCA_FLOW_FWD_PORT,
  DOCA_FLOW_FWD_PIPE,
  DOCA_FLOW_FWD_DROP,
  DOCA_FLOW_FWD_TARGET,
  DOCA_FLOW_FWD_ORDERED_LIST_PIPE,
  DOCA_FLOW_FWD_CHANGEABLE,
};

enum doca_flow_resource_type {
  DOCA_FLOW_RESOURCE_TYPE_NONE = 0,
  DOCA_FLOW_RESOURCE_TYPE_SHARED,
  DOCA_FLOW_RESOURCE_TYPE_NON_SHARED,
};

enum doca_flow_rss_type {
  DOCA_FLOW_RSS_IPV4 = 1 << 0,
  DOCA_FLOW_RSS_IPV6 = 1 << 1,
  DOCA_FLOW_RSS_UDP = 1 << 2,
  DOCA_FLOW_RSS_TCP = 1 << 3,
  DOCA_FLOW_RSS_ESP = 1 << 4,
};

enum doca_flow_pipe_type {
  DOCA_FLOW_PIPE_BASIC = 0,
  DOCA_FLOW_PIPE_CONTROL,
  DOCA_FLOW_PIPE_LPM,
  DOCA_FLOW_PIPE_CT,
  DOCA_FLOW_PIPE_ACL,
  DOCA_FLOW_PIPE_ORDERED_LIST,
  DOCA_FLOW_PIPE_HASH,
};

enum doca_flow_flags_type {
  DOCA_FLOW_NO_WAIT = 0,
  DOCA_FLOW_WAIT_FOR_BATCH = 1,
};
#define DOCA_FLOW_ENTRY_FLAGS_NO_WAIT DOCA_FLOW_NO_WAIT
#define DOCA_FLOW_ENTRY_FLAGS_WAIT_FOR_BATCH DOCA_FLOW_WAIT_FOR_BATCH

/* Header fields a match may name. gnio steers on the protocol fields only;
 * an entry whose match sets any other field is refused (NOT_SUPPORTED). */
struct doca_flow_header_eth {
  uint8_t src_mac[6];
  uint8_t dst_mac[6];
  doca_be16_t type; /* network byte order */
};

struct doca_flow_header_ip4 {
  doca_be32_t src_ip;
  doca_be32_t dst_ip;
  uint8_t next_proto; /* IPPROTO_UDP, IPPROTO_TCP, IPPROTO_ICMP */
  uint8_t ttl;
  uint8_t dscp_ecn;
};

struct doca_flow_header_l4_port {
  doca_be16_t src_port;
  doca_be16_t dst_port;
};

struct doca_flow_header_udp {
  struct doca_flow_header_l4_port l4_port;
};

struct doca_flow_header_tcp {
  struct doca_flow_header_l4_port l4_port;
  uint8_t flags;
};

struct doca_flow_parser_meta {
  enum doca_flow_l3_meta outer_l3_type;
  enum doca_flow_l4_meta outer_l4_type;
};

struct doca_flow_header_format {
  struct doca_flow_header_eth eth;
  enum doca_flow_l3_type l3_type;
  struct doca_flow_header_ip4 ip4;
  enum doca_flow_l4_type_ext l4_type_ext;
  struct doca_flow_header_udp udp;
  struct doca_flow_header_tcp tcp;
};

struct doca_flow_match {
  struct doca_flow_parser_meta parser_meta;
  struct doca_flow_header_format outer;
};

struct doca_flow_monitor {
  enum doca_flow_resource_type counter_type;
};

struct doca_flow_resource_rss_cfg {
  uint32_t outer_flags; /* DOCA_FLOW_RSS_*: gnio always hashes the 5-tuple */
  uint32_t inner_flags;
  uint16_t* queues_array; /* queue numbers from doca_eth_rxq_apply_queue_id */
  int nr_queues;
};

struct doca_flow_fwd {
  enum doca_flow_fwd_type type;
  enum doca_flow_resource_type rss_type;
  struct doca_flow_resource_rss_cfg rss;
  struct doca_flow_pipe* next_pipe; /* DOCA_FLOW_FWD_PIPE */
};

/* Library */
doca_error_t doca_flow_cfg_create(struct doca_flow_cfg** cfg);
doca_error_t doca_flow_cfg_destroy(struct doca_flow_cfg* cfg);
doca_error_t doca_flow_cfg_set_pipe_queues(struct doca_flow_cfg* cfg, uint16_t pipe_queues);
doca_error_t doca_flow_cfg_set_mode_args(struct doca_flow_cfg* cfg, const char* mode_args);
doca_error_t doca_flow_cfg_set_nr_counters(struct doca_flow_cfg* cfg, uint32_t nr_counters);
doca_error_t doca_flow_init(const struct doca_flow_cfg* cfg);
void doca_flow_destroy(void);

/* Ports: one per device, bound to the gnio port of the device's queues. */
doca_error_t doca_flow_port_cfg_create(struct doca_flow_port_cfg** cfg);
doca_error_t doca_flow_port_cfg_destroy(struct doca_flow_port_cfg* cfg);
doca_error_t doca_flow_port_cfg_set_port_id(struct doca_flow_port_cfg* cfg, uint16_t port_id);
doca_error_t doca_flow_port_cfg_set_dev(struct doca_flow_port_cfg* cfg, struct doca_dev* dev);
doca_error_t doca_flow_port_start(const struct doca_flow_port_cfg* cfg, struct doca_flow_port** port);
doca_error_t doca_flow_port_stop(struct doca_flow_port* port);

/* Pipes */
doca_error_t doca_flow_pipe_cfg_create(struct doca_flow_pipe_cfg** cfg, struct doca_flow_port* port);
doca_error_t doca_flow_pipe_cfg_destroy(struct doca_flow_pipe_cfg* cfg);
doca_error_t doca_flow_pipe_cfg_set_name(struct doca_flow_pipe_cfg* cfg, const char* name);
doca_error_t doca_flow_pipe_cfg_set_type(struct doca_flow_pipe_cfg* cfg, enum doca_flow_pipe_type type);
doca_error_t doca_flow_pipe_cfg_set_is_root(struct doca_flow_pipe_cfg* cfg, bool is_root);
doca_error_t doca_flow_pipe_cfg_set_nr_entries(struct doca_flow_pipe_cfg* cfg, uint32_t nr_entries);
doca_error_t doca_flow_pipe_cfg_set_match(struct doca_flow_pipe_cfg* cfg, const struct doca_flow_match* match,
                                          const struct doca_flow_match* match_mask);
doca_error_t doca_flow_pipe_cfg_set_monitor(struct doca_flow_pipe_cfg* cfg, const struct doca_flow_monitor* monitor);
doca_error_t doca_flow_pipe_create(const struct doca_flow_pipe_cfg* cfg, const struct doca_flow_fwd* fwd,
                                   const struct doca_flow_fwd* fwd_miss, struct doca_flow_pipe** pipe);
void doca_flow_pipe_destroy(struct doca_flow_pipe* pipe);

doca_error_t doca_flow_pipe_basic_add_entry(uint16_t pipe_queue, struct doca_flow_pipe* pipe,
                                            const struct doca_flow_match* match, uint8_t action_idx,
                                            const struct doca_flow_actions* actions,
                                            const struct doca_flow_monitor* monitor, const struct doca_flow_fwd* fwd,
                                            uint32_t flags, void* usr_ctx, struct doca_flow_pipe_entry** entry);
doca_error_t doca_flow_pipe_control_add_entry(
    uint16_t pipe_queue, struct doca_flow_pipe* pipe, const struct doca_flow_match* match,
    const struct doca_flow_match* match_mask, const struct doca_flow_match_condition* condition,
    const struct doca_flow_actions* actions, const struct doca_flow_actions* actions_mask,
    const struct doca_flow_action_descs* action_descs, const struct doca_flow_monitor* monitor, uint32_t priority,
    const struct doca_flow_fwd* fwd, void* usr_ctx, struct doca_flow_pipe_entry** entry);
doca_error_t doca_flow_pipe_remove_entry(uint16_t pipe_queue, uint32_t flags, struct doca_flow_pipe_entry* entry);
/* Applies the entries: compiles the port's pipes into gnio steering. */
doca_error_t doca_flow_entries_process(struct doca_flow_port* port, uint16_t pipe_queue, uint64_t timeout,
                                       uint32_t max_processed_entries);

GNIO_DOCA_END_C

#endif
