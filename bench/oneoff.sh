#!/usr/bin/env bash
# Times one-off commands, and how soon `recall mcp` answers initialize,
# against a database with two recall binaries, alternated: each once with
# a cold page cache (when this runs as root and can drop caches) and once
# right after, warm.
#
#   bench/oneoff.sh OLD_BINARY NEW_BINARY [ROUNDS]
#
# RECALL_DB names the database (default: the MCP load test's,
# /tmp/recall-mcp-load/recall.db, made by bench/mcp-load.sh). Prints one
# line per round, binary and command: "round binary cold S warm S command".
set -euo pipefail
old=${1:?usage: bench/oneoff.sh OLD_BINARY NEW_BINARY [ROUNDS]}
new=${2:?usage: bench/oneoff.sh OLD_BINARY NEW_BINARY [ROUNDS]}
rounds=${3:-3}
export RECALL_DB=${RECALL_DB:-/tmp/recall-mcp-load/recall.db}
[ -e "$RECALL_DB" ] || { echo "no database at $RECALL_DB (run bench/mcp-load.sh first)" >&2; exit 1; }

cold=yes
if ! { sync && echo 3 >/proc/sys/vm/drop_caches; } 2>/dev/null; then
  echo "cannot drop the page cache (not root?): cold figures are warm ones" >&2
  cold=no
fi
# mcp_init BINARY: seconds until `recall mcp` answers initialize.
mcp_init() {
  python3 - "$1" <<'PY'
import json, subprocess, sys, time
t = time.time()
p = subprocess.Popen([sys.argv[1], "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
p.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}\n')
p.stdin.flush()
json.loads(p.stdout.readline())
print("%.3f" % (time.time() - t))
p.stdin.close()
p.wait()
PY
}
seconds() { # command...: wall seconds, and the exit status when not 0
  local s e rc=0
  s=$(date +%s.%N)
  "$@" >/dev/null 2>&1 || rc=$?
  e=$(date +%s.%N)
  if [ "$rc" = 0 ]; then echo "$e - $s" | bc; else echo "$(echo "$e - $s" | bc)(exit $rc)"; fi
}
for round in $(seq "$rounds"); do
  for label in old new; do
    bin=$old
    [ "$label" = new ] && bin=$new
    for cmd in "stats" "search --mode lexical garden tomatoes" "memory find"; do
      [ "$cold" = yes ] && { sync; echo 3 >/proc/sys/vm/drop_caches; }
      c=$(seconds "$bin" $cmd)
      w=$(seconds "$bin" $cmd)
      echo "$round $label cold $c warm $w $cmd"
    done
    [ "$cold" = yes ] && { sync; echo 3 >/proc/sys/vm/drop_caches; }
    c=$(mcp_init "$bin")
    w=$(mcp_init "$bin")
    echo "$round $label cold $c warm $w mcp initialize"
  done
done
