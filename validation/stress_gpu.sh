#!/usr/bin/env bash
# The serving stress harness on the GPU (tests/engine/cuda/serving_stress_cuda_test.cpp): random
# workloads through serve's scheduler and the engine, every request checked against itself alone.
#   bash validation/stress_gpu.sh BIN_DIR [MINUTES] [FIRST_SEED]
# from the repository's root, BIN_DIR holding inferlab_tests (validation/make_gpu_bundle.sh).
# Runs the test binary over fresh seeds from FIRST_SEED (default 1000: past the fixed ones) until
# MINUTES (default 10) have passed: the first run is CudaServingStress.* (the long-context case of
# llama-3.2-1b's shape too), later ones CudaServingStress.RandomWorkloads. A device command lasts at
# most 10 minutes, so each run of the binary starts no seed after RUN_BUDGET_S (default 300;
# INFERLAB_STRESS_BUDGET_S) and ends between cases; one still busy CASE_LIMIT_S (default 200) past
# its budget is killed as hung, and no run starts that could end past the deadline. To go on
# where a session stopped, pass the "next_seed" of its summary as FIRST_SEED.
# INFERLAB_STRESS_MODEL and INFERLAB_STRESS_CONTEXT pass to the tests (another model shape, its
# context). Writes under $OUT (default /tmp/stress_gpu_out): summary.txt (seeds, workloads,
# requests completed and rejected, near-ties, failures, wall time, the GPU) and failures.log (each
# failing run's log); exits 1 on any failure or when no workload ran, 2 on bad arguments.
set -u
if [ $# -lt 1 ] || [ ! -x "$1/inferlab_tests" ]; then
  echo "usage: $0 BIN_DIR [MINUTES] [FIRST_SEED]  (BIN_DIR/inferlab_tests must exist)" >&2
  exit 2
fi
bin=$(cd "$1" && pwd)
minutes=${2:-10}
seed=${3:-1000}
run_budget_s=${RUN_BUDGET_S:-300}
case_limit_s=${CASE_LIMIT_S:-200}
out=${OUT:-/tmp/stress_gpu_out}
mkdir -p "$out"
source "$(dirname "$0")/gpu_common.sh"
gpu_env "$bin"

start=$(date +%s)
deadline=$((start + minutes * 60))
first_seed=$seed
runs=0 failed_runs=0 hung=""
totals="$out/totals.txt" log="$out/run.log"  # every case's line, summed at the end
: >"$totals"
: >"$out/failures.log"
filter='CudaServingStress.*'
while true; do
  left=$((deadline - $(date +%s)))
  budget=$((left - case_limit_s < run_budget_s ? left - case_limit_s : run_budget_s))
  least=$((run_budget_s < 30 ? run_budget_s : 30))
  if [ $budget -lt $least ]; then
    [ $runs -gt 0 ] && break
    budget=$least  # the first run always starts
  fi
  INFERLAB_STRESS_SEEDS="$seed:1000000" INFERLAB_STRESS_BUDGET_S=$budget \
    timeout --signal=KILL $((budget + case_limit_s)) \
    "$bin/inferlab_tests" --gtest_filter="$filter" --gtest_color=no >"$log" 2>&1
  rc=$?
  runs=$((runs + 1))
  grep -E '^stress (seed|case) ' "$log" >>"$totals"
  last=$(grep '^stress seed ' "$log" | tail -1 | awk '{ sub(":", "", $3); print $3 }')
  if [ $rc -ne 0 ]; then
    failed_runs=$((failed_runs + 1))
    { echo "=== from seed $seed, filter $filter: exit $rc"; cat "$log"; } >>"$out/failures.log"
  fi
  echo "seeds $seed to ${last:-none}: exit $rc"
  if [ -z "$last" ] && [ $rc -ne 137 ]; then
    echo "no workload ran (no GPU, or the binary has no CUDA backend)" >&2
    break
  fi
  seed=$((${last:-$((seed - 1))} + 1))
  if [ $rc -eq 137 ]; then  # killed: the case after the last one printed did not end
    hung="$hung $seed"
    seed=$((seed + 1))
  fi
  filter='CudaServingStress.RandomWorkloads'
done
rm -f "$log"

wall=$(($(date +%s) - start))
{
  echo "date $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "gpu $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
  echo "model ${INFERLAB_STRESS_MODEL:-small} context ${INFERLAB_STRESS_CONTEXT:-default}"
  echo "first_seed $first_seed next_seed $seed"
  echo "runs $runs failed_runs $failed_runs wall_s $wall"
  echo "hung_seeds$hung"
  # "stress seed N: requests R completed C ... failures F": the sums of every field.
  awk '{ workloads++; if ($NF > 0) { s = $3; sub(":", "", s); failing = failing " " s }
         for (i = 4; i < NF; i += 2) {
           if ($i == "near_tie_peak") { if ($(i + 1) > peak) peak = $(i + 1) } else sum[$i] += $(i + 1)
         } }
       END { printf "workloads %d\n", workloads;
             n = split("requests completed rejected ended_early greedy_checked sampled_checked " \
                       "rerun_checked near_ties preemptions prefix_hit_tokens drafts_proposed " \
                       "drafts_accepted failures", keys, " ");
             for (k = 1; k <= n; k++) printf "%s %d\n", keys[k], sum[keys[k]];
             printf "near_tie_peak %.3f\n", peak;
             printf "failing_seeds%s\n", failing }' "$totals"
} >"$out/summary.txt"
workloads=$(wc -l <"$totals")
rm -f "$totals"
cat "$out/summary.txt"
[ "$workloads" -gt 0 ] && [ $failed_runs -eq 0 ]
