"""Drift: the frozen migrations and the SQL source tree (db/schema + db/functions) must build the
same catalog. A database migrated with taskforge.database.migrate is compared with one built from
taskforge.dbsource.build_sql(); any difference fails with a diff.
"""

from __future__ import annotations

import psycopg
import pytest

from taskforge import database as tfdb, dbsource

from sqlcore_helpers import catalog_snapshot, compare_snapshots, execute_script


def build_from_source(dsn: str) -> None:
    """Build the schema from db/ the way a DBA would: the whole build script, one execute."""
    execute_script(dsn, dbsource.build_sql())


def test_migrations_match_source(fresh_database):
    migrated, built = fresh_database("taskforge_drift_mig"), fresh_database("taskforge_drift_src")
    assert tfdb.migrate(migrated) == ["0001_initial"]
    build_from_source(built)
    snap_migrated, snap_built = catalog_snapshot(migrated), catalog_snapshot(built)

    # The snapshot really describes the schema (a comparison of two empty snapshots proves nothing).
    def names(section: str) -> set[str]:
        return {dict(row)["name"] for row in snap_built[section]}

    assert {"tf_submit", "tf_claim", "tf_finalize", "tf_recover", "tf_promote", "tf_prune"} <= names("functions")
    assert {"tf_tasks", "tf_invariant_violations"} <= names("views")
    assert "tasks_claim_order_idx" in names("indexes")
    assert len(snap_built["task_types"]) >= 6

    diff = compare_snapshots(snap_migrated, snap_built, "migrations", "db-source")
    assert diff == "", (
        "the frozen migrations differ from db/ (run `make freeze` while 0001 is "
        "unreleased, else write a new migration):\n" + diff
    )


def _redefine_schema_version(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        definition = c.execute("SELECT pg_get_functiondef('taskforge.tf_schema_version()'::regprocedure)").fetchone()[0]
        assert "RETURN 1;" in definition
        c.execute(definition.replace("RETURN 1;", "RETURN 1;  -- changed by hand").encode())


def _grant_extra(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("GRANT EXECUTE ON FUNCTION taskforge.tf_promote(numeric) TO taskforge_client")


def _comment(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("COMMENT ON TABLE taskforge.workers IS 'edited by hand'")


def _index(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("DROP INDEX taskforge.tasks_retry_due_idx")
        c.execute(
            "CREATE INDEX tasks_retry_due_idx ON taskforge.tasks (scheduled_at, task_id) WHERE state = 'RETRYING'"
        )


def _task_type(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("SELECT taskforge.tf_register_task_type('sleep', backoff_base_seconds => 3)")


@pytest.mark.parametrize(
    "change, expected",
    [
        (_redefine_schema_version, ["[tf_schema_version/", "changed by hand"]),
        (_grant_extra, ["[tf_promote/", "taskforge_client=X/taskforge_owner"]),
        (_comment, ["[workers/", "edited by hand"]),
        (_index, ["[tasks/tasks_retry_due_idx]", "scheduled_at, task_id"]),
        (_task_type, ["[sleep/", "backoff_base_seconds: 3.0"]),
    ],
    ids=["function-body", "grant", "comment", "index", "task-type-row"],
)
def test_drift_comparison_reports_a_change(fresh_database, change, expected):
    """The comparison used above is not blind: one hand-made change shows up in its diff."""
    first, second = fresh_database("taskforge_drift_a"), fresh_database("taskforge_drift_b")
    build_from_source(first)
    build_from_source(second)
    assert compare_snapshots(catalog_snapshot(first), catalog_snapshot(second)) == ""

    change(second)
    diff = compare_snapshots(catalog_snapshot(first), catalog_snapshot(second), "source", "edited")
    assert diff != ""
    for fragment in expected:
        assert fragment in diff, diff
