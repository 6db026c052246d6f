// SPDX-License-Identifier: Apache-2.0
#include "gnio/console.hpp"

#include <cxxabi.h>
#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <typeinfo>

namespace gnio::detail {
unsigned stop_signal_count() noexcept;  // signals.cpp
}

namespace gnio::console {
namespace {

constexpr size_t k_out_buffer = 64 * 1024;

// Everything below is guarded by g_mu (a pthread mutex: locking it cannot throw).
pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
int g_errno[2] = {0, 0};   // first failure per stream (out, err)
char g_buf[k_out_buffer];  // stdout's buffer
size_t g_len = 0;
int g_tty = -1;             // stdout is a terminal: -1 not yet known
bool g_out_to_err = false;  // text_to_stderr()

struct lock {
  lock() noexcept { pthread_mutex_lock(&g_mu); }
  ~lock() { pthread_mutex_unlock(&g_mu); }
  lock(const lock&) = delete;
  lock& operator=(const lock&) = delete;
};

int index(stream s) noexcept { return s == stream::out ? 0 : 1; }

// Writes all n bytes to fd, or records the stream's failure. EINTR is
// retried until a second stop signal: the first one asks the program to
// finish (and print its totals); a second one while a write is stuck means
// the reader is not coming back.
bool write_all(int i, const char* p, size_t n) noexcept {
  if (g_errno[i]) return false;
  const int fd = i == 0 ? STDOUT_FILENO : STDERR_FILENO;
  const int e = console::write_all(
      fd, {p, n}, [](const void*) noexcept { return detail::stop_signal_count() < 2; }, nullptr);
  if (e != 0) g_errno[i] = e;
  return e == 0;
}

bool flush_out_locked() noexcept {
  if (g_len == 0) return g_errno[0] == 0;
  const bool ok = write_all(0, g_buf, g_len);
  g_len = 0;  // written, or lost with the stream
  return ok;
}

}  // namespace

bool write(stream s, std::string_view text) noexcept {
  lock lk;
  if (s == stream::err || g_out_to_err) {
    // What stdout printed before comes first, as with a line-buffered terminal.
    (void)flush_out_locked();
    return write_all(1, text.data(), text.size());
  }
  if (g_errno[0]) return false;
  if (g_tty < 0) g_tty = ::isatty(STDOUT_FILENO) == 1 ? 1 : 0;
  if (g_len + text.size() > k_out_buffer) {
    if (!flush_out_locked()) return false;
    if (text.size() > k_out_buffer) return write_all(0, text.data(), text.size());
  }
  std::memcpy(g_buf + g_len, text.data(), text.size());
  g_len += text.size();
  if (g_tty == 1 && text.find('\n') != std::string_view::npos) return flush_out_locked();
  return true;
}

void text_to_stderr() noexcept {
  lock lk;
  (void)flush_out_locked();
  g_out_to_err = true;
}

bool flush() noexcept {
  lock lk;
  const bool ok = flush_out_locked();
  return ok && g_errno[1] == 0;
}

int failure(stream s) noexcept {
  lock lk;
  return g_errno[index(s)];
}

std::string failure_text() {
  int e[2];
  {
    lock lk;
    e[0] = g_errno[0];
    e[1] = g_errno[1];
  }
  std::string t;
  for (int i = 0; i < 2; ++i) {
    if (!e[i]) continue;
    if (!t.empty()) t += "; ";
    t += std::string("writing ") + (i == 0 ? "stdout" : "stderr") + " failed: " + std::strerror(e[i]);
  }
  return t;
}

int finish(std::string_view program, int rc) noexcept {
  lock lk;
  (void)flush_out_locked();
  const int e_out = g_errno[0], e_err = g_errno[1];
  if (!e_out && !e_err) return rc;
  // One line on the stream that still works, built without allocating.
  char line[512];
  int n = 0;
  for (int i = 0; i < 2; ++i) {
    const int e = i == 0 ? e_out : e_err;
    if (!e) continue;
    const int left = static_cast<int>(sizeof line) - n;
    if (left <= 1) break;
    const int w =
        std::snprintf(line + n, static_cast<size_t>(left), "%.*s: writing %s failed: %s; %s\n",
                      static_cast<int>(program.size()), program.data(), i == 0 ? "stdout" : "stderr", std::strerror(e),
                      i == 0 ? "the results printed there are incomplete (check the disk or pipe it goes to)"
                             : "messages and progress lines were lost (check the disk or pipe it goes to)");
    n += w < 0 ? 0 : (w < left ? w : left - 1);
  }
  if (!e_err) (void)write_all(1, line, static_cast<size_t>(n));
  else if (!e_out) (void)write_all(0, line, static_cast<size_t>(n));
  return rc == 0 ? 1 : rc;
}

int write_all(int fd, std::string_view bytes, bool (*retry_interrupted)(const void*), const void* arg) noexcept {
  const char* p = bytes.data();
  size_t n = bytes.size();
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w > 0) {
      p += w;
      n -= static_cast<size_t>(w);
      continue;
    }
    const int e = w < 0 ? errno : EIO;  // write() returning 0 for n > 0: treat as an I/O error
    if (e == EINTR && retry_interrupted != nullptr && retry_interrupted(arg)) continue;
    return e;
  }
  return 0;
}

std::string current_exception_text() noexcept {
  try {
    const std::type_info* t = abi::__cxa_current_exception_type();
    std::string type = "an exception of unknown type";
    if (t) {
      int st = 0;
      char* d = abi::__cxa_demangle(t->name(), nullptr, nullptr, &st);
      type = st == 0 && d ? d : t->name();
      std::free(d);
    }
    try {
      std::exception_ptr p = std::current_exception();
      if (p) std::rethrow_exception(p);
    } catch (const std::exception& e) {
      return type + ": " + e.what();
    } catch (...) {}
    return type;
  } catch (...) {
    return "an exception";  // no memory to say more
  }
}

}  // namespace gnio::console
