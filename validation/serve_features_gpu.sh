#!/usr/bin/env bash
# The serving executor's preemption by swap and its draft-model speculation on the GPU
# (`inferlab serve --executor engine`, in process), each beside its counterpart on the same
# request stream: swap against recompute in a small KV pool that forces preemptions, and a draft
# model (Llama 3.2 1B for Llama 3 8B, random weights: the acceptance means nothing) against
# n-gram drafting and no speculation. validation/serve_features_vs_sim.py runs the simulator on
# the same streams.
#   bash validation/serve_features_gpu.sh BIN_DIR
set -u
bin=$(cd "$1" && pwd)
out=${OUT:-/tmp/serve_features_out}
mkdir -p "$out"
source "$(dirname "$0")/gpu_common.sh"
gpu_env "$bin"
common=(serve --model llama-3-8b --hardware h200 --executor engine --device cuda
        --framework inferlab --cost calibrated --cuda-graphs on --policy chunked
        --max-num-seqs 256 --max-num-batched-tokens 2048 --input-dist lognormal:512,0.6
        --output-dist lognormal:128,0.6 --seed 3 --format json)
# Preemption: 400 requests at once into 16384 KV tokens (about 25 sequences' worth).
for mode in recompute swap; do
  timeout 150 "$bin/inferlab" "${common[@]}" --kv-tokens 16384 --rate 0 --requests 400 \
    --preemption $mode >"$out/preempt_$mode.json" 2>"$out/preempt_$mode.err"
  echo "preempt $mode exit $?"
done
# Speculation at a light load (2 requests/s), k = 4.
for spec in none draft=ngram,k=4 draft=llama-3.2-1b,k=4; do
  name=${spec%%,*}
  name=${name#draft=}
  extra=()
  [ "$spec" != none ] && extra=(--speculative "$spec")
  timeout 150 "$bin/inferlab" "${common[@]}" --kv-tokens 262144 --rate 2 --requests 80 \
    "${extra[@]}" >"$out/spec_$name.json" 2>"$out/spec_$name.err"
  echo "speculative $spec exit $?"
done
