# SPDX-License-Identifier: Apache-2.0
"""The schema and version of each JSON document the Python benchmarks write
(docs/results.md, "Schema and version"), as apps/common/result_schema.hpp
gives them for the C++ programs. Each has a schema file in docs/schema.

    from result_schema import stamped
    json.dump(stamped("launch_modes", {"machine": ..., "runs": rows}), f)

`schema` never changes for a kind of document; `version` is "MAJOR.MINOR",
MINOR growing when members are added, MAJOR when one is removed, renamed or
changes its type or meaning.
"""

IDS = {
    # bench/flow_count_rate.py (flow_count, pp or l2fwd: the document's `app`)
    "rate": ("gnio.bench.rate", "1.0"),
    "launch_modes": ("gnio.bench.launch_modes", "1.0"),
    "multi_gpu_rate": ("gnio.bench.multi_gpu_rate", "1.0"),
    "ipfix_vs_softflowd": ("gnio.bench.ipfix_vs_softflowd", "1.0"),
    "peers": ("gnio.bench.peers", "1.0"),
    # bench/plot.py: the numbers beside each chart (NAME.json)
    "chart": ("gnio.bench.chart", "1.0"),
}


def stamped(kind, doc):
    """doc with `schema` and `version` first."""
    schema, version = IDS[kind]
    return {"schema": schema, "version": version, **doc}
