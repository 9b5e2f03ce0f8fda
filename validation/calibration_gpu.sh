#!/usr/bin/env bash
# The measurements the predictor's open gaps ask for, on one GPU (issues 37, 38, 39, 40):
#   bash validation/calibration_gpu.sh [BIN_DIR] [STAGES]     (BIN_DIR default build/gpurun)
# STAGES, comma-separated, in this order (default tests,moe,small):
#   tests   the GPU tests (CUDA kernels against the CPU reference, the backend's logits, the
#           probe's host file): inferlab_tests --gtest_filter=$TEST_FILTER
#   moe     validation/moe_reference.py: the CPU reference's mixture of experts against
#           transformers' Mixtral in fp32 (CPU only; runs beside `tests`)
#   small   bench --profile (standard grid, CUDA graphs on, bf16) of the trained-model shapes of
#           issue 37 with random weights (validation/configs/small-llama-{target-12l,draft-2l}.json,
#           the shapes train_small_llama.py trains, a longer position limit so the grid's contexts
#           fit), and `bench --speculative ngram,k=K` of the target at context 270 for K = 1-4:
#           the verification of 2-5 tokens beside a decode step, each width measured
#   host    validation/host_gpu.sh (the host rule's measurements, ~3 minutes; its own $OUT/host)
#   int4    bench --profile of Llama 3 8B, CUDA graphs on, int4 weights (the engine calibration
#           after the int4 GEMV's change); int4kv the same with an fp8 KV cache; fp8 and w8a8 the
#           same with fp8 weights and with W8A8 (after their staging's change, MEASUREMENTS §55);
#           bf16 the same with bf16 weights (after the streaming GEMV's full-stage path, §57)
#   small1  bench --profile of the 12-layer shape alone (the profile's model field: the path)
#   pdlfp8  validation/engine_ab.py: fp8 8B decode at batch 1 with the streaming GEMV's PDL off,
#           early and late (two rounds)
#   blind   bench --profile (standard grid, CUDA graphs on, bf16) of widths no calibration has
#           seen on the H200: Llama 3.2 3B (3072) and Qwen2.5 1.5B (1536; QKV bias, tied LM head)
#   syncpass `bench --speculative` (its host wall beside the device time of each pass) of the
#           1B and the 8B at context 1024 (prompt lookup, k = 4), and of the 12-layer shape with
#           the 2-layer one as its draft at context 270: what a pass the host waits for costs
#   rounds  `bench --speculative draft=...,k=4`'s whole rounds (k draft steps, then the
#           verification) beside each pass alone: the 12-layer shape with the 2-layer draft at
#           context 270, and Llama 3 8B with Llama 3.2 1B as its draft at 1024
#   prefillcompile  validation/engine_speed.py: Llama 3 8B prefill of 2048 tokens, the engine
#           beside PyTorch + CUDA graphs and torch.compile (gpt-fast's recipe; its compilation
#           takes minutes: run it last, under PREFILL_COMPILE_TIMEOUT seconds, default 420)
# Results under $OUT/calibration (default /tmp/calibration_gpu_out/calibration; host's in its
# host/ folder); every part under
# `timeout`, a failed part logged and the rest run. Exit 2 without a GPU or the binary.
set -u
cd "$(dirname "$0")/.." || exit 2
bin=${1:-build/gpurun}
stages=${2:-tests,moe,small}
root=${OUT:-/tmp/calibration_gpu_out}
out=$root/calibration
mkdir -p "$out"
if [ ! -x "$bin/inferlab" ] && [ "$bin" = build/gpurun ] && [ -f build/gpurun.tar.xz ]; then
  tar xJf build/gpurun.tar.xz -C build
fi
if [ ! -x "$bin/inferlab" ]; then
  echo "calibration_gpu.sh: error: no $bin/inferlab; build the bundle (validation/make_gpu_bundle.sh)" >&2
  exit 2
fi
bin=$(cd "$bin" && pwd)
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "calibration_gpu.sh: error: no NVIDIA GPU is visible (nvidia-smi -L failed)" >&2
  exit 2
fi
# shellcheck source=gpu_common.sh
source validation/gpu_common.sh
gpu_env "$bin"
export INFERLAB_TEST_BINARY=$bin/inferlab
has() { [[ ",$stages," == *",$1,"* ]]; }
log() { echo "[calibration_gpu $(date -u +%H:%M:%S)] $*" | tee -a "$out/progress.txt"; }
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv
  python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)" 2>&1
} >"$out/gpu.txt"

moe_pid=
if has moe; then
  (timeout 240 python3 validation/moe_reference.py "$bin/inferlab" "$out/moe.json" \
    >"$out/moe.log" 2>&1; echo "exit $?" >>"$out/moe.log") &
  moe_pid=$!
fi
if has tests; then
  filter=${TEST_FILTER:-'Cuda*:Gpu*:StreamGemv*:GemvPlan*:TensorParallelCuda*:-CudaServingStress*'}
  timeout 300 "$bin/inferlab_tests" --gtest_filter="$filter" >"$out/gpu_tests.txt" 2>&1
  log "tests exit $? ($(grep -E '^\[  (PASSED|FAILED) ' "$out/gpu_tests.txt" | tr '\n' ' '))"
fi
[ -n "$moe_pid" ] && wait "$moe_pid" && log "moe: $(tail -2 "$out/moe.log" | tr '\n' ' ')"

if has small; then
  for m in target-12l draft-2l; do
    timeout 150 "$bin/inferlab" bench --profile --model "validation/configs/small-llama-$m.json" \
      --device cuda --repeats 3 --warmup 1 --cuda-graphs on --format json \
      >"$out/profile_small-llama-$m.json" 2>"$out/profile_small-llama-$m.err"
    log "profile small-llama-$m exit $?"
  done
  for k in 1 2 3 4; do
    timeout 90 "$bin/inferlab" bench --model validation/configs/small-llama-target-12l.json \
      --device cuda --input 264 --repeats 30 --cuda-graphs on --speculative "ngram,k=$k" \
      --format json >"$out/spec_costs_ngram_k$k.json" 2>"$out/spec_costs_ngram_k$k.err"
    log "bench --speculative ngram,k=$k exit $?"
  done
fi
if has host; then
  OUT=$out timeout 560 bash validation/host_gpu.sh "$bin" >"$out/host_gpu.log" 2>&1
  log "host exit $?"
fi
# profile_8b NAME BENCH_ARGS...: bench --profile of Llama 3 8B (CUDA graphs on) in one format.
profile_8b() {
  local name=$1
  shift
  timeout 200 "$bin/inferlab" bench --profile --model llama-3-8b --device cuda --repeats 3 \
    --warmup 1 --cuda-graphs on "$@" --format json \
    >"$out/profile_llama-3-8b_$name.json" 2>"$out/profile_llama-3-8b_$name.err"
  log "profile llama-3-8b $name exit $?"
}
if has int4; then profile_8b int4 --weights int4; fi
if has bf16; then profile_8b bf16; fi
if has int4kv; then profile_8b int4_kv_fp8 --weights int4 --kv fp8; fi
if has fp8; then profile_8b fp8 --weights fp8; fi
if has w8a8; then profile_8b w8a8 --weights int8 --activations int8; fi
if has small1; then
  timeout 150 "$bin/inferlab" bench --profile --model validation/configs/small-llama-target-12l.json \
    --device cuda --repeats 3 --warmup 1 --cuda-graphs on --format json \
    >"$out/profile_small-llama-target-12l_again.json" 2>"$out/profile_small-llama-target-12l_again.err"
  log "profile small-llama-target-12l again exit $?"
fi
if has pdlfp8; then
  timeout 200 python3 validation/engine_ab.py "$bin/inferlab" "$out/pdl_fp8.json" \
    INFERLAB_ENGINE_GEMV_PDL=off,early,late llama-3-8b:decode:1:1024:fp8 2 \
    >"$out/pdl_fp8.log" 2>&1
  log "pdl fp8 exit $?"
fi
if has blind; then
  for m in llama-3.2-3b qwen2.5-1.5b; do
    timeout 200 "$bin/inferlab" bench --profile --model "$m" --device cuda --repeats 3 --warmup 1 \
      --cuda-graphs on --format json >"$out/profile_blind_$m.json" 2>"$out/profile_blind_$m.err"
    log "profile (blind) $m exit $?"
  done
fi
if has syncpass; then
  for m in llama-3.2-1b llama-3-8b; do
    timeout 120 "$bin/inferlab" bench --model "$m" --device cuda --input 1024 --repeats 50 \
      --cuda-graphs on --speculative ngram,k=4 --format json \
      >"$out/sync_pass_$m.json" 2>"$out/sync_pass_$m.err"
    log "sync pass $m exit $?"
  done
  timeout 120 "$bin/inferlab" bench --model validation/configs/small-llama-target-12l.json \
    --device cuda --input 270 --repeats 50 --cuda-graphs on \
    --speculative draft=validation/configs/small-llama-draft-2l.json,k=4 --format json \
    >"$out/sync_pass_small.json" 2>"$out/sync_pass_small.err"
  log "sync pass small exit $?"
fi
if has rounds; then
  timeout 120 "$bin/inferlab" bench --model validation/configs/small-llama-target-12l.json \
    --device cuda --input 270 --repeats 50 --cuda-graphs on \
    --speculative draft=validation/configs/small-llama-draft-2l.json,k=4 --format json \
    >"$out/rounds_small.json" 2>"$out/rounds_small.err"
  log "rounds small exit $?"
  timeout 200 "$bin/inferlab" bench --model llama-3-8b --device cuda --input 1024 --repeats 30 \
    --cuda-graphs on --speculative draft=llama-3.2-1b,k=4 --format json \
    >"$out/rounds_8b_1b.json" 2>"$out/rounds_8b_1b.err"
  log "rounds 8b+1b exit $?"
fi
if has prefillcompile; then
  ENGINE_SPEED_CASES=llama-3-8b:prefill:1:2048 ENGINE_SPEED_COMPILE=1 \
    INFERLAB_BENCH_EXTRA="--cuda-graphs on" timeout "${PREFILL_COMPILE_TIMEOUT:-420}" \
    python3 validation/engine_speed.py "$bin/inferlab" "$out/engine_speed_prefill_compile.json" \
    >"$out/engine_speed_prefill_compile.log" 2>&1
  log "prefill compile exit $?"
fi
log done
