#!/usr/bin/env bash
# session 16 call 7: the review's fix (the new token's row held back only where it lies in the
# split; shared memory poisoned before every attention test run, splits of a length not a
# multiple of 16): the attention and backend GPU tests on the fixed build, and the new test on a
# build with the defect put back (inferlab_tests_bug), which must fail
set -u
tar xJf build/gpurun_slim.tar.xz -C build
R=$OUT/r; mkdir -p $R
B=build/gpurun
source validation/gpu_common.sh; gpu_env "$B"
note() { echo "$(date -u +%H:%M:%S) $*" | tee -a $R/notes.txt; }
note start
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $R/gpu.txt
timeout 100 $B/inferlab_tests_bug --gtest_filter='CudaAttention/CudaAttentionCache.DecodeSplitsNotAMultipleOfTheChunk/*' > $R/tests_bug.txt 2>&1
note tests_bug rc=$? $(grep -E '^\[  PASSED|^\[  FAILED' $R/tests_bug.txt | tr '\n' ' ')
timeout 200 $B/inferlab_tests --gtest_filter='CudaAttention*:CudaBackend*:CudaQuantBackend*:CudaGemvStream.Rope*' > $R/tests.txt 2>&1
note tests rc=$? $(grep -E '^\[  PASSED|^\[  FAILED' $R/tests.txt | tr '\n' ' ')
cd $OUT && tar czf r.tgz r && rm -rf r
