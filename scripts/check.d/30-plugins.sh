#!/usr/bin/env bash
# The plugin crates are workspace members but not default members, so the top-level clippy and
# test runs skip them: lint them for the target they ship for, and run their unit tests natively.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
pkgs=(-p rkmcp-plugin-sdk -p detector-tool-call -p approval-guard-default -p schema-converter-default -p transport-websocket)
cargo clippy --release --target wasm32-wasip2 --all-targets "${pkgs[@]}" -- -D warnings
cargo test --release -p approval-guard-default -p schema-converter-default -p transport-websocket
