#!/usr/bin/env bash
# session 16 call 2: what one more combine trip costs in a graphed decode step. Same build, the
# split count forced to 16 (one trip of the combine kernel) and 17 (two trips) with the same
# non-empty splits of nearly the same length: contexts 1025-1056 (bucket 2048: 9 non-empty splits
# of 128 / 121 positions) and 3901-3933 (bucket 4096: 16 / 17 splits, all non-empty)
set -u
tar xJf build/gpurun_slim.tar.xz -C build
R=$OUT/r; mkdir -p $R
B=build/gpurun
source validation/gpu_common.sh; gpu_env "$B"
note() { echo "$(date -u +%H:%M:%S) $*" | tee -a $R/notes.txt; }
note start
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $R/gpu.txt
timeout 480 python3 validation/engine_ab.py $B/inferlab $R/steps.json INFERLAB_ENGINE_DECODE_SPLITS=16,17 \
  llama-3.2-1b:decode:1:1024,llama-3-8b:decode:1:1024:int4,llama-3.2-1b:decode:1:3900,llama-3-8b:decode:1:3900:int4 1 > $R/steps.txt 2>&1
note steps rc=$?
cd $OUT && tar czf r.tgz r && rm -rf r
