// SPDX-License-Identifier: Apache-2.0
#include <array>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "gnio/backend/backend.hpp"
#include "log_internal.hpp"

namespace gnio::backend {

using detail::fail;

result<devargs> parse_devargs(std::string_view text) {
  devargs a;
  a.text = std::string(text);
  auto colon = text.find(':');
  if (text.empty())
    return fail(status::invalid_value, "empty device string; expected NAME:key=value,... (e.g. pcap:file=x.pcap)");
  a.name = std::string(text.substr(0, colon));
  if (a.name.empty()) return fail(status::invalid_value, "device string '{}' has no backend name before ':'", text);
  if (colon == std::string_view::npos) return a;
  std::string_view rest = text.substr(colon + 1);
  while (!rest.empty()) {
    auto comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    if (item.empty()) continue;
    auto eq = item.find('=');
    std::string key(item.substr(0, eq));
    std::string value = eq == std::string_view::npos ? std::string{} : std::string(item.substr(eq + 1));
    if (key.empty()) return fail(status::invalid_value, "device string '{}': option '{}' has no name", text, item);
    if (a.find(key)) return fail(status::invalid_value, "device string '{}': option '{}' given twice", text, key);
    a.kv.emplace_back(std::move(key), std::move(value));
  }
  return a;
}

error check_keys(const devargs& a, std::initializer_list<std::string_view> allowed) {
  for (const auto& [k, v] : a.kv) {
    bool known = false;
    for (auto al : allowed) known = known || k == al;
    if (!known) {
      std::string list;
      for (auto al : allowed) list += (list.empty() ? "" : ", ") + std::string(al);
      return fail(status::bad_config, "{}: unknown option '{}' (valid: {})", a.name, k, list.empty() ? "none" : list);
    }
  }
  return {};
}

error get_string(const devargs& a, std::string_view key, std::string* out) {
  if (const auto* v = a.find(key)) {
    if (v->empty()) return fail(status::invalid_value, "{}: option {}= needs a value", a.name, key);
    *out = *v;
  }
  return {};
}

error get_u64(const devargs& a, std::string_view key, uint64_t min, uint64_t max, uint64_t* out) {
  const auto* v = a.find(key);
  if (!v) return {};
  uint64_t x = 0;
  auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), x);
  if (v->empty() || ec != std::errc{} || p != v->data() + v->size())
    return fail(status::invalid_value, "{}: {}={} is not a whole number", a.name, key, *v);
  if (x < min || x > max)
    return fail(status::invalid_value, "{}: {}={} is out of range [{}, {}]", a.name, key, x, min, max);
  *out = x;
  return {};
}

namespace {

// "2.5M" -> 2.5e6 and the rest of the string.
bool split_number(std::string_view s, double* value, std::string* unit) {
  std::string str(s);
  char* end = nullptr;
  double v = std::strtod(str.c_str(), &end);
  if (end == str.c_str() || !std::isfinite(v) || v < 0) return false;
  *value = v;
  *unit = std::string(end);
  return true;
}

}  // namespace

error get_rate(const devargs& a, std::string_view key, double* pps, double* bps) {
  const auto* v = a.find(key);
  if (!v) return {};
  double x = 0;
  std::string unit;
  if (!split_number(*v, &x, &unit) || x <= 0)
    return fail(status::invalid_value, "{}: {}={} is not a positive rate (e.g. 1000pps, 2.5Mpps, 1Gbps)", a.name, key,
                *v);
  double mult = 1;
  const std::string prefix = unit.substr(0, 1);
  if (!unit.empty() && (unit[0] == 'k' || unit[0] == 'K')) mult = 1e3, unit.erase(0, 1);
  else if (!unit.empty() && unit[0] == 'M') mult = 1e6, unit.erase(0, 1);
  else if (!unit.empty() && (unit[0] == 'G' || unit[0] == 'g')) mult = 1e9, unit.erase(0, 1);
  // "10G" reads as a link speed in bits as often as a packet rate: with a
  // prefix, the unit must be said. A plain number stays packets per second.
  if (mult != 1 && unit.empty()) {
    const std::string number = v->substr(0, v->size() - 1);
    return fail(status::invalid_value,
                "{}: {}={} is ambiguous: packets or bits per second? Write {}{}pps (packets) or {}{}bps (bits)", a.name,
                key, *v, number, prefix, number, prefix);
  }
  const bool bits = unit == "bps";
  if (!unit.empty() && unit != "pps" && !bits)
    return fail(status::invalid_value, "{}: {}={}: unknown unit '{}' (use pps or bps with k, M or G)", a.name, key, *v,
                unit);
  // Beyond these a rate is no pacing at all, and the token buckets that
  // count it would overflow (1e308G is infinite).
  const double rate = x * mult;
  const double max = bits ? max_rate_bps : max_rate_pps;
  if (!(rate <= max))
    return fail(status::invalid_value, "{}: {}={} is out of range: a rate is more than 0 and at most {:g} {}", a.name,
                key, *v, max, bits ? "bps" : "pps");
  *pps = bits ? 0 : rate;
  *bps = bits ? rate : 0;
  return {};
}

error get_duration_ns(const devargs& a, std::string_view key, uint64_t* out) {
  const auto* v = a.find(key);
  if (!v) return {};
  double x = 0;
  std::string unit;
  if (!split_number(*v, &x, &unit))
    return fail(status::invalid_value, "{}: {}={} is not a duration (e.g. 10, 500ms, 2s, 1m)", a.name, key, *v);
  double ns;
  if (unit.empty() || unit == "s") ns = x * 1e9;
  else if (unit == "ms") ns = x * 1e6;
  else if (unit == "us") ns = x * 1e3;
  else if (unit == "m") ns = x * 60e9;
  else return fail(status::invalid_value, "{}: {}={}: unknown unit '{}' (use ms, s or m)", a.name, key, *v, unit);
  // Checked before the cast: a double past 2^64 does not convert (1e11 s is
  // 1e20 ns), and below 1 ns it would truncate to 0.
  if (!(ns >= 1.0 && ns <= static_cast<double>(max_duration_ns)))
    return fail(status::invalid_value, "{}: {}={} is out of range: a duration is at least 1ns and at most {:g}s",
                a.name, key, *v, static_cast<double>(max_duration_ns) / 1e9);
  *out = static_cast<uint64_t>(ns);
  return {};
}

}  // namespace gnio::backend
