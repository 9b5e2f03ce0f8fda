#!/usr/bin/env bash
# Throughput of the minimal PyTorch server (validation/torch_server.py) at saturation, the
# workload of the server's soak run (prompts 512, outputs 256, 256 clients in flight):
#   bash validation/torch_server_gpu.sh BIN_DIR [MODEL] [REQUESTS]
set -u
bin=$(cd "$1" && pwd)
model=${2:-llama-3-8b}
requests=${3:-768}
out=${OUT:-/tmp/torch_server_out}
mkdir -p "$out"
source "$(dirname "$0")/gpu_common.sh"
gpu_env "$bin"
ckpt=/tmp/torch_server_ckpt
start=$SECONDS
"$bin/inferlab" init-weights --model "$model" --out "$ckpt" --seed 0 >/dev/null
echo "checkpoint written in $((SECONDS - start)) s" | tee -a "$out/summary.txt"
python3 validation/torch_server.py "$ckpt" --port 8001 >"$out/torch_server.log" 2>&1 &
server=$!
wait_for_line "torch server on" "$out/torch_server.log" $server 300
echo "server up after $((SECONDS - start)) s" | tee -a "$out/summary.txt"
timeout 400 "$bin/inferlab" loadgen --url http://127.0.0.1:8001 --rate 0 --requests "$requests" \
  --max-concurrency 256 --input-dist fixed:512 --output-dist fixed:256 --vocab-size 128000 \
  --seed 2 --timeout-s 380 --format json >"$out/torch_saturation.json" 2>"$out/loadgen.err"
echo "loadgen exit $?" | tee -a "$out/summary.txt"
kill $server
tail -5 "$out/torch_server.log"
python3 -c "import json; d = json.load(open('$out/torch_saturation.json')); print({k: d[k] for k in ('requests', 'completed', 'failed', 'duration_s', 'requests_per_s', 'output_tokens_per_s')})"
