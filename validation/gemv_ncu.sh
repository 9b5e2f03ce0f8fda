#!/usr/bin/env bash
# Nsight Compute on the streaming GEMV of Llama 3 8B's decode at batch 1, per weight format
# (issue 38's int4 and fp8 targets: where their time goes):
#   OUT=DIR bash validation/gemv_ncu.sh BIN_DIR [FORMATS]     (FORMATS default "fp8 int4 bf16")
# For each format: `inferlab bench` eagerly (graphs off, so that each kernel is its own launch),
# 3 launches of gemv_stream_kernel after the first 64 (past the prefill: a decode layer's down and
# the next layer's QKV and O), the speed-of-light, warp-state and occupancy sections, clocks left alone
# (--clock-control none). The engine takes 25% of the memory, not 90%: ncu saves and restores
# what is allocated around each replayed kernel, over PCIe. Results: $OUT/ncu/gemv_<format>.txt.
# INFERLAB names another binary of BIN_DIR (inferlab_base: validation/gemv_stream_ab.sh's base
# build), NCU_TAG is appended to the file names, and NCU_REPORT replaces the sections (e.g.
# "--metrics LIST").
set -u
cd "$(dirname "$0")/.." || exit 2
bin=$(cd "${1:-build/gpurun}" && pwd) || exit 2
formats=${2:-fp8 int4 bf16}
out=${OUT:-/tmp/gemv_ncu_out}/ncu
mkdir -p "$out"
# shellcheck source=validation/gpu_common.sh
source validation/gpu_common.sh
gpu_env "$bin"
read -r -a report <<<"${NCU_REPORT:---section SpeedOfLight --section WarpStateStats --section Occupancy}"
for f in $formats; do
  timeout 200 ncu --clock-control none -k regex:gemv_stream_kernel --launch-skip 64 \
    --launch-count 3 "${report[@]}" \
    "$bin/${INFERLAB:-inferlab}" bench --model llama-3-8b --device cuda --weights "$f" --batch 1 \
    --input 128 --output 8 --repeats 1 --warmup 0 --no-kernels --cuda-graphs off \
    --gpu-memory-utilization 0.25 >"$out/gemv_$f${NCU_TAG:-}.txt" 2>"$out/gemv_$f${NCU_TAG:-}.err"
  echo "ncu $f${NCU_TAG:-} exit $?"
done
