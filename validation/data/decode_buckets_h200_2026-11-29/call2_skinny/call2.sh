#!/usr/bin/env bash
# session 17 call 2: the skinny bf16 GEMM's GPU tests and its benchmark against cuBLASLt
set -u
tar xJf build/gpurun_slim.tar.xz -C build
R=$OUT/r; mkdir -p $R
B=build/gpurun
source validation/gpu_common.sh; gpu_env "$B"
note() { echo "$(date -u +%H:%M:%S) $*" | tee -a $R/notes.txt; }
note start
timeout 120 $B/inferlab_tests --gtest_filter='CudaGemmSkinny*' > $R/tests.txt 2>&1
note tests rc=$?
tail -3 $R/tests.txt
timeout 300 $B/bench_engine_gemm_skinny --benchmark_filter='gemm_skinny/' --benchmark_counters_tabular=true --benchmark_format=json --benchmark_out=$R/bench.json > $R/bench.txt 2>&1
note bench rc=$?
cd $OUT && tar czf r.tgz r && rm -rf r
