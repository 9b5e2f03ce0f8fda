#!/usr/bin/env bash
# The OpenAI-compatible server on the GPU under `inferlab loadgen` (run by the device tool):
#   bash validation/server_gpu_run.sh BIN_DIR [MODEL] [SAT_REQUESTS]
# BIN_DIR holds inferlab (and the shared libraries it needs that the GPU machine lacks).
# Writes $OUT/light.json, $OUT/saturation.json (loadgen summaries) and $OUT/logs.tgz: the
# server's log, its /metrics at the end, and RSS / GPU memory / finished requests every 5 s.
set -u
bin=$(cd "$1" && pwd)
model=${2:-llama-3-8b}
sat_requests=${3:-2000}
out=${OUT:-/tmp/server_gpu_out}
logs=$out/logs
mkdir -p "$logs"
source "$(dirname "$0")/gpu_common.sh"
gpu_env "$bin"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv >"$logs/gpu.csv"
date -u +%Y-%m-%dT%H:%M:%SZ >"$logs/date.txt"
if [ -x "$bin/inferlab_tests" ]; then
  timeout 120 "$bin/inferlab_tests" --gtest_filter='Cuda*' >"$logs/cuda_tests.log" 2>&1
  echo "cuda tests exit $?" >>"$logs/summary.txt"
fi
url=http://127.0.0.1:8000
"$bin/inferlab" server --model "$model" --device cuda --port 8000 --max-num-seqs 256 \
  --max-num-batched-tokens 8192 --cuda-graphs on >"$logs/server.out" 2>"$logs/server.err" &
server=$!
wait_for_line "serving" "$logs/server.err" $server 300
echo "server up after $SECONDS s: $(head -1 "$logs/server.err")" >>"$logs/summary.txt"
metric() {  # the sum of a Prometheus metric's samples
  python3 -c "
import sys, urllib.request
text = urllib.request.urlopen('$url/metrics', timeout=5).read().decode()
print(sum(float(l.split()[-1]) for l in text.splitlines() if l.startswith('$1')))" 2>/dev/null
}
(
  echo "time_s,rss_kb,gpu_mib,finished,generated_tokens"
  while kill -0 $server 2>/dev/null; do
    rss=$(awk '/VmRSS/ {print $2}' /proc/$server/status 2>/dev/null)
    gpu=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1)
    echo "$SECONDS,$rss,$gpu,$(metric inferlab:request_success_total),$(metric inferlab:generation_tokens_total)"
    sleep 5
  done
) >"$logs/resources.csv" &
sampler=$!
# Light load: lognormal lengths, Poisson arrivals.
timeout 120 "$bin/inferlab" loadgen --url $url --rate 2 --requests 60 --input-dist lognormal:512,0.5 \
  --output-dist lognormal:128,0.5 --vocab-size 128000 --seed 1 --format json \
  --requests-csv "$logs/light_requests.csv" >"$out/light.json" 2>"$logs/light.err"
echo "light exit $?" >>"$logs/summary.txt"
# Saturation: 256 concurrent streaming clients, prompts 512, outputs 256, for about 2 minutes.
timeout 330 "$bin/inferlab" loadgen --url $url --rate 0 --requests "$sat_requests" \
  --max-concurrency 256 --input-dist fixed:512 --output-dist fixed:256 --vocab-size 128000 \
  --seed 2 --timeout-s 300 --format json --requests-csv "$logs/sat_requests.csv" \
  >"$out/saturation.json" 2>"$logs/saturation.err"
echo "saturation exit $?" >>"$logs/summary.txt"
python3 -c "import urllib.request; print(urllib.request.urlopen('$url/metrics', timeout=5).read().decode())" \
  >"$logs/metrics_end.txt" 2>&1
kill -TERM $server
wait $server
echo "server exit $? after SIGTERM" >>"$logs/summary.txt"
kill $sampler 2>/dev/null
cp "$out"/*.json "$logs/" 2>/dev/null
tar czf "$out/logs.tgz" -C "$out" logs
cat "$logs/summary.txt"
