#!/usr/bin/env bash
# Builds gnio with sanitizers (host executor only, no CUDA) and runs the tests
# that exercise the code they check (docs/testing.md, "Sanitizers"):
#
#   asan  AddressSanitizer + LeakSanitizer + UBSan (preset asan, build-asan/):
#         the unit, backend, conformance (host executor) and application
#         tests (gnio pp, flow_count, l2fwd, gnio doctor/caps).
#   tsan  ThreadSanitizer (preset tsan, build-tsan/): the engine and the host
#         executor's threads: ring conformance on the host executor, the gen
#         and pcap backends, and gnio pp and flow_count runs.
#
#   bash scripts/sanitize.sh [asan|tsan|all] [extra ctest arguments]
#
# Any report fails the run: UBSan stops at its first report, ASan, LSan and
# TSan abort the program that found it, so its test fails. Only the targets
# these tests need are built. GNIO_SANITIZE_JOBS sets the parallelism
# (default 2).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

mode=${1:-all}
[[ $# -gt 0 ]] && shift
case $mode in
  asan | tsan | all) ;;
  -h | --help)
    sed -n '2,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  *)
    echo "sanitize.sh: unknown mode '$mode' (use asan, tsan or all)" >&2
    exit 2
    ;;
esac
jobs=${GNIO_SANITIZE_JOBS:-2}


# The programs the tests run, and the test programs.
tools=(gnio_tool flow_count l2fwd)
asan_targets=(test_support_test session_test status_test pkt_test bpf_test inline_headers_test frag_test stream_test steering_test caps_test output_test pp_device_test
  pcap_backend_test gen_backend_test conformance_test pp_test flow_count_test l2fwd_test diag_test "${tools[@]}")
asan_tests='^(test_support_test|session_test|status_test|pkt_test|bpf_test|inline_headers_test|frag_test|stream_test|steering_test|caps_test|output_test|pp_device_test|pcap_backend_test|gen_backend_test|pp_test|flow_count_test|l2fwd_test|diag_test)\.|^conformance_host$|^test_programs_fail_cleanly'
tsan_targets=(conformance_test session_test gen_backend_test pcap_backend_test pp_test flow_count_test gnio_tool flow_count)
tsan_tests='^(session_test|gen_backend_test|pcap_backend_test|pp_test|flow_count_test)\.|^conformance_host$'
# The corpus sweeps (pp_test's runs of the 256 corpus captures and of the
# bundled malformed ones) take minutes under TSan and exercise the parsers,
# which ASan checks; the threads they run are those of every other pp_test run.
tsan_exclude='^pp_test\.(Corpus|Malformed)\.'
asan_exclude='^$'

# Reports go to stderr, which the tests collect from the programs they run
# and print when a test fails.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:abort_on_error=1"
export TSAN_OPTIONS="halt_on_error=1:abort_on_error=1:second_deadlock_stack=1"

step() {
  local name=$1 preset=$2 dir=$3 tests=$4 exclude=$5
  shift 5
  local targets=("$@")
  local t0=$SECONDS
  echo "sanitize: $name: configure ($preset preset, $dir/)"
  local conf
  if ! conf=$(cmake --preset "$preset" 2>&1); then
    echo "$conf"
    return 1
  fi
  grep -E '^-- gnio' <<<"$conf" || true
  echo "sanitize: $name: build ${targets[*]}"
  cmake --build "$dir" -j"$jobs" --target "${targets[@]}"
  local t1=$SECONDS
  echo "sanitize: $name: ctest -R '$tests' -E '$exclude'"
  local rc=0
  ctest --test-dir "$dir" --output-on-failure -j"$jobs" -R "$tests" -E "$exclude" "${extra[@]}" || rc=$?
  echo "sanitize: $name: build $((t1 - t0)) s, tests $((SECONDS - t1)) s, ctest status $rc"
  return $rc
}

extra=("$@")
status=0
if [[ $mode == asan || $mode == all ]]; then
  step asan asan build-asan "$asan_tests" "$asan_exclude" "${asan_targets[@]}" || status=1
fi
if [[ $mode == tsan || $mode == all ]]; then
  step tsan tsan build-tsan "$tsan_tests" "$tsan_exclude" "${tsan_targets[@]}" || status=1
fi
echo "sanitize: $mode: $([[ $status -eq 0 ]] && echo passed || echo FAILED) in $SECONDS s"
exit $status
