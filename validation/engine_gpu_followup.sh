#!/usr/bin/env bash
# Follow-up GPU checks of the engine's kernels in one device call (issue 19/21), after
# engine_gpu_run.sh: the GEMV and layer-kernel tests, racecheck over the kernels that use shared
# memory, GEMV against cuBLASLt, the speed table with CUDA graphs, the 8B ablation, the verify
# pass with the GEMV kernel off, and one engine serving run with its per-iteration CSV.
#   bash validation/engine_gpu_followup.sh BIN_DIR
set -u
B=${1:-build/gpurun}
export INFERLAB_DATA_DIR=$PWD/data INFERLAB_TOKENIZERS_DIR=$PWD/third_party/tokenizers
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/device.txt"
date -u +%FT%TZ >> "$OUT/device.txt"
note() { echo "$1 rc=$2" | tee -a "$OUT/summary.txt"; }
timeout 60 "$B/inferlab_tests" --gtest_filter='CudaGemv*:CudaLayerKernels*' > "$OUT/gemv_tests.txt" 2>&1
note "gemv+layer tests" $?
timeout 150 compute-sanitizer --tool racecheck "$B/inferlab_tests" \
  --gtest_filter='CudaAttention*:CudaLayerKernels.*:CudaSampling.Greedy*:CudaSampling.SmallOdd*' \
  > "$OUT/racecheck.txt" 2>&1
note racecheck $?
INFERLAB_BENCH_EXTRA="--cuda-graphs on" timeout 200 python3 validation/engine_speed.py \
  "$B/inferlab" "$OUT/engine_speed_graphs.json" > "$OUT/engine_speed_graphs.txt" 2>&1
note "speed graphs" $?
LD_LIBRARY_PATH=$B timeout 100 "$B/bench_engine_gemv" --benchmark_filter='rows:(1|4)/' \
  --benchmark_repetitions=3 --benchmark_report_aggregates_only=true --benchmark_format=json \
  > "$OUT/bench_gemv.json" 2> "$OUT/bench_gemv.err"
note "bench gemv" $?
timeout 120 "$B/inferlab" bench --model llama-3-8b --device cuda --ablation --batch 1 --input 1024 \
  --output 17 --repeats 5 --format json > "$OUT/ablation_llama-3-8b.json" 2> "$OUT/ablation.err"
note ablation $?
INFERLAB_ENGINE_GEMV=0 timeout 60 "$B/inferlab" bench --model llama-3-8b --device cuda \
  --speculative ngram,k=4 --input 1024 --repeats 20 --cuda-graphs on --format json \
  > "$OUT/speculative_ngram_cublaslt.json" 2> "$OUT/spec.err"
note "speculative without gemv" $?
timeout 100 "$B/inferlab" serve --model llama-3-8b --hardware h100-sxm --executor engine \
  --device cuda --framework inferlab --cost calibrated --cuda-graphs on --policy chunked \
  --max-num-seqs 256 --max-num-batched-tokens 2048 --kv-tokens 262144 --rate 5.81 \
  --requests 150 --input-dist lognormal:512,0.6 --output-dist lognormal:128,0.6 --seed 3 \
  --format json --iterations-csv "$OUT/serve_iterations_engine.csv" > "$OUT/serve_diag.json" \
  2> "$OUT/serve_diag.err"
note "serve diag" $?
( cd "$OUT" && tar czf logs.tgz ./*.txt ./*.err 2>/dev/null && rm -f ./*.err && \
  find . -maxdepth 1 -name '*.txt' ! -name summary.txt -delete )
