// SPDX-License-Identifier: Apache-2.0
// The /metrics endpoint (metrics.hpp).
//
// The HTTP server is our own, on one thread with non-blocking sockets and
// poll(), rather than a library's: it must never delay the program's exit,
// whatever a client does, and hold no more than a fixed amount of memory and
// connections. cpp-httplib (used before) joins a worker that is still reading
// a slow client's request on stop, reads any request body whole, and has no
// deadline for a request head, so 2 slow clients held a stopped program for
// as long as they liked and a streamed POST grew its memory without bound
// (issue 31). Serving one small text needs only a sliver of HTTP/1.1:
//
//   - a request head (request line and headers) of at most 8 KiB, complete
//     within 2 s of the connection (414, 431 and 408 otherwise);
//   - GET and HEAD only (405), of /metrics and / (404), and no request body:
//     a Content-Length other than 0 or any Transfer-Encoding is 413, decided
//     from the head, so that no body byte is ever stored;
//   - one response per connection (Connection: close), written within 5 s;
//   - at most 64 connections: a new one closes the oldest that has not sent
//     its request yet, so that idle and slow clients cannot lock out a
//     scrape.
//
// stop is an eventfd that the thread polls with everything else; the thread
// never blocks anywhere but in poll(), so the destructor's join is prompt.
#include "metrics.hpp"

#include <arpa/inet.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <gnio/backend/backend.hpp>
#include <gnio/device/config.hpp>
#include <gnio/gpu.hpp>

#include "cli.hpp"

namespace gnio::metrics {

void add_options(CLI::App& app, options& o) {
  app.add_option("--metrics", o.listen,
                 "serve Prometheus metrics on http://ADDR:PORT/metrics while the program runs (PORT or :PORT alone "
                 "listens on 127.0.0.1; docs/monitoring.md lists the metrics)")
      ->type_name("ADDR:PORT")
      ->check(CLI::Validator(
          [](std::string& v) {
            return v.empty() ? std::string("needs ADDR:PORT, :PORT or PORT (e.g. 9464)") : std::string();
          },
          ""));
  app.add_option("--metrics-linger", o.linger_s,
                 "keep serving the final metrics S seconds after the run ends (so that Prometheus scrapes a short "
                 "run's final values; Ctrl-C ends it early)")
      ->check(gnio::cli::number(0, 86400))
      ->type_name("S");
}

std::string parse_endpoint(std::string_view s, endpoint* out) {
  std::string_view host, port_text;
  if (s.empty()) return "needs ADDR:PORT, :PORT or PORT (e.g. 9464)";
  if (s.front() == '[') {  // [v6]:port
    const size_t close = s.find(']');
    if (close == std::string_view::npos) return "an IPv6 address in [ ] needs its closing ]";
    host = s.substr(1, close - 1);
    if (close + 1 >= s.size() || s[close + 1] != ':') return "needs :PORT after the ] of an IPv6 address";
    port_text = s.substr(close + 2);
  } else if (const size_t colon = s.rfind(':'); colon == std::string_view::npos) {
    port_text = s;
  } else {
    host = s.substr(0, colon);
    if (host.find(':') != std::string_view::npos) return "an IPv6 address needs brackets: [::1]:9464";
    port_text = s.substr(colon + 1);
  }
  if (port_text.empty()) return "no port after the address (ADDR:PORT)";
  unsigned long port = 0;
  const auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec == std::errc::result_out_of_range ||
      (ec == std::errc() && end == port_text.data() + port_text.size() && (port < 1 || port > 65535)))
    return fmt::format("port {} is outside 1..65535", port_text);
  if (ec != std::errc() || end != port_text.data() + port_text.size())
    return fmt::format("port '{}' is not a number", port_text);
  out->host = host.empty() ? "127.0.0.1" : std::string(host);
  out->port = static_cast<uint16_t>(port);
  return "";
}

// ---------------------------------------------------------------------------
// text
// ---------------------------------------------------------------------------

text& text::family(std::string_view name, std::string_view type, std::string_view help) {
  name_ = std::string(name);
  std::string h;
  for (char c : help) {
    if (c == '\\') h += "\\\\";
    else if (c == '\n') h += "\\n";
    else h += c;
  }
  out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, h, name, type);
  return *this;
}

void text::name_and_labels(const labels& l) {
  out_ += name_;
  if (l.empty()) return;
  out_ += '{';
  for (size_t i = 0; i < l.size(); ++i) {
    if (i) out_ += ',';
    out_ += l[i].first;
    out_ += "=\"";
    for (char c : l[i].second) {
      if (c == '\\') out_ += "\\\\";
      else if (c == '"') out_ += "\\\"";
      else if (c == '\n') out_ += "\\n";
      else out_ += c;
    }
    out_ += '"';
  }
  out_ += '}';
}

text& text::sample(const labels& l, uint64_t value) {
  name_and_labels(l);
  out_ += fmt::format(" {}\n", value);
  return *this;
}

text& text::sample(const labels& l, double value) {
  name_and_labels(l);
  out_ += fmt::format(" {}\n", value);
  return *this;
}

// ---------------------------------------------------------------------------
// The port's families
// ---------------------------------------------------------------------------

std::string port_label(std::string_view device) {
  auto a = gnio::backend::parse_devargs(device);
  if (!a) {
    const size_t colon = device.find(':');
    return colon == std::string_view::npos || colon == 0 ? std::string("unknown")
                                                         : std::string(device.substr(0, colon));
  }
  const auto& args = a.value();
  auto what = [&]() -> std::string {
    for (std::string_view key : {"if", "vdev", "port", "name"})
      if (const std::string* v = args.find(key); v && !v->empty()) return *v;
    for (std::string_view key : {"file", "rx"})  // a path: its file name only
      if (const std::string* v = args.find(key); v && !v->empty()) {
        const size_t slash = v->find_last_of('/');
        return slash == std::string::npos ? *v : v->substr(slash + 1);
      }
    return "";
  };
  const std::string w = what();
  return w.empty() ? args.name : args.name + ":" + w;
}

void add_port(text& t, std::string_view port, const port_stats& st, const std::vector<rxq_label>& rxq,
              const std::vector<uint64_t>& taken, const std::vector<uint64_t>& filtered, bool engine_failed) {
  const std::string p(port);
  const size_t nq = st.rxq.size();
  auto q_labels = [&](size_t q) {
    return labels{{"port", p},
                  {"queue", std::to_string(q)},
                  {"class", q < rxq.size() ? rxq[q].cls : "all"},
                  {"gpu", q < rxq.size() ? rxq[q].gpu : "0"}};
  };
  auto per_q = [&](std::string_view name, std::string_view type, std::string_view help, auto get) {
    t.family(name, type, help);
    for (size_t q = 0; q < nq; ++q) t.sample(q_labels(q), get(q));
  };
  auto took = [&](size_t q) { return q < taken.size() ? taken[q] : uint64_t{0}; };
  t.family("gnio_rx_frames_total", "counter",
           "Frames the port's source produced, before they were steered to RX queues (the JSON's received).")
      .sample({{"port", p}}, st.rx_frames);
  per_q("gnio_rx_packets_total", "counter", "Frames delivered to the RX queue's ring.",
        [&](size_t q) { return st.rxq[q].delivered; });
  per_q("gnio_rx_bytes_total", "counter",
        "Bytes of the frames delivered to the RX queue, as long as they were on the wire.",
        [&](size_t q) { return st.rxq[q].bytes; });
  per_q("gnio_rx_missed_total", "counter", "Frames dropped because the RX queue's ring was full.",
        [&](size_t q) { return st.rxq[q].missed; });
  per_q("gnio_rx_truncated_total", "counter", "Frames delivered cut to the RX slot size (--rx-slot).",
        [&](size_t q) { return st.rxq[q].truncated; });
  per_q("gnio_kernel_packets_total", "counter",
        "Frames the queue's kernel (or pp's CPU thread) took from its ring: the JSON's processed plus filtered.", took);
  per_q("gnio_kernel_filtered_packets_total", "counter",
        "Frames the queue's kernel took and --filter refused (included in gnio_kernel_packets_total).",
        [&](size_t q) { return q < filtered.size() ? filtered[q] : uint64_t{0}; });
  per_q("gnio_rx_pending", "gauge", "Frames delivered to the RX queue that its kernel has not taken yet.",
        [&](size_t q) { return st.rxq[q].delivered > took(q) ? st.rxq[q].delivered - took(q) : uint64_t{0}; });
  t.family("gnio_rx_unsteered_total", "counter", "Frames dropped because no RX queue takes their traffic class.")
      .sample({{"port", p}}, st.rx_unsteered);
  t.family("gnio_rx_source_errors_total", "counter", "Read errors the port's source reported.")
      .sample({{"port", p}}, st.rx_errors);
  t.family("gnio_rx_source_dropped_total", "counter",
           "Frames the source dropped before the engine saw them (not in gnio_rx_frames_total).")
      .sample({{"port", p}}, st.rx_dropped);
  t.family("gnio_tx_packets_total", "counter", "Frames the port transmitted.").sample({{"port", p}}, st.tx_frames);
  t.family("gnio_tx_bytes_total", "counter", "Bytes of the frames the port transmitted.")
      .sample({{"port", p}}, st.tx_bytes);
  t.family("gnio_tx_errors_total", "counter", "Frames the port failed to transmit.")
      .sample({{"port", p}}, st.tx_errors);
  t.family("gnio_tx_completed_total", "counter", "Descriptors of the TX queue the port completed.");
  for (size_t q = 0; q < st.txq.size(); ++q) t.sample({{"port", p}, {"queue", std::to_string(q)}}, st.txq[q].sent);
  t.family("gnio_tx_bad_addr_total", "counter",
           "TX descriptors the port refused because their address was outside registered memory.");
  for (size_t q = 0; q < st.txq.size(); ++q) t.sample({{"port", p}, {"queue", std::to_string(q)}}, st.txq[q].bad_addr);
  t.family("gnio_engine_frames_total", "counter", "Frames the engine lane took from the backend.");
  for (size_t l = 0; l < st.lanes.size(); ++l) t.sample({{"port", p}, {"lane", std::to_string(l)}}, st.lanes[l].frames);
  t.family("gnio_engine_busy_seconds_total", "counter", "Time the engine lane spent on bursts that carried frames.");
  for (size_t l = 0; l < st.lanes.size(); ++l)
    t.sample({{"port", p}, {"lane", std::to_string(l)}}, static_cast<double>(st.lanes[l].busy_ns) / 1e9);
  t.family("gnio_engine_full_seconds_total", "counter",
           "Time the engine lane waited for a full queue to be consumed (lossless ports).");
  for (size_t l = 0; l < st.lanes.size(); ++l)
    t.sample({{"port", p}, {"lane", std::to_string(l)}}, static_cast<double>(st.lanes[l].full_ns) / 1e9);
  t.family("gnio_engine_errors_total", "counter",
           "Errors that ended the port's engine: 1 once it stopped on one (the JSON's engine_error).")
      .sample({{"port", p}}, uint64_t{engine_failed ? 1u : 0u});
}

void add_gpu_info_family(text& t) {
  t.family("gnio_gpu_info", "gauge",
           "Always 1: the GPU (or host executor) behind each context index that the gpu label of other series names.");
}

void add_gpu_info(text& t, std::string_view gpu, std::string_view device, std::string_view bus_id,
                  std::string_view executor) {
  t.sample({{"gpu", std::string(gpu)},
            {"device", std::string(device)},
            {"bus_id", std::string(bus_id)},
            {"executor", std::string(executor)}},
           uint64_t{1});
}

// ---------------------------------------------------------------------------
// server
// ---------------------------------------------------------------------------

namespace {

using clock_type = std::chrono::steady_clock;

// The limits of the header comment. The deadlines are short because a scraper
// on the same network sends its whole request at once and reads the answer
// at once; the drain only gives a client that sent more than its head (a
// refused body) time to read our answer before the close resets it.
constexpr size_t k_max_head_bytes = 8192;
constexpr size_t k_max_connections = 64;
constexpr auto k_head_deadline = std::chrono::seconds(2);
constexpr auto k_write_deadline = std::chrono::seconds(5);
constexpr auto k_drain_deadline = std::chrono::milliseconds(500);
constexpr size_t k_drain_max_bytes = 256 * 1024;
// Accepting fails with EMFILE while the process has no descriptor left; the
// listening socket stays readable, so it rests a while rather than spin.
constexpr auto k_accept_pause = std::chrono::milliseconds(100);

class unique_fd {
 public:
  unique_fd() = default;
  explicit unique_fd(int fd) noexcept : fd_(fd) {}
  unique_fd(unique_fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  unique_fd& operator=(unique_fd&& o) noexcept {
    if (this != &o) reset(std::exchange(o.fd_, -1));
    return *this;
  }
  ~unique_fd() { reset(); }
  [[nodiscard]] int get() const noexcept { return fd_; }
  void reset(int fd = -1) noexcept {
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

struct connection {
  enum class state { head, write, drain };
  unique_fd fd;
  state st = state::head;
  clock_type::time_point accepted;
  clock_type::time_point deadline;  // of the current state
  std::string in;                   // the request head so far, at most k_max_head_bytes
  size_t line_start = 0;            // where the line still being received starts in `in`
  bool have_request_line = false;
  bool head_only = false;  // HEAD: the response without its body
  std::string out;         // the response
  size_t sent = 0;
  size_t drained = 0;
  bool done = false;  // to be closed
};

std::string_view reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 431: return "Request Header Fields Too Large";
    case 505: return "HTTP Version Not Supported";
    default: return "Error";
  }
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return (x >= 'A' && x <= 'Z' ? x + 32 : x) == (y >= 'A' && y <= 'Z' ? y + 32 : y);
         });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// RFC 9110's token: what a method and a header name are made of.
bool is_token(std::string_view s) {
  if (s.empty()) return false;
  for (unsigned char c : s) {
    if (c <= 0x20 || c >= 0x7f || std::strchr("\"(),/:;<=>?@[\\]{}", c)) return false;
  }
  return true;
}

// A line of the head may hold no control character but a tab: a NUL or a
// bare CR in it is how request smuggling starts, so it is refused, not read.
bool clean_line(std::string_view s) {
  for (unsigned char c : s) {
    if ((c < 0x20 && c != '\t') || c == 0x7f) return false;
  }
  return true;
}

}  // namespace

struct server::impl {
  unique_fd listener;
  unique_fd wake;  // eventfd: the destructor writes it to stop the thread
  std::thread thread;
  std::mutex mu;
  std::shared_ptr<const std::string> body;  // what /metrics serves, under mu
  std::vector<connection> conns;            // touched by the thread only
  clock_type::time_point accept_paused_until;

  void run();
  void accept_new(clock_type::time_point now);
  void on_readable(connection& c, clock_type::time_point now);
  void on_writable(connection& c, clock_type::time_point now);
  void on_deadline(connection& c, clock_type::time_point now);
  // Looks at the lines of c.in not seen yet; answers once they decide.
  void parse(connection& c, clock_type::time_point now);
  void request_line(connection& c, std::string_view line, clock_type::time_point now);
  void answer(connection& c, int status, clock_type::time_point now, std::string_view note = {});
  void respond(connection& c, int status, std::string_view type, std::string_view content, clock_type::time_point now);
  void flush(connection& c, clock_type::time_point now);
};

void server::impl::run() {
  std::vector<pollfd> fds;
  for (;;) {
    const auto now = clock_type::now();
    fds.clear();
    fds.push_back({wake.get(), POLLIN, 0});
    const bool accepting = now >= accept_paused_until;
    fds.push_back({accepting ? listener.get() : -1, POLLIN, 0});
    auto next = accepting ? clock_type::time_point::max() : accept_paused_until;
    for (const connection& c : conns) {
      fds.push_back({c.fd.get(), static_cast<short>(c.st == connection::state::write ? POLLOUT : POLLIN), 0});
      next = std::min(next, c.deadline);
    }
    int timeout_ms = -1;
    if (next != clock_type::time_point::max()) {
      const auto ms = std::chrono::ceil<std::chrono::milliseconds>(next - now).count();
      timeout_ms = static_cast<int>(std::clamp<int64_t>(ms, 0, 60'000));
    }
    if (poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) {
      // Only EFAULT, EINVAL or ENOMEM: nothing a client did. Rest rather than spin.
      std::this_thread::sleep_for(k_accept_pause);
      continue;
    }
    if (fds[0].revents) return;
    const auto t = clock_type::now();
    // fds[2 + i] is conns[i]: handle them before accept_new() changes conns.
    for (size_t i = 0; i < conns.size(); ++i) {
      connection& c = conns[i];
      try {
        const short ev = fds[2 + i].revents;
        if (c.st == connection::state::write && (ev & (POLLOUT | POLLERR | POLLHUP))) on_writable(c, t);
        else if (c.st != connection::state::write && (ev & (POLLIN | POLLERR | POLLHUP))) on_readable(c, t);
        if (!c.done && t >= c.deadline) on_deadline(c, t);
      } catch (...) {
        c.done = true;  // no memory for its answer: the client sees the close
      }
    }
    std::erase_if(conns, [](const connection& c) { return c.done; });
    if (fds[1].revents) accept_new(t);
  }
}

void server::impl::accept_new(clock_type::time_point now) {
  // Bounded, so that a flood of connections cannot keep the loop here.
  for (int n = 0; n < 256; ++n) {
    unique_fd fd(accept4(listener.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (fd.get() < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
        accept_paused_until = now + k_accept_pause;
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;  // EAGAIN: no more for now
    }
    if (conns.size() >= k_max_connections) {
      // Make room: the oldest connection that is not being answered, those
      // already answered first. A scrape sends its request at once, so the
      // connections that lose are the idle and the slow ones.
      auto victim = conns.end();
      for (auto it = conns.begin(); it != conns.end(); ++it) {
        if (it->st == connection::state::write) continue;
        if (victim == conns.end() || (it->st == connection::state::drain) > (victim->st == connection::state::drain) ||
            ((it->st == connection::state::drain) == (victim->st == connection::state::drain) &&
             it->accepted < victim->accepted))
          victim = it;
      }
      if (victim == conns.end()) continue;  // all 64 are being answered: this one is closed unanswered
      conns.erase(victim);
    }
    try {
      connection c;
      c.fd = std::move(fd);
      c.accepted = now;
      c.deadline = now + k_head_deadline;
      conns.push_back(std::move(c));
    } catch (...) {
      return;  // closed unanswered
    }
  }
}

void server::impl::on_readable(connection& c, clock_type::time_point now) {
  char buf[4096];
  for (;;) {
    if (c.st == connection::state::drain) {
      const ssize_t n = recv(c.fd.get(), buf, sizeof buf, 0);
      if (n > 0) {
        c.drained += static_cast<size_t>(n);
        if (c.drained < k_drain_max_bytes) continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
      c.done = true;  // the client closed, or sends more than we care to discard
      return;
    }
    // Never more than the head limit: a client that sends more than a head
    // gets its answer from what fits.
    const size_t room = k_max_head_bytes - c.in.size();
    const ssize_t n = recv(c.fd.get(), buf, std::min(room, sizeof buf), 0);
    if (n == 0) {
      c.done = true;  // closed before its request was complete: nobody to answer
      return;
    }
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
      c.done = true;
      return;
    }
    c.in.append(buf, static_cast<size_t>(n));
    parse(c, now);
    if (c.st != connection::state::head || c.done) return;
    if (c.in.size() == k_max_head_bytes) {
      answer(c, c.have_request_line ? 431 : 414, now,
             c.have_request_line ? "the request head is larger than 8 KiB" : "the request line is longer than 8 KiB");
      return;
    }
  }
}

void server::impl::parse(connection& c, clock_type::time_point now) {
  for (;;) {
    const size_t nl = c.in.find('\n', c.line_start);
    if (nl == std::string::npos) return;
    std::string_view line(c.in.data() + c.line_start, nl - c.line_start);
    c.line_start = nl + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!clean_line(line)) return answer(c, 400, now, "a control character in the request head");
    if (!c.have_request_line) {
      request_line(c, line, now);
      if (c.st != connection::state::head) return;
      continue;
    }
    if (line.empty()) {
      // The whole head is in, and nothing in it was refused.
      std::string_view target = c.in;
      target = target.substr(target.find(' ') + 1);
      target = target.substr(0, target.find(' '));
      if (target.starts_with("http://") || target.starts_with("https://")) {  // absolute form
        const size_t slash = target.find('/', target.find("//") + 2);
        target = slash == std::string_view::npos ? std::string_view("/") : target.substr(slash);
      }
      target = target.substr(0, target.find_first_of("?#"));
      if (target == "/metrics") {
        std::shared_ptr<const std::string> b;
        {
          std::lock_guard lk(mu);
          b = body;
        }
        return respond(c, 200, "text/plain; version=0.0.4; charset=utf-8", b ? *b : std::string(), now);
      }
      if (target == "/")
        return respond(c, 200, "text/html", "<html><body><a href=\"/metrics\">/metrics</a></body></html>\n", now);
      return answer(c, 404, now, "only /metrics is served here");
    }
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || !is_token(line.substr(0, colon)))
      return answer(c, 400, now, "a header line that is not NAME: VALUE");
    const std::string_view name = line.substr(0, colon), value = trim(line.substr(colon + 1));
    // A body is refused from its header, before any of it is read.
    if (iequals(name, "transfer-encoding")) return answer(c, 413, now, "a request may not have a body here");
    if (iequals(name, "content-length")) {
      if (value.empty() || value.find_first_not_of("0123456789") != std::string_view::npos)
        return answer(c, 400, now, "Content-Length is not a number");
      if (value.find_first_not_of('0') != std::string_view::npos)
        return answer(c, 413, now, "a request may not have a body here");
    }
  }
}

void server::impl::request_line(connection& c, std::string_view line, clock_type::time_point now) {
  c.have_request_line = true;
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos)
    return answer(c, 400, now, "not a request line (METHOD TARGET HTTP/1.1)");
  const std::string_view method = line.substr(0, sp1), target = line.substr(sp1 + 1, sp2 - sp1 - 1),
                         version = line.substr(sp2 + 1);
  if (!is_token(method) || target.empty() || !version.starts_with("HTTP/"))
    return answer(c, 400, now, "not a request line (METHOD TARGET HTTP/1.1)");
  if (version != "HTTP/1.1" && version != "HTTP/1.0") {
    const bool well_formed = version.size() == 8 && std::isdigit(static_cast<unsigned char>(version[5])) &&
                             version[6] == '.' && std::isdigit(static_cast<unsigned char>(version[7]));
    return answer(c, well_formed ? 505 : 400, now, "only HTTP/1.0 and HTTP/1.1");
  }
  if (method != "GET" && method != "HEAD") return answer(c, 405, now, "only GET and HEAD");
  c.head_only = method == "HEAD";
}

void server::impl::answer(connection& c, int status, clock_type::time_point now, std::string_view note) {
  respond(c, status, "text/plain; charset=utf-8", fmt::format("{} {}: {}\n", status, reason(status), note), now);
}

void server::impl::respond(connection& c, int status, std::string_view type, std::string_view content,
                           clock_type::time_point now) {
  c.out = fmt::format("HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n{}Connection: close\r\n\r\n", status,
                      reason(status), type, content.size(), status == 405 ? "Allow: GET, HEAD\r\n" : "");
  if (!c.head_only) c.out += content;
  c.in = std::string();  // the head is no longer needed; give its memory back
  c.st = connection::state::write;
  c.deadline = now + k_write_deadline;
  flush(c, now);
}

void server::impl::flush(connection& c, clock_type::time_point now) {
  while (c.sent < c.out.size()) {
    const ssize_t n = send(c.fd.get(), c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;  // poll says when there is room
      c.done = true;
      return;
    }
    c.sent += static_cast<size_t>(n);
  }
  // All sent: our half closes, and whatever the client still sends is read
  // and dropped for a moment, so that closing with it unread does not reset
  // the connection before the client has read the answer.
  c.out = std::string();
  (void)shutdown(c.fd.get(), SHUT_WR);
  c.st = connection::state::drain;
  c.deadline = now + k_drain_deadline;
}

void server::impl::on_writable(connection& c, clock_type::time_point now) { flush(c, now); }

void server::impl::on_deadline(connection& c, clock_type::time_point now) {
  if (c.st == connection::state::head) {
    // Best effort: the client may be too slow to read this too.
    answer(c, 408, now, "the request head took longer than 2 s");
    if (c.st == connection::state::write) c.done = true;  // it could not even take 408
    return;
  }
  c.done = true;  // an answer the client does not read, or a drain that lasted long enough
}

namespace {

// Resolves e, binds a listening socket to the first address that takes it
// and listens: "" and the socket in *fd, or what is wrong (in use, not on
// this host, a link-local address without its interface). Binding before the
// run makes each of these a usage error.
std::string bind_listen(const endpoint& e, unique_fd* fd) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(e.port);
  if (int rc = getaddrinfo(e.host.c_str(), port.c_str(), &hints, &res); rc != 0) {
    // getaddrinfo says only "Name or service not known" for fe80::1%eth9.
    if (const size_t pct = e.host.find('%'); pct != std::string::npos) {
      const std::string iface = e.host.substr(pct + 1);
      if (if_nametoindex(iface.c_str()) == 0 && iface.find_first_not_of("0123456789") != std::string::npos)
        return fmt::format(
            "no network interface '{}' (the scope id after %; `ip link` lists them): "
            "[ADDR%IFACE]:PORT",
            iface);
    }
    return fmt::format("cannot resolve address '{}': {}", e.host, gai_strerror(rc));
  }
  std::string why;
  for (addrinfo* a = res; a; a = a->ai_next) {
    if (a->ai_family == AF_INET6) {
      // bind() says only EINVAL: a link-local address exists once per interface.
      const auto* v6 = reinterpret_cast<const sockaddr_in6*>(a->ai_addr);
      if (IN6_IS_ADDR_LINKLOCAL(&v6->sin6_addr) && v6->sin6_scope_id == 0) {
        char text[INET6_ADDRSTRLEN] = "";
        (void)inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof text);
        why = fmt::format(
            "{} is a link-local IPv6 address: it needs a scope id, the interface it is on: "
            "[{}%IFACE]:{} (e.g. %eth0; `ip -6 addr` lists them)",
            text, text, e.port);
        continue;
      }
    }
    unique_fd s(socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol));
    if (s.get() < 0) {
      why = std::strerror(errno);
      continue;
    }
    int yes = 1;  // not SO_REUSEPORT: a second program on the port must fail, not share it
    (void)setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (bind(s.get(), a->ai_addr, a->ai_addrlen) == 0 && listen(s.get(), SOMAXCONN) == 0) {
      *fd = std::move(s);
      freeaddrinfo(res);
      return "";
    }
    const int err = errno;
    why = err == EADDRINUSE      ? "address in use (another program listens on it)"
          : err == EADDRNOTAVAIL ? "address not available on this host"
          : err == EACCES        ? "permission denied (a port below 1024 needs root)"
                                 : std::strerror(err);
  }
  freeaddrinfo(res);
  return why.empty() ? "no address to bind" : why;
}

}  // namespace

server::server(std::unique_ptr<impl> p) : p_(std::move(p)) {}

server::~server() {
  if (!p_) return;
  const uint64_t one = 1;
  // The thread polls the eventfd with everything else and blocks nowhere
  // else, so it returns at once; the connections close with p_.
  while (write(p_->wake.get(), &one, sizeof one) < 0 && errno == EINTR) {}
  if (p_->thread.joinable()) p_->thread.join();
}

std::unique_ptr<server> server::start(const options& o, std::string_view program, std::string* why) {
  why->clear();
  if (o.listen.empty()) return nullptr;
  endpoint e;
  if (std::string w = parse_endpoint(o.listen, &e); !w.empty()) {
    *why = fmt::format("--metrics {}: {}", o.listen, w);
    return nullptr;
  }
  const std::string shown = e.host.find(':') != std::string::npos ? fmt::format("[{}]:{}", e.host, e.port)
                                                                  : fmt::format("{}:{}", e.host, e.port);
  try {
    auto p = std::make_unique<impl>();
    if (std::string w = bind_listen(e, &p->listener); !w.empty()) {
      *why = fmt::format("--metrics {}: {}", shown, w);
      return nullptr;
    }
    p->wake = unique_fd(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (p->wake.get() < 0) {
      *why = fmt::format("--metrics {}: eventfd: {}", shown, std::strerror(errno));
      return nullptr;
    }
    p->conns.reserve(k_max_connections);
    impl* ip = p.get();
    std::unique_ptr<server> s(new server(std::move(p)));
    s->address_ = shown;
    s->linger_s_ = o.linger_s;
    s->program_ = std::string(program);
    s->t0_ = s->last_ = std::chrono::steady_clock::now();
    // Before the thread: the socket listens already, and a client that
    // connected in the meantime must not be served an empty text.
    s->publish(text{});
    ip->thread = std::thread([ip] { ip->run(); });
    return s;
  } catch (const std::exception& ex) {
    *why = fmt::format("--metrics {}: {}", shown, ex.what());
    return nullptr;
  }
}

bool server::due() noexcept {
  const auto now = std::chrono::steady_clock::now();
  if (now - last_ < std::chrono::milliseconds(250)) return false;
  last_ = now;
  return true;
}

void server::publish(const text& t, bool finished) {
  text head;
  head.family("gnio_build_info", "gauge",
              "Always 1: the gnio version, the program and whether gnio was built with CUDA.")
      .sample(
          {{"version", GNIO_VERSION_STRING}, {"program", program_}, {"cuda", gnio::built_with_cuda() ? "yes" : "no"}},
          uint64_t{1});
  head.family("gnio_run_elapsed_seconds", "gauge",
              "Seconds from the start of the run (when the metrics server started) to these values.")
      .sample({}, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count());
  head.family("gnio_run_finished", "gauge", "1 once the run ended and the values are the final ones (the JSON's).")
      .sample({}, uint64_t{finished ? 1u : 0u});
  std::string body = head.str() + t.str();
  auto shared = std::make_shared<const std::string>(std::move(body));
  std::lock_guard lk(p_->mu);
  p_->body = std::move(shared);
}

void server::linger(const std::function<bool()>& stop) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(linger_s_);
  while (std::chrono::steady_clock::now() < end && !(stop && stop())) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace gnio::metrics
