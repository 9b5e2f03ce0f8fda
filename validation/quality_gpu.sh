#!/usr/bin/env bash
# Issue 37 on the GPU machine: train the small target model (validation/train_small_llama.py),
# then its held-out perplexity from transformers (validation/perplexity_reference.py) and from
# `inferlab perplexity` in bf16 and in each quantized format, same windows.
#   bash validation/quality_gpu.sh BIN_DIR [MINUTES]     (results under $OUT/quality)
set -u
bin=$(cd "$1" && pwd)
minutes=${2:-3}
out=${OUT:-/tmp/quality_out}/quality
work=/tmp/quality_work
mkdir -p "$out" "$work"
source "$(dirname "$0")/gpu_common.sh"
gpu_env "$bin"
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$out/progress.txt"; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$out/gpu.txt"
python3 -c "import torch, transformers, tokenizers; print(torch.__version__, transformers.__version__, tokenizers.__version__)" >"$out/versions.txt" 2>&1
log "train target, $minutes min"
timeout $((minutes * 60 + 150)) python3 validation/train_small_llama.py --out "$work/target" \
  --role target --minutes "$minutes" --eval-chars 30000 >"$out/train_target.txt" 2>&1
log "train exit $?"
cp "$work/target/train_stats.json" "$out/train_stats_target.json" 2>/dev/null
ckpt=$work/target/model text=$work/target/heldout.txt
ls -la "$ckpt" >"$out/checkpoint_files.txt" 2>&1
log "transformers perplexity"
timeout 120 python3 validation/perplexity_reference.py "$ckpt" "$text" --context 1024 --stride 512 \
  >"$out/ppl_transformers.json" 2>"$out/ppl_transformers.err"
log "transformers exit $?"
run_ppl() {  # NAME FLAGS...
  local name=$1
  shift
  timeout 150 "$bin/inferlab" perplexity --model "$ckpt" --text "$text" --context 1024 \
    --stride 512 --device cuda --format json "$@" >"$out/ppl_$name.json" 2>"$out/ppl_$name.err"
  log "engine $name exit $?: $(head -c 200 "$out/ppl_$name.json")"
}
run_ppl bf16
run_ppl int8 --weights int8
run_ppl fp8 --weights fp8
run_ppl int4 --weights int4
run_ppl kv_fp8 --kv fp8
run_ppl kv_int8 --kv int8
run_ppl w8a8 --weights int8 --activations int8
# int4 solved by GPTQ against the layers' inputs on training text (the CPU reference computes the
# Hessians), beside int4 rounded to nearest written the same way: both GPTQ-format checkpoints.
for method in rtn gptq; do
  calib=()
  [ $method = gptq ] && calib=(--calibration "$work/target/calibration.txt" --calibration-tokens 2048)
  timeout 900 "$bin/inferlab" quantize --model "$ckpt" --out "$work/int4_$method" --weights int4 \
    "${calib[@]}" --format json >"$out/quantize_int4_$method.json" 2>"$out/quantize_int4_$method.err"
  log "quantize int4 $method exit $?"
  timeout 150 "$bin/inferlab" perplexity --model "$work/int4_$method" --text "$text" \
    --context 1024 --stride 512 --device cuda --format json >"$out/ppl_int4_$method.json" \
    2>"$out/ppl_int4_$method.err"
  log "engine int4 $method exit $?: $(head -c 200 "$out/ppl_int4_$method.json")"
done
log "done"
