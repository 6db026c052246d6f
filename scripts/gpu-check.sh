#!/usr/bin/env bash
# Builds gnio with CUDA, then runs the GPU tests and benchmarks in one go.
#
#   scripts/gpu-check.sh            build (needs nvcc and the -dev packages) and run (needs a GPU)
#   scripts/gpu-check.sh build      only build into build-gpu/ and stage the shared libraries the
#                                   binaries need into build-gpu/lib, so build-gpu/ can be copied
#                                   to a GPU machine that lacks them
#   scripts/gpu-check.sh run        only run, from an existing build-gpu/
#
# Results (logs and JSON) go to $OUT when set, else to gpu-results/. The run
# prints one summary line per step and exits non-zero if any step failed.
# With two or more GPUs it also runs the suites on GPU 1, the multi-context
# tests over GPUs 0 and 1, and the multi-GPU scaling benchmarks.
# GPU_CHECK_BENCH=0 leaves out the single-GPU benchmarks: the device-side
# capacity, the engine's CPU cost per frame, and the rate sweeps of
# flow_count, pp and l2fwd (CUDA next to the host executor, with the
# host-to-device bandwidth measured in the same run). GPU_CHECK_ONLY='REGEX'
# runs only the steps whose whole name matches (e.g. 'conformance_.*|bench_capacity.*'),
# to split a run over several calls.
set -uo pipefail
cd "$(dirname "$0")/.."
mode=${1:-all}
build=build-gpu

do_build() {
  cmake -G Ninja -S . -B "$build" -DGNIO_BUILD_CUDA=ON -DCMAKE_BUILD_TYPE=Release -DGNIO_BUILD_BENCH=ON || return 1
  ninja -C "$build" flow_count l2fwd gnio_tool conformance_test flow_count_test pp_test l2fwd_test capacity engine_cost ||
    return 1
  mkdir -p "$build/lib"
  # Everything the binaries load beyond the C/C++ runtime, for machines without these packages.
  for bin in "$build/examples/flow_count/flow_count" "$build/examples/l2fwd/l2fwd" "$build/tests/conformance_test" \
    "$build/tools/gnio/gnio" "$build/bench/capacity" "$build/bench/engine_cost"; do
    ldd "$bin" | awk '/=> \//{print $3}' | grep -vE '/(libc|libm|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' |
      xargs -r -I{} cp -L {} "$build/lib/"
  done
  echo "gpu-check: built $build (staged $(ls "$build/lib" | wc -l) libraries in $build/lib)"
}

do_run() {
  local out=${OUT:-gpu-results}
  mkdir -p "$out"
  export LD_LIBRARY_PATH="$PWD/$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export GNIO_TEST_DATA_DIR="$PWD/tests/data"
  export GNIO_FLOW_COUNT_BIN="$PWD/$build/examples/flow_count/flow_count"
  export GNIO_TOOL_BIN="$PWD/$build/tools/gnio/gnio"
  export GNIO_L2FWD_BIN="$PWD/$build/examples/l2fwd/l2fwd"
  local fails=0 summary=()
  step() {  # step NAME COMMAND...: run, log to $out/NAME.log, record pass/fail/skip
    local name=$1; shift
    [[ -z "${GPU_CHECK_ONLY:-}" || "$name" =~ ^(${GPU_CHECK_ONLY})$ ]] || return 0
    local t0=$SECONDS rc
    # A step that hangs is killed (rc 124) so the steps after it still run.
    timeout -k 10 "${GPU_CHECK_STEP_TIMEOUT:-300}" "$@" >"$out/$name.log" 2>&1
    rc=$?
    local verdict=pass
    if [ $rc -eq 77 ]; then verdict=skip; elif [ $rc -ne 0 ]; then verdict="FAIL(rc=$rc)"; fails=$((fails + 1)); fi
    summary+=("$(printf '%-28s %-12s %4ss  %s' "$name" "$verdict" $((SECONDS - t0)) "$(grep -E 'PASSED|FAILED|tests ran|SKIPPED' "$out/$name.log" | tail -1)")")
    echo "${summary[-1]}"
  }
  { nvidia-smi -L; nvidia-smi --query-gpu=name,pci.bus_id,driver_version,memory.total --format=csv; } >"$out/gpu.txt" 2>&1
  cat "$out/gpu.txt"
  step conformance_cuda env GNIO_TEST_EXEC=cuda "$build/tests/conformance_test"
  step conformance_host env GNIO_TEST_EXEC=host "$build/tests/conformance_test"
  step flow_count_cuda env GNIO_TEST_EXEC=cuda "$build/tests/flow_count_test"
  step pp_cuda env GNIO_TEST_EXEC=cuda "$build/tests/pp_test"
  step l2fwd_cuda env GNIO_TEST_EXEC=cuda "$build/tests/l2fwd_test"
  # doctor/caps JSON is kept so it can be validated against docs/schema where python3-jsonschema exists.
  step doctor sh -c "'$GNIO_TOOL_BIN' doctor --gpu --json > '$out/doctor.json'"
  step caps sh -c "'$GNIO_TOOL_BIN' caps --gpu 0 --port gen:count=1 --json > '$out/caps.json'"
  local ngpu
  ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
  if [ "${ngpu:-0}" -ge 2 ]; then
    # Two GPUs: the suites again on the second one alone, then the
    # multi-context tests spread over both, then the scaling benchmarks.
    step conformance_cuda_gpu1 env CUDA_VISIBLE_DEVICES=1 GNIO_TEST_EXEC=cuda "$build/tests/conformance_test"
    step flow_count_cuda_gpu1 env CUDA_VISIBLE_DEVICES=1 GNIO_TEST_EXEC=cuda "$build/tests/flow_count_test"
    step pp_cuda_gpu1 env CUDA_VISIBLE_DEVICES=1 GNIO_TEST_EXEC=cuda "$build/tests/pp_test"
    step flow_count_gpus_0_1 env GNIO_TEST_GPUS=0,1 GNIO_TEST_EXEC=cuda "$build/tests/flow_count_test" \
      --gtest_filter='*TwoContexts*'
    step pp_gpus_0_1 env GNIO_TEST_GPUS=0,1 GNIO_TEST_EXEC=cuda "$build/tests/pp_test" \
      --gtest_filter='*TwoContexts*:HttpServer.PairClientOnTwoContexts'
    step bench_multi_gpu_flow_count python3 bench/multi_gpu_rate.py --bin "$GNIO_FLOW_COUNT_BIN" \
      --json "$out/bench_multi_gpu_flow_count.json" --count 40000000 --queues 4 --lanes 4
    step bench_multi_gpu_pp python3 bench/multi_gpu_rate.py --app pp --bin "$GNIO_TOOL_BIN" \
      --json "$out/bench_multi_gpu_pp.json" --count 40000000 --queues 4 --lanes 4
  fi
  if [ "${GPU_CHECK_BENCH:-1}" != 0 ]; then
    local cap="$build/bench/capacity"
    step bench_capacity "$cap" --gpu 0 --app flow_count,pp --mem gpu,host --rings 1,4,16,64 --h2d \
      --json "$out/bench_capacity.json"
    # Where a queue's time goes: the same consumers with other block sizes and batches.
    local tb
    for tb in 128:256 512:1024 512:2048; do
      step "bench_capacity_t${tb%:*}_b${tb#*:}" "$cap" --gpu 0 --app flow_count,pp --mem gpu --rings 1,64 \
        --threads "${tb%:*}" --batch "${tb#*:}" --ring 8192 --json "$out/bench_capacity_t${tb%:*}_b${tb#*:}.json"
    done
    step bench_engine_cost "$build/bench/engine_cost" --queues 4 --consumers 4 --json "$out/bench_engine_cost.json"
    step bench_flow_count python3 bench/flow_count_rate.py --bin "$GNIO_FLOW_COUNT_BIN" --json "$out/bench_flow_count.json" \
      --sizes 64,1500 --queues 8,16 --lanes 8 --pkt-mem auto,gpu --count 40000000 --capacity-bin "$cap" --run-timeout 60
    step bench_pp python3 bench/flow_count_rate.py --app pp --bin "$GNIO_TOOL_BIN" --json "$out/bench_pp.json" \
      --sizes 64,1500 --queues 4 --lanes 4,8 --count 40000000 --capacity-bin "$cap" --run-timeout 60
    step bench_l2fwd python3 bench/flow_count_rate.py --app l2fwd --bin "$GNIO_L2FWD_BIN" --json "$out/bench_l2fwd.json" \
      --sizes 64,1500 --queues 4,8 --lanes 4 --count 20000000 --run-timeout 60
  fi
  echo
  echo "gpu-check summary ($(date -u +%FT%TZ), $(head -1 "$out/gpu.txt"))"
  printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"
  [ $fails -eq 0 ]
}

case $mode in
  build) do_build ;;
  run) do_run ;;
  all) do_build && do_run ;;
  *) echo "usage: $0 [build|run]" >&2; exit 2 ;;
esac
