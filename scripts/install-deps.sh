#!/usr/bin/env bash
# Installs the Debian packages inferlab builds with, only those that are missing (chromium:
# the tests render the HTML reports in it, headless).
set -euo pipefail
packages=(cmake ninja-build g++ nlohmann-json3-dev libcli11-dev libfmt-dev libgtest-dev
          libgmock-dev libbenchmark-dev chromium)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "inferlab: installing ${missing[*]}" >&2
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi
