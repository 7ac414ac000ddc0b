# Run `make help` for the list. Every target that needs Kafka or PostgreSQL starts the
# local stack first (scripts/stack.sh), or uses KAFKA_BOOTSTRAP_SERVERS / DATABASE_URL
# when they are already set. DLQ_CACHE_DIR moves the stack's folder (default .cache), and
# DLQ_PG_PORT, DLQ_KAFKA_PORT, DLQ_KAFKA_CONTROLLER_PORT its ports; DLQ_WORKER_HTTP_LISTEN
# and DLQ_ADMIN_HTTP_LISTEN move the binaries of `make dev` (default: config/*.example.yaml);
# DLQ_DEMO_WORKER_LISTEN, DLQ_DEMO_ADMIN_LISTEN and DLQ_DEMO_SERVICE_LISTEN move those `make
# demo` starts beside them (default 127.0.0.1:9474, 127.0.0.1:8081, 127.0.0.1:8091).
SHELL := /bin/bash
.DEFAULT_GOAL := help
STACK := scripts/stack.sh
WITH_STACK := eval "$$($(STACK) env)" &&
CACHE := $(or $(DLQ_CACHE_DIR),$(CURDIR)/.cache)
# -artifacts keeps what tests save for people to look at (the console's screenshots) under
# $(CACHE)/test-output/.
GO_TEST_FLAGS ?= -race -count=1 -timeout 30m -artifacts -outputdir $(CACHE)/test-output
DEV := $(CACHE)/dev
# Where the binaries of `make dev` listen: the example configuration's address unless the
# binaries' own environment overrides move them.
WORKER_LISTEN := $(or $(DLQ_WORKER_HTTP_LISTEN),$(shell sed -n 's/^  listen: *\([^ ]*\).*/\1/p' config/worker.example.yaml))
ADMIN_LISTEN := $(or $(DLQ_ADMIN_HTTP_LISTEN),$(shell sed -n 's/^  listen: *\([^ ]*\).*/\1/p' config/admin.example.yaml))

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

.PHONY: test-unit
# -short skips every test that needs the stack (testenv.Integration): what is left needs
# Go and a C compiler only, and nothing running.
test-unit: ## Run the unit tier: every test that needs no Kafka, PostgreSQL, Java or browser (no stack started)
	go test -short -race -count=1 -timeout 10m ./...

.PHONY: test
test: up ## Run the whole test suite, unit and integration tiers, against the real stack (screenshots: $(CACHE)/test-output/)
	$(STACK) browser
	$(STACK) need musl-gcc:musl-tools promtool:prometheus
	mkdir -p $(CACHE)/test-output
	$(WITH_STACK) go run ./internal/tools/leftovers snapshot $(CACHE)/test-output/stack-before.json
	$(WITH_STACK) go test $(GO_TEST_FLAGS) ./...
	$(MAKE) test-poll
	$(MAKE) test-deploy
	$(WITH_STACK) go run ./internal/tools/leftovers check $(CACHE)/test-output/stack-before.json

.PHONY: test-poll
# The redrive suite again on the worker's read_path poll (confluent-kafka-go's public API
# only), which `go test ./...` does not cover: the default read path is queue.
test-poll: up ## Run the redrive tests on read_path poll (part of `make test`)
	$(WITH_STACK) DLQ_TEST_READ_PATH=poll go test $(GO_TEST_FLAGS) ./internal/redrive/

.PHONY: test-deploy
# deploy/ is a module of its own (Helm's and Kubernetes' dependencies stay out of the main
# module); -mod=mod follows the main module's requirements as they change. No -race: the
# tests are sequential, and a race build of Helm and Kubernetes costs minutes of CI. The
# chart's pods run as Kubernetes runs them (a read-only root in a mount namespace, the
# pod's user): that needs root and util-linux, else those tests skip and say so.
test-deploy: up ## Test the Helm chart (its pods run on the real stack), the alert rules and the dashboard (deploy/)
	$(STACK) need promtool:prometheus unshare:util-linux setpriv:util-linux
	$(WITH_STACK) cd deploy && go test -mod=mod -count=1 -timeout 30m ./...

.PHONY: soak
# Not part of `make test`: about 20 minutes on two cores. The scenarios start a private
# broker and a private PostgreSQL server on reserved ports, so the stack need not run (only
# be installed); the table is kept in $(CACHE)/soak.txt.
soak: ## Soak the real binaries (kill -9, zombie, PostgreSQL and broker outages, moved offsets); prints a table
	$(STACK) install
	mkdir -p $(CACHE)
	set -o pipefail; DLQ_SOAK=1 go test -count=1 -timeout 120m -v -run '^TestSoak$$' ./internal/soak/ 2>&1 | tee $(CACHE)/soak.log | sed -n '/^soak: /,/^[=-]-- /p' | tee $(CACHE)/soak.txt

.PHONY: bench
# -p 1: one package's benchmarks at a time, or two packages share the two cores and the
# broker unevenly between their raw and our sides.
# The redrive benchmarks drain a whole backlog per iteration and repeat themselves in
# rounds: -benchtime 1x runs each round once instead of growing b.N to a second.
bench: up ## Run the benchmarks: our figures beside a raw baseline from the same run
	$(WITH_STACK) go test -p 1 -run '^$$' -bench . -benchmem -timeout 60m $$(go list ./... | grep -v '/internal/redrive$$') | tee $(CACHE)/bench.txt
	$(WITH_STACK) go test -run '^$$' -bench . -benchtime 1x -benchmem -timeout 120m ./internal/redrive/ | tee -a $(CACHE)/bench.txt
	go run ./internal/tools/benchratio < $(CACHE)/bench.txt

FUZZTIME ?= 10m

.PHONY: fuzz
fuzz: ## Fuzz the header decoder (FUZZTIME=10m); a finding lands in internal/headers/testdata/fuzz
	go test -run '^$$' -fuzz FuzzDecode -fuzztime $(FUZZTIME) -fuzzminimizetime 5s -parallel 1 -timeout 0 ./internal/headers/

# What `go generate` makes: the store's queries (sqlc, from internal/store/queries and the
# migrations) and, from api/openapi.yaml, the API's types and its client's requests.
GENERATED := internal/store/dbsqlc internal/api/wire.gen.go internal/adminclient/oapi/client.gen.go
GENERATE_PKGS := ./internal/store/ ./internal/api/ ./internal/adminclient/oapi/

.PHONY: lint
lint: ## gofmt, go vet, staticcheck, go mod tidy, no hand-written type above 30 methods, the generated code (sqlc, the API), and the docs (links, the generated configuration reference, README size, no development history)
	@out=$$(gofmt -l $$(git ls-files '*.go')); [ -z "$$out" ] || { echo "gofmt would change:"; echo "$$out"; exit 1; }
	go vet ./...
	go tool staticcheck ./...
	@go mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }
	go run ./internal/tools/typesize
	go run ./internal/tools/configdoc -check
	go run ./internal/tools/archdoc -check
	rm -f internal/store/dbsqlc/*.go  # sqlc leaves a deleted query file's output behind
	go generate $(GENERATE_PKGS)
	@[ -z "$$(git status --porcelain -- $(GENERATED))" ] || { git status --short -- $(GENERATED); echo "generated code is stale: run go generate $(GENERATE_PKGS) and commit it"; exit 1; }
	go run ./internal/tools/docscheck

.PHONY: dev
dev: up build ## Stack up, demo topics, migrations, both binaries running with config/*.example.yaml
	$(STACK) topics orders:3 orders.dlq:3
	$(WITH_STACK) bin/dlq-worker migrate up --config config/worker.example.yaml
	@mkdir -p $(DEV)
	@scripts/stop-dev.sh $(DEV)
	@$(WITH_STACK) for b in dlq-worker dlq-admin; do \
	  sub=run; [ $$b = dlq-admin ] && sub=serve; \
	  DLQ_ADMIN_ALLOW_DEV_TOKENS=true DLQ_WORKER_HTTP_LISTEN=$(WORKER_LISTEN) DLQ_ADMIN_HTTP_LISTEN=$(ADMIN_LISTEN) \
	    nohup bin/$$b $$sub --config config/$${b#dlq-}.example.yaml >$(DEV)/$$b.log 2>&1 & echo $$! >$(DEV)/$$b.pid; \
	done
	@scripts/dev-guide.sh $(DEV) $(WORKER_LISTEN) $(ADMIN_LISTEN)

.PHONY: fail
fail: ## Make records fail now on `make dev`'s stack: redriven, parked exhausted and unroutable, then how to watch and replay
	$(WITH_STACK) go run ./examples/fail -admin http://$(ADMIN_LISTEN) -worker-log $(DEV)/dlq-worker.log

.PHONY: demo
demo: up build ## The whole loop: service → DLQ → worker → park → admin replay, with a conservation report
	go build -o bin/ ./examples/orders-service
	$(WITH_STACK) go run ./examples/demo -dir $(CACHE)/demo

.PHONY: down
down: ## Stop the binaries started by `make dev` (waiting for them), then the local stack
	@scripts/stop-dev.sh $(DEV)
	$(STACK) down

.PHONY: clean
clean: down ## Stop everything and delete the local stack's data (keeps downloaded jars)
	rm -rf $(CACHE)/pg $(CACHE)/kafka/data $(DEV) bin
