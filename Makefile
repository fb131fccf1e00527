# BabelQueue for Go — entry points. `make help` lists every target.
#
# Every target runs from the repository root and works on a fresh clone:
# Go downloads modules into its cache under $HOME, and the broker scripts
# cache Maven jars under $HOME as well.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

# Modules in dependency order. examples/* modules are added here as they land
# (and in versions.txt and go.work; `make modgraph` checks the last two agree).
MODULES := core brokertest idempotency idempotency/sqlstore idempotency/redisstore schema outbox conformance kafka kafkashare pulsar tools otel otel/integration outbox/integration chaos interop examples/orderstatus examples/appdemo examples/quickstart

GO ?= go
GOTEST_FLAGS ?= -count=1 -p 2
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
ACTIONLINT  := github.com/rhysd/actionlint/cmd/actionlint@v1.7.12
FUZZTIME ?= 10s
BROKERS := tools/brokers/with-brokers.sh

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build every module.
	@for m in $(MODULES); do echo "== build $$m"; (cd $$m && $(GO) build ./...); done

.PHONY: vet
vet: ## go vet every module (integration- and restart-tagged files included).
	@for m in $(MODULES); do echo "== vet $$m"; (cd $$m && $(GO) vet ./... && $(GO) vet -tags "integration restart" ./...); done
	@echo "== vet kafka (cluster tests)"; cd kafka && $(GO) vet -tags cluster ./...
	@echo "== vet interop (interop tests)"; cd interop && $(GO) vet -tags interop ./...

.PHONY: test
test: build vet ## Build, vet, run every module's unit tests (race detector) and each benchmark once (no broker needed).
	@for m in $(MODULES); do echo "== test $$m"; (cd $$m && $(GO) test -race $(GOTEST_FLAGS) ./...); done
	@for m in $(MODULES); do echo "== bench once $$m"; out=$$(cd $$m && $(GO) test -run '^$$' -bench . -benchtime 1x ./... 2>&1) || { echo "$$out"; exit 1; }; done

# The conformance matrix. The kafka, pulsar and kafkashare modules require
# conformance, so bqconform cannot link them: each binding's conformance
# test (module: package: test: column, then optionally the brokers it runs
# on) writes its report to $BQ_CONFORMANCE_REPORT and `bqconform -matrix`
# merges the reports into one column per binding. A test naming brokers is
# built with the integration tag and run on those brokers, started for it
# (make integration skips it: INTEGRATION_SKIP). A failing test prints its
# output and still leaves the matrix printed; the target then fails.
CONFORMANCE_TESTS := conformance:./corebinding:TestSuite:core kafka:.:TestConformanceKafkaBlocks:kafka pulsar:.:TestConformance:pulsar kafkashare:.:TestConformanceShare:kafkashare:kafka
INTEGRATION_SKIP := ^TestConformanceShare$$
# SUITE=DIR runs another suite directory (such as the canonical one) through
# the same tests instead of the embedded one.
SUITE ?=

.PHONY: conformance
conformance: ## Run the conformance suite against core, kafka, pulsar and kafkashare (on a real Kafka started for it); print the matrix (a column per binding).
	@d=$$(mktemp -d); trap 'rm -rf "$$d"' EXIT; rc=0; reports=(); suite=(); \
	if [ -n "$(SUITE)" ]; then export BQ_CONFORMANCE_SUITE="$(abspath $(SUITE))"; suite=(-suite "$$BQ_CONFORMANCE_SUITE"); fi; \
	for t in $(CONFORMANCE_TESTS); do \
	  IFS=: read -r mod pkg test name brokers <<< "$$t"; reports+=("$$d/$$name.json"); \
	  run=($(GO) test -count=1); \
	  if [ -n "$$brokers" ]; then run=(env BQ_BROKERS="$$brokers" $(CURDIR)/$(BROKERS) $(GO) test -tags integration -count=1); fi; \
	  if ! (cd "$$mod" && BQ_CONFORMANCE_REPORT="$$d/$$name.json" "$${run[@]}" -run "^$$test\$$" "$$pkg" > "$$d/$$name.log" 2>&1); then \
	    echo "== the $$name conformance test failed:"; cat "$$d/$$name.log"; rc=1; \
	  fi; \
	done; \
	$(GO) run ./conformance/cmd/bqconform "$${suite[@]}" -matrix "$${reports[@]}" || rc=1; \
	exit $$rc

.PHONY: brokers-up
brokers-up: ## Start real Kafka (KRaft) and Pulsar standalone on 127.0.0.1 and print their addresses.
	@tools/brokers/up.sh

.PHONY: brokers-down
brokers-down: ## Stop the brokers started by brokers-up and remove their data.
	@tools/brokers/down.sh

.PHONY: integration
integration: ## Start the real brokers, run every module's integration tests against them, stop the brokers.
	@$(BROKERS) $(MAKE) --no-print-directory integration-tests

.PHONY: integration-tests
integration-tests: ## Integration tests against brokers already described by BQ_* variables (see brokers-up).
	@for m in $(MODULES); do echo "== integration $$m"; (cd $$m && $(GO) test -tags integration $(GOTEST_FLAGS) -p 1 -timeout 20m -skip '$(INTEGRATION_SKIP)' ./...); done

# The Python SDK as a peer (interop/README.md): interop/venv.sh prepares the
# pinned babelqueue 1.24.0 in a venv cached under ~/.cache/babelqueue
# (installing python3-venv with apt-get where it is missing), then the
# scenarios run on Kafka and Pulsar started for them.
.PHONY: interop
interop: ## The Python SDK (babelqueue 1.24.0) as a peer on real Kafka and Pulsar: one line per scenario, then "N passed, M failed".
	@py="$$(interop/venv.sh)/bin/python"; \
	BQ_BROKERS="kafka pulsar" BQ_INTEROP_PYTHON="$$py" $(BROKERS) $(MAKE) --no-print-directory interop-tests

.PHONY: interop-tests
interop-tests: ## The interop scenarios against brokers already described by BQ_* variables (the venv from interop/venv.sh).
	@export BQ_INTEROP_PYTHON="$${BQ_INTEROP_PYTHON:-$$(interop/venv.sh)/bin/python}"; \
	log=$$(mktemp); trap 'rm -f "$$log"' EXIT; \
	(cd interop && $(GO) test -tags interop -count=1 -v -parallel 4 -timeout 8m .) > "$$log" 2>&1 & pid=$$!; \
	tail -n +1 -f --pid=$$pid "$$log" | grep --line-buffered -E '^(interop: |[0-9]+ passed, [0-9]+ failed$$)' || true; \
	if wait $$pid; then exit 0; fi; \
	echo "== interop failures:"; \
	awk '/^=== (RUN|CONT|NAME) /{cur=$$3; next} /^--- FAIL: /{failed[$$3]=1; next} /^panic|^FAIL\t|^\[build failed\]/{print; next} \
	  /^    /{out[cur]=out[cur] substr($$0, 1, 2000) "\n"} END{for (t in failed) {print "--- FAIL: " t; printf "%s", out[t]}}' "$$log"; exit 1

.PHONY: cluster-tests
cluster-tests: ## Start a three-node Kafka KRaft cluster, run the leader- and controller-kill tests on it, stop it.
	@started=0; if ! tools/brokers/kafka-cluster.sh status 2>/dev/null; then started=1; tools/brokers/kafka-cluster.sh up >/dev/null; fi; \
	trap '[ $$started = 0 ] || $(CURDIR)/tools/brokers/kafka-cluster.sh down' EXIT; \
	eval "$$(tools/brokers/kafka-cluster.sh env | sed 's/^/export /')"; \
	cd kafka && $(GO) test -tags cluster -run '^TestCluster' -count=1 -p 1 -timeout 20m -v .

.PHONY: bench
bench: ## Benchmarks: codec micro-benchmarks, then broker benchmarks (ours vs the raw clients) on real brokers.
	cd core && $(GO) test -run '^$$' -bench . -benchmem ./...
	@$(BROKERS) $(MAKE) --no-print-directory bench-brokers

.PHONY: bench-brokers
bench-brokers: ## Broker benchmarks against brokers already described by BQ_* variables.
	@cd kafka && BQ_BENCH=1 $(GO) test -tags integration -run '^$(LATENCY_BENCH)$$' -count=1 -timeout 5m -v . | grep -E '^(bench:|--- FAIL|FAIL|ok)'
	@for m in kafka pulsar; do (cd $$m && BQ_BENCH=1 $(GO) test -tags integration -run '^TestBench' -skip '^$(LATENCY_BENCH)$$' -count=1 -p 1 -timeout 20m -v ./... | grep -E '^(bench:|--- FAIL|FAIL|ok)' || exit 1); done
	@for m in $(HELPER_BENCH_MODULES); do (cd $$m && BQ_BENCH=1 $(GO) test -tags integration -run '^TestBench' -count=1 -p 1 -timeout 20m -v ./... | grep -E '^(bench:|--- FAIL|FAIL|ok)' || exit 1); done

# The re-injector's lateness runs first, before the throughput benches fill
# the test broker's heap (its collections then stall produce requests:
# kafka/DESIGN.md, "Retry tiers and the Reinjector").
LATENCY_BENCH := TestBenchKafkaReinjectLateness

# The idempotency stores' overhead (memory, sqlite, postgres, redis) and the
# outbox relay's throughput (PostgreSQL to Kafka), the share-group binding's
# benches (kafkashare); the servers come from
# with-brokers.sh (postgres.sh, redis.sh).
HELPER_BENCH_MODULES := idempotency idempotency/sqlstore idempotency/redisstore outbox/integration kafkashare

.PHONY: outbox-kill
outbox-kill: ## Outbox SIGKILL test: 10,000 rows relayed from PostgreSQL to Kafka by two relay processes SIGKILLed at random (at least 12 times); none lost, order kept (20-45 s with the servers started; part of ci).
	@BQ_BROKERS="kafka postgres" $(BROKERS) $(GO) run ./outbox/integration/cmd/bqoutboxkill -rows 10000 -kills 12 -timeout 5m

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME (default 10s) each; failing inputs are kept in the package's testdata/fuzz. A bare deadline error with no failing input (a Go 1.26 fuzzer race) is not a failure.
	@for m in $(MODULES); do \
	  for pkg in $$(cd $$m && $(GO) list ./...); do \
	    dir=$$(cd $$m && $(GO) list -f '{{.Dir}}' $$pkg); \
	    for f in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go 2>/dev/null | sed 's/func //'); do \
	      echo "== fuzz $$pkg $$f"; \
	      rc=0; out=$$(cd $$dir && $(GO) test -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) . 2>&1) || rc=$$?; echo "$$out"; \
	      if [ $$rc != 0 ]; then \
	        if echo "$$out" | grep -q 'context deadline exceeded' && ! echo "$$out" | grep -qE 'Failing input written|panic:|hung or terminated'; then \
	          echo "== fuzz $$f: ran its $(FUZZTIME), no failing input; the bare deadline error is the coordinator's -fuzztime race (go.dev/issue/75804, fixed in Go 1.27)"; \
	        else exit 1; fi; \
	      fi; \
	    done; \
	  done; \
	done

.PHONY: fuzz-ci
fuzz-ci: ## Every fuzz target for FUZZTIME_CI (default 4s) each, so that a parser change that panics fails CI (about 2-3 min in all).
	@start=$$(date +%s); $(MAKE) --no-print-directory fuzz FUZZTIME=$(FUZZTIME_CI); echo "== fuzz-ci took $$(( $$(date +%s) - start ))s"

FUZZTIME_CI ?= 4s

.PHONY: lint
lint: verify-versions modgraph readmecheck tidy-check sizecheck docsize docanchors doccomments ## gofmt check, go vet, staticcheck (pinned), actionlint (pinned), version list, module graph, README table and Quick start, tidy go.mod files, no large file, design-document anchors, doc comment openings.
	@out=$$(gofmt -l $(MODULES)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@$(MAKE) --no-print-directory vet
	@for m in $(MODULES); do echo "== staticcheck $$m"; (cd $$m && $(GO) run $(STATICCHECK) ./... && $(GO) run $(STATICCHECK) -tags "integration restart" ./...); done
	cd interop && $(GO) run $(STATICCHECK) -tags interop ./...
	$(GO) run $(ACTIONLINT) -no-color .github/workflows/*.yml

.PHONY: sizecheck
sizecheck: ## Fail when a tracked file is over 1 MiB or looks like a build output (an executable ELF file).
	@bad=$$(git ls-files -z | xargs -0 -r stat -c '%s %n' | awk '$$1 > 1048576 {print "  over 1 MiB: " $$2}'); \
	elf=$$( (git ls-files -z | xargs -0 -r grep -l -m1 -P '^\x7fELF' 2>/dev/null || true) | sed 's/^/  executable: /'); \
	if [ -n "$$bad$$elf" ]; then echo "sizecheck: files that must not be tracked:"; printf '%s\n' "$$bad" "$$elf" | sed '/^$$/d'; exit 1; fi

.PHONY: docsize
docsize: ## Fail when go doc -short of the user package (core) is over 70 lines.
	@n=$$(cd core && $(GO) doc -short . | wc -l); echo "docsize: babelqueue go doc -short = $$n lines (at most 70)"; [ "$$n" -le 70 ]

.PHONY: docanchors
docanchors: ## Fail when a comment or document names a DESIGN.md heading that does not exist, or a section by number.
	$(GO) run ./tools/cmd/doccheck anchors

# The packages whose exported doc comments open with a sentence of at most
# 25 words (CONTRIBUTING.md, "Code").
DOC_COMMENT_PACKAGES := core core/driver core/wire core/redrive core/bqtest core/option core/gdpr kafka pulsar idempotency idempotency/sqlstore idempotency/redisstore idempotency/storetest schema otel

.PHONY: doccomments
doccomments: ## Fail when an exported doc comment of DOC_COMMENT_PACKAGES opens with a sentence over 25 words.
	$(GO) run ./tools/cmd/doccheck comments $(DOC_COMMENT_PACKAGES)

.PHONY: verify-versions
verify-versions: ## Check every module requires its siblings at the versions in versions.txt.
	$(GO) run ./tools/cmd/verify-versions

.PHONY: modgraph
modgraph: ## Fail on a module cycle, a replace directive in a go.mod, a sibling requirement of core or brokertest, or a go.work that disagrees with versions.txt.
	$(GO) run ./tools/cmd/modcheck graph -leaf core,brokertest

.PHONY: readmecheck
readmecheck: ## Fail when README.md's module table misses a go.mod of the tree (or lists one without), its Quick start differs from examples/quickstart/main.go, or a file cites a rule CONTRACT.md lacks.
	$(GO) run ./tools/cmd/modcheck readme

.PHONY: tidy-check
tidy-check: ## Fail when go mod tidy would change a go.mod or go.sum (siblings resolved from a file proxy of the tree).
	$(GO) run ./tools/cmd/modcheck tidy

.PHONY: tidy
tidy: ## Run go mod tidy in every module, siblings resolved from a file proxy of the tree (never commit sibling go.sum lines).
	$(GO) run ./tools/cmd/modcheck tidy -w

.PHONY: proxytest
proxytest: ## Install bq@<version> and tidy scratch services from a file-based module proxy of the tree (GOWORK=off).
	tools/release/proxytest.sh

.PHONY: demo
demo: ## Run the App demo on the embedded Kafka-protocol broker: handlers, retry tiers, a Reinjector, dead letters, a redrive, an accounting (no setup besides Go).
	$(GO) run ./examples/appdemo/cmd/demo

.PHONY: demo-orderstatus
demo-orderstatus: ## Run the order status processor demo (seed 001) on the embedded Kafka-protocol broker.
	$(GO) run ./examples/orderstatus/cmd/demo

# The chaos suite (chaos/README.md) starts its own brokers, with their own
# state directory and ports, so it never disturbs brokers started by
# brokers-up or by another checkout; it kills and restarts them itself.
CHAOS_STATE ?= $(or $(TMPDIR),/tmp)/babelqueue-chaos-brokers
CHAOS_ENV := BQ_BROKERS_STATE=$(CHAOS_STATE) \
  BQ_KAFKA_PORT=24192 BQ_KAFKA_SASL_PORT=24193 BQ_KAFKA_CONTROLLER_PORT=24194 BQ_KAFKA_TLS_PORT=24195 BQ_KAFKA_SASL_TLS_PORT=24196 \
  BQ_PULSAR_PORT=24650 BQ_PULSAR_WEB_PORT=24080 BQ_PULSAR_BOOKIE_PORT=24181 BQ_PULSAR_TLS_PORT=24651
CHAOS_BIN = $(CHAOS_STATE)/bin
CHAOS_BROKER_LIST ?= kafka pulsar

.PHONY: restart-tests
restart-tests: ## Publish outcomes across a broker kill -9 and restart (Kafka: acked/unknown/refused; Pulsar: deduplication; kafkashare: the idempotent producer, duplicates=0), on brokers of their own (the chaos state and ports).
	@for b in $(CHAOS_BROKER_LIST); do \
	  echo "== restart tests $$b"; \
	  env $(CHAOS_ENV) BQ_BROKERS=$$b BQ_RESTART_SCRIPTS=$(CURDIR)/tools/brokers $(BROKERS) \
	    bash -c 'cd "$$0" && $(GO) test -tags "integration restart" -run "^TestRestart" -count=1 -p 1 -timeout 20m -v . | grep -E "^(restart:|--- |PASS|FAIL|ok)|_test.go:"; exit $${PIPESTATUS[0]}' $$b || exit 1; \
	done
	@echo "== restart tests kafkashare (idempotent producer)"; \
	env $(CHAOS_ENV) BQ_BROKERS=kafka BQ_RESTART_SCRIPTS=$(CURDIR)/tools/brokers $(BROKERS) \
	  bash -c 'cd kafkashare && $(GO) test -tags "integration restart" -run "^TestRestartIdempotentPublish$$" -count=1 -p 1 -timeout 20m -v . | grep -E "^(restart:|--- |PASS|FAIL|ok)|_test.go:"; exit $${PIPESTATUS[0]}'

.PHONY: chaos
chaos: ## Chaos suite, full: per broker 10,000 envelopes, 22 SIGKILLs, a broker kill -9 and restart; 5,000 with 16 handlers per consumer and 12 SIGKILLs; the SIGTERM variant, producer-kill, redrive-kill, redrive-restart and the leak check; Pulsar restart-shared and restart-exclusive; then the three-node Kafka cluster scenarios.
	@$(MAKE) --no-print-directory chaos-run CHAOS_RUNS='run -n 10000 -kills 22 -duration 6m;run -scenario concurrent -concurrency 16 -n 5000 -kills 12 -duration 3m;run -graceful -n 3000 -kills 8 -duration 80s;producer-kill -n 4000 -kills 20 -duration 60s;redrive-chaos -n 3000 -kills 8 -duration 40s;redrive-chaos -n 3000 -kills 0 -duration 40s;leak -cycles 50'
	@$(MAKE) --no-print-directory chaos-run CHAOS_BROKER_LIST=pulsar CHAOS_RUNS='run -scenario restart-shared -n 3000 -kills 2 -duration 60s;run -scenario restart-exclusive -subscription exclusive -n 3000 -kills 2 -duration 60s'
	@$(MAKE) --no-print-directory cluster-tests

.PHONY: chaos-short
chaos-short: ## Chaos suite, short (CI runs chaos-ci instead): per broker 3,000 envelopes, 6 SIGKILLs, a broker kill -9 and restart; the same with 16 handlers per consumer (no broker restart); a producer SIGKILLed 5 times mid-publish; then share-chaos (kafkashare).
	@$(MAKE) --no-print-directory chaos-run CHAOS_RUNS='run -scenario concurrent -concurrency 16 -n 3000 -kills 6 -duration 75s -broker-restart no;run -n 3000 -kills 6 -duration 75s;producer-kill -n 1500 -kills 5 -duration 20s'
	@$(MAKE) --no-print-directory share-chaos

# share-chaos's tests (kafkashare, tags integration and restart, so that
# `make integration` runs none of them): the consumer scenarios, then the
# idempotent producer's restart test, which chaos-ci runs in restart-tests
# instead (SHARE_CHAOS_TESTS=$(SHARE_CHAOS_CONSUMERS)).
SHARE_CHAOS_CONSUMERS := TestShareKilledConsumersLoseNothing|TestRestartShareConsumers
SHARE_CHAOS_TESTS ?= $(SHARE_CHAOS_CONSUMERS)|TestRestartIdempotentPublish

.PHONY: share-chaos
share-chaos: ## Kafka share groups (kafkashare) on a broker of its own: consumer processes SIGKILLed (lost=0, duplicates within what was acquired), the same across a broker kill -9 and restart, the idempotent producer across a restart (duplicates=0).
	@echo "== share chaos kafkashare ($(SHARE_CHAOS_TESTS))"; start=$$(date +%s); \
	env $(CHAOS_ENV) BQ_BROKERS=kafka BQ_RESTART_SCRIPTS=$(CURDIR)/tools/brokers $(BROKERS) \
	  bash -c 'cd kafkashare && $(GO) test -tags "integration restart" -run "^($(SHARE_CHAOS_TESTS))$$" -count=1 -p 1 -timeout 20m -v . | grep -E "^(chaos:|restart:|--- |PASS|FAIL|ok)|_test.go:"; exit $${PIPESTATUS[0]}' || exit 1; \
	echo "== share chaos took $$(( $$(date +%s) - start ))s (broker start included)"

# The restart tests chaos-ci runs: Kafka's, Pulsar's and kafkashare's.
# Pulsar's TestRestartDeduplication subscribes before it publishes: a topic
# without a subscription or retention loses its closed ledgers at the
# broker's first trim, and a kill -9 closes the one written before it
# (pulsar/DESIGN.md, "Producers", paragraph "What a receipt does not keep").
CHAOS_CI_RESTART ?= kafka pulsar

.PHONY: chaos-ci
chaos-ci: ## Chaos suite, CI-sized (every kind of proof once, 20-30 min): per broker SIGKILLs with a broker kill -9 and restart and 16 handlers per consumer, redrive-kill, redrive-restart, SIGTERM, producer-kill and the leak check; Pulsar restart-exclusive; then the Kafka, Pulsar and kafkashare restart tests, share-chaos's consumer scenarios (SIGKILLed share consumers, with and without a broker restart) and the three-node Kafka cluster scenarios.
	@$(if $(filter kafka,$(CHAOS_BROKER_LIST)),$(MAKE) --no-print-directory chaos-run CHAOS_BROKER_LIST=kafka CHAOS_RUNS='$(CHAOS_CI_KAFKA)')
	@$(if $(filter pulsar,$(CHAOS_BROKER_LIST)),$(MAKE) --no-print-directory chaos-run CHAOS_BROKER_LIST=pulsar CHAOS_RUNS='$(CHAOS_CI_PULSAR)')
	@$(MAKE) --no-print-directory restart-tests CHAOS_BROKER_LIST='$(CHAOS_CI_RESTART)'
	@$(MAKE) --no-print-directory share-chaos SHARE_CHAOS_TESTS='$(SHARE_CHAOS_CONSUMERS)'
	@$(if $(filter kafka,$(CHAOS_BROKER_LIST)),$(MAKE) --no-print-directory cluster-tests)

# chaos-ci's scenarios: ';' separates scenarios run on brokers started for
# them alone, '+' joins scenarios that share one broker start (those that
# never kill it, and Kafka's two redrive scenarios: a Kafka broker restarted
# on its data serves at once). Pulsar's run on its Shared subscription with
# a broker restart is restart-shared.
CHAOS_CI_KAFKA := run -scenario concurrent-restart -concurrency 16 -n 1500 -kills 4 -duration 40s;redrive-chaos -n 1000 -kills 4 -duration 20s+redrive-chaos -n 1000 -kills 0 -duration 20s;run -graceful -n 1000 -kills 4 -duration 30s+producer-kill -n 800 -kills 3 -duration 12s+leak -cycles 10
CHAOS_CI_PULSAR := run -scenario restart-shared -concurrency 16 -n 1500 -kills 4 -duration 40s;run -scenario restart-exclusive -subscription exclusive -n 1000 -kills 2 -duration 30s;redrive-chaos -n 1000 -kills 4 -duration 20s;redrive-chaos -n 1000 -kills 0 -duration 20s;run -graceful -n 1000 -kills 4 -duration 30s+producer-kill -n 800 -kills 3 -duration 12s+leak -cycles 10

.PHONY: chaos-run
chaos-run: # CHAOS_RUNS: ';'-separated groups of '+'-joined bqchaos command lines, run on each broker of CHAOS_BROKER_LIST in turn; each group on brokers started for it alone.
	@mkdir -p $(CHAOS_BIN)
	$(GO) build -o $(CHAOS_BIN)/bqchaos ./chaos/cmd/bqchaos
	$(GO) build -o $(CHAOS_BIN)/bq ./tools/cmd/bq
	@for b in $(CHAOS_BROKER_LIST); do \
	  echo "== chaos $$b"; \
	  bash -c 'set -e; IFS=";" read -r -a runs <<<"$$3"; \
	    for r in "$${runs[@]}"; do start=$$(date +%s); \
	      env $(CHAOS_ENV) BQ_BROKERS="$$1" $(BROKERS) $(CURDIR)/chaos/rungroup.sh "$$0" "$$2" "$$1" "$$r"; \
	      echo "== group took $$(( $$(date +%s) - start ))s (broker start included)"; done' \
	    $(CHAOS_BIN)/bqchaos $$b $(CHAOS_BIN)/bq '$(CHAOS_RUNS)' || exit 1; \
	done

.PHONY: setup
setup: ## Install what the tests need besides Go when missing (Debian/Ubuntu: Java 17, Maven, PostgreSQL, Redis, Python 3); the first step of ci.
	@.ci/setup.sh

.PHONY: ci
ci: setup lint test fuzz-ci conformance proxytest integration interop outbox-kill chaos-ci ## Everything CI runs, from a fresh Debian machine: setup, lint, unit tests, every fuzz target briefly, conformance, the release proxy test, real-broker integration tests, the Python SDK interop scenarios, the outbox SIGKILL test (20-45 s), the CI-sized chaos suite with the restart and cluster tests.
