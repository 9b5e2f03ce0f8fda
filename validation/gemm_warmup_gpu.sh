#!/usr/bin/env bash
# The engine's GEMM warm-up (serve/server --gemm-warmup, MEASUREMENTS §26) on the GPU:
#   bash validation/gemm_warmup_gpu.sh BIN_DIR
# 1. `inferlab serve --executor engine` in process on the request streams of the server's 25% and
#    90% loads (validation/server_loads_gpu.sh's workload at 2026-11-25's rates, 300 requests),
#    with the warm-up on and off, each iteration's time in $OUT/iterations_{on,off}_RATE.csv and
#    the summaries in $OUT/serve_{on,off}_RATE.json (serving_iteration_gap.py reads them);
# 2. the server's start-up time (weights drawn, GEMMs warmed) on its defaults (8192 batched
#    tokens) with the warm-up on and off: $OUT/startup_{on,off}.txt.
set -u
bin=$(cd "$1" && pwd)
out=${OUT:-/tmp/gemm_warmup_out}
mkdir -p "$out"
source "$(dirname "$0")/gpu_common.sh"
gpu_env "$bin"
date -u +%Y-%m-%dT%H:%M:%SZ >"$out/date.txt"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$out/gpu.csv"
for rate in 10.902 39.246; do
  for warm in on off; do
    "$bin/inferlab" serve --model llama-3-8b --executor engine --device cuda --policy chunked \
      --max-num-seqs 256 --max-num-batched-tokens 2048 --kv-tokens 262144 --cuda-graphs on \
      --gemm-warmup $warm --rate $rate --requests 300 --input-dist lognormal:512,0.6 \
      --output-dist lognormal:128,0.6 --seed 3 --format json \
      --iterations-csv "$out/iterations_${warm}_$rate.csv" \
      >"$out/serve_${warm}_$rate.json" 2>"$out/serve_${warm}_$rate.err"
    echo "serve rate $rate warm-up $warm exit $?" >>"$out/summary.txt"
  done
done
for warm in on off; do
  "$bin/inferlab" server --model llama-3-8b --device cuda --port 8001 --gemm-warmup $warm \
    >/dev/null 2>"$out/startup_$warm.txt" &
  server=$!
  wait_for_line "serving" "$out/startup_$warm.txt" $server 300
  kill -TERM $server
  wait $server
  echo "server start-up warm-up $warm exit $?" >>"$out/summary.txt"
done
cat "$out/summary.txt" "$out"/startup_*.txt
