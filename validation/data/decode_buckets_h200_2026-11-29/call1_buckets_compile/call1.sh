#!/usr/bin/env bash
# session 17 call 1 (commit 843d9dd's inferlab): (a) the decode step on each side of the graph's
# context buckets (the combine trip the model charges), Llama 3.2 1B bf16 and Llama 3 8B int4 at
# batch 1; (b) Llama 3 8B decode at batch 64 and prefill of 2048 beside torch.compile.
set -u
mkdir -p build && tar xJf build/gpurun_call1.tar.xz -C build
R=$OUT/r; mkdir -p $R
B=build/gpurun
source validation/gpu_common.sh; gpu_env "$B"
note() { echo "$(date -u +%H:%M:%S) $*" | tee -a $R/notes.txt; }
note start
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $R/gpu.txt
timeout 200 python3 validation/engine_ab.py $B/inferlab $R/buckets_1b.json SAME=1 \
  llama-3.2-1b:decode:1:990,llama-3.2-1b:decode:1:1024,llama-3.2-1b:decode:1:1100,llama-3.2-1b:decode:1:2000,llama-3.2-1b:decode:1:2100 2 > $R/buckets_1b.log 2>&1
note buckets_1b rc=$?
timeout 150 python3 validation/engine_ab.py $B/inferlab $R/buckets_8b_int4.json SAME=1 \
  llama-3-8b:decode:1:990:int4,llama-3-8b:decode:1:1024:int4,llama-3-8b:decode:1:2000:int4,llama-3-8b:decode:1:2100:int4 1 > $R/buckets_8b_int4.log 2>&1
note buckets_8b_int4 rc=$?
ENGINE_SPEED_CASES=llama-3-8b:decode:64:1024,llama-3-8b:prefill:1:2048 ENGINE_SPEED_COMPILE=1 \
  INFERLAB_BENCH_EXTRA="--cuda-graphs on" timeout 330 \
  python3 validation/engine_speed.py $B/inferlab $R/engine_speed.json > $R/engine_speed.log 2>&1
note engine_speed rc=$?
cd $OUT && tar czf r.tgz r && rm -rf r
