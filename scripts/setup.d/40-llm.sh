#!/usr/bin/env bash
# Tools for the LLM backends. Idempotent: installs only what is missing.
#   - cmake and a C++ compiler: llama-cpp-sys-2 builds its vendored llama.cpp;
#   - libclang: bindgen (llama.cpp bindings, RKLLM bindings from host/crates/llm/rkllm/rkllm.h);
#   - the aarch64 cross toolchain, Rust target and qemu-user: scripts/check.d/60-aarch64.sh
#     cross-compiles rkmcp for Rockchip boards and runs the RKLLM FFI tests under emulation.
set -euo pipefail
# shellcheck source=lib/apt.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/apt.sh"
need=()
command -v cmake >/dev/null 2>&1 || need+=(cmake)
command -v c++ >/dev/null 2>&1 || need+=(g++)
# bindgen loads libclang at build time; any Debian libclang will do. Not libclang-cpp (a different
# library some images carry): `libclang-*.so*` would match it and leave bindgen without libclang.
if ! compgen -G "/usr/lib/llvm-*/lib/libclang.so*" >/dev/null && ! compgen -G "/usr/lib/*-linux-gnu/libclang-[0-9]*.so*" >/dev/null; then
  need+=(libclang-dev)
fi
command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 || need+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
command -v qemu-aarch64 >/dev/null 2>&1 || need+=(qemu-user)
if [ ${#need[@]} -gt 0 ]; then
  apt_install 40-llm "${need[@]}"
else
  echo "40-llm: cmake, C++, libclang, aarch64 cross gcc and qemu-user are present" >&2
fi
if ! rustup target list --installed | grep -qx aarch64-unknown-linux-gnu; then
  rustup target add aarch64-unknown-linux-gnu
fi
