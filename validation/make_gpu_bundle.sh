#!/usr/bin/env bash
# Stripped copies of the binaries a device call runs, and the shared libraries the GPU machine's
# image lacks (Debian's Google Benchmark, cpp-httplib, PCRE2), into build/gpurun; carry it with
# third_party/tokenizers (`run` with carry: ["build/gpurun", "third_party/tokenizers"]).
set -euo pipefail
cd "$(dirname "$0")/.."
out=build/gpurun
rm -rf "$out" && mkdir -p "$out"
cp build/inferlab build/tests/inferlab_tests "$out/"
for b in build/bench/bench_engine_*; do cp "$b" "$out/"; done
strip "$out"/*
for lib in libbenchmark.so.1debian libcpp-httplib.so.0.11 libpcre2-8.so.0; do
  cp -L "/lib/x86_64-linux-gnu/$lib" "$out/"
done
du -sh "$out"
