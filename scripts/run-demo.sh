#!/usr/bin/env bash
# The main job: sets gnio up (packages + build), then runs flow_count, the
# persistent-kernel flow counter, on a bundled capture. It uses the GPU when
# one is present and the host executor otherwise, and says which.
#
#   bash scripts/run-demo.sh [CAPTURE]     (default: tests/data/http.pcap)
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

capture="${1:-tests/data/http.pcap}"
build_dir="${GNIO_BUILD_DIR:-build}"
json="$build_dir/flow_count.json"

bash scripts/setup.sh

if [[ ! -f "$capture" ]]; then
  echo "run-demo: capture '$capture' not found" >&2
  exit 1
fi

echo "run-demo: flow_count on $capture (--exec auto: a GPU when present, else the host executor)"
set -x
"$build_dir/examples/flow_count/flow_count" --port "pcap:file=$capture" --exec auto --json "$json"
{ set +x; } 2>/dev/null
echo "run-demo: results written as JSON to $repo/$json"
