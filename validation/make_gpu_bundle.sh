#!/usr/bin/env bash
# Stripped copies of the binaries a device call runs, and the shared libraries the GPU machine's
# image lacks (Debian's Google Benchmark, cpp-httplib, PCRE2), into build/gpurun; carry it with
# third_party/tokenizers where a stage needs a tokenizer (`run` with carry:
# ["build/gpurun.tar.xz"]).
# BUILD (default build-gpu) is a build for Hopper only, which keeps the bundle under the 64 MiB a
# call carries:  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DINFERLAB_CUDA=ON
#                  -DINFERLAB_CUDA_ARCHITECTURES=90-real && cmake --build build-gpu
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-gpu}
out=build/gpurun
rm -rf "$out" && mkdir -p "$out"
cp "$build/inferlab" "$build/tests/inferlab_tests" "$out/"
for b in projection attention attention_hopper layers; do
  [ -x "$build/bench/bench_engine_$b" ] && cp "$build/bench/bench_engine_$b" "$out/"
done
strip "$out"/*
for lib in libbenchmark.so.1debian libcpp-httplib.so.0.11 libpcre2-8.so.0; do
  cp -L "/lib/x86_64-linux-gnu/$lib" "$out/"
done
# One compressed archive: what a call carries is limited to 64 MiB, the binaries are ~4× that
# uncompressed. On the device: tar xJf build/gpurun.tar.xz -C build
tar cJf build/gpurun.tar.xz -C build gpurun
du -sh "$out" build/gpurun.tar.xz
