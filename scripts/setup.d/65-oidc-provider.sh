#!/usr/bin/env bash
# needed-by: tests
# A real OpenID provider for the OAuth sign-in tests: npm `oidc-provider` (node-oidc-provider, a
# certified OpenID Connect provider), pinned, installed into $RKMCP_DEPS/oidc-provider.
# The tests run tests/servers/oidc_provider.mjs with it on 127.0.0.1.
set -euo pipefail
deps="${RKMCP_DEPS:?}"
dir="$deps/oidc-provider"
version="9.13.3"
pkg="$dir/node_modules/oidc-provider/package.json"
if [ ! -f "$pkg" ] || ! grep -q "\"version\": \"$version\"" "$pkg"; then
  mkdir -p "$dir"
  [ -f "$dir/package.json" ] || echo '{"name":"rkmcp-oidc-provider","private":true,"type":"module"}' > "$dir/package.json"
  npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "oidc-provider@$version"
fi
echo "65-oidc-provider: oidc-provider $version is present"
