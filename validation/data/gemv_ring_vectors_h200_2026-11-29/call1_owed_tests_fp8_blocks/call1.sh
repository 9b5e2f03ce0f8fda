#!/usr/bin/env bash
# session 13 call 1 (temporary, not committed)
set -u
tar xJf build/gpurun_slim.tar.xz -C build
R=$OUT/r; mkdir -p $R
B=build/gpurun
source validation/gpu_common.sh; gpu_env "$B"
note() { echo "$(date -u +%H:%M:%S) $*" | tee -a $R/notes.txt; }
note start
OUT=$R bash validation/gemv_stream_ab.sh $B tests
note tests done
OUT=$R CASES=llama-3-8b:decode:1:1024:fp8,llama-3-8b:decode:1:1024:w8a8 ROUNDS=1 bash validation/gemv_stream_ab.sh $B steps
note steps done
timeout 200 python3 validation/engine_ab.py $B/inferlab $R/blocks_per_sm.json INFERLAB_GS_BLOCKS_PER_SM=0,1 \
  llama-3-8b:decode:1:1024:int4,llama-3-8b:decode:1:1024:fp8 1 > $R/blocks_per_sm.txt 2>&1
note knob done rc=$?
metrics=gpu__time_duration.sum,dram__bytes_read.sum,launch__registers_per_thread,launch__grid_size,launch__block_size,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,sm__warps_active.avg.pct_of_peak_sustained_active
for f in int4 fp8; do
timeout 120 ncu --clock-control none --launch-skip 1200 --launch-count 24 --metrics $metrics \
  $B/inferlab bench --model llama-3-8b --device cuda --weights $f --batch 1 \
    --input 128 --output 8 --repeats 1 --warmup 0 --no-kernels --cuda-graphs off \
    --gpu-memory-utilization 0.25 > $R/ncu_layer_$f.txt 2>$R/ncu_layer_$f.err
note ncu $f rc=$?
done
cd $OUT && tar czf r.tgz r && rm -rf r
