#!/usr/bin/env bash
# Builds transport-tcp-python.wasm with componentize-py: `build.sh OUT_DIR`.
# componentize-py comes from scripts/setup.d/30-plugin-toolchains.sh ($RKMCP_DEPS/venv-plugins).
# A build takes ~10 s or more, so it is skipped when the Python sources, the WIT and
# componentize-py's version are unchanged since the last one (a stamp beside the output records them).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
out="${1:?usage: build.sh OUT_DIR}"
mkdir -p "$out"
name="transport-tcp-python"
wit="$repo/wit/rkmcp-plugin@0.2.0"
venv="${RKMCP_DEPS:-$repo/.deps}/venv-plugins"
cpy="$venv/bin/componentize-py"
if [ ! -x "$cpy" ]; then
  echo "build.sh ($name): $cpy not found; run scripts/setup --tests (scripts/setup.d/30-plugin-toolchains.sh)" >&2
  # 3: the toolchain is missing (build-plugins --bundled skips the plugin and says so).
  exit 3
fi
stamp="$out/$name.wasm.stamp"
want="$( { "$cpy" --version; cat "$here"/*.py "$wit"/*.wit; } | sha256sum | cut -d' ' -f1)"
if [ -f "$out/$name.wasm" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "build.sh ($name): up to date" >&2
  exit 0
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# Run from a scratch copy so componentize-py's generated bindings never land in the source tree.
# app.py and transport.py (the module componentize-py takes the `connection` resource from).
cp "$here"/*.py "$tmp/"
(cd "$tmp" && "$cpy" -d "$wit" -w transport-plugin componentize app -o "$tmp/$name.wasm" >&2)
mv "$tmp/$name.wasm" "$out/$name.wasm"
echo "$want" >"$stamp"
