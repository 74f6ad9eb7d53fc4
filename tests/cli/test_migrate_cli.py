"""`taskforge db migrate` / `taskforge db status`: applying, re-running, DSN resolution, failures
as one line, and the wheel shipping db/."""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner

from taskforge import database as tfdb
from taskforge.cli import main

from sqlcore_helpers import catalog_snapshot, compare_snapshots

ROOT = Path(__file__).resolve().parents[2]
NO_ENV_DSN = {"TASKFORGE_DSN": None, "DATABASE_URL": None}


def cli(*args: str, env: dict | None = None):
    """Invoke the click app in-process with TASKFORGE_DSN/DATABASE_URL unset unless env sets them."""
    return CliRunner().invoke(main, list(args), env={**NO_ENV_DSN, **(env or {})}, catch_exceptions=False)


def taskforge_command() -> list[str]:
    """The installed `taskforge` console script of the interpreter running the tests."""
    script = Path(sys.executable).parent / "taskforge"
    if script.exists():
        return [str(script)]
    found = shutil.which("taskforge")
    assert found, "the taskforge console script is not installed (pip install -e .)"
    return [found]


def run_subprocess(*args: str, **env: str) -> subprocess.CompletedProcess:
    """Run the real console script with a clean DSN environment plus env."""
    base = {k: v for k, v in os.environ.items() if k not in ("TASKFORGE_DSN", "DATABASE_URL")}
    return subprocess.run(
        [*taskforge_command(), *args], env={**base, **env}, capture_output=True, text=True, timeout=120
    )


def public_table_rows(dsn: str) -> dict[str, int]:
    """Row counts of the migration bookkeeping tables yoyo keeps outside schema taskforge."""
    with psycopg.connect(dsn, autocommit=True) as c:
        tables = [
            r[0]
            for r in c.execute(
                "SELECT format('%I.%I', schemaname, tablename) FROM pg_tables "
                "WHERE schemaname NOT IN ('pg_catalog', 'information_schema', 'taskforge') ORDER BY 1"
            ).fetchall()
        ]
        return {t: c.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}


def test_migrate_applies_initial_once_and_status_reports_it(fresh_database):
    dsn = fresh_database("taskforge_cli")

    # Pending migrations: exit code 1, so `taskforge db status` can gate a deploy.
    before = cli("db", "status", "--dsn", dsn)
    assert before.exit_code == 1, before.output
    assert before.stdout.splitlines() == ["schema version: (not installed)", "applied: (none)", "pending: 0001_initial"]
    before_json = cli("db", "status", "--dsn", dsn, "--json")
    assert before_json.exit_code == 1
    assert json.loads(before_json.stdout) == {"applied": [], "pending": ["0001_initial"], "schema_version": None}
    shown = cli("db", "status", "--dsn", dsn, "--show-sql")
    assert shown.exit_code == 1
    assert (
        "-- migration 0001_initial" in shown.stdout and "CREATE OR REPLACE FUNCTION taskforge.tf_claim(" in shown.stdout
    )
    shown_json = json.loads(cli("db", "status", "--dsn", dsn, "--json", "--show-sql").stdout)
    assert "CREATE SCHEMA" in shown_json["pending_sql"]["0001_initial"]

    first = cli("db", "migrate", "--dsn", dsn)
    assert first.exit_code == 0, first.output
    assert first.stdout.strip() == "applied: 0001_initial"
    snapshot, bookkeeping = catalog_snapshot(dsn), public_table_rows(dsn)
    assert len(snapshot["functions"]) >= 15 and bookkeeping, (snapshot.keys(), bookkeeping)

    second = cli("db", "migrate", "--dsn", dsn)
    assert second.exit_code == 0, second.output
    assert "nothing to apply" in second.stdout
    third = cli("db", "migrate", "--dsn", dsn, "--json")
    assert third.exit_code == 0
    assert json.loads(third.stdout) == {"applied": []}
    assert compare_snapshots(snapshot, catalog_snapshot(dsn), "after first run", "after re-runs") == ""
    assert public_table_rows(dsn) == bookkeeping

    after = cli("db", "status", "--dsn", dsn)
    assert after.exit_code == 0
    assert after.stdout.splitlines() == ["schema version: 1", "applied: 0001_initial", "pending: (none)"]
    after_json = cli("db", "status", "--dsn", dsn, "--json")
    assert after_json.exit_code == 0
    assert json.loads(after_json.stdout) == {"applied": ["0001_initial"], "pending": [], "schema_version": 1}
    assert cli("db", "status", "--dsn", dsn, "--show-sql").stdout.splitlines()[-1] == "pending: (none)"


def test_migrate_and_status_take_a_multi_host_dsn_as_failover_clients_use(fresh_database):
    """host=a,b port=p1,p2 target_session_attrs=read-write: libpq tries each host in turn; the
    first one here is a closed port, as a failed primary would be."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    dsn = fresh_database("taskforge_cli")
    params = conninfo_to_dict(dsn)
    host = str(params.get("host") or "127.0.0.1")
    port = str(params.get("port") or "5432")
    params.update(host=f"{host},{host}", port=f"1,{port}", target_session_attrs="read-write")
    multi = make_conninfo("", **params)
    result = cli("db", "migrate", "--dsn", multi)
    assert result.exit_code == 0 and "applied: 0001_initial" in result.output, result.output
    status = cli("db", "status", "--dsn", multi)
    assert status.exit_code == 0 and "pending: (none)" in status.output, status.output
    assert tfdb.status(dsn).pending == []


def test_dsn_resolution_order(db_dsn, fresh_database):
    """--dsn, then TASKFORGE_DSN, then DATABASE_URL. A migrated database (schema version 1), an
    empty one (not installed) and a missing one (connection error) tell which was used."""
    migrated, empty = db_dsn, fresh_database("taskforge_cli_empty")
    missing = tfdb.with_dbname(db_dsn, f"taskforge_missing_{secrets.token_hex(4)}")

    def version(args, env):
        result = cli("db", "status", "--json", *args, env=env)
        if result.exit_code not in (0, 1):  # 1: migrations pending (the empty database)
            assert result.exit_code == 4 and "database error" in result.stderr, result.output
            return "error"
        return json.loads(result.stdout)["schema_version"]

    cases = [
        (["--dsn", migrated], {"TASKFORGE_DSN": missing, "DATABASE_URL": missing}, 1),
        (["--dsn", empty], {"TASKFORGE_DSN": migrated, "DATABASE_URL": migrated}, None),
        ([], {"TASKFORGE_DSN": migrated, "DATABASE_URL": missing}, 1),
        ([], {"TASKFORGE_DSN": empty, "DATABASE_URL": migrated}, None),
        ([], {"TASKFORGE_DSN": missing, "DATABASE_URL": migrated}, "error"),
        ([], {"DATABASE_URL": migrated}, 1),
        ([], {"DATABASE_URL": empty}, None),
    ]
    got = [version(args, env) for args, env, _ in cases]
    assert got == [expected for _, _, expected in cases]


def test_resolve_dsn_order(monkeypatch):
    monkeypatch.setenv("TASKFORGE_DSN", "dbname=from_taskforge_dsn")
    monkeypatch.setenv("DATABASE_URL", "postgresql:///from_database_url")
    assert tfdb.resolve_dsn("dbname=explicit") == "dbname=explicit"
    assert tfdb.resolve_dsn() == "dbname=from_taskforge_dsn"
    monkeypatch.delenv("TASKFORGE_DSN")
    assert tfdb.resolve_dsn() == "postgresql:///from_database_url"
    monkeypatch.delenv("DATABASE_URL")
    with pytest.raises(tfdb.DsnMissing):
        tfdb.resolve_dsn()


def _assert_one_line_failure(result: subprocess.CompletedProcess) -> str:
    assert result.returncode != 0
    assert "Traceback" not in result.stderr + result.stdout
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("taskforge: ")
    return lines[0]


@pytest.mark.parametrize("command", [["db", "migrate"], ["db", "status"], ["db", "status", "--json"]])
def test_no_dsn_is_one_clear_line(command):
    line = _assert_one_line_failure(run_subprocess(*command))
    assert "--dsn" in line and "TASKFORGE_DSN" in line and "DATABASE_URL" in line


@pytest.mark.parametrize("command", [["db", "migrate"], ["db", "status"]])
@pytest.mark.parametrize("target", ["refused-port", "missing-database"])
def test_unreachable_dsn_is_one_line(admin_dsn, command, target):
    if target == "refused-port":
        dsn = "host=127.0.0.1 port=1 user=postgres dbname=taskforge connect_timeout=5"
    else:
        dsn = tfdb.with_dbname(admin_dsn, f"taskforge_missing_{secrets.token_hex(4)}")
    via_flag = _assert_one_line_failure(run_subprocess(*command, "--dsn", dsn))
    via_env = _assert_one_line_failure(run_subprocess(*command, TASKFORGE_DSN=dsn))
    for line in (via_flag, via_env):
        assert "database error" in line
        assert ("Connection refused" in line) if target == "refused-port" else ("does not exist" in line)


@pytest.mark.slow
def test_wheel_ships_db(tmp_path):
    out = tmp_path / "wheel"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    (wheel,) = out.glob("taskforge-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        for required in (
            "taskforge/db/functions/tf_claim.sql",
            "taskforge/db/migrations/0001_initial.py",
            "taskforge/db/migrations/frozen/0001_initial.sql",
            "taskforge/db/schema/20_tables.sql",
        ):
            assert required in names, f"{required} is missing from {wheel.name}"
        assert not [n for n in names if n.startswith("taskforge/db/tests/")], "the wheel ships the pgTAP suite"
        # The package index shows the README without links into the source tree (they lead nowhere there).
        (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        description = archive.read(metadata).decode().split("\n\n", 1)[1]
        assert "## Installing the package" in description and "pip install taskforge" in description
        assert "`docs/cli.md`" in description
        relative = re.findall(r"\]\((?!https?://|#)[^)]*\)", description)
        assert relative == [], relative
        for name in ("functions/tf_claim.sql", "migrations/frozen/0001_initial.sql"):
            assert archive.read(f"taskforge/db/{name}") == (ROOT / "db" / name).read_bytes()
        archive.extractall(tmp_path / "site")

    # The packaged copy is what an installed taskforge finds.
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import taskforge, taskforge.dbsource as s; print(taskforge.__file__); print(s.db_dir())",
        ],
        env={**os.environ, "PYTHONPATH": str(tmp_path / "site")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert probe.returncode == 0, probe.stderr
    module_file, db_dir = probe.stdout.splitlines()
    assert Path(module_file).is_relative_to(tmp_path / "site")
    assert Path(db_dir) == tmp_path / "site" / "taskforge" / "db"

    # ... and the demo finds its workload there, not in a checkout.
    probe = subprocess.run(
        [sys.executable, "-c", "import taskforge.demo as d; print(d.default_workload_path())"],
        env={**os.environ, "PYTHONPATH": str(tmp_path / "site")},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert probe.returncode == 0, probe.stderr
    assert Path(probe.stdout.strip()) == tmp_path / "site" / "taskforge" / "examples" / "demo_workload.jsonl"


def test_commands_on_an_unmigrated_database_say_to_migrate(fresh_database):
    empty = fresh_database("taskforge_cli_unmigrated")
    for args in (["list"], ["stats"], ["show", "1"]):
        result = cli(*args, "--dsn", empty)
        assert result.exit_code == 4, (args, result.output)
        assert "run `taskforge db migrate`" in result.stderr and "42P01" in result.stderr, (args, result.stderr)


def test_db_partition_converts_once_and_says_the_ranges(fresh_database):
    dsn = fresh_database("taskforge_cli_partition")
    tfdb.migrate(dsn)
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("SELECT taskforge.tf_submit('noop', queue => 'cli_partition') FROM generate_series(1, 1500)")
    done = run_subprocess("db", "partition", "--dsn", dsn, "--tasks-per-partition", "1000", "--ahead", "1")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "partitioned: 2 ranges, the first with every task so far, then 1000 task ids each",
        "  tasks_p1, attempts_p1: task_id lowest .. 1999",
        "  tasks_p2, attempts_p2: task_id 2000 .. 2999",
    ]
    again = run_subprocess("db", "partition", "--dsn", dsn, "--tasks-per-partition", "1000", "--json")
    assert again.returncode != 0 and "already partitioned" in again.stderr
    refused = cli("db", "partition", "--dsn", dsn, "--tasks-per-partition", "10")
    assert refused.exit_code == 2
    assert refused.output.strip() == "taskforge: --tasks-per-partition: must be between 1000 and 1000000000, got 10"
    # Past the ranges made (no scheduler runs here), a submit says what to do.
    assert run_subprocess("submit", "noop", "--dsn", dsn, "--queue", "cli_partition").returncode == 0
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("SELECT setval('taskforge.tasks_task_id_seq', 2999)")
    past = run_subprocess("submit", "noop", "--dsn", dsn, "--queue", "cli_partition")
    assert past.returncode == 4
    assert "23514" in past.stderr and "run a scheduler or tf_maintain" in past.stderr
