#!/usr/bin/env bash
# The engine's GPU checks in device calls (build here, carry the binaries and the tokenizers):
#   bash validation/engine_gpu_run.sh BIN_DIR [STAGES]
# BIN_DIR holds inferlab and inferlab_tests (stripped copies of build/inferlab and
# build/tests/inferlab_tests); STAGES is a comma list of (default: tests,logits,speed):
#   tests         GPU tests (kernels, backend, graphs, sampling vs the CPU reference), compute-
#                 sanitizer memcheck on a subset, the "does not fit" refusal
#   logits        validation/engine_logits.py (transformers at 1B/1.5B/3B/8B, noise floor, greedy)
#   speed         validation/engine_speed.py (bench vs PyTorch + CUDA graphs)
#   speed_graphs  the same with the engine's --cuda-graphs on
#   serve         validation/serve_engine_vs_sim.py (engine vs simulator, same trace, 3 loads)
#   speculative   bench --speculative: 8B target, 1B draft or n-gram, k = 4, context 1024
#   ablation      bench_engine_gemv (GEMV vs cuBLASLt) and bench --ablation for 8B and 1B
# Each stage writes under $OUT and appends its exit code to $OUT/summary.txt. Wall times on an
# H100 (2026-11-23): tests ≈ 60 s, logits ≈ 150 s, speed ≈ 120 s.
set -u
BIN=${1:-build/gpurun}
STAGES=${2:-tests,logits,speed}
export INFERLAB_DATA_DIR=$PWD/data INFERLAB_TOKENIZERS_DIR=$PWD/third_party/tokenizers
WORK=/tmp/inferlab_ckpt
mkdir -p "$WORK" "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/device.txt"
date -u +%FT%TZ >> "$OUT/device.txt"
has() { [[ ",$STAGES," == *",$1,"* ]]; }

if has logits; then  # checkpoints written on the host's cores while the GPU tests run
  for m in llama-3.2-1b qwen2.5-1.5b llama-3.2-3b llama-3-8b; do
    ( "$BIN/inferlab" init-weights --model $m --out "$WORK/$m" --seed 1 > "$OUT/init_$m.txt" 2>&1 ) &
  done
fi
if has tests; then
  timeout 60 "$BIN/inferlab_tests" --gtest_filter='CudaSampling*' > "$OUT/gpu_tests_sampling.txt" 2>&1
  rc=$?
  echo "gpu sampling tests rc=$rc" | tee -a "$OUT/summary.txt"
  # If the GPU sampler fails its tests, the runs below sample on the host (and say so).
  [ $rc -ne 0 ] && export INFERLAB_ENGINE_HOST_SAMPLING=1 && echo "host sampling" >> "$OUT/summary.txt"
  timeout 150 "$BIN/inferlab_tests" --gtest_filter='Cuda*:-CudaSampling*' > "$OUT/gpu_tests.txt" 2>&1
  echo "gpu tests rc=$?" | tee -a "$OUT/summary.txt"
  timeout 90 compute-sanitizer --tool memcheck "$BIN/inferlab_tests" \
    --gtest_filter='CudaLayerKernels.*:CudaBackend.Qwen*:CudaBackend.Graph*' > "$OUT/sanitizer.txt" 2>&1
  echo "sanitizer rc=$?" | tee -a "$OUT/summary.txt"
  # Shared-memory races and barrier misuse in the engine's kernels (issue 21; the GEMV kernel
  # uses no shared memory or barriers).
  for tool in racecheck synccheck; do
    timeout 120 compute-sanitizer --tool $tool "$BIN/inferlab_tests" \
      --gtest_filter='CudaAttention*:CudaLayerKernels.*:CudaSampling*' > "$OUT/$tool.txt" 2>&1
    echo "$tool rc=$?" | tee -a "$OUT/summary.txt"
  done
  "$BIN/inferlab" generate --model llama-3.1-405b --prompt hi --device cuda > "$OUT/too_big.txt" 2>&1
  echo "405b rc=$?" | tee -a "$OUT/summary.txt"
fi
wait  # the checkpoints
if has logits; then
  timeout 420 python3 validation/engine_logits.py "$BIN/inferlab" "$OUT/engine_logits.json" \
    --work "$WORK" > "$OUT/engine_logits.txt" 2>&1
  echo "logits rc=$?" | tee -a "$OUT/summary.txt"
fi
rm -rf "$WORK"
if has speed; then
  timeout 240 python3 validation/engine_speed.py "$BIN/inferlab" "$OUT/engine_speed.json" \
    > "$OUT/engine_speed.txt" 2>&1
  echo "speed rc=$?" | tee -a "$OUT/summary.txt"
fi
if has speed_graphs; then
  INFERLAB_BENCH_EXTRA="--cuda-graphs on" timeout 240 python3 validation/engine_speed.py \
    "$BIN/inferlab" "$OUT/engine_speed_graphs.json" > "$OUT/engine_speed_graphs.txt" 2>&1
  echo "speed graphs rc=$?" | tee -a "$OUT/summary.txt"
fi
if has serve; then  # the serving simulator against the engine, same trace (issue 20)
  timeout 420 python3 validation/serve_engine_vs_sim.py "$BIN/inferlab" "$OUT/serve_engine_vs_sim.json" \
    ${INFERLAB_SERVE_ARGS:-} > "$OUT/serve_engine_vs_sim.txt" 2>&1
  echo "serve rc=$?" | tee -a "$OUT/summary.txt"
fi
if has speculative; then  # the measured costs of speculation (issue 20)
  for spec in draft=llama-3.2-1b,k=4 ngram,k=4; do
    name=${spec%%,*}; name=${name%%=*}
    timeout 120 "$BIN/inferlab" bench --model llama-3-8b --device cuda --speculative $spec \
      --input 1024 --repeats 30 --cuda-graphs on --format json > "$OUT/speculative_$name.json" \
      2> "$OUT/speculative_$name.err"
    echo "speculative $name rc=$?" | tee -a "$OUT/summary.txt"
  done
fi
if has ablation; then  # issue 19: the staircase, measured beside predict
  if [ -x "$BIN/bench_engine_gemv" ]; then
    LD_LIBRARY_PATH=$BIN timeout 150 "$BIN/bench_engine_gemv" --benchmark_filter='rows:(1|4)/' --benchmark_repetitions=5 \
      --benchmark_report_aggregates_only=true --benchmark_format=json > "$OUT/bench_gemv.json" 2> "$OUT/bench_gemv.err"
    echo "bench gemv rc=$?" | tee -a "$OUT/summary.txt"
  fi
  for m in llama-3-8b llama-3.2-1b; do
    timeout 200 "$BIN/inferlab" bench --model $m --device cuda --ablation --batch 1 --input 1024 \
      --output 17 --repeats 5 --format json > "$OUT/ablation_$m.json" 2> "$OUT/ablation_$m.err"
    echo "ablation $m rc=$?" | tee -a "$OUT/summary.txt"
  done
fi
# Few files come back from a device call: the logs go into one archive.
( cd "$OUT" && tar czf logs.tgz ./*.txt ./*.err 2>/dev/null && rm -f ./*.err && \
  find . -maxdepth 1 -name '*.txt' ! -name summary.txt -delete )
