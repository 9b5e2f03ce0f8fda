#!/usr/bin/env bash
# Hostile input (docs/UNTRUSTED_INPUTS.md): builds the `sanitize` preset in build-sanitize/
# (clang-14, ASan+UBSan, no CUDA): the unit tests of label `sanitize` (cmake/sanitize_tests.cmake
# says which) and the fuzz targets; runs those tests under the sanitizers, then every fuzz target
# for a short budget (scripts/fuzz.sh).
# Usage: scripts/sanitize.sh [fuzz seconds per target, default 20]
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f build-sanitize/build.ninja ] || cmake --preset sanitize >/dev/null
cmake --build build-sanitize -j"$(nproc)" --target inferlab_sanitize_tests inferlab_fuzz >&2
# Symbolized reports; a leak or any UBSan report fails the test that caused it.
symbolizer=/usr/lib/llvm-14/bin/llvm-symbolizer
[ -x "$symbolizer" ] && export ASAN_SYMBOLIZER_PATH=$symbolizer
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir build-sanitize --output-on-failure --timeout 600 -j"$(nproc)" -L sanitize
scripts/fuzz.sh "${1:-20}"
