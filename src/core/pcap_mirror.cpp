// SPDX-License-Identifier: Apache-2.0
#include "pcap_mirror.hpp"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>

#include <pcap/pcap.h>

#include "gnio/atomic_file.hpp"
#include "log_internal.hpp"
#include "out_file.hpp"

namespace gnio::detail {

unsigned stop_signal_count() noexcept;  // signals.cpp

namespace {

// A pipe (stdout, a FIFO) whose reader stops reading would hold an engine
// lane in write(2) for ever, and the port's stop with it, which waits for
// the lane. So a write waits for room with poll(), and gives up once a
// second stop signal came (the first stops the run), as console writes do,
// or once the port is stopping and the reader took nothing for
// pcap_mirror::stop_grace_ms (a --duration or a stop by the program, which
// no second signal follows).
ssize_t pipe_write(void* cookie, const char* buf, size_t size) {
  auto& c = *static_cast<pcap_mirror::pipe_cookie*>(cookie);
  size_t done = 0;
  auto stalled_since = std::chrono::steady_clock::now();
  std::optional<std::chrono::steady_clock::time_point> stop_seen;
  while (done < size) {
    pollfd p{c.fd, POLLOUT, 0};
    const int r = ::poll(&p, 1, 100);
    if (r < 0 && errno != EINTR) return -1;
    if (r <= 0) {
      if (stop_signal_count() >= 2) {
        errno = ECANCELED;
        return -1;
      }
      // Relaxed: a flag looked at every 100 ms; the port's stop sets it
      // before it joins this lane.
      if (c.stopping.load(std::memory_order_relaxed)) {
        // The grace counts from the later of the stop and the last byte taken.
        const auto now = std::chrono::steady_clock::now();
        if (!stop_seen) stop_seen = now;
        if (now - std::max(stalled_since, *stop_seen) >= std::chrono::milliseconds(pcap_mirror::stop_grace_ms)) {
          errno = ETIMEDOUT;
          return -1;
        }
      }
      continue;
    }
    stalled_since = std::chrono::steady_clock::now();
    // Room for PIPE_BUF bytes once poll says the pipe has room: the write
    // does not block. A reader that left: EPIPE.
    const ssize_t w = ::write(c.fd, buf + done, std::min<size_t>(size - done, PIPE_BUF));
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return -1;
    done += static_cast<size_t>(w);
  }
  return static_cast<ssize_t>(size);
}

int pipe_close(void* cookie) {
  auto& c = *static_cast<pcap_mirror::pipe_cookie*>(cookie);
  const int fd = c.fd;
  c.fd = -1;
  return ::close(fd);
}

}  // namespace

error pcap_mirror::configure(std::string path) {
  stream_ = false;
  if (streams_) {
    struct stat st {};
    if (path == "-" || (::stat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode))) {
      stream_ = true;
      path_ = std::move(path);
      return {};
    }
  }
  // Checked now, so a bad path fails at open as the pcap backend's tx= does;
  // created at start, so a port that never starts touches no file.
  if (std::string why = fifo_output_refusal(path); !why.empty())
    return fail(status::invalid_value, "{}: {}", label_, why);
  if (int e = output_path_errno(path); e != 0)
    return fail(file_errno_status(e), "{}: cannot create '{}': {}", label_, path, std::strerror(e));
  path_ = std::move(path);
  return {};
}

error pcap_mirror::reserve() {
  if (path_.empty() || dumper_ != nullptr || fd_ >= 0) return {};
  created_ = false;
  if (path_ == "-") {
    // A descriptor of its own: closing the pcap file leaves stdout open.
    fd_ = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
    if (fd_ < 0) {
      const int e = errno;
      return fail(file_errno_status(e), "{}: cannot write to stdout: {}", label_, std::strerror(e));
    }
    return {};
  }
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd_ >= 0) {
    created_ = true;
  } else if (errno == EEXIST) {
    created_ = false;
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC);
  }
  if (fd_ < 0) {
    const int e = errno;
    if (e == EINTR)
      return fail(status::shutdown, "{}: interrupted while waiting for a reader of the FIFO '{}'", label_, path_);
    return fail(file_errno_status(e), "{}: cannot create '{}': {}", label_, path_, std::strerror(e));
  }
  return {};
}

void pcap_mirror::drop() noexcept {
  if (fd_ < 0) return;
  ::close(fd_);
  fd_ = -1;
  if (created_) ::unlink(path_.c_str());
  created_ = false;
}

// The reserved file becomes a pcap file with a fresh header.
error pcap_mirror::begin() {
  if (fd_ < 0) return {};
  const int fd = fd_;
  fd_ = -1;
  auto undo = [&](int e, status s, const std::string& why) {
    if (created_) ::unlink(path_.c_str());
    created_ = false;
    return fail(e ? file_errno_status(e) : s, "{}: cannot write '{}': {}", label_, path_, e ? std::strerror(e) : why);
  };
  struct stat st {};
  if (fstat(fd, &st) != 0) st.st_mode = 0;
  const bool regular = S_ISREG(st.st_mode);
  // stdout is the caller's: a file it redirected to is written as it is.
  if (regular && path_ != "-" && ftruncate(fd, 0) != 0) {
    const int e = errno;
    ::close(fd);
    return undo(e, status::io_failed, "");
  }
  const bool pipe = S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode);
  cookie_.fd = fd;
  cookie_.stopping.store(false, std::memory_order_relaxed);
  FILE* f = pipe ? fopencookie(&cookie_, "wb", cookie_io_functions_t{nullptr, pipe_write, nullptr, pipe_close})
                 : fdopen(fd, "wb");
  if (!f) {
    const int e = errno;
    ::close(fd);
    return undo(e, status::io_failed, "");
  }
  pcap_t* dead = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, 65535,
                                                      nano_ ? PCAP_TSTAMP_PRECISION_NANO : PCAP_TSTAMP_PRECISION_MICRO);
  if (!dead) {
    std::fclose(f);
    return undo(0, status::no_memory, "pcap_open_dead failed");
  }
  errno = 0;
  // On failure libpcap has closed f.
  pcap_dumper_t* d = pcap_dump_fopen(dead, f);
  if (!d) {
    const int e = errno;
    std::string why = pcap_geterr(dead);
    pcap_close(dead);
    return undo(e, status::io_failed, why);
  }
  pcap_ = dead;
  dumper_ = d;
  errno_ = 0;
  failed_errno_.store(0, std::memory_order_relaxed);
  // A pipe (stdout, a FIFO, /dev/stdout) or a socket has a reader waiting
  // for each frame; files and devices keep stdio's buffering.
  flush_each_ = stream_ || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode);
  // The file header too, so a reader of a stream starts at once. A failure
  // is the first write's: said, and reported by finish().
  if (flush_each_ && pcap_dump_flush(d) != 0) {
    errno_ = errno != 0 ? errno : EIO;
    failed_errno_.store(errno_, std::memory_order_relaxed);
    log(log_level::warn, "{}: writing '{}' failed: {}; no frames are written to it", label_, path_,
        errno_ == EPIPE ? "its reader went away (broken pipe)" : std::strerror(errno_));
  }
  created_ = false;
  file_index_ = 0;
  file_bytes_ = 24;
  file_first_ns_ = 0;
  return {};
}

// One record; false (errno_ set, and said once) when the write failed, after
// which nothing more is written.
bool pcap_mirror::dump(const pcap_pkthdr& h, const uint8_t* data, const std::string& port_name) noexcept {
  FILE* f = pcap_dump_file(static_cast<pcap_dumper_t*>(dumper_));
  errno = 0;
  pcap_dump(static_cast<u_char*>(dumper_), &h, data);
  if (flush_each_) (void)std::fflush(f);
  if (!std::ferror(f)) return true;
  // errno now is the failed write's; finish() reports it.
  errno_ = errno != 0 ? errno : EIO;
  failed_errno_.store(errno_, std::memory_order_relaxed);
  log(log_level::warn, "port {}: writing {} '{}' failed: {}; no more frames are written to it", port_name, label_,
      path_,
      errno_ == EPIPE       ? "its reader went away (broken pipe)"
      : errno_ == ECANCELED ? "its reader did not take it, and a second stop signal gave it up"
      : errno_ == ETIMEDOUT
          ? fmt::format("its reader took nothing for {} ms after the port began to stop", stop_grace_ms)
          : std::strerror(errno_));
  return false;
}

void pcap_mirror::write(const backend::tx_frame* frames, uint32_t n, const std::string& port_name) noexcept {
  if (dumper_ == nullptr || errno_ != 0 || n == 0) return;
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  pcap_pkthdr h{};
  h.ts.tv_sec = std::chrono::duration_cast<std::chrono::seconds>(now).count();
  h.ts.tv_usec = std::chrono::duration_cast<std::chrono::microseconds>(now).count() % 1000000;
  for (uint32_t i = 0; i < n; ++i) {
    h.caplen = h.len = frames[i].len;
    if (!dump(h, frames[i].data, port_name)) break;
  }
}

// Closes the file being written and opens the next; false (and errno_ set)
// when that fails. Called with mu_ held.
bool pcap_mirror::rotate(const std::string& port_name) noexcept {
  pcap_dump_close(static_cast<pcap_dumper_t*>(dumper_));
  dumper_ = nullptr;
  const std::string next = path_ + std::to_string(file_index_ + 1);
  errno = 0;
  FILE* f = std::fopen(next.c_str(), "wbe");
  pcap_dumper_t* d = f ? pcap_dump_fopen(static_cast<pcap_t*>(pcap_), f) : nullptr;
  if (!d) {
    errno_ = errno != 0 ? errno : EIO;
    failed_errno_.store(errno_, std::memory_order_relaxed);
    log(log_level::warn, "port {}: {}: cannot start the next file '{}': {}; no more frames are written", port_name,
        label_, next, std::strerror(errno_));
    return false;
  }
  dumper_ = d;
  ++file_index_;
  file_bytes_ = 24;  // the file header
  file_first_ns_ = 0;
  return true;
}

void pcap_mirror::write_frame(const uint8_t* data, uint32_t caplen, uint32_t wire_len, uint64_t ts_ns,
                              const std::string& port_name) noexcept {
  std::lock_guard lk(mu_);
  if (dumper_ == nullptr || errno_ != 0) return;
  if (file_first_ns_ == 0) file_first_ns_ = ts_ns;
  const bool full = rot_bytes_ != 0 && file_bytes_ > rot_bytes_;
  const bool old = rot_ns_ != 0 && ts_ns >= file_first_ns_ + rot_ns_;
  if ((full || old) && !rotate(port_name)) return;
  if (file_first_ns_ == 0) file_first_ns_ = ts_ns;
  pcap_pkthdr h{};
  h.ts.tv_sec = static_cast<time_t>(ts_ns / 1'000'000'000u);
  // With nanosecond precision libpcap takes nanoseconds in tv_usec.
  h.ts.tv_usec = static_cast<suseconds_t>(nano_ ? ts_ns % 1'000'000'000u : (ts_ns % 1'000'000'000u) / 1000u);
  h.caplen = caplen;
  h.len = wire_len < caplen ? caplen : wire_len;
  if (!dump(h, data, port_name)) return;
  file_bytes_ += 16u + caplen;
  ++written_;
}

error pcap_mirror::finish() {
  if (dumper_ == nullptr) return {};
  int err = errno_;
  if (pcap_dump_flush(static_cast<pcap_dumper_t*>(dumper_)) != 0 && err == 0) {
    err = errno != 0 ? errno : EIO;
    failed_errno_.store(err, std::memory_order_relaxed);
  }
  close();
  if (err == 0) return {};
  return fail(status::io_failed, "{}: writing '{}' failed: {}", label_, path_, std::strerror(err));
}

void pcap_mirror::close() noexcept {
  drop();
  if (dumper_) pcap_dump_close(static_cast<pcap_dumper_t*>(dumper_));
  if (pcap_) pcap_close(static_cast<pcap_t*>(pcap_));
  dumper_ = nullptr;
  pcap_ = nullptr;
  errno_ = 0;
}

}  // namespace gnio::detail
