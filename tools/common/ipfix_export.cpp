// SPDX-License-Identifier: Apache-2.0
// The IPFIX exporter's UDP transport, options and session (ipfix.hpp).
#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <gnio/console.hpp>

#include "cli.hpp"
#include "ipfix.hpp"

namespace gnio::ipfix {

uint64_t now_ms() noexcept {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

bool split_host_port(const std::string& text, std::string* host, uint16_t* port, std::string* why) {
  std::string h, p;
  if (!text.empty() && text[0] == '[') {
    const size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      *why = "an IPv6 address goes in brackets before the port: [::1]:4739";
      return false;
    }
    h = text.substr(1, close - 1);
    p = text.substr(close + 2);
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string::npos) {
      *why = "no port: write HOST:PORT, e.g. 127.0.0.1:4739";
      return false;
    }
    h = text.substr(0, colon);
    p = text.substr(colon + 1);
    if (h.find(':') != std::string::npos) {
      *why = "an IPv6 address goes in brackets before the port: [::1]:4739";
      return false;
    }
  }
  if (h.empty()) {
    *why = "no host before the port";
    return false;
  }
  if (p.empty() || p.size() > 5 || p.find_first_not_of("0123456789") != std::string::npos) {
    *why = fmt::format("port '{}' is not a number in 1..65535", p);
    return false;
  }
  const unsigned long v = std::stoul(p);
  if (v < 1 || v > 65535) {
    *why = fmt::format("port {} is not in 1..65535", v);
    return false;
  }
  *host = h;
  *port = static_cast<uint16_t>(v);
  return true;
}

void add_options(CLI::App& app, options& o) {
  app.add_option("--ipfix", o.collector,
                 "send flow records as IPFIX (RFC 7011) over UDP to the collector at HOST:PORT (e.g. "
                 "127.0.0.1:4739 for nfcapd -p 4739; [::1]:4739 for IPv6): templates first and every "
                 "--ipfix-template-refresh s, records when a flow times out and every flow at the end of the run "
                 "(docs/ipfix.md)")
      // An empty value would otherwise mean "no export" without a word.
      ->check(CLI::Validator(
          [](std::string& v) {
            return v.empty() ? std::string("needs HOST:PORT, e.g. 127.0.0.1:4739 (leave --ipfix out for no export)")
                             : std::string();
          },
          "HOST:PORT"));
  app.add_option("--ipfix-active-timeout", o.active_timeout_s,
                 "seconds: a flow that keeps sending is exported at least this often, each record counting the "
                 "packets and bytes since the last")
      ->check(gnio::cli::number(0.001))
      ->capture_default_str();
  app.add_option("--ipfix-idle-timeout", o.idle_timeout_s,
                 "seconds: a flow with no new packet for this long is exported and its record closed")
      ->check(gnio::cli::number(0.001))
      ->capture_default_str();
  app.add_option("--ipfix-scan-interval", o.scan_interval_s,
                 "seconds between copies of the flow table to the host (the timeouts and the records' times have "
                 "this resolution; each copy reads the whole table)")
      ->check(gnio::cli::number(0.01, 3600))
      ->capture_default_str();
  app.add_option("--ipfix-template-refresh", o.template_refresh_s,
                 "seconds between resending the templates (UDP collectors that start late, or lose a datagram, learn "
                 "them again; RFC 7011 section 8.4)")
      ->check(gnio::cli::number(1, 86400))
      ->capture_default_str();
  app.add_option("--ipfix-domain", o.domain,
                 "observation domain ID of the first GPU's flow table; the next GPUs (and pp's CPU thread) count on")
      ->check(gnio::cli::whole(0, UINT32_MAX - 64))
      ->capture_default_str();
}

exporter::exporter(exporter&& o) noexcept { *this = std::move(o); }

exporter& exporter::operator=(exporter&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
    opt_ = std::move(o.opt_);
    peer_ = std::move(o.peer_);
    domains_ = std::move(o.domains_);
    errors_by_errno_ = std::move(o.errors_by_errno_);
    stats_ = std::move(o.stats_);
    program = std::move(o.program);
  }
  return *this;
}

exporter::~exporter() {
  if (fd_ >= 0) ::close(fd_);
}

result<exporter> exporter::open(const options& o) {
  std::string host, why;
  uint16_t port = 0;
  if (!split_host_port(o.collector, &host, &port, &why))
    return {status::invalid_value, fmt::format("--ipfix '{}': {}", o.collector, why)};
  if (o.max_message_bytes < message_header_bytes + set_header_bytes + 2 * record_bytes(6, layout{}))
    return {status::invalid_value, fmt::format("IPFIX message size {} is too small", o.max_message_bytes)};
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &res); rc != 0)
    return {status::invalid_value,
            fmt::format("--ipfix '{}': cannot resolve the collector host '{}': {}", o.collector, host, gai_strerror(rc))};
  exporter ex;
  ex.opt_ = o;
  int last_errno = 0;
  for (addrinfo* a = res; a != nullptr && ex.fd_ < 0; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      last_errno = errno;
      continue;
    }
    // Connected: an ICMP port unreachable from the collector comes back as
    // ECONNREFUSED on a later send, which is counted.
    if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      last_errno = errno;
      ::close(fd);
      continue;
    }
    char buf[INET6_ADDRSTRLEN] = "?";
    const void* addr = a->ai_family == AF_INET6 ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr)
                                                : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr);
    inet_ntop(a->ai_family, addr, buf, sizeof buf);
    ex.peer_ = a->ai_family == AF_INET6 ? fmt::format("[{}]:{}", buf, port) : fmt::format("{}:{}", buf, port);
    ex.fd_ = fd;
  }
  freeaddrinfo(res);
  if (ex.fd_ < 0)
    return {status::invalid_value, fmt::format("--ipfix '{}': no UDP socket to the collector: {}", o.collector,
                                               std::strerror(last_errno))};
  return ex;
}

void exporter::transmit(const std::vector<uint8_t>& msg, bool is_template) {
  // Never blocks the run: a full socket buffer is a counted send error like any other.
  const ssize_t n = ::send(fd_, msg.data(), msg.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  if (n == static_cast<ssize_t>(msg.size())) {
    ++stats_.messages;
    if (is_template) ++stats_.template_messages;
    stats_.bytes += msg.size();
    return;
  }
  const int err = n < 0 ? errno : EMSGSIZE;
  ++stats_.send_errors;
  stats_.last_error = fmt::format("send to {}: {}", peer_, std::strerror(err));
  if (errors_by_errno_[err]++ == 0)
    gnio::console::err(fmt::format("{}: --ipfix: {} (counted; later ones of this kind are counted silently)\n",
                                   program, stats_.last_error));
}

void exporter::announce(uint32_t domain, const layout& l, uint64_t now) {
  domain_state& d = domains_[domain];
  transmit(encode_template_message(domain, d.sequence, static_cast<uint32_t>(now / 1000), l), true);
  d.templates_ms = now;
  d.announced = true;
}

void exporter::send(uint32_t domain, const std::vector<record>& records, const layout& l, uint64_t now) {
  if (records.empty()) return;
  domain_state& d = domains_[domain];
  if (!d.announced || now - d.templates_ms >= static_cast<uint64_t>(opt_.template_refresh_s * 1000))
    announce(domain, l, now);
  uint32_t seq = d.sequence;
  for (const auto& msg :
       encode_data_messages(domain, &seq, static_cast<uint32_t>(now / 1000), l, records, opt_.max_message_bytes))
    transmit(msg, false);
  // The sequence counts records sent, lost ones too: a collector sees the gap (RFC 7011 §3.1).
  d.sequence = seq;
  stats_.records += records.size();
}

result<session> session::open(const options& o, const layout& l, std::string program) {
  session s;
  if (o.collector.empty()) return s;
  auto ex = exporter::open(o);
  if (!ex) return ex.err();
  s.ex_ = std::move(*ex);
  s.ex_.program = std::move(program);
  s.opt_ = o;
  s.layout_ = l;
  s.enabled_ = true;
  return s;
}

void session::start(uint32_t num_tables, uint64_t now) {
  if (!enabled_) return;
  trackers_.assign(num_tables, flow_tracker(opt_, layout_));
  for (uint32_t i = 0; i < num_tables; ++i) ex_.announce(opt_.domain + i, layout_, now);
  last_scan_ms_ = now;
}

bool session::due(uint64_t now) const noexcept {
  return enabled_ && now - last_scan_ms_ >= static_cast<uint64_t>(opt_.scan_interval_s * 1000);
}

void session::scan(uint32_t table, const device::flow_entry* entries, size_t capacity, uint64_t now, bool final) {
  if (!enabled_ || table >= trackers_.size()) return;
  pending_.clear();
  trackers_[table].scan(entries, capacity, now, final, pending_);
  ex_.send(opt_.domain + table, pending_, layout_, now);
}

std::string session::summary() const {
  const export_stats& s = ex_.stats();
  return fmt::format("IPFIX to {}: {} records in {} messages ({} bytes, {} template messages), {} send errors{}",
                     ex_.peer(), s.records, s.messages, s.bytes, s.template_messages, s.send_errors,
                     s.send_errors ? " (last: " + s.last_error + ")" : std::string());
}

void session::add_json(nlohmann::json& j) const {
  if (!enabled_) return;
  const export_stats& s = ex_.stats();
  j["ipfix"] = {{"collector", ex_.peer()},
                {"records", s.records},
                {"messages", s.messages},
                {"template_messages", s.template_messages},
                {"bytes", s.bytes},
                {"send_errors", s.send_errors},
                {"last_error", s.last_error},
                {"domains", trackers_.size()},
                {"first_domain", opt_.domain},
                {"active_timeout_s", opt_.active_timeout_s},
                {"idle_timeout_s", opt_.idle_timeout_s},
                {"scan_interval_s", opt_.scan_interval_s}};
}

}  // namespace gnio::ipfix
