#!/usr/bin/env bash
# beside-tests: cpu
# (Runs beside the test run, last of those checks: the tests leave a third of the two cores idle,
# and by the time it starts `cargo test` has long finished compiling, so the two never wait on
# each other's target-directory lock.)
# rkmcp must build for aarch64-unknown-linux-gnu (Rockchip RK3588/RK3576 boards run RKLLM there).
# The llama.cpp backend is left out of the cross build (feature `llama` off): the board uses the
# NPU, and cross-building llama.cpp needs a C++ cross toolchain and doubles the build time.
# Then, when qemu-user is installed, the RKLLM FFI tests run under emulation: the bindings against
# the layout facts of every real release (tests/rkllm_ffi/layout.rs), and the whole FFI path
# against the aarch64 TEST DOUBLE of librkllmrt.so, built once per layout (1.2.0, 1.2.1, 1.3.0; a
# few seconds each), so struct layouts and callbacks are checked on the target's own C ABI.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
target=aarch64-unknown-linux-gnu
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
export CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc
export AR_aarch64_unknown_linux_gnu=aarch64-linux-gnu-ar
start=$(date +%s)
# A type check of rkmcp and every dependency for aarch64 (their build scripts run, so ring's C
# and assembly go through the cross compiler) by default; a full cross build, which compiles
# wasmtime and cranelift a second time (~12 min on 2 cores, beside the tests), only with
# RKMCP_AARCH64_BUILD=1. (The choice used to depend on how much of CI's time had gone: once
# the suite got faster, CI started doing the full build and took 10 minutes longer for it.)
if [ "${RKMCP_AARCH64_BUILD:-0}" != 1 ]; then
  cargo check --release --target "$target" -p rkmcp --no-default-features
  built=$(date +%s)
  echo "80-aarch64: cross check of rkmcp took $((built - start)) s (RKMCP_AARCH64_BUILD=1 for a full cross build)" >&2
else
  cargo build --release --target "$target" -p rkmcp --no-default-features
  built=$(date +%s)
  echo "80-aarch64: cross build of rkmcp took $((built - start)) s" >&2
  file "${CARGO_TARGET_DIR:-target}/$target/release/rkmcp" 2>/dev/null | grep -q "ARM aarch64" \
    || { echo "80-aarch64: the rkmcp binary is not an aarch64 executable" >&2; exit 1; }
fi
if command -v qemu-aarch64 >/dev/null 2>&1; then
  export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64 -L /usr/aarch64-linux-gnu"
  cargo test --release --target "$target" -p rkmcp-llm --no-default-features --test rkllm_ffi
  echo "80-aarch64: RKLLM FFI tests under qemu took $(( $(date +%s) - built )) s" >&2
else
  echo "80-aarch64: qemu-aarch64 not installed; skipping the emulated FFI tests" >&2
fi
