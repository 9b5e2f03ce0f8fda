#!/usr/bin/env bash
# session 14 call 4 (temporary, not committed): formats §57 did not time, against 49cc8f3
set -u
tar xJf build/gpurun_slim.tar.xz -C build
R=$OUT/r; mkdir -p $R
B=build/gpurun
source validation/gpu_common.sh; gpu_env "$B"
note() { echo "$(date -u +%H:%M:%S) $*" | tee -a $R/notes.txt; }
note start
timeout 200 python3 validation/engine_ab.py $B/inferlab $R/steps.json BINARY=$B/inferlab_base,$B/inferlab \
  llama-3-8b:decode:1:1024:w8a8,llama-3-8b:decode:2:1024:fp8,llama-3-8b:decode:1:1024:int8 1 > $R/steps.txt 2>&1
note steps rc=$?
cd $OUT && tar czf r.tgz r && rm -rf r
