// SPDX-License-Identifier: Apache-2.0
// The IPFIX exporter's UDP transport, options and session (ipfix.hpp).
#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <utility>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <gnio/console.hpp>

#include "cli.hpp"
#include "ipfix.hpp"

namespace gnio::ipfix {

namespace {

int64_t steady_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// A message's sequence number (RFC 7011 §3.1, bytes 8..11).
uint32_t sequence_of(const std::vector<uint8_t>& m) {
  return uint32_t{m[8]} << 24 | uint32_t{m[9]} << 16 | uint32_t{m[10]} << 8 | m[11];
}

// How long one datagram may wait for room in the socket buffer before its
// EAGAIN/ENOBUFS counts as a send error.
constexpr int64_t k_retry_limit_ns = 1'000'000'000;

// A local collector's receive queue is read every 8 messages, and a send
// waits while it holds 64 KiB or more (a 1400-byte datagram takes about
// 2.3 KiB there). With the 8 messages sent after a reading, that stays under
// 90 KiB, well inside Linux's default 208 KiB buffer.
constexpr uint32_t k_queue_check_every = 8;
constexpr int64_t k_collector_queue_limit_bytes = 64 * 1024;

// The way /proc/net/udp{,6} print an address: each 32-bit word as the
// hexadecimal of its bytes in memory order.
std::string proc_address(const sockaddr* a) {
  const auto* words = a->sa_family == AF_INET6
                          ? reinterpret_cast<const uint8_t*>(&reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr)
                          : reinterpret_cast<const uint8_t*>(&reinterpret_cast<const sockaddr_in*>(a)->sin_addr);
  const int num_words = a->sa_family == AF_INET6 ? 4 : 1;
  std::string out;
  for (int w = 0; w < num_words; ++w) {
    uint32_t v = 0;
    std::memcpy(&v, words + 4 * w, 4);
    out += fmt::format("{:08X}", v);
  }
  return out;
}

// True when addr is one of this host's: a socket can bind to it.
bool is_local_address(const addrinfo* a) {
  const int fd = ::socket(a->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_storage s{};
  std::memcpy(&s, a->ai_addr, a->ai_addrlen);
  if (s.ss_family == AF_INET6) reinterpret_cast<sockaddr_in6*>(&s)->sin6_port = 0;
  else reinterpret_cast<sockaddr_in*>(&s)->sin_port = 0;
  const bool ok = ::bind(fd, reinterpret_cast<const sockaddr*>(&s), a->ai_addrlen) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

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
  app.add_option("--ipfix-rate", o.rate_messages,
                 "messages per second at most (about 23 IPv4 records each), after a burst of 32: a UDP collector "
                 "drops what its socket buffer cannot hold, silently; the default is one nfcapd with its default "
                 "buffer keeps up with. 0: no limit (give the collector a large buffer, e.g. nfcapd -B 33554432)")
      ->check(gnio::cli::number(0))
      ->capture_default_str();
  app.add_option("--ipfix-flush-timeout", o.flush_timeout_s,
                 "seconds the records still to send may take once the run is asked to stop (a signal, --duration); "
                 "the rest are counted as unsent (records_unsent in the JSON)")
      ->check(gnio::cli::number(0, 3600))
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
    stop_requested = std::move(o.stop_requested);
    tokens_ = o.tokens_;
    tokens_ns_ = o.tokens_ns_;
    give_up_ns_ = o.give_up_ns_;
    gave_up_ = o.gave_up_;
    local_collector_ = o.local_collector_;
    proc_addr_ = std::move(o.proc_addr_);
    proc_port_ = std::move(o.proc_port_);
    since_queue_check_ = o.since_queue_check_;
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
    return {status::invalid_value, fmt::format("--ipfix '{}': cannot resolve the collector host '{}': {}", o.collector,
                                               host, gai_strerror(rc))};
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
    const void* addr = a->ai_family == AF_INET6
                           ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr)
                           : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr);
    inet_ntop(a->ai_family, addr, buf, sizeof buf);
    ex.peer_ = a->ai_family == AF_INET6 ? fmt::format("[{}]:{}", buf, port) : fmt::format("{}:{}", buf, port);
    ex.fd_ = fd;
    ex.local_collector_ = is_local_address(a);
    ex.proc_addr_ = proc_address(a->ai_addr);
    ex.proc_port_ = fmt::format("{:04X}", port);
  }
  freeaddrinfo(res);
  if (ex.fd_ < 0)
    return {status::invalid_value,
            fmt::format("--ipfix '{}': no UDP socket to the collector: {}", o.collector, std::strerror(last_errno))};
  return ex;
}

void exporter::stopping() noexcept {
  if (give_up_ns_ == 0) give_up_ns_ = steady_ns() + static_cast<int64_t>(opt_.flush_timeout_s * 1e9);
}

bool exporter::giving_up() noexcept {
  if (gave_up_) return true;
  if (give_up_ns_ == 0 && stop_requested && stop_requested()) stopping();
  if (give_up_ns_ == 0 || steady_ns() < give_up_ns_) return false;
  gave_up_ = true;
  gnio::console::err(
      fmt::format("{}: --ipfix: asked to stop, and {} s of --ipfix-flush-timeout have passed: the "
                  "records not sent yet are dropped (counted as records_unsent)\n",
                  program, opt_.flush_timeout_s));
  return true;
}

bool exporter::wait_turn() {
  if (opt_.rate_messages <= 0) return !giving_up();
  bool waited = false;
  for (;;) {
    const int64_t now = steady_ns();
    if (tokens_ns_ == 0) tokens_ns_ = now;
    tokens_ = std::min<double>(pacing_burst_messages,
                               tokens_ + static_cast<double>(now - tokens_ns_) * 1e-9 * opt_.rate_messages);
    tokens_ns_ = now;
    if (giving_up()) return false;
    if (tokens_ >= 1) {
      tokens_ -= 1;
      return true;
    }
    if (!waited) ++stats_.paced_waits;
    waited = true;
    // In slices, so that a stop request is seen within 10 ms.
    const double wait_s = std::min((1 - tokens_) / opt_.rate_messages, 0.01);
    std::this_thread::sleep_for(std::chrono::duration<double>(wait_s));
  }
}

int64_t exporter::collector_queue_bytes() const {
  // The collector's socket: bound to its address (or to the wildcard) and
  // port, not connected. -1 when there is none (it runs elsewhere, e.g. in
  // another network namespace).
  int64_t longest = -1;
  for (const char* name : {"/proc/net/udp", "/proc/net/udp6"}) {
    FILE* f = std::fopen(name, "re");
    if (f == nullptr) continue;
    char line[512];
    bool header = true;
    while (std::fgets(line, sizeof line, f) != nullptr) {
      if (std::exchange(header, false)) continue;
      char local[80], remote[80];
      unsigned long tx_queue = 0, rx_queue = 0;
      if (std::sscanf(line, " %*u: %79s %79s %*x %lx:%lx", local, remote, &tx_queue, &rx_queue) != 4) continue;
      char* colon = std::strrchr(local, ':');
      const char* rcolon = std::strrchr(remote, ':');
      if (colon == nullptr || rcolon == nullptr || proc_port_ != colon + 1 || std::strcmp(rcolon + 1, "0000") != 0)
        continue;
      *colon = '\0';
      const std::string addr(local);
      if (addr != proc_addr_ && addr.find_first_not_of('0') != std::string::npos) continue;
      longest = std::max<int64_t>(longest, static_cast<int64_t>(rx_queue));
    }
    std::fclose(f);
  }
  return longest;
}

bool exporter::wait_collector() {
  if (!local_collector_ || ++since_queue_check_ < k_queue_check_every) return true;
  since_queue_check_ = 0;
  bool waited = false;
  while (collector_queue_bytes() >= k_collector_queue_limit_bytes) {
    if (!waited) ++stats_.collector_waits;
    waited = true;
    if (giving_up()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

bool exporter::wait_writable() {
  // EAGAIN: the send buffer is full, and POLLOUT says when it has room.
  // ENOBUFS (a full device queue) has no event to wait for: a short sleep.
  pollfd p{fd_, POLLOUT, 0};
  if (::poll(&p, 1, 10) <= 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return !giving_up();
}

bool exporter::transmit(const std::vector<uint8_t>& msg, bool is_template, uint64_t records) {
  const auto unsent = [&] {
    ++stats_.messages_unsent;
    stats_.records_unsent += records;
    return false;
  };
  if (!wait_turn() || !wait_collector()) return unsent();
  const int64_t first_try = steady_ns();
  int err = 0;
  for (;;) {
    // Never blocks inside the kernel: waiting for room is done here, where
    // a stop request is seen.
    const ssize_t n = ::send(fd_, msg.data(), msg.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n == static_cast<ssize_t>(msg.size())) {
      ++stats_.messages;
      if (is_template) ++stats_.template_messages;
      stats_.bytes += msg.size();
      stats_.records_sent += records;
      return true;
    }
    err = n < 0 ? errno : EMSGSIZE;
    if (err == EINTR) continue;
    if (err != EAGAIN && err != EWOULDBLOCK && err != ENOBUFS) break;
    if (steady_ns() - first_try >= k_retry_limit_ns) break;
    ++stats_.send_retries;
    if (!wait_writable()) return unsent();
  }
  ++stats_.send_errors;
  stats_.records_failed += records;
  stats_.last_error = fmt::format("send to {}: {}", peer_, std::strerror(err));
  if (errors_by_errno_[err]++ == 0)
    gnio::console::err(fmt::format("{}: --ipfix: {} (counted; later ones of this kind are counted silently)\n", program,
                                   stats_.last_error));
  return false;
}

void exporter::announce(uint32_t domain, const layout& l, uint64_t now) {
  domain_state& d = domains_[domain];
  (void)transmit(encode_template_message(domain, d.sequence, static_cast<uint32_t>(now / 1000), l), true, 0);
  d.templates_ms = now;
  d.announced = true;
}

void exporter::send(uint32_t domain, const std::vector<record>& records, const layout& l, uint64_t now) {
  if (records.empty()) return;
  domain_state& d = domains_[domain];
  if (!d.announced || now - d.templates_ms >= static_cast<uint64_t>(opt_.template_refresh_s * 1000))
    announce(domain, l, now);
  uint32_t seq = d.sequence;
  const auto msgs =
      encode_data_messages(domain, &seq, static_cast<uint32_t>(now / 1000), l, records, opt_.max_message_bytes);
  for (size_t i = 0; i < msgs.size(); ++i) {
    // Records in this message: the next one's sequence number less its own (mod 2^32).
    const uint32_t next = i + 1 < msgs.size() ? sequence_of(msgs[i + 1]) : seq;
    (void)transmit(msgs[i], false, next - sequence_of(msgs[i]));
  }
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

void session::observe(uint32_t table, flow_state& s, const device::flow_entry& e, uint64_t now, const end_reason* end) {
  if (!enabled_ || table >= trackers_.size()) return;
  trackers_[table].observe(s, e, now, end, pending_);
}

void session::flush(uint32_t table, uint64_t now) {
  if (!enabled_ || table >= trackers_.size() || pending_.empty()) return;
  ex_.send(opt_.domain + table, pending_, layout_, now);
  pending_.clear();
}

std::string session::summary() const {
  const export_stats& s = ex_.stats();
  const std::string pace =
      opt_.rate_messages > 0 ? fmt::format("at most {} messages/s", opt_.rate_messages) : std::string("unpaced");
  return fmt::format(
      "IPFIX to {}: {} records in {} messages ({} bytes, {} template messages, {}), {} send errors{}, {} records not "
      "sent",
      ex_.peer(), s.records, s.messages, s.bytes, s.template_messages, pace, s.send_errors,
      s.send_errors ? " (last: " + s.last_error + ")" : std::string(), s.records_lost());
}

std::string session::loss_warning() const {
  const export_stats& s = ex_.stats();
  if (s.records_lost() == 0 && s.messages_unsent == 0) return {};
  std::string w = fmt::format("IPFIX: {} of {} records were not sent", s.records_lost(), s.records);
  if (s.records_failed > 0)
    w += fmt::format("; {} were in the {} datagrams that failed to send (last: {})", s.records_failed, s.send_errors,
                     s.last_error);
  if (s.messages_unsent > 0)
    w += fmt::format(
        "; {} in {} messages were left when --ipfix-flush-timeout ({} s) had passed after the stop "
        "request (a longer timeout or a higher --ipfix-rate sends more)",
        s.records_unsent, s.messages_unsent, opt_.flush_timeout_s);
  return w;
}

void session::add_json(nlohmann::json& j) const {
  if (!enabled_) return;
  const export_stats& s = ex_.stats();
  j["ipfix"] = {{"collector", ex_.peer()},
                {"records", s.records},
                {"records_sent", s.records_sent},
                {"records_failed", s.records_failed},
                {"records_unsent", s.records_unsent},
                {"records_not_sent", s.records_lost()},
                {"messages", s.messages},
                {"messages_unsent", s.messages_unsent},
                {"template_messages", s.template_messages},
                {"bytes", s.bytes},
                {"send_errors", s.send_errors},
                {"send_retries", s.send_retries},
                {"paced_waits", s.paced_waits},
                {"collector_waits", s.collector_waits},
                {"collector_on_this_host", ex_.local_collector()},
                {"last_error", s.last_error},
                {"rate_messages", opt_.rate_messages},
                {"flush_timeout_s", opt_.flush_timeout_s},
                {"domains", trackers_.size()},
                {"first_domain", opt_.domain},
                {"active_timeout_s", opt_.active_timeout_s},
                {"idle_timeout_s", opt_.idle_timeout_s},
                {"scan_interval_s", opt_.scan_interval_s}};
}

}  // namespace gnio::ipfix
