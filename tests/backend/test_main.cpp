// SPDX-License-Identifier: Apache-2.0
// GNIO_TEST_EXEC=cuda runs the suite on the first CUDA GPU and exits 77
// (skipped) where there is none; anything else runs it on the host executor.
#include <cstdio>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include <gnio/gpu.hpp>
#include <gnio/kernel.hpp>

int main(int argc, char** argv) {
  // As gnio's programs do, before any CUDA call (docs/kernels.md).
  gnio::prefer_eager_module_loading();
  const char* exec = std::getenv("GNIO_TEST_EXEC");
  if (exec && std::string(exec) == "cuda") {
    std::string why;
    if (gnio::list_gpus(&why).empty()) {
      std::printf("SKIPPED: no CUDA GPU: %s\n", why.c_str());
      return 77;
    }
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
