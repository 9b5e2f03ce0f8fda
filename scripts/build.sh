#!/usr/bin/env bash
# Installs what is missing, then configures and builds the release preset in build/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
[ -f build/build.ninja ] || cmake --preset release >/dev/null
cmake --build build -j"$(nproc)" >&2
