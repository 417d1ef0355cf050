#!/usr/bin/env bash
# Real MCP servers used by the quick start and the tests, installed into $RKMCP_DEPS:
#   npm:  @modelcontextprotocol/server-everything, server-filesystem  → $RKMCP_DEPS/node/node_modules
#   PyPI: mcp-server-time, mcp (for the test servers we write)         → $RKMCP_DEPS/venv
set -euo pipefail
deps="${RKMCP_DEPS:?}"
node_dir="$deps/node"
mkdir -p "$node_dir"
everything_version="2026.8.31"
if [ ! -f "$node_dir/node_modules/@modelcontextprotocol/server-everything/package.json" ] \
  || ! grep -q "\"version\": \"$everything_version\"" "$node_dir/node_modules/@modelcontextprotocol/server-everything/package.json"; then
  [ -f "$node_dir/package.json" ] || echo '{"name":"rkmcp-test-peers","private":true}' > "$node_dir/package.json"
  npm install --prefix "$node_dir" --no-audit --no-fund --loglevel=error \
    "@modelcontextprotocol/server-everything@$everything_version" \
    "@modelcontextprotocol/server-filesystem"
fi
venv="$deps/venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c 'import mcp_server_time, mcp' 2>/dev/null; then
  "$venv/bin/pip" install --quiet --disable-pip-version-check mcp-server-time mcp
fi
