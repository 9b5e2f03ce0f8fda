#!/usr/bin/env bash
# One device call for the mixture-of-experts prediction (issue 40): the MoE GPU tests, then the
# engine's profile (`bench --profile`, standard grid, CUDA graphs on, bf16, random weights) of
# each MoE model, whose points record the routing of their profiled passes (moe_routing).
#   STAGES="tests qwen3-30b-a3b mixtral-8x7b serve" bash validation/moe_profile_gpu.sh BIN_DIR
# bench: Mixtral 8x7B batch 1 and 32 (context 1024) with --tp 1 and 2 (MOE_BENCH_TP), each with
# --compare. ab: MOE_AB_RUNS under each INFERLAB_ENGINE_MOE_GEMM form.
# serve: Mixtral served by the engine and by the simulator on one trace
# (validation/serve_engine_vs_sim.py, 64 requests, saturated and at half the capacity).
# Results under $OUT/moe_profile: tests.txt, profile_<model>.json (+ .err), serve.json/.log,
# gpu.csv.
set -uo pipefail
cd "$(dirname "$0")/.."
source validation/gpu_common.sh
bin=$1
gpu_env "$bin"
out=${OUT:-/tmp}/moe_profile
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$out/gpu.csv"
for stage in ${STAGES:-tests qwen3-30b-a3b mixtral-8x7b}; do
  start=$(date +%s)
  case $stage in
    tests)
      "$bin/inferlab_tests" --gtest_filter="${MOE_TEST_FILTER:-MoeKernels.*:MoeGroupedGemm.*:CudaMoeBackend.*:CudaFamilyBackend.*:CudaLayerKernels*:CudaBackend.*:CudaHeadDimBackend.*:CudaQuantBackend*:RoutingStats.*}" \
        > "$out/tests.txt" 2>&1
      echo "tests rc=$?"
      tail -3 "$out/tests.txt" ;;
    bench)
      # Mixtral decode and prefill (context 1024) on one GPU and split over two (--tp 2), each
      # beside `predict` (--compare).
      for tp in ${MOE_BENCH_TP:-1 2}; do
        for b in 1 32; do
          timeout 240 "$bin/inferlab" bench --model mixtral-8x7b --device cuda --tp "$tp" \
            --batch "$b" --input 1024 --output 17 --repeats 3 --compare --format json \
            > "$out/bench_mixtral_tp${tp}_b$b.json" 2> "$out/bench_mixtral_tp${tp}_b$b.err"
          echo "bench tp $tp batch $b rc=$?"
        done
      done ;;
    ab)
      # Each of MOE_AB_RUNS (model:mode:batch[:input]; mode default, per_expert or one_launch)
      # beside `predict`, context 1024 unless given, in the same call: the experts' GEMM forms under
      # INFERLAB_ENGINE_MOE_GEMM (the per-expert cuBLASLt GEMMs, or the one-launch grouped GEMM
      # wherever it fits).
      for run in ${MOE_AB_RUNS:-qwen3-30b-a3b:default:1 qwen3-30b-a3b:default:32 qwen3-30b-a3b:per_expert:32 qwen3-30b-a3b:one_launch:32}; do
        IFS=: read -r model mode b input <<< "$run"
        input=${input:-1024}
        [ "$mode" = default ] && mode_env="" || mode_env=$mode
        INFERLAB_ENGINE_MOE_GEMM=$mode_env timeout 200 "$bin/inferlab" bench \
          --model "$model" --device cuda --batch "$b" --input "$input" --output 17 --repeats 3 \
          --compare --format json > "$out/bench_${model}_${mode}_b${b}_t$input.json" \
          2> "$out/bench_${model}_${mode}_b${b}_t$input.err"
        echo "$model $mode batch $b input $input rc=$?"
      done ;;
    serve)
      timeout "${MOE_SERVE_TIMEOUT_S:-300}" python3 validation/serve_engine_vs_sim.py "$bin/inferlab" \
        "$out/serve.json" --model mixtral-8x7b --hardware h200 --requests 64 --loads 0.5 \
        --kv-tokens 131072 > "$out/serve.log" 2>&1
      echo "serve rc=$?"
      tail -4 "$out/serve.log" ;;
    *)
      timeout "${MOE_PROFILE_TIMEOUT_S:-240}" "$bin/inferlab" bench --profile --model "$stage" \
        --device cuda --repeats 3 --warmup 1 --cuda-graphs on --format json \
        > "$out/profile_$stage.json" 2> "$out/profile_$stage.err"
      echo "profile $stage rc=$?"
      tail -3 "$out/profile_$stage.err" ;;
  esac
  echo "$stage took $(( $(date +%s) - start )) s"
done
