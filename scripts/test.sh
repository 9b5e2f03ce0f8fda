#!/usr/bin/env bash
# Second command of the README: installs what is missing, builds, runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
ctest --test-dir build --output-on-failure --timeout 300 -j"$(nproc)"
# Hostile input: the parser, engine, tokenizer and serving tests again under ASan+UBSan, then
# every fuzz target for 10 s on its seed corpus (docs/UNTRUSTED_INPUTS.md). CI runs it;
# INFERLAB_SKIP_SANITIZE=1 skips it (a second build: about 10 minutes on 2 cores).
[ "${INFERLAB_SKIP_SANITIZE:-0}" = 1 ] || scripts/sanitize.sh 10
