#!/usr/bin/env bash
# First command of the README: builds if needed, then runs inferlab. With no arguments it runs
# the shipped defaults: Llama 3.2 1B on an H100 SXM, batch 1, 512 prompt tokens, 128 output.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/inferlab ] || echo "inferlab: first run: installing packages and building (a few minutes)" >&2
if ! log=$(scripts/build.sh 2>&1); then
  echo "$log" >&2
  exit 1
fi
if (($# == 0)); then set -- predict; fi
exec build/inferlab "$@"
