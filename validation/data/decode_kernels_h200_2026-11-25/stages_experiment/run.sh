tar xJf build/gpurun.tar.xz -C build
export INFERLAB_DATA_DIR=$PWD/data INFERLAB_TOKENIZERS_DIR=$PWD/third_party/tokenizers LD_LIBRARY_PATH=$PWD/build/gpurun
B=build/gpurun
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $OUT/device.txt; date -u +%FT%TZ >> $OUT/device.txt
for v in 3 2; do
  INFERLAB_ENGINE_DECODE_STREAM_STAGES=$v timeout 150 $B/inferlab_tests --gtest_filter='CudaAttention*' > $OUT/attention_tests_stages$v.txt 2>&1
  echo "$(date -u +%T) tests stages=$v rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/attention_tests_stages$v.txt | tr '\n' ' ')"
  grep -E "^\[  FAILED" $OUT/attention_tests_stages$v.txt | head -5
done
for v in 3 2; do
  INFERLAB_ENGINE_DECODE_STREAM_STAGES=$v timeout 60 $B/bench_engine_attention --benchmark_format=json \
    --benchmark_filter='BM_DecodeKernels/batch:(1|16|32|64|128)/context:(1024|4096)/kv:0/kernel:2' > $OUT/bench_decode_stream_stages$v.json 2>/dev/null
  echo "$(date -u +%T) bench stages=$v rc=$?"
  python3 -c "
import json
for b in json.load(open('$OUT/bench_decode_stream_stages$v.json'))['benchmarks']: print('  ', b['name'].split('/min')[0], round(b['real_time'],1), 'us', round(b['GB/s']), 'GB/s')"
done
for v in 3 2; do
  INFERLAB_ENGINE_DECODE_STREAM_STAGES=$v timeout 90 $B/inferlab bench --model llama-3-8b --device cuda --batch 64 --input 1024 --output 9 --repeats 1 --cuda-graphs on --format json > $OUT/decode64_stages$v.json 2>/dev/null
  echo "$(date -u +%T) 8b b64 stages=$v rc=$? tpot $(python3 -c "import json;print(round(json.load(open('$OUT/decode64_stages$v.json'))['tpot_ms'],3))")"
done
