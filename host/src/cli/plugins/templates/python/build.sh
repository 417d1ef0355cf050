#!/usr/bin/env bash
# Builds {{name}}.wasm from the Python files here (app.py and any others) with componentize-py (pip install componentize-py==0.25.1),
# against the WIT in wit/. Set COMPONENTIZE_PY to use one that is not on PATH.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cpy="${COMPONENTIZE_PY:-componentize-py}"
if ! command -v "$cpy" >/dev/null; then
  echo "build.sh: componentize-py not found ($cpy); pip install componentize-py==0.25.1 (or set COMPONENTIZE_PY)" >&2
  exit 1
fi
# componentize-py writes its generated bindings beside app.py; build from a scratch copy instead.
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cp "$here"/*.py "$tmp/"
(cd "$tmp" && "$cpy" -d "$here/wit" -w {{world}} componentize app -o "$tmp/{{name}}.wasm" >&2)
mv "$tmp/{{name}}.wasm" "$here/{{name}}.wasm"
echo "built $here/{{name}}.wasm" >&2
