// SPDX-License-Identifier: Apache-2.0
// Writes the fuzz targets' seed corpora: fuzz_seeds OUT_DIR
//
// From every pcap/pcapng capture under tests/data: the capture itself (pcap),
// its Ethernet frames (parse), runs of frames (flow_table), TCP option bytes
// (tcp_options), DNS messages over UDP and TCP (dns), TCP payloads (http),
// runs of its IPv4/IPv6 fragments (frag, in that target's record format,
// with a few runs of made fragments that complete datagrams) and the segments
// of each TCP connection in fuzz/stream.cpp's format (stream); the device
// strings of fuzz/devargs.seeds, one per line (devargs). Files are
// named by a hash of their bytes, so a rerun rewrites the same seeds.
#include <gnio/device/pkt/stream.hpp>
#include <pcap/pcap.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace gnio::device;

namespace {

using bytes = std::vector<uint8_t>;

struct sink {
  fs::path dir;
  size_t max_files;
  std::set<uint64_t> seen;

  void add(const uint8_t* p, size_t n) {
    if (seen.size() >= max_files) return;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
    if (!seen.insert(h).second) return;
    char name[32];
    std::snprintf(name, sizeof name, "%016llx", static_cast<unsigned long long>(h));
    std::ofstream(dir / name, std::ios::binary)
        .write(reinterpret_cast<const char*>(p), static_cast<std::streamsize>(n));
  }
  void add(const bytes& b) { add(b.data(), b.size()); }
};

// One TCP connection as fuzz_stream reads it: a mode byte (1: DNS), then per
// segment a head (direction and flags, the sequence offset from what the
// direction expects, the payload length, 0 bytes lost) and the payload.
struct stream_run {
  bytes b;
  uint32_t next[2] = {0, 0};
  bool seen[2] = {false, false};

  void add(const parsed_pkt& pp, uint32_t dir, const uint8_t* pl, uint32_t n) {
    if (b.size() + 6 + n > 8192) return;
    const uint16_t f = pp.tcp.flags;
    const uint32_t seq = pp.tcp.seq;
    int32_t delta = seen[dir] ? static_cast<int32_t>(seq - next[dir]) : 0;
    if (delta > 32767) delta = 32767;
    if (delta < -32768) delta = -32768;
    seen[dir] = true;
    next[dir] = seq + n + ((f & (tcp_syn | tcp_fin)) ? 1u : 0u);
    const uint8_t head = static_cast<uint8_t>(dir | ((f & tcp_syn) ? 2 : 0) | ((f & tcp_fin) ? 4 : 0) |
                                              ((f & tcp_rst) ? 8 : 0) | ((f & tcp_ack) ? 0 : 0x10));
    const uint16_t d16 = static_cast<uint16_t>(static_cast<int16_t>(delta));
    for (uint8_t v : {head, static_cast<uint8_t>(d16 >> 8), static_cast<uint8_t>(d16), static_cast<uint8_t>(n >> 8),
                      static_cast<uint8_t>(n), uint8_t{0}})
      b.push_back(v);
    b.insert(b.end(), pl, pl + n);
  }
};

bool is_capture(const fs::path& p) {
  const std::string e = p.extension().string();
  return e == ".pcap" || e == ".pcapng" || e == ".cap";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_seeds OUT_DIR\n");
    return 2;
  }
  const fs::path out = argv[1];
  auto make = [&](const char* name, size_t max_files) {
    fs::create_directories(out / name);
    return sink{out / name, max_files, {}};
  };
  sink pcap_s = make("pcap", 400), parse_s = make("parse", 3000), flow_s = make("flow_table", 400),
       tcpo_s = make("tcp_options", 1000), dns_s = make("dns", 1500), http_s = make("http", 1000),
       dev_s = make("devargs", 1000), frag_s = make("frag", 400), stream_s = make("stream", 400);

  // frag: made fragments (an odd first byte, then family/id, offset, length,
  // flags, fill, clock step) cutting one datagram per family into 3 pieces,
  // in order and reversed.
  for (uint8_t family = 0; family < 3; ++family) {
    auto rec = [&](bytes& b, uint16_t off_units, uint8_t len_units, bool more) {
      b.insert(b.end(), {1, static_cast<uint8_t>(family | 4), static_cast<uint8_t>(off_units >> 8),
                         static_cast<uint8_t>(off_units), len_units, static_cast<uint8_t>(more), 0, 1});
    };
    bytes fwd, rev;
    rec(fwd, 0, 12, true), rec(fwd, 12, 12, true), rec(fwd, 24, 5, false);
    rec(rev, 24, 5, false), rec(rev, 12, 12, true), rec(rev, 0, 12, true);
    frag_s.add(fwd);
    frag_s.add(rev);
  }

  std::vector<fs::path> captures;
  for (const auto& e : fs::recursive_directory_iterator(GNIO_TEST_DATA_DIR))
    if (e.is_regular_file() && is_capture(e.path())) captures.push_back(e.path());
  std::sort(captures.begin(), captures.end());

  for (const auto& path : captures) {
    {
      std::ifstream in(path, std::ios::binary);
      bytes file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (file.size() > 65536) file.resize(65536);  // the pcap target's -max_len
      if (!file.empty()) pcap_s.add(file);
    }
    char err[PCAP_ERRBUF_SIZE];
    pcap_t* p = pcap_open_offline(path.c_str(), err);
    if (!p) continue;
    if (pcap_datalink(p) != DLT_EN10MB) {
      pcap_close(p);
      continue;
    }
    bytes run, frag_run;
    std::map<std::string, stream_run> conns;  // by canonical flow key bytes
    pcap_pkthdr* h;
    const u_char* d;
    while (pcap_next_ex(p, &h, &d) == 1) {
      const uint32_t len = h->caplen;
      parse_s.add(d, len);
      if (run.size() + len + 2 <= 8192 && len <= 0xffff) {
        run.push_back(static_cast<uint8_t>(len >> 8));
        run.push_back(static_cast<uint8_t>(len));
        run.insert(run.end(), d, d + len);
      }
      parsed_pkt pp;
      parse(d, len, pp);
      if (pp.is_fragment && frag_run.size() + len + 3 <= 4096 && len <= 0xffff) {
        frag_run.push_back(0);  // a frame record
        frag_run.push_back(static_cast<uint8_t>(len >> 8));
        frag_run.push_back(static_cast<uint8_t>(len));
        frag_run.insert(frag_run.end(), d, d + len);
        if (frag_run.size() > 2048) {
          frag_s.add(frag_run);
          frag_run.clear();
        }
      }
      if (pp.l4 == l4_kind::tcp && pp.tcp.hdr_len > 20 && pp.l4_off + pp.tcp.hdr_len <= len)
        tcpo_s.add(d + pp.l4_off + 20, pp.tcp.hdr_len - 20u);
      if (pp.l4 == l4_kind::tcp && pp.payload_off + pp.payload_len <= len && pp.payload_len <= 0xffff) {
        const flow_key k = make_flow_key(pp), ck = canonical_flow_key(k);
        stream_run& r = conns[std::string(reinterpret_cast<const char*>(&ck), sizeof ck)];
        if (r.b.empty()) r.b.push_back(pp.src_port == 53 || pp.dst_port == 53 ? 1 : 0);
        r.add(pp, stream_dir(k, ck), d + pp.payload_off, pp.payload_len);
      }
      if (pp.payload_len == 0 || pp.payload_off + pp.payload_len > len) continue;
      const uint8_t* pl = d + pp.payload_off;
      const uint32_t pn = pp.payload_len;
      dns_header dh;
      const bool dns_port = pp.src_port == 53 || pp.dst_port == 53 || pp.src_port == 5353 || pp.dst_port == 5353 ||
                            pp.src_port == 8053 || pp.dst_port == 8053;
      if (pp.l4 == l4_kind::udp && (dns_port || (dns_parse_header(pl, pn, dh) && dns_header_sane(dh, pn))))
        dns_s.add(pl, pn);
      if (pp.l4 == l4_kind::tcp && dns_port && pn > 2) dns_s.add(pl + 2, pn - 2);  // after the length prefix
      if (pp.l4 == l4_kind::tcp && (http_classify(pl, pn) != http_kind::not_http || pp.dst_port == 80))
        http_s.add(pl, pn < 4096 ? pn : 4096);
    }
    if (!run.empty()) flow_s.add(run);
    if (!frag_run.empty()) frag_s.add(frag_run);
    for (const auto& [key, r] : conns)
      if (r.b.size() > 1) stream_s.add(r.b);
    pcap_close(p);
  }

  std::ifstream seeds(fs::path(GNIO_FUZZ_DIR) / "devargs.seeds");
  for (std::string line; std::getline(seeds, line);)
    if (!line.empty() && line[0] != '#') dev_s.add(reinterpret_cast<const uint8_t*>(line.data()), line.size());

  for (const sink* s : {&pcap_s, &parse_s, &flow_s, &tcpo_s, &dns_s, &http_s, &dev_s, &frag_s, &stream_s})
    std::printf("fuzz_seeds: %zu seeds in %s\n", s->seen.size(), s->dir.c_str());
  return 0;
}
