#!/usr/bin/env bash
# One command from a fresh clone to a searchable archive on the embedded
# defaults (SQLite + the in-process encoder, no server): build recall, install
# the default model, sweep the sample vault and run a search.
set -euo pipefail
cd "$(dirname "$0")/.."
export CGO_ENABLED=0
demo=${DEMO:-.recall-demo}
bin=${BIN:-bin/recall}
mkdir -p "$demo"
# Paths made absolute, for the prefix printed at the end.
abs() { case "$1" in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
export RECALL_DB="$(abs "$demo/recall.db")"
# A models directory already set (one holding the model, say) is used,
# rather than downloading the model again into the demo's.
export RECALL_MODELS_DIR="$(abs "${RECALL_MODELS_DIR:-$demo/models}")"
bin="$(abs "$bin")"

[ -x "$bin" ] || go build -o "$bin" ./cmd/recall
if ! ./scripts/fetch-model.sh "$RECALL_MODELS_DIR"; then
  echo "could not install the model in $RECALL_MODELS_DIR: recall uses a copy pip installed if it finds one (recall model list), else runs lexical-only" >&2
fi

echo
echo "\$ recall sweep examples/vault"
"$bin" sweep examples/vault
echo
echo "\$ recall search --limit 3 \"moments of vulnerability\""
"$bin" search --limit 3 "moments of vulnerability"
echo "\$ recall search --limit 2 \"how do I revive a sourdough starter\""
"$bin" search --limit 2 "how do I revive a sourdough starter"
echo "\$ recall stats"
"$bin" stats
echo
echo "The demo database is $RECALL_DB. Try: RECALL_DB=$RECALL_DB RECALL_MODELS_DIR=$RECALL_MODELS_DIR $bin search \"...\""
