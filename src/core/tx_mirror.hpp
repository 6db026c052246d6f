// SPDX-License-Identifier: Apache-2.0
// tx_pcap=: a copy of every frame a port transmits, in a pcap file, whatever
// the backend. The port checks the path when it opens, reserves the file
// before the backend starts (an unwritable file fails the start; an
// existing one is neither truncated nor, when new, left behind unless the
// backend started), makes it a pcap file once the backend started, and the
// engine's TX lane writes the frames it sent. The only part of the core
// that uses libpcap.
#pragma once

#include <cstdint>
#include <string>

#include "gnio/backend/backend.hpp"
#include "gnio/status.hpp"

namespace gnio::detail {

class tx_mirror {
 public:
  tx_mirror() = default;
  tx_mirror(const tx_mirror&) = delete;
  tx_mirror& operator=(const tx_mirror&) = delete;
  ~tx_mirror() { close(); }

  // At port open: remembers the path when it is usable (no FIFO, creatable).
  error configure(std::string path);
  [[nodiscard]] bool configured() const noexcept { return !path_.empty(); }
  [[nodiscard]] bool writing() const noexcept { return dumper_ != nullptr; }
  [[nodiscard]] const std::string& path() const noexcept { return path_; }

  // Before the backend starts: opens (or creates) the file without
  // truncating it. Then either begin() once the backend started, or drop()
  // when it did not.
  error reserve();
  error begin();
  void drop() noexcept;

  // Engine TX lane: the n frames a backend just sent, stamped now. The first
  // failed write stops the copy; finish() reports it.
  void write(const backend::tx_frame* frames, uint32_t n, const std::string& port_name) noexcept;

  // At port stop: flushes and closes; the first write error, with its errno.
  error finish();
  void close() noexcept;

 private:
  std::string path_;
  int fd_ = -1;             // between reserve() and begin()
  bool created_ = false;    // reserve() created the file
  void* pcap_ = nullptr;    // pcap_t* (a dead handle) while writing
  void* dumper_ = nullptr;  // pcap_dumper_t*
  int errno_ = 0;           // of the first failed write (engine lane 0; read after the join)
};

}  // namespace gnio::detail
