#!/usr/bin/env bash
# The server under three Poisson loads relative to its measured capacity, for the comparison
# with `inferlab serve --executor sim` on the same request streams (validation/server_vs_sim.py):
#   bash validation/server_loads_gpu.sh BIN_DIR [MODEL] [REQUESTS_PER_LOAD]
# Server: chunked prefill, 256 sequences, 2048 batched tokens, KV pool of 262144 tokens, CUDA
# graphs. Capacity: every request at time 0, at most 256 in flight (requests/s completed).
# Loads: 25%, 50% and 90% of it. Lengths lognormal (prompt mean 512, output mean 128, sigma 0.6),
# seed 3. Writes $OUT/capacity.json, $OUT/load_{25,50,90}.json and $OUT/logs.tgz.
# SERVER_FLAGS adds flags to the server's (e.g. SERVER_FLAGS="--gemm-warmup off" for an A/B).
set -u
bin=$(cd "$1" && pwd)
model=${2:-llama-3-8b}
per_load=${3:-300}
out=${OUT:-/tmp/server_loads_out}
logs=$out/logs
mkdir -p "$logs"
source "$(dirname "$0")/gpu_common.sh"
gpu_env "$bin"
date -u +%Y-%m-%dT%H:%M:%SZ >"$logs/date.txt"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$logs/gpu.csv"
url=http://127.0.0.1:8000
"$bin/inferlab" server --model "$model" --device cuda --port 8000 --max-num-seqs 256 \
  --max-num-batched-tokens 2048 --kv-tokens 262144 --cuda-graphs on ${SERVER_FLAGS:-} \
  >"$logs/server.out" 2>"$logs/server.err" &
server=$!
wait_for_line "serving" "$logs/server.err" $server 300
workload=(--input-dist lognormal:512,0.6 --output-dist lognormal:128,0.6 --seed 3
          --vocab-size 128000 --format json)
timeout 150 "$bin/inferlab" loadgen --url $url --rate 0 --requests 800 --max-concurrency 256 \
  "${workload[@]}" >"$out/capacity.json" 2>"$logs/capacity.err"
echo "capacity exit $?" >>"$logs/summary.txt"
capacity=$(python3 -c "import json; print(json.load(open('$out/capacity.json'))['requests_per_s'])")
echo "capacity $capacity req/s" >>"$logs/summary.txt"
for share in 25 50 90; do
  rate=$(python3 -c "print(round($capacity * $share / 100, 3))")
  timeout 150 "$bin/inferlab" loadgen --url $url --rate "$rate" --requests "$per_load" \
    "${workload[@]}" --requests-csv "$logs/load_${share}_requests.csv" \
    >"$out/load_$share.json" 2>"$logs/load_$share.err"
  echo "load $share% rate $rate exit $?" >>"$logs/summary.txt"
done
kill -TERM $server
wait $server
echo "server exit $?" >>"$logs/summary.txt"
cp "$out"/*.json "$logs/"
tar czf "$out/logs.tgz" -C "$out" logs
cat "$logs/summary.txt"
