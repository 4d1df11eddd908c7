# Strata's developer entry points. `make run` and `make test` are the two README commands; both
# work on a fresh machine (Go, PostgreSQL server binaries) with nothing running.
SHELL := /bin/bash
export GOTOOLCHAIN := local

GO          ?= go
BIN         := $(CURDIR)/bin
TEMPORAL    := $(BIN)/temporal
TEMPORAL_CLI_VERSION := v1.5.1
VERSITYGW   := $(BIN)/versitygw
VERSITYGW_VERSION    := v1.8.0
# Azurite (npm, MIT): the Azure Storage emulator the Azure Blob tests run against; its version is
# pinned in tools/azurite/package.json and package-lock.json.
AZURITE     := tools/azurite/node_modules/.bin/azurite-blob
# fake-gcs-server (BSD-2-Clause): the GCS API the GCS tests run against.
FAKEGCS     := $(BIN)/fake-gcs-server
FAKEGCS_VERSION      := v1.56.1
STATICCHECK_VERSION  := v0.8.2
VERSION     ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS     := -X main.version=$(VERSION)
# Build tags of the binary and the tests: duckdb_arrow links DuckDB's Arrow interface (SQL over
# stores, package sqlquery/duckrun); a build without it serves no SQL (503).
TAGS        := duckdb_arrow
# Race detector on by default; `make test RACE=` turns it off.
RACE        ?= -race
BENCH       ?=
S3          ?=
AZURE       ?=
GCS         ?=

.PHONY: all tools build run services services-stop test test-services test-services-stop lint bench clean e2e

all: build

## tools: pinned external tools into ./bin (skipped when present): the temporal CLI (dev server
## and UI), versitygw (an S3 server over a directory, Apache-2.0, for S3 stores in tests),
## fake-gcs-server (the GCS API, for GCS stores in tests) and Azurite into tools/azurite (the
## Azure Storage emulator, for Azure Blob stores in tests)
tools: $(TEMPORAL) $(VERSITYGW) $(FAKEGCS) $(AZURITE)

$(TEMPORAL):
	@GO=$(GO) scripts/install-tool.sh go temporal github.com/temporalio/cli/cmd/temporal@$(TEMPORAL_CLI_VERSION)

$(VERSITYGW):
	@GO=$(GO) scripts/install-tool.sh go versitygw github.com/versity/versitygw/cmd/versitygw@$(VERSITYGW_VERSION)

$(FAKEGCS):
	@GO=$(GO) scripts/install-tool.sh go fake-gcs-server github.com/fsouza/fake-gcs-server@$(FAKEGCS_VERSION)

$(AZURITE): tools/azurite/package.json tools/azurite/package-lock.json
	@scripts/install-tool.sh npm tools/azurite
	@touch $(AZURITE)

## build: the strata binary into ./bin
build:
	$(GO) build -tags $(TAGS) -ldflags '$(LDFLAGS)' -o $(BIN)/strata ./cmd/strata

## services: local PostgreSQL (.data/pg, :5433) and Temporal dev server (.data/temporal.db, :7233, UI :8233)
services: $(TEMPORAL)
	@scripts/pg.sh start
	@scripts/temporal.sh start

services-stop:
	@scripts/temporal.sh stop
	@scripts/pg.sh stop

## run: PostgreSQL + Temporal dev server (reused when already running) + `strata dev` (API :3000,
## maintenance worker, schedules) in the foreground; Ctrl-C stops what it started, data stays in .data/.
## `make run S3=1` also starts a local S3 server (versitygw) and keeps every store in it;
## `make run AZURE=1` the same with Azurite (Azure Blob), `make run GCS=1` with fake-gcs-server
run: build $(TEMPORAL) $(VERSITYGW) $(if $(AZURE),$(AZURITE)) $(if $(GCS),$(FAKEGCS))
	@S3=$(S3) AZURE=$(AZURE) GCS=$(GCS) scripts/run.sh

## test: tools, test services (separate ports and .data/test), every Go test with the race
## detector, then a second pass in lanes side by side (scripts/test-second-pass.sh): the WAL's
## and the API's suites without it on each object store's test service (the same code, other
## storage; on S3 with WAL entry objects everywhere), storage/table without it (its heavy tests
## run there only) and internal/testenv's tests (only there), the DuckDB Parquet interop check
## and the browser check (make e2e). Each package's result and every failing test's output are
## printed as they finish (the second pass's, lane by lane), the slowest 10 tests at the end
## (internal/testreport; all events in .data/test/go-test.json).
TEST_JSON  := .data/test/go-test.json
TEST_REPORT = $(GO) run ./internal/testreport
# The object stores the LSM and API suites run on in the second pass (each a test service
# `make test-services` starts; -tags gcs links the gs:// store into those test binaries).
OBJECT_STORES := s3 azure gcs
# The longest-running packages first: `go test` starts packages in the order named (two at a time
# on two cores), so the slowest no longer starts last and sets the pass's wall time alone.
TEST_FIRST := ./storage/table ./storage/lsm ./cmd/strata ./api
# Run in the second pass instead, without the race detector: internal/testenv's tests drive the
# service scripts as processes, where the detector finds nothing and costs the first pass.
TEST_SECOND_ONLY := /internal/testenv
test: tools build test-services
	@mkdir -p $(dir $(TEST_JSON)) && rm -f $(TEST_JSON)
	set -o pipefail; source scripts/test-env.sh && $(GO) test $(RACE) -tags $(TAGS) -json -count=1 -timeout 20m $(TEST_FIRST) $$($(GO) list -tags $(TAGS) ./... | grep -v '$(TEST_SECOND_ONLY)$$') | tee -a $(TEST_JSON) | $(TEST_REPORT) -slowest 0
	source scripts/test-env.sh && GO=$(GO) scripts/test-second-pass.sh $(TEST_JSON) $(OBJECT_STORES)
	@$(TEST_REPORT) -summary -slowest 10 < $(TEST_JSON)

## e2e: the browser check alone (headless Chromium through the Temporal Web UI; own stack and ports)
e2e: tools
	scripts/e2e.sh

test-services: tools
	@source scripts/test-env.sh && scripts/pg.sh start && scripts/temporal.sh start && scripts/s3.sh start && scripts/azurite.sh start && scripts/fake-gcs.sh start

test-services-stop:
	@source scripts/test-env.sh && scripts/fake-gcs.sh stop && scripts/azurite.sh stop && scripts/s3.sh stop && scripts/temporal.sh stop && scripts/pg.sh stop

## lint: gofmt, go vet, staticcheck (installed into ./bin from the module proxy when possible)
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet -tags $(TAGS) ./...
	$(GO) vet ./sqlquery/...
	$(GO) vet -tags $(TAGS),sqlbench ./api/
	@if [ ! -x $(BIN)/staticcheck ]; then GOBIN=$(BIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) || echo "staticcheck unavailable; skipped"; fi
	@if [ -x $(BIN)/staticcheck ]; then $(BIN)/staticcheck -tags $(TAGS) ./...; fi

## bench: every benchmark figure (BENCH=<ID-prefix> selects), as BENCH lines and a markdown table
bench: test-services
	source scripts/test-env.sh && scripts/bench.sh "$(BENCH)"

clean:
	rm -rf $(BIN)/strata .data/test .data/bench
