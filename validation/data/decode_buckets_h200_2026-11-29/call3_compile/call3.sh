#!/usr/bin/env bash
# session 17 call 3: issue 38's decode rows beside torch.compile with engine_speed.py's engine at
# 32 steps (--no-kernels), and the batch-64 step over its first 8 against its first 32
set -u
mkdir -p build && tar xJf build/gpurun_call3.tar.xz -C build
R=$OUT/r; mkdir -p $R
B=build/gpurun
source validation/gpu_common.sh; gpu_env "$B"
note() { echo "$(date -u +%H:%M:%S) $*" | tee -a $R/notes.txt; }
note start
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $R/gpu.txt
for out in 9 33 9 33; do
  timeout 60 $B/inferlab bench --model llama-3-8b --device cuda --format json --no-kernels --cuda-graphs on \
    --batch 64 --input 1024 --output $out --repeats 1 > $R/b64_out${out}_$(date +%s).json 2>> $R/b64.err
  note b64 output $out rc=$?
done
ENGINE_SPEED_CASES=llama-3.2-1b:decode:1:1024,llama-3-8b:decode:1:1024,llama-3-8b:decode:64:1024 ENGINE_SPEED_COMPILE=1 \
  ENGINE_SPEED_ENGINE_ONLY=int4,fp8 INFERLAB_BENCH_EXTRA="--cuda-graphs on" timeout 420 \
  python3 validation/engine_speed.py $B/inferlab $R/engine_speed.json > $R/engine_speed.log 2>&1
note engine_speed rc=$?
cd $OUT && tar czf r.tgz r && rm -rf r
