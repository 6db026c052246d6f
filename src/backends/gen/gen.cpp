// SPDX-License-Identifier: Apache-2.0
// gen: a synthetic traffic source for benchmarks and tests.
//
// It feeds the GPU receive-rate benchmark, so the per-frame path does no
// checksum work, no parsing and no allocation: open() builds every frame it
// can up front (one template per flow and frame size) and works out each
// flow's steering (class and RSS hash) once, and rx_burst copies a template
// straight into the RX buffer the lane reserves for it. When templates would
// take too much memory (many flows times many sizes), open() keeps a 64-byte
// header per flow plus precomputed partial checksums instead, and each frame
// is built in its RX buffer: the header, the payload pattern, and a few
// additions to patch lengths and checksums for its size.
//
// Frames are a pure function of the options: flow order, sizes and TCP
// sequence numbers come from the seed, never from time, so the same device
// string gives the same frame sequence whatever the pacing. Headers are fixed
// per flow (IP ID, TCP and ICMP sequence numbers do not advance), which is what
// lets frames be prebuilt; each flow has one protocol, so a 5-tuple is a flow.
//
// rx_burst is meant for one engine thread; the counters may be read from any.

#include <arpa/inet.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "gnio/backend/backend.hpp"
#include "gnio/device/pkt.hpp"
#include "gnio/backend/log.hpp"

namespace gnio::backend {

extern const ops gen_ops;

namespace {

namespace dev = gnio::device;

constexpr uint32_t min_frame_bytes = 60;  // Ethernet minimum without FCS
constexpr uint32_t max_frame_bytes = 9000;
constexpr uint32_t max_flows = 1u << 20;
// Above this, templates give way to per-frame header patching.
constexpr size_t template_budget_bytes = 64u << 20;
constexpr uint32_t hdr_rec_bytes = 64;  // holds the longest header: 14 + 4 + 20 + 20
// Preamble + SFD (8), FCS (4) and inter-frame gap (12): what a bps rate must
// count so that "10Gbps" of 64-byte frames means 14.88 Mpps, as on a real link.
constexpr uint32_t wire_overhead_bytes = 24;

enum proto_idx : uint8_t { p_udp = 0, p_tcp = 1, p_icmp = 2, num_protos = 3 };
constexpr uint8_t proto_number[num_protos] = {dev::ipproto_udp, dev::ipproto_tcp, dev::ipproto_icmp};
constexpr uint32_t l4_hdr_bytes[num_protos] = {8, 20, 8};
constexpr const char* proto_name[num_protos] = {"udp", "tcp", "icmp"};

enum class size_kind : uint8_t { fixed, range, imix };

constexpr uint16_t dst_port = 9;              // discard: nothing should answer synthetic traffic
constexpr uint32_t default_src = 0xC6120000;  // 198.18.0.0, RFC 2544 benchmarking range
constexpr uint32_t default_dst = 0xC6130001;  // 198.19.0.1

struct free_deleter {
  void operator()(uint8_t* p) const noexcept { std::free(p); }
};
using aligned_buf = std::unique_ptr<uint8_t[], free_deleter>;

aligned_buf alloc_aligned(size_t bytes) {
  bytes = (bytes + 63) & ~size_t{63};
  return aligned_buf(static_cast<uint8_t*>(std::aligned_alloc(64, bytes ? bytes : 64)));
}

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Lemire's multiply-shift: unbiased enough for traffic shaping, and no division.
uint32_t bounded(uint64_t& state, uint32_t n) { return static_cast<uint32_t>(((splitmix64(state) >> 32) * n) >> 32); }

using dev::put16;
using dev::put32;

// The payload pattern is the same for every flow so that one prefix-sum table
// serves the checksum patching of all of them.
uint8_t payload_byte(uint32_t k) { return static_cast<uint8_t>(k); }

struct flow_meta {
  uint32_t ip_sum;  // IPv4 header sum with total length and checksum zeroed
  uint32_t l4_sum;  // L4 header (+ pseudo-header) sum with lengths, checksum and payload left out
  uint8_t proto;
};

struct gen_port {
  // Options.
  size_kind kind = size_kind::fixed;
  std::vector<uint32_t> sizes{64};
  uint32_t num_flows = 1024;
  uint64_t count = 0;  // 0: no limit
  uint64_t duration_ns = 0;
  double pps = 0, bps = 0;
  uint64_t seed = 1;
  bool has_vlan = false;
  uint16_t vlan_id = 0;
  uint32_t src_base = default_src, dst_ip = default_dst;
  uint32_t weight[num_protos] = {1, 0, 0};

  uint32_t l2_bytes = 14;

  // Prebuilt frames, indexed [size][slot]; slot s carries flow order[s].
  bool use_templates = false;
  aligned_buf templates;
  std::vector<size_t> tmpl_off;
  std::vector<uint32_t> tmpl_stride;

  // Steering of the flow in each slot, as the engine would compute it.
  std::vector<steer_info> steer;

  // Patching mode: per-slot header record and sums, one scratch frame per protocol.
  aligned_buf hdr_recs;
  std::vector<flow_meta> meta;
  std::vector<uint32_t> payload_sum;  // [n]: ones-complement sum of the first n payload bytes
  aligned_buf scratch[num_protos];

  // Rate limits for the whole port; each stream gets its share.
  double tokens_per_ns = 0, bucket_depth = 0;
  int64_t t0_ns = 0;

  // One stream per engine lane (one unless the core asked for lanes): lane L
  // of N emits the flows in slots L, L+N, L+2N, ... and count/N frames, so
  // lanes never share a flow.
  struct stream {
    uint32_t lane = 0, step = 1;
    uint32_t slot = 0;
    uint32_t next_size = 0;  // chosen ahead so that a bps budget can be checked before emitting
    uint64_t size_rng = 0;
    uint64_t emitted = 0;
    uint64_t count = 0;  // this stream's share of count; 0: no limit
    double tokens = 0, tokens_per_ns = 0, bucket_depth = 0;
    int64_t last_refill_ns = 0;
    aligned_buf cut;  // patching mode: a whole frame, for buffers shorter than it
    // One writer (the lane's engine thread), so a relaxed store suffices.
    std::atomic<uint64_t> rx_frames{0}, rx_bytes{0};
  };
  std::vector<std::unique_ptr<stream>> streams;

  // tx uses fetch_add in case several threads transmit.
  std::atomic<uint64_t> tx_frames{0}, tx_bytes{0};
};

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
uint64_t realtime_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

// ---------------------------------------------------------------------------
// Option parsing
// ---------------------------------------------------------------------------

bool parse_u32(std::string_view s, uint32_t* out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return !s.empty() && ec == std::errc{} && p == s.data() + s.size();
}

error parse_size(const devargs& a, gen_port& g) {
  const std::string* v = a.find("size");
  if (!v) return {};
  if (*v == "imix") {
    g.kind = size_kind::imix;
    g.sizes = {64, 576, 1500};
    return {};
  }
  std::string_view s = *v;
  auto dash = s.find('-');
  uint32_t lo = 0, hi = 0;
  bool ok;
  if (dash == std::string_view::npos) {
    ok = parse_u32(s, &lo);
    hi = lo;
  } else {
    ok = parse_u32(s.substr(0, dash), &lo) && parse_u32(s.substr(dash + 1), &hi);
  }
  if (!ok)
    return fail(status::invalid_value, "{}: size={} is not a frame size (N, MIN-MAX or imix, bytes without FCS)",
                a.name, *v);
  auto in_range = [](uint32_t x) { return x >= min_frame_bytes && x <= max_frame_bytes; };
  if (!in_range(lo) || !in_range(hi))
    return fail(status::invalid_value, "{}: size={} is out of range [{}, {}]", a.name, *v, min_frame_bytes,
                max_frame_bytes);
  if (lo > hi) return fail(status::invalid_value, "{}: size={}: the range must go from small to large", a.name, *v);
  g.sizes.clear();
  for (uint32_t n = lo; n <= hi; ++n) g.sizes.push_back(n);
  g.kind = lo == hi ? size_kind::fixed : size_kind::range;
  return {};
}

// mix=udp | tcp | icmp | all | PROTO[WEIGHT]/PROTO[WEIGHT]...  (e.g. udp70/tcp20/icmp10)
error parse_mix(const devargs& a, gen_port& g) {
  const std::string* v = a.find("mix");
  if (!v) return {};
  constexpr const char* hint = "use udp, tcp, icmp, all or weighted parts like udp70/tcp20/icmp10";
  if (*v == "all") {
    std::fill(std::begin(g.weight), std::end(g.weight), 1u);
    return {};
  }
  uint32_t w[num_protos] = {0, 0, 0};
  bool seen[num_protos] = {false, false, false};
  std::string_view rest = *v;
  if (rest.empty()) return fail(status::invalid_value, "{}: option mix= needs a value ({})", a.name, hint);
  while (true) {
    auto slash = rest.find('/');
    std::string_view part = rest.substr(0, slash);
    size_t digits = part.find_first_of("0123456789");
    std::string_view name = part.substr(0, digits);
    int p = -1;
    for (int i = 0; i < num_protos; ++i)
      if (name == proto_name[i]) p = i;
    if (p < 0) return fail(status::invalid_value, "{}: mix={}: unknown protocol '{}' ({})", a.name, *v, part, hint);
    if (seen[p]) return fail(status::invalid_value, "{}: mix={}: '{}' given twice", a.name, *v, name);
    seen[p] = true;
    uint32_t weight = 1;
    if (digits != std::string_view::npos && (!parse_u32(part.substr(digits), &weight) || weight > 1000000))
      return fail(status::invalid_value, "{}: mix={}: weight in '{}' is not a number in [0, 1000000]", a.name, *v,
                  part);
    w[p] = weight;
    if (slash == std::string_view::npos) break;
    rest = rest.substr(slash + 1);
  }
  if (w[0] + w[1] + w[2] == 0) return fail(status::invalid_value, "{}: mix={}: all weights are zero", a.name, *v);
  std::copy(std::begin(w), std::end(w), std::begin(g.weight));
  return {};
}

error parse_ipv4(const devargs& a, std::string_view key, uint32_t* out) {
  const std::string* v = a.find(key);
  if (!v) return {};
  in_addr addr{};
  if (inet_pton(AF_INET, v->c_str(), &addr) != 1)
    return fail(status::invalid_value, "{}: {}={} is not an IPv4 address (A.B.C.D)", a.name, key, *v);
  *out = ntohl(addr.s_addr);
  return {};
}

error parse_options(const devargs& a, gen_port& g) {
  if (auto e = check_keys(a, {"size", "flows", "count", "duration", "mix", "rate", "seed", "vlan", "src", "dst"}))
    return e;
  if (auto e = parse_size(a, g)) return e;
  uint64_t flows = g.num_flows;
  if (auto e = get_u64(a, "flows", 1, max_flows, &flows)) return e;
  g.num_flows = static_cast<uint32_t>(flows);
  if (auto e = get_u64(a, "count", 1, UINT64_MAX, &g.count)) return e;
  if (auto e = get_duration_ns(a, "duration", &g.duration_ns)) return e;
  if (auto e = parse_mix(a, g)) return e;
  if (auto e = get_rate(a, "rate", &g.pps, &g.bps)) return e;
  if (auto e = get_u64(a, "seed", 0, UINT64_MAX, &g.seed)) return e;
  uint64_t vlan = 0;
  if (auto e = get_u64(a, "vlan", 1, 4094, &vlan)) return e;
  if (a.find("vlan")) {
    g.has_vlan = true;
    g.vlan_id = static_cast<uint16_t>(vlan);
    g.l2_bytes = 18;
  }
  if (auto e = parse_ipv4(a, "src", &g.src_base)) return e;
  if (auto e = parse_ipv4(a, "dst", &g.dst_ip)) return e;
  return {};
}

// ---------------------------------------------------------------------------
// Frame building (open time only)
// ---------------------------------------------------------------------------

// src IP and src port both vary so that any 5-tuple hash spreads the flows.
// 65536 and 64511 are coprime, so (i mod 65536, i mod 64511) differs for every
// flow index below their product, far above max_flows.
uint32_t flow_src_ip(const gen_port& g, uint32_t flow) { return g.src_base + (flow & 0xffffu); }
uint16_t flow_src_port(uint32_t flow) { return static_cast<uint16_t>(1024 + flow % 64511); }

uint32_t flow_tcp_seq(const gen_port& g, uint32_t flow) {
  uint64_t s = g.seed ^ (uint64_t{flow} << 32) ^ 0x7c9e5a3bull;
  return static_cast<uint32_t>(splitmix64(s));
}

// Writes a complete, checksummed frame of len bytes.
void build_frame(const gen_port& g, uint32_t flow, uint8_t proto, uint32_t len, uint8_t* f) {
  static constexpr uint8_t dst_mac[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x02};
  static constexpr uint8_t src_mac[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
  std::memcpy(f, dst_mac, 6);
  std::memcpy(f + 6, src_mac, 6);
  uint8_t* p = f + 12;
  if (g.has_vlan) {
    put16(p, dev::ethertype_vlan);
    put16(p + 2, g.vlan_id);
    p += 4;
  }
  put16(p, dev::ethertype_ipv4);
  uint8_t* ip = p + 2;
  const uint32_t ip_len = len - g.l2_bytes;
  const uint32_t src = flow_src_ip(g, flow);
  ip[0] = 0x45;
  ip[1] = 0;
  put16(ip + 2, ip_len);
  put16(ip + 4, flow & 0xffffu);
  put16(ip + 6, 0x4000);  // DF: these frames are never fragments
  ip[8] = 64;
  ip[9] = proto_number[proto];
  put16(ip + 10, 0);
  put32(ip + 12, src);
  put32(ip + 16, g.dst_ip);
  put16(ip + 10, dev::ipv4_header_checksum(ip, 20));

  uint8_t* l4 = ip + 20;
  const uint32_t l4_len = ip_len - 20;
  const uint16_t sport = flow_src_port(flow);
  uint32_t csum_off = 0;
  switch (proto) {
    case p_udp:
      put16(l4, sport);
      put16(l4 + 2, dst_port);
      put16(l4 + 4, l4_len);
      put16(l4 + 6, 0);
      csum_off = 6;
      break;
    case p_tcp:
      put16(l4, sport);
      put16(l4 + 2, dst_port);
      put32(l4 + 4, flow_tcp_seq(g, flow));
      put32(l4 + 8, 1);
      l4[12] = 5 << 4;
      l4[13] = dev::tcp_ack | dev::tcp_psh;
      put16(l4 + 14, 0xffff);
      put16(l4 + 16, 0);
      put16(l4 + 18, 0);
      csum_off = 16;
      break;
    default:
      l4[0] = 8;  // echo request
      l4[1] = 0;
      put16(l4 + 2, 0);
      put16(l4 + 4, sport);  // identifier: spreads ICMP flows for hashes that read it
      put16(l4 + 6, 1);
      csum_off = 2;
      break;
  }
  const uint32_t hdr = l4_hdr_bytes[proto];
  for (uint32_t k = 0; k < l4_len - hdr; ++k) l4[hdr + k] = payload_byte(k);
  uint16_t c = dev::l4_checksum_ipv4(src, g.dst_ip, proto_number[proto], l4, l4_len);
  if (proto == p_udp && c == 0) c = 0xffff;  // 0 would mean "no checksum"
  put16(l4 + csum_off, c);
}

// The header sums of build_frame's output minus everything that depends on
// the frame length, so patch_frame can add those back per frame.
flow_meta frame_sums(const gen_port& g, uint8_t proto, const uint8_t* f) {
  uint8_t ip[20];
  std::memcpy(ip, f + g.l2_bytes, 20);
  put16(ip + 2, 0);
  put16(ip + 10, 0);
  uint8_t l4[20];
  std::memcpy(l4, f + g.l2_bytes + 20, l4_hdr_bytes[proto]);
  uint32_t seed = 0;
  switch (proto) {
    case p_udp:
      put16(l4 + 4, 0);
      put16(l4 + 6, 0);
      seed = dev::pseudo_header_ipv4(dev::detail::rd32(ip + 12), dev::detail::rd32(ip + 16), dev::ipproto_udp, 0);
      break;
    case p_tcp:
      put16(l4 + 16, 0);
      seed = dev::pseudo_header_ipv4(dev::detail::rd32(ip + 12), dev::detail::rd32(ip + 16), dev::ipproto_tcp, 0);
      break;
    default: put16(l4 + 2, 0); break;
  }
  // csum_partial returns any 32-bit value; folding to 16 bits keeps the
  // per-frame additions in patch_frame from overflowing.
  auto fold16 = [](uint32_t s) { return static_cast<uint32_t>(static_cast<uint16_t>(~dev::csum_fold(s))); };
  return flow_meta{fold16(dev::csum_partial(ip, 20, 0)), fold16(dev::csum_partial(l4, l4_hdr_bytes[proto], seed)),
                   proto};
}

// Smooth weighted round-robin: exact proportions, evenly interleaved, so any
// prefix of the flow list is already close to the requested mix.
std::vector<uint8_t> assign_protocols(const gen_port& g) {
  std::vector<uint8_t> out(g.num_flows);
  int64_t cur[num_protos] = {0, 0, 0};
  const int64_t total = int64_t{g.weight[0]} + g.weight[1] + g.weight[2];
  for (auto& o : out) {
    int best = -1;
    for (int p = 0; p < num_protos; ++p) {
      if (g.weight[p] == 0) continue;
      cur[p] += g.weight[p];
      if (best < 0 || cur[p] > cur[best]) best = p;
    }
    cur[best] -= total;
    o = static_cast<uint8_t>(best);
  }
  return out;
}

error build(gen_port& g) {
  const uint32_t n = g.num_flows;
  // Shuffled so that consecutive frames do not walk neighbouring addresses,
  // which would flatter caches and hashes downstream.
  std::vector<uint32_t> order(n);
  for (uint32_t i = 0; i < n; ++i) order[i] = i;
  uint64_t rng = g.seed ^ 0x5eedf10e5ull;
  for (uint32_t i = n; i > 1; --i) std::swap(order[i - 1], order[bounded(rng, i)]);
  const std::vector<uint8_t> proto = assign_protocols(g);

  size_t total = 0;
  for (uint32_t len : g.sizes) {
    const uint32_t stride = (len + 63) & ~63u;
    g.tmpl_off.push_back(total);
    g.tmpl_stride.push_back(stride);
    total += size_t{stride} * n;
  }
  g.use_templates = total <= template_budget_bytes;
  g.steer.resize(n);
  if (g.use_templates) {
    g.templates = alloc_aligned(total);
    if (!g.templates) return fail(status::no_memory, "gen: cannot allocate {} bytes of frame templates", total);
    for (size_t k = 0; k < g.sizes.size(); ++k)
      for (uint32_t s = 0; s < n; ++s)
        build_frame(g, order[s], proto[order[s]], g.sizes[k],
                    g.templates.get() + g.tmpl_off[k] + size_t{s} * g.tmpl_stride[k]);
    // Headers do not depend on the size: the first size's frames tell every flow's steering.
    for (uint32_t s = 0; s < n; ++s)
      g.steer[s] = steer_of(g.templates.get() + g.tmpl_off[0] + size_t{s} * g.tmpl_stride[0], g.sizes[0]);
    return {};
  }

  const uint32_t max_len = *std::max_element(g.sizes.begin(), g.sizes.end());
  g.hdr_recs = alloc_aligned(size_t{hdr_rec_bytes} * n);
  for (auto& b : g.scratch) b = alloc_aligned(std::max(max_len, hdr_rec_bytes));
  if (!g.hdr_recs || !g.scratch[0] || !g.scratch[1] || !g.scratch[2])
    return fail(status::no_memory, "gen: cannot allocate frame headers for {} flows", n);
  g.meta.resize(n);
  uint8_t frame[hdr_rec_bytes];
  for (uint32_t s = 0; s < n; ++s) {
    build_frame(g, order[s], proto[order[s]], hdr_rec_bytes, frame);
    std::memcpy(g.hdr_recs.get() + size_t{s} * hdr_rec_bytes, frame, hdr_rec_bytes);
    g.meta[s] = frame_sums(g, proto[order[s]], frame);
    g.steer[s] = steer_of(frame, hdr_rec_bytes);
  }
  for (int p = 0; p < num_protos; ++p) {
    const uint32_t off = g.l2_bytes + 20 + l4_hdr_bytes[p];
    for (uint32_t k = 0; off + k < max_len; ++k) g.scratch[p][off + k] = payload_byte(k);
  }
  g.payload_sum.resize(max_len + 1);
  g.payload_sum[0] = 0;
  // Odd prefixes pad the last byte into the high half of a word; the next
  // byte then fills its low half.
  for (uint32_t k = 1; k <= max_len; ++k)
    g.payload_sum[k] = g.payload_sum[k - 1] + (k % 2 ? uint32_t{payload_byte(k - 1)} << 8 : payload_byte(k - 1));
  return {};
}

// ---------------------------------------------------------------------------
// Hot path
// ---------------------------------------------------------------------------

// Writes the len-byte frame of slot s at f. Sums stay below 2^32: folded
// header sums plus <= 4500 payload words of 0xffff.
void patch_frame(const gen_port& g, uint32_t s, uint32_t len, uint8_t* f) {
  const flow_meta& m = g.meta[s];
  std::memcpy(f, g.hdr_recs.get() + size_t{s} * hdr_rec_bytes, hdr_rec_bytes);
  if (len > hdr_rec_bytes)
    std::memcpy(f + hdr_rec_bytes, g.scratch[m.proto].get() + hdr_rec_bytes, len - hdr_rec_bytes);
  uint8_t* ip = f + g.l2_bytes;
  const uint32_t ip_len = len - g.l2_bytes;
  put16(ip + 2, ip_len);
  put16(ip + 10, dev::csum_fold(m.ip_sum + ip_len));
  uint8_t* l4 = ip + 20;
  const uint32_t l4_len = ip_len - 20;
  const uint32_t pay = g.payload_sum[l4_len - l4_hdr_bytes[m.proto]];
  switch (m.proto) {
    case p_udp: {
      put16(l4 + 4, l4_len);
      uint16_t c = dev::csum_fold(m.l4_sum + 2 * l4_len + pay);  // pseudo-header and UDP length field
      put16(l4 + 6, c ? c : 0xffff);
      break;
    }
    case p_tcp: put16(l4 + 16, dev::csum_fold(m.l4_sum + l4_len + pay)); break;
    default: put16(l4 + 2, dev::csum_fold(m.l4_sum + pay)); break;
  }
}

uint32_t pick_size(const gen_port& g, gen_port::stream& st) {
  switch (g.kind) {
    case size_kind::fixed: return 0;
    case size_kind::range: return bounded(st.size_rng, static_cast<uint32_t>(g.sizes.size()));
    case size_kind::imix: {
      const uint32_t r = bounded(st.size_rng, 12);  // 7:4:1
      return r < 7 ? 0 : r < 11 ? 1 : 2;
    }
  }
  return 0;
}

double frame_bits(uint32_t len) { return static_cast<double>(len + wire_overhead_bytes) * 8; }

// ---------------------------------------------------------------------------
// Ops
// ---------------------------------------------------------------------------

error make_streams(gen_port& g, uint32_t lanes) {
  if (lanes == 0 || lanes > g.num_flows)
    return fail(status::invalid_value, "gen: {} lanes need at least as many flows (flows={})", lanes, g.num_flows);
  g.streams.clear();
  for (uint32_t l = 0; l < lanes; ++l) {
    auto st = std::make_unique<gen_port::stream>();
    st->lane = l;
    st->step = lanes;
    st->slot = l;
    // Lane 0 keeps the single-stream sequence, so lanes=1 changes nothing.
    st->size_rng = (g.seed ^ 0x512e5eedull) + 0x9e3779b97f4a7c15ull * l;
    st->next_size = pick_size(g, *st);
    if (g.count) st->count = g.count / lanes + (l < g.count % lanes ? 1 : 0);
    st->tokens_per_ns = g.tokens_per_ns / lanes;
    st->bucket_depth = g.bucket_depth / lanes;
    if (!g.use_templates) {
      const uint32_t max_len = *std::max_element(g.sizes.begin(), g.sizes.end());
      st->cut = alloc_aligned(std::max(max_len, hdr_rec_bytes));
      if (!st->cut) return fail(status::no_memory, "gen: cannot allocate frames for {} lanes", lanes);
    }
    g.streams.push_back(std::move(st));
  }
  return {};
}

error gen_open(const devargs& args, void** priv) {
  try {
    auto g = std::make_unique<gen_port>();
    if (auto e = parse_options(args, *g)) return e;
    if (auto e = build(*g)) return e;
    const double rate_per_s = g->pps > 0 ? g->pps : g->bps;
    const double max_cost = g->pps > 0 ? 1.0 : frame_bits(g->sizes.back());
    g->tokens_per_ns = rate_per_s / 1e9;
    // About 1 ms of traffic absorbs an engine that polls late without letting
    // an idle spell turn into a long line-rate burst.
    g->bucket_depth = std::max(rate_per_s * 1e-3, 32 * max_cost);
    if (auto e = make_streams(*g, 1)) return e;
    log(log_level::debug, "gen: {} flows, {} frame size(s), {}", g->num_flows, g->sizes.size(),
        g->use_templates ? "prebuilt templates" : "patched headers");
    *priv = g.release();
    return {};
  } catch (const std::bad_alloc&) {
    return fail(status::no_memory, "gen: out of memory building frames for '{}'; try fewer flows or sizes", args.text);
  }
}

void gen_get_caps(void* priv, port_caps* caps) {
  const auto& g = *static_cast<gen_port*>(priv);
  *caps = port_caps{};
  caps->rx = true;
  caps->tx = true;
  caps->max_rx_queues = 64;
  caps->max_tx_queues = 64;
  caps->max_pkt_bytes = max_frame_bytes;
  caps->min_ring_descs = 2;
  caps->max_ring_descs = 1u << 20;
  caps->rx_timestamps = false;  // stamps are the time of the burst, not of a wire event
  caps->finite = g.count != 0 || g.duration_ns != 0;
}

error gen_start(void* priv) {
  auto& g = *static_cast<gen_port*>(priv);
  g.t0_ns = steady_ns();
  for (auto& st : g.streams) {
    st->last_refill_ns = g.t0_ns;
    st->tokens = 0;
  }
  return {};
}

error gen_set_lanes(void* priv, uint32_t lanes) { return make_streams(*static_cast<gen_port*>(priv), lanes); }

status burst(gen_port& g, gen_port::stream& st, rx_lane& lane, uint32_t budget, uint32_t* produced) {
  *produced = 0;
  if (st.count != 0 && st.emitted >= st.count) return status::shutdown;
  const bool paced = st.tokens_per_ns > 0;
  if (paced || g.duration_ns != 0) {
    const int64_t now = steady_ns();
    if (g.duration_ns != 0 && static_cast<uint64_t>(now - g.t0_ns) >= g.duration_ns) return status::shutdown;
    if (paced) {
      st.tokens =
          std::min(st.bucket_depth, st.tokens + static_cast<double>(now - st.last_refill_ns) * st.tokens_per_ns);
      st.last_refill_ns = now;
    }
  }
  uint64_t n = budget;
  if (st.count != 0) n = std::min(n, st.count - st.emitted);
  if (g.pps > 0) n = std::min(n, static_cast<uint64_t>(st.tokens));
  if (g.bps > 0 && st.tokens < frame_bits(g.sizes[st.next_size])) n = 0;
  if (n == 0) return budget == 0 ? status::success : status::again;

  const uint64_t ts = realtime_ns();
  const uint32_t flows = g.num_flows;
  uint32_t slot = st.slot;
  const uint32_t step = st.step, first = st.lane;
  uint32_t i = 0;
  uint64_t bytes = 0;
  if (g.use_templates && g.kind == size_kind::fixed && g.bps == 0) {
    const uint8_t* base = g.templates.get();
    const uint32_t len = g.sizes[0], stride = g.tmpl_stride[0];
    const steer_info* steer = g.steer.data();
    for (; i < n; ++i) {
      uint32_t cut = 0;
      if (uint8_t* dst = lane.reserve(steer[slot], len, &cut)) {
        std::memcpy(dst, base + size_t{slot} * stride, cut);
        lane.commit(len, ts + i);
      }
      if ((slot += step) >= flows) slot = first;
    }
    bytes = uint64_t{len} * n;
  } else {
    for (; i < n; ++i) {
      const uint32_t k = st.next_size;
      const uint32_t len = g.sizes[k];
      if (g.bps > 0) {
        const double cost = frame_bits(len);
        if (cost > st.tokens) break;
        st.tokens -= cost;
      }
      uint32_t cut = 0;
      if (uint8_t* dst = lane.reserve(g.steer[slot], len, &cut)) {
        if (g.use_templates) {
          std::memcpy(dst, g.templates.get() + g.tmpl_off[k] + size_t{slot} * g.tmpl_stride[k], cut);
        } else if (cut == len) {
          patch_frame(g, slot, len, dst);
        } else {
          patch_frame(g, slot, len, st.cut.get());
          std::memcpy(dst, st.cut.get(), cut);
        }
        lane.commit(len, ts + i);
      }
      bytes += len;
      if ((slot += step) >= flows) slot = first;
      st.next_size = pick_size(g, st);
    }
  }
  if (g.pps > 0) st.tokens -= static_cast<double>(i);
  st.slot = slot;
  st.emitted += i;
  st.rx_frames.store(st.rx_frames.load(std::memory_order_relaxed) + i, std::memory_order_relaxed);
  st.rx_bytes.store(st.rx_bytes.load(std::memory_order_relaxed) + bytes, std::memory_order_relaxed);
  *produced = i;
  return status::success;
}

status gen_rx_burst(void* priv, rx_lane& lane, uint32_t budget, uint32_t* produced) {
  auto& g = *static_cast<gen_port*>(priv);
  *produced = 0;
  if (lane.index() >= g.streams.size()) return status::invalid_value;
  return burst(g, *g.streams[lane.index()], lane, budget, produced);
}

// The gen port's wire is a sink: transmitted frames are counted and dropped.
error gen_tx_burst(void* priv, const tx_frame* frames, uint32_t n, uint32_t* sent) {
  auto& g = *static_cast<gen_port*>(priv);
  uint64_t bytes = 0;
  for (uint32_t i = 0; i < n; ++i) bytes += frames[i].len;
  g.tx_frames.fetch_add(n, std::memory_order_relaxed);
  g.tx_bytes.fetch_add(bytes, std::memory_order_relaxed);
  *sent = n;
  return {};
}

error gen_stop(void*) { return {}; }

void gen_close(void* priv) { delete static_cast<gen_port*>(priv); }

void gen_get_counters(void* priv, counters* c) {
  const auto& g = *static_cast<gen_port*>(priv);
  *c = counters{};
  for (const auto& st : g.streams) {
    c->rx_frames += st->rx_frames.load(std::memory_order_relaxed);
    c->rx_bytes += st->rx_bytes.load(std::memory_order_relaxed);
  }
  c->tx_frames = g.tx_frames.load(std::memory_order_relaxed);
  c->tx_bytes = g.tx_bytes.load(std::memory_order_relaxed);
}

}  // namespace

const ops gen_ops = {
    .size = sizeof(ops),
    .name = "gen",
    .summary =
        "synthetic Ethernet/IPv4 UDP, TCP and ICMP traffic with valid checksums; transmitted frames are "
        "counted and dropped",
    .options =
        "size=N|MIN-MAX|imix  frame bytes without FCS, 60..9000 (default 64); MIN-MAX picks a size uniformly per\n"
        "                     frame; imix is 64/576/1500 in the ratio 7:4:1\n"
        "flows=N              distinct 5-tuples, 1..1048576 (default 1024); source IP and source port vary per flow\n"
        "mix=SPEC             protocol of each flow: udp, tcp (ACK|PSH data), icmp (echo request), all (equal\n"
        "                     thirds), or weighted parts joined by '/', e.g. udp70/tcp20/icmp10 (default udp)\n"
        "count=N              deliver N frames, then end of stream (without count or duration: endless)\n"
        "duration=T           run for T after start (500ms, 10s, 1m), then end of stream\n"
        "rate=R               pace to R packets or bits per second: 500kpps, 2Mpps, 10Gbps (10G is ambiguous and\n"
        "                     refused; a plain number is pps); bits are counted as on the wire, 24 bytes of FCS,\n"
        "                     preamble and gap per frame included (default: unpaced)\n"
        "seed=N               seed for flow order, frame sizes and TCP sequence numbers (default 1)\n"
        "vlan=ID              add an 802.1Q tag with VLAN ID 1..4094\n"
        "src=A.B.C.D          base source address; flow i uses base + i mod 65536 (default 198.18.0.0)\n"
        "dst=A.B.C.D          destination address (default 198.19.0.1)\n",
    .open = gen_open,
    .get_caps = gen_get_caps,
    .set_lanes = gen_set_lanes,
    .start = gen_start,
    .rx_burst = gen_rx_burst,
    .tx_burst = gen_tx_burst,
    .stop = gen_stop,
    .close = gen_close,
    .get_counters = gen_get_counters,
};

}  // namespace gnio::backend
