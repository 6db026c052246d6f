// SPDX-License-Identifier: Apache-2.0
#include "jsonl.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include <gnio/console.hpp>

namespace gnio::jsonl {

stream::~stream() {
  if (own_fd_ && fd_ >= 0) ::close(fd_);
}

std::string stream::open(const std::string& path, const std::vector<gnio::named_file>& others) {
  if (path.empty()) return "--jsonl: give a file name, or - for stdout";
  for (const auto& o : others)
    if (path != "-" && gnio::same_file(path, o.path))
      return fmt::format("--jsonl {} is the same file as {}{}; writing there would destroy it", path, o.label, o.path);
  if (path == "-") {
    gnio::console::text_to_stderr();
    fd_ = STDOUT_FILENO;
    own_fd_ = false;
    return {};
  }
  int fd;
  do {
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  } while (fd < 0 && errno == EINTR && !(stop_ && stop_->load()));
  if (fd < 0) return fmt::format("--jsonl: cannot open '{}': {}", path, std::strerror(errno));
  fd_ = fd;
  own_fd_ = true;
  return {};
}

std::string stream::head(std::string_view type) const {
  // schema, version and type first, for a reader that looks at the start of a line.
  using nlohmann::json;
  return fmt::format(R"({{"schema":{},"version":{},"type":{}}})", json(id_.schema).dump(), json(id_.version).dump(),
                     json(type).dump());
}

void stream::line(std::string_view type, const nlohmann::json& members) {
  if (fd_ < 0 || errno_) return;
  std::string text = head(type);
  if (members.is_object() && !members.empty()) {
    text.pop_back();  // the head's '}'
    std::string rest = members.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    text += ',';
    text.append(rest, 1);  // without its '{'
  }
  write_line(text);
}

void stream::final_line(std::string result_text) {
  if (fd_ < 0 || errno_) return;
  std::erase(result_text, '\n');
  while (!result_text.empty() && result_text.back() == ' ') result_text.pop_back();
  std::string text = head("final");
  text.pop_back();
  text += ",\"result\":";
  text += result_text;
  text += '}';
  write_line(text);
}

void stream::write_line(const std::string& text) {
  std::string buf = text;
  buf += '\n';
  // A stop signal while a reader holds the pipe full ends the line: the
  // program is asked to finish, and a reader that reads nothing would hold it.
  const int e = gnio::console::write_all(
      fd_, buf,
      [](const void* stop) noexcept {
        return !(stop != nullptr && static_cast<const std::atomic<bool>*>(stop)->load());
      },
      stop_);
  if (e != 0) {
    errno_ = e;
    gnio::console::err(fmt::format("{}: --jsonl: {} after {} line(s); no more lines are written{}\n", program_,
                                   e == EPIPE ? "the reader went away (broken pipe)" : std::strerror(e), lines_,
                                   stop_ ? ", and the run ends" : ""));
    if (stop_) stop_->store(true);
    return;
  }
  ++lines_;
}

void stream::add_json(nlohmann::json& j) const {
  if (fd_ < 0) return;
  j["jsonl_lines"] = lines_;
  if (errno_) j["jsonl_error"] = std::strerror(errno_);
}

}  // namespace gnio::jsonl
