# TaskForge developer commands. `make test` and `make demo` work on a fresh machine.
SHELL  := /bin/bash
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: test test-partitioned test-without-server chaos ha ha-short patroni audit demo install lint fmt pgtap chromium pgbouncer pg-cron pg-prove freeze clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	@# Python 3.11's venv seeds setuptools 65.5.0 (known vulnerabilities); nothing here needs it (the
	@# build backend is hatchling, builds are isolated), so it goes, as venvs of Python 3.12+ lack it.
	$(BIN)/python -m pip uninstall -q -y setuptools
	$(BIN)/python -m pip install -q -e '.[dev]'
	@touch $(STAMP)

install: $(STAMP)

pgtap:
	@scripts/ensure-pgtap.sh

# PgBouncer for the transaction-pooling tests (tests/processes/test_pgbouncer.py).
pgbouncer:
	@scripts/ensure-pgbouncer.sh

# pg_cron for the in-database maintenance test (tests/processes/test_maintain_pg_cron.py).
pg-cron:
	@scripts/ensure-pg-cron.sh

# Debian's Chromium for the console's browser test (tests/console/test_browser.py).
chromium:
	@scripts/ensure-chromium.sh

# Linters, as CI runs them before the tests: ruff (lint and format check) over all Python, mypy
# --strict over the taskforge package, sqlfluff over db/ (settings: pyproject.toml, .sqlfluff).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	PYTHONWARNINGS=ignore $(BIN)/sqlfluff lint db --processes 2

# Rewrite what the linters can fix. After a change under db/functions or db/schema: make freeze.
fmt: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .
	PYTHONWARNINGS=ignore $(BIN)/sqlfluff fix db --processes 2

# The whole suite: pgTAP files (db/tests) and Python tests (tests/) against a throwaway database.
# The whole suite, then the function suites again on the partitioned history
# (TASKFORGE_TEST_LAYOUT=partitioned, conftest.py: the session's database converted by
# tf_partition_history; docs/operations.md, "Partitioned history"): the pgTAP files, tests/sql and
# the worker and scheduler processes on the session's database (the benchmark, demo and outage
# tests make databases of their own), the default layout's catalog and row-wise retention left out.
PARTITIONED_TESTS := db/tests tests/sql $(addprefix tests/processes/,test_worker_processes.py \
	test_scheduler_and_startup.py test_scheduler_bad_rows.py test_periodic_schedulers.py test_workflows.py \
	test_flow_control_processes.py test_deadlines.py test_worker_prefetch_processes.py test_worker_async.py)
test: $(STAMP) pgtap chromium pgbouncer pg-cron
	$(BIN)/python -m pytest $(PYTEST_ARGS)
	TASKFORGE_TEST_LAYOUT=partitioned $(BIN)/python -m pytest $(PARTITIONED_TESTS)

test-partitioned: $(STAMP) pgtap pg-cron
	TASKFORGE_TEST_LAYOUT=partitioned $(BIN)/python -m pytest $(PARTITIONED_TESTS) $(PYTEST_ARGS)

# A smoke subset (the pgTAP files of tf_claim, one concurrency test, one worker-process test) as on
# a machine where no PostgreSQL answers: the local server is hidden (TASKFORGE_TEST_LOCAL_DSN at a
# closed port), so the suite starts its own, through testcontainers when Docker answers, else the
# embedded PostgreSQL (tests/helpers/suite_server.py). Fails unless that is the server it used.
# It loads pgTAP from the packaged SQL script, so it needs the pgtap target first on a fresh machine.
SMOKE_TESTS := db/tests/tf_claim \
	"tests/sql/test_concurrency.py::test_parallel_claimers_never_share_a_task" \
	tests/processes/test_worker_processes.py::test_sigkill_mid_task_is_recovered_after_the_lease_and_succeeds_on_attempt_2
test-without-server: $(STAMP) pgtap
	@log=$$(mktemp); \
	env -u TASKFORGE_TEST_DSN -u PGHOST -u PGPORT \
	    TASKFORGE_TEST_LOCAL_DSN="host=127.0.0.1 port=1 user=postgres dbname=postgres" \
	    $(BIN)/python -m pytest -p no:cacheprovider $(SMOKE_TESTS) 2>&1 | tee "$$log"; \
	status=$${PIPESTATUS[0]}; \
	grep -Eq '^test server: (the embedded PostgreSQL|a postgres)' "$$log" \
	    || { echo "test-without-server: the suite did not start a server of its own" >&2; status=1; }; \
	rm -f "$$log"; exit $$status

# Faults injected into real workers and schedulers on a private PostgreSQL server the run starts
# itself (never the shared one): restarts, crashes, killed backends, SIGKILL/SIGSTOP, a read-only
# database, a silent network partition (network namespaces of its own: ip, iptables, root; the
# partition test skips, saying why, without them). Not part of `make test`; a few minutes.
# Figures: docs/chaos.md, .taskforge/chaos/report.json.
chaos: $(STAMP)
	@scripts/ensure-netns-tools.sh || echo "chaos: going on; tests/chaos/test_partition.py will skip" >&2
	$(BIN)/python -m pytest -m chaos tests/chaos $(PYTEST_ARGS)

# Etcd and Patroni for the failover rig (tests/ha).
patroni:
	@scripts/ensure-patroni.sh

# Failover under load: etcd and two Patroni nodes of the run's own on loopback ports (never the
# shared server), a submitter, a worker, a scheduler and the console on one multi-host DSN; the
# primary node is killed (SIGKILL) in synchronous mode (nothing acknowledged may be lost) and in
# asynchronous mode with replication lag (what is lost is measured). Not part of `make test`;
# a few minutes. ha-short is the form CI runs (synchronous mode, one failover, under a minute).
# Figures: docs/operations.md ("Failover"), .taskforge/ha/report.json.
ha: $(STAMP) patroni
	$(BIN)/python -m pytest -m ha tests/ha $(PYTEST_ARGS)

ha-short: $(STAMP) patroni
	TASKFORGE_HA_SHORT=1 $(BIN)/python -m pytest -m ha tests/ha $(PYTEST_ARGS)

# Known vulnerabilities in the installed dependencies (pip-audit, else PyPI's project JSON, which
# knows latest releases only; needs the network). Fails on a vulnerability and when a runtime
# dependency cannot be audited; TASKFORGE_AUDIT=skip skips it on purpose. See scripts/audit-deps.py.
audit: $(STAMP)
	$(BIN)/python scripts/audit-deps.py

# The main job end to end (embedded PostgreSQL unless TASKFORGE_DSN is set).
demo: $(STAMP)
	$(BIN)/taskforge demo $(DEMO_ARGS)

# For DBAs: the pgTAP suite through pg_prove against a database you name (it must be migrated
# and have CREATE EXTENSION pgtap). Example: make pg-prove DB=taskforge_dev
pg-prove: pgtap
	pg_prove -d $(DB) --ext .sql -r db/tests

# Re-freeze the initial migration from db/ (only while 0001 is unreleased).
freeze: $(STAMP)
	$(BIN)/python -m taskforge.dbsource freeze 0001_initial \
	  --description "TaskForge schema version 1: tables, functions, views, roles, built-in task types." \
	  --rollback-sql "DROP SCHEMA taskforge CASCADE"

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
