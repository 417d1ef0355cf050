#!/usr/bin/env bash
# rkmcp-tool-formats is compiled into wasm32-wasip2 detector plugins as well as the host: keep it
# building for that target (serde + serde_json only, well under a minute).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
cargo build --release -p rkmcp-tool-formats --target wasm32-wasip2
