#!/usr/bin/env bash
# needed-by: tests
# Plugin toolchains: the wasm32-wasip2 Rust target, and a Python venv with componentize-py (builds
# plugins/guard-python) plus `websockets` and `mcp` (tests/servers/ws_mcp_server.py, the WebSocket MCP
# server the transport-websocket test talks to). Idempotent: only what is missing is installed.
# The venv lives at $RKMCP_DEPS/venv-plugins; build scripts and tests find it there.
set -euo pipefail
# shellcheck source=lib/pins.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/pins.sh"
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
pip_install_pins "$venv" "${pins[@]}"
echo "30-plugin-toolchains: ${pins[*]} are present"
