#!/usr/bin/env bash
# The host rule's measurements on one GPU machine (issue 39, eager steps), ~3 minutes (every part
# under its own timeout: at most 9.5 minutes in all):
#   bash validation/host_gpu.sh [BIN_DIR]          (BIN_DIR default build/gpurun)
# BIN_DIR holds inferlab from this branch and the libraries it needs
# (validation/make_gpu_bundle.sh; carry build/gpurun.tar.xz, unpacked here when BIN_DIR is
# missing). Results, flat, under $OUT/host (default /tmp/host_gpu_out/host):
#   host_info.txt        GPU, CPU (lscpu), governor, NUMA affinity, PyTorch version
#   host.json            inferlab probe --host-only (cudaLaunchKernel, cudaGraphLaunch, the CPU
#                        dispatch workload) with host_dispatch.py's torch_op_us merged in: the
#                        host file `validate --host` reads (and data/hosts/<hw>.json ships)
#   dispatch_before.json, dispatch_after.json   host_dispatch.py before and after the steps
#   host_after.json      the probe's host figures again after the steps (drift)
#   steps.json           torch_reference.py --only launch,steps --plan host --host-op-each-step:
#                        Llama 3.2 1B / 3.2 3B / 3 8B, decode batch 1 and 8 at 512 and 2048,
#                        prefill 128 and 512, eager and CUDA graphs, each eager step with the tiny
#                        op's time right before it; then its launch section again
#                        (launch_after_steps: the tiny plain Llama's layer and step base)
#   validate_host.json / validate_today.json   `inferlab validate` of those steps from host.json
#                        (the host rule) and from today's constants (--host none)
#   gtest.txt            GpuHostProbe.* (the probe's host file: shape and units)
# Each part is under `timeout`; a failed part is reported and the rest still runs. Exit 2 when
# there is no GPU or no binary (a clear message), else 0 (the log says which parts failed).
set -u
cd "$(dirname "$0")/.." || exit 2
bin=${1:-build/gpurun}
out=${OUT:-/tmp/host_gpu_out}/host
mkdir -p "$out"
if [ ! -x "$bin/inferlab" ] && [ "$bin" = build/gpurun ] && [ -f build/gpurun.tar.xz ]; then
  tar xJf build/gpurun.tar.xz -C build
fi
if [ ! -x "$bin/inferlab" ]; then
  echo "host_gpu.sh: error: no $bin/inferlab; build the bundle (validation/make_gpu_bundle.sh)" \
       "and carry build/gpurun.tar.xz" >&2
  exit 2
fi
bin=$(cd "$bin" && pwd)
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "host_gpu.sh: error: no NVIDIA GPU is visible (nvidia-smi -L failed); run this stage on" \
       "the GPU machine" >&2
  exit 2
fi
# shellcheck source=gpu_common.sh
source validation/gpu_common.sh
gpu_env "$bin"
failed=()
part() {  # part NAME SECONDS COMMAND...: runs one part under timeout, logs to $out/NAME.log
  local name=$1 seconds=$2
  shift 2
  local t0=$SECONDS
  timeout "$seconds" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  echo "[host_gpu] $name: exit $rc, $((SECONDS - t0)) s"
  [ "$rc" -eq 0 ] || failed+=("$name")
}

{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi -L
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw --format=csv
  nvidia-smi topo -m
  lscpu
  echo "governor: $(cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>/dev/null)"
  echo "affinity: $(taskset -pc $$ 2>/dev/null)"
  python3 -c "import torch, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda)"
} >"$out/host_info.txt" 2>&1
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$gpu" in
  *H200*) hw=(--hardware h200 --profile none
              --sustained validation/data/sustained_load_h200_2026-11-23.json) ;;
  *H100*) hw=(--hardware h100-sxm) ;;
  *) echo "host_gpu.sh: '$gpu' is neither an H100 nor an H200: validate is skipped"; hw=() ;;
esac
echo "[host_gpu] $gpu; results in $out"

part probe_host 45 "$bin/inferlab" probe --host-only --out "$out/host.json"
part gtest 45 "$bin/inferlab_tests" --gtest_color=no --gtest_filter='GpuHostProbe.*'
python_ok=1
python3 -c "import torch; assert torch.cuda.is_available()" >/dev/null 2>&1 || python_ok=0
if [ "$python_ok" -eq 0 ]; then
  echo "host_gpu.sh: PyTorch with CUDA is not importable: host_dispatch.py and the steps are" \
       "skipped" | tee "$out/python_missing.txt"
  failed+=(python)
else
  merge=()
  [ -f "$out/host.json" ] && merge=(--merge "$out/host.json")
  part dispatch_before 60 python3 validation/host_dispatch.py "$out/dispatch_before.json" \
    ${merge[@]+"${merge[@]}"}
  part steps 240 python3 validation/torch_reference.py "$out/steps.json" --only launch,steps \
    --plan host --host-op-each-step
  part launch_after 60 python3 validation/torch_reference.py "$out/launch_after.json" --only launch
  part dispatch_after 45 python3 validation/host_dispatch.py "$out/dispatch_after.json"
  if [ -f "$out/steps.json" ] && [ -f "$out/launch_after.json" ]; then
    python3 - "$out/steps.json" "$out/launch_after.json" <<'EOF'
import json, sys
steps, after = (json.load(open(p)) for p in sys.argv[1:])
steps["launch_after_steps"] = after["launch"]
steps["launch_after_steps_measured_at"] = after["measured_at"]
json.dump(steps, open(sys.argv[1], "w"), indent=1)
EOF
  fi
fi
part probe_host_after 30 "$bin/inferlab" probe --host-only --out "$out/host_after.json"
if [ ${#hw[@]} -gt 0 ] && [ -f "$out/steps.json" ]; then
  if [ -f "$out/host.json" ] && grep -q '"torch_op_us": [0-9]' "$out/host.json"; then
    part validate_host 15 sh -c "\"$bin/inferlab\" validate ${hw[*]} --cost calibrated \
      --host \"$out/host.json\" --data \"$out/steps.json\" --format json >\"$out/validate_host.json\""
  fi
  part validate_today 15 sh -c "\"$bin/inferlab\" validate ${hw[*]} --cost calibrated \
    --host none --data \"$out/steps.json\" --format json >\"$out/validate_today.json\""
  for f in validate_host validate_today; do
    [ -s "$out/$f.json" ] && python3 -c "
import json, sys
d = json.load(open('$out/$f.json'))
print('[host_gpu] $f:', ', '.join(f\"{g} {100 * v['mape']:.1f}% ({v['cases']})\"
                                   for g, v in sorted(d['groups'].items())))"
  done
fi
echo "[host_gpu] done in ${SECONDS} s; failed parts: ${failed[*]:-none}"
exit 0
