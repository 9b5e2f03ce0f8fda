#!/usr/bin/env bash
# session 15 call 6: Llama 3.2 1B's profile (bf16, CUDA graphs on) on the final build, for the refit
set -u
tar xJf build/gpurun_slim.tar.xz -C build
R=$OUT/r; mkdir -p $R
B=build/gpurun
source validation/gpu_common.sh; gpu_env "$B"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $R/gpu.txt
timeout 120 $B/inferlab bench --profile --model llama-3.2-1b --device cuda --repeats 3 --warmup 1 \
  --cuda-graphs on --format json > $R/profile_llama-3.2-1b_bf16.json 2> $R/profile_llama-3.2-1b_bf16.err
echo "$(date -u +%H:%M:%S) profile rc=$?" | tee $R/notes.txt
cd $OUT && tar czf r.tgz r && rm -rf r
