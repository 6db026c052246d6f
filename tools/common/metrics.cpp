// SPDX-License-Identifier: Apache-2.0
// The /metrics endpoint (metrics.hpp).
//
// cpp-httplib (Debian's libcpp-httplib-dev) rather than libmicrohttpd: one
// GET handler on a small thread pool is all this needs, and its C++ API keeps
// the server to a few lines with no callbacks through void*. The address is
// resolved and test-bound here first, with our own socket, because httplib's
// bind_to_port() answers only true or false: this way "address in use" and
// an unresolvable name are told apart, and both fail before the run.
#include "metrics.hpp"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <httplib.h>

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
          [](std::string& v) { return v.empty() ? std::string("needs ADDR:PORT, :PORT or PORT (e.g. 9464)") : std::string(); },
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
  if (ec == std::errc::result_out_of_range || (ec == std::errc() && end == port_text.data() + port_text.size() &&
                                               (port < 1 || port > 65535)))
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

void add_port(text& t, std::string_view port, const port_stats& st, const std::vector<rxq_label>& rxq,
              const std::vector<uint64_t>& processed, bool engine_failed) {
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
  auto proc = [&](size_t q) { return q < processed.size() ? processed[q] : uint64_t{0}; };
  t.family("gnio_rx_frames_total", "counter", "Frames the port's source produced (the JSON's received).")
      .sample({{"port", p}}, st.rx_frames);
  per_q("gnio_rx_packets_total", "counter", "Frames delivered to the RX queue's ring.",
        [&](size_t q) { return st.rxq[q].delivered; });
  per_q("gnio_rx_bytes_total", "counter", "Bytes of the frames delivered to the RX queue (on the wire).",
        [&](size_t q) { return st.rxq[q].bytes; });
  per_q("gnio_rx_missed_total", "counter", "Frames dropped because the RX queue's ring was full.",
        [&](size_t q) { return st.rxq[q].missed; });
  per_q("gnio_rx_truncated_total", "counter", "Frames cut to the RX slot size (--rx-slot).",
        [&](size_t q) { return st.rxq[q].truncated; });
  per_q("gnio_kernel_processed_total", "counter", "Frames the queue's kernel block (or CPU thread) processed.", proc);
  per_q("gnio_rx_pending", "gauge", "Frames delivered to the RX queue that its kernel has not processed yet.",
        [&](size_t q) { return st.rxq[q].delivered > proc(q) ? st.rxq[q].delivered - proc(q) : uint64_t{0}; });
  t.family("gnio_rx_unsteered_total", "counter", "Frames with no RX queue for their traffic class.")
      .sample({{"port", p}}, st.rx_unsteered);
  t.family("gnio_rx_source_errors_total", "counter", "Read errors the port's source reported.")
      .sample({{"port", p}}, st.rx_errors);
  t.family("gnio_rx_source_dropped_total", "counter",
           "Frames the source dropped before the engine saw them (not in gnio_rx_frames_total).")
      .sample({{"port", p}}, st.rx_dropped);
  t.family("gnio_tx_packets_total", "counter", "Frames the port transmitted.").sample({{"port", p}}, st.tx_frames);
  t.family("gnio_tx_bytes_total", "counter", "Bytes the port transmitted.").sample({{"port", p}}, st.tx_bytes);
  t.family("gnio_tx_errors_total", "counter", "Frames the port failed to transmit.").sample({{"port", p}}, st.tx_errors);
  t.family("gnio_tx_completed_total", "counter", "Descriptors of the TX queue the port completed.");
  for (size_t q = 0; q < st.txq.size(); ++q) t.sample({{"port", p}, {"queue", std::to_string(q)}}, st.txq[q].sent);
  t.family("gnio_tx_bad_addr_total", "counter", "TX descriptors whose address was outside registered memory.");
  for (size_t q = 0; q < st.txq.size(); ++q) t.sample({{"port", p}, {"queue", std::to_string(q)}}, st.txq[q].bad_addr);
  t.family("gnio_engine_frames_total", "counter", "Frames the engine lane took from the backend.");
  for (size_t l = 0; l < st.lanes.size(); ++l) t.sample({{"port", p}, {"lane", std::to_string(l)}}, st.lanes[l].frames);
  t.family("gnio_engine_busy_seconds_total", "counter", "Time the engine lane spent on bursts that carried frames.");
  for (size_t l = 0; l < st.lanes.size(); ++l)
    t.sample({{"port", p}, {"lane", std::to_string(l)}}, static_cast<double>(st.lanes[l].busy_ns) / 1e9);
  t.family("gnio_engine_errors_total", "counter", "Errors that ended the port's engine (the JSON's engine_error).")
      .sample({{"port", p}}, uint64_t{engine_failed ? 1u : 0u});
}

void add_gpu_info(text& t, std::string_view gpu, std::string_view device, std::string_view bus_id,
                  std::string_view executor) {
  t.sample({{"gpu", std::string(gpu)}, {"device", std::string(device)}, {"bus_id", std::string(bus_id)},
            {"executor", std::string(executor)}},
           uint64_t{1});
}

// ---------------------------------------------------------------------------
// server
// ---------------------------------------------------------------------------

struct server::impl {
  httplib::Server http;
  std::thread thread;
  std::mutex mu;
  std::string body;  // what /metrics serves, under mu
};

namespace {

// Resolves e and binds a socket of our own to it, to say what is wrong before
// httplib binds: "" and the numeric address in *numeric, or the reason.
std::string try_bind(const endpoint& e, std::string* numeric) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(e.port);
  if (int rc = getaddrinfo(e.host.c_str(), port.c_str(), &hints, &res); rc != 0)
    return fmt::format("cannot resolve address '{}': {}", e.host, gai_strerror(rc));
  std::string why;
  for (addrinfo* a = res; a; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0) {
      why = std::strerror(errno);
      continue;
    }
    int yes = 1;
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    const int rc = bind(fd, a->ai_addr, a->ai_addrlen);
    const int err = errno;
    if (rc == 0) {
      char host[NI_MAXHOST];
      if (getnameinfo(a->ai_addr, a->ai_addrlen, host, sizeof host, nullptr, 0, NI_NUMERICHOST) == 0) *numeric = host;
      close(fd);
      freeaddrinfo(res);
      return "";
    }
    close(fd);
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
  p_->http.stop();
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
  std::string numeric = e.host;
  if (std::string w = try_bind(e, &numeric); !w.empty()) {
    *why = fmt::format("--metrics {}: {}", shown, w);
    return nullptr;
  }
  try {
    auto p = std::make_unique<impl>();
    // Two workers: a scrape never waits behind another client's kept-alive
    // connection for long, and the short keep-alive ends the server quickly.
    p->http.new_task_queue = [] { return new httplib::ThreadPool(2); };
    p->http.set_keep_alive_timeout(1);
    p->http.set_socket_options([](socket_t fd) {
      int yes = 1;  // not SO_REUSEPORT: a second program on the port must fail, not share it
      (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });
    impl* raw = p.get();
    p->http.Get("/metrics", [raw](const httplib::Request&, httplib::Response& res) {
      std::string body;
      {
        std::lock_guard lk(raw->mu);
        body = raw->body;
      }
      res.set_content(std::move(body), "text/plain; version=0.0.4; charset=utf-8");
    });
    p->http.Get("/", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("<html><body><a href=\"/metrics\">/metrics</a></body></html>\n", "text/html");
    });
    if (!p->http.bind_to_port(numeric, e.port)) {
      *why = fmt::format("--metrics {}: cannot listen (the address was free a moment ago: {})", shown,
                         std::strerror(errno));
      return nullptr;
    }
    impl* ip = p.get();
    p->thread = std::thread([ip] { ip->http.listen_after_bind(); });
    std::unique_ptr<server> s(new server(std::move(p)));
    s->address_ = shown;
    s->linger_s_ = o.linger_s;
    s->program_ = std::string(program);
    s->t0_ = s->last_ = std::chrono::steady_clock::now();
    s->publish(text{});
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
  head.family("gnio_build_info", "gauge", "Always 1: the program and how gnio was built.")
      .sample({{"version", GNIO_VERSION_STRING},
               {"program", program_},
               {"cuda", gnio::built_with_cuda() ? "yes" : "no"}},
              uint64_t{1});
  head.family("gnio_run_elapsed_seconds", "gauge", "Seconds from the start of the run to these values.")
      .sample({}, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count());
  head.family("gnio_run_finished", "gauge", "1 once the run ended and the values are the final ones (the JSON's).")
      .sample({}, uint64_t{finished ? 1u : 0u});
  std::string body = head.str() + t.str();
  std::lock_guard lk(p_->mu);
  p_->body = std::move(body);
}

void server::linger(const std::function<bool()>& stop) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(linger_s_);
  while (std::chrono::steady_clock::now() < end && !(stop && stop())) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace gnio::metrics
