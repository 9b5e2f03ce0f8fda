#!/usr/bin/env bash
# Runs every libFuzzer target of build-sanitize/fuzz/ (preset `sanitize`) on its committed seed
# corpus for a fixed budget each, two at a time. New inputs go to a scratch folder; the corpus
# is only read. A crash, sanitizer report, leak, uncaught exception, an input taking over 10 s or
# needing over 2 GB fails the run; the input is kept in build-sanitize/fuzz-findings/<target>/.
# The mutation seed is fixed (FUZZ_SEED, default 1) so that a CI result can be reproduced: the same
# corpus and seed explore the same inputs in the same order, a faster machine only further along.
# FUZZ_SEED=0 draws a random seed (exploratory runs; docs/UNTRUSTED_INPUTS.md).
# Usage: scripts/fuzz.sh [seconds per target, default 20] [target ...]   (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
seed=${FUZZ_SEED:-1}
shift || true
bin=build-sanitize/fuzz
targets=("$@")
if ((${#targets[@]} == 0)); then
  for t in fuzz/corpus/*/; do targets+=("$(basename "$t")"); done
fi
findings=build-sanitize/fuzz-findings
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

run_one() {  # target: exit status of the fuzzer; its log in $scratch/<target>.log
  local t=$1
  mkdir -p "$scratch/$t" "$findings/$t"
  "$bin/fuzz_$t" "$scratch/$t" "fuzz/corpus/$t" -max_total_time="$seconds" -seed="$seed" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$findings/$t/" \
    >"$scratch/$t.log" 2>&1
}

failed=()
pids=()
names=()
flush() {  # waits for the running pair and reports each
  local i
  for i in "${!pids[@]}"; do
    if wait "${pids[$i]}"; then
      echo "fuzz_${names[$i]}: $(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' \
        "$scratch/${names[$i]}.log" | grep -o '[0-9]*$') runs in ${seconds} s, no finding" >&2
    else
      echo "fuzz_${names[$i]}: FINDING (input in $findings/${names[$i]}/)" >&2
      tail -n 40 "$scratch/${names[$i]}.log" >&2
      failed+=("${names[$i]}")
    fi
  done
  pids=()
  names=()
}
for t in "${targets[@]}"; do
  run_one "$t" &
  pids+=($!)
  names+=("$t")
  ((${#pids[@]} < 2)) || flush
done
flush
if ((${#failed[@]})); then
  echo "inferlab: fuzz findings in: ${failed[*]}" >&2
  exit 1
fi
