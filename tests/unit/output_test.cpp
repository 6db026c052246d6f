// SPDX-License-Identifier: Apache-2.0
// gnio::atomic_file, same_file, device_files and gnio::console on real files
// and devices: a result file is replaced whole or left alone, a bad path is
// found before any work, and console write failures are reported once with
// the errno text (checked in a child process: the console state is the
// process's).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include <gnio/atomic_file.hpp>
#include <gnio/console.hpp>

#include "support/process.hpp"

namespace {

namespace fs = std::filesystem;
using gnio::test::slurp;

// A fresh directory under $TMPDIR, removed with everything in it.
struct temp_dir {
  std::string path;
  temp_dir() {
    path = gnio::test::temp_path("output");
    std::remove(path.c_str());
    fs::create_directory(path);
  }
  ~temp_dir() { fs::remove_all(path); }
  [[nodiscard]] std::string operator/(const std::string& name) const { return path + "/" + name; }
  [[nodiscard]] size_t entries() const {
    size_t n = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(path)) ++n;
    return n;
  }
};

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

TEST(AtomicFile, ReplacesTheFileWholeAndLeavesNoTemporaryFile) {
  temp_dir d;
  const std::string p = d / "r.json";
  write_text(p, "old");
  auto f = gnio::atomic_file::prepare(p);
  ASSERT_TRUE(f) << f.err().what();
  EXPECT_EQ(d.entries(), 2u) << "the temporary file is made at prepare()";
  EXPECT_EQ(slurp(p), "old") << "the target is untouched until commit()";
  ASSERT_FALSE(f->commit("{\"new\": 1}\n"));
  EXPECT_EQ(slurp(p), "{\"new\": 1}\n");
  EXPECT_EQ(d.entries(), 1u);
}

TEST(AtomicFile, ANewFileIsCreated) {
  temp_dir d;
  auto f = gnio::atomic_file::prepare(d / "new.json");
  ASSERT_TRUE(f) << f.err().what();
  ASSERT_FALSE(f->commit("x"));
  EXPECT_EQ(slurp(d / "new.json"), "x");
  EXPECT_EQ(d.entries(), 1u);
}

TEST(AtomicFile, WithoutCommitTheTargetStaysAsItWas) {
  temp_dir d;
  const std::string p = d / "keep.json";
  write_text(p, "previous run");
  {
    auto f = gnio::atomic_file::prepare(p);
    ASSERT_TRUE(f) << f.err().what();
  }
  EXPECT_EQ(slurp(p), "previous run");
  EXPECT_EQ(d.entries(), 1u) << "the temporary file is removed";
}

TEST(AtomicFile, KeepsThePermissionsAndFollowsASymbolicLink) {
  temp_dir d;
  const std::string real = d / "real.json", link = d / "link.json";
  write_text(real, "old");
  ASSERT_EQ(::chmod(real.c_str(), 0640), 0);
  fs::create_symlink(real, link);
  auto f = gnio::atomic_file::prepare(link);
  ASSERT_TRUE(f) << f.err().what();
  ASSERT_FALSE(f->commit("new"));
  EXPECT_TRUE(fs::is_symlink(link)) << "the link is kept";
  EXPECT_EQ(slurp(real), "new");
  struct stat st {};
  ASSERT_EQ(::stat(real.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
}

TEST(AtomicFile, BadPathsFailAtPrepareWithTheErrnoText) {
  temp_dir d;
  auto missing = gnio::atomic_file::prepare(d / "no/such/dir/x.json");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.code(), gnio::status::not_found);
  EXPECT_NE(missing.err().message().find("No such file or directory"), std::string::npos) << missing.err().what();
  auto dir = gnio::atomic_file::prepare(d.path);
  ASSERT_FALSE(dir);
  EXPECT_NE(dir.err().message().find("Is a directory"), std::string::npos) << dir.err().what();
  auto empty = gnio::atomic_file::prepare("");
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.code(), gnio::status::invalid_value);
  auto proc = gnio::atomic_file::prepare("/proc/no_such_entry");
  ASSERT_FALSE(proc);
  EXPECT_EQ(d.entries(), 0u);
}

// Devices are written in place: /dev/null stays a device (a rename over it
// would replace it with a regular file), and /dev/full's error comes back.
TEST(AtomicFile, DevicesAreWrittenInPlace) {
  auto null = gnio::atomic_file::prepare("/dev/null");
  ASSERT_TRUE(null) << null.err().what();
  ASSERT_FALSE(null->commit("{}\n"));
  struct stat st {};
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  auto full = gnio::atomic_file::prepare("/dev/full");
  ASSERT_TRUE(full) << full.err().what();
  const gnio::error e = full->commit("{}\n");
  ASSERT_TRUE(e);
  EXPECT_EQ(e.code(), gnio::status::full);
  EXPECT_NE(e.message().find("No space left on device"), std::string::npos) << e.what();
}

// R7: a named FIFO is refused at prepare (opening it to write would wait
// for a reader with no bound); a pipe the caller set up, reached through
// /dev/fd, is written in place while something reads it, and once nothing
// does it is refused or fails at commit, never an open() that waits.
TEST(AtomicFile, ANamedFifoIsRefusedAndAPipeIsWrittenWhileItHasAReader) {
  const std::string fifo = gnio::test::temp_path("fifo");
  ASSERT_EQ(::unlink(fifo.c_str()), 0);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto named = gnio::atomic_file::prepare(fifo);
  ASSERT_FALSE(named);
  EXPECT_EQ(named.err().code(), gnio::status::invalid_value);
  EXPECT_NE(named.err().message().find("'" + fifo + "' is a FIFO (named pipe)"), std::string::npos)
      << named.err().what();
  EXPECT_NE(gnio::fifo_output_refusal(fifo), "");
  auto opt = gnio::prepare_output("--json", fifo, {});
  ASSERT_FALSE(opt);
  EXPECT_EQ(opt.err().message().rfind("--json " + fifo + ": '" + fifo + "' is a FIFO", 0), 0u) << opt.err().what();
  struct stat st {};
  ASSERT_EQ(::stat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode)) << "the FIFO was left as it was";

  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  const std::string end = "/dev/fd/" + std::to_string(fds[1]);
  EXPECT_EQ(gnio::fifo_output_refusal(end), "");
  auto piped = gnio::atomic_file::prepare(end);
  ASSERT_TRUE(piped) << piped.err().what();
  ASSERT_FALSE(piped->commit("{}\n"));
  char buf[8] = {};
  EXPECT_EQ(::read(fds[0], buf, sizeof buf), 3);
  EXPECT_STREQ(buf, "{}\n");

  // The reader goes away after prepare: commit fails at once (EPIPE; the
  // programs ignore SIGPIPE, as this does here), and never waits.
  struct sigaction ignore {
  }, old{};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGPIPE, &ignore, &old), 0);
  auto later = gnio::atomic_file::prepare(end);
  ASSERT_TRUE(later) << later.err().what();
  ::close(fds[0]);
  const gnio::error e = later->commit("{}\n");
  EXPECT_TRUE(e);
  // With no reader from the start: refused, or a failed commit.
  if (auto none = gnio::atomic_file::prepare(end)) EXPECT_TRUE(none->commit("{}\n"));
  (void)::sigaction(SIGPIPE, &old, nullptr);
  ::close(fds[1]);
  ::unlink(fifo.c_str());
}

TEST(AtomicFile, OutputChecksRefuseAnotherFileOfTheRun) {
  temp_dir d;
  const std::string in = d / "in.pcap";
  write_text(in, "capture");
  const auto files = gnio::device_files("pcap:file=" + in + ",tx=" + d / "out.pcap");
  auto same_in = gnio::prepare_output("--json", in, files);
  ASSERT_FALSE(same_in);
  EXPECT_EQ(same_in.err().message(),
            "--json " + in + " is the same file as file=" + in + "; writing there would destroy it");
  // The TX capture does not exist yet; the same path is still refused.
  auto same_out = gnio::prepare_output("--json", d.path + "/./out.pcap", files);
  ASSERT_FALSE(same_out);
  EXPECT_NE(same_out.err().message().find("tx=" + d / "out.pcap"), std::string::npos) << same_out.err().what();
  auto empty = gnio::prepare_output("--json", "", files);
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.err().message(), "--json needs a file name (it was given as \"\")");
  // "-" is not standard output (the programs print their results there as
  // text) and not silently a file named "-" in the working directory.
  auto dash = gnio::prepare_output("--json", "-", files);
  ASSERT_FALSE(dash);
  EXPECT_EQ(dash.err().code(), gnio::status::invalid_value);
  EXPECT_NE(dash.err().message().find("--json -: writing to standard output is not supported"), std::string::npos)
      << dash.err().what();
  EXPECT_NE(dash.err().message().find("./-"), std::string::npos) << dash.err().what();
  auto named_dash = gnio::prepare_output("--json", d / "-", files);
  EXPECT_TRUE(named_dash) << named_dash.err().what();
  auto ok = gnio::prepare_output("--json", d / "r.json", files);
  EXPECT_TRUE(ok) << ok.err().what();
  EXPECT_EQ(slurp(in), "capture");
}

TEST(SameFile, InodesWhereTheFilesExistPathsWhereNot) {
  temp_dir d;
  const std::string a = d / "a", b = d / "b", hard = d / "hard";
  write_text(a, "1");
  write_text(b, "1");
  ASSERT_EQ(::link(a.c_str(), hard.c_str()), 0);
  EXPECT_TRUE(gnio::same_file(a, hard));
  EXPECT_FALSE(gnio::same_file(a, b));
  EXPECT_TRUE(gnio::same_file(d / "x/../new", d / "new"));
  EXPECT_FALSE(gnio::same_file(a, d / "new"));
  EXPECT_FALSE(gnio::same_file("/dev/null", "/dev/null")) << "devices are never the same file here";
}

TEST(DeviceFiles, NamesTheFilesOfEveryBackendSyntax) {
  auto f = gnio::device_files("dpdk:vdev=net_pcap0;rx_pcap=a.pcap;tx_pcap=b.pcap,lanes=2");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].label + f[0].path, "rx_pcap=a.pcap");
  EXPECT_EQ(f[1].label + f[1].path, "tx_pcap=b.pcap");
  f = gnio::device_files("pcap:file=x.pcap,loop=2,tx=y.pcap,tx_pcap=z.pcap");
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[2].path, "z.pcap");
  EXPECT_TRUE(gnio::device_files("gen:count=10,size=64").empty());
  EXPECT_TRUE(gnio::device_files("pcap").empty());
}

// In a child process (gtest's death-test fork): stdout on /dev/full.
TEST(Console, AFailedStdoutIsReportedOnceOnStderrAndFailsTheRun) {
  EXPECT_EXIT(
      {
        const int fd = ::open("/dev/full", O_WRONLY);
        ::dup2(fd, STDOUT_FILENO);
        for (int i = 0; i < 1000; ++i) gnio::console::out("a line of results\n");
        gnio::console::err("a message that still gets through\n");
        std::exit(gnio::console::finish("prog", 0));
      },
      ::testing::ExitedWithCode(1),
      "a message that still gets through\nprog: writing stdout failed: No space left on device; the results printed "
      "there are incomplete");
}

TEST(Console, AShortOutputThatFailsIsNotSilent) {
  // One short line stays in the buffer until finish(), which must write and check it.
  EXPECT_EXIT(
      {
        const int fd = ::open("/dev/full", O_WRONLY);
        ::dup2(fd, STDOUT_FILENO);
        gnio::console::out("ok\n");
        std::exit(gnio::console::finish("prog", 0));
      },
      ::testing::ExitedWithCode(1), "prog: writing stdout failed: No space left on device");
}

TEST(Console, AnExitStatusThatIsAlreadyAFailureIsKept) {
  EXPECT_EXIT(
      {
        const int fd = ::open("/dev/full", O_WRONLY);
        ::dup2(fd, STDOUT_FILENO);
        gnio::console::out("ok\n");
        std::exit(gnio::console::finish("prog", 2));
      },
      ::testing::ExitedWithCode(2), "writing stdout failed");
}

TEST(Console, NothingFailedNothingSaid) {
  EXPECT_EXIT(
      {
        const int fd = ::open("/dev/null", O_WRONLY);
        ::dup2(fd, STDOUT_FILENO);
        gnio::console::out("ok\n");
        gnio::console::err("");
        std::exit(gnio::console::finish("prog", 0));
      },
      ::testing::ExitedWithCode(0), "^$");
}

TEST(Console, CurrentExceptionTextNamesTheType) {
  try {
    throw std::runtime_error("boom");
  } catch (...) {
    EXPECT_EQ(gnio::console::current_exception_text(), "std::runtime_error: boom");
  }
  try {
    throw 42;
  } catch (...) {
    EXPECT_EQ(gnio::console::current_exception_text(), "int");
  }
}

}  // namespace
