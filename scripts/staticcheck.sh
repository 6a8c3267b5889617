#!/usr/bin/env bash
# Runs staticcheck, installing a pinned version through the Go module proxy if needed.
set -euo pipefail
cd "$(dirname "$0")/.."
version=v0.8.2
bin="$(go env GOPATH)/bin/staticcheck"
if ! [ -x "$bin" ] || ! "$bin" -version 2>/dev/null | grep -q "${version#v}"; then
  echo "installing staticcheck $version" >&2
  go install "honnef.co/go/tools/cmd/staticcheck@$version"
fi
"$bin" ./...
