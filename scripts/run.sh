#!/usr/bin/env bash
# First command of the README: builds the inferlab binary if needed, then runs it. With no
# arguments it runs the shipped defaults: Llama 3.2 1B on an H100 SXM, batch 1, 512 prompt
# tokens, 128 output. Once built, a run only asks ninja whether anything changed (well under a
# second).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -x build/inferlab ] && [ -f build/build.ninja ]; then
  if ! log=$(cmake --build build --target inferlab 2>&1); then
    echo "$log" >&2
    exit 1
  fi
else
  echo "inferlab: first run: installing packages and building the inferlab binary (about 5" \
       "minutes on 2 cores, CUDA engine included; later runs start at once)" >&2
  if ! log=$(scripts/build.sh inferlab 2>&1); then
    echo "$log" >&2
    exit 1
  fi
fi
if (($# == 0)); then set -- predict; fi
exec build/inferlab "$@"
