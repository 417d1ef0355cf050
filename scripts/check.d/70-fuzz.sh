#!/usr/bin/env bash
# beside-tests: cpu
# (Beside the test run: its own workspace and target directory, one core while fuzzing.)
# Fuzzing (fuzz/): replays fuzz/regressions/TARGET/* (every crash found so far), then fuzzes each
# target for RKMCP_FUZZ_SECONDS (default 15 s; 7 targets ≈ 105 s plus the build), seeded
# with the repository's own corpora. RKMCP_NO_FUZZ=1 skips it.
# Without a sanitizer, on the stable toolchain: every target is safe Rust, whose faults are panics,
# runaway memory and hangs, which libFuzzer catches on its own. AddressSanitizer instrumented all
# ~80 dependencies too, which made the build ~2x and each execution several times slower, beside
# a test run that needs the cores. RKMCP_FUZZ_SANITIZER=address (the pinned nightly, installed by
# scripts/setup.d/60-fuzz.sh when that variable is set) for a deeper run by hand.
#
# Built and run without cargo-fuzz, which is a thin wrapper: cargo with the instrumentation flags
# cargo-fuzz 0.13 passes for `cargo fuzz build -O` (below), then each target's binary, a
# libFuzzer executable. Installing cargo-fuzz cost CI ~1.5 min of a core for nothing else; with
# it installed, `cargo fuzz run TARGET` from fuzz/ builds and runs the same targets by hand.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
nightly=nightly-2026-05-20
seconds="${RKMCP_FUZZ_SECONDS:-15}"
sanitizer="${RKMCP_FUZZ_SANITIZER:-none}"
if [ "${RKMCP_NO_FUZZ:-0}" = 1 ]; then
  echo "70-fuzz: skipped (RKMCP_NO_FUZZ=1)" >&2
  exit 0
fi
cargo=(cargo)
# cargo-fuzz's flags for a release build on Linux: coverage counters, comparison tracing and
# stack depth for libFuzzer, `cfg(fuzzing)`, no branch folding (it hides branches from the
# coverage), and one codegen unit (with several, the sancov pass blocks cross-unit inlining).
flags=(-Cpasses=sancov-module
  -Cllvm-args=-sanitizer-coverage-level=4
  -Cllvm-args=-sanitizer-coverage-inline-8bit-counters
  -Cllvm-args=-sanitizer-coverage-pc-table
  -Cllvm-args=-sanitizer-coverage-trace-compares
  --cfg fuzzing
  -Cllvm-args=-simplifycfg-branch-fold-threshold=0
  -Cllvm-args=-sanitizer-coverage-stack-depth
  -Ccodegen-units=1)
if [ "$sanitizer" != none ]; then
  if ! rustup run "$nightly" rustc --version >/dev/null 2>&1; then
    echo "70-fuzz: skipped: RKMCP_FUZZ_SANITIZER=$sanitizer needs $nightly (run scripts/setup.d/60-fuzz.sh with it set)" >&2
    exit 0
  fi
  cargo=(cargo "+$nightly")
  flags+=("-Zsanitizer=$sanitizer")
  export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_odr_violation=0}"
fi
cd "$repo/fuzz"
# With --target, RUSTFLAGS reach the targets and their dependencies but not build scripts.
triple="$(rustc -vV | sed -n 's/^host: //p')"
started=$(date +%s)
RUSTFLAGS="${flags[*]} ${RUSTFLAGS:-}" "${cargo[@]}" build --release --target "$triple" --bins \
  --config 'profile.release.debug="line-tables-only"'
echo "70-fuzz: build took $(( $(date +%s) - started )) s" >&2
bin_dir="$repo/fuzz/target/$triple/release"
# The targets: the fuzz crate's binaries, as cargo reads fuzz/Cargo.toml.
targets=$(cargo metadata --no-deps --format-version 1 | python3 -c '
import json, sys
for package in json.load(sys.stdin)["packages"]:
    for target in package["targets"]:
        if "bin" in target["kind"]:
            print(target["name"])')
[ -n "$targets" ] || { echo "70-fuzz: no [[bin]] targets found in fuzz/Cargo.toml" >&2; exit 1; }

# Seeds: files the repository already has for each target (copied, so libFuzzer's additions
# land in fuzz/corpus/, which git ignores).
seed() {
  local target=$1; shift
  mkdir -p "corpus/$target"
  for src in "$@"; do
    [ -d "$src" ] && find "$src" -type f -size -64k -exec cp -n {} "corpus/$target/" \;
  done
  return 0
}
seed detectors "$repo/host/crates/tool-formats/corpus"
seed grammar "$repo/host/crates/tool-formats/converter-corpus/tools"
seed wit_boundary
seed session_messages
seed config "$repo/config"
seed gateway_input "$repo/fuzz/seeds/gateway_input"
seed oauth_responses "$repo/fuzz/seeds/oauth_responses"

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
total=0
for target in $targets; do
  mkdir -p "artifacts/$target"
  if [ -d "regressions/$target" ]; then
    if ! "$bin_dir/$target" -runs=0 regressions/"$target"/* >"$log" 2>&1; then
      tail -n 40 "$log" >&2
      echo "70-fuzz: $target fails on a saved regression input (fuzz/regressions/$target)" >&2
      exit 1
    fi
  fi
  if ! "$bin_dir/$target" "corpus/$target" -artifact_prefix="artifacts/$target/" \
      -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 >"$log" 2>&1; then
    grep -A12 "panicked at" "$log" | head -n 40 >&2 || tail -n 60 "$log" >&2
    echo "70-fuzz: NEW FINDING: $target crashed; the input is in fuzz/artifacts/$target/." >&2
    echo "70-fuzz: fix it and add the input to fuzz/regressions/$target/ (replayed on every run)." >&2
    # A random time-boxed search must not make CI flaky: a new finding is reported loudly, and
    # fails the run only with RKMCP_FUZZ_STRICT=1. Saved regressions (above) always fail it.
    findings=$(( ${findings:-0} + 1 ))
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  echo "70-fuzz: $target: ${runs:-?} executions in ${seconds} s" >&2
  total=$(( total + ${runs:-0} ))
done
echo "70-fuzz: $total executions; ${findings:-0} new finding(s); finished in $(( $(date +%s) - started )) s" >&2
if [ "${findings:-0}" -gt 0 ] && [ "${RKMCP_FUZZ_STRICT:-0}" = 1 ]; then
  exit 1
fi
