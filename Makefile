# hookd — `make help` lists the targets.
GO ?= go
PKGS ?= ./...

.PHONY: help test test-go test-helm test-ts test-clients ts-build mcp-client build vcs-ldflags run vet lint fmt bench bench-compare fuzz docs deps-doc

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

test: vet lint ts-build mcp-client test-go test-helm test-ts test-clients ## everything CI runs: vet, golangci-lint (.golangci.yml), Go tests with -race (SQLite and, with HOOKD_TEST_POSTGRES, PostgreSQL), the Helm chart, TypeScript SDK tests, the official MCP client, the producer clients

# -timeout is per package: e2e alone took 18 minutes under -race on a slow
# 2-core instance (2026-12-06, the whole run 42), against 25 allowed.
#
# -tags hookdtest compiles in the delivery service's test hooks
# (internal/delivery/hooks.go), which the interleaving tests force races
# with; without it they skip (and fail under CI). hookd's own build (make
# build) has no hook.
test-go: ## Go tests with the race detector and the delivery service's test hooks (-tags hookdtest); then the store, the delivery service and the end-to-end tests again on unpartitioned PostgreSQL tables
	$(GO) test -race -count=1 -timeout 40m -tags hookdtest $(PKGS)
	@if [ -n "$$HOOKD_TEST_POSTGRES" ]; then \
		echo "again on unpartitioned PostgreSQL tables (serve --partition-interval 0)"; \
		HOOKD_TEST_PARTITION_INTERVAL=0 $(GO) test -race -count=1 -timeout 40m -tags hookdtest ./internal/store/ ./internal/delivery/ . ; \
	fi

# The Helm chart's tests are a module of their own (deploy/helm/go.mod), so
# Helm and the Kubernetes API types stay out of hookd's module graph.
test-helm: ## the Helm chart without a cluster: helm lint --strict, helm template per example values file, every object decoded strictly into its Kubernetes API type
	cd deploy/helm && $(GO) vet ./... && $(GO) test -count=1 ./...

ts-build: ## install and build the TypeScript SDK (the Go cross-language test uses it)
	cd sdk/typescript && npm ci --no-audit --no-fund --loglevel=error && npm run build

mcp-client: ## install the official MCP TypeScript client the Go tests run against hookd
	cd test/mcp-client && npm ci --no-audit --no-fund --loglevel=error

test-ts: ## TypeScript SDK tests (node --test)
	cd sdk/typescript && npm test

# The producer clients (docs/clients.md) against a real hookd serve, which
# each suite starts on loopback (from HOOKD_BIN; the Go one builds it) with
# SQLite in a temporary directory. The Go client is a module of its own
# (client/go.mod: the standard library alone), so ./... leaves it out.
# Their ops are generated (go run ./internal/clientgen, part of make docs).
test-clients: build ## producer clients against a real hookd serve: Go (client/, -race), TypeScript (@hookd/client, node --test), Python (hookd, unittest)
	cd client && $(GO) vet ./... && $(GO) test -race -count=1 ./...
	cd clients/typescript && npm ci --no-audit --no-fund --loglevel=error && HOOKD_BIN=$(CURDIR)/bin/hookd npm test
	cd clients/python && HOOKD_BIN=$(CURDIR)/bin/hookd python3 -m unittest discover -s tests -v

vet: ## go vet and gofmt check
	$(GO) vet $(PKGS)
	$(GO) vet -tags hookdtest $(PKGS)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed: $$out"; exit 1; fi

# golangci-lint at a pinned version, built by go run (no install step; the
# first run builds it, about 2 minutes of CPU from a clean cache).
# .golangci.yml is the bar.
GOLANGCI_LINT := github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0

lint: ## golangci-lint (pinned; .golangci.yml: errcheck, govet, ineffassign, staticcheck, unused, revive, misspell), hookd's module and the Go client's
	$(GO) run $(GOLANGCI_LINT) run ./...
	cd client && $(GO) run $(GOLANGCI_LINT) run ./...

# The git revision, its commit time and whether the tree has changes, for
# hookd version and /healthz (internal/version). Stamped with -X because Go's
# own -buildvcs stamping skips git worktrees and GOFLAGS=-buildvcs=false;
# outside a checkout the binary says the revision is unknown.
VERSION_PKG := github.com/hookd/hookd/internal/version
GIT_REVISION := $(shell git rev-parse HEAD 2>/dev/null)
VCS_LDFLAGS := $(if $(GIT_REVISION),-X $(VERSION_PKG).stampedRevision=$(GIT_REVISION) \
	-X $(VERSION_PKG).stampedTime=$(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ) \
	-X $(VERSION_PKG).stampedModified=$(if $(shell git status --porcelain),true,false))

build: ## build bin/hookd, stamped with the git revision when built from a checkout
	$(GO) build -buildvcs=auto -ldflags '$(VCS_LDFLAGS)' -o bin/hookd ./cmd/hookd

vcs-ldflags: ## print the -ldflags that stamp the git revision (what build uses)
	@echo '$(VCS_LDFLAGS)'

run: ## run hookd on hookd.db
	$(GO) run ./cmd/hookd serve

bench: ## Go benchmarks (hot path, lease)
	$(GO) test -run '^$$' -bench . -benchmem ./webhook/ ./internal/profile/ ./internal/store/

bench-compare: ## two builds side by side, alternating: BEFORE=main AFTER=. PAIRS=4 ARGS='hookd bench flags' [PGBENCH=32] [GEN=load-generator binary]
	BEFORE='$(BEFORE)' AFTER='$(AFTER)' PAIRS='$(PAIRS)' ARGS='$(ARGS)' PGBENCH='$(PGBENCH)' GEN='$(GEN)' OUT='$(OUT)' REUSE='$(REUSE)' bash internal/bench/compare.sh

# Every fuzz target in the module, FUZZTIME each (go test runs one fuzz
# target at a time). TestMakeFuzzRunsEveryTarget (cmd/hookd) fails when a
# Fuzz function is missing here.
FUZZTIME ?= 10s
FUZZ_TARGETS = \
	./webhook/:FuzzParseStandardSignatureHeader \
	./webhook/:FuzzVerifyStandard \
	./webhook/:FuzzParseKworkHeader \
	./internal/profile/:FuzzAppendString \
	./internal/profile/:FuzzKworkBody \
	./internal/event/:FuzzMatch \
	./internal/egress/:FuzzCheckURL \
	./internal/ops/:FuzzParseEventCursor

fuzz: ## a bounded run of every fuzz target (FUZZTIME each, default 10s)
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "fuzz $${t#*:} ($${t%%:*}, $(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) "$${t%%:*}"; \
	done

docs: deps-doc ## regenerate docs/api.md, the OpenAPI/MCP goldens from the op declarations, and the producer clients' ops from the OpenAPI golden
	$(GO) test ./internal/openapi -run 'TestGolden|TestAPIDoc' -update
	$(GO) test ./internal/mcpserver -run TestToolsGolden -update
	$(GO) run ./internal/clientgen

deps-doc: ## regenerate docs/dependencies.md (every Go module and its licence) from the module graph
	$(GO) run ./internal/depsdoc -o docs/dependencies.md
