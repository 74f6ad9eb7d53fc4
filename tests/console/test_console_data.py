"""The console benchmark's data set (taskforge.benchmarks.console_data) at a small size: the
counts it promises, no broken invariant, an hour of per-minute throughput, and a database that
goes on working (new task ids after the generated ones)."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from taskforge import client, database as tfdb
from taskforge.benchmarks.console_data import fill


def test_fill_writes_a_valid_history(fresh_database: Any) -> None:
    dsn = fresh_database("taskforge_console_data")
    tfdb.migrate(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        data = fill(conn, finished=4000, queued=300, history_seconds=3600, workers=5, stale_workers=2)
        assert data.tasks_by_state["QUEUED"] == 300
        assert data.tasks_by_state["RUNNING"] == 3
        assert sum(data.tasks_by_state[s] for s in ("SUCCEEDED", "FAILED", "CANCELLED")) == 4000
        assert data.tasks_by_state["FAILED"] == sum(1 for i in range(1, 4001) if i % 19 != 10 and i % 47 == 0)
        assert client.invariant_violations(conn) == []
        attempts = dict(conn.execute("SELECT state, count(*) FROM taskforge.attempts GROUP BY state").fetchall())
        assert attempts["ABANDONED"] == sum(1 for i in range(1, 4001) if i % 190 == 10)
        lags = conn.execute(
            "SELECT min(recovery_lag_seconds), max(recovery_lag_seconds) FROM taskforge.tf_attempts"
            " WHERE state = 'ABANDONED'"
        ).fetchone()
        assert lags == pytest.approx((1.5, 1.5))
        liveness = {w.liveness for w in client.workers(conn)}
        assert liveness == {"alive", "stale"}
        minutes = client.throughput_per_minute(conn)
        assert len({r.minute for r in minutes}) >= 59  # created over the hour, up to 40 s ago
        assert {r.queue for r in minutes} == {
            "default",
            "emails",
            "reports",
            "billing",
            "images",
            "search",
            "webhooks",
            "exports",
        }
        new = client.submit(conn, "noop")
        assert new.task_id == data.total_tasks + 1


def test_fill_refuses_nonsense_sizes(fresh_database: Any) -> None:
    dsn = fresh_database("taskforge_console_data")
    tfdb.migrate(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        with pytest.raises(ValueError, match="history_seconds"):
            fill(conn, finished=10, queued=1, history_seconds=60)
        with pytest.raises(ValueError, match="stale_workers"):
            fill(conn, finished=10, queued=1, workers=2, stale_workers=2)
