#!/usr/bin/env bash
# Search latency while `recall serve --vault` sweeps a folder in the
# background, against the same server with nothing to sweep. Uses
# bench/mcp-load.sh's data (run it once first): a copy of its database of
# ~100,000 chunks, and a second generated vault of FILES conversations that
# the server sweeps into it while one MCP client searches back to back.
#
#   bench/serve-sweep.sh
#   FILES=4000 DURATION=30s bench/serve-sweep.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export CGO_ENABLED=0

SRC=${SRC:-/tmp/recall-mcp-load}
WORK=${WORK:-/tmp/recall-serve-sweep}
FILES=${FILES:-4000}
DURATION=${DURATION:-30s}
[ -f "$SRC/recall.db" ] || { echo "no $SRC/recall.db: run bench/mcp-load.sh first" >&2; exit 2; }
mkdir -p "$WORK/bin"
go build -trimpath -o "$WORK/bin/recall" ./cmd/recall
for t in mcpload mcpload/embedstandin mcpload/genvault; do
  go build -trimpath -o "$WORK/bin/$(basename $t)" ./bench/$t
done
if [ ! -f "$WORK/vault/.complete" ]; then
  rm -rf "$WORK/vault"
  # Under a folder of its own: the first vault's files have the same names.
  "$WORK/bin/genvault" -files "$FILES" -bytes 8000 -seed 7 "$WORK/vault/extra"
  touch "$WORK/vault/.complete"
fi

source bench/lib.sh

run() { # run LABEL [serve flags...]
  local label=$1
  shift
  rm -f "$WORK"/recall.db*
  cp "$SRC/recall.db" "$WORK/recall.db"
  "$WORK/bin/embedstandin" 2>"$WORK/standin.log" &
  local sp=$!
  standin_env "$(wait_listen "$WORK/standin.log")"
  RECALL_TOKEN=$("$WORK/bin/recall" token new)
  export RECALL_TOKEN
  "$WORK/bin/recall" serve --addr 127.0.0.1:0 --rate 0 "$@" 2>"$WORK/serve-$label.log" &
  local vp=$!
  local url
  url="$(wait_listen "$WORK/serve-$label.log")/mcp"
  for _ in $(seq 600); do grep -q 'vector index loaded' "$WORK/serve-$label.log" && break; sleep 0.1; done
  "$WORK/bin/mcpload" -url "$url" -clients 1 -mode hybrid -duration "$DURATION" \
    -json "$WORK/$label.json" | grep latency | sed "s/^ */$label   /"
  grep -o 'msg=sweep.*' "$WORK/serve-$label.log" | sed "s/^/$label   /" || true
  kill -INT "$vp" "$sp"
  wait "$vp" "$sp" 2>/dev/null || true
}

run idle
run sweeping --vault "$WORK/vault" --sweep-every 0
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
