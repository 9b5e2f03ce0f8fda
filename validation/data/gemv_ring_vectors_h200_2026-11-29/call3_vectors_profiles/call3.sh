#!/usr/bin/env bash
# session 13 call 3 (temporary, not committed)
set -u
tar xJf build/gpurun_slim.tar.xz -C build
R=$OUT/r; mkdir -p $R
B=build/gpurun
source validation/gpu_common.sh; gpu_env "$B"
note() { echo "$(date -u +%H:%M:%S) $*" | tee -a $R/notes.txt; }
note start
INFERLAB_GS_VECTORS=2 timeout 150 $B/inferlab_tests --gtest_filter='CudaGemvStream*:StreamGemv*:CudaQuantBackend*:CudaProjection*' > $R/tests_v2.txt 2>&1
note tests_v2 rc=$? $(grep -E '^\[  PASSED|^\[  FAILED' $R/tests_v2.txt | tr '\n' ' ')
timeout 200 python3 validation/engine_ab.py $B/inferlab $R/vectors.json INFERLAB_GS_VECTORS=4,2 \
  llama-3-8b:decode:1:1024:int4,llama-3-8b:decode:1:1024:fp8,llama-3-8b:decode:1:1024 1 > $R/vectors.txt 2>&1
note steps rc=$?
OUT=$R/v4 timeout 100 bash validation/calibration_gpu.sh $B int4 > /dev/null 2>&1; note int4 v4 rc=$?
OUT=$R/v2 INFERLAB_GS_VECTORS=2 timeout 100 bash validation/calibration_gpu.sh $B int4 > /dev/null 2>&1; note int4 v2 rc=$?
OUT=$R/v4 timeout 90 bash validation/calibration_gpu.sh $B fp8 > /dev/null 2>&1; note fp8 v4 rc=$?
OUT=$R/v2 INFERLAB_GS_VECTORS=2 timeout 90 bash validation/calibration_gpu.sh $B fp8 > /dev/null 2>&1; note fp8 v2 rc=$?
cd $OUT && tar czf r.tgz r && rm -rf r
