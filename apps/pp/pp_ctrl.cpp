// SPDX-License-Identifier: Apache-2.0
// gnio pp: the HTTP server's pages and the CPU thread for TCP connection
// control (pp_ctrl.hpp).
#include "pp_ctrl.hpp"

#include <cstdio>

#include <fmt/format.h>

#include "pp_app.hpp"
#include "pp_device.hpp"

namespace gnio::pp {

namespace {

std::string response(const char* status_line, const std::string& html) {
  return fmt::format(
      "HTTP/1.1 {}\r\nServer: gnio-pp\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\n"
      "Connection: close\r\n\r\n{}",
      status_line, html.size(), html);
}

const std::string& index_page() {
  static const std::string p =
      response("200 OK",
               "<!DOCTYPE html>\n<html><head><title>gnio pp</title></head><body>\n<h1>gnio pp</h1>\n"
               "<p>This page was sent by <b>gnio pp</b>, the GPU packet-processing application of gnio "
               "(GPU-initiated packet I/O). A persistent kernel received your request and built this response.</p>\n"
               "<p>See also <a href=\"/hello\">/hello</a>.</p>\n</body></html>\n");
  return p;
}

const std::string& hello_page() {
  static const std::string p =
      response("200 OK",
               "<!DOCTYPE html>\n<html><head><title>hello</title></head><body>\n<h1>Hello from gnio pp</h1>\n"
               "<p>Back to <a href=\"/\">the index</a>.</p>\n</body></html>\n");
  return p;
}

const std::string& missing_page() {
  static const std::string p =
      response("404 Not Found",
               "<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head><body>\n<h1>404 Not Found</h1>\n"
               "<p>gnio pp serves <a href=\"/\">/</a> and <a href=\"/hello\">/hello</a>.</p>\n</body></html>\n");
  return p;
}

// gets the same ISN and the GPU needs no connection table.
uint32_t isn_for(const device::parsed_pkt& p, uint64_t secret) {
  uint8_t t[12];
  device::put32(t, p.ipv4.src);
  device::put32(t + 4, p.ipv4.dst);
  device::put16(t + 8, p.src_port);
  device::put16(t + 10, p.dst_port);
  const uint64_t h = device::fnv1a64(t, sizeof t, device::fnv1a64_offset ^ secret);
  return static_cast<uint32_t>(h ^ (h >> 32));
}

bool ctrl_send(ctrl_state& s, const uint8_t* req, const device::parsed_pkt& p, uint8_t flags, uint32_t seq,
               uint32_t ack) {
  uint64_t idx = 0;
  if (device::tx_reserve(s.tx, 1, 20'000'000, &idx) != status::success) return false;
  uint8_t* buf = s.tx.buf_addr(idx);
  const uint32_t n = make_tcp_segment(req, p, s.cfg.mac, flags, seq, ack, nullptr, 0, buf, s.tx.stride);
  if (n == 0) return false;  // reserved, not committed: the slot is reused by the next reserve
  device::tx_prepare(s.tx, idx, s.tx_exec.buf_addr(idx), n);
  device::tx_commit(s.tx, 1);
  device::tx_doorbell(s.tx);
  return true;
}

void ctrl_packet(ctrl_state& s, const uint8_t* data, uint32_t len, uint32_t wire_len, uint64_t ts_ns) {
  if (!device::bpf_match(s.filter, data, len, wire_len)) {
    ++s.c.filtered;
    return;
  }
  device::parsed_pkt p;
  (void)device::parse(data, len, p);
  // The kernels' counting functions, on this thread's counters and tables.
  count_packet(data, len, wire_len, ts_ns, p, s.conv.data(), k_ctrl_conv_capacity, s.dns.data(), k_ctrl_dns_capacity,
               s.c);
  if (!s.has_tx || !s.cfg.http_server || p.malformed || p.l3 != device::l3_kind::ipv4 || p.l4 != device::l4_kind::tcp ||
      p.ipv4.dst != s.cfg.ip || p.dst_port != 80)
    return;
  const uint16_t f = p.tcp.flags;
  if (f & device::tcp_rst) return;  // counted only
  bool ok = true;
  if ((f & device::tcp_syn) && !(f & device::tcp_ack)) {
    ok = ctrl_send(s, data, p, static_cast<uint8_t>(device::tcp_syn | device::tcp_ack), isn_for(p, s.isn_secret),
                   p.tcp.seq + 1);
    if (ok) ++s.synack_sent;
  } else if (f & device::tcp_fin) {
    // The peer's ack is our next sequence number; its FIN takes one.
    ok = ctrl_send(s, data, p, static_cast<uint8_t>(device::tcp_fin | device::tcp_ack), p.tcp.ack,
                   p.tcp.seq + p.payload_len + 1);
    if (ok) ++s.finack_sent;
  } else {
    return;
  }
  if (!ok) ++s.c.tx_failed;
}

}  // namespace

std::string http_page(std::string_view path) {
  if (path == "/" || path == "/index.html") return index_page();
  if (path == "/hello") return hello_page();
  return missing_page();
}

page_set make_pages() {
  page_set s;
  s.data = index_page();
  s.index.index_off = 0;
  s.index.index_len = static_cast<uint32_t>(index_page().size());
  s.index.second_off = static_cast<uint32_t>(s.data.size());
  s.index.second_len = static_cast<uint32_t>(hello_page().size());
  s.data += hello_page();
  s.index.missing_off = static_cast<uint32_t>(s.data.size());
  s.index.missing_len = static_cast<uint32_t>(missing_page().size());
  s.data += missing_page();
  std::snprintf(s.index.second_path, sizeof s.index.second_path, "%s", "/hello");
  return s;
}

void ctrl_main(ctrl_state* s) {
  for (;;) {
    uint64_t first = 0;
    uint32_t num = 0;
    const status st = device::recv<device::scope::thread>(s->rx, s->batch, 1'000'000, &first, &num);
    if (st == status::success) {
      for (uint32_t i = 0; i < num; ++i)
        ctrl_packet(*s, device::pkt_addr(s->rx, first + i), device::pkt_len(s->rx, first + i),
                    device::pkt_wire_len(s->rx, first + i), device::pkt_timestamp_ns(s->rx, first + i));
      // The replies point at TX buffers, not at RX slots, so the slots can go.
      std::lock_guard lk(s->mu);
      s->snap = s->c;
    } else if (st == status::shutdown) {
      s->ended.store(true);
      break;
    }
    if (s->stop.load(std::memory_order_acquire)) break;
  }
  device::release_all(s->rx);
  std::lock_guard lk(s->mu);
  s->snap = s->c;
}

}  // namespace gnio::pp
