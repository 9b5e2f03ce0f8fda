#!/usr/bin/env bash
# session 15 call 3: the RoPE epilogue with the frequency, position and slot loaded ahead (build
# A), and B: A with the fp8 one-row RoPE kernel bound to three blocks an SM (80 registers, no
# spill; A: 64 and a 36-byte spill). GPU tests of A; A/B against RoPE as its own kernel
# (INFERLAB_ENGINE_ROPE_IN_QKV=0)
set -u
tar xJf build/gpurun_slim.tar.xz -C build
R=$OUT/r; mkdir -p $R
B=build/gpurun
source validation/gpu_common.sh; gpu_env "$B"
note() { echo "$(date -u +%H:%M:%S) $*" | tee -a $R/notes.txt; }
note start
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $R/gpu.txt
printf '#!/bin/sh\nINFERLAB_ENGINE_ROPE_IN_QKV=0 exec %s/inferlab "$@"\n' "$(pwd)/$B" > $B/inferlab_ropeoff; chmod +x $B/inferlab_ropeoff
timeout 100 $B/inferlab_tests --gtest_filter='CudaGemvStream.Rope*:CudaGemvStream.FusedForms*:CudaBackend*:CudaQuantBackend*' > $R/tests.txt 2>&1
note tests rc=$? $(grep -E '^\[  PASSED|^\[  FAILED' $R/tests.txt | tr '\n' ' ')
timeout 130 python3 validation/engine_ab.py $B/inferlab $R/steps_fp8.json BINARY=$B/inferlab_ropeoff,$B/inferlab,$B/inferlab_ropeB \
  llama-3-8b:decode:1:1024:fp8 1 > $R/steps_fp8.txt 2>&1
note steps_fp8 rc=$?
timeout 230 python3 validation/engine_ab.py $B/inferlab $R/steps.json INFERLAB_ENGINE_ROPE_IN_QKV=0,1 \
  llama-3-8b:decode:1:1024:int4,llama-3-8b:decode:1:1024,llama-3.2-1b:decode:1:1024,llama-3.2-1b:decode:1:1024:int4 1 > $R/steps.txt 2>&1
note steps rc=$?
cd $OUT && tar czf r.tgz r && rm -rf r
