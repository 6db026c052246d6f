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

# The suite must leave nothing behind in the temporary directory: each test
# process removes its own (tests/support/process.hpp, temp_dir). Entries that
# appear while it runs are compared before and after; compilers' and other
# programs' temporary files (cc*, tmp*) are not the suite's.
tmp_root=${TMPDIR:-/tmp}
tmp_entries() { find "$tmp_root" -mindepth 1 -maxdepth 1 ! -name 'cc*' ! -name 'tmp*' -printf '%f\n' 2>/dev/null | sort; }
tmp_before=$(tmp_entries)

echo "test: ctest --test-dir $build_dir --output-on-failure -j2 $*"
set +e
ctest --test-dir "$build_dir" --output-on-failure -j2 "$@"
rc=$?
set -e
echo "test: ctest exited with status $rc"

left=$(comm -13 <(echo "$tmp_before") <(tmp_entries))
if [[ -n $left ]]; then
  echo "test: the suite left these in $tmp_root:"
  sed 's/^/  /' <<<"$left"
  [[ $rc -ne 0 ]] || rc=1
fi
exit $rc
