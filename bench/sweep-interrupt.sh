#!/usr/bin/env bash
# A first sweep with the built-in model interrupted by a SIGINT AFTER
# seconds in (default 12), as a Ctrl-C: how many files it left stored, how
# long it took to exit after the interrupt, and what a sweep after it
# would still do (a dry run: files_skipped are the stored files). SIG=KILL
# kills it instead, as a crash would.
#
#   scripts/fetch-model.sh /tmp/models && export RECALL_MODELS_DIR=/tmp/models
#   go build -o /tmp/genvault ./bench/mcpload/genvault && /tmp/genvault -files 300 -bytes 4200 /tmp/big
#   bench/sweep-interrupt.sh OLD_BINARY /tmp/big; bench/sweep-interrupt.sh NEW_BINARY /tmp/big
set -euo pipefail
B=$1 V=$2 AFTER=${3:-12} SIG=${SIG:-INT}
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
export RECALL_DB=$D/r.db HOME=$D
"$B" sweep --json "$V" > "$D/out.json" 2>/dev/null &
P=$!
sleep "$AFTER"
kill -"$SIG" $P
s=$(date +%s.%N)
wait $P || true
e=$(date +%s.%N)
stored=$("$B" stats --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["sources"].get("archive", 0))')
next=$("$B" sweep --dry-run --json "$V" 2>/dev/null | tail -1)
echo "$(basename "$B"): $stored files stored, exited $(echo "$e - $s" | bc) s after the SIG$SIG; interrupted sweep $(tail -1 "$D/out.json"); a sweep now would do $next"
