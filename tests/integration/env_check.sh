#!/usr/bin/env bash
# Test programs take their data directory and the programs they run from the
# environment ctest gives them (tests/CMakeLists.txt, GNIO_TEST_ENV). Run
# from another directory with a variable unset or wrong, each must fail with
# exit status 1 and a message naming the variable: never a crash (a signal,
# or a shell's 124..127), never a pass.
#
#   env_check.sh CONFORMANCE_TEST PP_TEST FLOW_COUNT_TEST PCAP_BACKEND_TEST DATA_DIR
set -uo pipefail
conformance=$1 pp=$2 flow_count=$3 pcap_backend=$4 data=$5

work=$(mktemp -d "${TMPDIR:-/tmp}/gnio_env_check_XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
mkdir manifest_only not_a_corpus
cp "$data/MANIFEST.tsv" manifest_only/

failures=0
# expect WHAT EXPECTED_TEXT -- ENV... PROGRAM ARGS...
expect() {
  local what=$1 text=$2
  shift 3
  local out rc
  out=$(env -i PATH="$PATH" TMPDIR="${TMPDIR:-/tmp}" GNIO_TEST_EXEC=host "$@" 2>&1)
  rc=$?
  if [[ $rc -ne 1 ]]; then
    echo "FAIL: $what: exit status $rc (want 1)"
    failures=$((failures + 1))
  elif [[ $out != *"$text"* ]]; then
    echo "FAIL: $what: no \"$text\" in the output"
    failures=$((failures + 1))
  else
    echo "ok: $what: exit 1, \"$text\""
    return 0
  fi
  echo "--- output:"
  tail -n 30 <<<"$out"
}

expect "conformance_test, GNIO_TEST_DATA_DIR unset" "GNIO_TEST_DATA_DIR is not set" -- \
  "$conformance"
expect "conformance_test, GNIO_TEST_DATA_DIR a missing directory" \
  "GNIO_TEST_DATA_DIR is $work/missing, which is not a directory" -- \
  GNIO_TEST_DATA_DIR="$work/missing" "$conformance"
expect "conformance_test, GNIO_TEST_DATA_DIR without MANIFEST.tsv" "which has no MANIFEST.tsv" -- \
  GNIO_TEST_DATA_DIR="$work" "$conformance"
# The directory passes the check but has none of the captures: the pcap cases
# fail (they used to divide by the number of frames read: SIGFPE).
expect "conformance_test, a data directory without the captures" "no frames read from $work/manifest_only/dns_icmp.pcap" -- \
  GNIO_TEST_DATA_DIR="$work/manifest_only" "$conformance" --gtest_filter='*ring_conformance*pcap*'
expect "pp_test, GNIO_TOOL_BIN not a program" "GNIO_TOOL_BIN is $work/gnio, which is not an executable file" -- \
  GNIO_TEST_DATA_DIR="$data" GNIO_TOOL_BIN="$work/gnio" "$pp"
expect "flow_count_test, GNIO_FLOW_COUNT_BIN unset" "GNIO_FLOW_COUNT_BIN is not set" -- \
  GNIO_TEST_DATA_DIR="$data" "$flow_count"
expect "pcap_backend_test, GNIO_CORPUS_DIR without MANIFEST.tsv" \
  "GNIO_CORPUS_DIR is $work/not_a_corpus, which has no MANIFEST.tsv" -- \
  GNIO_TEST_DATA_DIR="$data" GNIO_CORPUS_DIR="$work/not_a_corpus" GNIO_TOOL_BIN=/bin/true GNIO_FLOW_COUNT_BIN=/bin/true \
  "$pcap_backend"

if [[ $failures -ne 0 ]]; then
  echo "$failures check(s) failed"
  exit 1
fi
