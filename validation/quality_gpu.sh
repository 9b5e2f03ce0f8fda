#!/usr/bin/env bash
# Issue 37 on a machine of 4 GPUs (fewer work, slower): models trained here, then every quality
# figure the issue asks for, in stages:
#   bash validation/quality_gpu.sh BIN_DIR STAGE...      (from the repository's root or not)
# BIN_DIR holds inferlab and the libraries it needs (validation/make_gpu_bundle.sh); the Llama 3
# tokenizer is at third_party/tokenizers/llama3. Results: $OUT/quality (flat, small files);
# models and scratch: $QUALITY_WORK (default /tmp/quality_work, local disk, kept between calls on
# the same machine).
#
# Stages, in the order given:
#   train       starts three trainings in the background (setsid nohup: they outlive the call)
#               and returns: the target on GPU 0 (TARGET_MINUTES, default 6), the same target
#               again, same seed and same step count (--steps-from the first's plan.json), on
#               GPU 1 (the rerun that must reproduce held-out perplexity within 1%), the draft on
#               GPU 2 (DRAFT_MINUTES, default 3). Each adds ~1-1.5 min of start-up (imports,
#               reading and tokenizing ~60 MB of Python sources) and saving.
#   wait_train  waits (up to TRAIN_WAIT_S, default 530 s) until all three wrote train_stats.json,
#               or their process ended without it; copies the statistics and log tails to $OUT.
#   eval        on the trained models, lanes in parallel (each command under `timeout`):
#     GPU 0  `inferlab perplexity --device cuda` per format, on the held-out text and on the CPU's
#            slice of it
#     GPU 1  transformers' perplexity (perplexity_reference.py) of target and rerun, same windows;
#            then the engine's on the two int4 checkpoints written by `quantize` (RTN, GPTQ)
#     GPU 2  logprobs: `inferlab server` on the target, /v1/completions echo + max_tokens 0 +
#            logprobs 3 against transformers' log-softmax (logprobs_reference.py)
#     GPU 3  speculation, alone on its GPU and on CPU cores 0-1: greedy generate of 8 held-out
#            prompts (~200 tokens, 128 new) plain, --speculative ngram,k=4 and draft=DRAFT,k=4,
#            CUDA graphs on, each cold and warm (--warmup-runs 1); `bench --speculative` costs; then the simulator with the measured
#            acceptance (quality_speculation.py)
#     GPUs 2+3 after both: greedy tokens of `generate --tp 2` against --tp 1 on 3 prompts
#     CPU    (cores 2..) `quantize` int4 RTN and int4 GPTQ (--calibration on training text,
#            CALIB_TOKENS, default 2048: the Hessians come from one single-threaded fp32 pass),
#            then `perplexity --device cpu` per format on the held-out slice (CPU_TOKENS, ~950
#            tokens: one window; the reference is single-threaded fp32 at ~45 ms a token here)
#   EVAL_LANES picks lanes (speculation quantize cpu_ppl gpu_ppl transformers logprobs tp),
#   TRAIN_ROLES the trainings (target target_rerun draft); all by default.
#   At EVAL_BUDGET_S (default 500 s) whatever still runs is stopped and the summary is written:
#   quality_summary.json and quality_table.md (quality_table.py).
# wait_train and eval also keep the whole invocation within CALL_BUDGET_S (default 570 s).
#
# The device calls (each under 10 minutes, the machine held between them):
#   1. bash validation/quality_gpu.sh build/gpurun train wait_train     (~8 min)
#   2. bash validation/quality_gpu.sh build/gpurun wait_train eval      (~8.5 min)
set -u
if [ $# -lt 2 ]; then
  echo "usage: bash validation/quality_gpu.sh BIN_DIR STAGE... (train, wait_train, eval)" >&2
  exit 2
fi
bin=$(cd "$1" && pwd) || exit 2
shift
cd "$(dirname "$0")/.." || exit 2
out=${OUT:-/tmp/quality_out}/quality
work=${QUALITY_WORK:-/tmp/quality_work}
mkdir -p "$out" "$work"
# shellcheck source=validation/gpu_common.sh
source validation/gpu_common.sh
gpu_env "$bin"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export TOKENIZERS_PARALLELISM=true PYTHONUNBUFFERED=1
inferlab=$bin/inferlab
target_minutes=${TARGET_MINUTES:-6}
draft_minutes=${DRAFT_MINUTES:-3}
calib_tokens=${CALIB_TOKENS:-2048}
cpu_tokens=${CPU_TOKENS:-950}
spec_prompts=${SPEC_PROMPTS:-8}
spec_new=${SPEC_NEW_TOKENS:-128}
ctx=1024 stride=512
# Which models `train` trains and `wait_train` waits for, and which lanes `eval` runs (all by
# default): e.g. TRAIN_ROLES="target draft" EVAL_LANES="speculation tp" for speculation alone.
train_roles=${TRAIN_ROLES:-target target_rerun draft}
eval_lanes=${EVAL_LANES:-speculation quantize cpu_ppl gpu_ppl transformers logprobs tp}
trains() { [[ " $train_roles " == *" $1 "* ]]; }
evaluates() { [[ " $eval_lanes " == *" $1 "* ]]; }
# Seconds this invocation may take in all (a device call's limit is 600 s): wait_train and eval
# fit what they do into what is left of it.
call_budget=${CALL_BUDGET_S:-570}
# The engine's device for the GPU lanes: cpu only for a dry run of the whole flow on a machine
# without a GPU (a tiny checkpoint in $QUALITY_WORK, a stand-in nvidia-smi on PATH).
dev=${QUALITY_DEVICE:-cuda}
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$out/progress.txt"; }
gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | wc -l)
[ "$gpus" -ge 1 ] || { log "no GPU"; exit 1; }
gpu_of() { echo $(($1 % gpus)); }  # GPU N, or a shared one where fewer than 4
ncpu=$(nproc)
# A job's stderr kept in $out only when it has something in it.
keep_err() { [ -s "$1" ] && tail -c 4000 "$1" >"$out/$(basename "$1")"; rm -f "$1"; }
field() {  # FILE KEY: a top-level field of a JSON file, or "-"
  python3 -c "import json,sys
try: print(json.load(open(sys.argv[1]))[sys.argv[2]])
except Exception: print('-')" "$1" "$2"
}

record_machine() {  # the GPUs, the Python packages, the cores and the date, once per call
  [ -f "$out/gpu.txt" ] && return
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$out/gpu.txt"
  (  # in the background: importing torch takes seconds
    python3 -c "import torch, transformers, tokenizers; print('torch', torch.__version__, 'transformers', transformers.__version__, 'tokenizers', tokenizers.__version__)" 2>&1 | tail -1
    echo "cpus $ncpu"
  ) >"$out/versions.txt" &
  date -u +%Y-%m-%dT%H:%M:%SZ >"$out/date.txt"
}

stage_train() {
  if [ ! -f third_party/tokenizers/llama3/tokenizer.json ]; then
    log "train: no third_party/tokenizers/llama3/tokenizer.json (carry third_party/tokenizers)"
    return 1
  fi
  record_machine
  rm -rf "$work/target" "$work/target_rerun" "$work/draft"
  launch() {  # NAME GPU MINUTES ARGS...
    local name=$1 gpu=$2 minutes=$3
    shift 3
    mkdir -p "$work/$name"
    # Minutes of training, plus start-up and saving, plus the rerun's wait for the plan.
    local limit
    limit=$(python3 -c "print(int($minutes * 60 + 900))")
    CUDA_VISIBLE_DEVICES=$gpu setsid nohup timeout "$limit" python3 validation/train_small_llama.py \
      --out "$work/$name" --minutes "$minutes" --seed 37 "$@" \
      >"$work/train_$name.log" 2>&1 </dev/null &
    echo $! >"$work/train_$name.pid"
    log "train $name on GPU $gpu, $minutes min: pid $!"
  }
  # TRAIN_GPUS="T R D": the GPUs of the target, the rerun and the draft (default 0 1 2), so that
  # other work can have the rest of the machine meanwhile.
  local -a on=(${TRAIN_GPUS:-0 1 2})
  trains target && launch target "$(gpu_of "${on[0]}")" "$target_minutes" --role target
  trains target_rerun && launch target_rerun "$(gpu_of "${on[1]}")" "$target_minutes" \
    --role target --steps-from "$work/target/plan.json"
  trains draft && launch draft "$(gpu_of "${on[2]}")" "$draft_minutes" --role draft
}

stage_wait_train() {
  local deadline=$((SECONDS + ${TRAIN_WAIT_S:-530})) name pending
  # Within the call's budget, leaving room for the stages after it.
  [ $deadline -gt $((call_budget - 10)) ] && deadline=$((call_budget - 10))
  while :; do
    pending=0
    for name in $train_roles; do
      [ -f "$work/$name/train_stats.json" ] && continue
      if [ -f "$work/train_$name.pid" ] && kill -0 "$(cat "$work/train_$name.pid")" 2>/dev/null; then
        pending=1
      fi
    done
    [ $pending = 0 ] && break
    if [ $SECONDS -ge $deadline ]; then
      log "wait_train: deadline passed, still training"
      break
    fi
    sleep 5
  done
  for name in target target_rerun draft; do
    if [ -f "$work/$name/train_stats.json" ]; then
      cp "$work/$name/train_stats.json" "$out/train_stats_$name.json"
      log "trained $name: $(python3 -c "import json,sys;d=json.load(open(sys.argv[1]));print('steps',d['steps'],'s %.0f'%d['seconds'],'loss %.3f'%d['losses'][-1][1],'train_bytes',d['train_bytes'],'params',d['parameters'])" "$work/$name/train_stats.json")"
    else
      log "train $name: no train_stats.json"
    fi
    [ -f "$work/train_$name.log" ] && grep -v "^\s*$" "$work/train_$name.log" | tail -20 >"$out/train_$name.log"
  done
  ls -la "$work/target/model" >"$out/checkpoint_files.txt" 2>&1
}

# --- eval ------------------------------------------------------------------------------------

# `timeout --foreground`: timeout otherwise moves into a process group of its own, out of reach of
# the eval's budget, which stops each lane's process group.
limit() { timeout --foreground "$@"; }
target=$work/target/model draft=$work/draft/model
texts=$work/texts
# name|flags of the formats the engine quantizes while loading (int4_rtn and int4_gptq are
# checkpoints written by `quantize`, below).
formats=("bf16|--weights bf16" "int8|--weights int8" "fp8|--weights fp8" "int4|--weights int4"
  "kv_fp8|--kv fp8" "kv_int8|--kv int8" "w8a8|--weights int8 --activations int8")

ppl() {  # gpu|cpu full|slice NAME MODEL SECONDS [FLAGS...]: ppl_{gpu,cpu}_{full,slice}_NAME.json
  local lane=$1 which=$2 name=$3 model=$4 seconds=$5 text=$texts/heldout.txt device=cpu
  shift 5
  [ "$which" = slice ] && text=$texts/heldout_cpu.txt
  [ "$lane" = gpu ] && device=$dev
  local file=$out/ppl_${lane}_${which}_$name.json
  limit "$seconds" "$inferlab" perplexity --model "$model" --text "$text" --context $ctx \
    --stride $stride --device "$device" --format json "$@" >"$file" 2>"$work/ppl_${lane}_${which}_$name.err"
  local rc=$?
  keep_err "$work/ppl_${lane}_${which}_$name.err"
  log "ppl $lane $which $name exit $rc: $(field "$file" perplexity)"
}

wait_for_file() {  # FILE SECONDS
  local until=$((SECONDS + $2))
  while [ ! -f "$1" ] && [ $SECONDS -lt $until ]; do sleep 2; done
  [ -f "$1" ]
}

lane_quantize() {  # CPU: both int4 checkpoints at once; a marker file when each is ready (or failed)
  (
    limit 180 "$inferlab" quantize --model "$target" --out "$work/int4_rtn" --weights int4 \
      --format json >"$out/quantize_int4_rtn.json" 2>"$work/quantize_int4_rtn.err"
    log "quantize int4 rtn exit $?"
    keep_err "$work/quantize_int4_rtn.err"
    touch "$work/int4_rtn.done"
  ) &
  local t0=$SECONDS rtn=$!
  limit "${GPTQ_TIMEOUT_S:-360}" "$inferlab" quantize --model "$target" --out "$work/int4_gptq" \
    --weights int4 --calibration "$work/target/calibration.txt" --calibration-tokens "$calib_tokens" \
    --format json >"$out/quantize_int4_gptq.json" 2>"$work/quantize_int4_gptq.err"
  log "quantize int4 gptq ($calib_tokens calibration tokens) exit $? after $((SECONDS - t0)) s"
  keep_err "$work/quantize_int4_gptq.err"
  echo $((SECONDS - t0)) >"$out/quantize_int4_gptq_seconds.txt"
  touch "$work/int4_gptq.done"
  wait $rtn
}

lane_cpu_ppl() {  # CPU: every format on the slice, one process each (the reference is 1 thread)
  local f pids=()
  for f in "${formats[@]}"; do
    # shellcheck disable=SC2086
    ppl cpu slice "${f%%|*}" "$target" 420 ${f#*|} &
    pids+=($!)
  done
  for q in rtn gptq; do
    (wait_for_file "$work/int4_$q.done" 400 && [ -f "$work/int4_$q/config.json" ] &&
      ppl cpu slice "int4_$q" "$work/int4_$q" 400) &
    pids+=($!)
  done
  wait "${pids[@]}"
}

lane_gpu_ppl() {  # GPU 0: every format on the held-out text and on the CPU's slice
  export CUDA_VISIBLE_DEVICES=$((0 % gpus))
  local f which
  for f in "${formats[@]}"; do
    for which in full slice; do
      # shellcheck disable=SC2086
      ppl gpu "$which" "${f%%|*}" "$target" 90 ${f#*|}
    done
  done
}

lane_transformers() {  # GPU 1: transformers' perplexity (same windows), then the int4 checkpoints
  export CUDA_VISIBLE_DEVICES=$((1 % gpus))
  local name model which text
  for job in "target full" "target_rerun full" "target slice"; do
    read -r name which <<<"$job"
    model=$work/$name/model text=$texts/heldout.txt
    [ "$which" = slice ] && text=$texts/heldout_cpu.txt
    [ "$name" = target_rerun ] && text=$work/target_rerun/heldout.txt
    limit 200 python3 validation/perplexity_reference.py "$model" "$text" --context $ctx \
      --stride $stride >"$out/ppl_transformers_${which}_$name.json" 2>"$work/tf_$name.err"
    log "transformers $name $which exit $?: $(field "$out/ppl_transformers_${which}_$name.json" perplexity)"
    keep_err "$work/tf_$name.err"
  done
  local q which
  for q in rtn gptq; do  # then the int4 checkpoints from `quantize`, as they come
    if ! wait_for_file "$work/int4_$q.done" 420 || [ ! -f "$work/int4_$q/config.json" ]; then
      continue
    fi
    for which in full slice; do ppl gpu "$which" "int4_$q" "$work/int4_$q" 90; done
  done
}

lane_logprobs() {  # GPU 2: the server's echo logprobs against transformers
  export CUDA_VISIBLE_DEVICES=$((2 % gpus))
  local port=${LOGPROBS_PORT:-8137}
  "$inferlab" server --model "$target" --device "$dev" --port "$port" --kv-tokens 16384 \
    --gpu-memory-utilization 0.5 --gemm-warmup off --served-model-name target \
    >"$work/server.out" 2>"$work/server.err" &
  local server=$!
  if wait_for_line "serving" "$work/server.err" $server 150; then
    log "server up: $(head -1 "$work/server.err")"
    limit 200 python3 validation/logprobs_reference.py --checkpoint "$target" \
      --text "$texts/heldout.txt" --url "http://127.0.0.1:$port" --model target --snippets 4 \
      --tokens 256 --top 3 >"$out/logprobs_compare.json" 2>"$work/logprobs.err"
    log "logprobs exit $?: $(python3 -c "import json,sys;d=json.load(open(sys.argv[1]));print('max %.4f mean %.5f top1 %.3f top3 %.3f'%(d['max_abs_diff'],d['mean_abs_diff'],d['top1_agreement'],d['top3_set_agreement']))" "$out/logprobs_compare.json" 2>&1 | tail -1)"
    keep_err "$work/logprobs.err"
  else
    log "server did not start"
  fi
  kill -TERM $server 2>/dev/null
  wait $server 2>/dev/null
  tail -c 3000 "$work/server.err" >"$out/server.err"
}

on_spec_cores() {  # SECONDS COMMAND...: the timing lane's commands on CPU cores 0-1 (the rest
  # of the eval runs off them)
  if [ "$ncpu" -ge 8 ] && command -v taskset >/dev/null; then
    taskset -c 0,1 timeout --foreground "$@"
  else
    timeout --foreground "$@"
  fi
}

summarize_speculation() {  # the speculation lane's runs so far, the simulator beside them
  local runs=$work/spec hw=h100-sxm
  [ -d "$runs" ] || return
  nvidia-smi --query-gpu=name --format=csv,noheader -i $((3 % gpus)) | grep -qi h200 && hw=h200
  limit 120 python3 validation/quality_speculation.py --runs "$runs" --inferlab "$inferlab" \
    --target "$target" --draft "$draft" --hardware $hw --k 4 --new-tokens "$spec_new" \
    >"$out/speculation.json" 2>"$work/speculation.err"
  log "speculation summary exit $?"
  keep_err "$work/speculation.err"
  python3 - "$runs" "$out/spec_runs.json" <<'PY'
import glob, json, os, sys
rows = []
for p in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    try:
        d = json.load(open(p))
    except ValueError:
        continue
    d["run"] = os.path.basename(p)[:-5]
    d.pop("text", None)
    rows.append(d)
json.dump(rows, open(sys.argv[2], "w"))
PY
  cat "$runs"/*.err 2>/dev/null | grep -v "^\s*$" | tail -40 >"$out/spec_runs.err"
}

lane_speculation() {  # GPU 3, alone: plain, n-gram and draft speculation, greedy, batch 1
  export CUDA_VISIBLE_DEVICES=$((3 % gpus))
  local runs=$work/spec i mode args
  rm -rf "$runs" && mkdir -p "$runs"
  gen() {  # NAME PROMPT [FLAGS...]
    local name=$1 prompt=$2
    shift 2
    on_spec_cores 90 "$inferlab" generate --model "$target" --prompt-file "$prompt" \
      --max-tokens "$spec_new" --temperature 0 --device "$dev" --cuda-graphs on --format json "$@" \
      >"$runs/$name.json" 2>"$runs/$name.err"
    local rc=$?
    [ $rc = 0 ] || log "generate $name exit $rc: $(tail -c 300 "$runs/$name.err")"
  }
  gen warmup "$texts/prompt_0.txt"
  gen warmup_draft "$texts/prompt_0.txt" --speculative "draft=$draft,k=4"
  for ((i = 0; i < spec_prompts; ++i)); do
    for mode in plain ngram draft; do  # interleaved: any drift touches every mode alike
      args=()
      [ $mode = ngram ] && args=(--speculative "ngram,k=4")
      [ $mode = draft ] && args=(--speculative "draft=$draft,k=4")
      gen "${mode}_$i" "$texts/prompt_$i.txt" "${args[@]}"
      # The steady state: the same request once untimed first (graphs and plans made).
      gen "warm_${mode}_$i" "$texts/prompt_$i.txt" --warmup-runs 1 "${args[@]}"
    done
  done
  log "speculation runs done; load average $(cut -d' ' -f1-3 /proc/loadavg)"
  local input
  input=$(python3 -c "import json,glob;r=[json.load(open(p))['prompt_tokens'] for p in glob.glob('$runs/plain_*.json')];print(round(sum(r)/len(r)+$spec_new/2) if r else 264)" 2>/dev/null || echo 264)
  for mode in ngram draft; do
    args=(--speculative "ngram,k=4")
    [ $mode = draft ] && args=(--speculative "draft=$draft,k=4")
    on_spec_cores 120 "$inferlab" bench --model "$target" --device "$dev" --input "$input" \
      --repeats 30 --cuda-graphs on "${args[@]}" --format json >"$runs/costs_$mode.json" \
      2>"$runs/costs_$mode.err"
    log "bench --speculative $mode exit $?"
    cp "$runs/costs_$mode.json" "$out/spec_costs_$mode.json" 2>/dev/null
  done
  summarize_speculation
}

summarize_tp() {  # greedy tokens of TP 2 against TP 1, the first 16 and all 32
  python3 - "$work" "$out/tp_greedy.json" <<'PY'
import json, os, sys
rows = []
for i in range(3):
    try:
        a = json.load(open(os.path.join(sys.argv[1], "tp1_%d.json" % i)))["tokens"]
        b = json.load(open(os.path.join(sys.argv[1], "tp2_%d.json" % i)))["tokens"]
    except (OSError, ValueError, KeyError):
        rows.append({"prompt": i, "error": "a run failed"})
        continue
    first = next((j for j, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    rows.append({"prompt": i, "equal_of_first_16": sum(x == y for x, y in zip(a[:16], b[:16])),
                 "equal_of_32": sum(x == y for x, y in zip(a, b)), "first_difference": first,
                 "tp1": a, "tp2": b})
json.dump({"prompts": rows, "equal_of_first_16_total": sum(r.get("equal_of_first_16", 0) for r in rows)},
          open(sys.argv[2], "w"), indent=1)
PY
}

lane_tp() {  # GPUs 2 and 3: greedy tokens with tensor parallelism 2 against 1 GPU
  [ "$gpus" -ge 2 ] || { log "tp: one GPU"; return; }
  export CUDA_VISIBLE_DEVICES=$((2 % gpus)),$((3 % gpus))
  [ "$gpus" -lt 4 ] && export CUDA_VISIBLE_DEVICES=0,1
  local i tp
  for ((i = 0; i < 3; ++i)); do
    for tp in 1 2; do
      limit 100 "$inferlab" generate --model "$target" --prompt-file "$texts/prompt_$i.txt" \
        --max-tokens 32 --temperature 0 --device "$dev" --tp $tp --format json \
        >"$work/tp${tp}_$i.json" 2>"$work/tp${tp}_$i.err"
      log "generate tp $tp prompt $i exit $?"
      keep_err "$work/tp${tp}_$i.err"
    done
  done
  summarize_tp
  log "tp greedy: $(field "$out/tp_greedy.json" equal_of_first_16_total) of 48 first tokens equal"
}

stage_eval() {
  local t0=$SECONDS budget=${EVAL_BUDGET_S:-500}
  # Within the call's budget: what it has left, less ~20 s for the summary.
  if [ $((call_budget - SECONDS - 20)) -lt "$budget" ]; then
    budget=$((call_budget - SECONDS - 20))
    log "eval: budget cut to $budget s by the call's (CALL_BUDGET_S $call_budget)"
  fi
  for m in "$target" "$draft"; do
    [ -f "$m/config.json" ] || { log "eval: no model at $m (train, wait_train first)"; return 1; }
  done
  record_machine
  rm -rf "$work/int4_rtn" "$work/int4_gptq" "$work"/int4_*.done "$work/spec" "$work"/tp[12]_*.json
  limit 60 python3 validation/quality_texts.py --inferlab "$inferlab" --model "$target" \
    --heldout "$work/target/heldout.txt" --out "$texts" --cpu-tokens "$cpu_tokens" \
    --prompts $((spec_prompts > 3 ? spec_prompts : 3)) --prompt-tokens 200 >"$out/texts.txt" 2>&1 || {
    log "eval: quality_texts.py failed: $(tail -3 "$out/texts.txt")"
    return 1
  }
  cp "$texts/texts.json" "$out/texts.json"
  log "texts: $(cat "$out/texts.txt")"
  # Every lane but the timing one runs off cores 0-1 (children inherit the affinity).
  if [ "$ncpu" -ge 8 ] && command -v taskset >/dev/null; then
    taskset -pc "2-$((ncpu - 1))" $$ >/dev/null
  fi
  set -m  # each lane in its own process group, so that one past the budget can be stopped
  local lanes=() spec_pid=0 logprobs_pid=0 lane
  for lane in speculation quantize cpu_ppl gpu_ppl transformers logprobs; do
    evaluates $lane || continue
    lane_$lane &
    lanes+=($!)
    [ $lane = speculation ] && spec_pid=$!
    [ $lane = logprobs ] && logprobs_pid=$!
  done
  if evaluates tp; then
    (
      # (A lane not run has pid 0, which kill -0 would take for this process group.)
      while { [ "$spec_pid" != 0 ] && kill -0 "$spec_pid" 2>/dev/null; } ||
        { [ "$logprobs_pid" != 0 ] && kill -0 "$logprobs_pid" 2>/dev/null; }; do sleep 2; done
      lane_tp
    ) &
    lanes+=($!)
  fi
  local running
  while :; do
    running=0
    for p in "${lanes[@]}"; do kill -0 "$p" 2>/dev/null && running=1; done
    [ $running = 0 ] && break
    if [ $((SECONDS - t0)) -ge "$budget" ]; then
      log "eval: budget of $budget s reached; stopping what still runs"
      for p in "${lanes[@]}"; do kill -TERM -- "-$p" 2>/dev/null; done
      sleep 3
      for p in "${lanes[@]}"; do kill -KILL -- "-$p" 2>/dev/null; done
      break
    fi
    sleep 2
  done
  wait 2>/dev/null
  set +m
  # Summaries a stopped lane did not write (both are quick); a lane not asked for has none.
  evaluates speculation && { [ -s "$out/speculation.json" ] || summarize_speculation; }
  evaluates tp && { [ -s "$out/tp_greedy.json" ] || summarize_tp; }
  log "eval lanes done after $((SECONDS - t0)) s"
  limit 60 python3 validation/quality_table.py "$out" >"$out/quality_table.md" 2>"$work/table.err"
  log "table exit $?"
  keep_err "$work/table.err"
  cat "$out/quality_table.md"
}

for stage in "$@"; do
  case $stage in
    train) stage_train ;;
    wait_train) stage_wait_train ;;
    eval) stage_eval ;;
    *) log "unknown stage '$stage' (train, wait_train, eval)" ;;
  esac
done
