#!/usr/bin/env bash
# Rust target for plugins: plain `cargo build --target wasm32-wasip2` + wit-bindgen produces a
# component, so no cargo-component or wasm-tools is needed.
set -euo pipefail
if ! rustup target list --installed | grep -qx wasm32-wasip2; then
  rustup target add wasm32-wasip2
fi
echo "20-wasm: the wasm32-wasip2 target is present"
