#!/usr/bin/env bash
# SIGTERM at random points under load on the GPU (issue 34: 2 of 19 SIGTERMs killed the server by
# the signal instead of draining it), run by the device tool:
#   bash validation/server_sigterm_gpu.sh BIN_DIR [MODEL] [TRIALS] [SEED] [DEVICE]
# BIN_DIR holds inferlab (validation/make_gpu_bundle.sh). MODEL: a shipped name, random weights
# (default llama-3.2-1b; llama-3-8b takes longer to start). TRIALS default 10, SEED default 34.
# DEVICE default auto, the server's default and the failing path: resolving it asks CUDA for its
# devices, which starts the driver's threads; before the fix they started before the signals
# were blocked, kept SIGTERM unblocked, and a SIGTERM the kernel handed to one of them killed
# the server (H200, 2026-11-27: 6 of 6 with the old binary, thread cuda00001400006).
# Each trial starts `inferlab server --device DEVICE`, records every thread's blocked signals
# (/proc/PID/task/*/status: the thread waiting for the signal shows it unblocked while it waits;
# any other is one the kernel may kill the server through), puts it under
# load (8 streaming clients back to back, validation/server_sigterm_clients.py, beside a
# closed-loop `inferlab loadgen` of 32), waits a random 1 to 20 s (MAX_DELAY_MS), scrapes /metrics in every
# other trial (the H200 failure came right after a scrape), sends SIGTERM and checks:
# exit 0, "inferlab: shutting down" and "inferlab: server stopped" in its log, no request it
# answered with 200 cut short, and no thread but the waiting one with SIGTERM unblocked. Writes $OUT/sigterm_summary.txt (a line a trial, then the
# verdict) and $OUT/sigterm_logs.tgz.
set -u
bin=$(cd "$1" && pwd)
model=${2:-llama-3.2-1b}
trials=${3:-10}
RANDOM=${4:-34}
device=${5:-auto}
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-/tmp/server_sigterm_out}
logs=$out/sigterm_logs
mkdir -p "$logs"
source "$here/gpu_common.sh"
gpu_env "$bin"
summary=$out/sigterm_summary.txt
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  echo "model $model, --device $device, $trials trials"
} >"$summary"
port=8000
url=http://127.0.0.1:$port
passed=0
for trial in $(seq "$trials"); do
  t=$logs/trial_$trial
  mkdir -p "$t"
  # shellcheck disable=SC2086  # SERVER_FLAGS: more server flags (e.g. --gemm-warmup off)
  "$bin/inferlab" server --model "$model" --device "$device" --port $port --max-num-seqs 64 \
    --max-num-batched-tokens 2048 --kv-tokens 131072 --http-threads 128 ${SERVER_FLAGS:-} \
    >"$t/server.out" 2>"$t/server.err" &
  server=$!
  if ! wait_for_line "serving" "$t/server.err" $server 300; then
    echo "trial $trial: FAIL the server did not start: $(tail -3 "$t/server.err" | tr '\n' ' ')" >>"$summary"
    kill -KILL $server 2>/dev/null
    wait $server 2>/dev/null
    continue
  fi
  # Every thread: its name and blocked-signal mask (SIGTERM is bit 15: mask & 0x4000).
  unblocked=0
  for task in /proc/$server/task/*; do
    blk=$(awk '/^SigBlk/ {print $2}' "$task/status" 2>/dev/null)
    [ -n "$blk" ] || continue
    echo "$(cat "$task/comm" 2>/dev/null) $blk" >>"$t/threads.txt"
    (((0x$blk & 0x4000) == 0)) && unblocked=$((unblocked + 1))
  done
  python3 "$here/server_sigterm_clients.py" $port "$model" 8 256 "$t/clients.json" \
    >"$t/clients.txt" 2>&1 &
  clients=$!
  "$bin/inferlab" loadgen --url $url --rate 0 --requests 100000 --max-concurrency 32 \
    --input-dist fixed:512 --output-dist fixed:128 --vocab-size 128000 --seed $trial \
    --timeout-s 300 --format json >"$t/loadgen.json" 2>"$t/loadgen.err" &
  loadgen=$!
  delay_ms=$((1000 + RANDOM % (${MAX_DELAY_MS:-20000} - 999)))
  sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
  scraped=no
  if ((trial % 2 == 0)); then
    python3 -c "import urllib.request; print(urllib.request.urlopen('$url/metrics', timeout=10).read().decode())" \
      >"$t/metrics.txt" 2>&1 && scraped=yes
  fi
  kill -TERM $server
  # A drain finishes what was accepted: at most a few hundred requests' tails.
  for _ in $(seq 600); do kill -0 $server 2>/dev/null || break; sleep 0.5; done
  if kill -0 $server 2>/dev/null; then
    kill -KILL $server
    echo "(killed: no exit 300 s after SIGTERM)" >>"$t/server.err"
  fi
  wait $server
  code=$?
  kill $loadgen 2>/dev/null
  wait $loadgen 2>/dev/null
  wait $clients
  fates=$(cat "$t/clients.txt")
  verdict=PASS
  [ $code -eq 0 ] || verdict=FAIL
  grep -q "inferlab: shutting down" "$t/server.err" || verdict=FAIL
  grep -q "inferlab: server stopped" "$t/server.err" || verdict=FAIL
  case "$fates" in *cut=*) verdict=FAIL ;; esac
  ((unblocked <= 1)) || verdict=FAIL  # one: the thread waiting for it
  [ $verdict = PASS ] && passed=$((passed + 1))
  echo "trial $trial: $verdict exit $code after SIGTERM at ${delay_ms} ms, /metrics scraped $scraped," \
    "threads with SIGTERM unblocked $unblocked (1: the waiting one) of $(wc -l <"$t/threads.txt"),"\
    "clients: $fates" >>"$summary"
done
echo "passed $passed of $trials" >>"$summary"
tar czf "$out/sigterm_logs.tgz" -C "$out" sigterm_logs
cat "$summary"
