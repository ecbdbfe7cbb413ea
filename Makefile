# The two commands a newcomer needs: `make run` and `make test`.
SHELL := /bin/bash
VENV  := .venv
SAND  := $(VENV)/bin/sand
PY    := $(VENV)/bin/python
# The test suite runs its own cluster in its own state dir, on its own ports.
TEST_STATE ?= $(CURDIR)/build/test-state

.PHONY: setup run stop status test lint unit integration integration-parallel integration-serial java-test test-faults test-soak bench clean screenshots

# SETUP_DONE=1: a sub-make of `make test`, whose set-up already ran
setup:
	@[ -n "$(SETUP_DONE)" ] || bash deploy/setup.sh

run: setup
	@bash deploy/run-example.sh

stop:
	@$(SAND) down

status:
	@$(SAND) status

lint: setup
	$(VENV)/bin/ruff check sdk-python workflows grain-worker tests bench frontend/ui/scripts
	$(VENV)/bin/ruff format --check sdk-python workflows grain-worker tests bench frontend/ui/scripts
	$(VENV)/bin/mypy sdk-python/src workflows/src grain-worker/src frontend/ui/scripts
	mvn -q -B spotless:check
	cd frontend/ui && npm run --silent typecheck && npm run --silent lint && npm run --silent check:api

java-test: setup
	mvn -q -B test

# Hang guards ×4 (tests/conftest.py): under `make test` they run beside the linters, JUnit
# and the parallel integration phase on two cores.
unit: setup
	SAND_TEST_TIMEOUT_SCALE=4 $(VENV)/bin/pytest -q -m "not integration and not faults" tests
	cd frontend/ui && npm test --silent

# Two phases (decision 0037). First on WORKERS pytest-xdist workers: a module and the clusters
# it starts stay on one worker; each worker that needs the suite's cluster starts its own
# (ports + 300 per worker). Then, with the machine to itself, what measures under load: the
# fault scenarios (clusters restarted under load) and the `quiet` tests (CPU shares, latency
# ratios). --durations: each phase ends with its 15 slowest tests (where the time goes), and
# SAND_TEST_CPU_REPORT with the CPU seconds each part of the machine used (tests/cpu_report.py).
WORKERS ?= 3
integration: setup
	@$(MAKE) --no-print-directory SETUP_DONE=1 integration-parallel
	@$(MAKE) --no-print-directory SETUP_DONE=1 integration-serial

integration-parallel: setup
	SAND_TEST_CPU_REPORT=1 SAND_TEST_STATE=$(TEST_STATE) $(VENV)/bin/pytest -q -m "integration and not faults and not quiet" \
	  -n $(WORKERS) --dist loadgroup --no-loadscope-reorder --durations=15 tests

integration-serial: setup
	SAND_TEST_CPU_REPORT=1 SAND_TEST_STATE=$(TEST_STATE) $(VENV)/bin/pytest -q -m "integration and (faults or quiet) and not soak" \
	  --durations=15 tests

# The linters, JUnit and the Python unit tests run beside the parallel phase of the integration
# tests (decision 0037, amended): each is mostly one process, and the parallel phase leaves
# about a third of the two cores idle while its clusters wait on real time (schedules, fault
# clocks); -O keeps each one's output in one piece. Then the serial phase, with the machine to
# itself. The first to fail fails `make test`.
test: setup
	@$(MAKE) --no-print-directory -j4 -Otarget SETUP_DONE=1 lint java-test unit integration-parallel
	@$(MAKE) --no-print-directory SETUP_DONE=1 integration-serial

# The fault tests alone, each scenario ROUNDS times (default 5); `make test` runs them once.
# They start clusters of several hosts of their own (build/test-state-faults, ports + 5000;
# the replicated one's build/test-state-repl, + 400).
test-faults: setup
	SAND_TEST_CPU_REPORT=1 SAND_FAULT_ROUNDS=$(or $(ROUNDS),5) $(VENV)/bin/pytest -q -s -p no:cacheprovider -m "faults and not soak" tests

# The soak (issue 26): the replicated three-host stack for 30 minutes (SOAK_S seconds) of
# mixed load with a random fault every 2-4 minutes; a table per fault and the services'
# memory at 5 minutes and at the end (build/test-state-soak, ports + 800).
test-soak: setup
	SAND_TEST_CPU_REPORT=1 SAND_SOAK_S=$(or $(SOAK_S),1800) $(VENV)/bin/pytest -q -s -p no:cacheprovider -m soak tests

# The benchmark suite: its peers (Celery, RQ, Ray) and plotting are installed only here,
# so `make test` stays lean. FULL=1 runs the long profile; QUICK=1 only the figures of the path's cost.
BENCH_STAMP := $(VENV)/.bench-installed
$(BENCH_STAMP): deploy/bench-requirements.txt | setup
	$(VENV)/bin/pip install -q -r deploy/bench-requirements.txt
	touch $@

# Temporal's dev server for the FULL profile: the last CLI release that builds from the
# module proxy (about 4 minutes and 4.6 GB of Go caches, once; under build/).
TEMPORAL := build/bin/temporal
$(TEMPORAL):
	GOPATH=$(CURDIR)/build/go GOBIN=$(CURDIR)/build/bin go install github.com/temporalio/cli/cmd/temporal@v1.5.1

bench: setup $(BENCH_STAMP) $(if $(FULL),$(TEMPORAL),)
	$(SAND) up
	$(PY) -m bench $(if $(FULL),--full,) $(if $(QUICK),--quick,)

# The GUI's main pages at 1280x800 into docs/screenshots/, from the running stack (`make run`
# first); deploys the examples it shows when missing.
screenshots: setup
	$(PY) frontend/ui/scripts/screenshots.py

clean:
	-$(SAND) down
	rm -rf build target */target

# Lint, render and check the Helm chart (deploy/helm/check.sh). Its helm is the one on PATH, else
# one `make setup` built into ~/.cache/sand from the Go module proxy (deploy/helm/helm-path.sh).
.PHONY: chart-check
chart-check:
	@bash deploy/helm/check.sh
