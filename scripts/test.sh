#!/usr/bin/env bash
# Sets gnio up (packages + build), then runs the test suite with ctest.
# Tests that need a GPU exit 77 where there is none and show as skipped.
#
#   bash scripts/test.sh [extra ctest arguments, e.g. -R status]
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
build_dir="${GNIO_BUILD_DIR:-build}"

bash scripts/setup.sh

# setup.sh installed DPDK, so a dpdk test that cannot load its drivers fails here instead of skipping.
export GNIO_TEST_REQUIRE_DPDK=1
echo "test: ctest --test-dir $build_dir --output-on-failure -j2 $*"
set +e
ctest --test-dir "$build_dir" --output-on-failure -j2 "$@"
rc=$?
set -e
echo "test: ctest exited with status $rc"
exit $rc
