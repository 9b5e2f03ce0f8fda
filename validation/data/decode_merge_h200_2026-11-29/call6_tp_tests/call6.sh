#!/usr/bin/env bash
# session 16 call 6 (two H200s): the tensor-parallel GPU tests at commit aa6e154 (the flash
# decode's early cache reads on each rank's heads; the RoPE epilogue's and the early reads'
# switches sent to worker ranks), and the backends' tests
set -u
tar xJf build/gpurun_slim.tar.xz -C build
R=$OUT/r; mkdir -p $R
B=build/gpurun
source validation/gpu_common.sh; gpu_env "$B"
note() { echo "$(date -u +%H:%M:%S) $*" | tee -a $R/notes.txt; }
note start
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $R/gpu.txt
INFERLAB_TEST_BINARY=$B/inferlab timeout 300 $B/inferlab_tests \
  --gtest_filter='TensorParallel*:TpProcessCuda*:MultiProcessTpBackend*:CudaBackend.*:CudaAttention*' > $R/tests.txt 2>&1
note tests rc=$? $(grep -E '^\[  PASSED|^\[  FAILED' $R/tests.txt | tr '\n' ' ')
INFERLAB_ENGINE_EARLY_CACHE=0 INFERLAB_TEST_BINARY=$B/inferlab timeout 120 $B/inferlab_tests \
  --gtest_filter='TensorParallelCuda.TwoGpusMatchOne*:TpProcessCuda.LaunchedRanksMatchTheThreadedGroup' > $R/tests_after_wait.txt 2>&1
note tests_after_wait rc=$? $(grep -E '^\[  PASSED|^\[  FAILED' $R/tests_after_wait.txt | tr '\n' ' ')
cd $OUT && tar czf r.tgz r && rm -rf r
