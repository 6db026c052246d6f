// SPDX-License-Identifier: Apache-2.0
// Stopping a gnio program cleanly, for tools and applications alike.
//
//   gnio::stop_signals sig;              // SIGINT, SIGTERM, SIGHUP: stop; SIGPIPE, SIGXFSZ: ignored
//   if (duration_s > 0) sig.arm_deadline(duration_s);
//   while (!sig.requested()) { ... }
//   if (sig.deadline_passed()) ...       // stopped by the deadline, not by a signal
//
// The handlers only set a flag, and they are installed without SA_RESTART: a
// read or open that blocks (a capture on a FIFO or pipe with no writer, a
// silent socket) returns EINTR instead of resuming, so the program gets to
// check requested(). A signal that lands on another thread (an engine thread,
// a driver's thread) is passed on to the thread that created the
// stop_signals, which is the one such calls block. The deadline is a
// CLOCK_MONOTONIC timer aimed at that thread (SIGALRM); it interrupts
// blocking calls the same way. SIGPIPE is ignored, so writing to a closed
// pipe is an EPIPE error to report, not a silent death that loses results;
// SIGXFSZ too, so a file that reaches RLIMIT_FSIZE is an EFBIG error. A
// second stop signal also ends a console write that a stuck reader blocks
// (gnio/console.hpp).
//
// One instance at a time per process; its destructor restores the previous
// handlers and disarms the deadline. Nothing here throws.
#pragma once

#include <atomic>

namespace gnio {

class stop_signals {
 public:
  stop_signals() noexcept;
  ~stop_signals();
  stop_signals(const stop_signals&) = delete;
  stop_signals& operator=(const stop_signals&) = delete;

  // Requests a stop `seconds` from now (monotonic clock). Returns false when
  // the timer could not be created (the caller then still has its own check).
  bool arm_deadline(double seconds) noexcept;

  // A stop signal arrived, or the deadline passed.
  [[nodiscard]] bool requested() const noexcept;
  // The deadline passed (and no stop signal came before it).
  [[nodiscard]] bool deadline_passed() const noexcept;
  // The stop signal that arrived first (SIGINT, SIGTERM, SIGHUP), or 0.
  [[nodiscard]] int signal() const noexcept;
  // Stop signals received so far. A program that goes on after a stop (to
  // write its results) compares it with the count when it stopped, to see a
  // signal that asks it to stop that work too.
  [[nodiscard]] unsigned count() const noexcept;
  // A flag that becomes true with requested(), for code that polls an
  // std::atomic<bool> (e.g. gnio::pp::run's stop flag).
  [[nodiscard]] std::atomic<bool>* flag() const noexcept;
};

}  // namespace gnio
