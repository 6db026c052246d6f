// SPDX-License-Identifier: Apache-2.0
// The l2fwd example end to end: a pcap port replays a bundled capture and
// records what l2fwd sends back; the recording must be the capture with the
// Ethernet addresses swapped, byte for byte (read back with libpcap). On the
// generator every frame must come back out, and bad ports are refused.
//
// Environment: GNIO_TEST_EXEC=host|cuda (default host; cuda skips without a
// GPU); GNIO_TEST_DATA_DIR and GNIO_L2FWD_BIN (set by ctest) name
// tests/data and the program.
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <gnio/gpu.hpp>

#include <nlohmann/json.hpp>

#include "support/frames.hpp"
#include "support/process.hpp"

namespace {

using gnio::test::env_or;
using frame = std::vector<uint8_t>;
using gnio::test::read_pcap;

// Inputs and programs from the environment ctest sets; checked before the first test.
const bool k_env = gnio::test::env_check({"GNIO_TEST_DATA_DIR", "GNIO_L2FWD_BIN"});
const std::string k_exec = env_or("GNIO_TEST_EXEC", "host");

// The launch mode the forwarding runs use (--launch): persistent (default),
// per-burst or graph.
const std::string k_launch = env_or("GNIO_TEST_LAUNCH", "persistent");

std::string gpu_selector() { return k_exec == "cuda" ? "0" : "host"; }

#define REQUIRE_EXECUTOR()                                                                               \
  do {                                                                                                   \
    if (k_exec == "cuda" && gnio::list_gpus().empty()) GTEST_SKIP() << "GNIO_TEST_EXEC=cuda but no GPU"; \
  } while (0)

frame swapped(frame f) {
  if (f.size() >= 12) std::swap_ranges(f.begin(), f.begin() + 6, f.begin() + 6);
  return f;
}

gnio::test::proc_result l2fwd(std::vector<std::string> args, gnio::test::run_options o = {.with_json = true}) {
  args.insert(args.begin(), gnio::test::l2fwd_bin());
  args.insert(args.end(), {"--gpu", gpu_selector()});
  if (std::find(args.begin(), args.end(), "--launch") == args.end()) args.insert(args.end(), {"--launch", k_launch});
  if (std::find(args.begin(), args.end(), "--stats-interval") == args.end())
    args.insert(args.end(), {"--stats-interval", "0"});
  return gnio::test::run_process(args, o);
}

// A file with this text, for checking that a run left it alone or replaced it.
void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

TEST(L2fwd, OneQueueSendsEveryFrameBackSwappedInOrder) {
  REQUIRE_EXECUTOR();
  for (const char* file : {"http.pcap", "dns_icmp.pcap", "QinQpacket.pcap", "test.pcap"}) {
    SCOPED_TRACE(file);
    const std::string in = gnio::test::data_dir() + "/" + file, out = gnio::test::temp_path("l2fwd") + ".pcap";
    auto r = l2fwd({"--port", "pcap:file=" + in + ",tx=" + out});
    ASSERT_EQ(r.code, 0) << r.describe();
    const auto sent = read_pcap(in), back = read_pcap(out);
    std::remove(out.c_str());
    ASSERT_EQ(back.size(), sent.size());
    for (size_t i = 0; i < sent.size(); ++i) ASSERT_EQ(back[i], swapped(sent[i])) << "frame " << i;
    ASSERT_TRUE(r.j);
    EXPECT_EQ(r.j->at("forwarded").get<size_t>(), sent.size());
    EXPECT_EQ(r.j->at("tx_frames").get<size_t>(), sent.size());
    EXPECT_EQ(r.j->at("unaccounted").get<long>(), 0);
    EXPECT_EQ(r.j->at("launch"), k_launch);
  }
}

// Every launch mode forwards the same bytes in the same order.
TEST(L2fwd, LaunchModesSendTheSameBytes) {
  REQUIRE_EXECUTOR();
  std::vector<std::string> modes = {"persistent", "per-burst"};
  if (k_exec == "cuda") modes.push_back("graph");
  const std::string in = gnio::test::data_dir() + "/http.pcap";
  const auto sent = read_pcap(in);
  for (const auto& m : modes) {
    for (const char* burst : {"1", "8"}) {
      SCOPED_TRACE("--launch " + m + " --burst " + burst);
      const std::string out = gnio::test::temp_path("l2fwd_modes") + ".pcap";
      auto r = l2fwd({"--port", "pcap:file=" + in + ",tx=" + out, "--launch", m, "--burst", burst});
      ASSERT_EQ(r.code, 0) << r.describe();
      const auto back = read_pcap(out);
      std::remove(out.c_str());
      ASSERT_EQ(back.size(), sent.size());
      for (size_t i = 0; i < sent.size(); ++i) ASSERT_EQ(back[i], swapped(sent[i])) << "frame " << i;
      ASSERT_TRUE(r.j);
      EXPECT_EQ(r.j->at("launch"), m);
      if (m != "persistent") {
        EXPECT_GE(r.j->at("launches").get<uint64_t>(), 1u);
        EXPECT_LE(r.j->at("packets_per_launch").get<double>(), std::stod(burst));
        EXPECT_EQ(r.j->at("launch_consumed").get<size_t>(), sent.size());
      }
    }
  }
}

TEST(L2fwd, FourQueuesKeepEveryFrameAndEachQueuesOrder) {
  REQUIRE_EXECUTOR();
  const std::string in = gnio::test::data_dir() + "/QinQpacket.pcap", out = gnio::test::temp_path("l2fwd4") + ".pcap";
  auto r = l2fwd({"--port", "pcap:file=" + in + ",tx=" + out, "--queues", "4", "--no-mac-swap"});
  ASSERT_EQ(r.code, 0) << r.describe();
  auto sent = read_pcap(in), back = read_pcap(out);
  std::remove(out.c_str());
  ASSERT_EQ(back.size(), sent.size());
  // Queues send independently, so only the multiset is fixed; unchanged frames
  // (--no-mac-swap) must all be there.
  std::sort(sent.begin(), sent.end());
  std::sort(back.begin(), back.end());
  EXPECT_EQ(back, sent);
}

TEST(L2fwd, GeneratorFramesAllComeBackOut) {
  REQUIRE_EXECUTOR();
  auto r = l2fwd({"--port", "gen:count=200000,flows=256", "--queues", "2"});
  ASSERT_EQ(r.code, 0) << r.describe();
  ASSERT_TRUE(r.j);
  EXPECT_EQ(r.j->at("packets").get<long>(), 200000);
  EXPECT_EQ(r.j->at("forwarded").get<long>(), 200000);
  EXPECT_EQ(r.j->at("tx_frames").get<long>(), 200000);
  EXPECT_EQ(r.j->at("missed").get<long>(), 0);
}

TEST(L2fwd, APortThatCannotTransmitIsRefused) {
  auto r = l2fwd({"--port", "pcap:file=" + gnio::test::data_dir() + "/http.pcap"});
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_NE(r.err.find("not_supported"), std::string::npos) << r.describe();
  EXPECT_NE(r.err.find("cannot transmit"), std::string::npos) << r.describe();
  EXPECT_NE(r.err.find("tx=FILE"), std::string::npos) << r.describe();
}

TEST(L2fwd, APortThatCannotReceiveNamesTheMissingFile) {
  // tx= was given; file= is what is missing.
  const std::string tx = gnio::test::temp_path("l2fwd_txonly") + ".pcap";
  auto r = l2fwd({"--port", "pcap:tx=" + tx});
  std::remove(tx.c_str());
  std::remove(tx.substr(0, tx.size() - 5).c_str());
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_NE(r.err.find("cannot receive"), std::string::npos) << r.describe();
  EXPECT_NE(r.err.find("file=CAPTURE"), std::string::npos) << r.describe();
  EXPECT_EQ(r.err.find("needs tx="), std::string::npos) << r.describe();
}

// F17j: 9000-byte frames fit a 9216-byte slot and go back out whole; with
// the default 2048-byte slot the warning names the slot and --rx-slot.
TEST(L2fwd, JumboFramesNeedALargerRxSlotAndSaySo) {
  REQUIRE_EXECUTOR();
  auto whole = l2fwd({"--port", "gen:count=10,size=9000", "--rx-slot", "9216"});
  ASSERT_EQ(whole.code, 0) << whole.describe();
  ASSERT_TRUE(whole.j) << whole.describe();
  EXPECT_EQ(whole.j->at("truncated").get<uint64_t>(), 0u);
  EXPECT_EQ(whole.j->at("forwarded").get<uint64_t>(), 10u);
  EXPECT_EQ(whole.j->at("bytes").get<uint64_t>(), 90000u);
  auto cut = l2fwd({"--port", "gen:count=10,size=9000"});
  ASSERT_TRUE(cut.j) << cut.describe();
  EXPECT_EQ(cut.j->at("truncated").get<uint64_t>(), 10u);
  EXPECT_NE(cut.err.find("longer than the 2048-byte RX slot"), std::string::npos) << cut.describe();
}

// F19: rings that cannot be backed are refused before they are allocated
// (under an address-space limit, so that a missed check fails safely).
TEST(BadInput, RingsThatCannotFitAreRefusedBeforeAllocating) {
  if (gnio::test::sanitized_build)
    GTEST_SKIP() << "a sanitizer reserves more address space than the limit this test sets";
  gnio::test::run_options o;
  o.address_space_limit = uint64_t{2} << 30;
  auto r = gnio::test::run_process(
      {gnio::test::l2fwd_bin(), "--port", "gen:count=10", "--gpu", "host", "--ring", "1048576"}, o);
  ASSERT_TRUE(r.exited) << r.describe();
  EXPECT_EQ(r.code, 2) << r.describe();
  for (const char* m : {"--ring 1048576 on 1 RX and 1 TX queue(s)", "bytes", "RLIMIT_AS"})
    EXPECT_NE(r.err.find(m), std::string::npos) << "lacks '" << m << "'\n" << r.describe();
}

TEST(BadInput, UsageErrorsExitWithTwoAndSayWhatIsWrong) {
  const std::string port = "pcap:file=" + gnio::test::data_path("http.pcap") + ",tx=/dev/null";
  const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> cases = {
      {{"--duration", "nan"}, {"--duration", "nan is not a finite number"}},
      {{"--duration", "inf"}, {"--duration", "not a finite number"}},
      {{"--stats-interval", "nan"}, {"--stats-interval", "not a finite number"}},
      {{"--duration", "x"}, {"--duration", "x is not a number"}},
      {{"--queues", "abc"}, {"--queues", "abc is not a whole number"}},
      {{"--ring", "3"}, {"--ring", "3 is not a power of two"}},
      {{"--ring", "0"}, {"--ring", "0 is below the minimum 2"}},
      {{"--threads", "2000"}, {"--threads", "2000 is above the maximum 1024"}},
      {{"--launch", "often"}, {"--launch"}},
      {{"--launch", "per-burst", "--burst", "0"}, {"--burst"}},
      {{"--launch", "graph", "--burst", "8192"}, {"--burst 8192 is larger than --ring 4096"}},
      {{"--bogus"}, {"--bogus"}},
      // A typo names the option meant (it was only "not expected").
      {{"--stats-intervl=2"}, {"--stats-intervl: did you mean --stats-interval?"}},
      {{"--durration", "5"}, {"--durration: did you mean --duration?"}},
      // Units as in gen:duration=.
      {{"--duration", "2x"}, {"--duration", "2x: unknown unit 'x'"}},
      {{"--duration", "-5s"}, {"--duration", "-5s is not a duration"}},
  };
  for (const auto& [extra, mention] : cases) {
    std::vector<std::string> args = {"--port", port};
    args.insert(args.end(), extra.begin(), extra.end());
    SCOPED_TRACE(extra.front() + (extra.size() > 1 ? " " + extra[1] : ""));
    auto r = l2fwd(args, {});
    ASSERT_TRUE(r.exited) << r.describe();
    EXPECT_EQ(r.code, 2) << r.describe();
    for (const auto& m : mention)
      EXPECT_NE(r.err.find(m), std::string::npos) << "lacks '" << m << "'\n" << r.describe();
    EXPECT_EQ(r.err.find("not in range"), std::string::npos) << r.describe();
    EXPECT_EQ(r.err.find("num_descs"), std::string::npos) << r.describe();
  }
  // Nothing is near enough to suggest.
  auto far = l2fwd({"--port", port, "--bogus"}, {});
  EXPECT_EQ(far.code, 2) << far.describe();
  EXPECT_EQ(far.err.find("did you mean"), std::string::npos) << far.describe();
  auto help = gnio::test::run_process({gnio::test::l2fwd_bin(), "--help"});
  EXPECT_EQ(help.code, 0) << help.describe();
  EXPECT_EQ(help.out.find("17976931348623157"), std::string::npos) << help.describe();
}

// --version answers as `gnio --version` does (it was "--port is required", rc 2).
TEST(BadInput, VersionNamesTheProgramAndGnio) {
  auto r = gnio::test::run_process({gnio::test::l2fwd_bin(), "--version"});
  ASSERT_TRUE(r.exited) << r.describe();
  EXPECT_EQ(r.code, 0) << r.describe();
  EXPECT_EQ(r.out.rfind("l2fwd (gnio ", 0), 0u) << r.describe();
  EXPECT_NE(r.out.find("\ncuda: "), std::string::npos) << r.describe();
  EXPECT_EQ(r.err, "") << r.describe();
}

// ---------------------------------------------------------------------------
// Outputs: results are always written, write errors are reported
// ---------------------------------------------------------------------------

// stdout or stderr on a full device: the program once died of SIGABRT
// (fmt::print threw) or, for its short stdout, exited 0 without a word. Now
// it finishes, writes the whole JSON, says what could not be written on the
// other stream, and exits 1.
TEST(Outputs, StdoutOrStderrOnAFullDeviceIsReportedAndTheJsonIsComplete) {
  REQUIRE_EXECUTOR();
  {
    SCOPED_TRACE("stdout on /dev/full");
    auto r = l2fwd({"--port", "gen:count=20000,flows=16"}, {.with_json = true, .stdout_path = "/dev/full"});
    ASSERT_TRUE(r.exited) << r.describe();
    EXPECT_EQ(r.code, 1) << r.describe();
    EXPECT_NE(r.err.find("writing stdout failed: No space left on device"), std::string::npos) << r.describe();
    ASSERT_TRUE(r.j) << r.describe();
    EXPECT_EQ(r.j->at("packets").get<long>(), 20000);
    EXPECT_EQ(r.j->at("tx_frames").get<long>(), 20000);
    EXPECT_EQ(r.j->at("unaccounted").get<long>(), 0);
    EXPECT_EQ(r.j->at("error_step").get<std::string>(), "output") << r.j->dump(2);
  }
  {
    SCOPED_TRACE("stderr on /dev/full");
    // Progress lines go to stderr: a live run with a short interval writes some.
    auto r = l2fwd({"--port", "gen:rate=20000pps", "--duration", "1.5", "--stats-interval", "0.2"},
                   {.with_json = true, .stderr_path = "/dev/full"});
    ASSERT_TRUE(r.exited) << r.describe();
    EXPECT_EQ(r.code, 1) << r.describe();
    EXPECT_NE(r.out.find("writing stderr failed: No space left on device"), std::string::npos) << r.describe();
    EXPECT_NE(r.out.find("frames received"), std::string::npos) << "the totals are still printed\n" << r.describe();
    ASSERT_TRUE(r.j) << r.describe();
    EXPECT_TRUE(r.j->at("stopped_early").get<bool>());
    EXPECT_GT(r.j->at("packets").get<long>(), 0);
    EXPECT_EQ(r.j->at("packets"), r.j->at("forwarded"));
    EXPECT_EQ(r.j->at("unaccounted").get<long>(), 0);
  }
}

// A TX capture that cannot grow (a file size limit: the same EFBIG a full
// disk gives as ENOSPC) once threw the RX totals and the JSON away. Now the
// TX error and the lost frames are reported, every total is printed and
// written, and the run fails. The limit also checks that SIGXFSZ does not
// kill the program.
TEST(Outputs, AFullTxCaptureKeepsTheTotalsAndFailsTheRun) {
  REQUIRE_EXECUTOR();
  const std::string in = gnio::test::data_dir() + "/http.pcap", out = gnio::test::temp_path("l2fwd_full");
  const size_t per_pass = read_pcap(in).size();
  gnio::test::run_options o{.with_json = true};
  o.file_size_limit = 64 * 1024;  // http.pcap is 25 KiB: 20 passes need 500 KiB
  auto r = l2fwd({"--port", "pcap:file=" + in + ",loop=20,tx=" + out}, o);
  std::remove(out.c_str());
  ASSERT_TRUE(r.exited) << r.describe();
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_NE(r.err.find("l2fwd: stop: io_failed"), std::string::npos) << r.describe();
  EXPECT_NE(r.err.find("lost on TX"), std::string::npos) << r.describe();
  EXPECT_NE(r.out.find("received " + std::to_string(20 * per_pass) + " = processed " + std::to_string(20 * per_pass)),
            std::string::npos)
      << r.describe();
  ASSERT_TRUE(r.j) << r.describe();
  const auto& j = *r.j;
  EXPECT_EQ(j.at("packets").get<size_t>(), 20 * per_pass) << j.dump(2);
  EXPECT_EQ(j.at("received").get<size_t>(), 20 * per_pass);
  EXPECT_EQ(j.at("unaccounted").get<long>(), 0);
  EXPECT_GT(j.at("tx_errors").get<long>(), 0) << j.dump(2);
  EXPECT_EQ(j.at("error_step").get<std::string>(), "stop") << j.dump(2);
  EXPECT_EQ(j.at("error_status").get<std::string>(), "io_failed") << j.dump(2);
  EXPECT_NE(j.at("error").get<std::string>().find("File too large"), std::string::npos) << "the real errno (EFBIG)\n"
                                                                                        << j.dump(2);
  EXPECT_EQ(j.at("tx_frames").get<size_t>() + j.at("tx_errors").get<size_t>(), 20 * per_pass) << j.dump(2);
}

// --json that cannot be written: found before the run, with the reason, and
// refused with status 2 (it was found only after the run, with no reason, or
// for l2fwd's short JSON not at all: /dev/full gave status 0).
TEST(Outputs, AJsonPathThatCannotBeWrittenIsRefusedBeforeTheRun) {
  const std::string dir = gnio::test::temp_path("l2fwd_dir");
  ASSERT_EQ(std::remove(dir.c_str()), 0);
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  struct bad {
    std::string path, says;
  };
  for (const bad& b : {bad{dir + "/no/such/dir/x.json", "No such file or directory"}, bad{dir, "Is a directory"},
                       bad{"", "needs a file name"}}) {
    SCOPED_TRACE("--json '" + b.path + "'");
    auto r = gnio::test::run_process({gnio::test::l2fwd_bin(), "--port", "gen:count=100000000", "--gpu", "host",
                                      "--stats-interval", "0", "--json", b.path});
    EXPECT_TRUE(r.exited) << r.describe();
    EXPECT_EQ(r.code, 2) << r.describe();
    EXPECT_NE(r.err.find(b.says), std::string::npos) << r.describe();
    EXPECT_EQ(r.out.find("frames received"), std::string::npos) << "refused before the run\n" << r.describe();
  }
  // Nothing was left behind in the directory (no temporary file).
  EXPECT_TRUE(std::filesystem::is_empty(dir)) << "the directory is not empty";
  std::filesystem::remove_all(dir);
  // A device that refuses the write: found at the end, with the errno.
  auto r = gnio::test::run_process(
      {gnio::test::l2fwd_bin(), "--port", "gen:count=10", "--gpu", "host", "--json", "/dev/full"});
  ASSERT_TRUE(r.exited) << r.describe();
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.describe();
}

// --json onto the capture read, or onto the TX capture: refused with status
// 2 before anything runs, and neither file is touched.
TEST(Outputs, AJsonPathThatIsThePortsFileIsRefused) {
  const std::string in = gnio::test::temp_path("l2fwd_in"), tx = gnio::test::temp_path("l2fwd_tx");
  const std::string capture = gnio::test::slurp(gnio::test::data_dir() + "/http.pcap");
  write_text(in, capture);
  write_text(tx, "keep me");
  for (const std::string& target : {in, tx}) {
    SCOPED_TRACE("--json " + target);
    auto r = gnio::test::run_process(
        {gnio::test::l2fwd_bin(), "--port", "pcap:file=" + in + ",tx=" + tx, "--gpu", "host", "--json", target});
    ASSERT_TRUE(r.exited) << r.describe();
    EXPECT_EQ(r.code, 2) << r.describe();
    EXPECT_NE(r.err.find("is the same file as"), std::string::npos) << r.describe();
    EXPECT_EQ(gnio::test::slurp(in), capture) << "the capture was changed";
    EXPECT_EQ(gnio::test::slurp(tx), "keep me") << "the TX capture was changed";
  }
  std::remove(in.c_str());
  std::remove(tx.c_str());
}

// A run that fails after the options were accepted writes its JSON, with the
// error, over the previous run's (which it once left in place).
TEST(Outputs, AFailedRunReplacesTheJsonWithItsError) {
  const std::string json_path = gnio::test::temp_path("l2fwd_stale");
  write_text(json_path, R"({"stale": true})");
  auto r =
      gnio::test::run_process({gnio::test::l2fwd_bin(), "--port", "pcap:file=" + gnio::test::data_dir() + "/http.pcap",
                               "--gpu", "host", "--json", json_path});
  const std::string text = gnio::test::slurp(json_path);
  std::remove(json_path.c_str());
  ASSERT_TRUE(r.exited) << r.describe();
  EXPECT_EQ(r.code, 1) << r.describe();
  const auto j = nlohmann::json::parse(text, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << text;
  EXPECT_FALSE(j.contains("stale")) << text;
  EXPECT_EQ(j.value("error_step", ""), "port") << text;
  EXPECT_EQ(j.value("error_status", ""), "not_supported") << text;
  EXPECT_NE(j.value("error", "").find("must receive and transmit"), std::string::npos) << text;
}

}  // namespace
