#!/usr/bin/env bash
# Issue 19 on the GPU in device calls (build here with validation/make_gpu_bundle.sh, carry
# build/gpurun and third_party/tokenizers):
#   bash validation/engine_speed_gpu_run.sh BIN_DIR STAGES [PROFILE_MODELS]
# STAGES, a comma list of:
#   tests      every Cuda* test (kernels, projections, attention, backend under every switch
#              against the CPU reference)
#   memcheck   compute-sanitizer memcheck on the fused GEMVs and the fused decode
#   sanitize   compute-sanitizer memcheck, racecheck and synccheck on three decode-attention
#              tests, and memcheck on the projections (streaming GEMV, quantized formats) and
#              the Hopper prefill attention
#   sass       the GEMV, attention and RoPE kernels' SASS: load widths, mma, local memory
#   quick      bench of Llama 3 8B and 3.2 1B decode at batch 1, context 1024, every
#              optimization on, in bf16, int4 and fp8
#   ncu        Nsight Compute on the GEMV and decode-attention kernels (--clock-control none)
#   gaps       Nsight Compute on the hot kernels of the issue's three missed cases: the
#              cuBLASLt GEMMs at 64 rows (8B decode at batch 64),
#              the streamed decode attention at batch 64, the 1B's fused GEMVs at one row
#   decode     the two decode-attention kernels (chunked, streamed): their GPU tests (unless
#              `tests` runs them all), both forced
#              at batch 1-128 (and the streamed one at 2 and 4 splits), Llama 3 8B decode at batch
#              64 with each, Nsight Compute on the streamed one at batch 64
#   kernels    the kernel benchmarks (projections by format and rows, attention by cache format
#              with and without programmatic launch, RoPE + KV write)
#   ablation   bench --ablation for Llama 3 8B and 3.2 1B (batch 1, context 1024)
#   speed      validation/engine_speed.py (PyTorch + CUDA graphs beside the engine, graphs on)
#   compile    issue 38's table beside torch.compile (gpt_fast_reference.py): 1B and 8B decode
#              at batch 1, 8B at batch 64, 8B prefill of 2048 (COMPILE_CASES to change), the
#              engine's int4 and fp8 rows beside; torch.compile's compilations take ~1-3 min a case
#   pdl        the streaming GEMV's programmatic launch, off/early/late interleaved (engine_ab.py)
#              on the 8B in bf16, int4, fp8 and the 1B in bf16 (PDL_CASES, PDL_ROUNDS)
#   accuracy   validation/quant_accuracy.py (each format's logits against bf16, 1B and 8B)
#   throughput serving at saturation (issue 38): `serve --executor engine` of Llama 3 8B, every
#              request at time 0, prompts 128 / outputs 2048 and 1000 / 1000; bf16 and fp8
#              weights (bf16 KV), 256 sequences; THROUGHPUT_WAVES x 256 requests (default 1:
#              equal lengths keep the batch full to the end); the simulator's figure beside each
#   profile    bench --profile for every ablation switch combination (the engine calibration's
#              data), for PROFILE_MODELS (default llama-3-8b)
# Results and logs go into $OUT/results.tgz (few files come back from a device call); each
# stage appends its exit code to $OUT/summary.txt.
set -u
BIN=${1:-build/gpurun}
STAGES=${2:-tests}
PROFILE_MODELS=${3:-llama-3-8b}
export INFERLAB_DATA_DIR=$PWD/data INFERLAB_TOKENIZERS_DIR=$PWD/third_party/tokenizers
export LD_LIBRARY_PATH=$BIN:${LD_LIBRARY_PATH:-}
R=/tmp/results
mkdir -p "$R" "$OUT"
# Whatever finished comes back, also when a stage runs long (the call's own limit kills
# everything, so each call wraps this script in a timeout shorter than it).
trap 'tar czf "$OUT/results.tgz" -C /tmp results' EXIT
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv \
  > "$R/device.txt"
date -u +%FT%TZ >> "$R/device.txt"
has() { [[ ",$STAGES," == *",$1,"* ]]; }
note() { echo "$(date -u +%T) $1" | tee -a "$OUT/summary.txt"; }

if has tests; then
  timeout ${TESTS_TIMEOUT:-300} "$BIN/inferlab_tests" \
    --gtest_filter="${TESTS_FILTER:-Cuda*:GemvPlan*:ProjectionWorkspace*}" \
    > "$R/gpu_tests.txt" 2>&1
  note "gpu tests rc=$?"
  grep -E "^\[  (FAILED|PASSED|SKIPPED) |min cosine|beyond noise|^\[  FAILED" "$R/gpu_tests.txt" |
    head -60 >> "$OUT/summary.txt"
fi
if has memcheck; then
  timeout 120 compute-sanitizer --tool memcheck "$BIN/inferlab_tests" \
    --gtest_filter='CudaProjection.FusedForms*:CudaProjection.Int4SmallGroups:CudaQuantBackend.Fused*' \
    > "$R/memcheck.txt" 2>&1
  note "memcheck rc=$? ($(grep -c 'Invalid' "$R/memcheck.txt") invalid accesses)"
fi
if has sanitize; then
  decode_tests='CudaAttention/CudaAttentionCache.DecodeGroup4Head128/bf16:CudaAttention/CudaAttentionCache.SlidingWindowPrefillAndDecode/bf16:CudaAttention/CudaAttentionCache.DecodeGroup8Block32AndGroup2Head64/bf16'
  for tool in memcheck racecheck synccheck; do
    timeout 150 compute-sanitizer --tool $tool "$BIN/inferlab_tests" --gtest_filter="$decode_tests" \
      > "$R/sanitize_decode_$tool.txt" 2>&1
    note "sanitize decode $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED' "$R/sanitize_decode_$tool.txt" | tr '\n' ' ')"
  done
  timeout 240 compute-sanitizer --tool memcheck "$BIN/inferlab_tests" \
    --gtest_filter='CudaProjection*:CudaQuant*:CudaHopper*:CudaAttention/CudaAttentionCache.Prefill*' \
    > "$R/sanitize_projection_memcheck.txt" 2>&1
  note "sanitize projections+prefill memcheck rc=$? $(grep -E 'ERROR SUMMARY|PASSED|FAILED' "$R/sanitize_projection_memcheck.txt" | tr '\n' ' ')"
fi
if has sass && command -v cuobjdump > /dev/null; then
  # The GEMV kernels' weight loads (LDG ... 128, no L1 allocation), mma instructions and any
  # local-memory traffic, per kernel.
  cuobjdump -arch sm_90 -sass "$BIN/inferlab_tests" |
    awk '/Function :/ { keep = /gemv_kernel|attention|rope_kv/ } keep' > "$R/sass.txt"
  awk '/Function :/ { name = $3 }
       /LDG/ { split($0, f, /LDG/); op = "LDG" f[2]; sub(/ .*/, "", op); n[name " " op]++ }
       /HMMA|IMMA|HGMMA/ { n[name " mma"]++ }
       /LDL|STL/ { n[name " LOCAL"]++ }
       END { for (k in n) print k, n[k] }' "$R/sass.txt" | sort > "$R/sass_summary.txt"
  note "sass: $(grep -c ' LOCAL ' "$R/sass_summary.txt") kernels with local memory"
  rm -f "$R/sass.txt"
fi
if has quick; then  # the issue's batch-1 decode cases, all optimizations on
  for w in ${QUICK_FORMATS:-bf16 int4 fp8}; do
    for m in ${QUICK_MODELS:-llama-3-8b llama-3.2-1b}; do
      timeout 60 "$BIN/inferlab" bench --model $m --device cuda --batch 1 --input 1024 \
        --output 33 --repeats 3 --cuda-graphs on --weights $w --format json \
        > "$R/quick_${m}_$w.json" 2> "$R/quick_${m}_$w.err"
      note "quick $m $w rc=$? tpot_ms=$(python3 -c "import json;print(round(json.load(open('$R/quick_${m}_$w.json'))['tpot_ms'],3))" 2>/dev/null)"
    done
  done
fi
if has decode && ! has tests; then
  timeout 240 "$BIN/inferlab_tests" --gtest_filter='CudaAttention*' > "$R/gpu_tests_attention.txt" 2>&1
  note "attention tests rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$R/gpu_tests_attention.txt" | tr '\n' ' ')"
  grep -E "^\[  FAILED|Failure|differ|vs cpu" "$R/gpu_tests_attention.txt" | head -20 >> "$OUT/summary.txt"
fi
if has decode; then
  timeout 120 "$BIN/bench_engine_attention" --benchmark_format=json \
    --benchmark_filter='BM_DecodeKernels' > "$R/bench_decode_kernels.json" 2> "$R/bench_decode_kernels.err"
  note "bench decode kernels rc=$?"
  for n in 2 4; do
    INFERLAB_ENGINE_DECODE_SPLITS=$n timeout 60 "$BIN/bench_engine_attention" --benchmark_format=json \
      --benchmark_filter='BM_DecodeKernels/batch:(32|64|128)/context:(1024|4096)/kv:0/kernel:2' \
      > "$R/bench_decode_kernels_splits$n.json" 2> "$R/bench_decode_kernels_splits$n.err"
    note "bench decode kernels splits=$n rc=$?"
  done
  for k in chunked streamed; do
    INFERLAB_ENGINE_DECODE_KERNEL=$k timeout 90 "$BIN/inferlab" bench --model llama-3-8b \
      --device cuda --batch 64 --input 1024 --output 9 --repeats 1 --cuda-graphs on --format json \
      > "$R/decode64_$k.json" 2> "$R/decode64_$k.err"
    note "8b decode batch 64 $k rc=$? tpot_ms=$(python3 -c "import json;print(round(json.load(open('$R/decode64_$k.json'))['tpot_ms'],3))" 2>/dev/null)"
  done
  timeout 120 ncu --clock-control none --section SpeedOfLight --section Occupancy \
    --section WarpStateStats --section LaunchStats -k "regex:stream_kernel" --launch-skip 20 -c 1 \
    "$BIN/bench_engine_attention" --benchmark_filter='BM_DecodeKernels/batch:64/context:1024/kv:0/kernel:2' \
    --benchmark_min_time=0.01 > "$R/ncu_stream_decode.txt" 2>&1
  note "ncu streamed decode rc=$?"
  grep -E "Memory Throughput|DRAM Throughput|Duration|Achieved Occupancy|Registers Per|Waves Per SM|Stall|No Eligible|Theoretical Occ|Block Limit" \
    "$R/ncu_stream_decode.txt" | head -24 >> "$OUT/summary.txt"
fi
if has kernels; then
  timeout 150 "$BIN/bench_engine_projection" --benchmark_min_time=0.05 \
    --benchmark_filter='projection/.*/8b_.*rows:(1|2|4|8|16|32|64)/' --benchmark_format=json \
    > "$R/bench_projection_8b.json" 2> "$R/bench_projection_8b.err"
  note "bench projection rc=$?"
  timeout 60 "$BIN/bench_engine_attention" --benchmark_format=json \
    --benchmark_filter='BM_Decode/batch:(1|64)/context:(1024|4096)/kv:[0-2]/naive:0' \
    > "$R/bench_attention.json" 2> "$R/bench_attention.err"
  note "bench attention rc=$?"
  INFERLAB_ENGINE_ATTENTION_PDL=0 timeout 30 "$BIN/bench_engine_attention" --benchmark_format=json \
    --benchmark_filter='BM_Decode/batch:(1|64)/context:1024/kv:0/naive:0' \
    > "$R/bench_attention_nopdl.json" 2> "$R/bench_attention_nopdl.err"
  note "bench attention without PDL rc=$?"
  timeout 30 "$BIN/bench_engine_layers" --benchmark_filter='BM_RopeKvWrite' \
    --benchmark_min_time=0.02 --benchmark_format=json > "$R/bench_rope.json" 2> "$R/bench_rope.err"
  note "bench rope rc=$?"
  [ -x "$BIN/bench_engine_attention_hopper" ] && timeout 60 "$BIN/bench_engine_attention_hopper" \
    --benchmark_format=json > "$R/bench_attention_hopper.json" 2> "$R/bench_attention_hopper.err"
fi
if has ncu; then  # Nsight Compute on the decode hot kernels (clocks left alone)
  ncu_run() {  # name, kernel regex, bench binary, filter
    timeout 120 ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis \
      --section Occupancy --section WarpStateStats --section LaunchStats --section SchedulerStats \
      -k "regex:$2" --launch-skip 20 -c 1 "$BIN/$3" --benchmark_filter="$4" \
      --benchmark_min_time=0.01 > "$R/ncu_$1.txt" 2>&1
    note "ncu $1 rc=$?"
    grep -E "Memory Throughput|DRAM Throughput|Duration|Achieved Occupancy|Registers Per|Block Size|Grid Size|Waves Per SM|Stall|Issued Warp|No Eligible" \
      "$R/ncu_$1.txt" | head -24 >> "$OUT/summary.txt"
  }
  ncu_run gemv_bf16_gate_up gemv bench_engine_projection 'projection/bf16/8b_gate_up/fused/rows:1/'
  ncu_run gemv_bf16_o gemv bench_engine_projection 'projection/bf16/8b_o/gemv/rows:1/'
  ncu_run gemv_int4_gate_up gemv bench_engine_projection 'projection/int4/8b_gate_up/gemv/rows:1/'
  ncu_run attention_decode decode bench_engine_attention 'BM_Decode/batch:1/context:1024/kv:0/naive:0'
fi
if has gaps; then  # Nsight Compute on the hot kernels of the missed targets (clocks left alone)
  gap_run() {  # name, kernel regex, bench binary, filter
    timeout 90 ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis \
      --section Occupancy --section WarpStateStats --section LaunchStats --section ComputeWorkloadAnalysis \
      -k "regex:$2" --launch-skip 10 -c 1 "$BIN/$3" \
      --benchmark_filter="$4" --benchmark_min_time=0.01 > "$R/gap_$1.txt" 2>&1
    note "gap ncu $1 rc=$?"
    grep -E "^  [a-zA-Z_].*\(|Memory Throughput|DRAM Throughput|Compute \(SM\) Throughput|Duration|Achieved Occupancy|Registers Per|Grid Size|Waves Per SM|No Eligible|Issued Warp" \
      "$R/gap_$1.txt" | head -14 >> "$OUT/summary.txt"
  }
  gap_run gemm64_gate_up 'nvjet|gemm|xmma|cutlass' bench_engine_projection 'projection/bf16/8b_gate_up/lt/rows:64/'
  gap_run gemm64_down 'nvjet|gemm|xmma|cutlass' bench_engine_projection 'projection/bf16/8b_down/lt/rows:64/'
  gap_run stream_decode64 stream_kernel bench_engine_attention 'BM_DecodeKernels/batch:64/context:1024/kv:0/kernel:2'
  gap_run gemv1b_gate_up gemv bench_engine_projection 'projection/bf16/1b_gate_up/fused/rows:1/'
  gap_run gemv1b_down gemv bench_engine_projection 'projection/bf16/1b_down/fused/rows:1/'
  timeout 120 "$BIN/bench_engine_projection" --benchmark_min_time=0.05 --benchmark_format=json \
    --benchmark_filter='projection/bf16/(8b|1b)_.*/(lt|fused)/rows:(1|64)/' \
    > "$R/bench_projection_gaps.json" 2> "$R/bench_projection_gaps.err"
  note "bench projection gaps rc=$?"
fi
if has ablation; then
  for m in ${ABLATION_MODELS:-llama-3-8b llama-3.2-1b}; do
    timeout 300 "$BIN/inferlab" bench --model $m --device cuda --ablation --batch 1 --input 1024 \
      --output 17 --repeats 5 --format json > "$R/ablation_$m.json" 2> "$R/ablation_$m.err"
    note "ablation $m rc=$?"
  done
fi
if has speed; then
  INFERLAB_BENCH_EXTRA="--cuda-graphs on" timeout 300 python3 validation/engine_speed.py \
    "$BIN/inferlab" "$R/engine_speed.json" > "$R/engine_speed.txt" 2>&1
  note "speed rc=$?"
  tail -16 "$R/engine_speed.txt" >> "$OUT/summary.txt"
fi
if has compile; then
  ENGINE_SPEED_CASES=${COMPILE_CASES:-llama-3.2-1b:decode:1:1024,llama-3-8b:decode:1:1024,llama-3-8b:decode:64:1024,llama-3-8b:prefill:1:2048} \
    ENGINE_SPEED_COMPILE=1 ENGINE_SPEED_ENGINE_ONLY=int4,fp8 INFERLAB_BENCH_EXTRA="--cuda-graphs on" \
    timeout ${COMPILE_TIMEOUT:-540} python3 validation/engine_speed.py "$BIN/inferlab" \
    "$R/engine_speed_compile.json" > "$R/engine_speed_compile.txt" 2>&1
  note "compile rc=$?"
  grep -v -i warn "$R/engine_speed_compile.txt" | tail -16 >> "$OUT/summary.txt"
fi
if has pdl; then
  timeout ${PDL_TIMEOUT:-400} python3 validation/engine_ab.py "$BIN/inferlab" "$R/gemv_pdl_ab.json" \
    INFERLAB_ENGINE_GEMV_PDL=off,early,late \
    "${PDL_CASES:-llama-3-8b:decode:1:1024,llama-3-8b:decode:1:1024:int4,llama-3-8b:decode:1:1024:fp8,llama-3.2-1b:decode:1:1024}" \
    "${PDL_ROUNDS:-2}" > "$R/gemv_pdl_ab.txt" 2>&1
  note "pdl rc=$?"
  tail -8 "$R/gemv_pdl_ab.txt" >> "$OUT/summary.txt"
fi
if has accuracy; then
  timeout 400 python3 validation/quant_accuracy.py "$BIN/inferlab" "$R/quant_accuracy.json" \
    > "$R/quant_accuracy.txt" 2>&1
  note "accuracy rc=$?"
  tail -16 "$R/quant_accuracy.txt" >> "$OUT/summary.txt"
fi
if has throughput; then
  # name|serve flags|sequences
  runs=("bf16|--weights bf16|256" "fp8|--weights fp8|256")
  for run in "${runs[@]}"; do
    IFS='|' read -r name flags seqs <<< "$run"
    for io in 128:2048 1000:1000; do
      requests=$((seqs * ${THROUGHPUT_WAVES:-1}))
      common=(--model llama-3-8b --hardware h200 --framework inferlab --rate 0
              --requests $requests --input-dist fixed:${io%:*} --output-dist fixed:${io#*:}
              --max-num-seqs $seqs --format json $flags)
      tag=throughput_${name}_${io/:/_}
      timeout 200 "$BIN/inferlab" serve --executor engine --device cuda "${common[@]}" \
        > "$R/$tag.json" 2> "$R/$tag.err"
      rc=$?
      # The simulator on the engine's own pool of KV blocks.
      kv=$(python3 -c "import json;k=json.load(open('$R/$tag.json'))['kv_cache'];print(k['blocks']*k['block_tokens'])" 2>/dev/null)
      "$BIN/inferlab" serve "${common[@]}" ${kv:+--kv-tokens $kv} > "$R/${tag}_sim.json" \
        2> "$R/${tag}_sim.err" || note "throughput $name $io: the simulator failed ($(tail -1 "$R/${tag}_sim.err"))"
      note "throughput $name $io rc=$rc $(python3 -c "import json;d=json.load(open('$R/$tag.json'));s=json.load(open('$R/${tag}_sim.json'));print('out tok/s %.0f (sim %.0f), %.1f s, %d preemptions' % (d['output_tokens_per_s'], s['output_tokens_per_s'], d['duration_s'], d['preemptions']))" 2>/dev/null)"
    done
  done
fi
if has profile; then
  # The ablation's switch combinations (bench_ablation.cpp's kAblation), one file each.
  combos=(
    "--gemv off --fusion off --attention naive --cuda-graphs off"
    "--gemv off --fusion off --cuda-graphs off"
    "--fusion off --cuda-graphs off"
    "--cuda-graphs off"
    "--cuda-graphs on"
    "--cuda-graphs on --kv fp8"
    "--cuda-graphs on --kv int8"
    "--cuda-graphs on --weights fp8"
    "--cuda-graphs on --weights int8"
    "--cuda-graphs on --weights int4"
    "--cuda-graphs on --weights int8 --activations int8"
    "--cuda-graphs on --weights int4 --kv fp8"
  )
  for m in ${PROFILE_MODELS//,/ }; do
    i=0
    for c in "${combos[@]}"; do
      # PROFILE_COMBOS (a space-separated list of indices) profiles only those combinations.
      if [ -n "${PROFILE_COMBOS:-}" ] && [[ " $PROFILE_COMBOS " != *" $i "* ]]; then
        i=$((i + 1))
        continue
      fi
      timeout 120 "$BIN/inferlab" bench --profile --model $m --device cuda --repeats 3 \
        --warmup 1 $c --format json > "$R/profile_${m}_$i.json" 2> "$R/profile_${m}_$i.err"
      note "profile $m $i ($c) rc=$?"
      i=$((i + 1))
    done
  done
fi
