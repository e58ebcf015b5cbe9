# copse — build, generate, verify, test and demo.
#
# Every tool is built from the Go module proxy at a pinned version and cached
# outside the repository (COPSE_CACHE_DIR), so a second run builds nothing.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

# COPSE_CACHE_DIR is where e2e/cluster caches every pinned tool and the CLI's
# clusters; exported so that every program run here agrees on it.
COPSE_CACHE_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/copse
export COPSE_CACHE_DIR

# LABELS selects Ginkgo suites by label, e.g. `make test-e2e LABELS=foundation`.
LABELS ?=
E2E_TIMEOUT ?= 60m
# TEST_PARALLEL is how many jobs `make test` runs at once once verify has
# passed (the unit tests, the fuzz targets, each e2e package with a cluster
# of its own, the benchmark's smoke run), longest first, and how many e2e
# packages `make test-e2e` runs at once. e2e/cmd/copse-test runs them.
TEST_PARALLEL ?= 3
TEST_RUNNER = go run ./e2e/cmd/copse-test --parallel $(TEST_PARALLEL) --e2e-timeout $(E2E_TIMEOUT) --log-dir bin/test-logs
CLUSTER_CLI := go run ./e2e/cmd/copse-cluster
CLUSTER_DIR ?= $(COPSE_CACHE_DIR)/clusters/demo

# Every pinned tool (controller-gen, crdgen, helm, etcd, the Kubernetes
# binaries, kwok, the JobSet controller, trainer-oracle, Kueue, golangci-lint, promtool) is built by one
# builder, e2e/cluster (tools.go: one row per module under hack/tools, whose
# go.mod pins the version), into $(COPSE_CACHE_DIR)/bin/<tool>-<version>-<hash>/.
# `$(TOOL) X` prints the path of binary X, building its tool first if needed,
# so a recipe runs a tool as "$$($(TOOL) helm)".
TOOL := $(CLUSTER_CLI) tool

TOOL_MODULES := $(wildcard hack/tools/*/go.mod)
# Tools modules with code and tests of their own, vetted and tested with
# copse's (their packages are outside copse's module, so `./...` misses them).
TOOL_TEST_MODULES := hack/tools/trainer-oracle

.PHONY: help
help: ## List the targets.
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

##@ Build

.PHONY: build
build: ## Build the operator binary into bin/.
	go build -o bin/copse-operator ./operator

.PHONY: tools
tools: ## Build and cache every pinned tool (controller-gen, helm, etcd, kube binaries, kwok, JobSet, trainer-oracle, Kueue, golangci-lint, promtool), two at a time, print their paths.
	$(CLUSTER_CLI) build

.PHONY: helm
helm: ## Build and cache the pinned helm (prints its path).
	@$(TOOL) helm

##@ Generate and verify

.PHONY: generate
generate: ## Regenerate deepcopy functions and CRDs (charts/copse/crds).
	controller_gen=$$($(TOOL) controller-gen); crdgen=$$($(TOOL) crdgen); \
	$$controller_gen object paths=./api/... && \
	rm -f charts/copse/crds/*.yaml && \
	$$crdgen -paths ./api/core/... -output-dir charts/copse/crds && \
	rm -f charts/copse/trainer-crds/*.yaml && \
	$$crdgen -paths ./api/trainer/... -types-only '' -embedded-object-meta -max-description-depth 10 -output-dir charts/copse/trainer-crds

GENERATED := charts/copse/crds charts/copse/trainer-crds $(shell find api -name 'zz_generated.*.go')

.PHONY: verify
verify: verify-generated verify-tidy verify-fmt vet lint verify-chart ## Fail when generated files, go.mod, formatting, go vet, golangci-lint or helm lint are not clean.

.PHONY: verify-generated
verify-generated:
	@snapshot=$$(mktemp -d); trap 'rm -rf "$$snapshot"' EXIT; \
	tar -cf "$$snapshot/before.tar" $(GENERATED); \
	$(MAKE) --no-print-directory generate >/dev/null; \
	mkdir "$$snapshot/before" && tar -xf "$$snapshot/before.tar" -C "$$snapshot/before"; \
	if ! diff -r -q "$$snapshot/before/charts/copse/crds" charts/copse/crds || \
	   ! diff -r -q "$$snapshot/before/charts/copse/trainer-crds" charts/copse/trainer-crds || \
	   ! for f in $$(find api -name 'zz_generated.*.go'); do diff -q "$$snapshot/before/$$f" "$$f" || exit 1; done; then \
		echo "generated files were out of date; 'make generate' has rewritten them: commit the result"; exit 1; \
	fi
	@echo "generated files are up to date"

.PHONY: verify-tidy
verify-tidy:
	@go mod tidy -diff || { echo "go.mod/go.sum are not tidy: run 'go mod tidy'"; exit 1; }
	@for mod in $(TOOL_MODULES); do (cd $$(dirname $$mod) && go mod tidy -diff) || { echo "$$mod is not tidy"; exit 1; }; done
	@echo "go.mod files are tidy"

.PHONY: verify-fmt
verify-fmt:
	@out=$$(gofmt -l $$(git ls-files --cached --others --exclude-standard '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@echo "gofmt clean"

.PHONY: vet
vet:
	go vet ./...
	@for mod in $(TOOL_TEST_MODULES); do (cd $$mod && GOWORK=off go vet ./...) || exit 1; done

.PHONY: lint
lint: ## golangci-lint with .golangci.yaml (pinned in hack/tools/golangci-lint), on copse and the tools modules with code of their own.
	lint=$$($(TOOL) golangci-lint); \
	$$lint run ./... && \
	for mod in $(TOOL_TEST_MODULES); do (cd $$mod && GOWORK=off $$lint run --config $(CURDIR)/.golangci.yaml ./...) || exit 1; done

.PHONY: verify-chart
verify-chart:
	helm=$$($(TOOL) helm); \
	$$helm lint --strict charts/copse && \
	$$helm lint --strict charts/copse --set localMode.enabled=true --set localMode.webhookURL=https://127.0.0.1:9443 && \
	$$helm lint --strict charts/copse --set webhook.certificate.mode=certManager && \
	$$helm lint --strict charts/copse --set webhook.certificate.mode=secret \
		--set webhook.certificate.secretName=copse-webhook-tls --set-string webhook.certificate.secret.caBundle=lint

.PHONY: chart-rbac
chart-rbac: ## Rewrite charts/copse/rbac-reviewed.yaml from the chart (review the diff: it is every permission copse gets).
	COPSE_UPDATE_RBAC_GOLDEN=1 go test -count=1 -run 'TestRBAC' ./charts/copse

##@ Test

.PHONY: test
test: ## Run every test tier: tools, verify, then unit tests, fuzz targets, each e2e package and the benchmark's smoke run, TEST_PARALLEL (3) at a time; ends with each tier's and job's time.
	$(TEST_RUNNER)

.PHONY: test-unit
test-unit: ## Unit tests (everything outside e2e/ suites that needs no cluster, and the tools modules' own).
	go test -count=1 $$(go list ./... | grep -v '/e2e/')
	@for mod in $(TOOL_TEST_MODULES); do (cd $$mod && GOWORK=off go test -count=1 ./...) || exit 1; done

# FUZZTIME is how long test-fuzz fuzzes each target. New coverage is
# minimized for at most a second, so that short runs spend their time fuzzing.
FUZZTIME ?= 3s

.PHONY: test-fuzz
test-fuzz: ## Fuzz every target (func Fuzz* in a *_fuzz_test.go) for FUZZTIME (3s) each; test-unit runs their corpora only.
	@failed=(); \
	fuzz() { go test -run='^$$' -fuzz="^$$1\$$" -fuzztime=$(FUZZTIME) -fuzzminimizetime=1s "$$2" 2>&1 | tee "$$3"; return $${PIPESTATUS[0]}; }; \
	log=$$(mktemp); trap 'rm -f "$$log"' EXIT; \
	for file in $$(git ls-files --cached --others --exclude-standard '*_fuzz_test.go'); do \
		for target in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$$file"); do \
			echo "fuzzing $$target in ./$$(dirname "$$file") for $(FUZZTIME)"; \
			if fuzz "$$target" "./$$(dirname "$$file")" "$$log"; then continue; fi; \
			if grep -q 'context deadline exceeded' "$$log" && ! grep -q 'Failing input written' "$$log"; then \
				echo "$$target: stopped by Go's fuzz coordinator at the -fuzztime deadline without a finding (golang/go#75804, fixed in Go 1.27): fuzzing it again"; \
				fuzz "$$target" "./$$(dirname "$$file")" "$$log" || failed+=("$$target"); \
			else \
				failed+=("$$target"); \
			fi; \
		done; \
	done; \
	if [ $${#failed[@]} -gt 0 ]; then echo "fuzz targets that failed: $${failed[*]}"; exit 1; fi

.PHONY: test-e2e
test-e2e: ## Every package under e2e/ (Ginkgo suites, each on its own local cluster), TEST_PARALLEL at a time; LABELS=<label> selects one area.
	$(TEST_RUNNER) --tiers tools,e2e --labels '$(LABELS)'

# make chaos runs the chaos harness (e2e/chaos) in its full form: its first 54
# workloads cover every case of every feature once, the rest are drawn at
# random; make test-e2e runs its small form (10 workloads, one per feature, 4
# kills). COPSE_CHAOS_SEED=<seed> replays a run's workloads, histories and kill
# schedule; COPSE_CHAOS_CONCURRENCY (default 8) is how many workloads run at once.
COPSE_CHAOS_WORKLOADS ?= 64
COPSE_CHAOS_KILLS     ?= 24
CHAOS_TIMEOUT         ?= 120m

.PHONY: chaos
chaos: tools ## Chaos harness: 64 workloads over every feature (Training, TrainJobs on both backends, Kueue, suspend, start order, success policy, deleted children, topology, long names, failure rules), 24 operator SIGKILLs; COPSE_CHAOS_SEED=<seed> replays a run.
	COPSE_CHAOS_WORKLOADS=$(COPSE_CHAOS_WORKLOADS) COPSE_CHAOS_KILLS=$(COPSE_CHAOS_KILLS) \
		go test -v -count=1 -timeout $(CHAOS_TIMEOUT) ./e2e/chaos/... -args -ginkgo.label-filter=chaos

##@ Benchmark

# BENCH_OUT receives bench-results.json; BENCH_ARGS adds copse-bench flags
# (e.g. BENCH_ARGS='--sizes 64,512 --repetitions 5'; see docs/performance.md).
BENCH_OUT  ?= bin/bench
BENCH_ARGS ?=

.PHONY: bench
bench: ## Benchmark copse against the API server's limit, JobSet, and JobSets queued through Kueue (N=64..4096, 3 repetitions, ~20 min); table + $(BENCH_OUT)/bench-results.json.
	go run ./e2e/bench/cmd/copse-bench --out-dir $(BENCH_OUT) $(BENCH_ARGS)

.PHONY: bench-smoke
bench-smoke: ## The benchmark's reduced form (N=64, 8 queued TrainJobs, one repetition, ~3 min): fails only if a scenario cannot run, never on a figure.
	go run ./e2e/bench/cmd/copse-bench --sizes 64 --queued-workloads 8 --repetitions 1 --observer-idle 5s --out-dir bin/bench-smoke

# BENCH_SCALE_ARGS adds copse-bench flags to bench-scale, e.g. the reduced
# form BENCH_SCALE_ARGS='--scale-pods 1000 --scale-nodes 100'.
BENCH_SCALE_ARGS ?=

.PHONY: bench-scale
bench-scale: ## 10,000 pods in 110 gangs on 1,000 simulated nodes (~8 min on 2 cores; not in `make test`); fails on reconcile errors.
	go run ./e2e/bench/cmd/copse-bench --scale --timeout 45m --out-dir bin/bench-scale $(BENCH_SCALE_ARGS)

##@ Demo

.PHONY: demo
demo: tools ## Local cluster with simulated GPU nodes, copse installed with Helm, JobSet and Kueue running, sample workloads shown live.
	go run ./e2e/demo --dir $(CLUSTER_DIR) --samples samples

.PHONY: demo-down
demo-down: ## Stop the demo's operator, controllers and cluster and remove its directory.
	go run ./e2e/demo down --dir $(CLUSTER_DIR)

.PHONY: clean
clean: ## Remove build outputs in the repository (the tool cache stays).
	rm -rf bin
