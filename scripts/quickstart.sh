#!/usr/bin/env bash
# One command from a fresh clone to a searchable archive on the embedded
# defaults (SQLite + the in-process encoder, no server): build recall, install
# the default model, sweep the sample vault and run a search.
set -euo pipefail
cd "$(dirname "$0")/.."
export CGO_ENABLED=0
demo=${DEMO:-.recall-demo}
mkdir -p "$demo"
export RECALL_DB="$demo/recall.db"
export RECALL_MODELS_DIR="$demo/models"

[ -x bin/recall ] || go build -o bin/recall ./cmd/recall
if ! ./scripts/fetch-model.sh "$RECALL_MODELS_DIR"; then
  echo "could not install the model: recall will run lexical-only" >&2
fi

echo
echo "\$ recall sweep examples/vault"
bin/recall sweep examples/vault
echo
echo "\$ recall search --limit 3 \"moments of vulnerability\""
bin/recall search --limit 3 "moments of vulnerability"
echo "\$ recall search --limit 2 \"how do I revive a sourdough starter\""
bin/recall search --limit 2 "how do I revive a sourdough starter"
echo "\$ recall stats"
bin/recall stats
echo
echo "The demo database is $RECALL_DB. Try: RECALL_DB=$PWD/$RECALL_DB RECALL_MODELS_DIR=$PWD/$RECALL_MODELS_DIR $PWD/bin/recall search \"...\""
