# fairsched: the single entry point for building, testing and measuring.
# "make" alone prints the targets.

GO              ?= go
BIN             := bin/fairsched
DEMO            ?= examples/demo.json
# fairsched serve: LISTEN address, CONFIG file (empty: the embedded examples/serve.json)
LISTEN          ?= 127.0.0.1:8080
CONFIG          ?=
TEST_TIMEOUT    ?= 5m
FUZZTIME        ?= 10s
COUNT           ?= 5
SHARED          ?= ../shared
CONFORMANCE_DIR ?= testdata/conformance
# the Go test that runs the same vectors when the Python checker cannot run
CONFORMANCE_PKG ?= $(if $(wildcard conformance/*_test.go),./conformance/,./core/snapshot/)
# x/perf has no tagged releases; pin a pseudo-version so that runs are reproducible and
# go.mod stays free of tool dependencies.
BENCHSTAT_VERSION ?= v0.0.0-20260908200009-22c9c6c9d4da
BENCHSTAT       := $(GO) run golang.org/x/perf/cmd/benchstat@$(BENCHSTAT_VERSION)

SHELL       := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

.PHONY: help build binary test test-race lint fuzz bench bench-compare solve conformance run serve clean

help: ## print the targets with one line each (default)
	@echo "usage: make TARGET [VAR=value ...]"
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## go build ./... and build bin/fairsched from ./cmd/fairsched
	$(GO) build ./...
	$(GO) build -o $(BIN) ./cmd/fairsched

binary: ## build only bin/fairsched
	$(GO) build -o $(BIN) ./cmd/fairsched

test: ## go test ./... (TEST_TIMEOUT, default 5m), then the conformance check
	$(GO) test -timeout=$(TEST_TIMEOUT) ./...
	@$(MAKE) --no-print-directory conformance

test-race: ## go test -race ./core/... ./facade/...
	$(GO) test -race -timeout=$(TEST_TIMEOUT) ./core/... ./facade/...

lint: ## go vet (default and invariants tags), gofmt check, staticcheck if installed
	$(GO) vet ./...
	$(GO) vet -tags invariants ./...
	@out=$$(find . -name '*.go' -not -path './.git/*' -not -path '*/testdata/*' -print0 | xargs -0 gofmt -l); \
	if [ -n "$$out" ]; then echo "not gofmt-ed (run gofmt -w):"; echo "$$out"; exit 1; fi
	@if command -v staticcheck >/dev/null 2>&1; then \
		echo "staticcheck ./..."; staticcheck ./...; \
	else \
		echo "staticcheck not installed; skipped"; \
	fi

fuzz: ## run every Fuzz target for FUZZTIME each (default 10s)
	@$(GO) test -list '^Fuzz' ./... | awk '/^Fuzz/ {names[n++] = $$1} /^ok/ {for (i = 0; i < n; i++) print $$2, names[i]; n = 0}' | \
	while read -r pkg name; do \
		echo "fuzz $$pkg $$name ($(FUZZTIME))"; \
		$(GO) test -run='^$$' -fuzz="^$$name\$$" -fuzztime=$(FUZZTIME) "$$pkg" </dev/null; \
	done

bench: ## run ./bench/ with -benchmem -count=COUNT (default 5), tee to bench/results/latest.txt
	@mkdir -p bench/results
	$(GO) test -run='^$$' -bench=. -benchmem -count=$(COUNT) ./bench/ | tee bench/results/latest.txt

bench-compare: ## benchstat OLD=old.txt NEW=new.txt (pinned benchstat via go run)
	@if [ -z "$(OLD)" ] || [ -z "$(NEW)" ]; then \
		echo "usage: make bench-compare OLD=bench/results/old.txt NEW=bench/results/new.txt"; exit 2; \
	fi
	$(BENCHSTAT) $(OLD) $(NEW)

solve: binary ## bin/fairsched solve examples/demo.json (DEMO=...)
	$(BIN) solve $(DEMO)

conformance: ## ../shared/tools/check_conformance.py on bin/fairsched if it can run, else the Go conformance test
	@if [ -f $(SHARED)/tools/check_conformance.py ] && [ -d $(CONFORMANCE_DIR) ] && compgen -G 'cmd/fairsched/*.go' >/dev/null \
		&& command -v python3 >/dev/null 2>&1; then \
		echo "$(GO) build -o $(BIN) ./cmd/fairsched"; $(GO) build -o $(BIN) ./cmd/fairsched; \
		echo "python3 $(SHARED)/tools/check_conformance.py --solve '$(BIN) solve' $(CONFORMANCE_DIR)"; \
		python3 $(SHARED)/tools/check_conformance.py --solve '$(BIN) solve' $(CONFORMANCE_DIR); \
	else \
		echo "$(GO) test $(CONFORMANCE_PKG) -run Conformance"; \
		$(GO) test -timeout=$(TEST_TIMEOUT) $(CONFORMANCE_PKG) -run Conformance; \
	fi

run: binary ## build and run the main job: bin/fairsched serve on 127.0.0.1:8080 (Ctrl-C stops it)
	$(BIN) serve --listen $(LISTEN) $(if $(CONFIG),--config $(CONFIG),)

serve: binary ## bin/fairsched serve (LISTEN=127.0.0.1:8080, CONFIG=file; default the embedded examples/serve.json)
	$(BIN) serve --listen $(LISTEN) $(if $(CONFIG),--config $(CONFIG),)

clean: ## remove build outputs (bin/, out/, *.test, root-level profiles)
	rm -rf bin out
	rm -f *.test *.prof cpu.out mem.out
