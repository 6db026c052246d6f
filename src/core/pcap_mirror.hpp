// SPDX-License-Identifier: Apache-2.0
// tx_pcap= and rx_pcap=: a copy of every frame a port transmits, or of every
// frame it delivers to its RX queues (those a capture filter accepts), in a
// pcap file, whatever the backend. rx_pcap= also streams: "-" is the
// process's stdout and a named FIFO is written as a pipe, each frame flushed
// as it is written (tcpdump -U). The port checks the path when it opens,
// reserves the file before the backend starts (an unwritable file fails the
// start; an existing one is neither truncated nor, when new, left behind
// unless the backend started), makes it a pcap file once the backend
// started, and the engine's lanes write the frames. The only part of the core
// that uses libpcap.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "gnio/backend/backend.hpp"

struct pcap_pkthdr;
#include "gnio/status.hpp"

namespace gnio::detail {

class pcap_mirror {
 public:
  // label: the option's name, for messages; nano: nanosecond timestamps
  // (the frames' own capture times) rather than microseconds; streams: "-"
  // and named FIFOs are taken (else refused, see fifo_output_refusal).
  pcap_mirror(const char* label, bool nano, bool streams = false) noexcept
      : label_(label), nano_(nano), streams_(streams) {}
  pcap_mirror(const pcap_mirror&) = delete;
  pcap_mirror& operator=(const pcap_mirror&) = delete;
  ~pcap_mirror() { close(); }

  // At port open: remembers the path when it is usable (creatable; a FIFO or
  // "-" only with streams).
  error configure(std::string path);
  [[nodiscard]] bool configured() const noexcept { return !path_.empty(); }
  // The path is "-" or a FIFO: one stream, which cannot be rotated.
  [[nodiscard]] bool stream() const noexcept { return stream_; }
  [[nodiscard]] bool writing() const noexcept { return dumper_ != nullptr; }
  [[nodiscard]] const std::string& path() const noexcept { return path_; }

  // Before the backend starts: opens (or creates) the file without
  // truncating it. A FIFO's open waits for a reader; a signal that
  // interrupts it (a stop signal, a deadline's SIGALRM) fails it with
  // status::shutdown. Then either begin() once the backend started, or drop()
  // when it did not.
  error reserve();
  error begin();
  void drop() noexcept;

  // Engine TX lane: the n frames a backend just sent, stamped now. The first
  // failed write stops the copy; finish() reports it.
  void write(const backend::tx_frame* frames, uint32_t n, const std::string& port_name) noexcept;
  // Any engine lane: one received frame, caplen bytes of a frame of wire_len
  // on the wire, with its capture time.
  void write_frame(const uint8_t* data, uint32_t caplen, uint32_t wire_len, uint64_t ts_ns,
                   const std::string& port_name) noexcept;
  [[nodiscard]] uint64_t frames_written() const noexcept { return written_; }
  // The errno of the write that stopped the copy (EPIPE: a stream's reader
  // went away), or 0. Kept after finish(), until the next begin().
  [[nodiscard]] int failed_errno() const noexcept { return failed_errno_.load(std::memory_order_relaxed); }
  // write_frame only: as tcpdump's -C and -G, before a frame is written the
  // file is closed and the next one opened (PATH, then PATH1, PATH2, ...)
  // when the current one holds more than max_bytes (0: no limit), or when the
  // frame's time is rotate_ns or more past the current file's first frame
  // (0: never). Before begin().
  void set_rotation(uint64_t max_bytes, uint64_t rotate_ns) noexcept {
    rot_bytes_ = max_bytes;
    rot_ns_ = rotate_ns;
  }
  [[nodiscard]] uint32_t files_written() const noexcept { return dumper_ || written_ ? file_index_ + 1 : 0; }

  // At port stop, before the engine's lanes are joined: a lane waiting for
  // a stream's reader gives the write up once the reader took nothing for
  // stop_grace_ms (ETIMEDOUT), so a reader that holds the pipe and reads
  // nothing cannot hold the stop for ever.
  void stopping() noexcept { cookie_.stopping.store(true, std::memory_order_relaxed); }
  static constexpr int stop_grace_ms = 2000;
  // The state a stream's writes see (fopencookie's cookie).
  struct pipe_cookie {
    int fd = -1;
    std::atomic<bool> stopping{false};
  };

  // At port stop: flushes and closes; the first write error, with its errno.
  error finish();
  void close() noexcept;

 private:
  std::string path_;
  int fd_ = -1;             // between reserve() and begin()
  bool created_ = false;    // reserve() created the file
  void* pcap_ = nullptr;    // pcap_t* (a dead handle) while writing
  void* dumper_ = nullptr;  // pcap_dumper_t*
  int errno_ = 0;           // of the first failed write (read after the lanes' join)
  const char* label_;
  bool nano_;
  bool streams_;
  bool stream_ = false;      // configure(): "-" or a FIFO
  bool flush_each_ = false;  // begin(): not a regular file, so each record goes out as it is written
  std::atomic<int> failed_errno_{0};
  pipe_cookie cookie_;
  std::mutex mu_;  // write_frame: lanes share the file
  uint64_t written_ = 0;
  uint64_t rot_bytes_ = 0, rot_ns_ = 0;
  uint32_t file_index_ = 0;     // PATH, PATH1, ...: the file being written
  uint64_t file_bytes_ = 0;     // written to it so far (header included)
  uint64_t file_first_ns_ = 0;  // its first frame's time (0: none yet)
  bool rotate(const std::string& port_name) noexcept;
  bool dump(const pcap_pkthdr& h, const uint8_t* data, const std::string& port_name) noexcept;
};

}  // namespace gnio::detail
