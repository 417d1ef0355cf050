#!/usr/bin/env bash
# needed-by: tests
# Fuzzing (fuzz/, run by scripts/check.d/70-fuzz.sh): cargo-fuzz, built once into
# $RKMCP_DEPS/cargo-fuzz (~1.5 min on one core). The check fuzzes without a sanitizer on the
# stable toolchain; the pinned nightly that AddressSanitizer needs is installed only when
# RKMCP_FUZZ_SANITIZER=address asks for it (~1 min to download, minimal profile).
# Set RKMCP_NO_FUZZ=1 to skip all of it.
set -euo pipefail
[ "${RKMCP_NO_FUZZ:-0}" = 1 ] && exit 0
deps="${RKMCP_DEPS:?}"
nightly=nightly-2026-05-20
cargo_fuzz_version=0.13.2
if [ "${RKMCP_FUZZ_SANITIZER:-none}" != none ] &&
   ! rustup run "$nightly" rustc --version >/dev/null 2>&1; then
  rustup toolchain install "$nightly" --profile minimal
fi
# scripts/test defers the cargo-fuzz build (CPU-bound) to the fuzz check, which runs beside the
# tests where a core is idle, instead of beside the main build where none is.
if [ "${RKMCP_DEFER_CARGO_FUZZ:-0}" = 1 ]; then
  echo "60-fuzz: cargo-fuzz is built by the fuzz check when it is missing"
  exit 0
fi
if [ ! -x "$deps/cargo-fuzz/bin/cargo-fuzz" ] ||
   ! "$deps/cargo-fuzz/bin/cargo-fuzz" --version | grep -q "$cargo_fuzz_version"; then
  cargo install cargo-fuzz --version "$cargo_fuzz_version" --locked --root "$deps/cargo-fuzz"
fi
echo "60-fuzz: cargo-fuzz $cargo_fuzz_version is present"
