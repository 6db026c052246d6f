// SPDX-License-Identifier: Apache-2.0
// Prometheus metrics for gnio's programs (gnio pp, flow_count, l2fwd):
// --metrics ADDR:PORT serves the text exposition format (version 0.0.4) on
// /metrics while the program runs; --metrics-linger S keeps serving the final
// values S seconds after a finite run. docs/monitoring.md lists the metrics.
//
// The programs never format or serve on their data path: their host loop,
// which already reads the semaphore reports and the port's counters, hands a
// finished text to publish() every quarter second (due()), and the HTTP
// thread only copies the latest text out.
//
//   gnio::metrics::options mo;  gnio::metrics::add_options(app, mo);
//   auto mx = gnio::metrics::server::start(mo, "flow_count", &why);   // nullptr: print why, exit 2
//   if (mx && mx->due()) { gnio::metrics::text t; gnio::metrics::add_port(t, ...); mx->publish(t); }
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gnio/port.hpp>

namespace CLI {
class App;
}

namespace gnio::metrics {

struct options {
  std::string listen;   // --metrics: "" = off; "9464", ":9464", "127.0.0.1:9464", "[::1]:9464"
  double linger_s = 0;  // --metrics-linger: seconds to keep serving the final values
};

// Adds --metrics and --metrics-linger to app, with their help.
void add_options(CLI::App& app, options& o);

struct endpoint {
  std::string host;  // numeric address or name; 127.0.0.1 when only a port was given
  uint16_t port = 0;
};

// "" when text is a valid --metrics value (and *out is filled); otherwise
// what is wrong with it, e.g. "port 70000 is outside 1..65535".
[[nodiscard]] std::string parse_endpoint(std::string_view text, endpoint* out);

using labels = std::vector<std::pair<std::string_view, std::string>>;

// The text exposition format, one family at a time: family() writes the HELP
// and TYPE lines, sample() the samples that follow. Label values are escaped.
class text {
 public:
  // type: "counter" (name ends in _total) or "gauge".
  text& family(std::string_view name, std::string_view type, std::string_view help);
  text& sample(const labels& l, uint64_t value);
  text& sample(const labels& l, double value);
  [[nodiscard]] const std::string& str() const noexcept { return out_; }

 private:
  void name_and_labels(const labels& l);
  std::string out_;
  std::string name_;
};

// Labels of one RX queue, in the port's queue order.
struct rxq_label {
  std::string cls;  // traffic class the queue takes ("udp", "tcp", ...; "all" where there are none)
  std::string gpu;  // index of the context (GPU or host executor) that consumes it
};

// The port label of a device string: the backend and what it opens, without
// the other settings, so that a series keeps its name across runs that tune
// the port and a file path never becomes a label: "af_packet:eth0",
// "af_xdp:eth0", "pcap:http.pcap" (the file's name), "dpdk:0", "pair:a",
// "gen". A string that does not parse gives its backend name, or "unknown".
[[nodiscard]] std::string port_label(std::string_view device);

// The families every program has, from the port's counters: gnio_rx_*,
// gnio_kernel_* and gnio_rx_pending per RX queue, gnio_tx_* per TX queue,
// gnio_engine_*. port: port_label() of the device string. taken[q]: the
// frames the kernel of queue q took from its ring; filtered[q]: those of
// them --filter refused (empty: none). engine_failed: the port's engine hit
// an error.
void add_port(text& t, std::string_view port, const port_stats& st, const std::vector<rxq_label>& rxq,
              const std::vector<uint64_t>& taken, const std::vector<uint64_t>& filtered, bool engine_failed);

// The gnio_gpu_info family's HELP and TYPE; then add_gpu_info() per context.
void add_gpu_info_family(text& t);
// gnio_gpu_info{gpu,device,bus_id,executor} 1 for context index gpu.
void add_gpu_info(text& t, std::string_view gpu, std::string_view device, std::string_view bus_id,
                  std::string_view executor);

class server {
 public:
  // Checks o.listen, binds it and starts serving, before the run. nullptr
  // when o.listen is "" (*why stays "") or when it fails (*why says why:
  // "--metrics 127.0.0.1:9464: address in use", an unresolvable address, a
  // port out of range).
  [[nodiscard]] static std::unique_ptr<server> start(const options& o, std::string_view program, std::string* why);
  ~server();
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  // The host and port it listens on, e.g. "127.0.0.1:9464".
  [[nodiscard]] const std::string& address() const noexcept { return address_; }

  // True at most every quarter second: time to publish() again.
  [[nodiscard]] bool due() noexcept;
  // Replaces what /metrics serves (gnio_build_info, gnio_run_elapsed_seconds
  // and gnio_run_finished are added). finished: these are the final values.
  void publish(const text& t, bool finished = false);
  // Keeps serving for o.linger_s seconds, or until stop() returns true.
  void linger(const std::function<bool()>& stop);

 private:
  struct impl;
  explicit server(std::unique_ptr<impl> p);
  std::unique_ptr<impl> p_;
  std::string address_;
  double linger_s_ = 0;
  std::string program_;
  std::chrono::steady_clock::time_point t0_, last_;
};

}  // namespace gnio::metrics
