#!/usr/bin/env bash
# needed-by: tests
# Fuzzing (fuzz/, run by scripts/check.d/70-fuzz.sh): the check builds the targets with cargo
# and the stable toolchain (no cargo-fuzz needed). The pinned nightly that AddressSanitizer needs
# is installed only when RKMCP_FUZZ_SANITIZER=address asks for it (~1 min to download, minimal
# profile). Set RKMCP_NO_FUZZ=1 to skip all of it.
set -euo pipefail
[ "${RKMCP_NO_FUZZ:-0}" = 1 ] && exit 0
nightly=nightly-2026-05-20
if [ "${RKMCP_FUZZ_SANITIZER:-none}" != none ] &&
   ! rustup run "$nightly" rustc --version >/dev/null 2>&1; then
  rustup toolchain install "$nightly" --profile minimal
fi
echo "60-fuzz: the fuzz check needs nothing beyond the stable toolchain${RKMCP_FUZZ_SANITIZER:+ (sanitizer: $nightly)}"
