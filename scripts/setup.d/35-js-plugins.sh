#!/usr/bin/env bash
# needed-by: tests
# componentize-js (npm), the JavaScript plugin toolchain: builds plugins/guard-js and the projects of
# `rkmcp plugins new --lang js` (tests/integration/plugin_scaffold_js.rs). Installed into
# $RKMCP_DEPS/js-plugins from the package.json + package-lock.json beside this script with `npm ci`,
# so every machine gets exactly the tree the lock names (componentize-js pulls jco, wizer and
# binaryen: ~150 packages, ~380 MB). Skipped when the installed lock equals the committed one.
# It runs on the system Node (>= 20.19: @napi-rs/wasm-runtime's floor); no install scripts run.
set -euo pipefail
repo="${RKMCP_REPO:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
deps="${RKMCP_DEPS:-$repo/.deps}"
src="$repo/scripts/setup.d/js-plugins"
dir="$deps/js-plugins"
bin="$dir/node_modules/.bin/componentize-js"
if [ -x "$bin" ] && cmp -s "$src/package-lock.json" "$dir/package-lock.json"; then
  echo "35-js-plugins: componentize-js is present"
  exit 0
fi
# Older Node installs fine (npm only warns about engines) and then fails inside the build.
if ! node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 19) ? 0 : 1)'; then
  echo "35-js-plugins: componentize-js needs Node >= 20.19, found $(node --version 2>/dev/null || echo none)" >&2
  exit 1
fi
mkdir -p "$dir"
cp "$src/package.json" "$src/package-lock.json" "$dir/"
npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error
echo "35-js-plugins: componentize-js installed"
