#!/usr/bin/env bash
# session 16 call 5: the final build beside PyTorch + CUDA graphs and torch.compile (gpt-fast's
# recipe) in one call: Llama 3 8B decode at batch 1 (the engine's int4 and fp8 rows beside it) and
# Llama 3.2 1B decode at batch 1, context 1024
set -u
tar xJf build/gpurun_slim.tar.xz -C build
R=$OUT/r; mkdir -p $R
B=build/gpurun
source validation/gpu_common.sh; gpu_env "$B"
note() { echo "$(date -u +%H:%M:%S) $*" | tee -a $R/notes.txt; }
note start
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $R/gpu.txt
ENGINE_SPEED_CASES=llama-3-8b:decode:1:1024,llama-3.2-1b:decode:1:1024 ENGINE_SPEED_COMPILE=1 ENGINE_SPEED_ENGINE_ONLY=int4,fp8 \
  INFERLAB_BENCH_EXTRA="--cuda-graphs on" timeout 500 \
  python3 validation/engine_speed.py $B/inferlab $R/engine_speed.json > $R/engine_speed.log 2>&1
note engine_speed rc=$?
cd $OUT && tar czf r.tgz r && rm -rf r
