// SPDX-License-Identifier: Apache-2.0
// `gnio doctor`, `gnio caps` and `gnio explain` run for real; their JSON is
// validated against the schemas in docs/schema by an independent validator
// (python3-jsonschema).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>
#include <string>

#include <gtest/gtest.h>

#include "support/process.hpp"
#include <nlohmann/json.hpp>

#include <gnio/backends.hpp>
#include <gnio/status.hpp>

namespace {

struct run_result {
  int rc;
  std::string out;
};

run_result run(const std::string& cmd) {
  run_result r{};
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return {-1, "popen failed"};
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int st = pclose(p);
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

const bool k_env = gnio::test::env_check({"GNIO_TOOL_BIN", "GNIO_TEST_DATA_DIR", "GNIO_SOURCE_DIR"});

std::string tool() { return gnio::test::tool_bin(); }

std::string data(const char* f) { return gnio::test::data_path(f); }

void expect_valid(const std::string& json_text, const char* schema) {
  const std::string path = gnio::test::temp_path("diag") + ".json";
  std::ofstream(path) << json_text;
  const std::string src = gnio::test::source_dir();
  auto r = run("/usr/bin/python3 " + src + "/tests/integration/validate_json.py " + src + "/docs/schema " + schema +
               " " + path);
  std::remove(path.c_str());
  if (r.rc == 77) GTEST_SKIP() << "python3-jsonschema not installed";
  EXPECT_EQ(r.rc, 0) << r.out;
}

std::string stdout_of(const std::string& cmd, int* rc) {
  // JSON goes to stdout alone; logs to stderr are dropped here.
  FILE* p = popen((cmd + " 2>/dev/null").c_str(), "r");
  std::string s;
  std::array<char, 4096> buf{};
  size_t n;
  while (p && (n = fread(buf.data(), 1, buf.size(), p)) > 0) s.append(buf.data(), n);
  int st = p ? pclose(p) : -1;
  *rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
  return s;
}

TEST(Doctor, JsonValidatesAndExitCodeMatchesUsable) {
  for (const char* args : {"", " --for pcap", " --for af_packet", " --for af_xdp", " --for dpdk", " --gpu"}) {
    int rc = 0;
    const std::string out = stdout_of(tool() + " doctor --json" + args, &rc);
    auto j = nlohmann::json::parse(out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << args << ": " << out;
    expect_valid(out, "doctor.schema.json");
    EXPECT_EQ(rc, j["usable"].get<bool>() ? 0 : 1) << args;
    for (const auto& c : j["checks"])
      if (c["result"] == "fail" || c["result"] == "warn")
        EXPECT_FALSE(c["remedy"].get<std::string>().empty()) << c.dump();
  }
  // pcap needs nothing beyond this build: always usable.
  int rc = 0;
  (void)stdout_of(tool() + " doctor --json --for pcap", &rc);
  EXPECT_EQ(rc, 0);
  // dpdk: the check follows whether this build has the backend (gnio backends).
  const std::string listed = stdout_of(tool() + " backends", &rc);
  const bool built =
      listed.find("\ndpdk:") != std::string::npos && listed.find("\ndpdk: not built") == std::string::npos;
  const std::string out = stdout_of(tool() + " doctor --json --for dpdk", &rc);
  auto j = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << out;
  bool found = false;
  for (const auto& c : j["checks"])
    if (c["id"] == "dpdk") {
      found = true;
      EXPECT_EQ(c["result"], built ? "pass" : "fail") << c.dump();
      if (!built) EXPECT_NE(c["remedy"].get<std::string>().find("no dpdk backend"), std::string::npos) << c.dump();
    }
  EXPECT_TRUE(found) << out;
  if (!built) EXPECT_EQ(rc, 1) << "a missing backend makes --for dpdk unusable";
}

TEST(Doctor, TextNamesEveryCheck) {
  auto r = run(tool() + " doctor");
  for (const char* w : {"CUDA driver and runtime", "GPUs enumerable", "GPUDirect RDMA", "dma-buf", "hugepages",
                        "network interfaces", "AF_XDP", "DPDK", "privileges", "gnio version"})
    if (std::string(w) != "GPUDirect RDMA" || r.out.find("GPUs enumerable\n") == std::string::npos)
      EXPECT_NE(r.out.find(w), std::string::npos) << w << "\n" << r.out;
}

TEST(Caps, HostAndPcapJsonValidates) {
  int rc = 0;
  const std::string out = stdout_of(tool() + " caps --json --gpu host --port pcap:file=" + data("http.pcap"), &rc);
  ASSERT_EQ(rc, 0) << out;
  expect_valid(out, "caps.schema.json");
  auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["port"]["backend"], "pcap");
  bool saw_tx = false;
  for (const auto& v : j["verdicts"]) {
    if (v["feature"] == "tx") {
      saw_tx = true;
      EXPECT_FALSE(v["supported"].get<bool>());
      EXPECT_EQ(v["reason"], "backend pcap cannot transmit");
    }
    if (v["feature"] == "rx") EXPECT_TRUE(v["supported"].get<bool>());
  }
  EXPECT_TRUE(saw_tx);
}

// gnio backends: every backend gnio knows, from gnio::list_backends(), with
// its options where it is built and what building it needs where it is not.
TEST(Backends, ListsEveryBackendWithItsOptionsOrWhyItIsMissing) {
  int rc = 0;
  const std::string out = stdout_of(tool() + " backends", &rc);
  ASSERT_EQ(rc, 0) << out;
  const auto all = gnio::list_backends();
  for (const char* name : {"pcap", "gen", "pair", "af_packet", "af_xdp", "dpdk"}) {
    const auto it = std::find_if(all.begin(), all.end(), [&](const gnio::backend_info& b) { return b.name == name; });
    ASSERT_NE(it, all.end()) << name;
    EXPECT_EQ(it->available, gnio::backend_available(name)) << name;
    if (it->available) {
      EXPECT_FALSE(it->options.empty()) << name;
      EXPECT_NE(("\n" + out).find(std::string("\n") + name + ": " + it->summary), std::string::npos) << name << "\n"
                                                                                                     << out;
    } else {
      EXPECT_FALSE(it->why_not.empty()) << name;
      EXPECT_NE(out.find(std::string(name) + ": not built: "), std::string::npos) << name << "\n" << out;
    }
  }
  for (const char* name : {"pcap", "gen", "pair"}) EXPECT_TRUE(gnio::backend_available(name)) << name;
  EXPECT_FALSE(gnio::backend_available("bogus"));
  EXPECT_NE(out.find("all backends:\n    overflow=drop|wait"), std::string::npos) << out;
  EXPECT_NE(out.find("tx_pcap=PATH"), std::string::npos) << out;
  // The lists agree: every option line of pcap is printed, indented.
  EXPECT_NE(out.find("\n    tx=PATH"), std::string::npos) << out;
}

// What each backend does with a frame's not-before time (device::tx_prepare_at).
TEST(Caps, TimedTxIsReportedPerBackend) {
  const std::string tx = gnio::test::temp_path("caps_tx") + ".pcap";
  for (const auto& [port, mode] : {std::pair<std::string, const char*>{"pcap:tx=" + tx, "timestamp"},
                                   {"pair:name=caps_timed", "hold"},
                                   {"gen:count=1", "hold"},  // gen sends into a counting sink
                                   {"pcap:file=" + data("http.pcap"), "none"}}) {
    int rc = 0;
    const std::string out = stdout_of(tool() + " caps --json --gpu host --port " + port, &rc);
    ASSERT_EQ(rc, 0) << port << ": " << out;
    expect_valid(out, "caps.schema.json");
    auto j = nlohmann::json::parse(out);
    EXPECT_EQ(j["port"]["tx_time"], mode) << port;
    for (const auto& v : j["verdicts"])
      if (v["feature"] == "tx_time") EXPECT_EQ(v["supported"].get<bool>(), std::string(mode) != "none") << port;
  }
  std::filesystem::remove(tx);
}

TEST(Caps, GenPortOnTheFirstGpuOrHost) {
  int rc = 0;
  const std::string out = stdout_of(tool() + " caps --json --gpu auto --port gen:count=1", &rc);
  ASSERT_EQ(rc, 0) << out;
  expect_valid(out, "caps.schema.json");
}

TEST(Caps, BadInputIsAClearError) {
  auto r = run(tool() + " caps --gpu host --port bogus:");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("unknown backend"), std::string::npos) << r.out;
  r = run(tool() + " caps --gpu 0000:ff:1f.7 --port gen:");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("not_found"), std::string::npos) << r.out;
}

// Output recorded by `gnio doctor --gpu --json` and `gnio caps --gpu 0 --json`
// on an H200 machine (scripts/gpu-check.sh): the GPU parts of the schemas,
// which a machine without a GPU never fills in.
TEST(Doctor, RecordedGpuMachineOutputValidates) {
  const std::string dir = gnio::test::data_path("diag/");
  for (const auto& [file, schema] :
       {std::pair{"doctor-h200.json", "doctor.schema.json"}, {"caps-h200.json", "caps.schema.json"}}) {
    std::ifstream f(dir + file);
    ASSERT_TRUE(f) << file;
    std::stringstream ss;
    ss << f.rdbuf();
    auto j = nlohmann::json::parse(ss.str());
    const bool doctor = std::string(file).rfind("doctor", 0) == 0;
    if (doctor) EXPECT_FALSE(j["gpus"].empty());
    // Recorded with version 1 ("schema": "gnio-doctor/1", no version); 2.0
    // changed only those two members, so the body is checked under 2.0's.
    j["schema"] = doctor ? "gnio.doctor" : "gnio.caps";
    j["version"] = "2.0";
    expect_valid(j.dump(2), schema);
  }
}

TEST(Explain, EveryCodeByNumberNameAndDocaName) {
  for (const auto& d : gnio::all_statuses()) {
    const std::string name(d.name);
    for (const std::string& arg : {std::to_string(static_cast<int>(d.code)), name}) {
      int rc = 0;
      const std::string out = stdout_of(tool() + " explain --json " + arg, &rc);
      ASSERT_EQ(rc, 0) << arg;
      // One python start per code is slow; the schema check on a spread of codes covers the shape.
      if (arg == name && static_cast<int>(d.code) % 8 == 0) expect_valid(out, "explain.schema.json");
      auto j = nlohmann::json::parse(out);
      EXPECT_EQ(j["name"], name);
      EXPECT_EQ(j["meaning"], std::string(d.meaning));
      EXPECT_EQ(j["next"], std::string(d.next));
    }
    std::string doca = "DOCA_ERROR_" + name;
    for (auto& c : doca) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (name != "success") EXPECT_EQ(run(tool() + " explain " + doca).rc, 0) << doca;
  }
  auto r = run(tool() + " explain --all");
  EXPECT_EQ(r.rc, 0);
  EXPECT_NE(r.out.find("device_fatal_error"), std::string::npos);
}

TEST(Explain, UnknownInputExitsTwoWithAMessage) {
  for (const char* bad : {"bogus", "32", "-1", "DOCA_ERROR_NOPE"}) {
    auto r = run(tool() + " explain " + bad);
    EXPECT_EQ(r.rc, 2) << bad;
    EXPECT_NE(r.out.find("not a gnio status"), std::string::npos) << r.out;
  }
  EXPECT_EQ(run(tool() + " explain").rc, 2);
}

TEST(Explain, AllWithJsonPrintsJsonAndAnExtraCodeIsRefused) {
  int rc = 0;
  const std::string out = stdout_of(tool() + " explain --all --json", &rc);
  ASSERT_EQ(rc, 0) << out;
  expect_valid(out, "explain-all.schema.json");
  const auto j = nlohmann::json::parse(out);
  ASSERT_EQ(j.at("statuses").size(), gnio::all_statuses().size());
  for (size_t i = 0; i < j.at("statuses").size(); ++i) {
    const auto& d = gnio::all_statuses()[i];
    EXPECT_EQ(j["statuses"][i]["code"], static_cast<int>(d.code));
    EXPECT_EQ(j["statuses"][i]["name"], std::string(d.name));
    EXPECT_EQ(j["statuses"][i]["next"], std::string(d.next));
  }
  for (const char* extra : {" explain --all 18", " explain 18 --all", " explain --all --json bad_state"}) {
    auto r = run(tool() + extra);
    EXPECT_EQ(r.rc, 2) << extra << "\n" << r.out;
    EXPECT_NE(r.out.find("--all"), std::string::npos) << extra << "\n" << r.out;
  }
}

TEST(Cli, AnUnknownCommandIsNamed) {
  for (const char* bad : {"bogus", "pp2", "explian"}) {
    auto r = run(tool() + " " + bad);
    EXPECT_EQ(r.rc, 2) << r.out;
    EXPECT_NE(r.out.find(std::string("'") + bad + "' is not a gnio command"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("explain"), std::string::npos) << "the list of commands\n" << r.out;
  }
  // A typo of a command names the one meant (issue 31 point 8); a word far
  // from every command gets only the list.
  auto typo = run(tool() + " explian");
  EXPECT_NE(typo.out.find("did you mean explain?"), std::string::npos) << typo.out;
  auto far = run(tool() + " bogus");
  EXPECT_EQ(far.out.find("did you mean"), std::string::npos) << far.out;
  // A control character in the word is shown escaped.
  auto esc = run(tool() + " \"$(printf '\\033[31mred')\"");
  EXPECT_EQ(esc.rc, 2) << esc.out;
  EXPECT_EQ(esc.out.find('\x1b'), std::string::npos) << esc.out;
  EXPECT_NE(esc.out.find("\\x1b[31mred"), std::string::npos) << esc.out;
  auto none = run(tool());
  EXPECT_EQ(none.rc, 2) << none.out;
  auto opt = run(tool() + " --bogus");
  EXPECT_EQ(opt.rc, 2) << opt.out;
}

TEST(Cli, VersionFlagPrintsWhatVersionPrints) {
  auto flag = run(tool() + " --version");
  auto cmd = run(tool() + " version");
  EXPECT_EQ(flag.rc, 0) << flag.out;
  EXPECT_EQ(cmd.rc, 0) << cmd.out;
  EXPECT_EQ(flag.out, cmd.out);
  EXPECT_EQ(flag.out.rfind("gnio ", 0), 0u) << flag.out;
  EXPECT_EQ(run(tool() + " --help").rc, 0);
  EXPECT_EQ(run(tool() + " pp --help").rc, 0);
}

// stdout on a full device: every command reports it once on stderr with the
// errno text and exits 1. It once died of SIGABRT (backends: fmt::print
// threw) or, for output shorter than stdio's buffer, exited 0 in silence.
TEST(Outputs, AFullStdoutIsReportedWithTheErrno) {
  const std::string gen = " --gpu host --port gen:count=1";
  for (const std::string& args :
       {std::string("version"), std::string("backends"), std::string("doctor --for pcap"),
        std::string("doctor --json --for pcap"), "caps" + gen, "caps --json" + gen, std::string("explain bad_state"),
        std::string("explain --json bad_state"), std::string("explain --all")}) {
    SCOPED_TRACE(args);
    // stderr to the pipe read here, stdout to /dev/full.
    FILE* p = popen((tool() + " " + args + " 2>&1 >/dev/full").c_str(), "r");
    ASSERT_TRUE(p);
    std::string err;
    std::array<char, 4096> buf{};
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) err.append(buf.data(), n);
    const int st = pclose(p);
    ASSERT_TRUE(WIFEXITED(st)) << "signal " << WTERMSIG(st) << "\n" << err;
    EXPECT_EQ(WEXITSTATUS(st), 1) << err;
    EXPECT_NE(err.find("gnio: writing stdout failed: No space left on device"), std::string::npos) << err;
  }
}

}  // namespace
