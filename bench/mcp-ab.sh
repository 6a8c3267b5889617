#!/usr/bin/env bash
# Same-session comparison of two recall builds on bench/mcp-load.sh's data:
# each build serves in turn (one client back to back, then 20 paced clients),
# ROUNDS times, alternating, so that both see the same machine.
#
#   bench/mcp-load.sh                      # once: generates and sweeps the data
#   bench/mcp-ab.sh c32e135 HEAD           # two commits (or any git revisions)
#   ROUNDS=3 DURATION=30s bench/mcp-ab.sh main my-branch
#   MODE=semantic bench/mcp-ab.sh c32e135 HEAD
#
# Each revision is built from a temporary git worktree. Both must read the
# database as the current tree made it (no newer schema migrations).
set -euo pipefail
cd "$(dirname "$0")/.."
export CGO_ENABLED=0

WORK=${WORK:-/tmp/recall-mcp-load}
ROUNDS=${ROUNDS:-2}
DURATION=${DURATION:-20s}
PACED=${PACED:-40s}
MODE=${MODE:-hybrid}     # or semantic, lexical
[ $# -eq 2 ] || { echo "usage: bench/mcp-ab.sh REV_A REV_B" >&2; exit 2; }
[ -f "$WORK/recall.db" ] || { echo "no $WORK/recall.db: run bench/mcp-load.sh first" >&2; exit 2; }

for t in mcpload mcpload/embedstandin; do
  go build -trimpath -o "$WORK/bin/$(basename $t)" ./bench/$t
done
names=()
for rev in "$1" "$2"; do
  name="recall-$(git rev-parse --short "$rev")"
  wt=$(mktemp -d)
  git worktree add -q --detach "$wt" "$rev"
  (cd "$wt" && go build -trimpath -o "$WORK/bin/$name" ./cmd/recall)
  git worktree remove --force "$wt"
  names+=("$name")
done

source bench/lib.sh

run() { # run BINARY LABEL
  "$WORK/bin/embedstandin" 2>"$WORK/standin-ab.log" &
  local sp=$!
  local embed_url
  embed_url=$(wait_listen "$WORK/standin-ab.log")
  standin_env "$embed_url"
  RECALL_TOKEN=$("$WORK/bin/$1" token new)
  export RECALL_TOKEN
  "$WORK/bin/$1" serve --addr 127.0.0.1:0 --rate 0 2>"$WORK/serve-ab.log" &
  local vp=$!
  local url
  url="$(wait_listen "$WORK/serve-ab.log")/mcp"
  "$WORK/bin/mcpload" -url "$url" -clients 1 -mode "$MODE" -duration "$DURATION" \
    -json "$WORK/ab-$2-1.json" | grep latency | sed "s/^ */$2 1 client   /"
  "$WORK/bin/mcpload" -url "$url" -clients 20 -mode "$MODE" -rate 0.25 -duration "$PACED" \
    -json "$WORK/ab-$2-paced.json" | grep latency | sed "s/^ */$2 20 paced   /"
  kill -INT "$vp" "$sp"
  wait "$vp" "$sp" 2>/dev/null || true
}

for r in $(seq "$ROUNDS"); do
  run "${names[0]}" "A$r"
  run "${names[1]}" "B$r"
done
echo "A = $1 (${names[0]}), B = $2 (${names[1]}); load average $(cut -d' ' -f1-3 /proc/loadavg)"
