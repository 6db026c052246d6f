#!/usr/bin/env bash
# Builds and runs the libFuzzer targets in fuzz/ (ASan + UBSan, clang).
#
#   bash scripts/fuzz.sh TARGET SECONDS      run one target for SECONDS
#   bash scripts/fuzz.sh all SECONDS         run every target, SECONDS each
#   bash scripts/fuzz.sh --runs N TARGET|all run N inputs per target instead
#   bash scripts/fuzz.sh --list              list the targets
#
# Builds in ${GNIO_FUZZ_BUILD_DIR:-build-fuzz} when needed, seeds each target
# from tests/data (build-fuzz/seeds/TARGET), keeps what the fuzzer finds in
# build-fuzz/corpus/TARGET and a crashing input in build-fuzz/crashes/TARGET/.
# Prints each command, its exec count and coverage; exits 1 if any target
# crashed or broke an invariant, 2 for bad usage. Targets run side by side,
# GNIO_FUZZ_JOBS at a time (default: the number of cores), each for SECONDS.
# docs/fuzzing.md has more.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
build="${GNIO_FUZZ_BUILD_DIR:-build-fuzz}"

targets() { for f in fuzz/*.cpp; do b=$(basename "$f" .cpp); [ "$b" = seeds ] || echo "$b"; done; }

usage() {
  echo "usage: scripts/fuzz.sh [--runs N] TARGET|all [SECONDS] | --list" >&2
  echo "targets: $(targets | tr '\n' ' ')" >&2
  exit 2
}

runs="" target="" seconds=""
while [ $# -gt 0 ]; do
  case "$1" in
    --list) targets; exit 0 ;;
    --runs) [ $# -ge 2 ] || usage; runs="$2"; shift 2 ;;
    --runs=*) runs="${1#--runs=}"; shift ;;
    -h|--help) usage ;;
    -*) echo "fuzz: unknown option '$1'" >&2; usage ;;
    *) if [ -z "$target" ]; then target="$1"; elif [ -z "$seconds" ]; then seconds="$1"; else usage; fi; shift ;;
  esac
done
[ -n "$target" ] || usage
[ -n "$seconds" ] || [ -n "$runs" ] || { echo "fuzz: give SECONDS or --runs N" >&2; usage; }
for n in "$seconds" "$runs"; do
  [ -z "$n" ] || [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "fuzz: '$n' is not a positive whole number" >&2; usage; }
done
if [ "$target" = all ]; then
  list=$(targets)
elif [[ " $(targets | tr '\n' ' ') " == *" $target "* ]]; then
  list=$target
else
  echo "fuzz: no target '$target'" >&2
  usage
fi

# clang-14 with libFuzzer and the sanitizer runtimes (Debian packages).
need=()
command -v clang++-14 >/dev/null || need+=(clang-14)
[ -e /usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a ] ||
  compgen -G "/usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a" >/dev/null || need+=(libfuzzer-14-dev)
compgen -G "/usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.asan-x86_64.a" >/dev/null || need+=(libclang-rt-14-dev)
command -v llvm-symbolizer-14 >/dev/null || [ -x /usr/lib/llvm-14/bin/llvm-symbolizer ] || need+=(llvm-14)
if [ ${#need[@]} -gt 0 ]; then
  echo "fuzz: installing ${need[*]}"
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq clang-14 libfuzzer-14-dev libclang-rt-14-dev llvm-14
fi
export ASAN_SYMBOLIZER_PATH="${ASAN_SYMBOLIZER_PATH:-/usr/lib/llvm-14/bin/llvm-symbolizer}"

if [ ! -f "$build/build.ninja" ]; then
  echo "fuzz: configuring $build"
  cmake -G Ninja -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++-14 \
    -DGNIO_BUILD_FUZZ=ON -DGNIO_BUILD_CUDA=OFF -DGNIO_BUILD_TESTS=OFF -DGNIO_BUILD_EXAMPLES=OFF -DGNIO_BUILD_BENCH=OFF \
    -DGNIO_BACKEND_DPDK=OFF -DGNIO_BACKEND_AF_XDP=OFF -DGNIO_BACKEND_AF_PACKET=OFF >/dev/null
fi
# shellcheck disable=SC2046
cmake --build "$build" -j"$(nproc)" --target fuzz_seeds $(for t in $list; do echo "fuzz_$t"; done) >/dev/null ||
  { echo "fuzz: build failed: cmake --build $build" >&2; exit 1; }
rm -rf "$build/seeds"
"$build/fuzz/fuzz_seeds" "$build/seeds" >/dev/null

# Per-target input size limits and dictionaries.
opts_for() {
  case "$1" in
    pcap) echo "-max_len=65536" ;;
    devargs) echo "-max_len=512 -dict=fuzz/devargs.dict" ;;
    http) echo "-max_len=4096 -dict=fuzz/http.dict" ;;
    stream) echo "-max_len=4096 -dict=fuzz/stream.dict" ;;
    tcp_options) echo "-max_len=64" ;;
    *) echo "-max_len=4096" ;;
  esac
}

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

# Runs one target and writes its summary line to $build/fuzz-TARGET.result:
# "ok LINE" or "FAILED LINE". Each libFuzzer process is single-threaded, so
# GNIO_FUZZ_JOBS targets (default: the number of cores) run side by side;
# each still gets its SECONDS.
run_target() {
  local t=$1
  local corpus="$build/corpus/$t" crashes="$build/crashes/$t" log="$build/fuzz-$t.log" result="$build/fuzz-$t.result"
  mkdir -p "$corpus" "$crashes"
  local limit=()
  [ -n "$runs" ] && limit+=("-runs=$runs")
  [ -n "$seconds" ] && limit+=("-max_total_time=$seconds")
  local cmd
  # shellcheck disable=SC2207
  cmd=("$build/fuzz/fuzz_$t" "${limit[@]}" $(opts_for "$t") -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
       "-artifact_prefix=$crashes/" "$corpus" "$build/seeds/$t")
  echo "fuzz: ${cmd[*]}"
  local start rc=0
  start=$(date +%s)
  "${cmd[@]}" >"$log" 2>&1 || rc=$?
  local secs=$(( $(date +%s) - start )) execs cov line
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  [ -n "$execs" ] || execs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#' || true)
  cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1 || true)
  line="$t: ${execs:-?} execs in ${secs} s, ${cov:-cov: ?}, corpus $(find "$corpus" -type f | wc -l) files"
  if [ $rc -ne 0 ]; then
    local crash
    crash=$(grep -oE "Test unit written to [^ ]+" "$log" | tail -1 | sed 's/Test unit written to //' || true)
    echo "fuzz: $line: FAILED (exit $rc); log $log${crash:+, input $crash}" >&2
    grep -E "ERROR:|invariant failed|SUMMARY:|runtime error" "$log" | head -5 >&2 || true
    echo "FAILED $line" >"$result"
  else
    echo "fuzz: $line"
    echo "ok $line" >"$result"
  fi
}

jobs_max=${GNIO_FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
[[ "$jobs_max" =~ ^[1-9][0-9]*$ ]] || { echo "fuzz: GNIO_FUZZ_JOBS='$jobs_max' is not a positive whole number" >&2; exit 2; }
running=0
for t in $list; do
  rm -f "$build/fuzz-$t.result"
  if [ "$running" -ge "$jobs_max" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  run_target "$t" &
  running=$((running + 1))
done
wait || true

failed=() summary=()
for t in $list; do
  read -r status line <"$build/fuzz-$t.result" 2>/dev/null || { status=FAILED line="$t: no result (the run was killed)"; }
  if [ "$status" = ok ]; then
    summary+=("$line")
  else
    failed+=("$t")
    summary+=("$line: FAILED")
  fi
done
if [ "$target" = all ]; then
  echo "fuzz: summary"
  printf '  %s\n' "${summary[@]}"
fi
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: ${#failed[@]} target(s) failed: ${failed[*]}; reproduce with $build/fuzz/fuzz_TARGET INPUT" >&2
  exit 1
fi
