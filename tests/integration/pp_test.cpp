// SPDX-License-Identifier: Apache-2.0
// gnio pp end to end: counts against tshark's (tests/data/MANIFEST.tsv and
// the corpus in tests/data/corpus), echo replies checked by tshark, the HTTP
// server on the pair backend with a scripted client, malformed captures, and
// the `gnio pp` command line.
//
// Environment: GNIO_TEST_EXEC=host|cuda (default host; cuda skips without a
// GPU) picks the executor of gnio::pp::run; GNIO_TEST_DATA_DIR and GNIO_TOOL_BIN
// (set by ctest) name tests/data and the gnio tool; GNIO_CORPUS_DIR replaces
// tests/data/corpus.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <gnio/device/pkt/stream.hpp>
#include <gnio/gnio.hpp>

#include "pp_app.hpp"
#include "support/process.hpp"

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

using gnio::test::env_or;
using gnio::test::proc_result;
using gnio::test::slurp;
using gnio::test::temp_path;

// Inputs and programs from the environment ctest sets; checked before the first test.
const bool k_env = gnio::test::env_check({"GNIO_TEST_DATA_DIR", "GNIO_TOOL_BIN", "GNIO_CORPUS_DIR"});
const std::string k_exec = env_or("GNIO_TEST_EXEC", "host");

bool have_gpu() {
  static const bool yes = !gnio::list_gpus().empty();
  return yes;
}

// --gpu for the runs: the host executor, or the first CUDA GPU.
std::string gpu_selector() { return k_exec == "cuda" ? "0" : k_exec == "auto" ? "auto" : "host"; }

// --gpu for the multi-context runs: GNIO_TEST_GPUS (e.g. 0,1 on a machine
// with two GPUs), else two contexts on the executor above.
std::string multi_gpu_selector() {
  const std::string sel = gpu_selector() == "auto" ? "host" : gpu_selector();
  return env_or("GNIO_TEST_GPUS", sel + "," + sel);
}

#define REQUIRE_EXECUTOR()                                                                      \
  do {                                                                                          \
    if (k_exec == "cuda" && !have_gpu()) GTEST_SKIP() << "GNIO_TEST_EXEC=cuda but no CUDA GPU"; \
  } while (0)

std::string data(const std::string& name) { return gnio::test::data_dir() + "/" + name; }

std::string basename_of(const std::string& p) {
  auto s = p.find_last_of('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}

// ---------------------------------------------------------------------------
// Running gnio::pp::run in-process, with a deadline
// ---------------------------------------------------------------------------

struct app_run {
  int rc = -1;
  json j;
  bool finished = false;     // run() returned by itself (the stream ended) before the limit
  bool needed_stop = false;  // the limit passed and the stop flag was set
};

struct run_shared {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  int rc = -1;
  json j;
  std::atomic<bool> stop{false};
};

// Starts gnio::pp::run(o) on a thread that reports into sh.
std::thread start_app(const gnio::pp::options& o, std::shared_ptr<run_shared> sh) {
  return std::thread([sh, o] {
    json j;
    const int rc = gnio::pp::run(o, &sh->stop, &j);
    std::lock_guard lk(sh->mu);
    sh->rc = rc;
    sh->j = std::move(j);
    sh->done = true;
    sh->cv.notify_all();
  });
}

// Runs pp with o in a thread. After `limit` the stop flag is set (a hang on
// bad input shows up as needed_stop); a run that does not return 20 s after
// that is abandoned (its thread detached) and reported as not finished.
// stop_after: set the stop flag after this time on purpose (live ports).
app_run run_app(gnio::pp::options o, std::chrono::milliseconds limit = 30s,
                std::chrono::milliseconds stop_after = std::chrono::hours(24)) {
  o.quiet = true;
  auto sh = std::make_shared<run_shared>();
  std::thread t = start_app(o, sh);
  app_run r;
  std::unique_lock lk(sh->mu);
  const auto first = std::min(limit, stop_after);
  if (!sh->cv.wait_for(lk, first, [&] { return sh->done; })) {
    r.needed_stop = stop_after >= limit;
    sh->stop.store(true);
    sh->cv.wait_for(lk, 20s, [&] { return sh->done; });
  }
  if (!sh->done) {
    lk.unlock();
    t.detach();
    return r;
  }
  r.finished = true;
  r.rc = sh->rc;
  r.j = sh->j;
  lk.unlock();
  t.join();
  return r;
}

gnio::pp::options capture_options(const std::string& path, uint32_t queues = 1) {
  gnio::pp::options o;
  o.port = "pcap:file=" + path;
  o.gpu = gpu_selector();
  o.queues = queues;
  o.stats_interval = 0;
  return o;
}

// ---------------------------------------------------------------------------
// Running the gnio tool
// ---------------------------------------------------------------------------

// Spawns `gnio ARGS` (no shell), optionally sends SIGINT after signal_after,
// and SIGKILLs it at limit.
proc_result run_tool(std::vector<std::string> args, bool with_json = true,
                     std::chrono::milliseconds signal_after = std::chrono::hours(24),
                     std::chrono::milliseconds limit = 60s) {
  args.insert(args.begin(), gnio::test::tool_bin());
  gnio::test::run_options o;
  o.with_json = with_json;
  o.signal_after = signal_after;
  o.limit = limit;
  return gnio::test::run_process(std::move(args), o);
}

// ---------------------------------------------------------------------------
// MANIFEST.tsv (tshark 4.0.17's counts per file)
// ---------------------------------------------------------------------------

using gnio::test::manifest_row;
using gnio::test::read_manifest;
long num(const manifest_row& r, const std::string& col) { return gnio::test::manifest_num(r, col); }

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Link types the pcap backend reads (everything else it refuses at open).
bool readable_link(const manifest_row& r) {
  static const std::set<std::string> ok = {"ether", "null", "rawip4", "rawip6", "raw", "loop", "linux-sll"};
  return ok.count(r.at("linktype")) != 0 && !ends_with(r.at("path"), ".gz");
}

// The rows the counting tests cover: DNS, HTTP or ICMP echo traffic in a
// capture this build can read (the generated tunnel, fragment and TCP stream
// captures of gen/, tests/data/make_tunnels.py, among them).
bool selected(const manifest_row& r) {
  long s = 0;
  for (const char* c :
       {"dns_queries", "dns_responses", "http_requests", "http_responses", "icmp_echo_req", "icmp_echo_reply"})
    s += std::max(0L, num(r, c));
  return s > 0 && readable_link(r);
}

// JSON key -> MANIFEST column.
const std::pair<const char*, const char*> k_fields[] = {
    {"packets", "packets"},
    {"ipv4", "ipv4"},
    {"ipv6", "ipv6"},
    {"tcp", "tcp"},
    {"udp", "udp"},
    {"icmp", "icmp"},
    {"icmpv6", "icmpv6"},
    {"arp", "arp"},
    {"vlan", "vlan"},
    {"dns_queries", "dns_queries"},
    {"dns_responses", "dns_responses"},
    {"http_requests", "http_requests"},
    {"http_responses", "http_responses"},
    {"icmp_echo_req", "icmp_echo_req"},
    {"icmp_echo_reply", "icmp_echo_reply"},
    {"tcp_flows", "tcp_streams"},
    {"udp_flows", "udp_streams"},
    {"gre", "gre"},
    {"vxlan", "vxlan"},
    {"geneve", "geneve"},
    {"gtpu", "gtpu"},
    {"ipip", "ipip"},
    {"mpls", "mpls"},
    {"pppoe", "pppoe"},
    {"frag_reassembled", "fragments_reassembled"},
};

// ---------------------------------------------------------------------------
// Where pp counts differently from tshark, on purpose or unavoidably. Keyed by
// file name (the same bytes under another folder behave the same). `app` is
// what pp counts; the test checks that it still does (and still differs from
// tshark), so a change in either shows up here.
// ---------------------------------------------------------------------------

struct count_exception {
  const char* file;
  const char* field;  // JSON key
  long app;
  const char* reason;
};

#define DNS_PORTS                                                                                               \
  "DNS is counted on port 53 only (not 5353, which tshark calls mDNS); tshark also finds it on other ports by " \
  "heuristics"
#define NESTED_5 \
  "five encapsulations, one more than max_encap (4): the innermost packet is left undecoded (encap_limit)"
#define VLAN_20                                                                                                      \
  "20 VLAN tags, more than max_vlan_tags (4): the frame is malformed (too_many_vlan_tags) and nothing inside it is " \
  "decoded; tshark reads every tag"
#define V6_OPTS_100                                                                                             \
  "100 IPv6 destination-option headers, more than max_ipv6_ext_headers (8): malformed (too_many_ext_headers), " \
  "nothing after them decoded; tshark walks them all"
#define V6_OVERLAP \
  "an IPv6 datagram with overlapping fragments is dropped (RFC 5722, frag_overlapping); tshark reassembles it"

const count_exception k_count_exceptions[] = {
    // Captures with DNS, HTTP or ICMP echo traffic (bundled in tests/data).
    {"nb6-http.pcap", "dns_responses", 8,
     "frame 34 is an ICMP error quoting a DNS response: pp counts the quoted UDP header in udp, as tshark does, "
     "but does not decode DNS inside a quote"},
    {"dns-badlabel.pcap", "dns_responses", 0,
     "opcode 15 with the Z bit set fails pp's DNS header sanity check (dns_header_sane); tshark decodes anything "
     "on port 53 as DNS"},
    {"dns_udp_8053.pcap", "dns_queries", 0, DNS_PORTS},
    {"dns_udp_8053.pcap", "dns_responses", 0, DNS_PORTS},
    {"dns_port.pcap", "dns_queries", 0, DNS_PORTS " (ports 65282 and 65333)"},
    {"dns_port.pcap", "dns_responses", 0, DNS_PORTS " (ports 65282 and 65333)"},
    {"nested_d5.pcap", "tcp", 0, NESTED_5},
    {"nested_d5.pcap", "icmp", 0, NESTED_5},
    {"nested_d5.pcap", "dns_queries", 0, NESTED_5},
    {"nested_d5.pcap", "dns_responses", 0, NESTED_5},
    {"nested_d5.pcap", "http_requests", 0, NESTED_5},
    {"nested_d5.pcap", "http_responses", 0, NESTED_5},
    {"nested_d5.pcap", "icmp_echo_req", 0, NESTED_5},
    {"nested_d5.pcap", "icmp_echo_reply", 0, NESTED_5},
    {"nested_d5.pcap", "tcp_flows", 0, NESTED_5},
    {"nested_d5.pcap", "udp_flows", 3, NESTED_5},
    {"vlan_deep.pcap", "ipv4", 0, VLAN_20},
    {"vlan_deep.pcap", "udp", 0, VLAN_20},
    {"vlan_deep.pcap", "icmp", 0, VLAN_20},
    {"vlan_deep.pcap", "dns_queries", 0, VLAN_20},
    {"vlan_deep.pcap", "dns_responses", 0, VLAN_20},
    {"vlan_deep.pcap", "icmp_echo_req", 0, VLAN_20},
    {"vlan_deep.pcap", "icmp_echo_reply", 0, VLAN_20},
    {"vlan_deep.pcap", "udp_flows", 0, VLAN_20},
    {"ipv6_many_opts.pcap", "udp", 0, V6_OPTS_100},
    {"ipv6_many_opts.pcap", "icmpv6", 0, V6_OPTS_100},
    {"ipv6_many_opts.pcap", "dns_queries", 0, V6_OPTS_100},
    {"ipv6_many_opts.pcap", "dns_responses", 0, V6_OPTS_100},
    {"ipv6_many_opts.pcap", "udp_flows", 0, V6_OPTS_100},
    {"frag6.pcap", "udp", 10, V6_OVERLAP},
    {"frag6.pcap", "dns_responses", 4, V6_OVERLAP},
    {"frag6.pcap", "frag_reassembled", 5, V6_OVERLAP},
    // The rest of the corpus (the sweep; the malformed ones are bundled too).
    {"arista_ether.pcap", "ipv4", 0, "Arista's vendor header (ethertype 0xd28b) before the payload is not decoded"},
    {"arista_ether.pcap", "vlan", 0, "Arista's vendor header (ethertype 0xd28b) before the payload is not decoded"},
    {"arista_ether.pcap", "mpls", 0, "Arista's vendor header (ethertype 0xd28b) before the payload is not decoded"},
    {"icmp-cksum-oobr-3.pcapng", "udp_flows", 0,
     "tshark gives the UDP header quoted inside an ICMP error a udp.stream; pp makes conversations from a packet's "
     "own L4 header only (it does count the quoted UDP in udp, as tshark does)"},
    {"bad-ipv4-version-pgm-heapoverflow.pcap", "ipv6", 0,
     "ethertype IPv4 with version 6 in the header: pp counts ipv4 and malformed; tshark also hands the bytes to "
     "its IPv6 dissector"},
    {"bad-ipv4-version-pgm-heapoverflow.pcap", "ipip", 0,
     "ethertype IPv4 with version 6 in the header: tshark's IPv6 dissector behind its IPv4 one reads as IP in IP"},
};

const count_exception* find_exception(const std::string& file, const std::string& field) {
  for (const auto& e : k_count_exceptions)
    if (file == e.file && field == e.field) return &e;
  return nullptr;
}

// Where the packets pp sees are not the frames tshark shows.
enum class reader_kind {
  empty_records,  // records with 0 bytes captured: libpcap returns them, the pcap backend skips them as source errors
  read_error,     // the reader stops with a read error (a source error); fields are compared only when
                  // every packet tshark shows was read before it
  extra_blocks,   // tshark shows non-packet pcapng blocks as frames; the reader delivers packet blocks only
};

struct reader_limit {
  const char* file;
  reader_kind kind;
  long packets;  // what pp delivers
  const char* reason;
};

const reader_limit k_reader_limits[] = {
    {"bgp_vpn_rt-oobr.pcap", reader_kind::empty_records, 1, "37 of its 38 records are empty"},
    {"icmp6_mobileprefix_asan.pcap", reader_kind::empty_records, 1, "its second record is empty"},
    {"olsr-oobr-2.pcap", reader_kind::empty_records, 1, "its first two records are empty"},
    {"pim_header_asan-2.pcap", reader_kind::empty_records, 2, "its second record is empty"},
    {"rx_serviceid_oobr.pcap", reader_kind::empty_records, 2, "its second record is empty"},
    {"test901.pcapng", reader_kind::read_error, 1,
     "its second section header has version 2.0: the reader stops there with a read error, as tshark stops"},
    {"test_damaged.pcap", reader_kind::read_error, 1, "the second record claims more bytes than the file holds"},
    {"truncated_dns_2.pcap", reader_kind::read_error, 1, "the file ends 7 bytes into a second record header"},
    {"test018.pcapng", reader_kind::extra_blocks, 4, "4 of its 8 \"frames\" are custom blocks tshark shows as data"},
    {"test102.pcapng", reader_kind::extra_blocks, 5, "3 of its 8 \"frames\" are custom blocks tshark shows as data"},
    {"test202.pcapng", reader_kind::extra_blocks, 8, "3 of its 11 \"frames\" are custom blocks tshark shows as data"},
};

const reader_limit* find_reader_limit(const std::string& file) {
  for (const auto& l : k_reader_limits)
    if (file == l.file) return &l;
  return nullptr;
}

// Captures the backend refuses at open with a clear error (besides .gz files,
// which it refuses with "gunzip it first").
const std::pair<const char*, const char*> k_refused[] = {
    {"test002.pcapng", "pcapng with a section header and no interface description block"},
    {"test017.pcapng", "pcapng with custom blocks and no interface description block"},
    {"pcap-invalid-version-1.pcap", "pcap file version 1: libpcap refuses it"},
    {"pcap-invalid-version-2.pcap", "pcap file version 2.5: tshark reads it, libpcap refuses it"},
    {"pcapng-invalid-vers-1.pcapng", "pcapng version 0.1, which the reader (like libpcap) refuses"},
    {"pcapng-invalid-vers-2.pcapng", "pcapng version 1.1, which the reader (like libpcap) refuses"},
    {"shb-option-too-long.pcapng", "section header option longer than its block"},
    {"test_without_pcap_header.pcap", "no file header at all"},
    {"arp.pcap", "Frame Relay link type: the backend delivers Ethernet, loopback and raw IP only"},
};

const char* refused_reason(const std::string& file) {
  for (const auto& [f, why] : k_refused)
    if (file == f) return why;
  return nullptr;
}

// received = processed + missed + unsteered + pending; per-queue processed
// adds up to packets; every packet is counted in some class.
void expect_accounting(const json& j) {
  const auto received = j.at("received").get<uint64_t>();
  const auto packets = j.at("packets").get<uint64_t>();
  EXPECT_EQ(received, j.at("processed").get<uint64_t>() + j.at("missed").get<uint64_t>() +
                          j.at("unsteered").get<uint64_t>() + j.at("pending").get<uint64_t>());
  EXPECT_EQ(j.at("unaccounted").get<int64_t>(), 0);
  EXPECT_EQ(j.at("processed").get<uint64_t>(), packets);
  uint64_t per_queue = 0;
  for (const auto& q : j.at("per_queue")) per_queue += q.at("processed").get<uint64_t>();
  EXPECT_EQ(per_queue, packets);
  const uint64_t classes = j.at("tcp").get<uint64_t>() + j.at("udp").get<uint64_t>() + j.at("icmp").get<uint64_t>() +
                           j.at("icmpv6").get<uint64_t>() + j.at("arp").get<uint64_t>() + j.at("other").get<uint64_t>();
  EXPECT_GE(classes, packets) << "a packet was counted in no class";
  EXPECT_LE(j.at("malformed").get<uint64_t>(), packets);
}

// Compares one run's JSON with the file's MANIFEST row, applying the tables.
// The name the tables use: the bundled file's name when the bytes are bundled
// (wireshark/http.pcap is bundled as wireshark_http.pcap), else the basename.
std::string capture_name(const manifest_row& r);

void check_counts(const std::string& path, const manifest_row& row, const json& j) {
  const std::string file = capture_name(row);
  SCOPED_TRACE(path);
  expect_accounting(j);
  EXPECT_EQ(j.at("missed").get<uint64_t>(), 0u) << "a file replays without loss (overflow=wait)";
  EXPECT_EQ(j.at("engine_error").get<std::string>(), "");
  const long want_packets = num(row, "packets");
  const long packets = j.at("packets").get<long>();
  const long errors = j.at("source_errors").get<long>();
  if (const reader_limit* l = find_reader_limit(file)) {
    ::testing::Test::RecordProperty("reader_limit", l->reason);
    EXPECT_EQ(packets, l->packets) << l->reason;
    if (l->kind == reader_kind::read_error) {
      EXPECT_GE(errors, 1) << "no read error any more (" << l->reason << "): update the table";
      EXPECT_LE(packets, want_packets);
      if (packets < want_packets) return;  // the rest of the file is unknown to pp
    } else {
      EXPECT_LT(packets, want_packets) << "reader limit no longer applies (" << l->reason << "): update the table";
      if (l->kind == reader_kind::empty_records) EXPECT_EQ(packets + errors, want_packets) << l->reason;
    }
  } else {
    EXPECT_EQ(packets, want_packets);
    EXPECT_EQ(errors, 0);
  }
  for (const auto& [key, col] : k_fields) {
    if (std::string(key) == "packets") continue;
    const long want = num(row, col);
    const long got = j.at(key).get<long>();
    if (const count_exception* e = find_exception(file, key)) {
      EXPECT_EQ(got, e->app) << key << ": the known difference changed (" << e->reason << ")";
      EXPECT_NE(got, want) << key << ": now agrees with tshark; drop the exception (" << e->reason << ")";
    } else {
      EXPECT_EQ(got, want) << key << " (tshark " << want << ", pp " << got << ")";
    }
  }
}

// ---------------------------------------------------------------------------
// Counts on the bundled captures with DNS, HTTP or ICMP echo traffic
// ---------------------------------------------------------------------------

std::string capture_name(const manifest_row& r) {
  static const std::map<std::string, std::string> by_sha = [] {
    std::map<std::string, std::string> m;
    for (const auto& b : read_manifest(data("MANIFEST.tsv"))) m[b.at("sha256")] = basename_of(b.at("path"));
    return m;
  }();
  auto it = by_sha.find(r.at("sha256"));
  return it != by_sha.end() ? it->second : basename_of(r.at("path"));
}

// The rows of tests/data/MANIFEST.tsv that selected() picks, in its order.
// Written out rather than read at start-up: the test list is made without
// the environment ctest gives the tests (Bundle.CountsCoverTheManifestsSelection
// keeps it equal to the manifest's).
const std::vector<std::string> k_bundled = {"dns_icmp.pcap",
                                            "http.pcap",
                                            "truncated_dns.pcap",
                                            "test_dns.pcap",
                                            "test_ethernet.pcap",
                                            "test_loopback.pcap",
                                            "dns_udp.pcap",
                                            "dnssec.pcap",
                                            "test.pcap",
                                            "nb6-http.pcap",
                                            "truncated_dns_2.pcap",
                                            "dhcp-rfc4388.pcap",
                                            "dns-uri.pcap",
                                            "dns_tcp.pcap",
                                            "dns_udp_8053.pcap",
                                            "edns-opts.pcap",
                                            "geneve.pcap",
                                            "malformed/dns-badlabel.pcap",
                                            "malformed/dns-badvers.pcap",
                                            "mpls-over-udp.pcap",
                                            "mptcp-aa-v1.pcap",
                                            "print-flags.pcap",
                                            "vxlan.pcap",
                                            "dns_port.pcap",
                                            "http-brotli.pcapng",
                                            "http-ooo.pcap",
                                            "wireshark_http.pcap",
                                            "dns_binary.pcap",
                                            "gen/dns_cut_first_fragment.pcap",
                                            "gen/dns_iquery.pcap",
                                            "gen/dns_tcp_length_prefix.pcap",
                                            "gen/dns_tcp_split.pcap",
                                            "gen/dns_tcp_two_in_one.pcap",
                                            "gen/erspan2.pcap",
                                            "gen/erspan3.pcap",
                                            "gen/frag4.pcap",
                                            "gen/frag6.pcap",
                                            "gen/frag_tunnel.pcap",
                                            "gen/geneve.pcap",
                                            "gen/gre.pcap",
                                            "gen/gtpu.pcap",
                                            "gen/http2_preface.pcap",
                                            "gen/http_chunk_overflow.pcap",
                                            "gen/http_chunked.pcap",
                                            "gen/http_content_length.pcap",
                                            "gen/http_huge_length.pcap",
                                            "gen/http_pipelined.pcap",
                                            "gen/http_post_body.pcap",
                                            "gen/http_retransmit.pcap",
                                            "gen/http_split.pcap",
                                            "gen/ipip4in4.pcap",
                                            "gen/ipip4in6.pcap",
                                            "gen/ipip6in4.pcap",
                                            "gen/ipip6in6.pcap",
                                            "gen/ipv6_many_opts.pcap",
                                            "gen/mdns_many_questions.pcap",
                                            "gen/mpls.pcap",
                                            "gen/mpls_deep.pcap",
                                            "gen/nested_d3.pcap",
                                            "gen/nested_d4.pcap",
                                            "gen/nested_d5.pcap",
                                            "gen/pppoe.pcap",
                                            "gen/pppoe_pfc.pcap",
                                            "gen/vlan_deep.pcap",
                                            "gen/vxlan.pcap"};

const std::vector<std::string>& bundled_selection() { return k_bundled; }

manifest_row bundled_row(const std::string& path) {
  for (const auto& r : read_manifest(data("MANIFEST.tsv")))
    if (r.at("path") == path) return r;
  return {};
}

class Counts : public ::testing::TestWithParam<std::string> {};

TEST_P(Counts, MatchTsharkOnOneAndThreeQueues) {
  REQUIRE_EXECUTOR();
  const std::string path = GetParam();
  const manifest_row row = bundled_row(path);
  ASSERT_FALSE(row.empty()) << path;
  // The third run reads headers from 64 bytes copied into each completion
  // entry (--inline-headers) and from the
  // buffer past them: the same counts.
  for (const auto& [queues, inl] : {std::pair{1u, 0u}, std::pair{3u, 0u}, std::pair{3u, 64u}}) {
    SCOPED_TRACE("--queues " + std::to_string(queues) + " --inline-headers " + std::to_string(inl));
    auto o = capture_options(data(path), queues);
    o.inline_headers = inl;
    auto r = run_app(o);
    ASSERT_TRUE(r.finished && !r.needed_stop) << "did not end by itself";
    EXPECT_EQ(r.j.at("inline_bytes").get<uint32_t>(), inl);
    ASSERT_EQ(r.rc, 0) << r.j.dump(2);
    if (k_exec != "auto") EXPECT_EQ(r.j.at("executor"), k_exec);
    EXPECT_EQ(r.j.at("queues").get<uint32_t>(), queues);
    EXPECT_EQ(r.j.at("per_queue").size(), 3 * queues + 1);
    EXPECT_FALSE(r.j.at("stopped_early").get<bool>());
    EXPECT_EQ(r.j.at("final_reports").get<uint32_t>(), 3 * queues + 1) << "every block's final semaphore report";
    check_counts(path, row, r.j);
  }
}

std::string param_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = info.param;
  for (auto& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(Bundled, Counts, ::testing::ValuesIn(bundled_selection()), param_name);

// Several GPU contexts (multi_gpu_selector: two host executors here, both
// GPUs on a two-GPU machine): every class's queues spread over the contexts
// give the same counters, conversations, DNS names and per-queue work as one
// context, and still match tshark.
class TwoContexts : public ::testing::TestWithParam<std::string> {};

TEST_P(TwoContexts, GiveTheSameResultsAsOne) {
  REQUIRE_EXECUTOR();
  const std::string path = GetParam();
  const manifest_row row = bundled_row(path);
  ASSERT_FALSE(row.empty()) << path;
  auto one = run_app(capture_options(data(path), 3));
  auto o = capture_options(data(path), 3);
  o.gpu = multi_gpu_selector();
  auto two = run_app(o);
  ASSERT_TRUE(one.finished && two.finished && !two.needed_stop) << "did not end by itself";
  ASSERT_EQ(one.rc, 0) << one.j.dump(2);
  ASSERT_EQ(two.rc, 0) << two.j.dump(2);
  EXPECT_EQ(two.j.at("gpus").get<uint32_t>(), 2u);
  ASSERT_EQ(two.j.at("per_gpu").size(), 2u);
  EXPECT_EQ(two.j.at("left_out").size(), 0u);
  for (const char* k : {"packets",
                        "bytes",
                        "ipv4",
                        "ipv6",
                        "tcp",
                        "udp",
                        "icmp",
                        "icmpv6",
                        "arp",
                        "vlan",
                        "other",
                        "malformed",
                        "fragments",
                        "dns_queries",
                        "dns_responses",
                        "udp_other",
                        "http_requests",
                        "http_responses",
                        "tcp_syn",
                        "tcp_fin",
                        "tcp_rst",
                        "icmp_echo_req",
                        "icmp_echo_reply",
                        "arp_requests",
                        "arp_replies",
                        "tcp_flows",
                        "udp_flows",
                        "dns_names",
                        "top_dns",
                        "received",
                        "missed",
                        "source_errors"})
    EXPECT_EQ(one.j.at(k), two.j.at(k)) << k;
  // The same steering: each queue got and processed the same packets, whichever context owns it.
  ASSERT_EQ(one.j.at("per_queue").size(), two.j.at("per_queue").size());
  for (size_t q = 0; q < one.j.at("per_queue").size(); ++q)
    EXPECT_EQ(one.j["per_queue"][q].at("processed"), two.j["per_queue"][q].at("processed")) << "queue " << q;
  // Blocks alternate between the contexts per class; arp/other is on the first.
  uint64_t per_gpu = 0;
  std::vector<uint32_t> blocks;
  for (const auto& g : two.j.at("per_gpu")) {
    per_gpu += g.at("packets").get<uint64_t>();
    for (const auto& b : g.at("blocks")) blocks.push_back(b.get<uint32_t>());
  }
  EXPECT_EQ(per_gpu, two.j.at("packets").get<uint64_t>()) << "per-GPU packets add up";
  EXPECT_EQ(two.j["per_gpu"][0].at("blocks"), json({0, 2, 3, 5, 6, 8, 9}));
  EXPECT_EQ(two.j["per_gpu"][1].at("blocks"), json({1, 4, 7}));
  EXPECT_EQ(two.j.at("final_reports").get<uint32_t>(), 10u) << "every block's final semaphore report";
  check_counts(path, row, two.j);
}

INSTANTIATE_TEST_SUITE_P(Bundled, TwoContexts, ::testing::ValuesIn(bundled_selection()), param_name);

TEST(Bundle, HasEveryCaptureTheCountsCover) {
  // The bundle stands alone: every selected corpus capture is here, byte for
  // byte (same size and sha256 prefix), under its name or in malformed/.
  const auto corpus = read_manifest(gnio::test::corpus_dir() + "/MANIFEST.tsv");
  ASSERT_FALSE(corpus.empty()) << "no corpus at " << gnio::test::corpus_dir();
  std::set<std::string> bundled_sha;
  for (const auto& r : read_manifest(data("MANIFEST.tsv"))) bundled_sha.insert(r.at("sha256"));
  size_t n = 0;
  for (const auto& r : corpus) {
    if (!selected(r)) continue;
    ++n;
    EXPECT_TRUE(bundled_sha.count(r.at("sha256"))) << r.at("path") << " is not bundled in tests/data";
  }
  EXPECT_GE(n, 25u);
}

TEST(Bundle, CountsCoverTheManifestsSelection) {
  std::vector<std::string> want;
  for (const auto& r : read_manifest(data("MANIFEST.tsv")))
    if (selected(r)) want.push_back(r.at("path"));
  EXPECT_EQ(k_bundled, want) << "update k_bundled to the rows selected() picks";
}

TEST(Bundle, ManifestRowsNameFilesThatAreHere) {
  for (const auto& r : read_manifest(data("MANIFEST.tsv"))) {
    std::error_code ec;
    const auto size = fs::file_size(data(r.at("path")), ec);
    ASSERT_FALSE(ec) << r.at("path");
    EXPECT_EQ(static_cast<long>(size), num(r, "bytes")) << r.at("path");
  }
}

// ---------------------------------------------------------------------------
// Malformed captures: every one runs to its end, all packets accounted for
// ---------------------------------------------------------------------------

TEST(Malformed, EveryFileRunsToTheEndAndIsCounted) {
  REQUIRE_EXECUTOR();
  std::vector<manifest_row> rows;
  for (const auto& r : read_manifest(data("MANIFEST.tsv"))) {
    const std::string& p = r.at("path");
    if (p.rfind("malformed/", 0) == 0 || p.rfind("truncated_dns", 0) == 0) rows.push_back(r);
  }
  ASSERT_GE(rows.size(), 130u);
  for (const auto& row : rows) {
    const std::string path = row.at("path");
    SCOPED_TRACE(path);
    auto r = run_app(capture_options(data(path)), 20s);
    ASSERT_TRUE(r.finished) << "hung: did not return after its stop flag";
    EXPECT_FALSE(r.needed_stop) << "did not reach the end of the capture in 20 s";
    ASSERT_EQ(r.rc, 0) << r.j.dump(2);
    check_counts(path, row, r.j);
  }
}

// ---------------------------------------------------------------------------
// The whole corpus (tests/data/corpus, or GNIO_CORPUS_DIR)
// ---------------------------------------------------------------------------

TEST(Corpus, SweepRunsEveryFileAndMatchesTshark) {
  REQUIRE_EXECUTOR();
  const auto rows = read_manifest(gnio::test::corpus_dir() + "/MANIFEST.tsv");
  ASSERT_FALSE(rows.empty()) << "no corpus at " << gnio::test::corpus_dir() << " (GNIO_CORPUS_DIR)";
  size_t counted = 0, refused = 0;
  for (const auto& row : rows) {
    const std::string path = row.at("path");
    const std::string file = capture_name(row);
    SCOPED_TRACE(path);
    auto r = run_app(capture_options(gnio::test::corpus_dir() + "/" + path), 20s);
    ASSERT_TRUE(r.finished) << "hung";
    EXPECT_FALSE(r.needed_stop) << "did not reach the end of the capture in 20 s";
    if (r.rc != 0) {
      // Refused at open, with a clear error: a status and a message.
      ++refused;
      EXPECT_TRUE(r.j.contains("error_status")) << r.j.dump(2);
      EXPECT_EQ(r.j.value("error_step", ""), "port") << r.j.dump(2);
      const char* why = refused_reason(file);
      if (ends_with(path, ".gz")) {
        EXPECT_EQ(r.j.value("error_status", ""), "not_supported");
        EXPECT_NE(r.j.value("error", "").find("gunzip"), std::string::npos) << r.j.dump(2);
      } else {
        EXPECT_NE(why, nullptr) << "refused but not in k_refused: " << r.j.dump(2);
      }
      continue;
    }
    EXPECT_EQ(refused_reason(file), nullptr) << "in k_refused but read now";
    EXPECT_FALSE(ends_with(path, ".gz"));
    ++counted;
    check_counts(path, row, r.j);
  }
  EXPECT_GE(counted, 200u);
  RecordProperty("counted", static_cast<int>(counted));
  RecordProperty("refused", static_cast<int>(refused));
}

TEST(Tables, EveryExceptionIsUsedByACorpusOrBundledFile) {
  // A stale entry (a file renamed or dropped) would silently stop checking.
  std::set<std::string> names;
  for (const auto& r : read_manifest(data("MANIFEST.tsv"))) names.insert(capture_name(r));
  for (const auto& r : read_manifest(gnio::test::corpus_dir() + "/MANIFEST.tsv")) names.insert(capture_name(r));
  for (const auto& e : k_count_exceptions) {
    EXPECT_FALSE(std::string(e.reason).empty());
    EXPECT_TRUE(names.count(e.file)) << e.file;
  }
  for (const auto& l : k_reader_limits) EXPECT_TRUE(names.count(l.file)) << l.file;
}

// ---------------------------------------------------------------------------
// Echo replies, checked by tshark
// ---------------------------------------------------------------------------

std::vector<std::string> lines_of(const std::string& cmd) {
  std::vector<std::string> out;
  FILE* f = ::popen(cmd.c_str(), "r");
  if (!f) return out;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, f)) {
    std::string l(buf);
    while (!l.empty() && (l.back() == '\n' || l.back() == '\r')) l.pop_back();
    if (!l.empty()) out.push_back(l);
  }
  ::pclose(f);
  return out;
}

bool have_tshark() { return std::system("tshark --version >/dev/null 2>&1") == 0; }

TEST(EchoReplies, ReplyAllOnDnsIcmpGivesTwelveValidReplies) {
  REQUIRE_EXECUTOR();
  const std::string out = temp_path("tx") + ".pcap";
  auto o = capture_options(data("dns_icmp.pcap"));
  o.reply_all = true;
  o.pcap_out = out;
  auto r = run_app(o);
  ASSERT_TRUE(r.finished);
  ASSERT_EQ(r.rc, 0) << r.j.dump(2);
  EXPECT_EQ(r.j.at("icmp_echo_req").get<int>(), 12);
  EXPECT_EQ(r.j.at("icmp_echo_reply_sent").get<int>(), 12);
  EXPECT_EQ(r.j.at("tx_frames").get<int>(), 12);
  EXPECT_EQ(r.j.at("tx_failed").get<int>(), 0);
  ASSERT_TRUE(fs::exists(out));
  if (!have_tshark()) {
    std::remove(out.c_str());
    GTEST_SKIP() << "tshark is not installed";
  }
  // tshark 4.0.17: checksum.status 1 = Good; IPv4 header checks are off by default.
  const auto replies = lines_of("tshark -r '" + out +
                                "' -o ip.check_checksum:TRUE -T fields -E separator=, -e icmp.type -e icmp.code "
                                "-e ip.checksum.status -e icmp.checksum.status -e ip.src -e ip.dst -e icmp.ident "
                                "-e icmp.seq -e ip.len 2>/dev/null");
  const auto requests = lines_of("tshark -r '" + data("dns_icmp.pcap") +
                                 "' -Y 'icmp.type == 8' -T fields -E separator=, -e ip.src -e ip.dst -e icmp.ident "
                                 "-e icmp.seq -e ip.len 2>/dev/null");
  ASSERT_EQ(requests.size(), 12u);
  ASSERT_EQ(replies.size(), 12u) << "tshark decoded " << replies.size() << " frames";
  std::multiset<std::string> want, got;
  for (const auto& l : requests) {
    std::vector<std::string> f;
    std::stringstream ss(l);
    std::string x;
    while (std::getline(ss, x, ',')) f.push_back(x);
    ASSERT_EQ(f.size(), 5u) << l;
    want.insert(f[1] + "," + f[0] + "," + f[2] + "," + f[3] + "," + f[4]);  // swapped
  }
  for (const auto& l : replies) {
    std::vector<std::string> f;
    std::stringstream ss(l);
    std::string x;
    while (std::getline(ss, x, ',')) f.push_back(x);
    ASSERT_EQ(f.size(), 9u) << l;
    EXPECT_EQ(f[0], "0") << "ICMP type: " << l;
    EXPECT_EQ(f[1], "0") << "ICMP code: " << l;
    EXPECT_EQ(f[2], "1") << "IPv4 checksum status (1 = Good): " << l;
    EXPECT_EQ(f[3], "1") << "ICMP checksum status (1 = Good): " << l;
    got.insert(f[4] + "," + f[5] + "," + f[6] + "," + f[7] + "," + f[8]);
  }
  EXPECT_EQ(got, want) << "each reply is its request with source and destination swapped";
  std::remove(out.c_str());
}

TEST(EchoReplies, WithoutReplyAllOrIpNothingIsSent) {
  REQUIRE_EXECUTOR();
  const std::string out = temp_path("tx0") + ".pcap";
  auto o = capture_options(data("dns_icmp.pcap"));
  o.pcap_out = out;
  auto r = run_app(o);
  ASSERT_TRUE(r.finished);
  ASSERT_EQ(r.rc, 0) << r.j.dump(2);
  EXPECT_EQ(r.j.at("icmp_echo_reply_sent").get<int>(), 0);
  EXPECT_EQ(r.j.at("tx_frames").get<int>(), 0);
  std::remove(out.c_str());
}

// ---------------------------------------------------------------------------
// The HTTP server on the pair backend, with a scripted client
// ---------------------------------------------------------------------------

namespace dev = gnio::device;

constexpr uint8_t k_client_mac[6] = {0x02, 0x00, 0x0a, 0x09, 0x09, 0x02};
constexpr uint8_t k_app_mac[6] = {0x02, 0x00, 0x0a, 0x09, 0x09, 0x01};  // the default: 02:00 + --ip
constexpr uint32_t k_client_ip = 0x0a090902, k_app_ip = 0x0a090901;

void put16(std::vector<uint8_t>& v, size_t at, uint16_t x) {
  v[at] = static_cast<uint8_t>(x >> 8);
  v[at + 1] = static_cast<uint8_t>(x);
}
void put32(std::vector<uint8_t>& v, size_t at, uint32_t x) {
  put16(v, at, static_cast<uint16_t>(x >> 16));
  put16(v, at + 2, static_cast<uint16_t>(x));
}

std::vector<uint8_t> eth_header(const uint8_t* dst, uint16_t type) {
  std::vector<uint8_t> f(14);
  std::copy(dst, dst + 6, f.begin());
  std::copy(k_client_mac, k_client_mac + 6, f.begin() + 6);
  put16(f, 12, type);
  return f;
}

void pad60(std::vector<uint8_t>& f) {
  if (f.size() < 60) f.resize(60, 0);
}

std::vector<uint8_t> arp_who_has(uint32_t target) {
  static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  auto f = eth_header(bcast, 0x0806);
  f.resize(14 + 28);
  put16(f, 14, 1);
  put16(f, 16, 0x0800);
  f[18] = 6;
  f[19] = 4;
  put16(f, 20, 1);
  std::copy(k_client_mac, k_client_mac + 6, f.begin() + 22);
  put32(f, 28, k_client_ip);
  put32(f, 38, target);
  pad60(f);
  return f;
}

// IPv4 header at 14 with its checksum; l4 bytes follow.
std::vector<uint8_t> ipv4_frame(uint8_t proto, const std::vector<uint8_t>& l4) {
  auto f = eth_header(k_app_mac, 0x0800);
  f.resize(34);
  f[14] = 0x45;
  put16(f, 16, static_cast<uint16_t>(20 + l4.size()));
  put16(f, 18, 0x1234);
  put16(f, 20, 0x4000);
  f[22] = 64;
  f[23] = proto;
  put32(f, 26, k_client_ip);
  put32(f, 30, k_app_ip);
  put16(f, 24, dev::ipv4_header_checksum(f.data() + 14, 20));
  f.insert(f.end(), l4.begin(), l4.end());
  pad60(f);
  return f;
}

std::vector<uint8_t> icmp_echo(uint16_t id, uint16_t seq, const std::string& payload) {
  std::vector<uint8_t> l4(8 + payload.size());
  l4[0] = 8;
  put16(l4, 4, id);
  put16(l4, 6, seq);
  std::copy(payload.begin(), payload.end(), l4.begin() + 8);
  put16(l4, 2, dev::l4_checksum_ipv4(k_client_ip, k_app_ip, 1, l4.data(), static_cast<uint32_t>(l4.size())));
  return ipv4_frame(1, l4);
}

std::vector<uint8_t> tcp_seg(uint16_t sport, uint32_t seq, uint32_t ack, uint8_t flags,
                             const std::string& payload = "") {
  std::vector<uint8_t> l4(20 + payload.size());
  put16(l4, 0, sport);
  put16(l4, 2, 80);
  put32(l4, 4, seq);
  put32(l4, 8, ack);
  l4[12] = 5 << 4;
  l4[13] = flags;
  put16(l4, 14, 64240);
  std::copy(payload.begin(), payload.end(), l4.begin() + 20);
  put16(l4, 16, dev::l4_checksum_ipv4(k_client_ip, k_app_ip, 6, l4.data(), static_cast<uint32_t>(l4.size())));
  return ipv4_frame(6, l4);
}

// The other end of the cable: a host port with one RX and one TX queue,
// driven with the device API from this thread.
class client_port {
 public:
  explicit client_port(const std::string& name) {
    auto g = gnio::gpu::open("host");
    if (!g) {
      err_ = g.err().what();
      return;
    }
    g_ = std::move(*g);
    auto p = gnio::port::open(g_, "pair:name=" + name);
    if (!p) {
      err_ = p.err().what();
      return;
    }
    p_ = std::move(*p);
    gnio::rxq_config rc;
    rc.host_consumer = true;
    gnio::txq_config tc;
    tc.host_producer = true;
    auto rq = p_.create_rxq(rc);
    auto tq = p_.create_txq(tc);
    if (!rq || !tq) {
      err_ = "queues";
      return;
    }
    rx_ = *p_.rxq_host(*rq);
    tx_ = *p_.txq_host(*tq);
    tx_exec_ = *p_.txq(*tq);
    if (auto e = p_.start(); e) err_ = e.what();
  }
  ~client_port() {
    (void)p_.stop();
    for (uint32_t i = 0; i < p_.num_rxq(); ++i) (void)p_.destroy_rxq(i);
    for (uint32_t i = 0; i < p_.num_txq(); ++i) (void)p_.destroy_txq(i);
    (void)p_.close();
  }
  const std::string& error() const { return err_; }

  bool send(const std::vector<uint8_t>& f) {
    uint64_t idx = 0;
    if (dev::tx_reserve(tx_, 1, 1'000'000'000, &idx) != gnio::status::success) return false;
    std::memcpy(tx_.buf_addr(idx), f.data(), f.size());
    dev::tx_prepare(tx_, idx, tx_exec_.buf_addr(idx), static_cast<uint32_t>(f.size()));
    dev::tx_commit(tx_, 1);
    dev::tx_doorbell(tx_);
    return true;
  }

  // The next frame, or nothing after `wait`.
  std::optional<std::vector<uint8_t>> recv(std::chrono::milliseconds wait = 5s) {
    const auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - t0 < wait) {
      uint64_t first = 0;
      uint32_t n = 0;
      if (dev::recv<dev::scope::thread>(rx_, 1, 2'000'000, &first, &n) == gnio::status::success && n == 1) {
        const uint8_t* p = dev::pkt_addr(rx_, first);
        return std::vector<uint8_t>(p, p + dev::pkt_len(rx_, first));
      }
    }
    return std::nullopt;
  }

 private:
  gnio::gpu g_;
  gnio::port p_;
  dev::rxq rx_{};
  dev::txq tx_{}, tx_exec_{};
  std::string err_;
};

struct tcp_reply {
  dev::parsed_pkt p{};
  std::vector<uint8_t> frame;
  std::string payload;
};

// Parses a reply from the app to the client and checks what every reply has:
// addresses, IPv4 and TCP checksums.
tcp_reply expect_tcp_reply(const std::optional<std::vector<uint8_t>>& f, uint16_t client_port_no) {
  tcp_reply r;
  EXPECT_TRUE(f.has_value()) << "no reply within 5 s";
  if (!f) return r;
  r.frame = *f;
  dev::parse(r.frame.data(), static_cast<uint32_t>(r.frame.size()), r.p);
  const auto& p = r.p;
  EXPECT_FALSE(p.malformed) << dev::to_string(p.error);
  EXPECT_EQ(p.l3, dev::l3_kind::ipv4);
  EXPECT_EQ(p.l4, dev::l4_kind::tcp);
  EXPECT_TRUE(std::equal(k_client_mac, k_client_mac + 6, r.frame.begin())) << "Ethernet destination";
  EXPECT_TRUE(std::equal(k_app_mac, k_app_mac + 6, r.frame.begin() + 6)) << "Ethernet source";
  EXPECT_EQ(p.ipv4.src, k_app_ip);
  EXPECT_EQ(p.ipv4.dst, k_client_ip);
  EXPECT_EQ(p.src_port, 80);
  EXPECT_EQ(p.dst_port, client_port_no);
  EXPECT_TRUE(dev::ipv4_checksum_ok(r.frame.data(), static_cast<uint32_t>(r.frame.size()), p)) << "IPv4 checksum";
  EXPECT_TRUE(dev::l4_checksum_ok(r.frame.data(), static_cast<uint32_t>(r.frame.size()), p)) << "TCP checksum";
  if (p.payload_len) r.payload.assign(reinterpret_cast<const char*>(r.frame.data() + p.payload_off), p.payload_len);
  return r;
}

// Opens a connection: SYN -> SYN-ACK (checked) -> ACK. Returns the server's ISN.
uint32_t handshake(client_port& c, uint16_t sport, uint32_t isn) {
  EXPECT_TRUE(c.send(tcp_seg(sport, isn, 0, dev::tcp_syn)));
  auto r = expect_tcp_reply(c.recv(), sport);
  EXPECT_EQ(r.p.tcp.flags, dev::tcp_syn | dev::tcp_ack) << "SYN-ACK flags";
  EXPECT_EQ(r.p.tcp.ack, isn + 1) << "SYN-ACK acknowledges the SYN";
  EXPECT_EQ(r.p.payload_len, 0u);
  EXPECT_TRUE(c.send(tcp_seg(sport, isn + 1, r.p.tcp.seq + 1, dev::tcp_ack)));
  return r.p.tcp.seq;
}

void check_http_response(const tcp_reply& r, const std::string& page, const char* status, uint32_t server_isn,
                         uint32_t ack) {
  EXPECT_EQ(r.p.tcp.flags, dev::tcp_fin | dev::tcp_psh | dev::tcp_ack);
  EXPECT_EQ(r.p.tcp.seq, server_isn + 1);
  EXPECT_EQ(r.p.tcp.ack, ack);
  EXPECT_EQ(r.payload, page) << "the exact page bytes";
  EXPECT_EQ(r.payload.rfind(std::string("HTTP/1.1 ") + status + "\r\n", 0), 0u) << r.payload.substr(0, 40);
  const auto hdr_end = r.payload.find("\r\n\r\n");
  ASSERT_NE(hdr_end, std::string::npos);
  const std::string body = r.payload.substr(hdr_end + 4);
  EXPECT_NE(r.payload.find("Content-Length: " + std::to_string(body.size()) + "\r\n"), std::string::npos);
  EXPECT_NE(r.payload.find("Connection: close\r\n"), std::string::npos);
  EXPECT_LE(r.payload.size(), 1460u);
}

// A scripted client session against pp on a pair port: ARP, ping, two HTTP
// connections and a SYN behind a RST, then the app's stats.
void pair_client_session(const std::string& name, const std::string& gpu, uint32_t queues) {
  client_port c(name);
  ASSERT_EQ(c.error(), "");
  gnio::pp::options o;
  o.port = "pair:name=" + name;
  o.ip = "10.9.9.1";
  o.http_server = true;
  o.gpu = gpu;
  o.queues = queues;
  o.stats_interval = 0;
  auto sh = std::make_shared<run_shared>();
  o.quiet = true;
  std::thread app = start_app(o, sh);
  struct joiner {
    std::shared_ptr<run_shared> sh;
    std::thread& t;
    ~joiner() {
      sh->stop.store(true);
      if (t.joinable()) t.join();
    }
  } join_at_end{sh, app};

  // ARP who-has 10.9.9.1 -> is-at 02:00:0a:09:09:01.
  ASSERT_TRUE(c.send(arp_who_has(k_app_ip)));
  {
    auto f = c.recv();
    ASSERT_TRUE(f) << "no ARP reply";
    dev::parsed_pkt p;
    dev::parse(f->data(), static_cast<uint32_t>(f->size()), p);
    ASSERT_EQ(p.l3, dev::l3_kind::arp);
    EXPECT_TRUE(p.arp.eth_ipv4);
    EXPECT_EQ(p.arp.op, 2);
    EXPECT_TRUE(std::equal(k_app_mac, k_app_mac + 6, p.arp.sha));
    EXPECT_EQ(p.arp.spa, k_app_ip);
    EXPECT_TRUE(std::equal(k_client_mac, k_client_mac + 6, p.arp.tha));
    EXPECT_EQ(p.arp.tpa, k_client_ip);
    EXPECT_TRUE(std::equal(k_client_mac, k_client_mac + 6, f->begin()));
    EXPECT_TRUE(std::equal(k_app_mac, k_app_mac + 6, f->begin() + 6));
  }

  // ICMP echo -> echo reply with the same id, sequence and data.
  const std::string ping_data = "gnio pp ping payload 0123456789";
  ASSERT_TRUE(c.send(icmp_echo(0x4242, 7, ping_data)));
  {
    auto f = c.recv();
    ASSERT_TRUE(f) << "no echo reply";
    dev::parsed_pkt p;
    dev::parse(f->data(), static_cast<uint32_t>(f->size()), p);
    ASSERT_EQ(p.l4, dev::l4_kind::icmp);
    EXPECT_EQ(p.icmp.type, 0);
    EXPECT_EQ(p.icmp.code, 0);
    EXPECT_EQ(p.icmp.rest, 0x42420007u);
    EXPECT_EQ(p.ipv4.src, k_app_ip);
    EXPECT_EQ(p.ipv4.dst, k_client_ip);
    EXPECT_TRUE(dev::ipv4_checksum_ok(f->data(), static_cast<uint32_t>(f->size()), p));
    EXPECT_TRUE(dev::l4_checksum_ok(f->data(), static_cast<uint32_t>(f->size()), p));
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(f->data() + p.payload_off), p.payload_len), ping_data);
  }

  // Connection 1: GET / -> the index page; then FIN -> FIN|ACK.
  const uint32_t c1 = 1000;
  const uint32_t s1 = handshake(c, 40000, c1);
  const std::string get_index = "GET / HTTP/1.1\r\nHost: 10.9.9.1\r\nUser-Agent: pp_test\r\n\r\n";
  ASSERT_TRUE(c.send(tcp_seg(40000, c1 + 1, s1 + 1, dev::tcp_psh | dev::tcp_ack, get_index)));
  const auto index = gnio::pp::http_page("/");
  EXPECT_NE(index.find("gnio"), std::string::npos) << "the index page names gnio";
  {
    auto r = expect_tcp_reply(c.recv(), 40000);
    check_http_response(r, index, "200 OK", s1, c1 + 1 + static_cast<uint32_t>(get_index.size()));
  }
  const uint32_t fin_seq = c1 + 1 + static_cast<uint32_t>(get_index.size());
  const uint32_t fin_ack = s1 + 1 + static_cast<uint32_t>(index.size()) + 1;  // the page and the server's FIN
  ASSERT_TRUE(c.send(tcp_seg(40000, fin_seq, fin_ack, dev::tcp_fin | dev::tcp_ack)));
  {
    auto r = expect_tcp_reply(c.recv(), 40000);
    EXPECT_EQ(r.p.tcp.flags, dev::tcp_fin | dev::tcp_ack);
    EXPECT_EQ(r.p.tcp.seq, fin_ack) << "seq = the client's ack";
    EXPECT_EQ(r.p.tcp.ack, fin_seq + 1) << "ack = the FIN's seq + 1";
  }

  // Connection 2: GET /missing -> 404; then RST (counted, not answered).
  const uint32_t c2 = 0x7ffffff0;  // sequence numbers that wrap
  const uint32_t s2 = handshake(c, 40001, c2);
  const std::string get_missing = "GET /missing HTTP/1.1\r\nHost: 10.9.9.1\r\n\r\n";
  ASSERT_TRUE(c.send(tcp_seg(40001, c2 + 1, s2 + 1, dev::tcp_psh | dev::tcp_ack, get_missing)));
  {
    auto r = expect_tcp_reply(c.recv(), 40001);
    check_http_response(r, gnio::pp::http_page("/missing"), "404 Not Found", s2,
                        c2 + 1 + static_cast<uint32_t>(get_missing.size()));
  }
  ASSERT_TRUE(c.send(tcp_seg(40001, c2 + 1 + static_cast<uint32_t>(get_missing.size()), 0, dev::tcp_rst)));
  // Connection 3: a SYN behind the RST on the same CPU queue: its SYN-ACK
  // shows the RST was handled (without a reply) before it.
  {
    ASSERT_TRUE(c.send(tcp_seg(40002, 5, 0, dev::tcp_syn)));
    auto r = expect_tcp_reply(c.recv(), 40002);
    EXPECT_EQ(r.p.tcp.flags, dev::tcp_syn | dev::tcp_ack) << "got a reply to the RST?";
    EXPECT_EQ(r.p.tcp.ack, 6u);
  }
  EXPECT_FALSE(c.recv(200ms)) << "an unexpected extra frame";

  sh->stop.store(true);
  {
    std::unique_lock lk(sh->mu);
    ASSERT_TRUE(sh->cv.wait_for(lk, 30s, [&] { return sh->done; })) << "pp did not stop";
  }
  const json& j = sh->j;
  ASSERT_EQ(sh->rc, 0) << j.dump(2);
  EXPECT_TRUE(j.at("stopped_early").get<bool>());
  EXPECT_FALSE(j.at("time_out").get<bool>());
  // arp, icmp, then TCP: SYN ACK GET FIN, SYN ACK GET RST, SYN.
  EXPECT_EQ(j.at("packets").get<int>(), 11);
  EXPECT_EQ(j.at("arp").get<int>(), 1);
  EXPECT_EQ(j.at("arp_requests").get<int>(), 1);
  EXPECT_EQ(j.at("arp_replies_sent").get<int>(), 1);
  EXPECT_EQ(j.at("icmp_echo_req").get<int>(), 1);
  EXPECT_EQ(j.at("icmp_echo_reply_sent").get<int>(), 1);
  EXPECT_EQ(j.at("tcp").get<int>(), 9);
  EXPECT_EQ(j.at("tcp_syn").get<int>(), 3);
  EXPECT_EQ(j.at("tcp_fin").get<int>(), 1);
  EXPECT_EQ(j.at("tcp_rst").get<int>(), 1);
  EXPECT_EQ(j.at("tcp_synack_sent").get<int>(), 3);
  EXPECT_EQ(j.at("tcp_finack_sent").get<int>(), 1);
  EXPECT_EQ(j.at("http_requests").get<int>(), 2);
  EXPECT_EQ(j.at("http_get").get<int>(), 2);
  EXPECT_EQ(j.at("http_pages_sent").get<int>(), 1);
  EXPECT_EQ(j.at("http_404_sent").get<int>(), 1);
  EXPECT_EQ(j.at("tx_failed").get<int>(), 0);
  EXPECT_EQ(j.at("tcp_flows").get<int>(), 3);
  EXPECT_EQ(j.at("tx_frames").get<int>(), 2 + 3 + 2 + 1);  // arp, icmp, syn-acks, pages, fin-ack
  EXPECT_EQ(j.at("tx_bad_addr").get<int>(), 0);
  expect_accounting(j);
  // The CPU thread's queue is part of the accounting.
  bool ctrl_queue = false;
  for (const auto& q : j.at("per_queue"))
    if (q.at("class") == "tcp_ctrl") {
      ctrl_queue = true;
      EXPECT_EQ(q.at("processed").get<int>(), 3 + 1 + 1);  // 3 SYN, 1 FIN, 1 RST
    }
  EXPECT_TRUE(ctrl_queue);
  // Per GPU context: what the kernels processed (the CPU thread's 5 are its own).
  uint64_t per_gpu = 0;
  for (const auto& g : j.at("per_gpu")) per_gpu += g.at("packets").get<uint64_t>();
  EXPECT_EQ(per_gpu + 5, j.at("packets").get<uint64_t>());
}

TEST(HttpServer, PairClientGetsArpIcmpAndPages) {
  REQUIRE_EXECUTOR();
  pair_client_session("pp_test_http", gpu_selector(), 1);
}

// The same session with every class's queues spread over two contexts: the
// replies come from whichever context's kernel owns the flow's queue.
TEST(HttpServer, PairClientOnTwoContexts) {
  REQUIRE_EXECUTOR();
  pair_client_session("pp_test_http2", multi_gpu_selector(), 2);
}

TEST(HttpServer, PagesAreCompleteResponses) {
  for (const char* path : {"/", "/index.html", "/hello", "/nope"}) {
    SCOPED_TRACE(path);
    const std::string page = gnio::pp::http_page(path);
    EXPECT_LE(page.size(), 1460u);
    const auto hdr_end = page.find("\r\n\r\n");
    ASSERT_NE(hdr_end, std::string::npos);
    EXPECT_NE(page.find("Content-Length: " + std::to_string(page.size() - hdr_end - 4) + "\r\n"), std::string::npos);
    EXPECT_NE(page.find("Connection: close\r\n"), std::string::npos);
  }
  EXPECT_EQ(gnio::pp::http_page("/"), gnio::pp::http_page("/index.html"));
  EXPECT_EQ(gnio::pp::http_page("/hello").rfind("HTTP/1.1 200 OK\r\n", 0), 0u);
  EXPECT_EQ(gnio::pp::http_page("/nope").rfind("HTTP/1.1 404 Not Found\r\n", 0), 0u);
}

// ---------------------------------------------------------------------------
// Live ports: stop through the flag; the generator across several queues
// ---------------------------------------------------------------------------

TEST(Lifecycle, StopFlagEndsALiveRunAndKeepsTheStats) {
  REQUIRE_EXECUTOR();
  gnio::pp::options o;
  o.port = "pair:name=pp_test_idle";
  o.gpu = gpu_selector();
  o.stats_interval = 0.1;
  auto r = run_app(o, 30s, 500ms);
  ASSERT_TRUE(r.finished);
  EXPECT_EQ(r.rc, 0) << r.j.dump(2);
  EXPECT_TRUE(r.j.at("stopped_early").get<bool>());
  EXPECT_FALSE(r.j.at("time_out").get<bool>());
  EXPECT_EQ(r.j.at("packets").get<int>(), 0);
  EXPECT_GE(r.j.at("reports").get<int>(), 1) << "the kernels' semaphore reports";
  expect_accounting(r.j);
}

TEST(Lifecycle, GeneratorOnFourQueuesPerClass) {
  REQUIRE_EXECUTOR();
  gnio::pp::options o;
  o.port = "gen:mix=all,count=30000,flows=64";
  o.gpu = gpu_selector();
  o.queues = 4;
  o.stats_interval = 0;
  auto r = run_app(o);
  ASSERT_TRUE(r.finished && !r.needed_stop);
  ASSERT_EQ(r.rc, 0) << r.j.dump(2);
  const json& j = r.j;
  EXPECT_EQ(j.at("packets").get<int>(), 30000);
  EXPECT_EQ(j.at("tcp").get<int>() + j.at("udp").get<int>() + j.at("icmp").get<int>(), 30000);
  EXPECT_EQ(j.at("icmp").get<int>(), j.at("icmp_echo_req").get<int>());
  EXPECT_EQ(j.at("malformed").get<int>(), 0);
  EXPECT_EQ(j.at("per_queue").size(), 13u);
  // Each class's queues processed exactly that class's packets.
  const json& pc = j.at("per_class");
  EXPECT_EQ(pc.at("udp").at("processed").get<int>(), j.at("udp").get<int>());
  EXPECT_EQ(pc.at("tcp").at("processed").get<int>(), j.at("tcp").get<int>());
  EXPECT_EQ(pc.at("icmp").at("processed").get<int>(), j.at("icmp").get<int>());
  EXPECT_EQ(pc.at("arp_other").at("processed").get<int>(), 0);
  EXPECT_EQ(j.at("tcp_flows").get<int>() + j.at("udp_flows").get<int>() > 0, true);
  expect_accounting(j);
}

// Engine lanes with pp's class steering: the generator split over 3 engine
// threads, with 1 queue per class (every queue shared by the lanes) and 3
// (split among them). Nothing is lost, each class's queues get exactly that
// class, and the conversations are those of one lane.
TEST(Lifecycle, GeneratorLanesWithClassSteering) {
  REQUIRE_EXECUTOR();
  auto opts = [](uint32_t lanes, uint32_t queues) {
    gnio::pp::options o;
    o.port = "gen:mix=all,count=200000,flows=999,lanes=" + std::to_string(lanes);
    o.gpu = gpu_selector();
    o.queues = queues;
    o.stats_interval = 0;
    return o;
  };
  auto one = run_app(opts(1, 3));
  ASSERT_TRUE(one.finished && one.rc == 0) << one.j.dump(2);
  for (uint32_t queues : {1u, 3u}) {
    SCOPED_TRACE("--queues " + std::to_string(queues));
    auto r = run_app(opts(3, queues));
    ASSERT_TRUE(r.finished && !r.needed_stop);
    ASSERT_EQ(r.rc, 0) << r.j.dump(2);
    const json& j = r.j;
    EXPECT_EQ(j.at("packets").get<int>(), 200000);
    EXPECT_EQ(j.at("missed").get<int>(), 0);
    EXPECT_EQ(j.at("tcp").get<int>() + j.at("udp").get<int>() + j.at("icmp").get<int>(), 200000);
    const json& pc = j.at("per_class");
    EXPECT_EQ(pc.at("udp").at("processed").get<int>(), j.at("udp").get<int>());
    EXPECT_EQ(pc.at("tcp").at("processed").get<int>(), j.at("tcp").get<int>());
    EXPECT_EQ(pc.at("icmp").at("processed").get<int>(), j.at("icmp").get<int>());
    EXPECT_EQ(j.at("tcp_flows"), one.j.at("tcp_flows"));
    EXPECT_EQ(j.at("udp_flows"), one.j.at("udp_flows"));
    EXPECT_EQ(j.at("final_reports").get<uint32_t>(), 3 * queues + 1) << "every queue saw the end of the stream";
    expect_accounting(j);
  }
}

// Lanes sharing one queue per class under overflow=wait with rings smaller
// than a burst: a lane waiting for room must first publish what it wrote, or
// the ring holds only frames the kernel cannot see and the run never ends
// (it once processed 0 of 20000 frames and counted them missed).
TEST(Lifecycle, SharedQueuesSmallerThanABurstNeitherHangNorDrop) {
  REQUIRE_EXECUTOR();
  for (uint32_t ring : {2u, 128u}) {
    SCOPED_TRACE("--ring " + std::to_string(ring));
    gnio::pp::options o;
    o.port = "gen:mix=all,count=20000,overflow=wait,lanes=4";
    o.gpu = gpu_selector();
    o.queues = 1;
    o.ring = ring;
    o.stats_interval = 0;
    auto r = run_app(o, 60s);
    ASSERT_TRUE(r.finished && !r.needed_stop) << "the run did not end by itself";
    ASSERT_EQ(r.rc, 0) << r.j.dump(2);
    EXPECT_EQ(r.j.at("packets").get<int>(), 20000);
    EXPECT_EQ(r.j.at("missed").get<int>(), 0) << "overflow=wait drops nothing";
    expect_accounting(r.j);
  }
}

// ---------------------------------------------------------------------------
// The command line
// ---------------------------------------------------------------------------

TEST(Cli, RunsACaptureAndWritesTheJson) {
  REQUIRE_EXECUTOR();
  auto r = run_tool({"pp", "--port", "pcap:file=" + data("dns_icmp.pcap"), "--gpu", gpu_selector(), "--queues", "2"});
  ASSERT_TRUE(r.exited) << r.describe();
  ASSERT_EQ(r.code, 0) << r.describe();
  ASSERT_TRUE(r.j) << r.describe();
  EXPECT_EQ(r.j->at("packets").get<int>(), 32);
  EXPECT_EQ(r.j->at("command").get<std::string>().rfind("gnio pp --port pcap:file=", 0), 0u) << r.j->at("command");
  EXPECT_NE(r.out.find("pp: executor"), std::string::npos) << r.describe();
  EXPECT_NE(r.out.find(" udp: "), std::string::npos) << "the per-class stats line\n" << r.describe();
  EXPECT_NE(r.out.find("echo req/reply/sent 12/10/0"), std::string::npos) << r.describe();
  EXPECT_NE(r.out.find("received 32 = processed 32 + missed 0 + unsteered 0 + pending 0"), std::string::npos)
      << r.describe();
}

TEST(Cli, SigintStopsCleanlyAndWritesTheStats) {
  REQUIRE_EXECUTOR();
  auto r = run_tool({"pp", "--port", "pair:name=sigint", "--gpu", gpu_selector(), "--stats-interval", "0.2"}, true,
                    1500ms, 60s);
  ASSERT_TRUE(r.exited) << r.describe();
  EXPECT_EQ(r.code, 0) << r.describe();
  ASSERT_TRUE(r.j) << r.describe();
  EXPECT_TRUE(r.j->at("stopped_early").get<bool>());
  EXPECT_FALSE(r.j->at("time_out").get<bool>());
  EXPECT_NE(r.out.find("pp: 0."), std::string::npos) << "a stats line within the first second\n" << r.describe();
}

// Bytes a terminal could act on: C0 controls other than newline, DEL, and
// anything >= 0x80 (C1 controls in 8-bit form, stray UTF-8).
std::string raw_control_bytes(const std::string& s) {
  std::string bad;
  for (unsigned char c : s)
    if ((c < 0x20 && c != '\n') || c >= 0x7f) bad += " " + std::to_string(c);
  return bad;
}

TEST(DnsNames, BinaryLabelsAreEscapedAsDigPrintsThem) {
  // tests/data/make_dns_binary.py: 11 names, the n-th sent n times, with NUL,
  // ESC, newline, DEL, bytes >= 0x80, invalid UTF-8, '.', '\' and long labels.
  REQUIRE_EXECUTOR();
  const std::string cap = data("dns_binary.pcap");
  auto r = run_tool({"pp", "--port", "pcap:file=" + cap, "--gpu", gpu_selector(), "--stats-interval", "0"});
  ASSERT_TRUE(r.exited) << r.describe();
  ASSERT_EQ(r.code, 0) << r.describe();
  ASSERT_TRUE(r.j) << "the JSON must be written and valid\n" << r.describe();
  EXPECT_EQ(raw_control_bytes(r.out), "") << "raw bytes reached stdout\n" << r.describe();
  EXPECT_EQ(raw_control_bytes(r.err), "") << "raw bytes reached stderr\n" << r.describe();
  std::map<std::string, uint64_t> got;
  for (const auto& d : r.j->at("top_dns")) got[d.at("name").get<std::string>()] = d.at("count").get<uint64_t>();
  const std::map<std::string, uint64_t> want = {
      {"www.example.com", 1},
      {"a\\000b.example", 2},
      {"\\027[31mred.test", 3},
      {"\\255\\254.bin", 4},
      {"\\195\\(.\\226\\130.utf", 5},
      {"caf\\195\\169.utf8", 6},
      {"a\\.b.dot", 7},
      {"back\\\\slash.x", 8},
      {"sp\\032ace.q\\\"uote.del\\127", 9},
      {std::string(63, 'a') + "." + std::string(40, 'b'), 10},
      {"t\\010l\\013." + std::string(20, 'x'), 11},
  };
  EXPECT_EQ(got, want) << r.j->at("top_dns").dump(2);
  EXPECT_EQ(r.j->at("dns_names").get<uint64_t>(), want.size());
  // The text output names the top five with the same escapes.
  EXPECT_NE(r.out.find("pp: dns #1 t\\010l\\013." + std::string(20, 'x') + " (11)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pp: dns #5 a\\.b.dot (7)"), std::string::npos) << r.out;

  // tshark (its own escaping differs from dig's) finds the same queries and
  // the same number of times each name is asked.
  auto t = gnio::test::run_process(
      {"tshark", "-r", cap, "-Y", "dns.flags.response == 0", "-T", "fields", "-e", "dns.qry.name"});
  if (!t.spawned || !t.exited || t.code != 0) GTEST_SKIP() << "tshark did not run\n" << t.describe();
  std::map<std::string, uint64_t> by_tshark;
  uint64_t queries = 0;
  std::istringstream lines(t.out);
  for (std::string line; std::getline(lines, line);) ++by_tshark[line], ++queries;
  EXPECT_EQ(r.j->at("dns_queries").get<uint64_t>(), queries);
  std::multiset<uint64_t> tshark_counts, pp_counts;
  for (const auto& [n, c] : by_tshark) tshark_counts.insert(c);
  for (const auto& [n, c] : got) pp_counts.insert(c);
  EXPECT_EQ(pp_counts, tshark_counts);
  EXPECT_EQ(by_tshark["www.example.com"], got["www.example.com"]);
}

TEST(DnsNames, TheTextFormIsDigs) {
  using gnio::pp::dns_name_text;
  using namespace std::string_literals;
  EXPECT_EQ(dns_name_text(""s), "");
  EXPECT_EQ(dns_name_text("\0"s), ".");
  EXPECT_EQ(dns_name_text("\3www\7example\3com"s), "www.example.com");
  EXPECT_EQ(dns_name_text("\3a.b\1\\"s), "a\\.b.\\\\");
  EXPECT_EQ(dns_name_text("\6\"();@$"s), "\\\"\\(\\)\\;\\@\\$");
  EXPECT_EQ(dns_name_text("\4\x00\x1f\x20\x7f"s), "\\000\\031\\032\\127");
  EXPECT_EQ(dns_name_text("\2\x80\xff"s), "\\128\\255");
  EXPECT_EQ(dns_name_text("\5ab"s), "ab") << "a label cut short prints what is there";
  EXPECT_EQ(dns_name_text("\1a\0\1b"s), "a") << "nothing follows a root byte";
}

void expect_rejected(const proc_result& r, const std::vector<std::string>& mention) {
  ASSERT_TRUE(r.exited) << "killed by a signal\n" << r.describe();
  EXPECT_NE(r.code, 0) << r.describe();
  EXPECT_LT(r.code, 124) << r.describe();
  for (const auto& m : mention)
    EXPECT_NE(r.err.find(m), std::string::npos) << "stderr lacks '" << m << "'\n" << r.describe();
}

TEST(Cli, MissingCaptureNamesTheStatusAndAHint) {
  const std::string path = gnio::test::data_dir() + "/no_such_capture.pcap";
  auto r = run_tool({"pp", "--port", "pcap:file=" + path, "--gpu", "host"});
  expect_rejected(r, {"not_found", path, "hint"});
  // The JSON of a failed run says what failed.
  ASSERT_TRUE(r.j) << r.describe();
  EXPECT_EQ(r.j->value("error_step", ""), "port") << r.j->dump(2);
  EXPECT_EQ(r.j->value("error_status", ""), "not_found") << r.j->dump(2);
}

TEST(Cli, BadOptionsAreRejected) {
  expect_rejected(run_tool({"pp", "--port", "pcap:file=" + data("http.pcap"), "--gpu", "host", "--queues", "16"}),
                  {"--queues"});
  expect_rejected(run_tool({"pp", "--port", "pcap:file=" + data("http.pcap"), "--gpu", "host", "--queues", "0"}),
                  {"--queues"});
  expect_rejected(run_tool({"pp", "--port", "pair:name=bad1", "--gpu", "host", "--http-server"}), {"--ip"});
  expect_rejected(run_tool({"pp", "--port", "pair:name=bad2", "--gpu", "host", "--ip", "10.0.0.300"}), {"--ip"});
  expect_rejected(run_tool({"pp", "--port", "pair:name=bad3", "--gpu", "host", "--ip", "10.0.0.1", "--mac", "zz"}),
                  {"--mac"});
  expect_rejected(run_tool({"pp", "--port", "pcap:file=" + data("http.pcap"), "--gpu", "host", "--ring", "1000"}),
                  {"--ring", "power of two"});
  expect_rejected(run_tool({"pp", "--port", "bogus:x=1", "--gpu", "host"}), {"bad_config", "bogus"});
  expect_rejected(run_tool({"pp", "--gpu", "host"}), {"--port"});
}

// Usage errors exit with 2 (not CLI11's 104..114) and say what is wrong in
// words: NaN and inf are refused for every number, non-numbers are "not a
// number", and no range is printed as a 309-digit DBL_MAX.
TEST(Cli, UsageErrorsExitWithTwoAndSayWhatIsWrong) {
  const std::string port = "pcap:file=" + data("http.pcap");
  const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> cases = {
      {{"--duration", "nan"}, {"--duration", "nan is not a finite number"}},
      {{"--duration", "inf"}, {"--duration", "inf is not a finite number"}},
      {{"--stats-interval", "nan"}, {"--stats-interval", "not a finite number"}},
      {{"--stats-interval", "1e999"}, {"--stats-interval", "not a finite number"}},
      {{"--duration", "abc"}, {"--duration", "abc is not a number"}},
      {{"--duration", "-2"}, {"--duration", "-2 is below the minimum 0"}},
      {{"--queues", "abc"}, {"--queues", "abc is not a whole number"}},
      {{"--queues", "16"}, {"--queues", "16 is above the maximum 15"}},
      {{"--threads", "1000"}, {"--threads", "above the maximum 768"}},
      {{"--ring", "3"}, {"--ring", "3 is not a power of two"}},
      {{"--ring", "0"}, {"--ring", "below the minimum 2"}},
      {{"--poll", "often"}, {"--poll", "often"}},
      {{"--tcp-streams", "3"}, {"--tcp-streams", "neither 0 nor a power of two"}},
      {{"--tcp-streams", "2097152"}, {"--tcp-streams", "above the maximum"}},
      {{"--frag-table", "48"}, {"--frag-table", "neither 0 nor a power of two"}},
      {{"--frag-table", "2048"}, {"--frag-table", "above the maximum 1024"}},
      {{"--no-such-option"}, {"--no-such-option"}},
      // A typo names the option meant (issue 31 point 8).
      {{"--durration", "5"}, {"--durration: did you mean --duration?"}},
      {{"--stats-intervl=2"}, {"--stats-intervl: did you mean --stats-interval?"}},
      // Units as in gen:duration=, for --stats-interval too.
      {{"--duration", "2x"}, {"--duration", "2x: unknown unit 'x' (use ms, s or m)"}},
      {{"--duration", "5h"}, {"--duration", "unknown unit 'h'"}},
      {{"--stats-interval", "5h"}, {"--stats-interval", "unknown unit 'h'"}},
  };
  for (const auto& [extra, mention] : cases) {
    std::vector<std::string> args = {"pp", "--port", port, "--gpu", "host"};
    args.insert(args.end(), extra.begin(), extra.end());
    SCOPED_TRACE(extra.front() + (extra.size() > 1 ? " " + extra[1] : ""));
    auto r = run_tool(args, false);
    ASSERT_TRUE(r.exited) << r.describe();
    EXPECT_EQ(r.code, 2) << r.describe();
    for (const auto& m : mention)
      EXPECT_NE(r.err.find(m), std::string::npos) << "lacks '" << m << "'\n" << r.describe();
    EXPECT_EQ(r.err.find("not in range"), std::string::npos) << r.describe();
    EXPECT_EQ(r.err.find("num_descs"), std::string::npos) << r.describe();
    EXPECT_EQ(r.err.find("17976931348623157"), std::string::npos) << r.describe();
  }
  auto missing = run_tool({"pp", "--gpu", "host"}, false);
  EXPECT_EQ(missing.code, 2) << missing.describe();
  // In-process callers get the same check of the ring.
  auto o = capture_options(data("http.pcap"));
  o.ring = 3;
  const auto in_process = run_app(o);
  EXPECT_EQ(in_process.rc, 2);
  EXPECT_NE(in_process.j.value("error", "").find("--ring 3"), std::string::npos) << in_process.j.dump(2);
  auto op = capture_options(data("http.pcap"));
  op.poll = "often";
  const auto bad_poll = run_app(op);
  EXPECT_EQ(bad_poll.rc, 2);
  EXPECT_NE(bad_poll.j.value("error", "").find("--poll often"), std::string::npos) << bad_poll.j.dump(2);
}

// --duration and --stats-interval take gen:duration='s units (5s, 500ms, 1m)
// as well as plain seconds (issue 31 point 8).
TEST(Cli, DurationsTakeTheUnitsOfGenDuration) {
  const std::string port = "pcap:file=" + data("http.pcap");
  for (const char* d : {"5s", "500ms", "1m", "0.5", "0"}) {
    SCOPED_TRACE(d);
    auto r = run_tool({"pp", "--port", port, "--gpu", "host", "--duration", d, "--stats-interval", d});
    ASSERT_TRUE(r.exited) << r.describe();
    EXPECT_EQ(r.code, 0) << r.describe();
    ASSERT_TRUE(r.j) << r.describe();
    EXPECT_EQ(r.j->value("packets", 0), 43) << r.j->dump(2);
  }
  auto far = run_tool({"pp", "--port", port, "--gpu", "host", "--bogus"}, false);
  EXPECT_EQ(far.code, 2) << far.describe();
  EXPECT_EQ(far.err.find("did you mean"), std::string::npos) << "nothing is near --bogus\n" << far.describe();
}

// --frag-table 0 and --tcp-streams 0 turn reassembly and per-message framing
// off, and the JSON says so. Without reassembly a fragment counts as IP only
// (its datagram's UDP and DNS are not counted); without framing HTTP is
// classified per segment and no stream counter moves. Everything else counts
// as with the tables.
TEST(Tables, ReassemblyAndStreamFramingCanBeTurnedOff) {
  REQUIRE_EXECUTOR();
  {
    const manifest_row row = bundled_row("gen/frag4.pcap");
    ASSERT_FALSE(row.empty());
    auto on = run_app(capture_options(data("gen/frag4.pcap")));
    auto o = capture_options(data("gen/frag4.pcap"));
    o.frag_table = 0;
    auto off = run_app(o);
    ASSERT_EQ(on.rc, 0) << on.j.dump(2);
    ASSERT_EQ(off.rc, 0) << off.j.dump(2);
    EXPECT_EQ(on.j.at("frag_table").get<uint32_t>(), 32u);
    EXPECT_EQ(off.j.at("frag_table").get<uint32_t>(), 0u);
    const long reassembled = num(row, "fragments_reassembled");
    ASSERT_GT(reassembled, 0);
    EXPECT_EQ(on.j.at("frag_reassembled").get<long>(), reassembled);
    EXPECT_EQ(off.j.at("frag_reassembled").get<long>(), 0);
    EXPECT_EQ(off.j.at("frag_pending").get<long>(), 0);
    EXPECT_EQ(off.j.at("fragments"), on.j.at("fragments"));
    EXPECT_EQ(off.j.at("ipv4").get<long>(), num(row, "ipv4"));
    // frag4.pcap's reassembled datagrams are UDP (DNS responses) and one ICMP
    // echo request: tshark counts each in the frame that completes it, and
    // without reassembly none of them is counted above IP.
    EXPECT_EQ(off.j.at("udp").get<long>() + off.j.at("icmp").get<long>() + reassembled,
              num(row, "udp") + num(row, "icmp"));
    EXPECT_EQ(off.j.at("dns_responses").get<long>() + reassembled,
              num(row, "dns_responses") + num(row, "icmp_echo_req"));
    EXPECT_EQ(off.j.at("icmp_echo_req").get<long>(), 0);
  }
  for (const char* file : {"gen/http_pipelined.pcap", "gen/http_split.pcap", "gen/dns_tcp_two_in_one.pcap"}) {
    SCOPED_TRACE(file);
    auto on = run_app(capture_options(data(file)));
    auto o = capture_options(data(file));
    o.tcp_streams = 0;
    auto off = run_app(o);
    ASSERT_EQ(on.rc, 0) << on.j.dump(2);
    ASSERT_EQ(off.rc, 0) << off.j.dump(2);
    EXPECT_EQ(on.j.at("tcp_streams").get<uint32_t>(), 2048u);
    EXPECT_EQ(off.j.at("tcp_streams").get<uint32_t>(), 0u);
    for (const char* k : {"http_request_messages", "http_response_messages", "tcp_retransmitted", "tcp_gaps",
                          "stream_messages_dropped", "stream_table_full", "stream_reclaimed"})
      EXPECT_EQ(off.j.at(k).get<long>(), 0) << k;
    EXPECT_GT(on.j.at("http_request_messages").get<long>() + on.j.at("dns_queries").get<long>(), 0);
    for (const char* k : {"packets", "ipv4", "ipv6", "tcp", "udp", "tcp_syn", "tcp_fin", "tcp_ack", "tcp_other"})
      EXPECT_EQ(off.j.at(k), on.j.at(k)) << k;
  }
}

// Busy polling changes when a batch is returned, never what is counted or answered.
TEST(Pp, BusyPollingCountsAndAnswersAsAdaptive) {
  auto adaptive = capture_options(data("dns_icmp.pcap"));
  adaptive.reply_all = true;
  auto busy = adaptive;
  busy.poll = "busy";
  busy.port += ",engine_poll=busy";
  const auto a = run_app(adaptive), b = run_app(busy);
  ASSERT_EQ(a.rc, 0) << a.j.dump(2);
  ASSERT_EQ(b.rc, 0) << b.j.dump(2);
  EXPECT_EQ(b.j.value("poll", ""), "busy");
  for (const char* k : {"packets", "dns_queries", "dns_responses", "icmp_echo_req", "icmp_echo_reply_sent"})
    EXPECT_EQ(a.j.value(k, json()), b.j.value(k, json())) << k;
}

// F19: rings that cannot be backed are refused before they are allocated
// (under an address-space limit, so that a missed check fails safely).
TEST(Cli, RingsThatCannotFitAreRefusedBeforeAllocating) {
  if (gnio::test::sanitized_build)
    GTEST_SKIP() << "a sanitizer reserves more address space than the limit this test sets";
  gnio::test::run_options o;
  o.address_space_limit = uint64_t{2} << 30;
  auto r = gnio::test::run_process({gnio::test::tool_bin(), "pp", "--port", "gen:count=10", "--gpu", "host", "--ring",
                                    "1048576", "--stats-interval", "0"},
                                   o);
  ASSERT_TRUE(r.exited) << r.describe();
  EXPECT_EQ(r.code, 2) << r.describe();
  for (const char* m : {"--ring 1048576 on 4 RX queues", "bytes", "RLIMIT_AS"})
    EXPECT_NE(r.err.find(m), std::string::npos) << "lacks '" << m << "'\n" << r.describe();
  EXPECT_EQ(r.err.find("create_rxq"), std::string::npos) << "refused before any queue\n" << r.describe();
}

// R8: --tcp-streams (one table per block, zeroed when the host executor
// allocates it) is counted against the memory the run can get before
// anything is allocated, as --ring is (F19): 46 blocks of 2^20 streams are
// 11 GiB, once refused only by the failed allocation, with a GPU hint.
TEST(Cli, TcpStreamTablesThatCannotFitAreRefusedBeforeAllocating) {
  if (gnio::test::sanitized_build)
    GTEST_SKIP() << "a sanitizer reserves more address space than the limit this test sets";
  gnio::test::run_options o;
  o.address_space_limit = uint64_t{4000000} * 1024;  // ulimit -v 4000000
  auto r = gnio::test::run_process({gnio::test::tool_bin(), "pp", "--port", "gen:count=1000", "--gpu", "host",
                                    "--queues", "15", "--tcp-streams", "1048576", "--stats-interval", "0"},
                                   o);
  ASSERT_TRUE(r.exited) << r.describe();
  EXPECT_EQ(r.code, 2) << r.describe();
  const uint64_t bytes = uint64_t{46} * 1048576 * sizeof(gnio::device::tcp_conn);
  for (const std::string& m : {std::string("--tcp-streams 1048576 (46 blocks on the host executor"),
                               "needs at least " + std::to_string(bytes) + " bytes", std::string("RLIMIT_AS")})
    EXPECT_NE(r.err.find(m), std::string::npos) << "lacks '" << m << "'\n" << r.describe();
  for (const char* m : {"pp: alloc", "create_rxq", "pp: hint"})
    EXPECT_EQ(r.err.find(m), std::string::npos) << "refused before anything was allocated\n" << r.describe();
}

// More TCP connections than a block follows: the segments that found no
// room are counted (stream_table_full) and the summary says so, with the
// option to raise.
TEST(Cli, SegmentsBeyondTheStreamTableAreReportedWithTheOptionThatHelps) {
  REQUIRE_EXECUTOR();
  auto r = run_tool({"pp", "--port", "gen:count=20000,flows=512,mix=tcp", "--gpu", gpu_selector(), "--queues", "1",
                     "--tcp-streams", "64", "--stats-interval", "0"});
  ASSERT_TRUE(r.exited) << r.describe();
  ASSERT_EQ(r.code, 0) << r.describe();
  ASSERT_TRUE(r.j) << r.describe();
  const uint64_t full = r.j->at("stream_table_full").get<uint64_t>();
  EXPECT_GT(full, 0u) << "512 connections, 64 slots";
  EXPECT_NE(r.out.find("pp: " + std::to_string(full) + " TCP segment(s) found their block's table of 64 connections " +
                       "full"),
            std::string::npos)
      << r.describe();
  EXPECT_NE(r.out.find("raise --tcp-streams"), std::string::npos) << r.describe();
  // Within the table, nothing is said.
  auto fit = run_tool({"pp", "--port", "gen:count=20000,flows=32,mix=tcp", "--gpu", gpu_selector(), "--queues", "1",
                       "--tcp-streams", "64", "--stats-interval", "0"});
  ASSERT_EQ(fit.code, 0) << fit.describe();
  ASSERT_TRUE(fit.j) << fit.describe();
  EXPECT_EQ(fit.j->at("stream_table_full").get<uint64_t>(), 0u);
  EXPECT_EQ(fit.out.find("TCP segment(s) found"), std::string::npos) << fit.describe();
}

// F17n: input with control characters is echoed escaped, never raw.
TEST(Cli, ControlCharactersInADeviceStringAreEchoedEscaped) {
  for (const std::string& port : {std::string("gen:count=5,\x1b[31mRED=1"), std::string("gen:count=5\nX=1"),
                                  std::string("pcap:file=/no/such/\x1b[2Jfile.pcap")}) {
    auto r = run_tool({"pp", "--port", port, "--gpu", "host", "--stats-interval", "0"}, false);
    ASSERT_TRUE(r.exited) << r.describe();
    EXPECT_NE(r.code, 0) << r.describe();
    EXPECT_EQ(raw_control_bytes(r.out + r.err), "") << r.describe();
    EXPECT_TRUE(r.err.find("\\x1b[") != std::string::npos || r.err.find("\\n") != std::string::npos) << r.describe();
  }
}

// F17k: Ctrl-C while pp waits to open a FIFO no one writes to is a stop by
// the user, not a disk or integrity problem.
TEST(Cli, CtrlCWhileOpeningAFifoIsAStopNotADiskError) {
  const std::string fifo = temp_path("pp_fifo");
  ASSERT_EQ(::unlink(fifo.c_str()), 0);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  auto r = run_tool({"pp", "--port", "pcap:file=" + fifo, "--gpu", "host", "--stats-interval", "0"}, true, 1000ms, 30s);
  (void)::unlink(fifo.c_str());
  ASSERT_TRUE(r.exited_cleanly()) << r.describe();
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_NE(r.err.find("pp: stopped while opening the port"), std::string::npos) << r.describe();
  EXPECT_EQ(r.err.find("disk space"), std::string::npos) << r.describe();
  EXPECT_EQ(r.err.find("io_failed"), std::string::npos) << r.describe();
  ASSERT_TRUE(r.j) << r.describe();
  EXPECT_EQ(r.j->value("error_status", ""), "shutdown") << r.j->dump(2);
}

// F17l: the same errno gives the same status and hint on every port: a
// --pcap-out in a directory that does not exist is not_found, found when the
// port opens, on a pcap port (which writes tx= itself) and on a gen port
// (the core's tx_pcap=) alike, and no file is left.
TEST(Cli, APcapOutInAMissingDirectoryIsNotFoundOnEveryPort) {
  const std::string out = gnio::test::data_dir() + "/no_such_dir/r.pcap";
  std::string hint;
  for (const std::string& port : {"pcap:file=" + data("dns_icmp.pcap"), std::string("gen:count=10,mix=all")}) {
    SCOPED_TRACE(port);
    auto r = run_tool(
        {"pp", "--port", port, "--gpu", "host", "--reply-all", "--pcap-out", out, "--stats-interval", "0"}, false);
    ASSERT_TRUE(r.exited) << r.describe();
    EXPECT_EQ(r.code, 1) << r.describe();
    EXPECT_NE(r.err.find("pp: port: not_found: "), std::string::npos) << r.describe();
    EXPECT_NE(r.err.find(out + "': No such file or directory"), std::string::npos) << r.describe();
    EXPECT_EQ(r.err.find("disk space"), std::string::npos) << r.describe();
    const std::string h = r.err.substr(r.err.find("pp: hint"));
    if (hint.empty()) hint = h;
    EXPECT_EQ(h, hint);
  }
}

TEST(Cli, AddressesThatCannotBeThisHostsAreRefused) {
  struct bad {
    std::vector<std::string> args;
    std::string mention;
  };
  for (const bad& c : std::vector<bad>{
           {{"--ip", "0.0.0.0", "--http-server"}, "--ip 0.0.0.0: 0.0.0.0 means no address"},
           {{"--ip", "0.0.0.0"}, "0.0.0.0 means no address"},
           {{"--ip", "255.255.255.255"}, "broadcast"},
           {{"--ip", "224.0.0.251"}, "multicast"},
           {{"--ip", "10.0.0.1", "--mac", "01:02:03:04:05:06"}, "--mac 01:02:03:04:05:06: a multicast address"},
           {{"--ip", "10.0.0.1", "--mac", "ff:ff:ff:ff:ff:ff"}, "broadcast"},
           {{"--ip", "10.0.0.1", "--mac", "00:00:00:00:00:00"}, "not an address"},
       }) {
    std::vector<std::string> args = {"pp", "--port", "pair:name=addr", "--gpu", "host"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    SCOPED_TRACE(c.mention);
    auto r = run_tool(args, false);
    ASSERT_TRUE(r.exited) << r.describe();
    EXPECT_EQ(r.code, 2) << r.describe();
    EXPECT_NE(r.err.find(c.mention), std::string::npos) << r.describe();
    EXPECT_EQ(r.err.find("needs --ip"), std::string::npos) << "--ip was given\n" << r.describe();
  }
}

TEST(Cli, GpuListsAreChecked) {
  const std::string cap = "pcap:file=" + data("http.pcap");
  expect_rejected(run_tool({"pp", "--port", cap, "--gpu", "host,host", "--queues", "1"}),
                  {"--queues 1 is fewer than the 2 GPUs"});
  auto empty = run_tool({"pp", "--port", cap, "--gpu", "host,"});
  EXPECT_EQ(empty.code, 1) << empty.describe();
  EXPECT_NE(empty.err.find("entry 2 is empty"), std::string::npos) << empty.describe();
  if (!have_gpu()) {
    auto none = run_tool({"pp", "--port", cap, "--gpu", "host,7"});
    EXPECT_EQ(none.code, 1) << none.describe();
    EXPECT_NE(none.err.find("gpu list entry 2 (7)"), std::string::npos) << none.describe();
  }
  // A port that cannot receive is named as such, not blamed on the GPUs.
  auto tx_only = run_tool({"pp", "--port", "pcap:tx=" + temp_path("txonly"), "--gpu", "host,host", "--queues", "2"});
  EXPECT_EQ(tx_only.code, 1) << tx_only.describe();
  EXPECT_NE(tx_only.err.find("cannot receive"), std::string::npos) << tx_only.describe();
}

TEST(Cli, TwoContextsPrintPerGpuLines) {
  REQUIRE_EXECUTOR();
  auto r = run_tool({"pp", "--port", "pcap:file=" + data("dns_icmp.pcap"), "--gpu", multi_gpu_selector(), "--queues",
                     "2", "--stats-interval", "0"});
  ASSERT_EQ(r.code, 0) << r.describe();
  EXPECT_NE(r.out.find("over 2 GPUs"), std::string::npos) << r.describe();
  EXPECT_NE(r.out.find("pp: gpu 0 "), std::string::npos) << r.describe();
  EXPECT_NE(r.out.find("pp: gpu 1 "), std::string::npos) << r.describe();
  ASSERT_TRUE(r.j) << r.describe();
  EXPECT_EQ(r.j->at("packets").get<int>(), 32);
}

TEST(Cli, CompressedCaptureSaysGunzip) {
  auto r = run_tool({"pp", "--port", "pcap:file=" + data("dns+icmp.pcapng.gz"), "--gpu", "host"});
  expect_rejected(r, {"not_supported", "gunzip"});
}

TEST(Cli, CudaWithoutAGpuSaysSo) {
  if (have_gpu()) GTEST_SKIP() << "a CUDA GPU is present";
  auto r = run_tool({"pp", "--port", "pcap:file=" + data("http.pcap"), "--gpu", "0"});
  expect_rejected(r, {"not_found"});
}

// ---------------------------------------------------------------------------
// Outputs: results are always written, write errors are reported
// ---------------------------------------------------------------------------

proc_result run_tool_with(std::vector<std::string> args, gnio::test::run_options o) {
  args.insert(args.begin(), gnio::test::tool_bin());
  return gnio::test::run_process(std::move(args), o);
}

// stdout on a full device: pp's lines once failed silently (status 0);
// stderr on one made a failed run die of SIGABRT (status 134) instead of
// exiting 1. Now the failure is said once on the other stream with the
// errno text, the JSON is complete, and the status is 1.
TEST(Outputs, StdoutOrStderrOnAFullDeviceIsReportedAndTheJsonIsComplete) {
  REQUIRE_EXECUTOR();
  {
    SCOPED_TRACE("stdout on /dev/full");
    auto r = run_tool_with({"pp", "--port", "pcap:file=" + data("dns_icmp.pcap"), "--gpu", gpu_selector()},
                           {.with_json = true, .stdout_path = "/dev/full"});
    ASSERT_TRUE(r.exited) << r.describe();
    EXPECT_EQ(r.code, 1) << r.describe();
    EXPECT_NE(r.err.find("gnio: writing stdout failed: No space left on device"), std::string::npos) << r.describe();
    ASSERT_TRUE(r.j) << r.describe();
    EXPECT_EQ(r.j->at("packets").get<int>(), 32);
    EXPECT_EQ(r.j->at("unaccounted").get<int>(), 0);
    EXPECT_EQ(r.j->value("error_step", ""), "output") << r.j->dump(2);
  }
  {
    SCOPED_TRACE("stderr on /dev/full, a failing run");
    auto r = run_tool_with({"pp", "--port", "pcap:file=" + data("no_such_capture.pcap"), "--gpu", "host"},
                           {.with_json = true, .stderr_path = "/dev/full"});
    ASSERT_TRUE(r.exited) << r.describe();
    EXPECT_EQ(r.code, 1) << r.describe();
    EXPECT_NE(r.out.find("gnio: writing stderr failed: No space left on device"), std::string::npos) << r.describe();
    ASSERT_TRUE(r.j) << r.describe();
    EXPECT_EQ(r.j->value("error_step", ""), "port") << r.j->dump(2);
  }
}

// A TX capture (--pcap-out) that cannot grow (a file size limit: EFBIG, as a
// full disk gives ENOSPC) once threw away the totals and the JSON. Now the
// TX error and the lost replies are reported, every total is printed and
// written, and the status is 1.
TEST(Outputs, AFullTxCaptureKeepsTheTotalsAndFailsTheRun) {
  REQUIRE_EXECUTOR();
  const std::string out = temp_path("pp_full");
  gnio::test::run_options o{.with_json = true};
  o.file_size_limit = 64 * 1024;  // 200 passes send 2400 echo replies, 270 KiB
  auto r = run_tool_with({"pp", "--port", "pcap:file=" + data("dns_icmp.pcap") + ",loop=200", "--reply-all",
                          "--pcap-out", out, "--gpu", gpu_selector(), "--stats-interval", "0"},
                         o);
  std::remove(out.c_str());
  ASSERT_TRUE(r.exited) << r.describe();
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_NE(r.err.find("pp: port stop: io_failed"), std::string::npos) << r.describe();
  EXPECT_NE(r.err.find("replies lost on TX"), std::string::npos) << r.describe();
  EXPECT_NE(r.out.find("received 6400 = processed 6400 + missed 0"), std::string::npos) << r.describe();
  ASSERT_TRUE(r.j) << r.describe();
  EXPECT_EQ(r.j->at("packets").get<int>(), 6400);
  EXPECT_EQ(r.j->at("icmp_echo_reply_sent").get<int>(), 2400);
  EXPECT_GT(r.j->at("tx_errors").get<int>(), 0);
  EXPECT_EQ(r.j->at("unaccounted").get<int>(), 0);
  EXPECT_EQ(r.j->value("error_step", ""), "port stop") << r.j->dump(2);
  EXPECT_NE(r.j->value("error", "").find("File too large"), std::string::npos) << "the real errno (EFBIG)\n"
                                                                               << r.j->dump(2);
}

// --pcap-out on a port that transmits itself (gen) is the core's tx_pcap=
// copy. On a full device the port's stop reports the write error; pp then
// fails the run, with every total kept and the error in the JSON.
TEST(Outputs, AFullPcapOutCopyIsReportedAndTheTotalsKept) {
  REQUIRE_EXECUTOR();
  auto r = run_tool({"pp", "--port", "gen:count=2000,mix=all", "--reply-all", "--pcap-out", "/dev/full", "--gpu",
                     gpu_selector(), "--stats-interval", "0"});
  ASSERT_TRUE(r.exited) << r.describe();
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_NE(r.err.find("pp: port stop: io_failed"), std::string::npos) << r.describe();
  EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.describe();
  EXPECT_NE(r.out.find("received 2000 = processed 2000"), std::string::npos) << r.describe();
  ASSERT_TRUE(r.j) << r.describe();
  EXPECT_EQ(r.j->at("packets").get<int>(), 2000);
  EXPECT_GT(r.j->at("icmp_echo_reply_sent").get<int>(), 0);
  EXPECT_EQ(r.j->value("error_step", ""), "port stop") << r.j->dump(2);
  EXPECT_EQ(r.j->value("error_status", ""), "io_failed") << r.j->dump(2);
}

// --json onto the capture read, or onto the --pcap-out file: refused with
// status 2 before anything runs (the capture was once replaced by JSON).
TEST(Outputs, AJsonPathThatIsAnotherFileOfTheRunIsRefused) {
  const std::string in = temp_path("pp_in"), replies = temp_path("pp_replies");
  const std::string capture = slurp(data("dns_icmp.pcap"));
  std::ofstream(in, std::ios::binary) << capture;
  std::ofstream(replies, std::ios::binary) << "keep me";
  for (const std::string& target : {in, replies}) {
    SCOPED_TRACE("--json " + target);
    auto r = run_tool(
        {"pp", "--port", "pcap:file=" + in, "--reply-all", "--pcap-out", replies, "--gpu", "host", "--json", target},
        false);
    ASSERT_TRUE(r.exited) << r.describe();
    EXPECT_EQ(r.code, 2) << r.describe();
    EXPECT_NE(r.err.find("--json " + target + " is the same file as"), std::string::npos) << r.describe();
    EXPECT_EQ(slurp(in), capture) << "the capture was changed";
    EXPECT_EQ(slurp(replies), "keep me") << "the --pcap-out file was changed";
  }
  std::remove(in.c_str());
  std::remove(replies.c_str());
}

// Output paths that cannot be used are refused before the run (status 2),
// with the errno text; an empty --json or --pcap-out is refused too.
TEST(Outputs, OutputPathsThatCannotBeUsedAreRefusedBeforeTheRun) {
  const std::string dir = temp_path("pp_dir");
  ASSERT_EQ(std::remove(dir.c_str()), 0);
  ASSERT_TRUE(fs::create_directory(dir));
  struct bad {
    std::vector<std::string> args;
    std::string says;
  };
  const bad cases[] = {
      {{"--json", dir + "/missing/x.json"}, "cannot create a file in '" + dir + "/missing': No such file or directory"},
      {{"--json", dir}, "Is a directory"},
      {{"--json", ""}, "--json needs a file name"},
      {{"--pcap-out", ""}, "--pcap-out needs a file name"},
  };
  for (const auto& b : cases) {
    SCOPED_TRACE(b.args[0] + " '" + b.args[1] + "'");
    // An endless source: a check made only after the run would never come.
    std::vector<std::string> args{"pp", "--port", "gen", "--gpu", "host", "--stats-interval", "0"};
    args.insert(args.end(), b.args.begin(), b.args.end());
    auto r = run_tool(args, false, 24h, 30s);
    EXPECT_TRUE(r.exited) << r.describe();
    EXPECT_EQ(r.code, 2) << r.describe();
    EXPECT_NE(r.err.find(b.says), std::string::npos) << r.describe();
  }
  EXPECT_TRUE(fs::is_empty(dir)) << "something was left in " << dir;
  fs::remove_all(dir);
}

// A run that fails after its options were accepted replaces the previous
// run's JSON with its own, error included (the old one was once left).
TEST(Outputs, AFailedRunReplacesTheJsonWithItsError) {
  REQUIRE_EXECUTOR();
  const std::string json_path = temp_path("pp_stale");
  auto ok = run_tool(
      {"pp", "--port", "pcap:file=" + data("dns_icmp.pcap"), "--gpu", gpu_selector(), "--json", json_path}, false);
  ASSERT_EQ(ok.code, 0) << ok.describe();
  ASSERT_EQ(json::parse(slurp(json_path)).at("packets").get<int>(), 32);
  auto r = run_tool(
      {"pp", "--port", "pcap:file=" + data("no_such_capture.pcap"), "--gpu", gpu_selector(), "--json", json_path},
      false);
  const std::string text = slurp(json_path);
  std::remove(json_path.c_str());
  EXPECT_EQ(r.code, 1) << r.describe();
  const json j = json::parse(text, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << text;
  EXPECT_FALSE(j.contains("packets")) << text;
  EXPECT_EQ(j.value("error_step", ""), "port") << text;
  EXPECT_EQ(j.value("command", "").rfind("gnio pp --port", 0), 0u) << text;
}

}  // namespace
