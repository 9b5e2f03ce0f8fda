#!/usr/bin/env bash
# session 16 call 3: the streamed decode kernel reads the cache rows of earlier passes before its
# grid wait (launched programmatically while the QKV projection ends), the new token's row after
# it. GPU tests (every attention case with the reads before and after the wait: the same bits; the
# backend against the CPU reference, where the QKV epilogue writes the row the kernel reads); A/B
# of the same build with INFERLAB_ENGINE_EARLY_CACHE=0 (after the wait) and 1 (the default)
set -u
tar xJf build/gpurun_slim.tar.xz -C build
R=$OUT/r; mkdir -p $R
B=build/gpurun
source validation/gpu_common.sh; gpu_env "$B"
note() { echo "$(date -u +%H:%M:%S) $*" | tee -a $R/notes.txt; }
note start
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $R/gpu.txt
timeout 150 $B/inferlab_tests --gtest_filter='CudaAttention*:CudaGemvStream.Rope*:CudaBackend*:CudaQuantBackend*' > $R/tests.txt 2>&1
note tests rc=$? $(grep -E '^\[  PASSED|^\[  FAILED' $R/tests.txt | tr '\n' ' ')
timeout 390 python3 validation/engine_ab.py $B/inferlab $R/steps.json INFERLAB_ENGINE_EARLY_CACHE=0,1 \
  llama-3-8b:decode:1:1024:int4,llama-3.2-1b:decode:1:1024,llama-3-8b:decode:1:1024,llama-3-8b:decode:64:1024 1 > $R/steps.txt 2>&1
note steps rc=$?
cd $OUT && tar czf r.tgz r && rm -rf r
