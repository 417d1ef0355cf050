#!/usr/bin/env bash
# needed-by: tests
# Plugin toolchains: the wasm32-wasip2 Rust target, and a Python venv with componentize-py (builds
# plugins/guard-python) plus `websockets` and `mcp` (tests/servers/ws_mcp_server.py, the WebSocket MCP
# server the transport-websocket test talks to). Idempotent: only what is missing is installed.
# The venv lives at $RKMCP_DEPS/venv-plugins; build scripts and tests find it there.
set -euo pipefail
repo="${RKMCP_REPO:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
deps="${RKMCP_DEPS:-$repo/.deps}"
venv="$deps/venv-plugins"

if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-wasip2; then
  rustup target add wasm32-wasip2
fi

# Pinned: the Python guard's build and the test server were checked with exactly these.
pins=(componentize-py==0.25.1 websockets==17.4 mcp==2.3.0)
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
# One interpreter start checks every pin (pip show costs ~2 s each).
mapfile -t missing < <("$venv/bin/python" - "${pins[@]}" <<'PY'
import sys
from importlib.metadata import PackageNotFoundError, version
for pin in sys.argv[1:]:
    name, want = pin.split("==")
    try:
        ok = version(name) == want
    except PackageNotFoundError:
        ok = False
    if not ok:
        print(pin)
PY
)
if [ ${#missing[@]} -gt 0 ]; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${missing[@]}"
fi
echo "30-plugin-toolchains: ${pins[*]} are present"
