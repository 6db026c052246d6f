#!/usr/bin/env bash
# Builds gnio with CUDA, then runs the GPU tests and benchmarks in one go.
#
#   scripts/gpu-check.sh            build (needs nvcc and the -dev packages) and run (needs a GPU)
#   scripts/gpu-check.sh build      only build into build-gpu/ and stage the shared libraries the
#                                   binaries need into build-gpu/lib, so build-gpu/ can be copied
#                                   to a GPU machine that lacks them
#   scripts/gpu-check.sh run        only run, from an existing build-gpu/
#   scripts/gpu-check.sh stage DIR  copy what `run` needs from build-gpu/ into DIR (binaries without
#                                   host debug info, and build-gpu/lib), small enough to carry to a GPU
#                                   machine; there, GPU_CHECK_BUILD=DIR scripts/gpu-check.sh run
#   scripts/gpu-check.sh ab A B     two staged builds side by side on the CUDA executor, alternating
#                                   (bench/ab_rate.py): flow_count and gnio pp rates at 64 B (mix=all
#                                   and mix=tcp), and bench/latency's cqe, ring and echo; A is the
#                                   baseline. GPU_CHECK_AB_ROUNDS rounds (default 2)
#
# Results (logs and JSON) go to $OUT when set, else to gpu-results/. The run
# prints one summary line per step and exits non-zero if any step failed.
# With two or more GPUs it also runs the suites on GPU 1, the multi-context
# tests over GPUs 0 and 1, and the multi-GPU scaling benchmarks.
# GPU_CHECK_BENCH=0 leaves out the single-GPU benchmarks: the device-side
# capacity, the engine's CPU cost per frame, and the rate sweeps of
# flow_count, pp and l2fwd (CUDA next to the host executor, with the
# host-to-device bandwidth measured in the same run), and the latency runs
# (bench/latency: flag, ring and echo, CUDA and host, busy and adaptive
# polling, idle and under load). GPU_CHECK_ONLY='REGEX'
# runs only the steps whose whole name matches (e.g. 'conformance_.*|bench_capacity.*'),
# to split a run over several calls. GPU_CHECK_BUILD names another build
# directory (default build-gpu). Where compute-sanitizer is installed, the
# GPU programs also run under its memcheck, racecheck and synccheck tools
# (steps sanitize_*; GPU_CHECK_SANITIZE=0 leaves them out); any error or
# race hazard fails the step.
set -uo pipefail
cd "$(dirname "$0")/.."
mode=${1:-all}
build=${GPU_CHECK_BUILD:-build-gpu}
# The binaries `run` uses, relative to the build directory.
run_bins=(examples/flow_count/flow_count examples/l2fwd/l2fwd tools/gnio/gnio tests/conformance_test
  tests/flow_count_test tests/pp_test tests/l2fwd_test tests/module_loading_test tests/frag_gpu_test bench/capacity
  bench/engine_cost bench/latency)

do_build() {
  cmake -G Ninja -S . -B "$build" -DGNIO_BUILD_CUDA=ON -DCMAKE_BUILD_TYPE=Release -DGNIO_BUILD_BENCH=ON || return 1
  ninja -C "$build" flow_count l2fwd gnio_tool conformance_test flow_count_test pp_test l2fwd_test module_loading_test \
    frag_gpu_test capacity engine_cost latency gnio_doca || return 1
  build_doca_sample || return 1
  stage_libs || return 1
  echo "gpu-check: built $build (staged $(ls "$build/lib" | wc -l) libraries in $build/lib)"
}

# NVIDIA's three DOCA GPUNetIO Ethernet samples, unmodified, built against this
# build's install into $build/doca-sample (tests/integration/doca_sample_test.sh),
# where the samples are (GNIO_DOCA_SAMPLES_DIR, by default ../shared/doca-samples
# beside the tree).
doca_sample=doca-sample/doca_gpunetio_simple_receive
doca_send_samples=(doca-sample/doca_gpunetio_simple_send doca-sample/doca_gpunetio_send_wait_time)
build_doca_sample() {
  local samples=${GNIO_DOCA_SAMPLES_DIR:-$PWD/../shared/doca-samples}
  rm -rf "${build:?}/doca-sample"
  if [[ ! -d $samples/samples/doca_gpunetio/gpunetio_simple_receive ]]; then
    echo "gpu-check: no DOCA samples at $samples: step doca_sample_cuda will be skipped"
    return 0
  fi
  local sample
  for sample in gpunetio_simple_receive gpunetio_simple_send gpunetio_send_wait_time; do
    GNIO_DOCA_SAMPLES_DIR=$samples GNIO_DOCA_SAMPLE_OUT=$PWD/$build/doca-sample \
      bash tests/integration/doca_sample_test.sh "$build" "$sample" || return 1
  done
}

stage_libs() {
  mkdir -p "$build/lib"
  # Everything the binaries load beyond the C/C++ runtime, for machines without these packages.
  local b bins=("${run_bins[@]}")
  for b in "$doca_sample" "${doca_send_samples[@]}"; do [[ -x $build/$b ]] && bins+=("$b"); done
  for b in "${bins[@]}"; do
    # grep finds nothing (status 1) for a binary that needs only the runtime.
    ldd "$build/$b" | awk '/=> \//{print $3}' | { grep -vE '/(libc|libm|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' || true; } |
      xargs -r -I{} cp -L {} "$build/lib/" || return 1
  done
}

# --filter's test needs tcpdump, which the GPU machine lacks: its counts are
# recorded here, with the corpus captures the test reads (tests/integration/
# filter_test.py record), into DIR/filter.
stage_filter_counts() {
  local dir=$1 corpus=${GNIO_CORPUS_DIR:-$PWD/../shared/corpus}
  if ! command -v tcpdump >/dev/null || [[ ! -d $corpus ]]; then
    echo "gpu-check: no tcpdump or no corpus at $corpus: steps filter_*_cuda will be skipped"
    return 0
  fi
  mkdir -p "$dir/filter/corpus" || return 1
  local rel
  for rel in $(python3 -c 'import sys; sys.path.insert(0, "tests/integration"); import filter_test as f
print(" ".join(r for w, r in f.CAPTURES if w == "corpus"))'); do
    mkdir -p "$dir/filter/corpus/$(dirname "$rel")" && cp "$corpus/$rel" "$dir/filter/corpus/$rel" || return 1
  done
  GNIO_TEST_DATA_DIR=$PWD/tests/data GNIO_CORPUS_DIR=$corpus \
    python3 tests/integration/filter_test.py record "$dir/filter/expected.json"
}

do_stage() {
  local dir=${1:?usage: $0 stage DIR}
  rm -rf "$dir" && mkdir -p "$dir" || return 1
  local b
  for b in "${run_bins[@]}"; do
    mkdir -p "$dir/$(dirname "$b")"
    # Host debug info off; the device code (with its -lineinfo) stays.
    objcopy --strip-debug "$build/$b" "$dir/$b" || return 1
  done
  for b in "$doca_sample" "${doca_send_samples[@]}"; do
    [[ -x $build/$b ]] || continue
    mkdir -p "$dir/doca-sample" && objcopy --strip-debug "$build/$b" "$dir/$b" || return 1
  done
  stage_filter_counts "$dir" || return 1
  stage_libs && cp -r "$build/lib" "$dir/lib" || return 1
  echo "gpu-check: staged $build into $dir ($(du -sh "$dir" | cut -f1))"
}

do_run() {
  local out=${OUT:-gpu-results}
  mkdir -p "$out"
  export LD_LIBRARY_PATH="$PWD/$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export GNIO_TEST_DATA_DIR="$PWD/tests/data" GNIO_SOURCE_DIR="$PWD"
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
  sanitize() {  # sanitize TOOL PROGRAM ARGS...: fails on any error, and on any race hazard (errors and warnings)
    local tool=$1; shift
    local extra=() log rc
    [ "$tool" = racecheck ] && extra=(--racecheck-report all)
    log=$(mktemp)
    compute-sanitizer --tool "$tool" "${extra[@]}" --target-processes all --error-exitcode 97 --print-limit 50 "$@" 2>&1 |
      tee "$log"
    rc=${PIPESTATUS[0]}
    # "ERROR SUMMARY: N errors", "RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)"
    if [ "$rc" -eq 0 ] && grep -Eq 'SUMMARY: [1-9][0-9]* (hazard|error)' "$log"; then rc=98; fi
    rm -f "$log"
    return "$rc"
  }
  # step runs its command under timeout, which needs a program, not a function.
  local san=(bash -c "$(declare -f sanitize); sanitize \"\$@\"" sanitize)
  { nvidia-smi -L; nvidia-smi --query-gpu=name,pci.bus_id,driver_version,memory.total --format=csv; } >"$out/gpu.txt" 2>&1
  cat "$out/gpu.txt"
  step conformance_cuda env GNIO_TEST_EXEC=cuda "$build/tests/conformance_test"
  step conformance_host env GNIO_TEST_EXEC=host "$build/tests/conformance_test"
  step flow_count_cuda env GNIO_TEST_EXEC=cuda "$build/tests/flow_count_test"
  step pp_cuda env GNIO_TEST_EXEC=cuda "$build/tests/pp_test"
  step l2fwd_cuda env GNIO_TEST_EXEC=cuda "$build/tests/l2fwd_test"
  step module_loading_cuda "$build/tests/module_loading_test"
  step frag_gpu "$build/tests/frag_gpu_test"
  # NVIDIA's receive sample on a capture (thread, warp, block scope) and on a
  # veth pair with real traffic; counts against tshark's and the sender's.
  if [[ -x $build/$doca_sample ]]; then
    step doca_sample_cuda python3 tests/integration/doca_sample_gpu.py "$build/$doca_sample"
  else
    step doca_sample_cuda sh -c "echo 'no $build/$doca_sample (built by gpu-check.sh build where the DOCA samples are)'; exit 77"
  fi
  # NVIDIA's two send samples into a pcap file and a veth pair: frames byte
  # for byte, and send_wait_time's burst spacing.
  if [[ -x $build/${doca_send_samples[0]} && -x $build/${doca_send_samples[1]} ]]; then
    step doca_send_cuda python3 tests/integration/doca_send_gpu.py "$build/${doca_send_samples[0]}" \
      "$build/${doca_send_samples[1]}"
  else
    step doca_send_cuda sh -c "echo 'no DOCA send samples in $build/doca-sample (built by gpu-check.sh build)'; exit 77"
  fi
  # --filter on the GPU: each program's matched count against tcpdump's
  # (recorded by `stage`; tcpdump itself where it is installed).
  local fprog
  for fprog in pp flow_count l2fwd; do
    if [[ -f $build/filter/expected.json ]]; then
      step "filter_${fprog}_cuda" env GNIO_TEST_EXEC=cuda GNIO_FILTER_EXPECTED="$PWD/$build/filter/expected.json" \
        GNIO_CORPUS_DIR="$PWD/$build/filter/corpus" python3 tests/integration/filter_test.py "$fprog"
    elif command -v tcpdump >/dev/null; then
      step "filter_${fprog}_cuda" env GNIO_TEST_EXEC=cuda python3 tests/integration/filter_test.py "$fprog"
    else
      step "filter_${fprog}_cuda" sh -c "echo 'no tcpdump and no recorded counts ($build/filter)'; exit 77"
    fi
  done
  # --write, --json, --jsonl and metrics of the three programs on the GPU,
  # kept in $out/outputs for `tests/integration/gpu_outputs.py check` where
  # tcpdump, tshark, jsonschema and promtool are.
  step outputs_cuda env GNIO_TEST_EXEC=cuda python3 tests/integration/gpu_outputs.py produce "$out/outputs"
  # The launch modes (gnio::launch_dims::mode): the conformance suite and
  # flow_count's tshark counts and l2fwd's byte-exact cases with every kernel
  # launched per burst and as a replayed CUDA graph (GNIO_TEST_LAUNCH).
  local lm
  for lm in per-burst graph; do
    step "conformance_cuda_${lm}" env GNIO_TEST_EXEC=cuda GNIO_TEST_LAUNCH=$lm "$build/tests/conformance_test"
    step "flow_count_cuda_${lm}" env GNIO_TEST_EXEC=cuda GNIO_TEST_LAUNCH=$lm "$build/tests/flow_count_test" \
      --gtest_filter='Bundled/Captures.*:FlowCount.*'
    step "l2fwd_cuda_${lm}" env GNIO_TEST_EXEC=cuda GNIO_TEST_LAUNCH=$lm "$build/tests/l2fwd_test" --gtest_filter='L2fwd.*'
  done
  step conformance_host_per-burst env GNIO_TEST_EXEC=host GNIO_TEST_LAUNCH=per-burst "$build/tests/conformance_test"
  # The pp kernel is held to 80 registers a thread so a block may have the 768
  # threads --threads allows; more registers and this launch fails.
  step pp_threads_768 "$GNIO_TOOL_BIN" pp --gpu 0 --threads 768 --port "pcap:file=$PWD/tests/data/http.pcap" \
    --stats-interval 0 --json "$out/pp_threads_768.json"
  # doctor/caps JSON is kept so it can be validated against docs/schema where python3-jsonschema exists.
  step doctor sh -c "'$GNIO_TOOL_BIN' doctor --gpu --json > '$out/doctor.json'"
  step caps sh -c "'$GNIO_TOOL_BIN' caps --gpu 0 --port gen:count=1 --json > '$out/caps.json'"
  # --metrics and --ipfix with the programs on the CUDA executor, read by a
  # real prometheus server, promtool and nfcapd/nfdump from PATH (skipped,
  # status 77, where they are not there: docs/testing.md says how to carry them).
  local mmode prom promtool
  prom=$(command -v prometheus || true)
  promtool=$(command -v promtool || true)
  for mmode in promtool prometheus bad-input; do
    if [[ $mmode == bad-input || ( -n $prom && -n $promtool ) ]]; then
      step "metrics_${mmode}_cuda" env GNIO_TEST_EXEC=cuda GNIO_PROMETHEUS_BIN="$prom" GNIO_PROMTOOL_BIN="$promtool" \
        python3 tests/integration/metrics_test.py "$mmode"
    else
      step "metrics_${mmode}_cuda" sh -c 'echo "prometheus or promtool is not on PATH"; exit 77'
    fi
  done
  if command -v nfcapd >/dev/null && command -v nfdump >/dev/null; then
    step ipfix_nfcapd_cuda env GNIO_TEST_EXEC=cuda python3 tests/integration/ipfix_nfcapd_test.py
  else
    step ipfix_nfcapd_cuda sh -c 'echo "nfcapd or nfdump is not on PATH"; exit 77'
  fi
  if [ "${GPU_CHECK_SANITIZE:-1}" != 0 ] && command -v compute-sanitizer >/dev/null 2>&1; then
    # Every GPU program under memcheck, racecheck and synccheck: the three
    # kernels on captures that exercise their paths (pp's TX replies too),
    # and the conformance suite's kernels. Zero errors and zero race hazards.
    # The flow_count, pp and l2fwd suites run natively above: under a
    # sanitizer every child takes ~15 s to start and the whole pp suite
    # passes 240 s, and their time-limited cases (Fifo.*) then fail.
    local tool cap d="$GNIO_TEST_DATA_DIR"
    for tool in memcheck racecheck synccheck; do
      for cap in dns_icmp http test gen/frag4 gen/vxlan gen/http_pipelined; do
        step "sanitize_${tool}_pp_${cap//\//_}" "${san[@]}" "$tool" "$GNIO_TOOL_BIN" pp --gpu 0 --port "pcap:file=$d/$cap.pcap" \
          --reply-all --ip 10.0.0.1 --stats-interval 0 --json "$out/sanitize_${tool}_pp_${cap//\//_}.json"
      done
      step "sanitize_${tool}_flow_count" "${san[@]}" "$tool" "$GNIO_FLOW_COUNT_BIN" --exec cuda --queues 4 \
        --port "pcap:file=$d/test.pcap" --stats-interval 0
      # The kernel launched again and again from the runner's thread, and replayed as a graph.
      step "sanitize_${tool}_flow_count_per_burst" "${san[@]}" "$tool" "$GNIO_FLOW_COUNT_BIN" --exec cuda --queues 4 \
        --launch per-burst --burst 16 --port "pcap:file=$d/test.pcap" --stats-interval 0
      step "sanitize_${tool}_l2fwd_graph" "${san[@]}" "$tool" "$GNIO_L2FWD_BIN" --gpu 0 --queues 2 --launch graph \
        --burst 16 --port "pcap:file=$d/http.pcap,tx=$out/sanitize_${tool}_l2fwd_graph.pcap" --stats-interval 0
      step "sanitize_${tool}_l2fwd" "${san[@]}" "$tool" "$GNIO_L2FWD_BIN" --gpu 0 --queues 2 \
        --port "pcap:file=$d/http.pcap,tx=$out/sanitize_${tool}_l2fwd.pcap" --stats-interval 0
      # Less the case that makes a launch fail on purpose (memcheck reports its
      # cudaErrorInvalidValue); it runs natively in conformance_cuda*.
      step "sanitize_${tool}_conformance" env GNIO_TEST_EXEC=cuda "${san[@]}" "$tool" "$build/tests/conformance_test" \
        --gtest_filter='-modes/launch_modes_p.a_failed_launch_is_reported_by_wait/*'
    done
  fi
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
    # Per-packet turnaround: every run checks that each sample was answered
    # (and each echo reply's bytes); the JSON has the percentiles.
    step bench_latency "$build/bench/latency" --test flag,ring,echo --exec both --poll busy,adaptive --load off,on \
      --samples 10000 --interval-us 50 --json "$out/bench_latency.json"
    step bench_latency_batch1 "$build/bench/latency" --test ring --exec both --poll busy,adaptive --load off \
      --batch 1 --json "$out/bench_latency_batch1.json"
    step bench_engine_cost "$build/bench/engine_cost" --queues 4 --consumers 4 --json "$out/bench_engine_cost.json"
    step bench_flow_count python3 bench/flow_count_rate.py --bin "$GNIO_FLOW_COUNT_BIN" --json "$out/bench_flow_count.json" \
      --sizes 64,1500 --queues 8,16 --lanes 8 --pkt-mem auto,gpu --count 40000000 --capacity-bin "$cap" --run-timeout 60
    step bench_pp python3 bench/flow_count_rate.py --app pp --bin "$GNIO_TOOL_BIN" --json "$out/bench_pp.json" \
      --sizes 64,1500 --queues 4 --lanes 4,8 --count 40000000 --capacity-bin "$cap" --run-timeout 60
    # Persistent vs per burst vs graph, bursts 16..1024, CUDA next to host
    # (bench/launch_modes.py; the target: persistent >= 3x per-burst at 32).
    step bench_launch_modes python3 bench/launch_modes.py --flow-count-bin "$GNIO_FLOW_COUNT_BIN" \
      --json "$out/bench_launch_modes.json" --count 4000000 --run-timeout 60
    step bench_launch_modes_l2fwd python3 bench/launch_modes.py --l2fwd-bin "$GNIO_L2FWD_BIN" \
      --json "$out/bench_launch_modes_l2fwd.json" --count 4000000 --run-timeout 60
    step bench_l2fwd python3 bench/flow_count_rate.py --app l2fwd --bin "$GNIO_L2FWD_BIN" --json "$out/bench_l2fwd.json" \
      --sizes 64,1500 --queues 4,8 --lanes 4 --count 20000000 --run-timeout 60
  fi
  echo
  echo "gpu-check summary ($(date -u +%FT%TZ), $(head -1 "$out/gpu.txt"))"
  printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"
  [ $fails -eq 0 ]
}

# Two staged builds (stage DIR), A the baseline, B the change, on the CUDA
# executor in one session: each rate row through bench/ab_rate.py (A, B, A,
# B, ...), then bench/latency alternating the same way. JSON in $OUT.
do_ab() {
  local a=${1:?usage: $0 ab A B} b=${2:?usage: $0 ab A B} rounds=${GPU_CHECK_AB_ROUNDS:-2}
  local out=${OUT:-gpu-results} fails=0 d
  for d in "$a" "$b"; do
    [[ -x $d/examples/flow_count/flow_count && -x $d/tools/gnio/gnio && -d $d/lib ]] ||
      { echo "gpu-check: $d is not a staged build (scripts/gpu-check.sh stage DIR)" >&2; return 2; }
  done
  mkdir -p "$out"
  nvidia-smi -L >"$out/ab_gpu.txt" 2>&1
  ab() {  # ab NAME BIN (relative to a build) FLOW_COUNT_RATE_ARGS...
    local name=$1 bin=$2; shift 2
    timeout -k 10 "${GPU_CHECK_STEP_TIMEOUT:-300}" python3 bench/ab_rate.py --a "$a/$bin" --b "$b/$bin" \
      --lib-a "$a/lib" --lib-b "$b/lib" --label-a a --label-b b --rounds "$rounds" --json "$out/ab_$name.json" \
      -- --executors cuda --run-timeout 60 "$@" 2>&1 | tee "$out/ab_$name.log" | tail -3
    [ "${PIPESTATUS[0]}" -eq 0 ] || { echo "gpu-check: ab_$name FAILED"; fails=$((fails + 1)); }
  }
  ab flow_count examples/flow_count/flow_count --sizes 64 --queues 16 --lanes 8 --count 80000000
  ab pp tools/gnio/gnio --app pp --sizes 64 --queues 4 --lanes 4 --count 40000000
  ab pp_tcp tools/gnio/gnio --app pp --mix tcp --sizes 64 --queues 4 --lanes 4 --count 20000000
  local r lbl dir
  for r in $(seq 1 "$rounds"); do
    for lbl in a b; do
      dir=$a; [ $lbl = b ] && dir=$b
      echo "gpu-check: latency round $r $lbl"
      LD_LIBRARY_PATH="$PWD/$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" timeout -k 10 120 "$dir/bench/latency" \
        --test cqe,ring,echo --exec cuda --poll latency --load off --samples 5000 \
        --json "$out/ab_latency_${lbl}_$r.json" >"$out/ab_latency_${lbl}_$r.log" 2>&1 ||
        { echo "gpu-check: ab_latency_${lbl}_$r FAILED"; fails=$((fails + 1)); }
    done
  done
  echo "gpu-check: ab results in $out ($fails failed)"
  [ $fails -eq 0 ]
}

case $mode in
  build) do_build ;;
  run) do_run ;;
  stage) do_stage "${2:-}" ;;
  ab) do_ab "${2:-}" "${3:-}" ;;
  all) do_build && do_run ;;
  *) echo "usage: $0 [build|run|stage DIR|ab A B]" >&2; exit 2 ;;
esac
