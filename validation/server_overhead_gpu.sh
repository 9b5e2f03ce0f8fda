#!/usr/bin/env bash
# The same request stream on the engine in-process (`inferlab serve --executor engine`, no HTTP)
# as the server's 25% load of validation/server_loads_gpu.sh, and the saturated run with its
# per-iteration CSV: what the HTTP path adds to TTFT, and where the simulator's iteration prices
# part from the engine's at saturation.
#   bash validation/server_overhead_gpu.sh BIN_DIR RATE_25 [MODEL]
set -u
bin=$(cd "$1" && pwd)
rate=$2
model=${3:-llama-3-8b}
out=${OUT:-/tmp/server_overhead_out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$bin:${LD_LIBRARY_PATH:-}
export INFERLAB_DATA_DIR=$PWD/data INFERLAB_TOKENIZERS_DIR=$PWD/third_party/tokenizers
common=(serve --model "$model" --hardware h100-sxm --executor engine --device cuda --framework inferlab
        --cost calibrated --cuda-graphs on --policy chunked --max-num-seqs 256
        --max-num-batched-tokens 2048 --kv-tokens 262144 --input-dist lognormal:512,0.6
        --output-dist lognormal:128,0.6 --seed 3 --format json)
timeout 200 "$bin/inferlab" "${common[@]}" --rate "$rate" --requests 300 >"$out/engine_25.json"
echo "engine 25% exit $?"
timeout 200 "$bin/inferlab" "${common[@]}" --rate 0 --requests 800 \
  --iterations-csv "$out/engine_capacity_iterations.csv" >"$out/engine_capacity.json"
echo "engine capacity exit $?"
