#!/usr/bin/env bash
# The streaming GEMV of one build against another's, on the GPU (issue 38's quantized decode):
#   OUT=DIR bash validation/gemv_stream_ab.sh BIN_DIR STAGE...
# BIN_DIR holds this build's inferlab, inferlab_tests and bench_engine_projection, and the other
# build's as inferlab_base and bench_engine_projection_base (validation/make_gpu_bundle.sh, then
# the base binaries copied in). Stages, in the order given:
#   tests    the GEMV, projection and backend tests of this build (GTEST_FILTER overrides)
#   kernels  bench_engine_projection of both builds, Llama 3 8B's four decode projections at one
#            row for FORMATS (default "int4 fp8 bf16"), both fusions, interleaved base/new
#   steps    validation/engine_ab.py BINARY=base,new on CASES (default Llama 3 8B decode at batch
#            1 and 2, context 1024, in FORMATS), ROUNDS (default 2) rounds
#   ncu      validation/gemv_ncu.sh per format and build (three gemv_stream_kernel launches of an
#            eager Llama 3 8B decode, clocks left alone): duration, DRAM bytes, instructions,
#            stall reasons per issued instruction, in ncu/gemv_<format>_<build>.txt
#   sass     cuobjdump's SASS of one kernel instantiation of each build (SASS_KERNEL)
# Results under $OUT/gemv_ab/ (flat, small files).
set -u
cd "$(dirname "$0")/.." || exit 2
bin=$(cd "${1:?BIN_DIR}" && pwd) || exit 2
shift
formats=${FORMATS:-int4 fp8 bf16}
out=${OUT:-/tmp/gemv_ab_out}/gemv_ab
mkdir -p "$out"
# shellcheck source=validation/gpu_common.sh
source validation/gpu_common.sh
gpu_env "$bin"
note() { echo "$(date -u +%H:%M:%S) $*" | tee -a "$out/notes.txt"; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv >"$out/gpu.txt"

for stage in "$@"; do
  case $stage in
    tests)
      filter=${GTEST_FILTER:-'PersistentDecode*:CudaGemvStream*:StreamGemv*:CudaQuantBackend*:CudaProjection*:GemvPlan*'}
      timeout 300 "$bin/inferlab_tests" --gtest_filter="$filter" >"$out/tests.txt" 2>&1
      note "tests rc=$? $(grep -E '^\[  PASSED|^\[  FAILED|^\[  SKIPPED' "$out/tests.txt" | tr '\n' ' ')"
      ;;
    kernels)
      regex="projection/($(echo "$formats" | tr ' ' '|'))/8b_(qkv|o|gate_up|down)/(gemv|fused)/rows:1/"
      for round in 1 2; do
        for side in base new; do
          b=$bin/bench_engine_projection
          [ "$side" = base ] && b=$bin/bench_engine_projection_base
          timeout 150 "$b" --benchmark_filter="$regex" --benchmark_min_time=0.05 \
            --benchmark_format=json >"$out/kernels_${side}_$round.json" 2>"$out/kernels_${side}_$round.err"
          note "kernels $side round $round rc=$?"
        done
      done
      ;;
    steps)
      cases=${CASES:-}
      if [ -z "$cases" ]; then
        for f in $formats; do
          w=":$f"
          [ "$f" = bf16 ] && w=""
          cases="$cases,llama-3-8b:decode:1:1024$w,llama-3-8b:decode:2:1024$w"
        done
        cases=${cases#,}
      fi
      timeout 420 python3 validation/engine_ab.py "$bin/inferlab" "$out/steps.json" \
        "BINARY=$bin/inferlab_base,$bin/inferlab" "$cases" "${ROUNDS:-2}" >"$out/steps.txt" 2>&1
      note "steps rc=$?"
      ;;
    ncu)  # validation/gemv_ncu.sh of each build with these metrics
      metrics=gpu__time_duration.sum,dram__bytes_read.sum,smsp__inst_executed.sum,sm__cycles_active.avg
      metrics=$metrics,smsp__warps_active.avg.per_cycle_active,smsp__issue_active.avg.per_cycle_active
      metrics="$metrics,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio"
      for side in base new; do
        binary=inferlab
        [ "$side" = base ] && binary=inferlab_base
        OUT=$out INFERLAB=$binary NCU_TAG=_$side NCU_REPORT="--metrics $metrics" \
          bash validation/gemv_ncu.sh "$bin" "$formats" >>"$out/notes.txt" 2>&1
      done
      ;;
    sass)  # the SASS of each build's kernel for SASS_KERNEL (a regex on the mangled name)
      k=${SASS_KERNEL:-gemv_stream_kernelILNS2_3FmtE2ELi1ELi1E}
      for side in base new; do
        b=$bin/inferlab
        [ "$side" = base ] && b=$bin/inferlab_base
        timeout 120 cuobjdump -sass "$b" | awk -v k="$k" '/Function : /{p = ($0 ~ k)} p' \
          >"$out/sass_$side.txt" 2>"$out/sass_$side.err"
        note "sass $side rc=$? lines=$(wc -l <"$out/sass_$side.txt")"
      done
      ;;
    *) note "unknown stage $stage" ;;
  esac
done
