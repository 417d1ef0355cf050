#!/usr/bin/env bash
# Real MCP servers used by the quick start and the tests, pinned, installed into $RKMCP_DEPS:
#   npm:  @modelcontextprotocol/server-everything, server-filesystem  → $RKMCP_DEPS/node/node_modules
#   PyPI: mcp-server-time, mcp (for the test servers we write)         → $RKMCP_DEPS/venv
# The presence checks read package metadata only (importing `mcp` to check it costs seconds).
set -euo pipefail
# shellcheck source=lib/pins.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/pins.sh"
deps="${RKMCP_DEPS:?}"
node_dir="$deps/node"
mkdir -p "$node_dir"
everything_version="2026.8.31"
filesystem_version="2026.8.31"
npm_installed() {
  grep -q "\"version\": \"$2\"" "$node_dir/node_modules/@modelcontextprotocol/$1/package.json" 2>/dev/null
}
if ! npm_installed server-everything "$everything_version" || ! npm_installed server-filesystem "$filesystem_version"; then
  [ -f "$node_dir/package.json" ] || echo '{"name":"rkmcp-test-peers","private":true}' > "$node_dir/package.json"
  npm install --prefix "$node_dir" --no-audit --no-fund --loglevel=error \
    "@modelcontextprotocol/server-everything@$everything_version" \
    "@modelcontextprotocol/server-filesystem@$filesystem_version"
fi
venv="$deps/venv"
pins=(mcp-server-time==2026.10.19 mcp==2.3.0)
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
pip_install_pins "$venv" "${pins[@]}"
echo "10-mcp-servers: server-everything $everything_version, server-filesystem $filesystem_version, ${pins[*]} are present"
