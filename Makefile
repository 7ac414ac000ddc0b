# Run `make help` for the list. Every target that needs Kafka or PostgreSQL starts the
# local stack first (scripts/stack.sh), or uses KAFKA_BOOTSTRAP_SERVERS / DATABASE_URL
# when they are already set.
SHELL := /bin/bash
.DEFAULT_GOAL := help
STACK := scripts/stack.sh
WITH_STACK := eval "$$($(STACK) env)" &&
# -artifacts keeps what tests save for people to look at (the console's screenshots) under
# .cache/test-output/.
GO_TEST_FLAGS ?= -race -count=1 -timeout 30m -artifacts -outputdir $(CURDIR)/.cache/test-output
DEV := .cache/dev

.PHONY: help
help: ## Show this help
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

.PHONY: build
build: ## Build both binaries into bin/
	go build -o bin/ ./cmd/...

.PHONY: static
static: ## Build the static binaries the container image ships into bin/static/ (musl; installs musl-tools)
	scripts/build-static.sh bin/static

.PHONY: image
image: ## Build the container image dlq:dev (needs a container engine: docker or podman)
	$$(command -v docker || command -v podman) build -t dlq:dev .

.PHONY: up
up: ## Start the local Kafka + PostgreSQL stack (installs what is missing)
	$(STACK) up

.PHONY: status
status: ## Say what runs
	$(STACK) status
	@for p in $(DEV)/*.pid; do [ -f "$$p" ] && kill -0 "$$(cat $$p)" 2>/dev/null && echo "$$(basename $$p .pid): running (pid $$(cat $$p))"; done; true

.PHONY: test
test: up ## Run the whole test suite against the real stack (screenshots: .cache/test-output/)
	$(STACK) browser
	$(STACK) need musl-gcc:musl-tools promtool:prometheus
	mkdir -p .cache/test-output
	$(WITH_STACK) go run ./internal/tools/leftovers snapshot .cache/test-output/stack-before.json
	$(WITH_STACK) go test $(GO_TEST_FLAGS) ./...
	$(MAKE) test-poll
	$(MAKE) test-deploy
	$(WITH_STACK) go run ./internal/tools/leftovers check .cache/test-output/stack-before.json

.PHONY: test-poll
# The redrive suite again on the worker's read_path poll (confluent-kafka-go's public API
# only), which `go test ./...` does not cover: the default read path is queue.
test-poll: up ## Run the redrive tests on read_path poll (part of `make test`)
	$(WITH_STACK) DLQ_TEST_READ_PATH=poll go test $(GO_TEST_FLAGS) ./internal/redrive/

.PHONY: test-deploy
# deploy/ is a module of its own (Helm's and Kubernetes' dependencies stay out of the main
# module); -mod=mod follows the main module's requirements as they change. No -race: the
# tests are sequential, and a race build of Helm and Kubernetes costs minutes of CI.
test-deploy: up ## Test the Helm chart, the alert rules and the dashboard (deploy/)
	$(STACK) need promtool:prometheus
	$(WITH_STACK) cd deploy && go test -mod=mod -count=1 -timeout 30m ./...

.PHONY: soak
# Not part of `make test`: about 20 minutes on two cores. The scenarios start a private
# broker and a private PostgreSQL server, so they run beside the dev stack; the table is
# kept in .cache/soak.txt.
soak: up ## Soak the real binaries (kill -9, zombie, PostgreSQL and broker outages, moved offsets); prints a table
	mkdir -p .cache
	set -o pipefail; DLQ_SOAK=1 go test -count=1 -timeout 120m -v -run '^TestSoak$$' ./internal/soak/ 2>&1 | tee .cache/soak.log | sed -n '/^soak: /,/^[=-]-- /p' | tee .cache/soak.txt

.PHONY: bench
# -p 1: one package's benchmarks at a time, or two packages share the two cores and the
# broker unevenly between their raw and our sides.
# The redrive benchmarks drain a whole backlog per iteration and repeat themselves in
# rounds: -benchtime 1x runs each round once instead of growing b.N to a second.
bench: up ## Run the benchmarks: our figures beside a raw baseline from the same run
	$(WITH_STACK) go test -p 1 -run '^$$' -bench . -benchmem -timeout 60m $$(go list ./... | grep -v '/internal/redrive$$') | tee .cache/bench.txt
	$(WITH_STACK) go test -run '^$$' -bench . -benchtime 1x -benchmem -timeout 120m ./internal/redrive/ | tee -a .cache/bench.txt
	go run ./internal/tools/benchratio < .cache/bench.txt

FUZZTIME ?= 10m

.PHONY: fuzz
fuzz: ## Fuzz the header decoder (FUZZTIME=10m); a finding lands in internal/headers/testdata/fuzz
	go test -run '^$$' -fuzz FuzzDecode -fuzztime $(FUZZTIME) -fuzzminimizetime 5s -parallel 1 -timeout 0 ./internal/headers/

.PHONY: lint
lint: ## gofmt, go vet, staticcheck, go mod tidy
	@out=$$(gofmt -l $$(git ls-files '*.go')); [ -z "$$out" ] || { echo "gofmt would change:"; echo "$$out"; exit 1; }
	go vet ./...
	go tool staticcheck ./...
	@go mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }

.PHONY: dev
dev: up build ## Stack up, demo topics, migrations, both binaries running with config/*.example.yaml
	$(STACK) topics orders:3 orders.dlq:3
	$(WITH_STACK) bin/dlq-worker migrate up --config config/worker.example.yaml
	@mkdir -p $(DEV)
	@scripts/stop-dev.sh $(DEV)
	@$(WITH_STACK) for b in dlq-worker dlq-admin; do \
	  sub=run; [ $$b = dlq-admin ] && sub=serve; \
	  DLQ_ADMIN_ALLOW_DEV_TOKENS=true nohup bin/$$b $$sub --config config/$${b#dlq-}.example.yaml >$(DEV)/$$b.log 2>&1 & echo $$! >$(DEV)/$$b.pid; \
	done
	@scripts/dev-guide.sh

.PHONY: fail
fail: ## Make records fail now on `make dev`'s stack: redriven, parked exhausted and unroutable, then how to watch and replay
	$(WITH_STACK) go run ./examples/fail

.PHONY: demo
demo: up build ## The whole loop: service → DLQ → worker → park → admin replay, with a conservation report
	go build -o bin/ ./examples/orders-service
	$(WITH_STACK) go run ./examples/demo

.PHONY: down
down: ## Stop the binaries started by `make dev` (waiting for them), then the local stack
	@scripts/stop-dev.sh $(DEV)
	$(STACK) down

.PHONY: clean
clean: down ## Stop everything and delete the local stack's data (keeps downloaded jars)
	rm -rf .cache/pg .cache/kafka/data .cache/dev bin
