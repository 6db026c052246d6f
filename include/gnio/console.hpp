// SPDX-License-Identifier: Apache-2.0
// A program's console output (stdout and stderr) without exceptions and
// without silent failures.
//
//   gnio::console::out(fmt::format("prog: {} packets\n", n));   // stdout
//   gnio::console::err("prog: port: ...\n");                     // stderr
//   ...
//   return gnio::console::finish("prog", rc);                    // the last thing main does
//
// A write that fails (a full disk, /dev/full, a closed pipe, a closed
// descriptor) is not an exception and does not end the run: the first
// failure on each stream is remembered with its errno, that stream gets no
// more writes, and the program carries on (its JSON is still written).
// finish() flushes stdout, and when a write failed it says so once, with the
// errno text, on the stream that still works, and turns an exit status of 0
// into 1. Short outputs that fail are reported too: nothing waits in a buffer
// past finish().
//
// stdout is buffered (flushed when the buffer fills, when a line goes to
// stderr, by flush(), and after every line when stdout is a terminal);
// stderr is not. Writes go straight to file descriptors 1 and 2 with write(2):
// partial writes and EINTR are retried, except that EINTR after a stop signal
// (gnio::stop_signals) ends the write as a failure, so a stuck reader cannot
// keep a stopped program from exiting. Programs should ignore SIGPIPE
// (gnio::stop_signals does), or a closed pipe ends them before it can be
// reported. Text written through stdio (printf, std::cout) is not seen here.
//
// The state is the process's; every function is thread-safe and noexcept.
#pragma once

#include <string>
#include <string_view>

namespace gnio::console {

enum class stream { out, err };

// Writes all of text to the stream. Returns false when this write or an
// earlier one on the same stream failed (nothing more is written to it then).
bool write(stream s, std::string_view text) noexcept;
inline bool out(std::string_view text) noexcept { return write(stream::out, text); }
inline bool err(std::string_view text) noexcept { return write(stream::err, text); }

// From now on, text for stdout goes to stderr: stdout carries data the
// program writes itself (a --jsonl stream on "-"). What stdout's buffer
// holds is written first.
void text_to_stderr() noexcept;

// Writes what stdout holds in its buffer. Returns false when either stream
// has failed.
bool flush() noexcept;

// The errno of the first failed write on the stream, or 0.
[[nodiscard]] int failure(stream s) noexcept;

// "writing stdout failed: No space left on device" (stdout first, then
// stderr, joined with "; "), or "" when nothing failed. For a program's JSON.
[[nodiscard]] std::string failure_text();

// flush(); then, when a write failed, one line on the other stream
// ("PROGRAM: writing stdout failed: No space left on device; ..."; nothing
// when both failed). Returns rc, or 1 when rc is 0 and a write failed.
[[nodiscard]] int finish(std::string_view program, int rc) noexcept;

// Writes all of `bytes` to the descriptor fd with write(2), retrying partial
// writes, and EINTR while retry_interrupted() says so (the console retries
// until a second stop signal; a --jsonl stream until its run is stopping).
// Returns 0, or the errno that ended the write (EIO for a write() that
// returned 0). The console's streams, --jsonl's and atomic_file go through it.
[[nodiscard]] int write_all(int fd, std::string_view bytes, bool (*retry_interrupted)(const void*),
                            const void* arg) noexcept;

// For a catch block: "TYPE: what()" of the exception being handled (the
// demangled type name), or "an exception of unknown type". Never throws.
[[nodiscard]] std::string current_exception_text() noexcept;

}  // namespace gnio::console
