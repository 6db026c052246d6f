// SPDX-License-Identifier: Apache-2.0
// The test support library itself: a test process's temporary files live in
// its own directory, which is gone when the process exits (F18: the suite
// used to leave mkstemp placeholders and captures in /tmp).
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include <gtest/gtest.h>

#include "support/process.hpp"

namespace {

namespace fs = std::filesystem;

// Run by TempDir.IsRemovedWhenTheProcessExits in a child process: makes
// temporary files the way the tests do (a placeholder, a name with a suffix
// added, a directory) and prints where they are.
TEST(TempDir, DISABLED_ChildMakesFiles) {
  const std::string placeholder = gnio::test::temp_path("child");
  std::ofstream(placeholder + ".pcap") << "capture";
  fs::create_directory(gnio::test::temp_dir() + "/sub");
  std::ofstream(gnio::test::temp_dir() + "/sub/f") << "x";
  std::cout << "TEMP_DIR=" << gnio::test::temp_dir() << "\n";
}

TEST(TempDir, IsRemovedWhenTheProcessExits) {
  const std::string tmp = gnio::test::temp_dir() + "/child_tmpdir";
  ASSERT_TRUE(fs::create_directory(tmp));
  gnio::test::run_options o;
  o.env = {"TMPDIR=" + tmp};
  auto r = gnio::test::run_process(
      {"/proc/self/exe", "--gtest_filter=TempDir.DISABLED_ChildMakesFiles", "--gtest_also_run_disabled_tests"}, o);
  ASSERT_TRUE(r.exited && r.code == 0) << r.describe();
  const auto at = r.out.find("TEMP_DIR=");
  ASSERT_NE(at, std::string::npos) << r.describe();
  const std::string child_dir = r.out.substr(at + 9, r.out.find('\n', at) - at - 9);
  // The child's directory was under its TMPDIR, and nothing is left there.
  EXPECT_EQ(child_dir.rfind(tmp + "/gnio_test_", 0), 0u) << child_dir;
  EXPECT_FALSE(fs::exists(child_dir)) << child_dir;
  EXPECT_TRUE(fs::is_empty(tmp)) << fs::directory_iterator(tmp)->path();
}

TEST(TempDir, TempPathsAreFreshFilesInIt) {
  const std::string a = gnio::test::temp_path("t"), b = gnio::test::temp_path("t");
  EXPECT_NE(a, b);
  EXPECT_EQ(a.rfind(gnio::test::temp_dir() + "/t_", 0), 0u) << a;
  EXPECT_TRUE(fs::is_regular_file(a));
  EXPECT_EQ(fs::file_size(a), 0u);
}

}  // namespace
