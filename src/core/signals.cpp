// SPDX-License-Identifier: Apache-2.0
#include "gnio/signals.hpp"

#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <csignal>
#include <cstring>

#include <sys/syscall.h>

namespace gnio {

namespace {

// Signal handlers can only reach globals. Lock-free atomics are safe to use
// in a handler.
std::atomic<int> g_signal{0};         // first stop signal
std::atomic<bool> g_deadline{false};  // SIGALRM from the deadline timer
std::atomic<pid_t> g_owner_tid{0};    // the thread blocking calls should be interrupted on
std::atomic<bool> g_any{false};       // either of the above
std::atomic<unsigned> g_count{0};     // stop signals so far (console gives up a stuck write at the second)
pthread_t g_owner;

constexpr int k_stop_signals[] = {SIGINT, SIGTERM, SIGHUP};
struct sigaction g_old[3], g_old_alrm, g_old_pipe, g_old_xfsz;
timer_t g_timer;
bool g_timer_armed = false;

void on_stop(int sig) {
  int expected = 0;
  (void)g_signal.compare_exchange_strong(expected, sig);
  g_count.fetch_add(1);
  g_any.store(true);
  // Pass it on to the owner thread, whose blocking call must return EINTR.
  // syscall() and pthread_kill() are async-signal-safe.
  if (static_cast<pid_t>(syscall(SYS_gettid)) != g_owner_tid.load()) pthread_kill(g_owner, sig);
}

void on_alarm(int) {
  g_deadline.store(true);
  g_any.store(true);
}

}  // namespace

stop_signals::stop_signals() noexcept {
  g_signal.store(0);
  g_count.store(0);
  g_deadline.store(false);
  g_any.store(false);
  g_owner = pthread_self();
  g_owner_tid.store(static_cast<pid_t>(syscall(SYS_gettid)));
  struct sigaction sa {};
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: blocking calls return EINTR
  sa.sa_handler = on_stop;
  for (int i = 0; i < 3; ++i) sigaction(k_stop_signals[i], &sa, &g_old[i]);
  sa.sa_handler = on_alarm;
  sigaction(SIGALRM, &sa, &g_old_alrm);
  sa.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &sa, &g_old_pipe);
  // A file past RLIMIT_FSIZE is an EFBIG write error to report, like a full
  // disk, not a death that loses the results.
  sigaction(SIGXFSZ, &sa, &g_old_xfsz);
}

stop_signals::~stop_signals() {
  if (g_timer_armed) {
    timer_delete(g_timer);
    g_timer_armed = false;
  }
  for (int i = 0; i < 3; ++i) sigaction(k_stop_signals[i], &g_old[i], nullptr);
  sigaction(SIGALRM, &g_old_alrm, nullptr);
  sigaction(SIGPIPE, &g_old_pipe, nullptr);
  sigaction(SIGXFSZ, &g_old_xfsz, nullptr);
}

bool stop_signals::arm_deadline(double seconds) noexcept {
  if (!(seconds > 0) || !std::isfinite(seconds)) return false;
  if (!g_timer_armed) {
    struct sigevent ev {};
    ev.sigev_notify = SIGEV_THREAD_ID;  // to the owner thread, whose blocking calls it must interrupt
    ev.sigev_signo = SIGALRM;
    ev._sigev_un._tid = g_owner_tid.load();
    if (timer_create(CLOCK_MONOTONIC, &ev, &g_timer) != 0) return false;
    g_timer_armed = true;
  }
  struct itimerspec its {};
  its.it_value.tv_sec = static_cast<time_t>(seconds);
  its.it_value.tv_nsec = static_cast<long>((seconds - std::floor(seconds)) * 1e9);
  if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0) its.it_value.tv_nsec = 1;
  return timer_settime(g_timer, 0, &its, nullptr) == 0;
}

bool stop_signals::requested() const noexcept { return g_any.load(); }
bool stop_signals::deadline_passed() const noexcept { return g_deadline.load() && g_signal.load() == 0; }
int stop_signals::signal() const noexcept { return g_signal.load(); }
unsigned stop_signals::count() const noexcept { return g_count.load(); }
std::atomic<bool>* stop_signals::flag() const noexcept { return &g_any; }

namespace detail {
unsigned stop_signal_count() noexcept { return g_count.load(); }
}  // namespace detail

}  // namespace gnio
