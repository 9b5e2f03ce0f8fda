#!/usr/bin/env bash
# session 15 call 2: the RoPE epilogue of the streaming QKV GEMV. GPU tests (the epilogue's bits
# against the GEMV then rope_kv_write, the backend against the CPU reference); A/B of the same
# build with INFERLAB_ENGINE_ROPE_IN_QKV=0 (RoPE as its own kernel) and 1 (the default)
set -u
tar xJf build/gpurun_slim.tar.xz -C build
R=$OUT/r; mkdir -p $R
B=build/gpurun
source validation/gpu_common.sh; gpu_env "$B"
note() { echo "$(date -u +%H:%M:%S) $*" | tee -a $R/notes.txt; }
note start
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $R/gpu.txt
timeout 170 $B/inferlab_tests --gtest_filter='CudaGemvStream*:StreamGemv*:CudaQuantBackend*:GemvPlan*:CudaBackend*:CudaLayerKernels*:-CudaGemvStream.Llama3_8bShapes' > $R/tests.txt 2>&1
note tests rc=$? $(grep -E '^\[  PASSED|^\[  FAILED' $R/tests.txt | tr '\n' ' ')
timeout 330 python3 validation/engine_ab.py $B/inferlab $R/steps.json INFERLAB_ENGINE_ROPE_IN_QKV=0,1 \
  llama-3-8b:decode:1:1024:int4,llama-3-8b:decode:1:1024:fp8,llama-3-8b:decode:1:1024,llama-3-8b:decode:2:1024:int4,llama-3.2-1b:decode:1:1024 1 > $R/steps.txt 2>&1
note steps rc=$?
cd $OUT && tar czf r.tgz r && rm -rf r
