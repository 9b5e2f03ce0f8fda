#!/usr/bin/env bash
# session 13 call 2 (temporary, not committed)
set -u
tar xJf build/gpurun_slim.tar.xz -C build
R=$OUT/r; mkdir -p $R
B=build/gpurun
source validation/gpu_common.sh; gpu_env "$B"
note() { echo "$(date -u +%H:%M:%S) $*" | tee -a $R/notes.txt; }
note start
OUT=$R timeout 200 bash validation/gemv_stream_ab.sh $B tests
note tests done
OUT=$R CASES=llama-3-8b:decode:1:1024:int4,llama-3-8b:decode:1:1024:fp8,llama-3-8b:decode:1:1024 ROUNDS=1 timeout 230 bash validation/gemv_stream_ab.sh $B steps
note steps done
OUT=$R timeout 100 bash validation/gemv_stream_ab.sh $B kernels
note kernels done
metrics=gpu__time_duration.sum,dram__bytes_read.sum,launch__registers_per_thread,launch__grid_size,sm__warps_active.avg.pct_of_peak_sustained_active
timeout 45 ncu --clock-control none --launch-skip 1200 --launch-count 12 --metrics $metrics \
  $B/inferlab bench --model llama-3-8b --device cuda --weights int4 --batch 1 \
    --input 128 --output 8 --repeats 1 --warmup 0 --no-kernels --cuda-graphs off \
    --gpu-memory-utilization 0.25 > $R/ncu_layer_int4.txt 2>$R/ncu_layer_int4.err
note ncu rc=$?
cd $OUT && tar czf r.tgz r && rm -rf r
