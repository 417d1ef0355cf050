#!/usr/bin/env bash
# Builds guard-js.wasm with componentize-js: `build.sh OUT_DIR`.
# componentize-js comes from scripts/setup.d/35-js-plugins.sh ($RKMCP_DEPS/js-plugins).
# A build takes ~10 s or more, so it is skipped when app.js, the WIT and componentize-js's
# version are unchanged since the last one (a stamp beside the output records them).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
out="${1:?usage: build.sh OUT_DIR}"
mkdir -p "$out"
name="guard-js"
wit="$repo/wit/rkmcp-plugin@0.2.0"
cjs="${RKMCP_DEPS:-$repo/.deps}/js-plugins/node_modules/.bin/componentize-js"
if [ ! -x "$cjs" ]; then
  echo "build.sh ($name): $cjs not found; run scripts/setup --tests (scripts/setup.d/35-js-plugins.sh)" >&2
  # 3: the toolchain is missing (build-plugins --bundled skips the plugin and says so).
  exit 3
fi
stamp="$out/$name.wasm.stamp"
want="$( { "$cjs" --version; cat "$here/app.js" "$wit"/*.wit; } | sha256sum | cut -d' ' -f1)"
if [ -f "$out/$name.wasm" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "build.sh ($name): up to date" >&2
  exit 0
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# componentize-js reads its inputs through a WASI shim that sees only the working directory:
# build in a scratch copy with relative paths (an absolute path fails with "os error 44").
cp -r "$wit" "$tmp/wit"
cp "$here/app.js" "$tmp/app.js"
# -d http -d fetch-event: without them the component imports wasi:http, which rkmcp does not
# provide (plugins get no HTTP), and would not load.
(cd "$tmp" && "$cjs" --wit wit --world-name approval-guard-plugin -d http -d fetch-event \
  -o "$name.wasm" app.js >&2)
mv "$tmp/$name.wasm" "$out/$name.wasm"
echo "$want" >"$stamp"
