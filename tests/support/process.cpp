// SPDX-License-Identifier: Apache-2.0
#include "support/process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string_view>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

extern char** environ;

namespace gnio::test {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

namespace {

std::runtime_error env_error(const char* name, const std::string& why) {
  return std::runtime_error(std::string(name) + " " + why +
                            " (ctest sets it: run the tests with ctest, or set it as tests/CMakeLists.txt does)");
}

std::string env_value(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) throw env_error(name, "is not set");
  return v;
}

}  // namespace

std::string env_dir(const char* name, const char* must_hold) {
  const std::string dir = env_value(name);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw env_error(name, "is " + dir + ", which is not a directory");
  if (::access((dir + "/" + must_hold).c_str(), F_OK) != 0)
    throw env_error(name, "is " + dir + ", which has no " + must_hold);
  return dir;
}

std::string env_program(const char* name) {
  const std::string path = env_value(name);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || ::access(path.c_str(), X_OK) != 0)
    throw env_error(name, "is " + path + ", which is not an executable file");
  return path;
}

std::string data_dir() { return env_dir("GNIO_TEST_DATA_DIR", "MANIFEST.tsv"); }
std::string data_path(const std::string& file) { return data_dir() + "/" + file; }
std::string source_dir() { return env_dir("GNIO_SOURCE_DIR", "docs/schema"); }
std::string corpus_dir() {
  const char* v = std::getenv("GNIO_CORPUS_DIR");
  return v && *v ? env_dir("GNIO_CORPUS_DIR", "MANIFEST.tsv") : data_dir() + "/corpus";
}
std::string tool_bin() { return env_program("GNIO_TOOL_BIN"); }
std::string flow_count_bin() { return env_program("GNIO_FLOW_COUNT_BIN"); }
std::string l2fwd_bin() { return env_program("GNIO_L2FWD_BIN"); }

namespace {

class env_environment : public ::testing::Environment {
 public:
  explicit env_environment(std::vector<std::string> names) : names_(std::move(names)) {}
  void SetUp() override {
    for (const auto& n : names_) {
      try {
        if (n == "GNIO_TEST_DATA_DIR") (void)data_dir();
        else if (n == "GNIO_SOURCE_DIR") (void)source_dir();
        else if (n == "GNIO_CORPUS_DIR") (void)corpus_dir();
        else if (n == "GNIO_TOOL_BIN") (void)tool_bin();
        else if (n == "GNIO_FLOW_COUNT_BIN") (void)flow_count_bin();
        else if (n == "GNIO_L2FWD_BIN") (void)l2fwd_bin();
        else ADD_FAILURE() << "env_check: unknown variable " << n;
      } catch (const std::exception& e) {
        ADD_FAILURE() << e.what();
      }
    }
    // A fatal failure here makes gtest run no test.
    if (::testing::Test::HasFailure()) GTEST_FAIL() << "the tests cannot find their inputs (above); no test was run";
  }

 private:
  std::vector<std::string> names_;
};

// Removes the directory at exit, only in the process that made it (a forked
// child that exits must not take its parent's files).
struct temp_dir_owner {
  std::string path;
  pid_t pid = -1;
  ~temp_dir_owner() {
    if (pid != ::getpid() || path.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    if (ec) std::fprintf(stderr, "[test] could not remove %s: %s\n", path.c_str(), ec.message().c_str());
  }
};

}  // namespace

bool env_check(std::vector<std::string> names) {
  // gtest owns the environment from here on.
  ::testing::AddGlobalTestEnvironment(new env_environment(std::move(names)));
  return true;
}

const std::string& temp_dir() {
  static temp_dir_owner owner = [] {
    const char* dir = std::getenv("TMPDIR");
    std::string tmpl = std::string(dir && *dir ? dir : "/tmp") + "/gnio_test_" + std::to_string(::getpid()) + "_XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (!::mkdtemp(buf.data()))
      throw std::runtime_error("mkdtemp(" + tmpl + ") failed: " + std::strerror(errno) + " (check TMPDIR)");
    return temp_dir_owner{buf.data(), ::getpid()};
  }();
  return owner.path;
}

std::string temp_path(const char* tag) {
  std::string tmpl = temp_dir() + "/" + tag + "_XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  const int fd = ::mkstemp(buf.data());
  if (fd < 0) throw std::runtime_error("mkstemp(" + tmpl + ") failed: " + std::strerror(errno));
  ::close(fd);
  return buf.data();
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string proc_result::describe() const {
  std::ostringstream s;
  if (!spawned) s << "not started";
  else if (exited) s << "exit " << code;
  else s << "signal " << signal << (killed_at_limit ? " (killed at the test's time limit)" : "");
  s << "\n--- stdout:\n" << out << "--- stderr:\n" << err;
  return s.str();
}

namespace {
// A sanitized child runs several times slower (a Debug ASan build of
// flow_count merging 262,144 flows: 27 s against 3 s); the time limit is a
// guard against hangs, so it stretches with the build.
constexpr int k_sanitizer_slowdown = sanitized_build ? 4 : 1;
}  // namespace

proc_result run_process(std::vector<std::string> argv, const run_options& o) {
  proc_result r;
  if (argv.empty()) {
    r.err = "run_process: no program";
    return r;
  }
  const std::string json_path = o.with_json ? temp_path("json") : "";
  const std::string out_path = temp_path("out"), err_path = temp_path("err");
  if (o.with_json) {
    std::remove(json_path.c_str());  // present afterwards only if the program wrote it
    argv.push_back("--json");
    argv.push_back(json_path);
  }
  // o.env's entries replace the inherited ones of the same name: getenv
  // returns the first, so an appended duplicate would be ignored.
  // GNIO_LOG_LEVEL is never inherited: o.log_level sets it or nothing does.
  const auto name_of = [](std::string_view e) { return e.substr(0, e.find('=') + 1); };
  const auto overridden = [&](const char* entry) {
    const auto name = name_of(entry);
    if (name == "GNIO_LOG_LEVEL=") return true;
    for (const auto& x : o.env)
      if (name_of(x) == name) return true;
    return false;
  };
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e)
    if (!overridden(*e)) env.emplace_back(*e);
  if (o.log_level) env.push_back("GNIO_LOG_LEVEL=" + *o.log_level);
  env.insert(env.end(), o.env.begin(), o.env.end());

  const std::string& child_out = o.stdout_path.empty() ? out_path : o.stdout_path;
  const std::string& child_err = o.stderr_path.empty() ? err_path : o.stderr_path;
  std::vector<char*> av, ev;
  for (auto& a : argv) av.push_back(a.data());
  av.push_back(nullptr);
  for (auto& e : env) ev.push_back(e.data());
  ev.push_back(nullptr);
  pid_t pid = -1;
  int rc = 0;
  if (o.file_size_limit == 0 && o.address_space_limit == 0) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, child_out.c_str(), O_WRONLY | O_TRUNC, 0);
    posix_spawn_file_actions_addopen(&fa, 2, child_err.c_str(), O_WRONLY | O_TRUNC, 0);
    rc = posix_spawnp(&pid, argv[0].c_str(), &fa, nullptr, av.data(), ev.data());
    posix_spawn_file_actions_destroy(&fa);
  } else {
    // posix_spawn cannot set resource limits: fork, and only
    // async-signal-safe calls in the child before exec.
    int err_pipe[2];
    if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
      rc = errno;
    } else {
      pid = ::fork();
      if (pid == 0) {
        const int in = ::open("/dev/null", O_RDONLY);
        const int out = ::open(child_out.c_str(), O_WRONLY | O_TRUNC);
        const int err = ::open(child_err.c_str(), O_WRONLY | O_TRUNC);
        const rlimit fsize{o.file_size_limit, o.file_size_limit}, as{o.address_space_limit, o.address_space_limit};
        int e = 0;
        if (in < 0 || out < 0 || err < 0 || ::dup2(in, 0) < 0 || ::dup2(out, 1) < 0 || ::dup2(err, 2) < 0 ||
            (o.file_size_limit && ::setrlimit(RLIMIT_FSIZE, &fsize) != 0) ||
            (o.address_space_limit && ::setrlimit(RLIMIT_AS, &as) != 0))
          e = errno;
        else ::execvpe(av[0], av.data(), ev.data());
        if (e == 0) e = errno;
        (void)!::write(err_pipe[1], &e, sizeof e);
        ::_exit(127);
      }
      rc = pid < 0 ? errno : 0;
      ::close(err_pipe[1]);
      int child_errno = 0;
      if (pid > 0 && ::read(err_pipe[0], &child_errno, sizeof child_errno) == sizeof child_errno) {
        rc = child_errno;  // setup or exec failed; the child is reaped below
        while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {}
      }
      ::close(err_pipe[0]);
    }
  }
  if (rc != 0) {
    r.err = "posix_spawnp(" + argv[0] + ") failed: " + std::strerror(rc);
  } else {
    r.spawned = true;
    const auto t0 = std::chrono::steady_clock::now();
    bool signalled = false;
    int st = 0;
    for (;;) {
      const pid_t w = ::waitpid(pid, &st, WNOHANG);
      if (w == pid || (w < 0 && errno != EINTR)) break;
      const auto el = std::chrono::steady_clock::now() - t0;
      if (!signalled && el >= o.signal_after) {
        ::kill(pid, o.signal);
        signalled = true;
      }
      if (el >= o.limit * k_sanitizer_slowdown) {
        ::kill(pid, SIGKILL);
        while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
        r.killed_at_limit = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    r.exited = WIFEXITED(st);
    r.code = r.exited ? WEXITSTATUS(st) : -1;
    r.signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
    r.out = slurp(out_path);
    r.err = slurp(err_path);
    if (o.with_json) {
      std::ifstream jf(json_path);
      if (jf) {
        try {
          r.j = nlohmann::json::parse(jf);
        } catch (const std::exception& e) {
          r.err += std::string("\n[test] could not parse the JSON output: ") + e.what();
        }
      }
    }
  }
  if (o.with_json) std::remove(json_path.c_str());
  std::remove(out_path.c_str());
  std::remove(err_path.c_str());
  return r;
}

std::vector<manifest_row> read_manifest(const std::string& path) {
  std::vector<manifest_row> m;
  std::ifstream in(path);
  std::string line;
  auto split = [](const std::string& s) {
    std::vector<std::string> v;
    std::stringstream ss(s);
    std::string f;
    while (std::getline(ss, f, '\t')) v.push_back(f);
    return v;
  };
  if (!std::getline(in, line)) return m;
  const auto header = split(line);
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto fields = split(line);
    manifest_row row;
    for (size_t i = 0; i < header.size() && i < fields.size(); ++i) row[header[i]] = fields[i];
    m.push_back(std::move(row));
  }
  return m;
}

long manifest_num(const manifest_row& r, const std::string& column) {
  auto it = r.find(column);
  return it == r.end() || it->second.empty() || it->second == "-" ? -1 : std::stol(it->second);
}

}  // namespace gnio::test
