// SPDX-License-Identifier: Apache-2.0
// What the fuzz targets share: an invariant check that aborts, so libFuzzer
// keeps the input that broke it (a plain assert would vanish under NDEBUG).
#pragma once

#include <cstdio>
#include <cstdlib>

#define GNIO_FUZZ_CHECK(cond)                                                           \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      std::fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                     \
    }                                                                                   \
  } while (0)
