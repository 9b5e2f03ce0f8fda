#!/usr/bin/env bash
# Installs the official `openai` npm client into third_party/node/node_modules (gitignored) for
# the test OpenAiServer.OfficialNodeClient. The version and its SHA-512 are pinned in
# third_party/node/package-lock.json; `npm ci` installs exactly that and checks the tarball
# against the hash. Does nothing when that version is already there. A machine without npm or
# the registry still builds and tests; that test then skips.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=third_party/node
if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
  echo "inferlab: node and npm are needed to fetch the openai client (apt-get install nodejs npm)" >&2
  exit 1
fi
locked=$(node -p "require('./$dir/package-lock.json').packages['node_modules/openai'].version")
installed=$(node -p "try { require('./$dir/node_modules/openai/package.json').version } catch { '' }")
[ "$installed" = "$locked" ] && exit 0
echo "inferlab: fetching openai@$locked (npm ci)" >&2
npm ci --prefix "$dir" --ignore-scripts --no-audit --no-fund --loglevel=error >&2
echo "inferlab: $dir/node_modules/openai ready" >&2
