#!/usr/bin/env bash
# session 16 call 1: the split decode's merge in its last split (tickets). GPU tests: every
# attention case with the merge in the split kernel and by the combine kernel (same bits, tickets
# back at zero), the backend against the CPU reference, the revised RoPE refusal test; A/B of the
# same build with INFERLAB_ENGINE_MERGE_IN_SPLIT=0 (combine kernel) and 1 (the default)
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
timeout 390 python3 validation/engine_ab.py $B/inferlab $R/steps.json INFERLAB_ENGINE_MERGE_IN_SPLIT=0,1 \
  llama-3-8b:decode:1:1024:int4,llama-3-8b:decode:1:1024,llama-3.2-1b:decode:1:1024,llama-3-8b:decode:1:4096:int4 1 > $R/steps.txt 2>&1
note steps rc=$?
cd $OUT && tar czf r.tgz r && rm -rf r
