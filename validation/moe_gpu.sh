#!/usr/bin/env bash
# Mixture of experts on the GPU machine (issue 40), one device call per line of STAGES:
#   tests   the MoE kernel and backend tests, and the dense backend's beside them
#   logits  a random Mixtral transformers saves: the engine against transformers fp32 and bf16
#   engine  Mixtral 8x7B decode at batch 1 and 32 (inferlab bench --compare)
#   torch   the same decode steps in transformers (static cache, each experts backend, eager and
#           torch.compile): run in the same call as `engine`
#   serve   `serve --executor engine` with Mixtral 8x7B against `--executor sim` on the same trace
#           (validation/serve_engine_vs_sim.py: saturated, and half the measured capacity)
# Usage: STAGES="tests logits" bash validation/moe_gpu.sh BIN_DIR   (results under $OUT/moe)
set -uo pipefail
cd "$(dirname "$0")/.."
source validation/gpu_common.sh
bin=$1
gpu_env "$bin"
out=${OUT:-/tmp}/moe
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$out/gpu.csv"
for stage in ${STAGES:-tests logits engine torch}; do
  start=$(date +%s)
  case $stage in
    tests)
      "$bin/inferlab_tests" --gtest_filter='MoeKernels.*:CudaMoeBackend.*:CudaBackend.*:CudaHeadDimBackend.*:GemmWarmup*:MoeConfig.*' \
        > "$out/tests.txt" 2>&1
      echo "tests rc=$?" ;;
    logits) python3 validation/moe_gpu.py logits "$bin/inferlab" "$out/logits.json" > "$out/logits.log" 2>&1
      echo "logits rc=$?" ;;
    engine) python3 validation/moe_gpu.py speed-engine "$bin/inferlab" "$out/engine.json" > "$out/engine.log" 2>&1
      echo "engine rc=$?" ;;
    torch) timeout "${MOE_TORCH_TIMEOUT_S:-300}" python3 validation/moe_gpu.py speed-torch "$out/torch.json" > "$out/torch.log" 2>&1
      echo "torch rc=$?" ;;
    serve) timeout "${MOE_SERVE_TIMEOUT_S:-240}" python3 validation/serve_engine_vs_sim.py "$bin/inferlab" "$out/serve.json" \
        --model mixtral-8x7b --hardware h200 --requests "${MOE_SERVE_REQUESTS:-64}" --loads 0.5 \
        --kv-tokens 131072 > "$out/serve.log" 2>&1
      echo "serve rc=$?" ;;
  esac
  echo "$stage took $(( $(date +%s) - start )) s"
  tail -3 "$out"/*.txt "$out"/*.log 2>/dev/null | tail -8
done
