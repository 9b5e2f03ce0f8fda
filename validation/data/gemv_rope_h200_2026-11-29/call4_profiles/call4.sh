#!/usr/bin/env bash
# session 15 call 4: fp8 A (the committed kernel) against B (the fp8 one-row RoPE kernel at three
# blocks an SM); then the 8B profiles for the refit: int4 and bf16 of A, fp8 of the faster
set -u
tar xJf build/gpurun_slim.tar.xz -C build
R=$OUT/r; mkdir -p $R
B=build/gpurun
source validation/gpu_common.sh; gpu_env "$B"
note() { echo "$(date -u +%H:%M:%S) $*" | tee -a $R/notes.txt; }
note start
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $R/gpu.txt
timeout 150 python3 validation/engine_ab.py $B/inferlab $R/steps_fp8.json BINARY=$B/inferlab,$B/inferlab_ropeB \
  llama-3-8b:decode:1:1024:fp8 1 > $R/steps_fp8.txt 2>&1
note steps_fp8 rc=$?
WIN=$(python3 -c "
import json,sys
d=json.load(open('$R/steps_fp8.json'))['cases'][0]['runs']
a=[r['ms'] for k,v in d.items() if k.endswith('/inferlab') for r in v if 'ms' in r]
b=[r['ms'] for k,v in d.items() if k.endswith('ropeB') for r in v if 'ms' in r]
print('B' if a and b and b[0] < a[0]*0.997 else 'A')" 2>/dev/null || echo A)
note fp8 winner $WIN
OUT=$R timeout 150 bash validation/calibration_gpu.sh $B int4,bf16 > $R/profiles.log 2>&1
note profiles rc=$?
FP8DIR=$B
if [ "$WIN" = B ]; then
  mkdir -p build/gpurunB && cp -s $(pwd)/$B/* build/gpurunB/ 2>/dev/null; rm -f build/gpurunB/inferlab; cp $B/inferlab_ropeB build/gpurunB/inferlab; FP8DIR=build/gpurunB
fi
OUT=$R timeout 120 bash validation/calibration_gpu.sh $FP8DIR fp8 >> $R/profiles.log 2>&1
note profile fp8 rc=$? dir=$FP8DIR
cd $OUT && tar czf r.tgz r && rm -rf r
