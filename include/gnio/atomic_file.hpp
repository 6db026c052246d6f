// SPDX-License-Identifier: Apache-2.0
// Result files written whole or not at all, and checked before the work that
// fills them.
//
//   auto f = gnio::atomic_file::prepare(json_path);   // before the run: a bad path fails now
//   if (!f) ... f.err().message() names the path and the errno text
//   ... the run ...
//   if (gnio::error e = f->commit(text)) ...          // temp file written, fsync'd, renamed over the path
//
// prepare() creates the temporary file next to the target (same directory,
// so the rename is atomic), named ".NAME.tmp-PID-N". commit() writes the text,
// fsyncs and closes the temporary file, checking every call, and renames it
// over the target: a reader sees the old file or the whole new one, never a
// part, and a run that fails before commit() leaves no partial file. The new
// file keeps an existing target's permission bits; a symbolic link to a
// regular file is followed (the file it names is replaced, not the link).
// A target that exists and is not a regular file (a device such as /dev/null
// or /dev/full, a pipe the caller set up such as /dev/stdout into `| jq`), or
// any path under /dev or /proc (/dev/stdout), is written in place instead
// (appended to: /dev/stdout may be a file that holds the console output),
// with the same checks. A named FIFO is refused (fifo_output_refusal). On any failure the
// temporary file is removed and the error says which call failed, with the
// errno text. The destructor removes a temporary file not committed.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gnio/status.hpp"

namespace gnio {

class atomic_file {
 public:
  atomic_file() noexcept = default;
  atomic_file(atomic_file&& o) noexcept;
  atomic_file& operator=(atomic_file&& o) noexcept;
  atomic_file(const atomic_file&) = delete;
  atomic_file& operator=(const atomic_file&) = delete;
  ~atomic_file();

  // Refuses "" and a directory (invalid_value), a FIFO (invalid_value, see
  // fifo_output_refusal), and a path whose directory
  // cannot take a new file (the errno's status: not_found, not_permitted,
  // io_failed, ...), with the errno text.
  [[nodiscard]] static result<atomic_file> prepare(const std::string& path);

  // Writes text as the file's whole contents. Once only.
  [[nodiscard]] error commit(std::string_view text);
  // Removes the temporary file; the target is left as it was.
  void discard() noexcept;

  // The path as given to prepare().
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  [[nodiscard]] bool prepared() const noexcept { return in_place_ || fd_ >= 0; }

 private:
  std::string path_;    // as given
  std::string target_;  // what is replaced (symbolic links resolved)
  std::string temp_;    // the temporary file, while it exists
  int fd_ = -1;         // open on temp_
  bool in_place_ = false;
  unsigned mode_ = 0;  // permission bits to give the new file (0: the default, 0666 & ~umask)
};

// Whether a and b name the same regular file: the same device and inode
// where both exist, else the same absolute path once "." and ".." are
// resolved (so an output not yet created is caught too). Devices and FIFOs
// are never the same file here (writing /dev/null twice destroys nothing).
[[nodiscard]] bool same_file(const std::string& a, const std::string& b) noexcept;

// A file a program reads or writes, with how the user named it: the label
// is "file=", "tx=" (a device string's key) or "--pcap-out " (an option).
struct named_file {
  std::string label;
  std::string path;
};

// The files a device string reads or writes: the values of file=, rx=, tx=
// and tx_pcap=, and of DPDK's net_pcap options (rx_pcap=, tx_pcap=, after
// ';' in vdev=). For checking that an output does not overwrite them.
[[nodiscard]] std::vector<named_file> device_files(std::string_view device);

// Outputs written as files (--json, --pcap-out, a port's tx= and tx_pcap=)
// refuse a FIFO (named pipe): opening one to write waits in open() for a
// reader, with no bound (past --duration and stop signals), so a FIFO no one
// reads would hang the program after its run, or at its start. A pipe the
// caller set up and reached through /dev or /proc (/dev/stdout into `| jq`,
// /dev/fd/N from `>(...)`) is accepted while something reads it. Returns ""
// when path may be opened, else the reason, which names the path.
[[nodiscard]] std::string fifo_output_refusal(const std::string& path);

// What a program checks on an output option (--json FILE) before it runs: a
// name is given, it is not "-" (refused: standard output carries the
// program's text), it is none of `others` (same_file), and prepare() accepts
// it (a FIFO is refused). Errors start with the option and the path, e.g. "--json x.pcap is the
// same file as file=x.pcap; writing there would destroy it" or
// "--json /no/dir/x.json: cannot create a file in '/no/dir': No such file or
// directory".
[[nodiscard]] result<atomic_file> prepare_output(std::string_view option, const std::string& path,
                                                 const std::vector<named_file>& others);

}  // namespace gnio
