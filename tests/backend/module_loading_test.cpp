// SPDX-License-Identifier: Apache-2.0
// CUDA lazy module loading beside a persistent kernel. A kernel launched for
// the first time while gnio's persistent kernel spins must start and finish:
// by default (gnio's programs ask for eager loading before CUDA starts, as
// this binary's main does) and under lazy loading once the kernel was
// preloaded with gnio::preload_kernel. A control run shows that the hazard is
// real on this driver: lazy loading without the preload.
//
// Each case runs in a child process (this binary, one hidden test), since the
// loading mode is fixed when CUDA initializes and a stuck load can block the
// launch call itself; the parent kills a child that does not finish.
// Needs a CUDA GPU: exits 77 (skipped) without one.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include <gnio/gnio.hpp>

#include "backend/module_loading_kernels.hpp"
#include "support/process.hpp"

namespace {

std::string self_exe() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return {};
  buf[n] = '\0';
  return buf;
}

// Runs the hidden child case in a fresh process with CUDA_MODULE_LOADING set
// to `loading` ("" leaves it unset) and GNIO_TEST_PRELOAD to `preload`.
gnio::test::proc_result run_child(const std::string& loading, bool preload, std::chrono::seconds limit) {
  std::vector<std::string> argv = {"env", "-u", "CUDA_MODULE_LOADING"};
  if (!loading.empty()) argv.push_back("CUDA_MODULE_LOADING=" + loading);
  argv.push_back(std::string("GNIO_TEST_PRELOAD=") + (preload ? "1" : "0"));
  argv.push_back(self_exe());
  argv.push_back("--gtest_also_run_disabled_tests");
  argv.push_back("--gtest_filter=Child.DISABLED_LateKernelBesidePersistent");
  gnio::test::run_options o;
  o.limit = limit;
  return gnio::test::run_process(argv, o);
}

}  // namespace

// The child: one persistent kernel, then a kernel never launched before.
TEST(Child, DISABLED_LateKernelBesidePersistent) {
  auto g = gnio::gpu::open("0");
  ASSERT_TRUE(g.ok()) << g.err().what();
  const char* pre = std::getenv("GNIO_TEST_PRELOAD");
  const bool preload = pre && std::string(pre) == "1";
  const auto r = modload::late_kernel_beside_persistent(*g, preload, std::chrono::seconds(10));
  std::printf(
      "child: module loading %s, preload %d, persistent running %d, launch returned %d, late kernel %s after %.1f "
      "ms%s%s\n",
      r.mode.c_str(), preload ? 1 : 0, r.persistent_running ? 1 : 0, r.launch_returned ? 1 : 0,
      r.late_finished ? "finished" : "did not finish", r.late_ms, r.error.empty() ? "" : "; error: ", r.error.c_str());
  std::fflush(stdout);
  EXPECT_TRUE(r.error.empty()) << r.error;
  EXPECT_TRUE(r.persistent_running);
  EXPECT_TRUE(r.late_finished) << "the second kernel did not finish within 10 s beside the persistent kernel";
}

TEST(ModuleLoading, KernelFirstLaunchedBesideAPersistentKernelRunsByDefault) {
  const auto r = run_child("", false, std::chrono::seconds(60));
  ASSERT_TRUE(r.exited_cleanly()) << r.describe();
  EXPECT_EQ(r.code, 0) << r.describe();
  EXPECT_NE(r.out.find("module loading eager"), std::string::npos) << r.describe();
  EXPECT_NE(r.out.find("late kernel finished"), std::string::npos) << r.describe();
}

TEST(ModuleLoading, PreloadedKernelRunsBesideAPersistentKernelUnderLazyLoading) {
  const auto r = run_child("LAZY", true, std::chrono::seconds(60));
  ASSERT_TRUE(r.exited_cleanly()) << r.describe();
  EXPECT_EQ(r.code, 0) << r.describe();
  EXPECT_NE(r.out.find("module loading lazy"), std::string::npos) << r.describe();
  EXPECT_NE(r.out.find("late kernel finished"), std::string::npos) << r.describe();
}

// The control: what the two cases above guard against. Lazy loading without
// the preload stalls the second kernel on this driver (its launch does not
// return, or it does not run until the persistent kernel ends). A driver that
// loads without waiting for the context makes this case skip, not pass.
TEST(ModuleLoading, ControlLazyLoadingWithoutPreloadStallsTheSecondKernel) {
  const auto r = run_child("LAZY", false, std::chrono::seconds(20));
  if (r.exited_cleanly() && r.code == 0)
    GTEST_SKIP() << "this driver ran a lazily loaded kernel beside a persistent one; the hazard did not show:\n"
                 << r.out;
  EXPECT_TRUE(r.killed_at_limit || r.code != 0) << r.describe();
  std::printf("control: %s\n", r.killed_at_limit ? "the child hung and was killed at 20 s" : r.out.c_str());
}

int main(int argc, char** argv) {
  // As gnio's programs do, before any CUDA call.
  gnio::prefer_eager_module_loading();
  std::string why;
  if (gnio::list_gpus(&why).empty()) {
    std::printf("SKIPPED: no CUDA GPU: %s\n", why.c_str());
    return 77;
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
