#!/usr/bin/env bash
# The families the spec table added (issue 40) on the GPU machine, one device call per STAGES:
#   tests   the family, layer-kernel, dense, quantized, head-dim and MoE backend tests
#   logits  Phi-3, Qwen3 and Qwen3-MoE checkpoints transformers writes: the engine against
#           transformers fp32 and bf16 (validation/family_gpu.py)
#   engine  Qwen3-30B-A3B decode at batch 1 and 32 (inferlab bench --compare: the prediction
#           beside it), MOE_MODEL=qwen3-30b-a3b validation/moe_gpu.py speed-engine
#   torch   the same steps in transformers (grouped_mm experts, torch.compile reduce-overhead),
#           in the same call as `engine`
# Usage: STAGES="tests logits" bash validation/family_gpu.sh BIN_DIR   (results under $OUT/family)
set -uo pipefail
cd "$(dirname "$0")/.."
source validation/gpu_common.sh
bin=$1
gpu_env "$bin"
out=${OUT:-/tmp}/family
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$out/gpu.csv"
export MOE_MODEL=${MOE_MODEL:-qwen3-30b-a3b}
for stage in ${STAGES:-tests logits}; do
  start=$(date +%s)
  case $stage in
    tests)
      "$bin/inferlab_tests" --gtest_filter='FamilySpec.*:CudaFamilyBackend.*:CudaLayerKernels*:CudaBackend.*:CudaQuantBackend*:CudaHeadDimBackend.*:CudaMoeBackend.*:MoeKernels.*:MoeForward.*:GemmWarmup*' \
        > "$out/tests.txt" 2>&1
      echo "tests rc=$?" ;;
    logits) python3 validation/family_gpu.py "$bin/inferlab" "$out/family_logits.json" > "$out/logits.log" 2>&1
      echo "logits rc=$?" ;;
    engine) python3 validation/moe_gpu.py speed-engine "$bin/inferlab" "$out/engine.json" > "$out/engine.log" 2>&1
      echo "engine rc=$?" ;;
    torch) MOE_TORCH_BACKENDS=${MOE_TORCH_BACKENDS:-grouped_mm} timeout "${MOE_TORCH_TIMEOUT_S:-300}" \
        python3 validation/moe_gpu.py speed-torch "$out/torch.json" > "$out/torch.log" 2>&1
      echo "torch rc=$?" ;;
  esac
  echo "$stage took $(( $(date +%s) - start )) s"
  tail -3 "$out"/*.txt "$out"/*.log 2>/dev/null | tail -8
done
