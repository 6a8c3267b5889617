#!/usr/bin/env bash
# Load benchmark: search_archive over MCP (Streamable HTTP, loopback) against
# about 100,000 archive chunks in hybrid mode, measured by bench/mcpload from
# a second process with 20 concurrent Go SDK sessions.
#
#   bench/mcp-load.sh                 # everything; generated data stays in $WORK
#   CLIENTS=20 DURATION=60s bench/mcp-load.sh
#   BENCH_DB=postgres://user@host/db bench/mcp-load.sh   # the store on PostgreSQL
#
# What runs, each its own process:
#   - bench/mcpload/embedstandin: a BENCHMARK STAND-IN for a remote embedding
#     service (Ollama's /api/embed, deterministic word-hash vectors, 384
#     dims). recall's real Ollama client embeds every chunk and every query
#     through it over loopback; the built-in encoder would need hours to
#     embed 100,000 chunks on two cores. Latencies therefore exclude the
#     embedding model's own time per query; everything else is recall's.
#   - recall serve, built from this tree, with one token and --rate 0 (the
#     load tool's sessions all use that token; the default per-token limit
#     of 20/s would otherwise answer 429).
#   - bench/mcpload, four runs: one client back to back, hybrid and lexical
#     (latency without contention, and what full text alone costs); 20
#     clients each sending a search every 4 s on average at random moments
#     (5/s offered, an assistant-like pace; latency counted from when a
#     request was due, so a server falling behind shows); and 20 clients
#     back to back (saturation: latency = clients / throughput).
# All of them share the machine's cores with recall. A run with errors
# (timeouts, fallbacks to another mode) is reported and the script exits 1
# at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
export CGO_ENABLED=0

WORK=${WORK:-/tmp/recall-mcp-load}
FILES=${FILES:-18300}    # x ~5.5 chunks per 8 KB file = ~100,000 chunks
BYTES=${BYTES:-8000}
CLIENTS=${CLIENTS:-20}
DURATION=${DURATION:-30s}
RATE=${RATE:-0.25}       # searches per second per client in the paced run
mkdir -p "$WORK/bin"

echo "== build"
go build -trimpath -o "$WORK/bin/recall" ./cmd/recall
for t in mcpload mcpload/embedstandin mcpload/genvault; do
  go build -trimpath -o "$WORK/bin/$(basename $t)" ./bench/$t
done

if [ ! -f "$WORK/vault/.complete" ]; then
  echo "== generate $FILES conversations of ~$BYTES bytes"
  rm -rf "$WORK/vault"
  "$WORK/bin/genvault" -files "$FILES" -bytes "$BYTES" "$WORK/vault"
  touch "$WORK/vault/.complete"
fi

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

source bench/lib.sh

"$WORK/bin/embedstandin" 2>"$WORK/standin.log" &
pids+=($!)
EMBED_URL=$(wait_listen "$WORK/standin.log")
standin_env "$EMBED_URL"

echo "== sweep (incremental: a second run only checks the files)"
/usr/bin/time -f "sweep: %e s wall, %M KB max RSS" "$WORK/bin/recall" sweep "$WORK/vault" --json | tail -1
"$WORK/bin/recall" stats

RECALL_TOKEN=$("$WORK/bin/recall" token new)
export RECALL_TOKEN
"$WORK/bin/recall" serve --addr 127.0.0.1:0 --rate 0 2>"$WORK/serve.log" &
SERVE_PID=$!
pids+=($SERVE_PID)
MCP_URL="$(wait_listen "$WORK/serve.log")/mcp"

status=0
load() {
  echo "== mcpload $*"
  "$WORK/bin/mcpload" -url "$MCP_URL" "$@" || status=1
}
load -clients 1 -mode hybrid -duration "$DURATION" -json "$WORK/load-1-hybrid.json"
load -clients 1 -mode lexical -duration "$DURATION" -json "$WORK/load-1-lexical.json"
load -clients "$CLIENTS" -mode hybrid -rate "$RATE" -duration "$DURATION" -json "$WORK/load-paced.json"
load -clients "$CLIENTS" -mode hybrid -duration "$DURATION" -json "$WORK/load-saturated.json"
echo "recall serve: $(ps -o rss= -p "$SERVE_PID" | awk '{printf "%.0f MB RSS", $1/1024}') after the runs; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "summaries: $WORK/load-*.json"
exit $status
