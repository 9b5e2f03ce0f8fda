#!/usr/bin/env bash
# Issue 36 on a machine of 2 or 4 GPUs: the tensor-parallel CUDA backend's tests, its logits and
# greedy tokens against one GPU's, and its decode speed beside PyTorch + NCCL + CUDA graphs
# (validation/tp_reference.py) in the same call.
#   bash validation/tp_gpu.sh BIN_DIR STAGES        (results under $OUT/tp; the call packs them:
#   timeout 560 bash validation/tp_gpu.sh ...; tar czf $OUT/tp.tar.gz -C $OUT tp; rm -r $OUT/tp)
# STAGES, comma-separated: tests, collectives (probe --collectives-only: NCCL and the one-shot
# kernel, eager and in a graph, over 2 and 4 GPUs), logits70b2l (the first 2 of 70B's 80 layers
# at its real widths over every GPU, against 1 GPU and the fp32 CPU reference split the same
# way), logits8b (8B TP 2 vs 1 GPU), speed8b (8B TP 1 and 2, engine and PyTorch), speed70b (70B
# over every GPU, engine and PyTorch), oneshot (8B TP 2 with NCCL only), profile (bench --profile
# at TP 2 with NCCL's log; PROFILE_TPS="2 4" for more degrees), server (70B over every GPU, 128
# streaming clients for about 2 minutes), steps (PyTorch TP steps over batch x length for the
# predictor: 8B at TP 2 is the fit split, 70B over every GPU held out), processes (8B over 2
# GPUs with a process per rank beside the threaded group: logits and batch-1 speed), twoshot
# (8B at batch 64 with NCCL or the two-shot kernel past 64 KB).
set -u
bin=$(cd "$1" && pwd)
stages=${2:-tests,logits8b,speed8b}
out=${OUT:-/tmp/tp_out}/tp
work=/tmp/tp_work
mkdir -p "$out" "$work"
source "$(dirname "$0")/gpu_common.sh"
gpu_env "$bin"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$out/progress.txt"; }
has() { [[ ",$stages," == *",$1,"* ]]; }
gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$out/gpu.txt"
nvidia-smi topo -m >"$out/topology.txt" 2>&1
log "stages $stages on $gpus GPUs"

bench() {  # NAME MODEL TP BATCH CONTEXT [ENV...]
  local name=$1 model=$2 tp=$3 batch=$4 context=$5
  shift 5
  env "$@" timeout 300 "$bin/inferlab" bench --model "$model" --device cuda --tp "$tp" \
    --batch "$batch" --input "$context" --output 9 --repeats 1 --cuda-graphs on --format json \
    ${BENCH_FLAGS:-} >"$out/bench_$name.json" 2>"$out/bench_$name.err"
  log "bench $name exit $?: $(python3 -c "import json;d=json.load(open('$out/bench_$name.json'));print('tpot_ms',d.get('tpot_ms'))" 2>&1 | tail -1)"
}
torch_tp() {  # NAME MODEL TP CASES [ARGS...]
  local name=$1 model=$2 tp=$3 cases=$4
  shift 4
  timeout 420 torchrun --standalone --nproc_per_node "$tp" validation/tp_reference.py \
    --model "$model" --cases "$cases" --out "$out/torch_$name.json" "$@" \
    >"$out/torch_$name.log" 2>&1
  log "torch $name exit $?: $(grep -h median "$out/torch_$name.log" | tail -3 | cut -c1-300)"
}

if has tests; then
  INFERLAB_TEST_BINARY=$bin/inferlab timeout 400 "$bin/inferlab_tests" \
    --gtest_filter="${TEST_FILTER:-TensorParallel*:TpProcessCuda*:CudaBackend.*:GemvPlan*:ServingExecutor*}" \
    >"$out/tests.txt" 2>&1
  log "tests exit $?: $(grep -E '^\[  (PASSED|FAILED)' "$out/tests.txt" | tr '\n' ' ')"
  grep -E "TP 2 vs|FAILED|Failure" "$out/tests.txt" | head -20 | tee -a "$out/progress.txt"
fi

compare_logits() {  # A.npy B.npy PREFILL > JSON
  python3 - "$@" <<'PY'
import json, sys
import numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
cos = (a * b).sum(1) / np.sqrt((a * a).sum(1) * (b * b).sum(1))
top = (a.argmax(1) == b.argmax(1))
print(json.dumps({"positions": int(a.shape[0]), "prefill": int(sys.argv[3]), "min_cosine": float(cos.min()),
                  "mean_cosine": float(cos.mean()), "top1_same": float(top.mean()),
                  "max_abs_diff_over_max_abs": float(np.abs(a - b).max() / np.abs(a).max())}))
PY
}

if has collectives; then
  timeout 240 "$bin/inferlab" probe --collectives-only --out "$out/collectives.json" \
    >"$out/collectives.txt" 2>&1
  log "collectives exit $?: $(tail -2 "$out/collectives.txt")"
  python3 - "$out/collectives.json" <<'PY' | tee -a "$out/progress.txt"
import json, sys
rows = json.load(open(sys.argv[1]))["collectives"]["points"]
for r in rows:
    if r["bytes"] in (256, 16384, 1 << 20, 1 << 24) and r["collective"] == "all_reduce":
        print(r["devices"], r["library"], r["mode"], r["bytes"], "%.2f us" % (r["median_s"] * 1e6))
PY
fi

if has logits70b2l; then  # 70B's widths, 2 layers: TP over every GPU vs 1 GPU vs the CPU's fp32
  tp70=$((gpus >= 4 ? 4 : 2))
  python3 -c "import json;c=json.load(open('data/models/llama-3-70b.json'));c['num_hidden_layers']=2;json.dump(c,open('$work/llama-3-70b-2l.json','w'))"
  python3 -c "import random,json;random.seed(70);json.dump([random.randrange(128000) for _ in range(256)],open('$work/tokens70.json','w'))"
  # The CPU reference (prefill of all 256 positions; the same logits as 200 + 56 decodes) runs
  # beside the GPU stages on the host's cores.
  timeout 500 "$bin/inferlab" logits --model "$work/llama-3-70b-2l.json" --tokens "$work/tokens70.json" \
    --prefill 256 --device cpu --tp $tp70 --out "$work/logits70_cpu.npy" >"$out/logits70_cpu.txt" 2>&1 &
  cpu_ref=$!
  for tp in 1 $tp70; do
    timeout 200 "$bin/inferlab" logits --model "$work/llama-3-70b-2l.json" --tokens "$work/tokens70.json" \
      --prefill 200 --device cuda --tp $tp --out "$work/logits70_tp$tp.npy" >"$out/logits70_tp$tp.txt" 2>&1
    log "logits 70b-2l tp $tp exit $?"
  done
fi

if has logits8b; then
  python3 -c "import random,json;random.seed(36);json.dump([random.randrange(128000) for _ in range(256)],open('$work/tokens.json','w'))"
  for tp in 1 2; do
    timeout 300 "$bin/inferlab" logits --model llama-3-8b --tokens "$work/tokens.json" \
      --prefill 200 --device cuda --tp $tp --out "$work/logits_tp$tp.npy" \
      >"$out/logits_tp$tp.txt" 2>&1
    log "logits tp $tp exit $?"
  done
  compare_logits "$work/logits_tp1.npy" "$work/logits_tp2.npy" 200 >"$out/logits_compare.json"
  log "logits compare: $(cat "$out/logits_compare.json")"
  for p in "The capital of France is" "def fibonacci(n):" "Three rivers of Europe are"; do
    for tp in 1 2; do
      timeout 200 "$bin/inferlab" generate --model llama-3-8b --prompt "$p" --max-tokens 16 \
        --temperature 0 --device cuda --tp $tp --format json >>"$out/generate_tp$tp.jsonl" \
        2>>"$out/generate_tp$tp.err"
    done
  done
  python3 - "$out/generate_tp1.jsonl" "$out/generate_tp2.jsonl" >"$out/generate_compare.txt" <<'PY'
import json, sys
def documents(path):  # generate --format json writes one indented document per run
    text, at, docs = open(path).read(), 0, []
    decoder = json.JSONDecoder()
    while text[at:].strip():
        at += len(text[at:]) - len(text[at:].lstrip())
        doc, at = decoder.raw_decode(text, at)
        docs.append(doc["tokens"])
    return docs
one, two = documents(sys.argv[1]), documents(sys.argv[2])
def same_prefix(a, b):
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
print("prompts", len(one), len(two), "equal first 16:", [a[:16] == b[:16] for a, b in zip(one, two)],
      "tokens equal before the first difference:", [same_prefix(a, b) for a, b in zip(one, two)])
PY
  log "generate: $(cat "$out/generate_compare.txt")"
  # Where the greedy tokens part: the same sequences teacher-forced (prompt as one prefill, then
  # a decode step per token, as generate runs them) at TP 1 and TP 2, and at each generated
  # position TP 1's top-1 margin beside how far TP 2's logits move from TP 1's.
  i=0
  for p in "The capital of France is" "def fibonacci(n):" "Three rivers of Europe are"; do
    i=$((i + 1))
    "$bin/inferlab" tokenize --model llama-3-8b --text "$p" --add-bos --format json \
      >"$work/prompt$i.json"
    python3 - "$work/prompt$i.json" "$out/generate_tp1.jsonl" $i "$work/greedy$i.json" <<'PY'
import json, sys
ids = json.load(open(sys.argv[1]))["tokens"][0]
text, at, docs, dec = open(sys.argv[2]).read(), 0, [], json.JSONDecoder()
while text[at:].strip():
    at += len(text[at:]) - len(text[at:].lstrip())
    doc, at = dec.raw_decode(text, at)
    docs.append(doc["tokens"])
json.dump(ids + docs[int(sys.argv[3]) - 1][:16], open(sys.argv[4], "w"))
print(len(ids))
PY
    plen=$(python3 -c "import json;print(len(json.load(open('$work/prompt$i.json'))['tokens'][0]))")
    for tp in 1 2; do
      timeout 200 "$bin/inferlab" logits --model llama-3-8b --tokens "$work/greedy$i.json" \
        --prefill "$plen" --device cuda --tp $tp --out "$work/greedy${i}_tp$tp.npy" \
        >>"$out/greedy_logits.txt" 2>&1
    done
    python3 - "$work/greedy${i}_tp1.npy" "$work/greedy${i}_tp2.npy" "$work/greedy$i.json" "$plen" \
      >>"$out/greedy_margins.jsonl" <<'PY'
import json, sys
import numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
tokens, plen = json.load(open(sys.argv[3])), int(sys.argv[4])
rows = []
for i in range(plen - 1, len(tokens) - 1):
    one, two = a[i].astype(np.float64), b[i].astype(np.float64)
    top = np.argsort(-one)[:2]
    rows.append({"generated": i - plen + 1, "tp1_argmax": int(top[0]), "tp2_argmax": int(two.argmax()),
                 "greedy_token": tokens[i + 1], "tp1_margin": float(one[top[0]] - one[top[1]]),
                 "tp1_vs_tp2_max_abs": float(np.abs(one - two).max()),
                 "tp1_vs_tp2_p99_abs": float(np.quantile(np.abs(one - two), 0.99))})
first = next((r for r in rows if r["tp1_argmax"] != r["tp2_argmax"]), None)
print(json.dumps({"prompt_tokens": plen, "first_split": first,
                  "min_margin": min(r["tp1_margin"] for r in rows),
                  "median_margin": float(np.median([r["tp1_margin"] for r in rows])),
                  "median_max_abs": float(np.median([r["tp1_vs_tp2_max_abs"] for r in rows])),
                  "rows": rows}))
PY
  done
  log "greedy margins: $(python3 -c "
import json
for l in open('$out/greedy_margins.jsonl'):
    d = json.loads(l); f = d['first_split']
    print('split', None if f is None else (f['generated'], round(f['tp1_margin'], 4)), 'median margin', round(d['median_margin'], 3), 'median max|dlogit|', round(d['median_max_abs'], 4))
" 2>&1 | tr '\n' ';')"
fi

if has processes; then
  # A process per GPU (NCCL for every collective) beside the threaded group, 8B over 2 GPUs:
  # teacher-forced logits, and decode speed at batch 1.
  [ -f "$work/tokens.json" ] ||
    python3 -c "import random,json;random.seed(36);json.dump([random.randrange(128000) for _ in range(256)],open('$work/tokens.json','w'))"
  for launch in threads processes; do
    timeout 300 "$bin/inferlab" logits --model llama-3-8b --tokens "$work/tokens.json" \
      --prefill 200 --device cuda --tp 2 --tp-launch $launch --out "$work/logits_$launch.npy" \
      >"$out/logits_$launch.txt" 2>&1
    log "logits tp 2 $launch exit $?"
  done
  compare_logits "$work/logits_threads.npy" "$work/logits_processes.npy" 200 \
    >"$out/logits_processes_vs_threads.json"
  log "processes vs threads: $(cat "$out/logits_processes_vs_threads.json")"
  BENCH_FLAGS="--tp-launch processes" bench 8b_tp2_b1_processes llama-3-8b 2 1 1024
fi

if has twoshot; then
  # 8B at batch 64 (512 KB all-reduces), TWOSHOT_TPS ranks ("2" or "2 4"): the
  # shipped thresholds, NCCL past 64 KB, and the two-shot kernel past 64 KB.
  for tp in ${TWOSHOT_TPS:-2}; do
    bench 8b_tp${tp}_b64_default llama-3-8b $tp 64 1024
    bench 8b_tp${tp}_b64_nccl llama-3-8b $tp 64 1024 INFERLAB_ENGINE_ONE_SHOT_MAX_BYTES=65536
    bench 8b_tp${tp}_b64_twoshot llama-3-8b $tp 64 1024 INFERLAB_ENGINE_ONE_SHOT_MAX_BYTES=65536 \
      INFERLAB_ENGINE_TWO_SHOT_MAX_BYTES=8388608
  done
fi

if has speed8b; then
  bench 8b_tp1_b1 llama-3-8b 1 1 1024
  bench 8b_tp2_b1 llama-3-8b 2 1 1024
  bench 8b_tp2_b64 llama-3-8b 2 64 1024
  torch_tp 8b_tp2_fused llama-3-8b 2 decode:1:1024,decode:64:1024 --layout fused --compile \
    --compile-max-batch ${COMPILE_MAX_BATCH:-64}
fi

if has oneshot; then
  bench 8b_tp2_b1_nccl llama-3-8b 2 1 1024 INFERLAB_ENGINE_ONE_SHOT_MAX_BYTES=0
  NCCL_DEBUG=WARN timeout 200 "$bin/inferlab" bench --model llama-3-8b --device cuda --tp 2 \
    --profile --format json >"$out/bench_8b_tp2_profile.json" 2>"$out/bench_8b_tp2_profile.err"
  log "profile exit $?: $(grep -v '^\s*$' "$out/bench_8b_tp2_profile.err" | tail -3)"
  for b in 128 256; do bench 8b_tp2_b$b llama-3-8b 2 $b 1024; done
fi

if has speed70b; then  # on every GPU present: 4, or 2 where only 2 are lent (70 GB each in bf16)
  tp70=$((gpus >= 4 ? 4 : 2))
  bench 70b_tp${tp70}_b1 llama-3-70b $tp70 1 1024
  [ -n "${NCCL_70B:-}" ] && bench 70b_tp${tp70}_b1_nccl llama-3-70b $tp70 1 1024 INFERLAB_ENGINE_ONE_SHOT_MAX_BYTES=0
  torch_tp 70b_tp${tp70}_fused llama-3-70b $tp70 decode:1:1024 --layout fused ${COMPILE_70B:+--compile}
fi
if has profile; then  # bench --profile's grid with NCCL's own account of any failure
  for tp in ${PROFILE_TPS:-2}; do
    NCCL_DEBUG=WARN NCCL_DEBUG_FILE=$out/nccl_profile.%p.log timeout 200 "$bin/inferlab" bench \
      --model llama-3-8b --device cuda --tp $tp --profile --format json \
      >"$out/bench_8b_tp${tp}_profile.json" 2>"$out/bench_8b_tp${tp}_profile.err"
    log "profile tp $tp exit $?: $(grep -E 'WARN|error' "$out/bench_8b_tp${tp}_profile.err" | tail -5)"
  done
fi

if has server; then  # SERVER_MODEL over every GPU, 128 streaming clients for about 2 minutes
  model=${SERVER_MODEL:-llama-3-70b}
  tp=$((gpus >= 4 ? 4 : 2))
  "$bin/inferlab" server --model "$model" --device cuda --tp $tp --port 8000 --max-num-seqs 256 \
    --max-num-batched-tokens 2048 --cuda-graphs on >"$out/server.out" 2>"$out/server.err" &
  server=$!
  if wait_for_line "serving" "$out/server.err" $server 300; then
    log "server up (tp $tp, $model)"
    timeout 200 "$bin/inferlab" loadgen --url http://127.0.0.1:8000 --rate 0 \
      --requests ${SERVER_REQUESTS:-3000} --max-concurrency 128 \
      --input-dist lognormal:256,0.6 --output-dist lognormal:128,0.6 --seed 36 \
      --vocab-size 128000 --timeout-s 120 --format json >"$out/server_load.json" \
      2>"$out/server_load.err"
    log "loadgen exit $?: $(head -c 600 "$out/server_load.json")"
  else
    log "server did not start: $(tail -3 "$out/server.err")"
  fi
  kill -TERM $server 2>/dev/null
  wait $server
  log "server exit $?: $(tail -2 "$out/server.err")"
fi
if has steps; then  # the predictor's TP ground truth; the split is fixed here, before any fit
  tp70=$((gpus >= 4 ? 4 : 2))
  grid=decode:1:512,decode:1:2048,decode:16:512,decode:16:2048,decode:64:512,decode:64:2048
  grid=$grid,decode:128:512,decode:128:2048,prefill:1:128,prefill:1:512,prefill:1:2048,prefill:4:1024
  for layout in fused separate; do
    torch_tp steps_8b_tp2_$layout llama-3-8b 2 $grid --layout $layout --quick-samples \
      --split fit --steps-out "$out/steps_8b_tp2_$layout.json"
    torch_tp steps_70b_tp${tp70}_$layout llama-3-70b $tp70 $grid --layout $layout --quick-samples \
      --split holdout --steps-out "$out/steps_70b_tp${tp70}_$layout.json"
  done
fi

if [ -n "${cpu_ref:-}" ]; then
  wait $cpu_ref
  log "logits 70b-2l cpu tp $tp70 exit $?: $(tail -1 "$out/logits70_cpu.txt")"
  compare_logits "$work/logits70_tp1.npy" "$work/logits70_tp$tp70.npy" 200 >"$out/logits70_gpu_tp_vs_1.json"
  compare_logits "$work/logits70_cpu.npy" "$work/logits70_tp$tp70.npy" 200 >"$out/logits70_gpu_tp_vs_cpu.json"
  compare_logits "$work/logits70_cpu.npy" "$work/logits70_tp1.npy" 200 >"$out/logits70_gpu1_vs_cpu.json"
  log "70b-2l tp$tp70 vs 1 GPU: $(cat "$out/logits70_gpu_tp_vs_1.json")"
  log "70b-2l tp$tp70 vs CPU: $(cat "$out/logits70_gpu_tp_vs_cpu.json")"
  log "70b-2l 1 GPU vs CPU: $(cat "$out/logits70_gpu1_vs_cpu.json")"
fi
log done
