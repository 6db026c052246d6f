#!/usr/bin/env bash
# Sets gnio up (packages + build), then runs the test suite with ctest.
# Tests that need a GPU exit 77 where there is none and show as skipped.
#
#   bash scripts/test.sh [extra ctest arguments, e.g. -R status]
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
build_dir="${GNIO_BUILD_DIR:-build}"

t0=$SECONDS
bash scripts/setup.sh
echo "test: setup and build took $((SECONDS - t0)) s"

# setup.sh installed DPDK, so a dpdk test that cannot load its drivers fails here instead of skipping.
export GNIO_TEST_REQUIRE_DPDK=1

# The suite must leave nothing behind in the temporary directory: each test
# process removes its own (tests/support/process.hpp, temp_dir). It runs with
# a fresh TMPDIR of its own, so what other programs write to /tmp meanwhile
# cannot be taken for the suite's; anything left in it is reported.
tmp_root=$(mktemp -d "${TMPDIR:-/tmp}/gnio-test.XXXXXX")
cleanup() { rm -rf "$tmp_root"; }
trap cleanup EXIT
export TMPDIR=$tmp_root

echo "test: ctest --test-dir $build_dir --output-on-failure -j2 $* (TMPDIR=$tmp_root)"
t0=$SECONDS
set +e
ctest --test-dir "$build_dir" --output-on-failure -j2 "$@"
rc=$?
set -e
echo "test: ctest exited with status $rc after $((SECONDS - t0)) s"

left=$(find "$tmp_root" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort)
if [[ -n $left ]]; then
  echo "test: the suite left these in its TMPDIR ($tmp_root, removed now):"
  sed 's/^/  /' <<<"$left"
  [[ $rc -ne 0 ]] || rc=1
fi
exit $rc
