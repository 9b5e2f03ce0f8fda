#!/usr/bin/env bash
# The serving stress harness on the GPU (tests/engine/cuda/serving_stress_cuda_test.cpp): random
# workloads through serve's scheduler and the engine, every request checked against itself alone.
#   bash validation/stress_gpu.sh BIN_DIR [MINUTES] [FIRST_SEED]
# from the repository's root, BIN_DIR holding inferlab_tests (validation/make_gpu_bundle.sh).
# Runs the test binary over fresh seed ranges, SEEDS_PER_RUN at a time (INFERLAB_STRESS_SEEDS),
# until MINUTES (default 10) have passed: the first run is CudaServingStress.* (the shipped
# shape's long-context case too), later ones CudaServingStress.RandomWorkloads. A device command
# lasts at most 10 minutes, so each run is bounded (RUN_LIMIT_S, default 420 s) and none starts
# that the last one's time says would not end before the deadline; to go on where a session
# stopped, pass the "next_seed" of its summary as FIRST_SEED (default 1000: past the fixed seeds).
# Environment: SEEDS_PER_RUN (default 6), RUN_LIMIT_S, INFERLAB_STRESS_MODEL and
# INFERLAB_STRESS_CONTEXT (passed to the tests: another model shape, its context).
# Writes under $OUT (default /tmp/stress_gpu_out): summary.txt (seeds, workloads, requests
# completed and rejected, near-ties, failures, wall time, the GPU) and failures.log (each failing
# run's log, appended); exits 1 on any failure, 2 on bad arguments.
set -u
if [ $# -lt 1 ] || [ ! -x "$1/inferlab_tests" ]; then
  echo "usage: $0 BIN_DIR [MINUTES] [FIRST_SEED]  (BIN_DIR/inferlab_tests must exist)" >&2
  exit 2
fi
bin=$(cd "$1" && pwd)
minutes=${2:-10}
seed=${3:-1000}
per_run=${SEEDS_PER_RUN:-6}
run_limit_s=${RUN_LIMIT_S:-420}
out=${OUT:-/tmp/stress_gpu_out}
mkdir -p "$out"
source "$(dirname "$0")/gpu_common.sh"
gpu_env "$bin"

start=$(date +%s)
deadline=$((start + minutes * 60))
first_seed=$seed
runs=0 failed_runs=0 last_s=0
totals="$out/totals.txt"  # every seed's line, summed at the end
: >"$totals"
: >"$out/failures.log"
filter='CudaServingStress.*'
while true; do
  now=$(date +%s)
  left=$((deadline - now))
  # Only a run that the last one's time says will end in time (the first always starts).
  if [ $runs -gt 0 ] && [ $left -lt $((last_s + last_s / 5 + 10)) ]; then break; fi
  limit=$((left < run_limit_s ? left : run_limit_s))
  [ $limit -lt 30 ] && limit=30
  log="$out/run.log"
  INFERLAB_STRESS_SEEDS="$seed:$per_run" timeout --signal=KILL "$limit" \
    "$bin/inferlab_tests" --gtest_filter="$filter" --gtest_color=no >"$log" 2>&1
  rc=$?
  last_s=$(($(date +%s) - now))
  runs=$((runs + 1))
  grep '^stress seed ' "$log" >>"$totals"
  if [ $rc -ne 0 ]; then
    failed_runs=$((failed_runs + 1))
    {
      echo "=== seeds $seed to $((seed + per_run - 1)), filter $filter: exit $rc after ${last_s}s" \
        "$([ $rc -eq 137 ] && echo "(killed at the ${limit}s limit: a hang?)")"
      cat "$log"
    } >>"$out/failures.log"
  fi
  echo "seeds $seed to $((seed + per_run - 1)): exit $rc, ${last_s}s"
  seed=$((seed + per_run))
  filter='CudaServingStress.RandomWorkloads'
done
rm -f "$out/run.log"

wall=$(($(date +%s) - start))
{
  echo "date $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "gpu $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
  echo "model ${INFERLAB_STRESS_MODEL:-small} context ${INFERLAB_STRESS_CONTEXT:-default}"
  echo "first_seed $first_seed next_seed $seed seeds_per_run $per_run"
  echo "runs $runs failed_runs $failed_runs wall_s $wall"
  # "stress seed N: requests R completed C ... failures F": the sums of every field.
  awk '{ workloads++; if ($NF > 0) { s = $3; sub(":", "", s); failing = failing " " s }
         for (i = 4; i < NF; i += 2) sum[$i] += $(i + 1) }
       END { printf "workloads %d\n", workloads;
             n = split("requests completed rejected ended_early greedy_checked sampled_checked " \
                       "rerun_checked near_ties preemptions prefix_hit_tokens drafts_proposed " \
                       "drafts_accepted failures", keys, " ");
             for (k = 1; k <= n; k++) printf "%s %d\n", keys[k], sum[keys[k]];
             printf "failing_seeds%s\n", failing }' "$totals"
} >"$out/summary.txt"
workloads=$(wc -l <"$totals")
rm -f "$totals"
cat "$out/summary.txt"
if [ "$workloads" -eq 0 ]; then
  echo "no workload ran (no GPU, or the binary has no CUDA backend)" >&2
  exit 1
fi
[ $failed_runs -eq 0 ]
