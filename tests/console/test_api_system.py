"""Queues (pause, resume), workers, stats, /healthz, /metrics, and reads cut short by the
console's statement_timeout."""

from __future__ import annotations

import re
import threading
import time
from typing import Any

import psycopg
from psycopg.conninfo import make_conninfo

from taskforge_console.db import CutShort
from taskforge_console.state import console

from console_support import BEARER, TOKEN
from sqlcore_helpers import claim, finalize, recover, register_worker, submit


def _queue_row(api: Any, queue: str) -> dict[str, Any]:
    rows = [q for q in api.get("/api/queues").get_json()["queues"] if q["queue"] == queue]
    assert len(rows) == 1, rows
    return rows[0]


def test_queues_list_counts_and_pause_resume(api: Any, admin: Any, queue: str) -> None:
    for _ in range(2):
        submit(admin, queue)
    finished, _, _ = submit(admin, queue)
    admin.execute("SELECT taskforge.tf_cancel(task_id => %s)", (finished,))
    row = _queue_row(api, queue)
    assert (row["QUEUED"], row["due"], row["RUNNING"], row["RETRYING"], row["finished_cancelled"]) == (2, 2, 0, 0, 1)
    assert row["paused"] is False and row["oldest_due_age_seconds"] >= 0

    paused = api.post(f"/api/queues/{queue}/pause")
    assert paused.status_code == 200
    assert paused.get_json() == {"queue": queue, "paused": True, "changed": True}
    assert api.post(f"/api/queues/{queue}/pause").get_json()["changed"] is False
    assert _queue_row(api, queue)["paused"] is True
    # A paused queue is skipped by claims (the database's rule, seen through the console).
    worker = register_worker(admin, queues=[queue])
    assert claim(admin, worker, queues=[queue]) == []

    resumed = api.post(f"/api/queues/{queue}/resume")
    assert resumed.get_json() == {"queue": queue, "paused": False, "changed": True}
    assert _queue_row(api, queue)["paused"] is False
    (claimed,) = claim(admin, worker, queues=[queue])
    finalize(admin, claimed[0], worker, claimed[1])


def test_pause_refuses_a_malformed_queue_name(api: Any) -> None:
    response = api.post("/api/queues/bad%20name/pause")
    assert response.status_code == 400
    assert response.get_json()["field"] == "queue"


def test_workers_and_stats(api: Any, admin: Any, queue: str) -> None:
    worker = register_worker(admin, name=f"w-{queue}", queues=[queue])
    task_id, _, _ = submit(admin, queue)
    (row,) = claim(admin, worker, queues=[queue])
    workers = api.get("/api/workers").get_json()["workers"]
    mine = [w for w in workers if w["name"] == f"w-{queue}"]
    assert len(mine) == 1
    assert mine[0]["liveness"] == "alive" and mine[0]["running_tasks"] == 1 and mine[0]["queues"] == [queue]
    finalize(admin, task_id, worker, row[1])
    admin.execute("SELECT taskforge.tf_deregister_worker(worker_id => %s)", (worker,))
    assert not [w for w in api.get("/api/workers").get_json()["workers"] if w["name"] == f"w-{queue}"]
    stopped = api.get("/api/workers?include_stopped=true").get_json()["workers"]
    assert [w["liveness"] for w in stopped if w["name"] == f"w-{queue}"] == ["stopped"]

    stats = api.get("/api/stats").get_json()
    assert set(stats) == {"queues", "workers", "per_minute"}
    assert any(q["queue"] == queue and q["finished_succeeded"] == 1 for q in stats["queues"])
    assert stats["workers"]["stopped"] >= 1
    assert sum(m["attempts_succeeded"] for m in stats["per_minute"] if m["queue"] == queue) == 1


def test_healthz_reports_an_unreachable_database(make_app: Any, db_dsn: str) -> None:
    app = make_app(dsn=make_conninfo(db_dsn, dbname="taskforge_no_such_database"))
    console(app).db.pool.timeout = 1.0
    response = app.test_client().get("/healthz")
    assert response.status_code == 503
    assert response.get_json() == {
        "status": "unavailable",
        "database": False,
        "schema_version": None,
        "read_only": False,
    }
    api = app.test_client().get("/api/tasks")
    assert api.status_code == 503 and api.get_json()["code"] == "database_unavailable"


def _samples(text: str, name: str) -> dict[str, float]:
    found = {}
    for line in text.splitlines():
        match = re.match(rf"^{name}(\{{[^}}]*\}})? (\S+)$", line)
        if match:
            found[match.group(1) or ""] = float(match.group(2))
    return found


def test_metrics_from_the_views(api: Any, admin: Any, queue: str) -> None:
    worker = register_worker(admin, queues=[queue])
    submit(admin, queue)
    submit(admin, queue)
    claim(admin, worker, queues=[queue], lease_seconds=0.2, max_tasks=1)
    time.sleep(0.3)
    recover(admin)  # attempt 1 ABANDONED, with a recovery lag
    rows = claim(admin, worker, queues=[queue], max_tasks=2)
    for row in rows:
        finalize(admin, row[0], worker, row[1], "succeeded")
    submit(admin, queue)  # one left QUEUED
    api.post(f"/api/queues/{queue}/pause")

    response = api.get("/metrics")
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    text = response.get_data(as_text=True)
    label = f'queue="{queue}"'
    assert _samples(text, "taskforge_tasks")[f'{{{label},state="QUEUED"}}'] == 1
    assert _samples(text, "taskforge_tasks_due")[f"{{{label}}}"] == 1
    assert _samples(text, "taskforge_tasks_finished")[f'{{{label},state="SUCCEEDED"}}'] == 2
    assert _samples(text, "taskforge_queue_paused")[f"{{{label}}}"] == 1
    assert _samples(text, "taskforge_queue_oldest_due_age_seconds")[f"{{{label}}}"] >= 0
    attempts = _samples(text, "taskforge_attempts_finished")
    assert attempts[f'{{outcome="succeeded",{label}}}'] == 2
    assert attempts[f'{{outcome="lease_expired",{label}}}'] == 1
    lag = _samples(text, "taskforge_attempt_recovery_lag_seconds_bucket")
    assert lag[f'{{le="+Inf",{label}}}'] == 1
    assert _samples(text, "taskforge_attempt_recovery_lag_seconds_gcount")[f"{{{label}}}"] == 1
    assert _samples(text, "taskforge_workers")['{liveness="alive"}'] >= 1
    assert _samples(text, "taskforge_console_scrape_cut_short")[""] == 0
    api.post(f"/api/queues/{queue}/resume")


def test_metrics_show_dead_tuples_table_sizes_and_the_oldest_snapshot(api: Any, admin: Any, db_dsn: str) -> None:
    """What vacuum sees: a snapshot held elsewhere shows as the oldest xmin's age, and the rows
    of the tables as live and dead tuples (the server's statistics, flushed at commit)."""
    admin.execute("SELECT taskforge.tf_submit('noop', queue => 'metrics_vacuum')")
    holder = psycopg.connect(db_dsn)
    try:
        holder.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        holder.execute("SELECT count(*) FROM taskforge.tasks").fetchone()  # takes the snapshot
        for _ in range(3):  # transactions that make the held snapshot older
            admin.execute("SELECT taskforge.tf_submit('noop', queue => 'metrics_vacuum')")
        time.sleep(0.6)  # statistics reach the shared counters within PGSTAT_MIN_INTERVAL (a second)
        text = api.get("/metrics").get_data(as_text=True)
        assert _samples(text, "taskforge_oldest_xmin_age_transactions")[""] >= 3
        # The holder is another role: without pg_read_all_stats its transaction start is hidden.
        assert _samples(text, "taskforge_oldest_snapshot_held_seconds")[""] >= 0
        assert _samples(text, "taskforge_table_size_bytes")['{table="tasks"}'] > 0
        assert _samples(text, "taskforge_table_index_size_bytes")['{table="tasks"}'] > 0
        assert '{table="attempts"}' in _samples(text, "taskforge_table_dead_tuples")
        assert '{table="tasks"}' in _samples(text, "taskforge_table_live_tuples")
    finally:
        holder.rollback()
        holder.close()
    released = api.get("/metrics").get_data(as_text=True)
    assert _samples(released, "taskforge_oldest_xmin_age_transactions")[""] < 3


def _hold_lock(dsn: str, ready: threading.Event, release: threading.Event) -> None:
    with psycopg.connect(dsn) as conn:
        conn.execute("LOCK TABLE taskforge.tasks IN ACCESS EXCLUSIVE MODE")
        ready.set()
        release.wait(10)
        conn.rollback()


def test_a_read_over_the_limit_is_cut_short(make_app: Any, db_dsn: str) -> None:
    app = make_app(token=TOKEN, statement_timeout_ms=300)
    seen: list[Any] = []

    @app.get("/test-banner")
    def banner_page() -> Any:
        from flask import render_template

        seen.append(
            console().db.read_or(
                "the <script>alert(1)</script> read",
                lambda conn: conn.execute("SELECT count(*) FROM taskforge.tf_tasks").fetchone(),
                None,
            )
        )
        return render_template("error.html", title="t", message="m")

    ready, release = threading.Event(), threading.Event()
    holder = threading.Thread(target=_hold_lock, args=(db_dsn, ready, release))
    holder.start()
    try:
        assert ready.wait(10)
        client = app.test_client()
        started = time.monotonic()
        response = client.get("/api/tasks", headers=BEARER)
        assert response.status_code == 503
        assert response.get_json()["code"] == "cut_short"
        assert time.monotonic() - started < 5
        metrics = client.get("/metrics", headers=BEARER).get_data(as_text=True)
        assert "taskforge_console_scrape_cut_short 1.0" in metrics
        page = client.get("/test-banner", headers=BEARER).get_data(as_text=True)
        assert "the &lt;script&gt;alert(1)&lt;/script&gt; read" in page and "cut short" in page
        assert "<script>alert" not in page  # the banner escapes what it names
        assert seen == [None]
    finally:
        release.set()
        holder.join()
    assert app.test_client().get("/api/tasks", headers=BEARER).status_code == 200


def test_cut_short_names_the_read() -> None:
    exc = CutShort("task list", 2000)
    assert str(exc) == "task list: cut short by statement_timeout after 2000 ms"
