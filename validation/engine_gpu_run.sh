#!/usr/bin/env bash
# The engine's whole GPU check in one device call (build here, carry the binaries):
#   GPU tests (kernels and backend against the CPU reference), compute-sanitizer on a subset,
#   the "does not fit" refusal, logits against transformers (validation/engine_logits.py) and
#   the speed table against PyTorch + CUDA graphs (validation/engine_speed.py).
# Usage on the device: bash validation/engine_gpu_run.sh BIN_DIR   (inferlab, inferlab_tests)
set -u
BIN=${1:-build/gpurun}
export INFERLAB_DATA_DIR=$PWD/data INFERLAB_TOKENIZERS_DIR=$PWD/third_party/tokenizers
WORK=/tmp/inferlab_ckpt
mkdir -p "$WORK" "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/device.txt"
date -u +%FT%TZ >> "$OUT/device.txt"
# Checkpoints for the logits check, written on the host's cores while the GPU tests run.
for m in llama-3.2-1b qwen2.5-1.5b llama-3.2-3b llama-3-8b; do
  ( "$BIN/inferlab" init-weights --model $m --out "$WORK/$m" --seed 1 > "$OUT/init_$m.txt" 2>&1 ) &
done
timeout 60 "$BIN/inferlab_tests" --gtest_filter='CudaSampling*' > "$OUT/gpu_tests_sampling.txt" 2>&1
rc=$?
echo "gpu sampling tests rc=$rc" | tee -a "$OUT/summary.txt"
# If the GPU sampler fails its tests, the runs below sample on the host (and say so).
[ $rc -ne 0 ] && export INFERLAB_ENGINE_HOST_SAMPLING=1 && echo "host sampling" >> "$OUT/summary.txt"
timeout 150 "$BIN/inferlab_tests" --gtest_filter='Cuda*:-CudaSampling*' > "$OUT/gpu_tests.txt" 2>&1
echo "gpu tests rc=$?" | tee -a "$OUT/summary.txt"
timeout 90 compute-sanitizer --tool memcheck "$BIN/inferlab_tests" \
  --gtest_filter='CudaLayerKernels.*:CudaBackend.Qwen*' > "$OUT/sanitizer.txt" 2>&1
echo "sanitizer rc=$?" | tee -a "$OUT/summary.txt"
"$BIN/inferlab" generate --model llama-3.1-405b --prompt hi --device cuda > "$OUT/too_big.txt" 2>&1
echo "405b rc=$?" | tee -a "$OUT/summary.txt"
wait
timeout 260 python3 validation/engine_logits.py "$BIN/inferlab" "$OUT/engine_logits.json" \
  --work "$WORK" > "$OUT/engine_logits.txt" 2>&1
echo "logits rc=$?" | tee -a "$OUT/summary.txt"
rm -rf "$WORK"
timeout 240 python3 validation/engine_speed.py "$BIN/inferlab" "$OUT/engine_speed.json" \
  > "$OUT/engine_speed.txt" 2>&1
echo "speed rc=$?" | tee -a "$OUT/summary.txt"
