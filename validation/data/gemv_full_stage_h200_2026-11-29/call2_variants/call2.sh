#!/usr/bin/env bash
# session 14 call 2 (temporary, not committed): variants of the streaming GEMV's step against
# 49cc8f3 (base): A full-stage loads + int4 aux by shift through ld.global.nc; B + a full-stage
# compute without a test a vector, fp8 B1 bound to 4 blocks; C int4 four dp4a chains.
# inferlab = ABC, which the tests run.
set -u
tar xJf build/gpurun_slim.tar.xz -C build
R=$OUT/r; mkdir -p $R
B=build/gpurun
source validation/gpu_common.sh; gpu_env "$B"
note() { echo "$(date -u +%H:%M:%S) $*" | tee -a $R/notes.txt; }
note start
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $R/gpu.txt
timeout 110 $B/inferlab_tests --gtest_filter='CudaGemvStream*:StreamGemv*:CudaQuantBackend*:GemvPlan*:-CudaGemvStream.Llama3_8bShapes' > $R/tests.txt 2>&1
note tests rc=$? $(grep -E '^\[  PASSED|^\[  FAILED' $R/tests.txt | tr '\n' ' ')
timeout 190 python3 validation/engine_ab.py $B/inferlab $R/int4.json BINARY=$B/inferlab_base,$B/inferlab_A,$B/inferlab_AB,$B/inferlab_AC,$B/inferlab \
  llama-3-8b:decode:1:1024:int4 1 > $R/int4.txt 2>&1
note int4 rc=$?
timeout 220 python3 validation/engine_ab.py $B/inferlab $R/fp8_bf16.json BINARY=$B/inferlab_base,$B/inferlab_A,$B/inferlab \
  llama-3-8b:decode:1:1024:fp8,llama-3-8b:decode:1:1024 1 > $R/fp8_bf16.txt 2>&1
note fp8_bf16 rc=$?
cd $OUT && tar czf r.tgz r && rm -rf r
