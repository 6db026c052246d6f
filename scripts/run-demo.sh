#!/usr/bin/env bash
# The main job: sets gnio up (packages + build), then runs gnio pp, the GPU
# packet-processing reference application, on a bundled capture. It uses the
# GPU when one is present and the host executor otherwise, and says which.
#
#   bash scripts/run-demo.sh [CAPTURE]     (default: tests/data/http.pcap)
#
# GNIO_DEMO_NO_SETUP=1 skips scripts/setup.sh (an existing build is used).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

capture="${1:-tests/data/http.pcap}"
build_dir="${GNIO_BUILD_DIR:-build}"
json="$build_dir/pp.json"

if [[ "${GNIO_DEMO_NO_SETUP:-0}" != 1 ]]; then
  bash scripts/setup.sh
fi

if [[ ! -f "$capture" ]]; then
  echo "run-demo: capture '$capture' not found" >&2
  exit 1
fi

echo "run-demo: gnio pp on $capture (--gpu auto: the first GPU when present, else the host executor)"
set -x
"$build_dir/tools/gnio/gnio" pp --port "pcap:file=$capture" --gpu auto --json "$json"
{ set +x; } 2>/dev/null
case "$json" in /*) shown=$json ;; *) shown=$repo/$json ;; esac
echo "run-demo: results written as JSON to $shown (fields: docs/pp.md)"
