# vigil — make targets. `make demo` runs the demo; `make test` runs the test suite.
GO       ?= go
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -s -w -X main.version=$(VERSION)
BIN      := bin/vigil
PKGS     := ./...
# Integration dependencies (.ci/setup installs them): influxd is built once and cached here.
export VIGIL_INFLUXD ?= $(CURDIR)/.cache/bin/influxd

.PHONY: all build test test-short demo bench soak scenarios lint fuzz generate setup clean multi-region

all: build

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/vigil

# The full suite: unit and integration tests against real sockets, Chromium,
# InfluxDB and Alertmanager. With CI=true a missing dependency fails the run.
test:
	$(GO) vet $(PKGS)
	$(GO) test -count=1 -timeout 20m $(PKGS)

# Quick pass without the slow integration tests.
test-short:
	$(GO) test -count=1 -short $(PKGS)

# Three demo origins, canaries as three regions, the proxy and the alerter on
# the embedded store. No network, no external service. Ctrl-C stops everything.
demo: build
	./$(BIN) demo

# examples/multi-region without Docker, on 127.0.0.1: InfluxDB 1.8 (influxd from make setup or
# PATH), the demo origins, canaries in three regions, the proxy and the alerter. Ctrl-C stops
# everything. `examples/multi-region/run-local.sh --check` is the same as a self-test.
multi-region: build
	examples/multi-region/run-local.sh

# Benchmarks side by side with the named peers (see README "Performance").
bench: build
	$(GO) test -run '^$$' -bench . -benchmem -count=1 -timeout 30m ./checks/... ./proxy/... ./reporting/... ./scripts/... ./canary/...
	@if [ -x canary/bench/run.sh ]; then canary/bench/run.sh; fi
	@if [ -x proxy/bench/run.sh ]; then proxy/bench/run.sh; fi

soak: build
	VIGIL_SOAK=1 $(GO) test -count=1 -run '^TestSoak$$' -timeout 30m -v ./cmd/vigil/

scenarios: build
	VIGIL_SCENARIOS=full $(GO) test -count=1 -run Scenario -timeout 60m ./cmd/vigil/...

# Every fuzz target in the module for FUZZTIME each (corpora in testdata/fuzz).
FUZZTIME ?= 30s
fuzz:
	@for p in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$p 2>/dev/null | grep '^Fuzz'); do \
	    echo "== $$p $$f"; $(GO) test -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) $$p || exit 1; \
	  done; \
	done

generate:
	$(GO) generate ./...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

# Install what the integration tests need (Debian packages, influxd).
setup:
	bash .ci/setup

clean:
	rm -rf bin
