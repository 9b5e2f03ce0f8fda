#!/usr/bin/env bash
# session 14 call 1 (temporary, not committed): GPU tests of the two-buffer stream, A/B against
# 49cc8f3, ncu instruction counts, SASS of the int4 gate/up kernel, whether nsys is here
set -u
tar xJf build/gpurun_slim.tar.xz -C build
R=$OUT/r; mkdir -p $R
B=build/gpurun
source validation/gpu_common.sh; gpu_env "$B"
note() { echo "$(date -u +%H:%M:%S) $*" | tee -a $R/notes.txt; }
note start
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $R/gpu.txt
{ which nsys cuobjdump nvdisasm; ls /usr/local/cuda/bin 2>/dev/null | tr '\n' ' '; } > $R/tools.txt 2>&1
timeout 150 $B/inferlab_tests --gtest_filter='CudaGemvStream*:StreamGemv*:CudaQuantBackend*:CudaProjection*:GemvPlan*:PersistentDecode*' > $R/tests.txt 2>&1
note tests rc=$? $(grep -E '^\[  PASSED|^\[  FAILED' $R/tests.txt | tr '\n' ' ')
timeout 270 python3 validation/engine_ab.py $B/inferlab $R/steps.json BINARY=$B/inferlab_base,$B/inferlab \
  llama-3-8b:decode:1:1024:int4,llama-3-8b:decode:1:1024:fp8,llama-3-8b:decode:1:1024,llama-3-8b:decode:2:1024:int4 1 > $R/steps.txt 2>&1
note steps rc=$?
metrics=gpu__time_duration.sum,smsp__inst_executed.sum,dram__bytes_read.sum,launch__registers_per_thread,launch__grid_size,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio
for bin in inferlab_base inferlab; do
timeout 45 ncu --clock-control none --launch-skip 1200 --launch-count 12 --metrics $metrics \
  $B/$bin bench --model llama-3-8b --device cuda --weights int4 --batch 1 \
    --input 128 --output 8 --repeats 1 --warmup 0 --no-kernels --cuda-graphs off \
    --gpu-memory-utilization 0.25 > $R/ncu_int4_$bin.txt 2>$R/ncu_int4_$bin.err
note ncu $bin rc=$?
done
CUOBJ=$(which cuobjdump || ls /usr/local/cuda*/bin/cuobjdump 2>/dev/null | head -1)
if [ -n "$CUOBJ" ]; then
  for bin in inferlab_base inferlab; do
    timeout 90 $CUOBJ -sass $B/$bin 2>/dev/null | awk '/Function : /{p=/gemv_stream_kernel/ && (/FmtE2ELi1ELi2E/ || /FmtE3ELi1ELi2E/)} p' > $R/sass_gate_up_b1_$bin.txt
    note sass $bin $(wc -l < $R/sass_gate_up_b1_$bin.txt)
  done
fi
cd $OUT && tar czf r.tgz r && rm -rf r
