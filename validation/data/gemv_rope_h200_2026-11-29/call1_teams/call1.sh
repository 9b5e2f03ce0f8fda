#!/usr/bin/env bash
# session 15 call 1: teams of warps per task in the streaming GEMV. GPU tests of the new build;
# A/B of 0cb5a2c (base), the new build (teams chosen per shape), the new build with
# INFERLAB_ENGINE_GEMV_TEAM=1 (the team code without teams), and a variant with int4 at two
# vectors a lane and three blocks an SM (int4v2)
set -u
tar xJf build/gpurun_slim.tar.xz -C build
R=$OUT/r; mkdir -p $R
B=build/gpurun
source validation/gpu_common.sh; gpu_env "$B"
note() { echo "$(date -u +%H:%M:%S) $*" | tee -a $R/notes.txt; }
note start
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $R/gpu.txt
printf '#!/bin/sh\nINFERLAB_ENGINE_GEMV_TEAM=1 exec %s/inferlab "$@"\n' "$(pwd)/$B" > $B/inferlab_team1; chmod +x $B/inferlab_team1
timeout 150 $B/inferlab_tests --gtest_filter='CudaGemvStream*:GemvStreamTeam*:StreamGemv*:CudaQuantBackend*:GemvPlan*' > $R/tests.txt 2>&1
note tests rc=$? $(grep -E '^\[  PASSED|^\[  FAILED' $R/tests.txt | tr '\n' ' ')
timeout 230 python3 validation/engine_ab.py $B/inferlab $R/steps_a.json BINARY=$B/inferlab_base,$B/inferlab,$B/inferlab_team1 \
  llama-3-8b:decode:1:1024:fp8,llama-3-8b:decode:1:1024 1 > $R/steps_a.txt 2>&1
note steps_a rc=$?
timeout 130 python3 validation/engine_ab.py $B/inferlab $R/steps_b.json BINARY=$B/inferlab_base,$B/inferlab,$B/inferlab_int4v2 \
  llama-3-8b:decode:1:1024:int4 1 > $R/steps_b.txt 2>&1
note steps_b rc=$?
cd $OUT && tar czf r.tgz r && rm -rf r
