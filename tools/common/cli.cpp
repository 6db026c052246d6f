// SPDX-License-Identifier: Apache-2.0
#include "cli.hpp"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include <fmt/format.h>

#include <gnio/console.hpp>
#include <gnio/printable.hpp>

namespace gnio::cli {

namespace {

// Numbers as a person writes them: 1, 0.5, 1e+20, 1.8e+308.
std::string text(double v) { return fmt::format("{:g}", v); }

bool blank(const std::string& s) { return s.find_first_not_of(" \t") == std::string::npos; }

}  // namespace

CLI::Validator number(double lo, double hi) {
  std::string desc = std::isinf(hi) ? fmt::format("NUMBER >= {}", text(lo))
                                    : fmt::format("NUMBER in {}..{}", text(lo), text(hi));
  return CLI::Validator(
      [lo, hi](std::string& in) -> std::string {
        const std::string shown = gnio::printable(in);
        if (blank(in)) return "needs a number (it was given as \"" + shown + "\")";
        errno = 0;
        char* end = nullptr;
        const double v = std::strtod(in.c_str(), &end);
        if (end == in.c_str() || *end != '\0') return shown + " is not a number";
        if (std::isnan(v) || std::isinf(v)) return shown + " is not a finite number";
        if (v < lo) return fmt::format("{} is below the minimum {}", shown, text(lo));
        if (v > hi) return fmt::format("{} is above the maximum {}", shown, text(hi));
        return {};
      },
      desc);
}

CLI::Validator whole(uint64_t lo, uint64_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& in) -> std::string {
        const std::string shown = gnio::printable(in);
        if (blank(in)) return "needs a whole number (it was given as \"" + shown + "\")";
        uint64_t v = 0;
        const char* b = in.data();
        const char* e = in.data() + in.size();
        if (b != e && *b == '+') ++b;
        auto [p, ec] = std::from_chars(b, e, v);
        if (ec == std::errc::result_out_of_range) return fmt::format("{} is above the maximum {}", shown, hi);
        if (ec != std::errc{} || p != e) return shown + " is not a whole number";
        if (v < lo) return fmt::format("{} is below the minimum {}", shown, lo);
        if (v > hi) return fmt::format("{} is above the maximum {}", shown, hi);
        return {};
      },
      fmt::format("INT in {}..{}", lo, hi));
}

CLI::Validator power_of_two(uint64_t lo, uint64_t hi) {
  const CLI::Validator range = whole(lo, hi);
  return CLI::Validator(
      [range, lo, hi](std::string& in) -> std::string {
        if (std::string why = range(in); !why.empty()) return why;
        const uint64_t v = std::strtoull(in.c_str(), nullptr, 10);
        if ((v & (v - 1)) != 0)
          return fmt::format("{} is not a power of two ({}, {}, {}, ... {})", gnio::printable(in), lo, lo * 2, lo * 4,
                             hi);
        return {};
      },
      fmt::format("POWER OF TWO in {}..{}", lo, hi));
}

int exit_status(const CLI::Error& e) noexcept {
  if (dynamic_cast<const CLI::RuntimeError*>(&e) != nullptr) return e.get_exit_code();
  if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return 0;  // --help, --version
  return 2;
}

std::optional<int> parse(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::ParseError& e) {
    std::ostringstream out, err;
    (void)app.exit(e, out, err);
    gnio::console::out(out.str());
    gnio::console::err(err.str());
    return exit_status(e);
  }
}

}  // namespace gnio::cli
