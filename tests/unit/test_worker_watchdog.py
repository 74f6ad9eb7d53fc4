"""The worker's hung-statement watchdog (taskforge.worker.heartbeat.Watchdog) keeps working when
every connection of the worker hangs at once, the heartbeat's included: a silent network
partition (tests/chaos/test_partition.py). No database: each connection's statement is a read
on one end of a socket pair that nothing ever answers, as on a connection whose packets are
dropped; closing the connection shuts that socket down, as on a real one."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import psycopg
import pytest

from taskforge.worker.config import WorkerConfig
from taskforge.worker.connection import DbConnection
from taskforge.worker.heartbeat import Heartbeat, Watchdog, stuck_after


class SilentConnection:
    """Stands in for a psycopg connection whose server has gone silent: ``execute`` blocks
    until the socket is shut down (by DbConnection.close), then fails as a lost connection."""

    def __init__(self) -> None:
        self.sock, self.peer = socket.socketpair()
        self.closed = False

    def fileno(self) -> int:
        return self.sock.fileno()

    def execute(self, query: Any, params: Any = None) -> Any:
        if self.sock.recv(1) == b"":
            raise psycopg.OperationalError("server closed the connection unexpectedly")
        raise AssertionError("nothing answers a silent connection")

    def cancel_safe(self, timeout: float) -> None:
        time.sleep(timeout)  # the cancel request goes unanswered too

    def close(self) -> None:
        self.closed = True
        self.sock.close()
        self.peer.close()


def silent_db(name: str, opened: list[SilentConnection]) -> DbConnection:
    db = DbConnection("host=192.0.2.1 dbname=unused", f"taskforge-worker/{name}")

    def connection() -> Any:
        conn = SilentConnection()
        opened.append(conn)
        db._conn = conn  # type: ignore[assignment]
        return conn

    db.connection = connection  # type: ignore[method-assign]
    return db


@pytest.mark.timeout(30)
def test_hung_statements_are_closed_while_the_heartbeat_itself_hangs():
    config = WorkerConfig(lease_seconds=3, heartbeat_seconds=1)
    halt = threading.Event()
    opened: list[SilentConnection] = []
    work_db, heartbeat_db = silent_db("work", opened), silent_db("heartbeat", opened)
    failures: dict[str, list[BaseException]] = {"work": [], "heartbeat": []}
    hung = threading.Event()  # the listener's resubscribe in a worker

    def work() -> None:
        while not halt.is_set():
            try:
                work_db.execute("SELECT 1")
            except psycopg.OperationalError as exc:
                failures["work"].append(exc)

    heartbeat = Heartbeat(config=config, db=heartbeat_db, halt=halt, on_fatal=lambda why: None, logger=work_db.log)
    original = heartbeat_db.execute

    def beat(*args: Any, **kwargs: Any) -> list[Any]:
        try:
            return original(*args, **kwargs)
        except psycopg.OperationalError as exc:
            failures["heartbeat"].append(exc)
            raise

    heartbeat_db.execute = beat  # type: ignore[method-assign]
    watchdog = Watchdog(
        watched=(
            (work_db, stuck_after(config.statement_timeout_seconds)),
            (heartbeat_db, stuck_after(config.heartbeat_statement_timeout_seconds)),
        ),
        halt=halt,
        on_hung=hung.set,
    )
    threads = [threading.Thread(target=t, daemon=True) for t in (work, heartbeat.run, watchdog.run)]
    for thread in threads:
        thread.start()
    try:
        # Both hang on their first statement; the watchdog ends each after statement_timeout x
        # 1.25 + 0.25 s (1.5 s for work, 1.5 s for the heartbeat here), again and again.
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not (len(failures["work"]) >= 2 and failures["heartbeat"]):
            time.sleep(0.05)
    finally:
        halt.set()
        for db in (work_db, heartbeat_db):
            db.close(final=True, wait=0.1)
        for thread in threads:
            thread.join(5)
        for conn in opened:
            conn.close()
    assert len(failures["work"]) >= 2, failures
    assert failures["heartbeat"], "the heartbeat's own hung statement was never closed"
    assert all("closed the connection" in str(exc) for exc in failures["work"] + failures["heartbeat"])
    assert hung.is_set(), "the watchdog did not ask the listener to re-subscribe"


def test_stuck_after_is_statement_timeout_times_1_25_plus_a_quarter_second():
    assert stuck_after(1.0) == 1.5
    assert stuck_after(10.0) == 12.75
