#!/usr/bin/env bash
# session 16 call 4: the engine profiles for the refit with the early cache reads (switch
# "decode_cache": "early"): Llama 3 8B int4, bf16 and fp8 weights, Llama 3.2 1B bf16; the GPU tests
# of the layer kernels, the streaming GEMV and the persistent decode
set -u
tar xJf build/gpurun_slim.tar.xz -C build
R=$OUT/r; mkdir -p $R
B=build/gpurun
source validation/gpu_common.sh; gpu_env "$B"
note() { echo "$(date -u +%H:%M:%S) $*" | tee -a $R/notes.txt; }
note start
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $R/gpu.txt
OUT=$R timeout 200 bash validation/calibration_gpu.sh $B int4,bf16,fp8 > $R/profiles.log 2>&1
note profiles rc=$?
timeout 100 $B/inferlab bench --profile --model llama-3.2-1b --device cuda --repeats 3 --warmup 1 \
  --cuda-graphs on --format json > $R/profile_llama-3.2-1b_bf16.json 2> $R/profile_llama-3.2-1b_bf16.err
note profile_1b rc=$?
timeout 150 $B/inferlab_tests --gtest_filter='CudaLayerKernels*:CudaGemvStream*:CudaDecodeLayers*:PersistentDecode*:-CudaGemvStream.Llama3_8bShapes' > $R/tests.txt 2>&1
note tests rc=$? $(grep -E '^\[  PASSED|^\[  FAILED' $R/tests.txt | tr '\n' ' ')
cd $OUT && tar czf r.tgz r && rm -rf r
