#!/usr/bin/env bash
# Issue 34 on the GPU (random weights), in order of need; each stage writes under $OUT as it ends:
#  issue:  the issue's workload (Llama 3 8B, prompts drawn past its 8192-token context) with CUDA
#          graphs on: it must run to the end with the over-long prompts rejected;
#  ctx:    Llama 3.1 8B (128k context) at 32k and 120k-token prompts: `generate` with graphs on
#          and off (the tokens must be equal) and `bench` (prefill time, decode step time);
#  profile: `bench --profile --profile-grid long` of Llama 3.1 8B (decode at 6k-64k contexts,
#          prefill chunks after cached prefixes up to 128k), the calibration's long-context data;
#  long:   three long-prompt serving workloads (prompts 2k-100k tokens) measured with their
#          iteration and request CSVs, for the simulator's tails (validation/long_prompt_tails.py
#          runs the simulator on the same streams).
#   OUT=DIR bash validation/long_context_gpu.sh BIN_DIR [STAGES]   (default "issue ctx profile long")
set -u
bin=$(cd "$1" && pwd)
stages=${2:-issue ctx profile long}
out=${OUT:-/tmp/long_context_out}
mkdir -p "$out"
source "$(dirname "$0")/gpu_common.sh"
gpu_env "$bin"
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$out/progress.txt"; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$out/gpu.txt"

# A prompt of about N tokens: single-token English words (" the", " of", ...), drawn at random.
make_prompt() {
  python3 - "$1" "$2" <<'EOF'
import random, sys
words = ("the of and to in is that for it as was with be on not he this are or his by from at "
         "which but have an they you were her she there one all we their been has when who will "
         "more if no out so said what up its about into than them can only other new some could "
         "time these two may then do first any my now such like our over man me even most made "
         "after also did many before must through back years where much your way well down").split()
random.seed(int(sys.argv[1]))
open(sys.argv[2], "w").write(" ".join(random.choice(words) for _ in range(int(sys.argv[1]))))
EOF
}

if [[ " $stages " == *" issue "* ]]; then
  log "issue: the issue's command, graphs on"
  timeout 300 "$bin/inferlab" serve --model llama-3-8b --hardware h200 --executor engine \
    --device cuda --framework inferlab --cuda-graphs on --policy chunked --max-num-seqs 128 \
    --max-num-batched-tokens 4096 --kv-tokens 200000 --prefix-caching --requests 300 \
    --input-dist lognormal:1500,0.9 --output-dist lognormal:300,0.8 \
    --shared-prefix tokens=1024,groups=4,share=0.5 --seed 11 --rate 5 --format json \
    --requests-csv "$out/issue_requests.csv" --iterations-csv "$out/issue_iterations.csv" \
    >"$out/issue.json" 2>"$out/issue.err"
  log "issue: exit $?"
fi

if [[ " $stages " == *" ctx "* ]]; then
  for n in 32000 120000; do
    make_prompt "$n" "$out/prompt_$n.txt"
    for graphs in on off; do
      log "ctx: generate $n words, graphs $graphs"
      timeout 240 "$bin/inferlab" generate --model llama-3.1-8b --device cuda \
        --prompt-file "$out/prompt_$n.txt" --max-tokens 32 --cuda-graphs "$graphs" \
        --format json >"$out/generate_${n}_$graphs.json" 2>"$out/generate_${n}_$graphs.err"
      log "ctx: exit $?"
    done
  done
  for input in 32768 120000; do
    log "ctx: bench --input $input"
    timeout 240 "$bin/inferlab" bench --model llama-3.1-8b --device cuda --cuda-graphs on \
      --input "$input" --output 64 --repeats 2 --warmup 1 --no-kernels --format json \
      >"$out/bench_$input.json" 2>"$out/bench_$input.err"
    log "ctx: exit $?"
  done
fi

if [[ " $stages " == *" profile "* ]]; then
  log "profile: the long-context grid"
  timeout 300 "$bin/inferlab" bench --profile --profile-grid long --model llama-3.1-8b \
    --device cuda --cuda-graphs on --repeats 3 --warmup 1 --format json \
    >"$out/engine_profile_long.json" 2>"$out/engine_profile_long.err"
  log "profile: exit $?"
fi

want() { [[ " $stages " == *" $1 "* ]]; }
if want long || want longA || want longB || want longC; then
  # Two workloads of long prompts on Llama 3.1 8B, chunked prefill beside decodes, graphs on.
  common=(serve --model llama-3.1-8b --hardware h200 --executor engine --device cuda
          --framework inferlab --cuda-graphs on --policy chunked --max-num-seqs 64
          --max-num-batched-tokens 8192 --kv-tokens 600000 --seed 21 --format json)
  if want long || want longA; then
  log "long: A (prompts lognormal 6000, sigma 0.8; 160 requests at 1.5/s)"
  timeout 280 "$bin/inferlab" "${common[@]}" --requests 160 --rate 1.5 \
    --input-dist lognormal:6000,0.8 --output-dist lognormal:200,0.6 \
    --requests-csv "$out/longA_requests.csv" --iterations-csv "$out/longA_iterations.csv" \
    >"$out/longA.json" 2>"$out/longA.err"
  log "long: A exit $?"
  fi
  if want long || want longB; then
  log "long: B (prompts uniform 2000-100000; 30 requests at 0.3/s)"
  timeout 280 "$bin/inferlab" "${common[@]}" --requests 30 --rate 0.3 \
    --input-dist uniform:2000,100000 --output-dist lognormal:300,0.6 \
    --requests-csv "$out/longB_requests.csv" --iterations-csv "$out/longB_iterations.csv" \
    >"$out/longB.json" 2>"$out/longB.err"
  log "long: B exit $?"
  fi
  if want long || want longC; then
    log "long: C (prompts uniform 2000-60000; 40 requests at 0.5/s)"
    timeout 240 "$bin/inferlab" "${common[@]}" --requests 40 --rate 0.5 \
      --input-dist uniform:2000,60000 --output-dist lognormal:250,0.6 \
      --requests-csv "$out/longC_requests.csv" --iterations-csv "$out/longC_iterations.csv" \
      >"$out/longC.json" 2>"$out/longC.err"
    log "long: C exit $?"
  fi
fi
log "done"
