# Helpers shared by the load scripts (sourced, not run).

# wait_listen FILE: the URL a process printed on stderr once listening.
wait_listen() {
  for _ in $(seq 600); do
    if url=$(grep -o 'listening on http://[0-9.:]*' "$1" | head -1 | sed 's/listening on //') && [ -n "$url" ]; then
      echo "$url"
      return
    fi
    sleep 0.1
  done
  echo "no listening line in $1:" >&2
  cat "$1" >&2
  exit 1
}

# standin_env URL: point recall at $WORK's database (or BENCH_DB, e.g. a
# postgres:// URL) and at the embedding stand-in listening at URL.
standin_env() {
  export RECALL_DB="${BENCH_DB:-$WORK/recall.db}" RECALL_EMBEDDER=ollama RECALL_MODEL=bench-standin \
    RECALL_OLLAMA_URL="$1" HOME="$WORK" XDG_CONFIG_HOME="$WORK/config"
}
