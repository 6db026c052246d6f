// SPDX-License-Identifier: Apache-2.0
// Header-only packet decoding shared by CUDA kernels and the host executor:
// this umbrella includes every header of gnio/device/pkt/.
//
//   load.hpp      bounds-checked big-endian loads (pkt_view)
//   build.hpp     big-endian stores and FNV-1a, for code that builds frames
//   proto.hpp     protocol constants, parsed_pkt, pkt_error, encapsulations
//   ether.hpp     Ethernet and VLAN tags, the EtherType dispatch
//   ip.hpp        IPv4, IPv6 (extension headers), ARP
//   l4.hpp        TCP (options), UDP, ICMP, ICMPv6
//   tunnel.hpp    GRE/ERSPAN, VXLAN, GENEVE, GTP-U, MPLS, PPPoE, L2TP
//   parse.hpp     parse() and parse_l3(): the walk through all of the above
//   flow_key.hpp  flow keys and the Toeplitz (RSS) hash
//   csum.hpp      the Internet checksum
//   dns.hpp       DNS headers and names
//   http.hpp      HTTP/1.x request and response lines
//
// Not included here, as they keep state in caller-provided executor memory:
//   frag.hpp      IPv4/IPv6 fragment reassembly
//   stream.hpp    TCP stream framing of HTTP and DNS-over-TCP messages
//
// One convention throughout: a decoder of a whole packet returns false when
// it found a problem and records the first one in parsed_pkt::error; a reader
// of one field returns an enum class error (none on success) and hands its
// results back through out-parameters.
#pragma once

#include <gnio/device/pkt/build.hpp>
#include <gnio/device/pkt/csum.hpp>
#include <gnio/device/pkt/dns.hpp>
#include <gnio/device/pkt/flow_key.hpp>
#include <gnio/device/pkt/http.hpp>
#include <gnio/device/pkt/load.hpp>
#include <gnio/device/pkt/parse.hpp>
#include <gnio/device/pkt/proto.hpp>
