#!/usr/bin/env bash
# First command of the README: builds if needed, then runs inferlab. With no arguments it runs
# the shipped defaults: Llama 3.2 1B on an H100 SXM, batch 1, 512 prompt tokens, 128 output.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh >/dev/null
if (($# == 0)); then set -- predict; fi
exec build/inferlab "$@"
