#!/usr/bin/env bash
# Tools for the CPU backend's build. Idempotent: installs only what is missing.
#   - cmake and a C++ compiler: llama-cpp-sys-2 builds its vendored llama.cpp;
#   - libclang: bindgen (llama.cpp bindings, RKLLM bindings from host/crates/llm/rkllm/rkllm.h).
# (The aarch64 cross toolchain only the tests need is 45-cross.sh.)
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
if [ ${#need[@]} -gt 0 ]; then
  apt_install 40-llm "${need[@]}"
fi
echo "40-llm: cmake, C++ and libclang are present"
