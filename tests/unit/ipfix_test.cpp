// SPDX-License-Identifier: Apache-2.0
// The IPFIX encoder's bytes against RFC 7011's layout (message header §3.1,
// set header §3.3.2, template record §3.4.1, padding §3.3.1) and the IANA
// element IDs and lengths; the tracker's timeouts; HOST:PORT parsing and the
// exporter's errors. nfcapd reading what flow_count sends is
// tests/integration/ipfix_nfcapd_test.py.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <gtest/gtest.h>

#include <gnio/device/flow_table.hpp>

#include "ipfix.hpp"

namespace ipfix = gnio::ipfix;

namespace {

uint16_t rd16(const std::vector<uint8_t>& b, size_t at) { return static_cast<uint16_t>(b[at] << 8 | b[at + 1]); }
uint32_t rd32(const std::vector<uint8_t>& b, size_t at) { return uint32_t{rd16(b, at)} << 16 | rd16(b, at + 2); }
uint64_t rd64(const std::vector<uint8_t>& b, size_t at) { return uint64_t{rd32(b, at)} << 32 | rd32(b, at + 4); }

ipfix::record v4_record(uint8_t last_octet, uint64_t packets) {
  ipfix::record r;
  r.family = 4;
  const uint8_t src[4] = {192, 0, 2, last_octet}, dst[4] = {198, 51, 100, 7};
  std::memcpy(r.src, src, 4);
  std::memcpy(r.dst, dst, 4);
  r.src_port = 49152;
  r.dst_port = 80;
  r.proto = 6;
  r.tcp_flags = 0x1b;  // FIN SYN PSH ACK
  r.vlan_id = 100;
  r.layer2_segment_id = ipfix::layer2_segment_id(gnio::device::encap_kind::vxlan, 0x123456);
  r.packets = packets;
  r.octets = packets * 86;
  r.layer2_octets = packets * 100;
  r.start_ms = 1'700'000'000'123;
  r.end_ms = 1'700'000'001'456;
  r.reason = ipfix::end_reason::idle_timeout;
  return r;
}

// A UDP socket on a free loopback port with a buffer big enough for every
// datagram of a test; its port in *port.
int bound_receiver(uint16_t* port) {
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  const int buf = 4 << 20;
  (void)::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return -1;
  socklen_t len = sizeof a;
  (void)::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin_port);
  return fd;
}

// The datagrams waiting on fd, read without blocking.
std::vector<std::vector<uint8_t>> drain(int fd) {
  std::vector<std::vector<uint8_t>> out;
  std::vector<uint8_t> b(65536);
  for (;;) {
    const ssize_t n = ::recv(fd, b.data(), b.size(), MSG_DONTWAIT);
    if (n < 0) return out;
    out.emplace_back(b.begin(), b.begin() + n);
  }
}

}  // namespace

TEST(Ipfix, TemplateMessageLayout) {
  const ipfix::layout l;
  const auto m = ipfix::encode_template_message(7, 42, 1'700'000'000, l);
  // Message header: version 10, length = the whole message, export time, sequence, domain.
  ASSERT_GE(m.size(), 20u);
  EXPECT_EQ(rd16(m, 0), 10);
  EXPECT_EQ(rd16(m, 2), m.size());
  EXPECT_EQ(rd32(m, 4), 1'700'000'000u);
  EXPECT_EQ(rd32(m, 8), 42u);
  EXPECT_EQ(rd32(m, 12), 7u);
  // One template set (ID 2) covering the rest of the message.
  EXPECT_EQ(rd16(m, 16), 2);
  EXPECT_EQ(rd16(m, 18), m.size() - 16);
  // Template 256 (IPv4): ID, field count, then (element ID, length) pairs; the
  // enterprise bit is clear (IANA elements).
  // octetDeltaCount (1) counts IP bytes and layer2OctetDeltaCount (352) the
  // frames, as RFC 7012 and IANA define them.
  const std::vector<std::pair<uint16_t, uint16_t>> v4 = {{8, 4},   {12, 4},  {7, 2},   {11, 2}, {4, 1},
                                                         {6, 2},   {58, 2},  {351, 8}, {2, 8},  {1, 8},
                                                         {352, 8}, {152, 8}, {153, 8}, {136, 1}};
  size_t at = 20;
  EXPECT_EQ(rd16(m, at), 256);
  ASSERT_EQ(rd16(m, at + 2), v4.size());
  at += 4;
  for (const auto& [id, len] : v4) {
    EXPECT_EQ(rd16(m, at), id) << "at " << at;
    EXPECT_EQ(rd16(m, at + 2), len) << "element " << id;
    at += 4;
  }
  // Template 257 (IPv6): addresses 27 and 28 of 16 bytes, the rest as IPv4's.
  EXPECT_EQ(rd16(m, at), 257);
  ASSERT_EQ(rd16(m, at + 2), v4.size());
  at += 4;
  EXPECT_EQ(rd16(m, at), 27);
  EXPECT_EQ(rd16(m, at + 2), 16);
  EXPECT_EQ(rd16(m, at + 4), 28);
  EXPECT_EQ(rd16(m, at + 6), 16);
  at += 4 * v4.size();
  EXPECT_EQ(at, m.size());
}

TEST(Ipfix, TemplateWithoutOptionalFields) {
  ipfix::layout l;  // pp's
  l.tcp_flags = false;
  l.vlan = false;
  l.tunnel_id = false;
  l.ip_octets = false;
  l.capture_times = false;
  bool layer2_octets = false;
  for (const auto& f : ipfix::template_fields(4, l)) {
    EXPECT_NE(f.id, ipfix::ie_tcp_control_bits);
    EXPECT_NE(f.id, ipfix::ie_vlan_id);
    EXPECT_NE(f.id, ipfix::ie_layer2_segment_id);
    EXPECT_NE(f.id, ipfix::ie_octet_delta_count);  // pp's table has frame bytes only
    layer2_octets = layer2_octets || f.id == ipfix::ie_layer2_octet_delta_count;
  }
  EXPECT_TRUE(layer2_octets);
  EXPECT_EQ(ipfix::record_bytes(4, l), 46u);
  EXPECT_EQ(ipfix::record_bytes(6, l), 70u);
  uint32_t seq = 0;
  const auto m = ipfix::encode_data_messages(1, &seq, 0, l, {v4_record(1, 1)});
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(rd16(m[0], 18), 52u);  // 4 + 46, padded to 52
  EXPECT_EQ(m[0].size(), 16u + 52u);
  EXPECT_EQ(rd64(m[0], 20 + 4 + 4 + 2 + 2 + 1 + 8), 100u);  // layer2OctetDeltaCount after packetDeltaCount
  EXPECT_EQ(ipfix::record_bytes(4, ipfix::layout{}), 66u);
  EXPECT_EQ(ipfix::record_bytes(6, ipfix::layout{}), 90u);
}

TEST(Ipfix, DataRecordBytes) {
  const ipfix::layout l;
  uint32_t seq = 1000;
  const auto msgs = ipfix::encode_data_messages(3, &seq, 1'700'000'002, l, {v4_record(1, 5)});
  ASSERT_EQ(msgs.size(), 1u);
  const auto& m = msgs[0];
  EXPECT_EQ(seq, 1001u);         // grew by the one record
  EXPECT_EQ(rd32(m, 8), 1000u);  // the message carries the count before it
  EXPECT_EQ(rd32(m, 12), 3u);
  // 66-byte record + 4-byte set header = 70, padded to 72.
  EXPECT_EQ(rd16(m, 16), 256);
  EXPECT_EQ(rd16(m, 18), 72);
  EXPECT_EQ(m.size(), 16u + 72u);
  EXPECT_EQ(rd16(m, 2), m.size());
  const std::vector<uint8_t> want = {
      192,  0,    2,    1,                          // sourceIPv4Address
      198,  51,   100,  7,                          // destinationIPv4Address
      0xc0, 0x00, 0x00, 0x50,                       // ports 49152, 80
      6,                                            // protocolIdentifier
      0x00, 0x1b,                                   // tcpControlBits
      0x00, 0x64,                                   // vlanId 100
      0x01, 0,    0,    0,    0, 0x12, 0x34, 0x56,  // layer2SegmentId: VXLAN (0x01), VNI 0x123456
      0,    0,    0,    0,    0, 0,    0,    5,     // packetDeltaCount
      0,    0,    0,    0,    0, 0,    0x01, 0xae,  // octetDeltaCount 430 (IP bytes)
      0,    0,    0,    0,    0, 0,    0x01, 0xf4,  // layer2OctetDeltaCount 500 (frame bytes)
  };
  ASSERT_GE(m.size(), 20 + want.size());
  EXPECT_EQ(std::vector<uint8_t>(m.begin() + 20, m.begin() + 20 + want.size()), want);
  EXPECT_EQ(rd64(m, 20 + want.size()), 1'700'000'000'123u);
  EXPECT_EQ(rd64(m, 28 + want.size()), 1'700'000'001'456u);
  EXPECT_EQ(m[36 + want.size()], 1);  // flowEndReason idle timeout
  EXPECT_EQ(m[86], 0);                // padding is zero
  EXPECT_EQ(m[87], 0);
}

TEST(Ipfix, MessagesStayUnderTheLimitAndSequenceCountsRecords) {
  const ipfix::layout l;
  std::vector<ipfix::record> rs;
  for (int i = 0; i < 100; ++i) rs.push_back(v4_record(static_cast<uint8_t>(i), i + 1));
  for (int i = 0; i < 30; ++i) {
    ipfix::record r = v4_record(1, 1);
    r.family = 6;
    r.src[15] = static_cast<uint8_t>(i);
    rs.push_back(r);
  }
  uint32_t seq = 0xfffffff0u;  // wraps modulo 2^32
  const auto msgs = ipfix::encode_data_messages(1, &seq, 0, l, rs, 1400);
  uint32_t expect_seq = 0xfffffff0u;
  size_t v4 = 0, v6 = 0;
  for (const auto& m : msgs) {
    EXPECT_LE(m.size(), 1400u);
    EXPECT_EQ(rd16(m, 2), m.size());
    EXPECT_EQ(rd32(m, 8), expect_seq);
    size_t at = 16, in_msg = 0;
    while (at < m.size()) {
      const uint16_t id = rd16(m, at), len = rd16(m, at + 2);
      ASSERT_TRUE(id == 256 || id == 257);
      ASSERT_GE(len, 4u);
      EXPECT_EQ(len % 4, 0u);
      const size_t rb = ipfix::record_bytes(id == 257 ? 6 : 4, l);
      const size_t n = (len - 4) / rb;
      EXPECT_LT(len - 4 - n * rb, rb);  // padding is shorter than a record
      (id == 257 ? v6 : v4) += n;
      in_msg += n;
      at += len;
    }
    EXPECT_EQ(at, m.size());
    expect_seq += static_cast<uint32_t>(in_msg);
  }
  EXPECT_EQ(v4, 100u);
  EXPECT_EQ(v6, 30u);
  EXPECT_EQ(seq, expect_seq);
  EXPECT_EQ(seq, static_cast<uint32_t>(0xfffffff0u + 130u));
}

TEST(Ipfix, Layer2SegmentIdOnlyForVxlan) {
  using gnio::device::encap_kind;
  EXPECT_EQ(ipfix::layer2_segment_id(encap_kind::vxlan, 42), 0x0100000000000000ull | 42);
  EXPECT_EQ(ipfix::layer2_segment_id(encap_kind::vxlan, 0xff123456u), 0x0100000000123456ull);
  EXPECT_EQ(ipfix::layer2_segment_id(encap_kind::gtpu, 42), 0u);
  EXPECT_EQ(ipfix::layer2_segment_id(encap_kind::none, 0), 0u);
}

TEST(Ipfix, TrackerTimeouts) {
  ipfix::options o;
  o.active_timeout_s = 10;
  o.idle_timeout_s = 3;
  ipfix::flow_tracker t(o, ipfix::layout{});
  std::vector<gnio::device::flow_entry> table(4);
  auto& e = table[2];
  e.state = gnio::device::flow_slot_used;
  e.key.family = 4;
  e.key.proto = 17;
  e.meta = gnio::device::flow_meta_tagged | (5u << gnio::device::flow_meta_vlan_shift);
  std::vector<ipfix::record> out;
  // Growing every second: no record until the active timeout.
  for (uint64_t s = 0; s < 10; ++s) {
    e.packets = s + 1;
    e.bytes = 60 * (s + 1);
    t.scan(table.data(), table.size(), 1000 * s, false, out);
    EXPECT_TRUE(out.empty()) << s;
  }
  e.packets = 11;
  e.bytes = 660;
  t.scan(table.data(), table.size(), 10'000, false, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].reason, ipfix::end_reason::active_timeout);
  EXPECT_EQ(out[0].packets, 11u);
  EXPECT_EQ(out[0].layer2_octets, 660u);
  EXPECT_EQ(out[0].octets, 0u);  // the entry has no IP bytes
  EXPECT_EQ(out[0].start_ms, 0u);
  EXPECT_EQ(out[0].end_ms, 10'000u);
  EXPECT_EQ(out[0].vlan_id, 5u);
  out.clear();
  // Two more packets, then silence: the idle timeout exports only those two.
  e.packets = 13;
  e.bytes = 780;
  t.scan(table.data(), table.size(), 11'000, false, out);
  t.scan(table.data(), table.size(), 13'000, false, out);
  EXPECT_TRUE(out.empty());
  t.scan(table.data(), table.size(), 14'000, false, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].reason, ipfix::end_reason::idle_timeout);
  EXPECT_EQ(out[0].packets, 2u);
  EXPECT_EQ(out[0].layer2_octets, 120u);
  EXPECT_EQ(out[0].start_ms, 11'000u);
  EXPECT_EQ(out[0].end_ms, 11'000u);
  out.clear();
  // Nothing new: the final scan has nothing to flush; a new packet is flushed.
  t.scan(table.data(), table.size(), 20'000, true, out);
  EXPECT_TRUE(out.empty());
  e.packets = 14;
  e.bytes = 840;
  t.scan(table.data(), table.size(), 21'000, true, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].reason, ipfix::end_reason::forced_end);
  EXPECT_EQ(out[0].packets, 1u);
}

// With capture times in the entry (flow_table_update), a record's start and
// end are the capture times of its packets, not the scans', and octets are
// the IP bytes: a first record from the flow's first packet, a later one from
// the last packet of the record before it.
TEST(Ipfix, TrackerTakesCaptureTimesAndIpBytes) {
  ipfix::options o;
  o.active_timeout_s = 10;
  o.idle_timeout_s = 3;
  const ipfix::flow_tracker t(o, ipfix::layout{});
  gnio::device::flow_entry e{};
  e.state = gnio::device::flow_slot_used;
  e.key.family = 4;
  e.key.proto = 17;
  ipfix::flow_state s;
  std::vector<ipfix::record> out;
  const uint64_t t0 = 1'100'000'000'000'000'000ull;  // a capture of 2004, in ns
  e.packets = 2;
  e.bytes = 2 * 74;
  e.ip_bytes = 2 * 60;
  e.first_ns = t0 + 5'000'000;
  e.last_ns = t0 + 250'000'000;
  t.observe(s, e, 1'700'000'000'000, nullptr, out);  // scanned years later
  const auto forced = ipfix::end_reason::active_timeout;
  t.observe(s, e, 1'700'000'001'000, &forced, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].start_ms, t0 / 1'000'000 + 5);
  EXPECT_EQ(out[0].end_ms, t0 / 1'000'000 + 250);
  EXPECT_EQ(out[0].octets, 120u);
  EXPECT_EQ(out[0].layer2_octets, 148u);
  out.clear();
  e.packets = 3;
  e.bytes += 1514;
  e.ip_bytes += 1500;
  e.last_ns = t0 + 900'000'000;
  t.observe(s, e, 1'700'000'002'000, &forced, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].start_ms, t0 / 1'000'000 + 250);
  EXPECT_EQ(out[0].end_ms, t0 / 1'000'000 + 900);
  EXPECT_EQ(out[0].octets, 1500u);
  EXPECT_EQ(out[0].layer2_octets, 1514u);
}

// observe(): the state kept by the caller (flow_count's host table, by key),
// the same timeouts as scan(), and an end the caller decides (a flow given
// back) closing the record with its reason. Records add up to the counters.
TEST(Ipfix, TrackerObserveClosesWithTheCallersReason) {
  ipfix::options o;
  o.active_timeout_s = 10;
  o.idle_timeout_s = 3;
  const ipfix::flow_tracker t(o, ipfix::layout{});
  gnio::device::flow_entry e{};
  e.state = gnio::device::flow_slot_used;
  e.key.family = 4;
  e.key.proto = 6;
  e.meta = gnio::device::tcp_fin | gnio::device::tcp_ack;
  ipfix::flow_state s;
  std::vector<ipfix::record> out;
  e.packets = 3;
  e.bytes = 180;
  t.observe(s, e, 1000, nullptr, out);
  EXPECT_TRUE(out.empty());
  e.packets = 4;
  e.bytes = 240;
  t.observe(s, e, 2000, nullptr, out);
  EXPECT_TRUE(out.empty());
  const auto fin = ipfix::end_reason::end_of_flow;
  t.observe(s, e, 3000, &fin, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].reason, ipfix::end_reason::end_of_flow);
  EXPECT_EQ(out[0].packets, 4u);
  EXPECT_EQ(out[0].layer2_octets, 240u);
  EXPECT_EQ(out[0].start_ms, 1000u);
  EXPECT_EQ(out[0].end_ms, 2000u);
  EXPECT_EQ(out[0].tcp_flags, gnio::device::tcp_fin | gnio::device::tcp_ack);
  // Closed with nothing new: no second record, whatever the reason.
  out.clear();
  const auto forced = ipfix::end_reason::forced_end;
  t.observe(s, e, 4000, &forced, out);
  EXPECT_TRUE(out.empty());
  // Frames without an IP header have no IPFIX key: never a record.
  gnio::device::flow_entry arp{};
  arp.packets = 1;
  ipfix::flow_state sa;
  t.observe(sa, arp, 5000, &forced, out);
  EXPECT_TRUE(out.empty());
}

TEST(Ipfix, HostPort) {
  std::string host, why;
  uint16_t port = 0;
  EXPECT_TRUE(ipfix::split_host_port("127.0.0.1:4739", &host, &port, &why));
  EXPECT_EQ(host, "127.0.0.1");
  EXPECT_EQ(port, 4739);
  EXPECT_TRUE(ipfix::split_host_port("[::1]:9995", &host, &port, &why));
  EXPECT_EQ(host, "::1");
  EXPECT_EQ(port, 9995);
  EXPECT_TRUE(ipfix::split_host_port("localhost:1", &host, &port, &why));
  for (const char* bad : {"127.0.0.1", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:http", ":4739",
                          "::1:4739", "[::1]4739", "127.0.0.1:-5"}) {
    why.clear();
    EXPECT_FALSE(ipfix::split_host_port(bad, &host, &port, &why)) << bad;
    EXPECT_FALSE(why.empty()) << bad;
  }
}

TEST(Ipfix, UnresolvableCollectorIsAnError) {
  ipfix::options o;
  o.collector = "no-such-host.invalid:4739";
  auto ex = ipfix::exporter::open(o);
  ASSERT_FALSE(ex);
  EXPECT_EQ(ex.err().code(), gnio::status::invalid_value);
  EXPECT_NE(ex.err().message().find("cannot resolve"), std::string::npos) << ex.err().message();
}

// A collector port nobody listens on: the kernel's ICMP port unreachable
// turns into ECONNREFUSED on a later send, which is counted, not fatal.
TEST(Ipfix, SendErrorsAreCounted) {
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const uint16_t port = ntohs(a.sin_port);
  ::close(fd);  // the port is now closed: datagrams to it are refused

  ipfix::options o;
  o.collector = "127.0.0.1:" + std::to_string(port);
  auto ex = ipfix::exporter::open(o);
  ASSERT_TRUE(ex) << ex.err().message();
  ex->program = "ipfix_test";
  const ipfix::layout l;
  ex->announce(1, l, 0);
  // The refusal of one datagram shows on the next send (a few, in case of delay).
  for (int i = 0; i < 50 && ex->stats().send_errors == 0; ++i) {
    ex->send(1, {v4_record(1, 1)}, l, 1000);
    ::usleep(1000);
  }
  EXPECT_GT(ex->stats().send_errors, 0u);
  EXPECT_NE(ex->stats().last_error.find("refused"), std::string::npos) << ex->stats().last_error;
  // Records in a refused datagram are not sent, and say so.
  EXPECT_GT(ex->stats().records_failed, 0u);
  EXPECT_EQ(ex->stats().records, ex->stats().records_sent + ex->stats().records_failed + ex->stats().records_unsent);
}

TEST(Ipfix, EmptyCollectorIsAUsageError) {
  CLI::App app;
  ipfix::options o;
  ipfix::add_options(app, o);
  const char* argv[] = {"prog", "--ipfix", ""};
  try {
    app.parse(3, const_cast<char**>(argv));
    FAIL() << "--ipfix '' was accepted";
  } catch (const CLI::ValidationError& e) {
    EXPECT_NE(std::string(e.what()).find("needs HOST:PORT"), std::string::npos) << e.what();
  }
}

// More messages than the burst, paced, to a collector on this host that
// reads them as they come: every record goes out, in messages whose sequence
// numbers follow on, and the accounting says so.
TEST(Ipfix, PacedSendDeliversEverything) {
  uint16_t port = 0;
  const int rx = bound_receiver(&port);
  ASSERT_GE(rx, 0);
  ipfix::options o;
  o.collector = "127.0.0.1:" + std::to_string(port);
  o.rate_messages = 2000;
  auto ex = ipfix::exporter::open(o);
  ASSERT_TRUE(ex) << ex.err().message();
  const ipfix::layout l;
  std::vector<ipfix::record> recs;
  for (int i = 0; i < 2000; ++i) recs.push_back(v4_record(static_cast<uint8_t>(i), 1));
  std::vector<std::vector<uint8_t>> got;
  std::atomic<bool> sent{false};
  std::thread reader([&] {
    for (;;) {
      const bool last = sent.load();
      for (auto& m : drain(rx)) got.push_back(std::move(m));
      if (last) return;
      ::usleep(1000);
    }
  });
  ex->send(1, recs, l, 1000);
  sent = true;
  reader.join();
  ::close(rx);
  const auto& s = ex->stats();
  EXPECT_EQ(s.records, 2000u);
  EXPECT_EQ(s.records_sent, 2000u);
  EXPECT_EQ(s.records_lost(), 0u);
  ASSERT_EQ(got.size(), s.messages);
  EXPECT_GT(got.size(), size_t{ipfix::pacing_burst_messages});
  uint32_t seq = 0;
  for (size_t i = 1; i < got.size(); ++i) {  // [0]: the templates
    EXPECT_EQ(rd32(got[i], 8), seq) << i;
    seq += static_cast<uint32_t>((rd16(got[i], 18) - 4) / ipfix::record_bytes(4, l));
  }
  EXPECT_EQ(seq, 2000u);
}

// After a stop request whose flush timeout has passed (0 s here), nothing
// more is sent: the records are counted as unsent, not as sent.
TEST(Ipfix, StopWithoutTimeLeftCountsUnsent) {
  uint16_t port = 0;
  const int rx = bound_receiver(&port);
  ASSERT_GE(rx, 0);
  ipfix::options o;
  o.collector = "127.0.0.1:" + std::to_string(port);
  o.flush_timeout_s = 0;
  auto ex = ipfix::exporter::open(o);
  ASSERT_TRUE(ex) << ex.err().message();
  ex->program = "ipfix_test";
  const ipfix::layout l;
  ex->send(1, {v4_record(1, 1), v4_record(2, 1)}, l, 1000);
  bool stop = true;
  ex->stop_requested = [&stop] { return stop; };
  std::vector<ipfix::record> recs;
  for (int i = 0; i < 100; ++i) recs.push_back(v4_record(static_cast<uint8_t>(i), 1));
  ex->send(1, recs, l, 2000);
  const auto& s = ex->stats();
  EXPECT_EQ(s.records, 102u);
  EXPECT_EQ(s.records_sent, 2u);
  EXPECT_EQ(s.records_unsent, 100u);
  EXPECT_EQ(s.records_lost(), 100u);
  EXPECT_EQ(s.messages_unsent, 5u);  // 23 IPv4 records a message
  EXPECT_EQ(drain(rx).size(), s.messages);
  ::close(rx);
}

// A collector on this host that does not read (here: a socket with the
// default receive buffer, never read): sending waits for its queue to
// shrink rather than overflow it. The stop request that comes with the wait
// (flush timeout 0) leaves the rest unsent; every datagram sent is still in
// the queue, none dropped.
TEST(Ipfix, LocalCollectorQueueIsNotOverrun) {
  const int rx = ::socket(AF_INET, SOCK_DGRAM, 0);
  ASSERT_GE(rx, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(rx, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  ASSERT_EQ(::getsockname(rx, reinterpret_cast<sockaddr*>(&a), &len), 0);
  ipfix::options o;
  o.collector = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  o.rate_messages = 0;
  o.flush_timeout_s = 0;
  auto ex = ipfix::exporter::open(o);
  ASSERT_TRUE(ex) << ex.err().message();
  EXPECT_TRUE(ex->local_collector());
  ex->program = "ipfix_test";
  ipfix::exporter* e = &*ex;
  ex->stop_requested = [e] { return e->stats().collector_waits > 0; };
  const ipfix::layout l;
  std::vector<ipfix::record> recs;
  for (int i = 0; i < 23 * 300; ++i) recs.push_back(v4_record(static_cast<uint8_t>(i), 1));
  ex->send(1, recs, l, 1000);
  const auto& s = ex->stats();
  EXPECT_EQ(s.collector_waits, 1u);
  EXPECT_GT(s.records_sent, 0u);
  EXPECT_GT(s.records_unsent, 0u);
  EXPECT_EQ(s.records, s.records_sent + s.records_unsent);
  EXPECT_EQ(drain(rx).size(), s.messages);  // nothing dropped at the receiver
  ::close(rx);
}
