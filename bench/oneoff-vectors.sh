#!/usr/bin/env bash
# Times one-off hybrid and semantic searches (`recall search` as a command,
# which reads the read space's vectors) against a database with two recall
# binaries, alternated, with the embedding stand-in as the query embedder
# (bench/mcpload/embedstandin; the MCP load test's database was embedded
# with it). Warm page cache: each command runs once before the rounds.
#
#   bench/oneoff-vectors.sh OLD_BINARY NEW_BINARY [ROUNDS]
#
# BENCH_DB names the database (default: the MCP load test's,
# /tmp/recall-mcp-load/recall.db, made by bench/mcp-load.sh). Prints one
# line per round, binary and search: "round binary wall_s user_s sys_s
# max_rss_kb search".
set -euo pipefail
cd "$(dirname "$0")/.."
old=${1:?usage: bench/oneoff-vectors.sh OLD_BINARY NEW_BINARY [ROUNDS]}
new=${2:?usage: bench/oneoff-vectors.sh OLD_BINARY NEW_BINARY [ROUNDS]}
rounds=${3:-3}
export BENCH_DB=${BENCH_DB:-/tmp/recall-mcp-load/recall.db}
[ -e "$BENCH_DB" ] || { echo "no database at $BENCH_DB (run bench/mcp-load.sh first)" >&2; exit 1; }
WORK=$(mktemp -d)
go build -o "$WORK/embedstandin" ./bench/mcpload/embedstandin
source bench/lib.sh
"$WORK/embedstandin" 2>"$WORK/standin.log" &
standin=$!
trap 'kill $standin 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"' EXIT
standin_env "$(wait_listen "$WORK/standin.log")"

searches=("sourdough starter" "--mode semantic sourdough starter" "--since 2024-01 --until 2024-06 garden tomatoes")
for s in "${searches[@]}"; do "$old" search $s >/dev/null; done
for round in $(seq "$rounds"); do
  for label in old new; do
    bin=$old
    [ "$label" = new ] && bin=$new
    for s in "${searches[@]}"; do
      /usr/bin/time -f "$round $label %e %U %S %M $s" "$bin" search $s 2>&1 >/dev/null | tail -1
    done
  done
done
