// SPDX-License-Identifier: Apache-2.0
#include "gnio/atomic_file.hpp"
#include "gnio/console.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <utility>

#include "log_internal.hpp"

namespace gnio {
namespace {

using detail::fail;

status status_of_errno(int e) noexcept {
  switch (e) {
    case ENOENT:
    case ENOTDIR: return status::not_found;
    case EACCES:
    case EPERM:
    case EROFS: return status::not_permitted;
    case EISDIR: return status::invalid_value;
    case ENOSPC:
    case EDQUOT: return status::full;
    case EFBIG: return status::too_big;
    case ENOMEM: return status::no_memory;
    default: return status::io_failed;
  }
}

error errno_error(int e, std::string what) { return fail(status_of_errno(e), "{}: {}", what, std::strerror(e)); }

// Writes all of text to fd; EINTR and partial writes are always retried.
int write_all(int fd, std::string_view text) noexcept {
  return console::write_all(
      fd, text, [](const void*) noexcept { return true; }, nullptr);
}

std::string dir_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool under_dev_or_proc(const std::string& path) { return path.rfind("/dev/", 0) == 0 || path.rfind("/proc/", 0) == 0; }

std::atomic<unsigned> g_serial{0};

}  // namespace

std::string fifo_output_refusal(const std::string& path) {
  struct stat st {};
  if (path.empty() || ::stat(path.c_str(), &st) != 0 || !S_ISFIFO(st.st_mode)) return {};
  if (!under_dev_or_proc(path))
    return fmt::format(
        "'{}' is a FIFO (named pipe), which this output does not take: it is written as a file, and "
        "opening a FIFO waits for a reader with no bound (past --duration and Ctrl-C); name a regular "
        "file",
        path);
  // A pipe the caller set up: usable while something reads it. The descriptor
  // is closed at once; the program holds the pipe open itself (stdout, fd N),
  // so its reader sees no end of file.
  const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd >= 0) {
    (void)::close(fd);
    return {};
  }
  if (errno == ENXIO)
    return fmt::format("'{}' is a pipe that nothing reads: opening it would wait for a reader with no bound", path);
  return {};  // any other error is the open's own to report
}

atomic_file::atomic_file(atomic_file&& o) noexcept
    : path_(std::move(o.path_)),
      target_(std::move(o.target_)),
      temp_(std::move(o.temp_)),
      fd_(std::exchange(o.fd_, -1)),
      in_place_(std::exchange(o.in_place_, false)),
      mode_(o.mode_) {
  o.temp_.clear();
}

atomic_file& atomic_file::operator=(atomic_file&& o) noexcept {
  if (this != &o) {
    discard();
    path_ = std::move(o.path_);
    target_ = std::move(o.target_);
    temp_ = std::move(o.temp_);
    o.temp_.clear();
    fd_ = std::exchange(o.fd_, -1);
    in_place_ = std::exchange(o.in_place_, false);
    mode_ = o.mode_;
  }
  return *this;
}

atomic_file::~atomic_file() { discard(); }

void atomic_file::discard() noexcept {
  if (fd_ >= 0) {
    (void)::close(fd_);  // the file is removed next: nothing in it matters
    fd_ = -1;
  }
  if (!temp_.empty()) {
    (void)::unlink(temp_.c_str());  // best effort: a failure leaves a ".NAME.tmp-*" file, never the target
    temp_.clear();
  }
  in_place_ = false;
}

result<atomic_file> atomic_file::prepare(const std::string& path) {
  if (path.empty()) return fail(status::invalid_value, "no file name given");
  atomic_file f;
  f.path_ = path;
  f.target_ = path;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return errno_error(EISDIR, "'" + path + "'");
    if (std::string why = fifo_output_refusal(path); !why.empty()) return fail(status::invalid_value, "{}", why);
    if (!S_ISREG(st.st_mode) || under_dev_or_proc(path)) {
      // A device, a pipe, /dev/stdout: written in place, at commit. Opened
      // now, without blocking, to find a path that cannot be.
      const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
      if (fd < 0) return errno_error(errno, "cannot write '" + path + "'");
      (void)::close(fd);  // opened only to check; nothing was written
      f.in_place_ = true;
      return f;
    }
    // Replacing it must be as allowed as overwriting it.
    if (::access(path.c_str(), W_OK) != 0) return errno_error(errno, "cannot write '" + path + "'");
    // A symbolic link is followed: the file it names is replaced.
    char real[PATH_MAX];
    if (::realpath(path.c_str(), real) == nullptr) return errno_error(errno, "cannot resolve '" + path + "'");
    f.target_ = real;
    f.mode_ = st.st_mode & 07777;
  } else if (errno != ENOENT) {
    return errno_error(errno, "cannot use '" + path + "'");
  } else if (under_dev_or_proc(path)) {
    return errno_error(ENOENT, "cannot write '" + path + "'");
  }
  const std::string dir = dir_of(f.target_);
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string temp = dir + "/." + base_of(f.target_) + ".tmp-" + std::to_string(::getpid()) + "-" +
                       std::to_string(g_serial.fetch_add(1));
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0666);
    if (fd >= 0) {
      f.fd_ = fd;
      f.temp_ = std::move(temp);
      if (f.mode_ != 0 && ::fchmod(fd, f.mode_) != 0) {
        const int e = errno;
        f.discard();
        return errno_error(e, "cannot give a new file in '" + dir + "' the permissions of '" + path + "'");
      }
      return f;
    }
    if (errno != EEXIST) return errno_error(errno, "cannot create a file in '" + dir + "'");
  }
  return fail(status::io_failed, "cannot create a file in '{}': every temporary name is taken", dir);
}

error atomic_file::commit(std::string_view text) {
  if (in_place_) {
    in_place_ = false;
    // O_APPEND: /dev/stdout may be a regular file that holds the program's
    // console output; the text goes after it rather than over it.
    // O_NONBLOCK: a pipe whose reader went away since prepare() is an error
    // (ENXIO), not an open() that waits for ever; the writes then block as
    // usual.
    const int fd = ::open(target_.c_str(), O_WRONLY | O_APPEND | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0 && errno == ENXIO)
      return fail(status::io_failed, "cannot open '{}': it is a pipe that nothing reads any more", path_);
    if (fd < 0) return errno_error(errno, "cannot open '" + path_ + "'");
    if (const int fl = ::fcntl(fd, F_GETFL); fl < 0 || ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
      const int e = errno;
      (void)::close(fd);
      return errno_error(e, "cannot open '" + path_ + "'");
    }
    if (const int e = write_all(fd, text); e) {
      (void)::close(fd);  // the write error is the one to report
      return errno_error(e, "writing '" + path_ + "' failed");
    }
    if (::close(fd) != 0) return errno_error(errno, "closing '" + path_ + "' failed");
    return {};
  }
  if (fd_ < 0) return fail(status::bad_state, "'{}' was not prepared, or was already written", path_);
  auto failed = [&](const char* what) {
    const int e = errno;
    const std::string temp = temp_;
    discard();
    return errno_error(e, fmt::format("{} '{}' for '{}' failed", what, temp, path_));
  };
  if (const int e = write_all(fd_, text); e) {
    errno = e;
    return failed("writing");
  }
  if (::fsync(fd_) != 0) return failed("fsync of");
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) return failed("closing");
  if (::rename(temp_.c_str(), target_.c_str()) != 0) return failed("renaming");
  temp_.clear();
  return {};
}

bool same_file(const std::string& a, const std::string& b) noexcept {
  if (a.empty() || b.empty()) return false;
  struct stat sa {
  }, sb{};
  const bool ha = ::stat(a.c_str(), &sa) == 0, hb = ::stat(b.c_str(), &sb) == 0;
  if (ha && hb) return S_ISREG(sa.st_mode) && S_ISREG(sb.st_mode) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  if (ha || hb) return false;
  std::error_code ea, eb;
  const auto pa = std::filesystem::absolute(a, ea).lexically_normal();
  const auto pb = std::filesystem::absolute(b, eb).lexically_normal();
  return !ea && !eb && pa == pb;
}

std::vector<named_file> device_files(std::string_view device) {
  std::vector<named_file> files;
  const auto colon = device.find(':');
  if (colon == std::string_view::npos) return files;
  std::string_view rest = device.substr(colon + 1);
  while (!rest.empty()) {
    const auto end = rest.find_first_of(",;");
    const std::string_view item = rest.substr(0, end);
    const auto eq = item.find('=');
    if (eq != std::string_view::npos) {
      const std::string_view k = item.substr(0, eq), v = item.substr(eq + 1);
      if (!v.empty() && (k == "file" || k == "rx" || k == "tx" || k == "tx_pcap" || k == "rx_pcap"))
        files.push_back({std::string(k) + "=", std::string(v)});
    }
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end + 1);
  }
  return files;
}

result<atomic_file> prepare_output(std::string_view option, const std::string& path,
                                   const std::vector<named_file>& others) {
  if (path.empty()) return fail(status::invalid_value, "{} needs a file name (it was given as \"\")", option);
  // Not "standard output" as in other Unix tools: gnio's programs print their
  // results there as text, and JSON mixed into it would parse as neither.
  if (path == "-")
    return fail(status::invalid_value,
                "{} -: writing to standard output is not supported (the program prints its results there as text); "
                "give a file name, e.g. {} out.json (./- for a file named '-')",
                option, option);
  for (const auto& o : others)
    if (same_file(path, o.path))
      return fail(status::invalid_value, "{} {} is the same file as {}{}; writing there would destroy it", option, path,
                  o.label, o.path);
  auto f = atomic_file::prepare(path);
  if (!f) return error(f.err().code(), fmt::format("{} {}: {}", option, path, f.err().message()));
  return f;
}

}  // namespace gnio
