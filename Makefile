# fairsched: the single entry point for building, testing and measuring.
# "make" alone prints the targets.

GO              ?= go
BIN             := bin/fairsched
DEMO            ?= examples/demo.json
# fairsched serve: LISTEN address, CONFIG file (empty: the embedded examples/serve.json),
# DATA_DIR for make run's durable state (git-ignored; empty: in memory; rm -rf it to start afresh)
DATA_DIR        ?= .data
# make crash-soak: how many kill -9 restarts (make test runs 30)
CRASH_ROUNDS    ?= 200
LISTEN          ?= 127.0.0.1:8080
CONFIG          ?=
TEST_TIMEOUT    ?= 10m
FUZZTIME        ?= 10s
COUNT           ?= 5
CONFORMANCE_DIR ?= testdata/conformance
# An optional external checker of the vectors against the binary, run by make conformance
# as python3 CHECKER --solve CMD DIR when set to a file that exists (none by default: the
# Go test of CONFORMANCE_PKG runs the vectors).
CONFORMANCE_CHECKER ?=
# the Go test that runs the vectors through decode, solve and encode
CONFORMANCE_PKG ?= ./conformance/
# x/perf has no tagged releases; pin a pseudo-version so that runs are reproducible and
# go.mod stays free of tool dependencies.
BENCHSTAT_VERSION ?= v0.0.0-20260908200009-22c9c6c9d4da
BENCHSTAT       := $(GO) run golang.org/x/perf/cmd/benchstat@$(BENCHSTAT_VERSION)

SHELL       := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

# Load generator (make load, soak, profile, pgo, pgo-ab): extra loadgen flags in
# LOAD_FLAGS (e.g. LOAD_FLAGS='--rate 30000'), the soak's length in SOAK_DURATION.
LOADGEN         := bin/loadgen
LOAD_FLAGS      ?=
# extra flags of the bin/fairsched serve that make load/soak start
SERVE_FLAGS     ?=
LOAD_REPORT     ?= bench/results/load.json
SOAK_DURATION   ?= 10m
# The soak's server forgets finished operations after SOAK_RETENTION (the
# server's default is 10 minutes, which a 10-minute soak never reaches, so
# its heap would grow with the operations it still holds).
SOAK_RETENTION  ?= 1m
SOAK_REPORT     ?= bench/results/soak.json
PROFILE_DIR     ?= profiles
PGO_PROFILES    ?= $(sort $(wildcard $(PROFILE_DIR)/load-cpu*.pprof))
PGO_AB_RUNS     ?= 3
COMMIT          := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)$(shell test -n "$$(git status --porcelain --untracked-files=no 2>/dev/null)" && echo +dirty)

.PHONY: help build binary test test-invariants test-race crash-soak lint fuzz bench bench-scaling bench-compare solve conformance run serve clean \
	loadgen-binary load load-pipelined test-ha ha-bench ha-demo load-batched soak profile profile-batched pgo pgo-ab test-ui ui-screenshots demo-load \
	kube-bins test-kube test-kube-unit kube-bench

help: ## print the targets with one line each (default)
	@echo "usage: make TARGET [VAR=value ...]"
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## go build ./... and build bin/fairsched from ./cmd/fairsched
	$(GO) build ./...
	$(GO) build -o $(BIN) ./cmd/fairsched

binary: ## build only bin/fairsched
	$(GO) build -o $(BIN) ./cmd/fairsched

test: ## go test ./... (TEST_TIMEOUT, default 10m), the core again with -tags invariants, then the conformance check
	$(GO) test -timeout=$(TEST_TIMEOUT) ./...
	@if [ -z "$${FAIRSCHED_CHROMIUM:-}" ] && ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1 \
		&& ! command -v google-chrome >/dev/null 2>&1 && ! command -v google-chrome-stable >/dev/null 2>&1 \
		&& ! command -v chrome >/dev/null 2>&1 && ! command -v headless-shell >/dev/null 2>&1; then \
		echo "NOTE: the dashboard's browser test (ui/, TestBrowserShort) was SKIPPED: no Chromium on PATH. make test-ui installs it and runs every browser test."; \
	fi
	$(GO) test -tags invariants -timeout=$(TEST_TIMEOUT) ./core/...
	@$(MAKE) --no-print-directory conformance

# The dashboard's browser tests (ui/): headless Chromium driven by chromedp.
# make test runs the short one when a Chromium is on PATH (or in
# FAIRSCHED_CHROMIUM); make test-ui installs the Debian package when it is
# missing and this runs as root, and runs them all.
UI_SCREENSHOTS  ?= docs/ui

test-ui: ## every browser test of the dashboard on headless Chromium (apt-get installs chromium when missing, as root)
	@$(MAKE) --no-print-directory chromium
	$(GO) test -count=1 -timeout=$(TEST_TIMEOUT) -run 'Browser' -v ./ui/ -ui.full

ui-screenshots: ## the browser tests, writing a screenshot of each view into UI_SCREENSHOTS (docs/ui)
	@$(MAKE) --no-print-directory chromium
	$(GO) test -count=1 -timeout=$(TEST_TIMEOUT) -run 'Browser' ./ui/ -ui.full -ui.screenshots=$(CURDIR)/$(UI_SCREENSHOTS)

.PHONY: chromium
chromium:
	@if [ -n "$${FAIRSCHED_CHROMIUM:-}" ] || command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 \
		|| command -v google-chrome >/dev/null 2>&1 || command -v google-chrome-stable >/dev/null 2>&1; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing Chromium for the browser tests: apt-get install chromium"; \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium; \
	else \
		echo "make test-ui needs Chromium and cannot install it (not root, or no apt-get):"; \
		echo "  install the chromium package (sudo apt-get install chromium), or set FAIRSCHED_CHROMIUM=/path/to/chrome"; \
		exit 2; \
	fi

test-invariants: ## go test -tags invariants ./... (every package, with the consistency checks of core/internal/invariants)
	$(GO) test -tags invariants -timeout=$(TEST_TIMEOUT) ./...

crash-soak: ## kill -9 fairsched serve --data-dir under load CRASH_ROUNDS times (default 200), checking after each restart that every acknowledged change is there
	CRASH_ROUNDS=$(CRASH_ROUNDS) $(GO) test -count=1 -timeout=30m -run '^TestCrashRestartKeepsAcknowledged$$' -v ./cmd/fairsched/

test-race: ## go test -race ./core/... ./server/... ./facade/...
	$(GO) test -race -timeout=$(TEST_TIMEOUT) ./core/... ./server/... ./facade/...

lint: ## go vet (default and invariants tags), gofmt check, staticcheck if installed
	$(GO) vet ./...
	$(GO) vet -tags invariants ./...
	cd kube && $(GO) vet ./...
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

# The core's scaling curve (the target: >= 10x from 1 to 16 cores; bench/README.md#scaling).
SCALING_CPUS    ?= 1,2,4,8,16

bench-scaling: ## BenchmarkHeartbeat/steady at -cpu SCALING_CPUS, -count=COUNT, tee to bench/results/scaling-$(nproc)cores.txt
	@mkdir -p bench/results
	$(GO) test -run='^$$' -bench='BenchmarkHeartbeat/steady' -benchmem -cpu=$(SCALING_CPUS) -count=$(COUNT) ./bench/ \
		| tee bench/results/scaling-$$(nproc)cores.txt

bench-compare: ## benchstat OLD=old.txt NEW=new.txt (pinned benchstat via go run)
	@if [ -z "$(OLD)" ] || [ -z "$(NEW)" ]; then \
		echo "usage: make bench-compare OLD=bench/results/old.txt NEW=bench/results/new.txt"; exit 2; \
	fi
	$(BENCHSTAT) $(OLD) $(NEW)

solve: binary ## bin/fairsched solve examples/demo.json (DEMO=...)
	$(BIN) solve $(DEMO)

conformance: ## the conformance vectors through decode, solve and encode (go test ./conformance/), then CONFORMANCE_CHECKER on bin/fairsched when one is present
	$(GO) test -timeout=$(TEST_TIMEOUT) $(CONFORMANCE_PKG) -run Conformance
	@if [ -n "$(CONFORMANCE_CHECKER)" ] && [ -f "$(CONFORMANCE_CHECKER)" ] && [ -d $(CONFORMANCE_DIR) ] \
		&& command -v python3 >/dev/null 2>&1; then \
		echo "$(GO) build -o $(BIN) ./cmd/fairsched"; $(GO) build -o $(BIN) ./cmd/fairsched; \
		echo "python3 $(CONFORMANCE_CHECKER) --solve '$(BIN) solve' $(CONFORMANCE_DIR)"; \
		python3 $(CONFORMANCE_CHECKER) --solve '$(BIN) solve' $(CONFORMANCE_DIR); \
	fi

run: binary ## build and run the main job: bin/fairsched serve on 127.0.0.1:8080, durable in DATA_DIR (default .data; DATA_DIR= keeps nothing)
	$(BIN) serve --listen $(LISTEN) $(if $(CONFIG),--config $(CONFIG),) $(if $(DATA_DIR),--data-dir $(DATA_DIR),)

serve: binary ## bin/fairsched serve (LISTEN=127.0.0.1:8080, CONFIG=file; default the embedded examples/serve.json)
	$(BIN) serve --listen $(LISTEN) $(if $(CONFIG),--config $(CONFIG),)

# make demo-load: a small live load against a running make run, for the
# dashboard (http://$(LISTEN)/ui/): 24 nodes, 6 pools of its own, 40
# operations, a heartbeat per node per second, for DEMO_DURATION.
DEMO_DURATION   ?= 30m

demo-load: loadgen-binary ## a small live load (24 nodes, 6 pools, 40 operations) against make run's server for DEMO_DURATION (30m), for the dashboard
	$(LOADGEN) --target http://$(LISTEN) --nodes 24 --pools 6 --operations 40 --heartbeat-period 1s \
		--job-duration uniform:20:180 --max-jobs 200 --duration $(DEMO_DURATION) --progress-every 10s

# Replicas on etcd (docs/operations.md, "Replicas on etcd"): the HA tests with
# more rounds, the demo, and the measurements of the failover figures.
HA_ROUNDS       ?= 20
HA_TTL          ?= 2s
ETCDDEV         := bin/etcddev

test-ha: ## the replicas' failover tests with HA_ROUNDS (default 20) kill -9 / wedge / SIGTERM rounds each (make test runs 1-3), on an embedded etcd (FAIRSCHED_ETCD=host:port: an external one)
	FAIRSCHED_HA_ROUNDS=$(HA_ROUNDS) $(GO) test -count=1 -timeout=30m -run 'TestHALoop|TestReplicas|TestExpiredCandidate|TestDeposed|TestTakeover|TestGraceful' -v ./replica/ ./cmd/fairsched/ ./store/etcdstore/

ha-bench: ## fenced etcd writes per second, one writer and 64 (embedded etcd syncing to disk, or FAIRSCHED_ETCD's)
	FAIRSCHED_HA_MEASURE=1 $(GO) test -count=1 -run 'TestMeasureFencedWrites' -v ./store/etcdstore/

ha-demo: binary loadgen-binary ## etcd (embedded helper, or ETCD=etcd for one on PATH), three replicas on loopback, a load; kill -9 of the leader; prints the takeover time (HA_TTL, default 2s) and what the load generator saw
	$(GO) build -o $(ETCDDEV) ./internal/etcdtest/etcddev
	BIN=$(BIN) LOADGEN=$(LOADGEN) ETCDDEV=$(ETCDDEV) HA_TTL=$(HA_TTL) ./deploy/ha-demo.sh

loadgen-binary: ## build only bin/loadgen
	$(GO) build -o $(LOADGEN) ./cmd/loadgen

load: binary loadgen-binary ## the standard load (10,000 nodes, 200 pools, 2,000 operations, 30 s) on bin/fairsched serve at a free loopback port; report in bench/results/load.json
	$(LOADGEN) --serve $(BIN) --serve-log bin/load-server.log $(foreach a,$(SERVE_FLAGS),--serve-arg $(a)) \
		--report $(LOAD_REPORT) --label commit=$(COMMIT) --strict $(LOAD_FLAGS)

# The same load with the heartbeats of 128 driver goroutines pipelined over
# 4 HTTP/1.1 connections (batches of requests per write and read).
PIPELINE_FLAGS  ?= --connections 128 --pipeline 4 --pipeline-delay 200us
PIPELINE_REPORT ?= bench/results/load-pipelined.json

load-pipelined: binary loadgen-binary ## the standard load with pipelined connections (PIPELINE_FLAGS); report in bench/results/load-pipelined.json
	$(LOADGEN) --serve $(BIN) --serve-log bin/load-server.log $(foreach a,$(SERVE_FLAGS),--serve-arg $(a)) \
		--report $(PIPELINE_REPORT) --label commit=$(COMMIT) --strict $(PIPELINE_FLAGS) $(LOAD_FLAGS)

# The same load with the heartbeats of 64 nodes per request (POST
# /api/v1/heartbeats), as node agents relaying racks send them, from 8
# driver goroutines (8 batches, 512 heartbeats, in flight). NB: the load is
# CPU-bound and closed, so a batch's round trip is the batches in flight over
# the throughput (Little's law): on this 2-core machine 16 in flight doubled
# p50 and p99 at the same heartbeats/s.
BATCH_FLAGS     ?= --batch 64 --connections 8
BATCH_REPORT    ?= bench/results/load-batched.json

load-batched: binary loadgen-binary ## the standard load in batches of 64 heartbeats per request (BATCH_FLAGS); report in bench/results/load-batched.json
	$(LOADGEN) --serve $(BIN) --serve-log bin/load-server.log $(foreach a,$(SERVE_FLAGS),--serve-arg $(a)) \
		--report $(BATCH_REPORT) --label commit=$(COMMIT) --strict $(BATCH_FLAGS) $(LOAD_FLAGS)

soak: binary loadgen-binary ## the standard load for SOAK_DURATION (10m), finished operations kept SOAK_RETENTION (1m), the server's heap sampled every 10 s; fails if it grows
	$(LOADGEN) --serve $(BIN) --serve-log bin/soak-server.log --serve-arg --finished-operation-retention=$(SOAK_RETENTION) \
		$(foreach a,$(SERVE_FLAGS),--serve-arg $(a)) --duration $(SOAK_DURATION) --sample-every 10s \
		--progress-every 30s --report $(SOAK_REPORT) --label commit=$(COMMIT) --strict $(LOAD_FLAGS)

# make profile's file names: $(PROFILE_DIR)/$(PROFILE_NAME)-{cpu,…,loadgen-cpu}.pprof
PROFILE_NAME    ?= load

profile: binary loadgen-binary ## cpu, heap, allocs, mutex and block profiles of the standard load into profiles/load-*.pprof (PROFILE_NAME)
	@mkdir -p bin $(PROFILE_DIR)
	$(LOADGEN) --serve $(BIN) --serve-log bin/profile-server.log \
		--serve-arg --mutex-profile-fraction=100 --serve-arg --block-profile-rate=100000 $(foreach a,$(SERVE_FLAGS),--serve-arg $(a)) \
		--profile-dir $(PROFILE_DIR) --profile-prefix $(PROFILE_NAME)- --profile-after 5s --profile-seconds 20 \
		--cpuprofile $(PROFILE_DIR)/$(PROFILE_NAME)-loadgen-cpu.pprof --report bench/results/profile-$(PROFILE_NAME).json \
		--label commit=$(COMMIT) $(LOAD_FLAGS)
	$(GO) tool pprof -top -nodecount=25 $(PROFILE_DIR)/$(PROFILE_NAME)-cpu.pprof 2>/dev/null | sed -n '1,32p'

profile-batched: ## make profile of the batched load (BATCH_FLAGS) into profiles/load-batched-*.pprof
	@$(MAKE) --no-print-directory profile PROFILE_NAME=load-batched LOAD_FLAGS='$(BATCH_FLAGS) $(LOAD_FLAGS)'

pgo: ## merge PGO_PROFILES (profiles/load-cpu*.pprof) into profiles/fairsched.pgo and copy it to cmd/fairsched/default.pgo
	@if [ -z "$(PGO_PROFILES)" ]; then echo "no CPU profiles in $(PROFILE_DIR): run make profile first"; exit 2; fi
	$(GO) run ./cmd/pgomerge -o $(PROFILE_DIR)/fairsched.pgo $(PGO_PROFILES)
	cp $(PROFILE_DIR)/fairsched.pgo cmd/fairsched/default.pgo

pgo-ab: loadgen-binary ## A/B: the standard load on bin/fairsched built -pgo=off and -pgo=profiles/fairsched.pgo, alternately PGO_AB_RUNS (3) times each
	$(GO) build -pgo=off -o bin/fairsched-nopgo ./cmd/fairsched
	$(GO) build -pgo=$(PROFILE_DIR)/fairsched.pgo -o bin/fairsched-pgo ./cmd/fairsched
	rm -rf bench/results/pgo-ab && mkdir -p bench/results/pgo-ab
	for i in $$(seq 1 $(PGO_AB_RUNS)); do for v in nopgo pgo; do \
		echo "run $$i: $$v"; \
		$(LOADGEN) --serve bin/fairsched-$$v --quiet --report bench/results/pgo-ab/$$v-$$i.json \
			--label build=$$v --label commit=$(COMMIT) $(LOAD_FLAGS) | sed -n '2,3p'; \
	done; done
	$(LOADGEN) compare --a 'bench/results/pgo-ab/nopgo-*.json' --b 'bench/results/pgo-ab/pgo-*.json' --names nopgo,pgo | tee bench/results/pgo-ab.md

# fairsched-kube (kube/, a module of its own): its end-to-end suite and
# benchmark run a real kube-apiserver, kube-controller-manager, kube-scheduler
# and KWOK, built from the Go module proxy into KUBE_BINS_DIR (outside the
# checkout, shared by every clone) by kube/hack/kube-bins.sh. The first build
# takes tens of minutes (from an empty Go cache and module cache, two packages
# at a time, niced behind four other jobs at load 15-25: kube-apiserver 49 min,
# kube-controller-manager 33, kube-scheduler 4, kubectl 6, kwok 11; 107 min in
# all, far less on an idle machine); a warm cache, seconds.
# KUBE_BINS_P=N builds N packages at once.
K8S_VERSION       ?= v1.37.2
KUBE_BINS_DIR     ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/fairsched/kube-bins
KUBE_BINS         := $(KUBE_BINS_DIR)/$(K8S_VERSION)/bin
KUBE_TEST_TIMEOUT ?= 45m
KUBE_TEST_FLAGS   ?=

kube-bins: ## build kube-apiserver, kube-controller-manager, kube-scheduler, kubectl (K8S_VERSION), kwok and etcd into KUBE_BINS_DIR (~/.cache/fairsched/kube-bins)
	K8S_VERSION=$(K8S_VERSION) KUBE_BINS_DIR=$(KUBE_BINS_DIR) ./kube/hack/kube-bins.sh

# -p 1: one package's control plane at a time (each runs five processes).
test-kube: kube-bins ## fairsched-kube's tests (cd kube; go vet, go test ./...) with the end-to-end suite against a real API server, KWOK and controller manager (FAIRSCHED_KUBE_E2E=1)
	cd kube && $(GO) vet ./... && FAIRSCHED_KUBE_E2E=1 KUBE_BINS=$(KUBE_BINS) $(GO) test -p 1 -count=1 -timeout=$(KUBE_TEST_TIMEOUT) $(KUBE_TEST_FLAGS) ./...

# The kube module's tests without a control plane (FAIRSCHED_KUBE_E2E=0 skips the
# end-to-end ones): the mappings of pods, nodes and Pools, the adapter's rounds.
test-kube-unit: ## fairsched-kube's unit tests (cd kube; go vet, go test ./... with FAIRSCHED_KUBE_E2E=0: no Kubernetes binaries needed)
	cd kube && $(GO) vet ./... && FAIRSCHED_KUBE_E2E=0 $(GO) test -count=1 -timeout=$(TEST_TIMEOUT) ./...

# make kube-bench: kube/cmd/kube-bench on 1,000 KWOK nodes, 10,000 pods in 10
# pools (Jobs and bare pods) per scheduler, kube-scheduler then fairsched-kube
# with fairsched serve, one after the other on the same API server.
KUBE_BENCH_FLAGS  ?=
KUBE_BENCH_REPORT ?= bench/results/kube-bench.json

kube-bench: kube-bins binary ## bind 10,000 pods on 1,000 KWOK nodes with kube-scheduler and with fairsched-kube (KUBE_BENCH_FLAGS, e.g. --scheduler=kube-scheduler); report in bench/results/kube-bench.json
	@mkdir -p bin
	@if [ -d kube/cmd/fairsched-kube ]; then \
		echo "cd kube && $(GO) build -o ../bin/fairsched-kube ./cmd/fairsched-kube"; \
		cd kube && $(GO) build -o ../bin/fairsched-kube ./cmd/fairsched-kube; \
	fi
	cd kube && $(GO) build -o ../bin/kube-bench ./cmd/kube-bench
	KUBE_BINS=$(KUBE_BINS) bin/kube-bench --report $(KUBE_BENCH_REPORT) $(KUBE_BENCH_FLAGS)

clean: ## remove build outputs (bin/, out/, *.test, root-level profiles)
	rm -rf bin out
	rm -f *.test *.prof cpu.out mem.out
