// SPDX-License-Identifier: Apache-2.0
// The device-string parser (NAME:key=value,...) and the typed option readers
// every backend uses (whole numbers, rates, durations, strings).
//
// Input: a device string. Checks: a parse that succeeds has a name without
// ':', non-empty keys without '=' or ',', no key twice, and writing it back
// out parses to the same thing; every reader either fails with a message
// naming the key or returns a value in its documented range (a rate finite,
// positive and exactly one of pps/bps; a duration at least 1 ns).
#include <gnio/backend/backend.hpp>
#include <gnio/printable.hpp>

#include <cmath>
#include <string>
#include <string_view>

#include "check.hpp"

using namespace gnio;
using namespace gnio::backend;

namespace {

// Messages echo what was typed through gnio::printable (control characters
// and bytes that are not UTF-8 escaped), so the key appears in that form.
bool names_key(const error& e, const std::string& key) { return e.message().find(printable(key)) != std::string::npos; }

void check_readers(const devargs& a, const std::string& key) {
  uint64_t u = 7;
  if (error e = get_u64(a, key, 3, 1000, &u)) {
    GNIO_FUZZ_CHECK(names_key(e, key));
    GNIO_FUZZ_CHECK(u == 7);
  } else {
    GNIO_FUZZ_CHECK(u >= 3 && u <= 1000);
  }
  double pps = -1, bps = -1;
  if (error e = get_rate(a, key, &pps, &bps)) {
    GNIO_FUZZ_CHECK(names_key(e, key));
  } else {
    GNIO_FUZZ_CHECK(std::isfinite(pps) && std::isfinite(bps));
    GNIO_FUZZ_CHECK((pps > 0) != (bps > 0));
    GNIO_FUZZ_CHECK(pps >= 0 && bps >= 0);
  }
  uint64_t ns = 0;
  if (error e = get_duration_ns(a, key, &ns)) {
    GNIO_FUZZ_CHECK(names_key(e, key));
  } else {
    GNIO_FUZZ_CHECK(ns >= 1);
  }
  std::string s = "unchanged";
  if (error e = get_string(a, key, &s)) {
    GNIO_FUZZ_CHECK(names_key(e, key));
  } else {
    GNIO_FUZZ_CHECK(!s.empty() && s == *a.find(key));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 512) return 0;  // device strings are short; longer only slows the search
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  result<devargs> r = parse_devargs(text);
  if (!r) {
    GNIO_FUZZ_CHECK(!r.err().message().empty());
    return 0;
  }
  const devargs& a = *r;
  GNIO_FUZZ_CHECK(!a.name.empty() && a.name.find(':') == std::string::npos);
  GNIO_FUZZ_CHECK(a.text == text);
  std::string back = a.name;
  for (size_t i = 0; i < a.kv.size(); ++i) {
    const auto& [k, v] = a.kv[i];
    GNIO_FUZZ_CHECK(!k.empty() && k.find('=') == std::string::npos && k.find(',') == std::string::npos);
    GNIO_FUZZ_CHECK(v.find(',') == std::string::npos);
    for (size_t j = i + 1; j < a.kv.size(); ++j) GNIO_FUZZ_CHECK(a.kv[j].first != k);
    GNIO_FUZZ_CHECK(a.find(k) == &v);
    back += (i == 0 ? ":" : ",") + k + "=" + v;
  }
  result<devargs> again = parse_devargs(back);
  GNIO_FUZZ_CHECK(again.ok());
  GNIO_FUZZ_CHECK(again->name == a.name && again->kv == a.kv);

  for (const auto& kv : a.kv) check_readers(a, kv.first);
  // Keys every backend reads, also when absent: readers leave outputs alone.
  uint64_t u = 42;
  if (!a.find("queues")) {
    GNIO_FUZZ_CHECK(get_u64(a, "queues", 1, 64, &u).ok() && u == 42);
  }
  GNIO_FUZZ_CHECK(check_keys(a, {}).ok() == a.kv.empty());
  return 0;
}
