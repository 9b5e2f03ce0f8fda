#!/usr/bin/env bash
set -u
tar xJf build/gpurun_slim.tar.xz -C build
R=$OUT/r; mkdir -p $R
B=build/gpurun
source validation/gpu_common.sh; gpu_env "$B"
note() { echo "$(date -u +%H:%M:%S) $*" | tee -a $R/notes.txt; }
note start
timeout 120 $B/inferlab_tests --gtest_filter='CudaGemvStream*:StreamGemv*:CudaQuantBackend*:CudaProjection*' > $R/tests.txt 2>&1
note tests rc=$? $(grep -E '^\[  PASSED|^\[  FAILED' $R/tests.txt | tr '\n' ' ')
timeout 135 python3 validation/engine_ab.py $B/inferlab $R/fp8_ab.json BINARY=$B/inferlab_base,$B/inferlab \
  llama-3-8b:decode:1:1024:fp8,llama-3-8b:decode:2:1024:fp8 1 > $R/fp8_ab.txt 2>&1
note steps rc=$?
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $R/gpu.txt
cd $OUT && tar czf r.tgz r && rm -rf r
