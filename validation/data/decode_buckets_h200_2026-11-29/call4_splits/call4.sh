#!/usr/bin/env bash
# session 17 call 4: the decode's split count inside the 2048 bucket: the plan's 32 splits of 64
# positions against 16 of 128 (INFERLAB_ENGINE_DECODE_SPLITS), Llama 3 8B int4 and bf16 and
# Llama 3.2 1B bf16, batch 1, contexts 1025-1057, 1501-1533 and 2001-2033
set -u
mkdir -p build && tar xJf build/gpurun_call3.tar.xz -C build
R=$OUT/r; mkdir -p $R
B=build/gpurun
source validation/gpu_common.sh; gpu_env "$B"
note() { echo "$(date -u +%H:%M:%S) $*" | tee -a $R/notes.txt; }
note start
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $R/gpu.txt
timeout 400 python3 validation/engine_ab.py $B/inferlab $R/splits.json INFERLAB_ENGINE_DECODE_SPLITS=0,16 \
  llama-3-8b:decode:1:2000:int4,llama-3-8b:decode:1:1500:int4,llama-3-8b:decode:1:1024:int4,llama-3-8b:decode:1:2000,llama-3.2-1b:decode:1:2000 2 > $R/splits.log 2>&1
note splits rc=$?
cd $OUT && tar czf r.tgz r && rm -rf r
