#!/usr/bin/env bash
# Second command of the README: installs what is missing, builds, runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
ctest --test-dir build --output-on-failure --timeout 300 -j"$(nproc)"
