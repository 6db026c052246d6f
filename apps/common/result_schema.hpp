// SPDX-License-Identifier: Apache-2.0
// The identifier and version every JSON document and JSON Lines object a gnio
// program writes carries at its top level (docs/results.md, "Schema and
// version"); each has a schema file in docs/schema.
//
//   json j = json::object();
//   gnio::result_schema::stamp(j, gnio::result_schema::pp_result);
//
// `schema` never changes for a kind of document. `version` is "MAJOR.MINOR":
// MINOR grows when members are added (a consumer that ignores members it does
// not know keeps working), MAJOR when a member is removed, renamed, or changes
// its type or meaning. The schema files accept any MINOR of their MAJOR.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

namespace gnio::result_schema {

struct id {
  std::string_view schema;
  std::string_view version;
};

// --json of gnio pp, flow_count and l2fwd.
inline constexpr id pp_result{"gnio.pp.result", "1.0"};
inline constexpr id flow_count_result{"gnio.flow_count.result", "1.0"};
inline constexpr id l2fwd_result{"gnio.l2fwd.result", "1.0"};
// --jsonl of the same programs: one object per line, each with a `type`.
inline constexpr id pp_stream{"gnio.pp.stream", "1.0"};
inline constexpr id flow_count_stream{"gnio.flow_count.stream", "1.0"};
inline constexpr id l2fwd_stream{"gnio.l2fwd.stream", "1.0"};
// gnio doctor, caps, explain and backends --json. Version 2: these carried
// only "schema": "gnio-doctor/1" (and so on) before.
inline constexpr id doctor{"gnio.doctor", "2.0"};
inline constexpr id caps{"gnio.caps", "2.0"};
inline constexpr id explain{"gnio.explain", "2.0"};
inline constexpr id explain_all{"gnio.explain-all", "2.0"};
inline constexpr id backends{"gnio.backends", "1.0"};
// --json of the benchmark programs in bench/.
inline constexpr id bench_capacity{"gnio.bench.capacity", "1.0"};
inline constexpr id bench_engine_cost{"gnio.bench.engine_cost", "1.0"};
inline constexpr id bench_latency{"gnio.bench.latency", "1.0"};
inline constexpr id bench_tx_timing{"gnio.bench.tx_timing", "1.0"};

// Sets j's `schema` and `version` members (j is an object or null).
inline void stamp(nlohmann::json& j, const id& s) {
  j["schema"] = s.schema;
  j["version"] = s.version;
}

}  // namespace gnio::result_schema
