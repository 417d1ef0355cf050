#!/usr/bin/env bash
# Builds {{name}}.wasm from app.js with componentize-js 0.23.0, against the WIT in wit/.
# componentize-js is looked for in COMPONENTIZE_JS, then ./node_modules/.bin (after
# `npm install @bytecodealliance/componentize-js@0.23.0 @bytecodealliance/preview2-shim@0.25.0` here), then on PATH.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cjs="${COMPONENTIZE_JS:-}"
if [ -z "$cjs" ] && [ -x "$here/node_modules/.bin/componentize-js" ]; then
  cjs="$here/node_modules/.bin/componentize-js"
fi
cjs="${cjs:-componentize-js}"
if ! command -v "$cjs" >/dev/null; then
  echo "build.sh: componentize-js not found ($cjs); run \`npm install @bytecodealliance/componentize-js@0.23.0 @bytecodealliance/preview2-shim@0.25.0\` in $here (or set COMPONENTIZE_JS)" >&2
  exit 1
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# componentize-js reads its inputs through a WASI shim that sees only the working directory:
# build in a scratch copy with relative paths.
cp -r "$here/wit" "$tmp/wit"
cp "$here/app.js" "$tmp/app.js"
# -d http -d fetch-event: the component must not import wasi:http, which rkmcp does not give
# plugins (it would not load).
(cd "$tmp" && "$cjs" --wit wit --world-name {{world}} -d http -d fetch-event \
  -o "{{name}}.wasm" app.js >&2)
mv "$tmp/{{name}}.wasm" "$here/{{name}}.wasm"
echo "built $here/{{name}}.wasm" >&2
