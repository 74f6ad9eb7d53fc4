"""The worker's finalize path in-process, with a connection that drops after the commit."""

from __future__ import annotations

import logging
import time

import psycopg
import pytest

from itest_support import attempts, submit, task
from taskforge import sql
from taskforge.worker import Worker, WorkerConfig, _Running
from taskforge.handlers import TaskContext

pytestmark = pytest.mark.integration


class DropsAfterFinalize:
    """Wraps a connection: the first tf_finalize commits, then the connection 'drops' before
    the answer arrives (the caller sees a connection error)."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self._conn = conn
        self.dropped = 0

    @property
    def closed(self) -> bool:
        return self._conn.closed

    def close(self) -> None:
        self._conn.close()

    def execute(self, query, params=None):
        cur = self._conn.execute(query, params)
        if "tf_finalize" in query and not self.dropped:
            self.dropped += 1
            self._conn.close()
            raise psycopg.OperationalError("server closed the connection unexpectedly (simulated)")
        return cur


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_finalize_repeated_after_a_lost_reply_is_safe(db_dsn, conn, queue):
    logger = logging.getLogger(f"taskforge.test.{queue}")
    logger.setLevel(logging.DEBUG)
    records = Records()
    logger.addHandler(records)
    worker = Worker(db_dsn, WorkerConfig(queues=(queue,), lease_seconds=30), logger=logger)
    worker._start()
    try:
        task_id = submit(conn, "echo", {"x": 1}, queue=queue)
        rows = worker._work.execute(sql.CLAIM, {"worker_id": worker.worker_id, "queues": [queue],
                                                "lease_seconds": 30, "max_tasks": 1, "task_types": None})
        (tid, attempt_number, task_type, payload, q, priority, max_attempts, _lease), = rows
        assert tid == task_id
        wrapper = DropsAfterFinalize(worker._work.connection())
        worker._work._lanes[0].db._conn = wrapper  # the first lane: statements go there first
        ctx = TaskContext(task_id=tid, attempt_number=attempt_number, task_type=task_type, queue=q,
                          priority=priority, max_attempts=max_attempts, worker_id=worker.worker_id)
        worker._execute(_Running(ctx=ctx, payload=payload, claimed_at=time.monotonic(),
                                 next_renew=time.monotonic() + 10))
        assert wrapper.dropped == 1
        # The first call committed; the repeat (same worker, same attempt) changed nothing.
        assert [(a["state"], a["result"]) for a in attempts(conn, task_id)] == [("SUCCEEDED", {"x": 1})]
        assert task(conn, task_id)["state"] == "SUCCEEDED"
        assert any("finalize failed" in line for line in records.lines), records.lines
        assert any(f"finalize of task {task_id} attempt 1 was repeated after a lost connection" in line
                   and "not_running" in line for line in records.lines), records.lines
    finally:
        worker._work.execute(sql.DEREGISTER_WORKER, {"worker_id": worker.worker_id})
        worker._work.close()
        logger.removeHandler(records)
