#!/usr/bin/env bash
# beside-tests
# (Beside the test run: its own workspace and target directory, one core while fuzzing.)
# Fuzzing (fuzz/): replays fuzz/regressions/TARGET/* (every crash found so far), then fuzzes each
# target for RKMCP_FUZZ_SECONDS (default 15 s; 7 targets ≈ 105 s plus the build), seeded
# with the repository's own corpora. Skips, saying why, if cargo-fuzz is missing
# (scripts/setup.d/60-fuzz.sh installs it) or RKMCP_NO_FUZZ=1.
# Without a sanitizer, on the stable toolchain: every target is safe Rust, whose faults are panics,
# runaway memory and hangs, which libFuzzer catches on its own. AddressSanitizer instrumented all
# ~80 dependencies too, which made the build ~2x and each execution several times slower, beside
# a test run that needs the cores. RKMCP_FUZZ_SANITIZER=address (the pinned nightly) for a deeper
# run by hand.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
deps="${RKMCP_DEPS:-$repo/.deps}"
nightly=nightly-2026-05-20
seconds="${RKMCP_FUZZ_SECONDS:-15}"
sanitizer="${RKMCP_FUZZ_SANITIZER:-none}"
fuzz=(cargo fuzz)
toolchain="the default toolchain"
if [ "$sanitizer" != none ]; then
  fuzz=(cargo "+$nightly" fuzz)
  toolchain="$nightly"
fi
if [ "${RKMCP_NO_FUZZ:-0}" = 1 ]; then
  echo "70-fuzz: skipped (RKMCP_NO_FUZZ=1)" >&2
  exit 0
fi
export PATH="$deps/cargo-fuzz/bin:$PATH"
# scripts/test leaves building cargo-fuzz to this step (RKMCP_DEFER_CARGO_FUZZ in its setup).
if ! command -v cargo-fuzz >/dev/null; then
  started=$(date +%s)
  RKMCP_DEPS="$deps" RKMCP_DEFER_CARGO_FUZZ=0 bash "$repo/scripts/setup.d/60-fuzz.sh" >&2
  echo "70-fuzz: installing cargo-fuzz took $(( $(date +%s) - started )) s" >&2
fi
if { [ "$sanitizer" != none ] && ! rustup run "$nightly" rustc --version >/dev/null 2>&1; } ||
   ! command -v cargo-fuzz >/dev/null; then
  echo "70-fuzz: skipped: $toolchain or cargo-fuzz is not installed (run scripts/setup.d/60-fuzz.sh)" >&2
  exit 0
fi
cd "$repo/fuzz"
started=$(date +%s)
"${fuzz[@]}" build -O -s "$sanitizer"
echo "70-fuzz: build took $(( $(date +%s) - started )) s" >&2

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
for target in $("${fuzz[@]}" list); do
  if [ -d "regressions/$target" ]; then
    if ! "${fuzz[@]}" run -O -s "$sanitizer" "$target" regressions/"$target"/* -- -runs=0 >"$log" 2>&1; then
      tail -n 40 "$log" >&2
      echo "70-fuzz: $target fails on a saved regression input (fuzz/regressions/$target)" >&2
      exit 1
    fi
  fi
  if ! "${fuzz[@]}" run -O -s "$sanitizer" "$target" "corpus/$target" -- \
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
