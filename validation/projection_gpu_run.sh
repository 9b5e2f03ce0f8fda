#!/usr/bin/env bash
# The Projector's GPU checks (engine/cuda/projection.hpp) in one device call: build here,
# carry the binaries:
#   bash validation/projection_gpu_run.sh BIN_DIR [STAGES]
# BIN_DIR holds inferlab_tests and bench_engine_projection (copies of build/tests/inferlab_tests
# and build/bench/bench_engine_projection); STAGES is a comma list of (default: tests,sass,bench8b):
#   tests    the Projector's GPU tests (every format x form x rows against the CPU reference,
#            fused vs unfused bit for bit, Llama 3 8B shapes, GEMV vs tensor cores), then
#            compute-sanitizer memcheck, racecheck and synccheck on the small-shape tests
#   sass     the GEMV kernels' sm_90 SASS: weight loads (LDG ... 128, no L1 allocation), mma
#            instructions, and no local memory (LDL/STL)
#   bench8b  bench_engine_projection at Llama 3 8B shapes: every format, GEMV / tensor cores /
#            fused, 1-64 rows (~420 cases, ~80 s)
#   bench1b  the same at Llama 3.2 1B shapes (~80 s)
# Each stage writes under $OUT and appends its exit code to $OUT/summary.txt.
set -u
BIN=${1:-build/gpurun}
STAGES=${2:-tests,sass,bench8b}
export INFERLAB_DATA_DIR=$PWD/data
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > "$OUT/device.txt"
date -u +%FT%TZ >> "$OUT/device.txt"
has() { [[ ",$STAGES," == *",$1,"* ]]; }

if has tests; then
  timeout 300 "$BIN/inferlab_tests" --gtest_filter='GemvPlan*:ProjectionWorkspace*:CudaProjection*' \
    > "$OUT/projection_tests.txt" 2>&1
  echo "projection tests rc=$?" | tee -a "$OUT/summary.txt"
  grep -E "^\[  (FAILED|PASSED|SKIPPED) " "$OUT/projection_tests.txt" | tail -20
  for tool in memcheck racecheck synccheck; do
    timeout 300 compute-sanitizer --tool $tool "$BIN/inferlab_tests" \
      --gtest_filter='CudaProjection.FusedForms*:CudaProjection.Int4SmallGroups' \
      > "$OUT/projection_$tool.txt" 2>&1
    echo "$tool rc=$?" | tee -a "$OUT/summary.txt"
  done
fi
if has sass; then
  if command -v cuobjdump > /dev/null; then
    cuobjdump -arch sm_90 -sass "$BIN/inferlab_tests" |
      awk '/Function :/ { keep = /gemv_kernel/ } keep' > "$OUT/gemv_sass.txt"
    # Per kernel: its weight loads, mma instructions and any local-memory traffic.
    awk '/Function :/ { name = $3 }
         /LDG/ { split($0, f, /LDG/); op = "LDG" f[2]; sub(/ .*/, "", op); n[name " " op]++ }
         /HMMA|IMMA/ { n[name " mma"]++ }
         /LDL|STL/ { n[name " LOCAL"]++ }
         END { for (k in n) print k, n[k] }' "$OUT/gemv_sass.txt" | sort > "$OUT/gemv_sass_summary.txt"
    echo "sass rc=0 (local memory lines: $(grep -c ' LOCAL ' "$OUT/gemv_sass_summary.txt"))" |
      tee -a "$OUT/summary.txt"
  else
    echo "sass rc=127 (no cuobjdump)" | tee -a "$OUT/summary.txt"
  fi
fi
bench() {
  timeout 500 "$BIN/bench_engine_projection" --benchmark_min_time=0.05 \
    --benchmark_filter="$2" --benchmark_format=json --benchmark_out="$OUT/$1.json" \
    --benchmark_out_format=json > /dev/null 2> "$OUT/$1.err"
  echo "$1 rc=$?" | tee -a "$OUT/summary.txt"
  # Table: name, µs per call, share of the probe's HBM read bandwidth, path taken.
  python3 - "$OUT/$1.json" > "$OUT/$1.txt" << 'EOF'
import json, sys
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    if "error_message" in b:
        print(f"{b['name']:60s} {b['error_message']}")
        continue
    print(f"{b['name'].replace('/manual_time', ''):60s} {b['real_time']:9.2f} us "
          f"{b.get('bytes_per_s', 0) / 1e12:6.2f} TB/s {b.get('of_probe_hbm_read', 0) * 100:5.1f}% "
          f"{b.get('flop_per_s', 0) / 1e12:7.2f} TFLOP/s {b.get('label', '')}")
EOF
}
has bench8b && bench bench_8b 'projection/.*/8b_'
has bench1b && bench bench_1b 'projection/.*/1b_'
cat "$OUT/summary.txt"
