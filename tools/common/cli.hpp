// SPDX-License-Identifier: Apache-2.0
// Command-line pieces shared by gnio's programs (gnio, flow_count, l2fwd):
// number checks that say what is wrong in words, and one exit status for
// every usage error.
//
//   app.add_option("--queues", q)->check(gnio::cli::whole(1, 15));
//   app.add_option("--duration", d)->check(gnio::cli::number(0));
//   if (auto rc = gnio::cli::parse(app, argc, argv)) return gnio::console::finish("prog", *rc);
//
// Exit statuses: 0 for --help and --version, 2 for every usage error (CLI11's
// own codes, 104..114, are not passed on), and a subcommand's own status when
// it ends parsing with CLI::RuntimeError(rc).
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

namespace gnio::cli {

// A number in [lo, hi], written as a decimal or with an exponent ("1.5",
// "2e-3"). "abc" is "not a number"; nan and inf are refused ("not a finite
// number"); the range is printed readably ("0.5 is below the minimum 1",
// "must be >= 0"), never as a 309-digit DBL_MAX.
CLI::Validator number(double lo, double hi = std::numeric_limits<double>::infinity());

// A whole number in [lo, hi] ("1.5", "-1" and "abc" are refused as "not a
// whole number").
CLI::Validator whole(uint64_t lo, uint64_t hi);

// A whole number in [lo, hi] that is a power of two (ring and table sizes:
// "3 is not a power of two (2, 4, 8, ...)").
CLI::Validator power_of_two(uint64_t lo, uint64_t hi);

// The exit status for an error CLI11 threw while parsing: 0 for help and
// version, a CLI::RuntimeError's own code, 2 for anything else.
[[nodiscard]] int exit_status(const CLI::Error& e) noexcept;

// app.parse(argc, argv). Returns nullopt when the command line was accepted
// (and, for a subcommand, its callback ran without ending the program);
// otherwise prints what CLI11 has to say (help, version, or the error and a
// pointer to --help) through gnio::console and returns exit_status(e).
[[nodiscard]] std::optional<int> parse(CLI::App& app, int argc, char** argv);

}  // namespace gnio::cli
