#!/usr/bin/env bash
# Installs what is missing, then configures and builds the release preset in build/.
#   scripts/build.sh            every target (tests, benchmarks, fuzz targets, link checks)
#   scripts/build.sh inferlab   the inferlab binary alone (scripts/run.sh), with the run packages
set -euo pipefail
cd "$(dirname "$0")/.."
if (($# > 0)); then scripts/install-deps.sh run; else scripts/install-deps.sh test; fi
# The full build configures again (a few seconds): packages installed since the first run's
# configure (pybind11 for the Python package) are found then.
if (($# == 0)) || [ ! -f build/build.ninja ]; then cmake --preset release >/dev/null; fi
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build build -j"$(nproc)" "${targets[@]}" >&2
