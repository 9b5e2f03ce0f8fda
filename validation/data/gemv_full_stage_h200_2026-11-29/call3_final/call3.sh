#!/usr/bin/env bash
# session 14 call 3 (temporary, not committed): the final kernel (AB of call 2): GPU tests, the
# 8B profiles for the refit, A/B against 49cc8f3
set -u
tar xJf build/gpurun_slim.tar.xz -C build
R=$OUT/r; mkdir -p $R
B=build/gpurun
source validation/gpu_common.sh; gpu_env "$B"
note() { echo "$(date -u +%H:%M:%S) $*" | tee -a $R/notes.txt; }
note start
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $R/gpu.txt
timeout 150 $B/inferlab_tests --gtest_filter='CudaGemvStream*:StreamGemv*:CudaQuantBackend*:GemvPlan*' > $R/tests.txt 2>&1
note tests rc=$? $(grep -E '^\[  PASSED|^\[  FAILED' $R/tests.txt | tr '\n' ' ')
OUT=$R timeout 230 bash validation/calibration_gpu.sh $B int4,fp8,bf16 > $R/profiles.log 2>&1
note profiles rc=$?
timeout 200 python3 validation/engine_ab.py $B/inferlab $R/steps.json BINARY=$B/inferlab_base,$B/inferlab \
  llama-3-8b:decode:1:1024:int4,llama-3-8b:decode:2:1024:int4,llama-3.2-1b:decode:1:1024:int4 1 > $R/steps.txt 2>&1
note steps rc=$?
cd $OUT && tar czf r.tgz r && rm -rf r
