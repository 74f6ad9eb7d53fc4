"""The worker's finalize path in-process, with a connection that drops after the commit."""

from __future__ import annotations

import logging
import threading

import psycopg

import taskforge.synthetic  # noqa: F401  (the worker below runs the synthetic task types)
from taskforge import sql
from taskforge.worker import Worker, WorkerConfig

from itest_support import attempts, submit, task, wait_for


class DropsAfterFinalize:
    """Wraps the worker's work connection: the first call that finalizes something commits,
    then the connection 'drops' before the answer arrives (the caller sees a connection error)."""

    def __init__(self, conn: psycopg.Connection, counter: dict) -> None:
        self._conn = conn
        self._counter = counter

    def __getattr__(self, name):
        return getattr(self._conn, name)

    def execute(self, query, params=None):
        cur = self._conn.execute(query, params)
        if "tf_finalize_and_claim" in query and params and params.get("task_ids") and not self._counter["dropped"]:
            self._counter["dropped"] += 1
            self._conn.close()
            raise psycopg.OperationalError("server closed the connection unexpectedly (simulated)")
        return cur


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_finalize_repeated_after_a_lost_reply_is_safe(db_dsn, conn, queue, monkeypatch):
    logger = logging.getLogger(f"taskforge.test.{queue}")
    logger.setLevel(logging.DEBUG)
    records = Records()
    logger.addHandler(records)
    counter = {"dropped": 0}
    real_connect = psycopg.connect

    def connect(*args, **kwargs):
        c = real_connect(*args, **kwargs)
        return DropsAfterFinalize(c, counter) if kwargs.get("application_name", "").endswith("/work") else c

    monkeypatch.setattr(psycopg, "connect", connect)
    worker = Worker(db_dsn, WorkerConfig(queues=(queue,), lease_seconds=30), logger=logger)
    worker.start()
    worker.slots.start()
    dispatcher = threading.Thread(target=worker.dispatcher.run, daemon=True)
    try:
        task_id = submit(conn, "echo", {"x": 1}, queue=queue)
        dispatcher.start()
        wait_for(
            lambda: task(conn, task_id)["state"] == "SUCCEEDED" and worker.busy == 0,
            30,
            message="the echo task to be finalized",
        )
        assert counter["dropped"] == 1
        # The first call committed; the repeat (same worker, same attempt) changed nothing.
        assert [(a["state"], a["result"]) for a in attempts(conn, task_id)] == [("SUCCEEDED", {"x": 1})]
        assert any("finalize and claim failed" in line for line in records.lines), records.lines
        assert any(
            f"finalize of task {task_id} attempt 1 was sent again after its connection broke" in line
            and "not_running" in line
            and "most likely" not in line
            for line in records.lines
        ), records.lines
    finally:
        worker.request_stop()
        dispatcher.join(10)
        worker.slots.stop()
        worker.work_db.execute(sql.DEREGISTER_WORKER, {"worker_id": worker.worker_id})
        worker.work_db.close(final=True)
        logger.removeHandler(records)


class LosesFinalizesUntil:
    """Wraps the worker's work connection: every call that finalizes something 'loses' its
    connection before it reaches the database (nothing is applied; the caller sees the same
    connection error as a mid-call break), until ``release`` is set."""

    def __init__(self, conn: psycopg.Connection, release: threading.Event, counter: dict) -> None:
        self._conn = conn
        self._release = release
        self._counter = counter

    def __getattr__(self, name):
        return getattr(self._conn, name)

    def execute(self, query, params=None):
        if "tf_finalize_and_claim" in query and params and params.get("task_ids") and not self._release.is_set():
            self._counter["lost"] += 1
            self._conn.close()
            raise psycopg.OperationalError("server closed the connection unexpectedly (simulated)")
        return self._conn.execute(query, params)


def test_a_lost_finalize_that_was_not_applied_is_not_logged_as_applied(db_dsn, conn, queue, monkeypatch):
    """Issue 10, item 7: the finalize of a succeeded attempt is lost until its lease has expired
    and tf_recover has taken the task back; the resend is refused not_running. The task is not
    SUCCEEDED, so the lost send cannot have been applied, and the log must not suggest it was."""
    logger = logging.getLogger(f"taskforge.test.lost.{queue}")
    logger.setLevel(logging.DEBUG)
    records = Records()
    logger.addHandler(records)
    release, counter = threading.Event(), {"lost": 0}
    real_connect = psycopg.connect

    def connect(*args, **kwargs):
        c = real_connect(*args, **kwargs)
        return LosesFinalizesUntil(c, release, counter) if kwargs.get("application_name", "").endswith("/work") else c

    monkeypatch.setattr(psycopg, "connect", connect)
    # No renewer runs here (only the dispatcher and the slots): the lease expires after 2 s.
    worker = Worker(db_dsn, WorkerConfig(queues=(queue,), lease_seconds=2), logger=logger)
    worker.start()
    worker.slots.start()
    dispatcher = threading.Thread(target=worker.dispatcher.run, daemon=True)
    try:
        task_id = submit(conn, "echo", {"x": 1}, queue=queue)
        dispatcher.start()
        wait_for(lambda: counter["lost"] >= 1, 30, message="the first finalize to be lost")

        def recovered() -> bool:
            # tf_recover's count covers every task of the shared test database (other tests
            # leave expired leases behind): look at this task's first attempt instead.
            conn.execute("SELECT * FROM taskforge.tf_recover()").fetchall()
            return [a["state"] for a in attempts(conn, task_id)][:1] == ["ABANDONED"]

        wait_for(recovered, 30, interval=0.2, message="the expired lease to be recovered")
        release.set()
        wait_for(lambda: task(conn, task_id)["state"] == "SUCCEEDED", 30, message="attempt 2 to succeed")
        assert [a["state"] for a in attempts(conn, task_id)] == ["ABANDONED", "SUCCEEDED"]
        refused = [line for line in records.lines if f"finalize of task {task_id} attempt 1 was sent again" in line]
        assert len(refused) == 1, records.lines
        assert "the lost send was not applied" in refused[0], refused[0]
        assert not any("most likely" in line or "may have been applied" in line for line in records.lines)
    finally:
        release.set()
        worker.request_stop()
        dispatcher.join(10)
        worker.slots.stop()
        worker.work_db.execute(sql.DEREGISTER_WORKER, {"worker_id": worker.worker_id})
        worker.work_db.close(final=True)
        logger.removeHandler(records)


def test_a_worker_whose_row_was_pruned_says_so_when_it_stops(db_dsn, conn, queue):
    """tf_prune_workers deleted the row of a worker that went silent; when that worker stops,
    deregistering is refused TF404 and the log says the row is gone, not that it shows stale."""
    logger = logging.getLogger(f"taskforge.test.pruned.{queue}")
    logger.setLevel(logging.DEBUG)
    records = Records()
    logger.addHandler(records)
    worker = Worker(db_dsn, WorkerConfig(queues=(queue,)), logger=logger)
    try:
        worker.start()
        with conn.transaction():  # silent for an hour: stale, and older than the retention below
            conn.execute("SET LOCAL ROLE taskforge_owner")
            conn.execute(
                "UPDATE taskforge.workers SET started_at = started_at - interval '1 hour', "
                "last_heartbeat_at = last_heartbeat_at - interval '1 hour' WHERE worker_id = %s",
                (worker.worker_id,),
            )
        pruned = conn.execute("SELECT workers FROM taskforge.tf_prune_workers(older_than_seconds => 60)").fetchone()
        assert pruned is not None and pruned[0] >= 1
        gone = conn.execute("SELECT count(*) FROM taskforge.tf_workers WHERE worker_id = %s", (worker.worker_id,))
        assert gone.fetchone() == (0,)
        assert worker._clean_exit() == 0
    finally:
        worker.work_db.close(final=True)
        logger.removeHandler(records)
    lines = [line for line in records.lines if "deregister" in line]
    assert len(lines) == 1, records.lines
    assert f"worker {worker.worker_id} was not deregistered: its row no longer exists" in lines[0], lines
    assert "stale" not in lines[0], lines


def test_the_array_literals_the_worker_sends_arrive_unchanged(conn):
    """taskforge.worker.rows: every array parameter of the worker goes as one literal string."""
    import json

    from taskforge.worker.rows import int_array, text_array

    texts = [
        json.dumps({"message": 'quote " backslash \\ brace } comma , NULL null', "nested": ["{", "}"]}),
        json.dumps("tab\there\nnewline ünïcödé \u2028"),
        None,
        "null",
        "",
    ]
    jsons = texts[:2]
    row = conn.execute(
        "SELECT %(texts)s::text[], %(jsons)s::text[]::jsonb[], %(ids)s::bigint[]",
        {"texts": text_array(texts), "jsons": text_array(jsons), "ids": int_array([1, 2**62])},
    ).fetchone()
    assert row[0] == texts
    assert row[1] == [json.loads(t) for t in jsons]
    assert row[2] == [1, 2**62]
