// SPDX-License-Identifier: Apache-2.0
// The status taxonomy (names, meanings, layers, parsing, error text) and the
// logging levels, hook and GNIO_LOG_LEVEL.
#include <cctype>
#include <chrono>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <gnio/backend/backend.hpp>
#include <gnio/log.hpp>
#include <gnio/printable.hpp>
#include <gnio/status.hpp>

#include "log_internal.hpp"  // gnio::detail::log / fail, as library code logs
#include "support/process.hpp"

namespace {

using gnio::layer;
using gnio::log_level;
using gnio::status;

std::string upper(std::string_view s) {
  std::string o(s);
  for (auto& c : o) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return o;
}

// ---------------------------------------------------------------------------
// Status table
// ---------------------------------------------------------------------------

TEST(Status, TableCoversEveryCodeInOrder) {
  auto all = gnio::all_statuses();
  ASSERT_EQ(static_cast<int32_t>(all.size()), gnio::num_statuses);
  for (int32_t i = 0; i < gnio::num_statuses; ++i) {
    EXPECT_EQ(static_cast<int32_t>(all[static_cast<size_t>(i)].code), i);
    EXPECT_EQ(&gnio::describe(static_cast<status>(i)), &all[static_cast<size_t>(i)]);
  }
  // The last code of the DOCA set is in the table.
  EXPECT_EQ(gnio::to_string(status::device_fatal_error), "device_fatal_error");
}

TEST(Status, NamesAndMeaningsAreDistinctAndNonEmpty) {
  std::set<std::string_view> names, meanings;
  for (const auto& e : gnio::all_statuses()) {
    SCOPED_TRACE(e.name);
    EXPECT_FALSE(e.name.empty());
    EXPECT_FALSE(e.meaning.empty());
    EXPECT_FALSE(e.next.empty());
    EXPECT_TRUE(names.insert(e.name).second) << "duplicate name " << e.name;
    EXPECT_TRUE(meanings.insert(e.meaning).second) << "duplicate meaning " << e.meaning;
    EXPECT_EQ(gnio::to_string(e.code), e.name);
    // Names are identifiers: lower case, digits and underscores.
    for (char c : e.name) EXPECT_TRUE((c >= 'a' && c <= 'z') || c == '_' || (c >= '0' && c <= '9')) << e.name;
  }
  EXPECT_EQ(static_cast<int32_t>(names.size()), gnio::num_statuses);
}

TEST(Status, EveryCodeHasALayerAndOnlySuccessHasNone) {
  const std::set<layer> known{layer::env, layer::version, layer::build, layer::runtime, layer::program, layer::driver};
  for (const auto& e : gnio::all_statuses()) {
    SCOPED_TRACE(e.name);
    if (e.code == status::success) {
      EXPECT_EQ(e.where, layer::none);
    } else {
      EXPECT_NE(e.where, layer::none);
      EXPECT_TRUE(known.count(e.where));
    }
    EXPECT_NE(gnio::to_string(e.where), "unknown");
    EXPECT_FALSE(gnio::to_string(e.where).empty());
  }
}

TEST(Status, LayerNamesAreDistinct) {
  std::set<std::string_view> seen;
  for (layer l : {layer::none, layer::env, layer::version, layer::build, layer::runtime, layer::program, layer::driver})
    EXPECT_TRUE(seen.insert(gnio::to_string(l)).second) << gnio::to_string(l);
}

TEST(Status, SomeLayersAreWhereTheDesignPutsThem) {
  EXPECT_EQ(gnio::describe(status::bad_state).where, layer::program);
  EXPECT_EQ(gnio::describe(status::invalid_value).where, layer::program);
  EXPECT_EQ(gnio::describe(status::not_found).where, layer::env);
  EXPECT_EQ(gnio::describe(status::unsupported_version).where, layer::version);
  EXPECT_EQ(gnio::describe(status::not_supported).where, layer::build);
  EXPECT_EQ(gnio::describe(status::driver).where, layer::driver);
  EXPECT_EQ(gnio::describe(status::time_out).where, layer::runtime);
}

TEST(Status, DescribeOutOfRangeFallsBackToUnknown) {
  EXPECT_EQ(gnio::describe(static_cast<status>(-1)).code, status::unknown);
  EXPECT_EQ(gnio::describe(static_cast<status>(gnio::num_statuses)).code, status::unknown);
  EXPECT_EQ(gnio::describe(static_cast<status>(1 << 20)).code, status::unknown);
}

TEST(Status, OkIsOnlySuccess) {
  static_assert(gnio::ok(status::success));
  static_assert(!gnio::ok(status::again));
  for (const auto& e : gnio::all_statuses()) EXPECT_EQ(gnio::ok(e.code), e.code == status::success) << e.name;
}

// ---------------------------------------------------------------------------
// parse_status
// ---------------------------------------------------------------------------

TEST(ParseStatus, RoundTripsNames) {
  for (const auto& e : gnio::all_statuses()) {
    status out = status::unknown;
    ASSERT_TRUE(gnio::parse_status(e.name, out)) << e.name;
    EXPECT_EQ(out, e.code);
    out = status::unknown;
    ASSERT_TRUE(gnio::parse_status(upper(e.name), out)) << upper(e.name);
    EXPECT_EQ(out, e.code);
  }
}

TEST(ParseStatus, RoundTripsNumbers) {
  for (const auto& e : gnio::all_statuses()) {
    status out = status::unknown;
    const std::string n = std::to_string(static_cast<int32_t>(e.code));
    ASSERT_TRUE(gnio::parse_status(n, out)) << n;
    EXPECT_EQ(out, e.code);
  }
}

TEST(ParseStatus, AcceptsDocaSpellings) {
  for (const auto& e : gnio::all_statuses()) {
    if (e.code == status::success) continue;
    const std::string doca = "DOCA_ERROR_" + upper(e.name);
    status out = status::success;
    ASSERT_TRUE(gnio::parse_status(doca, out)) << doca;
    EXPECT_EQ(out, e.code) << doca;
  }
  status out = status::unknown;
  ASSERT_TRUE(gnio::parse_status("DOCA_SUCCESS", out));
  EXPECT_EQ(out, status::success);
  ASSERT_TRUE(gnio::parse_status("DOCA_ERROR_BAD_STATE", out));
  EXPECT_EQ(out, status::bad_state);
  ASSERT_TRUE(gnio::parse_status("doca_error_not_found", out));
  EXPECT_EQ(out, status::not_found);
  ASSERT_TRUE(gnio::parse_status("DOCA_ERROR_AGAIN", out));
  EXPECT_EQ(out, status::again);
}

TEST(ParseStatus, RejectsJunk) {
  const std::vector<std::string> junk{
      "",
      "bogus",
      "bad state",
      " bad_state",
      "bad_state ",
      "bad_state\n",
      "-1",
      std::to_string(gnio::num_statuses),
      "99999999999999999999",
      "1x",
      "0x1",
      "+1",
      "DOCA_ERROR_",
      "DOCA_ERROR_BOGUS",
      "DOCA_ERROR_1",
      "DOCA_",
      "_bad_state",
  };
  for (const auto& j : junk) {
    status out = status::in_use;
    EXPECT_FALSE(gnio::parse_status(j, out)) << "'" << j << "'";
  }
  // A string_view that is not NUL-terminated: only the view counts.
  const char buf[] = "bad_stateXYZ";
  status out = status::unknown;
  EXPECT_TRUE(gnio::parse_status(std::string_view(buf, 9), out));
  EXPECT_EQ(out, status::bad_state);
  EXPECT_FALSE(gnio::parse_status(std::string_view(buf, 8), out));
}

// ---------------------------------------------------------------------------
// error and result
// ---------------------------------------------------------------------------

TEST(Error, DefaultIsSuccess) {
  gnio::error e;
  EXPECT_TRUE(e.ok());
  EXPECT_FALSE(static_cast<bool>(e));
  EXPECT_EQ(e.code(), status::success);
  EXPECT_EQ(e.what(), "success");
}

TEST(Error, WhatIncludesNameAndMessage) {
  for (const auto& info : gnio::all_statuses()) {
    if (info.code == status::success) continue;
    gnio::error e(info.code, "queue 3 is not here");
    EXPECT_FALSE(e.ok());
    EXPECT_TRUE(static_cast<bool>(e));
    EXPECT_EQ(e.code(), info.code);
    EXPECT_EQ(e.message(), "queue 3 is not here");
    const std::string w = e.what();
    EXPECT_NE(w.find(info.name), std::string::npos) << w;
    EXPECT_NE(w.find("queue 3 is not here"), std::string::npos) << w;
    EXPECT_EQ(w, std::string(info.name) + ": queue 3 is not here");
  }
  gnio::error bare(status::bad_state);
  EXPECT_EQ(bare.what(), "bad_state");
  EXPECT_TRUE(bare.message().empty());
}

TEST(Result, ValueOrError) {
  gnio::result<int> good(42);
  EXPECT_TRUE(good.ok());
  EXPECT_EQ(*good, 42);
  EXPECT_EQ(good.code(), status::success);
  gnio::result<int> bad(status::too_big, "ring of 2^30 descriptors");
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.code(), status::too_big);
  EXPECT_NE(bad.err().what().find("too_big"), std::string::npos);
  EXPECT_NE(bad.err().what().find("2^30"), std::string::npos);
  gnio::result<std::string> from_error(gnio::error(status::not_found, "x"));
  EXPECT_EQ(from_error.code(), status::not_found);
}

// ---------------------------------------------------------------------------
// Logging
// ---------------------------------------------------------------------------

const std::vector<log_level> k_levels{log_level::error, log_level::warn, log_level::info, log_level::debug,
                                      log_level::trace};

// Installs a hook that records messages and restores level and hook after.
class LogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_level_ = gnio::get_log_level();
    saved_hook_ = gnio::set_log_hook([this](log_level l, std::string_view m) { got_.emplace_back(l, std::string(m)); });
  }
  void TearDown() override {
    gnio::set_log_hook(std::move(saved_hook_));
    gnio::set_log_level(saved_level_);
  }
  // As library code writes a message: only when enabled.
  static void emit(log_level l, std::string_view m) {
    if (gnio::log_enabled(l)) gnio::log_write(l, m);
  }

  std::vector<std::pair<log_level, std::string>> got_;
  log_level saved_level_ = log_level::warn;
  gnio::log_hook saved_hook_;
};

TEST_F(LogTest, MessagesAboveTheLevelAreDropped) {
  for (log_level current : k_levels) {
    SCOPED_TRACE(gnio::to_string(current));
    gnio::set_log_level(current);
    EXPECT_EQ(gnio::get_log_level(), current);
    got_.clear();
    for (log_level l : k_levels) emit(l, std::string("msg-") + std::string(gnio::to_string(l)));
    std::vector<log_level> want;
    for (log_level l : k_levels)
      if (static_cast<int>(l) <= static_cast<int>(current)) want.push_back(l);
    ASSERT_EQ(got_.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(got_[i].first, want[i]);
      EXPECT_EQ(got_[i].second, "msg-" + std::string(gnio::to_string(want[i])));
    }
  }
}

TEST_F(LogTest, OffDropsEverything) {
  gnio::set_log_level(log_level::off);
  for (log_level l : k_levels) {
    EXPECT_FALSE(gnio::log_enabled(l)) << gnio::to_string(l);
    emit(l, "nope");
  }
  gnio::detail::log(log_level::error, "also {}", "nope");
  EXPECT_TRUE(got_.empty());
}

TEST_F(LogTest, LibraryHelpersHonourTheLevel) {
  gnio::set_log_level(log_level::info);
  gnio::detail::log(log_level::info, "queue {} started", 2);
  gnio::detail::log(log_level::debug, "ring {} polled", 7);
  ASSERT_EQ(got_.size(), 1u);
  EXPECT_EQ(got_[0].first, log_level::info);
  EXPECT_EQ(got_[0].second, "queue 2 started");

  // fail() builds the error and logs it at debug level only.
  got_.clear();
  gnio::error e = gnio::detail::fail(status::in_use, "port {} is busy", "pcap:");
  EXPECT_EQ(e.code(), status::in_use);
  EXPECT_EQ(e.message(), "port pcap: is busy");
  EXPECT_TRUE(got_.empty());
  gnio::set_log_level(log_level::debug);
  e = gnio::detail::fail(status::in_use, "port {} is busy", "gen:");
  ASSERT_EQ(got_.size(), 1u);
  EXPECT_EQ(got_[0].first, log_level::debug);
  EXPECT_NE(got_[0].second.find("in_use"), std::string::npos) << got_[0].second;
  EXPECT_NE(got_[0].second.find("port gen: is busy"), std::string::npos) << got_[0].second;
}

TEST_F(LogTest, SetLogHookReturnsThePreviousHook) {
  std::vector<std::string> second;
  auto prev = gnio::set_log_hook([&](log_level, std::string_view m) { second.emplace_back(m); });
  ASSERT_TRUE(static_cast<bool>(prev));
  gnio::set_log_level(log_level::warn);
  emit(log_level::warn, "to second");
  EXPECT_EQ(second, std::vector<std::string>{"to second"});
  EXPECT_TRUE(got_.empty());
  // Putting the first hook back routes messages to it again.
  gnio::set_log_hook(std::move(prev));
  emit(log_level::error, "to first");
  ASSERT_EQ(got_.size(), 1u);
  EXPECT_EQ(got_[0].second, "to first");
}

TEST_F(LogTest, EmptyHookRestoresTheStderrDefault) {
  gnio::set_log_hook({});
  gnio::set_log_level(log_level::warn);
  ::testing::internal::CaptureStderr();
  emit(log_level::warn, "default hook speaks");
  emit(log_level::debug, "default hook is silent");
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("gnio: warn: default hook speaks"), std::string::npos) << err;
  EXPECT_EQ(err.find("silent"), std::string::npos) << err;
  EXPECT_TRUE(got_.empty());
}

TEST(LogLevel, ParseAcceptsTheLevelNamesInAnyCase) {
  const std::map<std::string, log_level> ok{
      {"error", log_level::error}, {"ERROR", log_level::error}, {"Error", log_level::error},
      {"warn", log_level::warn},   {"WARN", log_level::warn},   {"wArN", log_level::warn},
      {"info", log_level::info},   {"INFO", log_level::info},   {"Info", log_level::info},
      {"debug", log_level::debug}, {"DEBUG", log_level::debug}, {"Debug", log_level::debug},
      {"trace", log_level::trace}, {"TRACE", log_level::trace}, {"tRACE", log_level::trace},
      {"off", log_level::off},     {"OFF", log_level::off},     {"Off", log_level::off},
  };
  for (const auto& [text, want] : ok) {
    log_level out = want == log_level::warn ? log_level::error : log_level::warn;
    ASSERT_TRUE(gnio::parse_log_level(text, out)) << text;
    EXPECT_EQ(out, want) << text;
  }
  for (log_level l :
       {log_level::error, log_level::warn, log_level::info, log_level::debug, log_level::trace, log_level::off}) {
    log_level out = log_level::trace;
    ASSERT_TRUE(gnio::parse_log_level(gnio::to_string(l), out));
    EXPECT_EQ(out, l);
  }
}

TEST(LogLevel, ParseRejectsOthers) {
  for (const char* bad : {"", "verbose", "fatal", "critical", "errors", "debug ", " info", "in fo", "2", "-1", "0",
                          "on", "none", "tracing", "dbg"}) {
    log_level out = log_level::info;
    EXPECT_FALSE(gnio::parse_log_level(bad, out)) << "'" << bad << "'";
  }
}

// ---------------------------------------------------------------------------
// GNIO_LOG_LEVEL in a child process: flow_count on a device string that fails
// in the library, whose fail() logs a debug line.
// ---------------------------------------------------------------------------

// Runs args with GNIO_LOG_LEVEL set to *level, or unset when nullopt; killed after 30 s.
gnio::test::proc_result run_child(const std::vector<std::string>& args, std::optional<std::string> level) {
  gnio::test::run_options o;
  o.log_level = std::move(level);
  o.limit = std::chrono::seconds(30);
  return gnio::test::run_process(args, o);
}

const bool k_env = gnio::test::env_check({"GNIO_FLOW_COUNT_BIN"});

std::vector<std::string> failing_run() { return {gnio::test::flow_count_bin(), "--port", "bogus:", "--exec", "host"}; }

TEST(LogEnv, DebugLevelFromTheEnvironmentShowsDebugLines) {
  for (const char* level : {"debug", "DEBUG", "trace"}) {
    SCOPED_TRACE(level);
    auto r = run_child(failing_run(), level);
    ASSERT_TRUE(r.exited) << "signal " << r.signal << "\n" << r.err;
    EXPECT_NE(r.code, 0);
    EXPECT_LT(r.code, 124);
    EXPECT_NE(r.err.find("gnio: debug:"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("bogus"), std::string::npos) << r.err;
  }
}

TEST(LogEnv, DefaultLevelHasNoDebugLines) {
  auto r = run_child(failing_run(), std::nullopt);
  ASSERT_TRUE(r.exited) << "signal " << r.signal << "\n" << r.err;
  EXPECT_NE(r.code, 0);
  EXPECT_EQ(r.err.find("gnio: debug:"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("gnio: info:"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("gnio: trace:"), std::string::npos) << r.err;
  // The program's own error message is still there.
  EXPECT_NE(r.err.find("bad_config"), std::string::npos) << r.err;
}

TEST(LogEnv, ErrorLevelHasNoDebugLines) {
  auto r = run_child(failing_run(), "error");
  ASSERT_TRUE(r.exited) << "signal " << r.signal << "\n" << r.err;
  EXPECT_EQ(r.err.find("gnio: debug:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("bad_config"), std::string::npos) << r.err;
}

TEST(LogEnv, UnknownLevelIsReportedAndIgnored) {
  auto r = run_child(failing_run(), "loud");
  ASSERT_TRUE(r.exited) << "signal " << r.signal << "\n" << r.err;
  EXPECT_NE(r.err.find("GNIO_LOG_LEVEL"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("loud"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("gnio: debug:"), std::string::npos) << r.err;
}

// ---- printable: user input echoed in messages -----------------------------------

TEST(Printable, ControlCharactersAndBadUtf8AreEscaped) {
  using namespace std::string_literals;
  EXPECT_EQ(gnio::printable("pcap:file=x.pcap"), "pcap:file=x.pcap");
  EXPECT_EQ(gnio::printable("gen:count=5,\x1b[31mRED=1"), "gen:count=5,\\x1b[31mRED=1");
  EXPECT_EQ(gnio::printable("a\nb\rc\td"), "a\\nb\\rc\\td");
  EXPECT_EQ(gnio::printable("nul\0end"s), "nul\\x00end");
  EXPECT_EQ(gnio::printable("del\x7f"), "del\\x7f");
  EXPECT_EQ(gnio::printable("back\\slash"), "back\\\\slash");
  EXPECT_EQ(gnio::printable("caf\xc3\xa9 \xe6\x9d\xb1"), "caf\xc3\xa9 \xe6\x9d\xb1") << "valid UTF-8 stays";
  EXPECT_EQ(gnio::printable("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(gnio::printable("\xc3\x28"), "\\xc3(") << "a lead byte without its continuation";
  EXPECT_EQ(gnio::printable("\xc0\xaf"), "\\xc0\\xaf") << "overlong";
  EXPECT_EQ(gnio::printable("\xed\xa0\x80"), "\\xed\\xa0\\x80") << "a surrogate";
  EXPECT_EQ(gnio::printable("\xc2\x9b[31m"), "\\xc2\\x9b[31m") << "C1 CSI";
  EXPECT_EQ(gnio::printable("\xe2\x82"), "\\xe2\\x82") << "cut short";
}

TEST(Printable, DeviceStringErrorsEchoInputEscaped) {
  // Every message made by the core's fail() (device strings, file names).
  auto dup = gnio::backend::parse_devargs("gen:\x1b[2J=1,\x1b[2J=2");
  ASSERT_FALSE(dup);
  EXPECT_EQ(dup.err().message().find('\x1b'), std::string::npos) << dup.err().message();
  EXPECT_NE(dup.err().message().find("\\x1b[2J"), std::string::npos) << dup.err().message();
  auto nl = gnio::backend::parse_devargs(":x\ny");
  ASSERT_FALSE(nl);
  EXPECT_EQ(nl.err().message().find('\n'), std::string::npos) << nl.err().message();
  EXPECT_NE(nl.err().message().find(":x\\ny"), std::string::npos) << nl.err().message();
}

}  // namespace
