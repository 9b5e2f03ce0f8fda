#!/usr/bin/env bash
# One device call for issue 34's GPU checks, each stage under its own time limit so the call ends
# inside the device's 10 minutes and returns what it has:
#   bash validation/issue34_gpu_call.sh STAGES STRESS_MINUTES FIRST_SEED
# STAGES: a comma list of `stress` (validation/stress_gpu.sh for STRESS_MINUTES from FIRST_SEED),
# `tests` (the GPU suites, run beside the stress: the GPU has the memory for both), `sigterm`
# (validation/server_sigterm_gpu.sh, 10 trials on llama-3.2-1b under load), `longA`, `longB`,
# `longC` (the long-prompt serving workloads of validation/long_context_gpu.sh, in that order). Needs build/gpurun.tar.xz
# (validation/make_gpu_bundle.sh) and third_party/tokenizers carried. Results under $OUT.
set -u
stages=${1:-stress,tests,sigterm}
minutes=${2:-4}
seed=${3:-1000}
out=${OUT:-/tmp/issue34_out}
mkdir -p "$out"
want() { [[ ",$stages," == *",$1,"* ]]; }
log() { echo "$(date -u +%H:%M:%SZ) $*" | tee -a "$out/call.log"; }
[ -x build/gpurun/inferlab ] || tar xJf build/gpurun.tar.xz -C build
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$out/gpu.txt"
log "start $(cat "$out/gpu.txt")"
tests_pid=""
if want tests; then
  (source validation/gpu_common.sh && gpu_env build/gpurun &&
   timeout 280 build/gpurun/inferlab_tests --gtest_color=no \
     --gtest_filter='Cuda*:GemvPlan*:ProjectionWorkspace*:ServingDrafter*:ServingExecutor*:EngineTuning*:OpenAiServer*-CudaServingStress.*' \
     >"$out/gpu_tests.txt" 2>&1; echo "exit $?" >>"$out/gpu_tests.txt") &
  tests_pid=$!
fi
if want stress; then
  log "stress: $minutes min from seed $seed"
  OUT="$out/stress" RUN_BUDGET_S=${RUN_BUDGET_S:-170} CASE_LIMIT_S=${CASE_LIMIT_S:-60} \
    bash validation/stress_gpu.sh build/gpurun "$minutes" "$seed" >"$out/stress.txt" 2>&1
  log "stress exit $?"
fi
if [ -n "$tests_pid" ]; then
  wait "$tests_pid"
  log "tests: $(tail -3 "$out/gpu_tests.txt" | tr '\n' ' ')"
fi
if want sigterm; then
  log "sigterm: 10 trials"
  OUT="$out/sigterm" SERVER_FLAGS="--gemm-warmup off" MAX_DELAY_MS=${MAX_DELAY_MS:-5000} \
    timeout 200 bash validation/server_sigterm_gpu.sh build/gpurun llama-3.2-1b 10 >"$out/sigterm.txt" 2>&1
  log "sigterm exit $?"
fi
for w in longA longB longC; do
  if want $w; then
    OUT="$out/long" timeout 290 bash validation/long_context_gpu.sh build/gpurun $w >"$out/$w.txt" 2>&1
    log "$w exit $?"
  fi
done
log "done"
