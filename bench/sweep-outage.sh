#!/usr/bin/env bash
# A sweep of 40 small files while the embedder is down: a database whose
# vector space an Ollama stand-in made (one memory saved through it), the
# stand-in stopped, then `BINARY sweep`. Prints the wall time and the summary.
#
#   go build -o /tmp/embedstandin ./bench/mcpload/embedstandin
#   bench/sweep-outage.sh OLD_BINARY; bench/sweep-outage.sh NEW_BINARY
set -euo pipefail
B=$1
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
mkdir "$D/vault"
for i in $(seq -w 1 40); do
  printf '**User:** question %s about bread\n\n**Assistant:** answer %s about rye\n' "$i" "$i" > "$D/vault/f$i.md"
done
PORT=${PORT:-18765}
"${STANDIN:-/tmp/embedstandin}" --addr "127.0.0.1:$PORT" --dim 16 >/dev/null 2>&1 &
P=$!
sleep 0.5
export RECALL_DB=$D/r.db RECALL_EMBEDDER=ollama RECALL_MODEL=m RECALL_OLLAMA_URL=http://127.0.0.1:$PORT HOME=$D
"$B" memory save note_probe "a probe" >/dev/null
kill $P; wait $P 2>/dev/null || true
s=$(date +%s.%N)
"$B" sweep "$D/vault" --json > "$D/out.json" 2>/dev/null || true
e=$(date +%s.%N)
echo "$(basename "$B"): $(echo "$e - $s" | bc) s; $(tail -1 "$D/out.json")"
