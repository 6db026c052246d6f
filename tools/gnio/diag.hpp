// SPDX-License-Identifier: Apache-2.0
// `gnio doctor`, `gnio caps` and `gnio explain`.
#pragma once

#include <CLI/CLI.hpp>

namespace gnio::tool {
void add_diag_commands(CLI::App& app, int* exit_code);
}
