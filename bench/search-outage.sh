#!/usr/bin/env bash
# Hybrid searches while the query embedder hangs: a database of 40 small
# files whose vector space an Ollama stand-in made, then `BINARY serve`
# pointed at a stand-in that accepts connections and never answers, and N
# searches through its REST API one after another (a fresh query each,
# so the query cache never answers), each timed by curl. For each binary
# given, alternated over ROUNDS rounds, prints one line a round: the
# searches' total time, and the median and slowest search. PACE (seconds,
# default 0) is a pause after each search, for searches spread over the
# outage as an assistant's are, rather than back to back. DEADLINE
# (seconds, default none) is each search's client deadline (curl -m), for
# a client that gives up sooner than the server's 2 s embed budget.
#
#   go build -o /tmp/embedstandin ./bench/mcpload/embedstandin
#   bench/search-outage.sh OLD_BINARY NEW_BINARY [N] [ROUNDS]
#   PACE=1 bench/search-outage.sh OLD_BINARY NEW_BINARY 60 1
#   DEADLINE=0.2 bench/search-outage.sh OLD_BINARY NEW_BINARY 60 3
set -euo pipefail
cd "$(dirname "$0")/.."
old=${1:?usage: bench/search-outage.sh OLD_BINARY NEW_BINARY [N] [ROUNDS]}
new=${2:?usage: bench/search-outage.sh OLD_BINARY NEW_BINARY [N] [ROUNDS]}
n=${3:-60}
rounds=${4:-3}
D=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$D"' EXIT
source bench/lib.sh

mkdir "$D/vault"
for i in $(seq -w 1 40); do
  printf '**User:** question %s about bread\n\n**Assistant:** answer %s about rye\n' "$i" "$i" > "$D/vault/f$i.md"
done
"${STANDIN:-/tmp/embedstandin}" --dim 16 2>"$D/standin.log" &
sp=$!
pids+=("$sp")
export RECALL_DB=$D/r.db RECALL_EMBEDDER=ollama RECALL_MODEL=m HOME=$D XDG_CONFIG_HOME=$D/config
RECALL_OLLAMA_URL=$(wait_listen "$D/standin.log") "$old" sweep "$D/vault" >/dev/null
kill "$sp"

# The hanging embedder: the kernel completes each connection (the listen
# backlog) and nobody ever reads the request.
python3 -c '
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(4096)
print("listening on http://127.0.0.1:%d" % s.getsockname()[1], file=sys.stderr, flush=True)
time.sleep(1e9)' 2>"$D/hang.log" &
pids+=("$!")
export RECALL_OLLAMA_URL
RECALL_OLLAMA_URL=$(wait_listen "$D/hang.log")
RECALL_TOKEN=$("$old" token new)
export RECALL_TOKEN

run() { # run LABEL BINARY ROUND
  "$2" serve --addr 127.0.0.1:0 --rate 0 2>"$D/serve.log" &
  local vp=$! url
  url=$(wait_listen "$D/serve.log")
  for _ in $(seq 600); do grep -q 'vector index loaded' "$D/serve.log" && break; sleep 0.1; done
  for i in $(seq "$n"); do
    curl -s -o /dev/null -w '%{time_total}\n' ${DEADLINE:+-m "$DEADLINE"} -H "Authorization: Bearer $RECALL_TOKEN" \
      "$url/api/search" -d "{\"query\": \"question $i about bread\"}" || true # a search past DEADLINE still prints its time
    sleep "${PACE:-0}"
  done | sort -n | awk -v label="$1" -v round="$3" '
    { t[NR] = $1; sum += $1 }
    END { printf "%s %s: %d searches, total %.2f s, median %.3f s, slowest %.3f s\n", round, label, NR, sum, (NR % 2 ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2), t[NR] }'
  kill -INT "$vp"
  wait "$vp" 2>/dev/null || true
}
for round in $(seq "$rounds"); do
  run old "$old" "$round"
  run new "$new" "$round"
done
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
