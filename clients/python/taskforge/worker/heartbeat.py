"""The worker's liveness and wake-up threads: the heartbeat (with housekeeping) and the listener.

* :class:`Heartbeat` sends ``tf_heartbeat`` every ``heartbeat_seconds`` on its own connection,
  so busy slots or a slow claim never make a live worker look stale; between beats it closes
  the connection of any statement hung well past its statement_timeout (a server that no
  longer answers), so that statement fails and is retried on a new connection.
* :class:`Listener` holds ``LISTEN taskforge`` on a connection of its own and wakes the
  dispatcher when a notification names one of the worker's queues; after any error it
  re-subscribes on a new connection (with backoff) and wakes the dispatcher, since
  notifications may have been missed meanwhile (the dispatcher also polls).

Times are monotonic seconds.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import psycopg

from .. import sql
from .config import APPLICATION_NAME, HOUSEKEEPING_SECONDS, WorkerConfig
from .connection import CONNECTION_GONE, Backoff, DbConnection, close_quietly, is_transient_error, one_line

__all__ = ["Heartbeat", "Listener"]


class Heartbeat:
    """tf_heartbeat every interval; ``on_fatal`` is called if the database refuses it."""

    def __init__(
        self,
        *,
        config: WorkerConfig,
        db: DbConnection,
        watched: Sequence[DbConnection],
        halt: threading.Event,
        on_fatal: Callable[[str], None],
        logger: logging.Logger,
    ) -> None:
        self.config = config
        self.db = db
        self.worker_id: str | None = None
        self._watched = watched
        self._halt = halt
        self._on_fatal = on_fatal
        self._log = logger

    def run(self) -> None:
        interval = self.config.heartbeat_seconds
        wait = interval
        failures = 0
        stuck_after = self.config.statement_timeout_seconds * 1.25 + 0.25
        try:
            self.db.connection()
        except psycopg.Error as exc:
            self._log.warning("could not open the %s connection yet: %s", self.db.application_name, one_line(exc))
        due = time.monotonic() + wait
        while not self._halt.wait(min(max(due - time.monotonic(), 0.0), HOUSEKEEPING_SECONDS)):
            for other in self._watched:
                other.abort_stuck(stuck_after)
            if time.monotonic() < due:
                continue
            try:
                self.db.execute(sql.HEARTBEAT, {"worker_id": self.worker_id}, what="heartbeat")
                if failures:
                    self._log.info("heartbeat restored after %d failure(s)", failures)
                failures, wait = 0, interval
            except psycopg.Error as exc:
                if not is_transient_error(exc):
                    self._log.error("tf_heartbeat refused: %s; stopping", one_line(exc))
                    self._on_fatal(f"tf_heartbeat refused: {one_line(exc)}")
                    return
                failures += 1
                wait = min(interval, 0.25 * 2 ** (failures - 1)) * random.uniform(0.75, 1.0)
                self._log.warning("heartbeat failed (%d): %s; retrying in %.2f s", failures, one_line(exc), wait)
            due = time.monotonic() + wait


class Listener:
    """LISTEN taskforge; ``wake()`` for each notification naming one of ``queues`` (None = any)."""

    def __init__(
        self,
        *,
        dsn: str,
        config: WorkerConfig,
        connect_kwargs: dict[str, Any],
        wake: Callable[[], None],
        halt: threading.Event,
        logger: logging.Logger,
    ) -> None:
        self.dsn = dsn
        self.config = config
        self._connect_kwargs = connect_kwargs
        self._wake = wake
        self._halt = halt
        self._log = logger

    def run(self) -> None:
        wanted = set(self.config.queues) if self.config.queues else None
        backoff = Backoff(cap=self.config.reconnect_max_seconds)
        lost = False
        while not self._halt.is_set():
            conn = None
            try:
                conn = psycopg.connect(
                    self.dsn, autocommit=True, application_name=f"{APPLICATION_NAME}/listen", **self._connect_kwargs
                )
                conn.execute(sql.LISTEN)
                backoff.reset()
                if lost:
                    self._log.info("listener re-subscribed to channel taskforge on a new connection")
                    self._wake()  # notifications may have been missed meanwhile
                    lost = False
                while not self._halt.is_set():
                    for note in conn.notifies(timeout=0.5):
                        if wanted is None or note.payload in wanted:
                            self._wake()
                        if self._halt.is_set():
                            break
            except CONNECTION_GONE as exc:  # resubscribe on a new connection (a bug stops the worker: _guarded)
                if self._halt.is_set():
                    break
                lost = True
                delay = backoff.next_delay()
                self._log.warning(
                    "listener connection lost: %s; re-subscribing in %.2f s (poll every %gs meanwhile)",
                    one_line(exc),
                    delay,
                    self.config.poll_seconds,
                )
                self._halt.wait(delay)
            finally:
                close_quietly(conn)
