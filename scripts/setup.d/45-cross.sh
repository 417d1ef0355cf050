#!/usr/bin/env bash
# needed-by: tests
# The aarch64 cross toolchain, Rust target and qemu-user: scripts/check.d/80-aarch64.sh
# cross-compiles rkmcp for Rockchip boards and runs the RKLLM FFI tests under emulation.
set -euo pipefail
# shellcheck source=lib/apt.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/apt.sh"
need=()
command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 || need+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
command -v qemu-aarch64 >/dev/null 2>&1 || need+=(qemu-user)
if [ ${#need[@]} -gt 0 ]; then
  apt_install 45-cross "${need[@]}"
fi
if ! rustup target list --installed | grep -qx aarch64-unknown-linux-gnu; then
  rustup target add aarch64-unknown-linux-gnu
fi
echo "45-cross: aarch64 cross gcc, qemu-user and the Rust target are present"
