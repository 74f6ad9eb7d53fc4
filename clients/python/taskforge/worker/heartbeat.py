"""The worker's liveness and wake-up threads: the heartbeat, the hung-statement watchdog and the listener.

* :class:`Heartbeat` sends ``tf_heartbeat`` every ``heartbeat_seconds`` on its own connection,
  so busy slots or a slow claim never make a live worker look stale.
* :class:`Watchdog` closes the connection of any statement hung well past its statement_timeout
  (a server that no longer answers), the heartbeat's included, so that statement fails and is
  retried on a new connection. It sends no statement itself: in a silent network partition,
  where every connection of the worker hangs at once, it still runs (in the heartbeat's thread,
  as it once did, it hung with the heartbeat until the partition healed, and the worker then
  waited for TCP's retransmission backoff, seconds to minutes, before anything moved again).
  When it closes one, it asks the listener to re-subscribe on a new connection too: an idle
  LISTEN connection cannot see the silence, and the notifications the server sent into it
  meanwhile would arrive only at the next TCP retransmission.
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

__all__ = ["Heartbeat", "Listener", "Watchdog", "stuck_after"]


def stuck_after(statement_timeout: float) -> float:
    """Seconds after which a statement that its statement_timeout did not end counts as hung:
    ``statement_timeout * 1.25 + 0.25``."""
    return statement_timeout * 1.25 + 0.25


class Watchdog:
    """Every HOUSEKEEPING_SECONDS, :meth:`DbConnection.abort_stuck` on each ``(connection,
    seconds)`` of ``watched``, until ``halt`` is set."""

    def __init__(
        self,
        *,
        watched: Sequence[tuple[DbConnection, float]],
        halt: threading.Event,
        on_hung: Callable[[], None] = lambda: None,
    ) -> None:
        self._watched = watched
        self._halt = halt
        self._on_hung = on_hung

    def run(self) -> None:
        while not self._halt.wait(HOUSEKEEPING_SECONDS):
            closed = [db.abort_stuck(seconds) for db, seconds in self._watched]
            if any(closed):
                self._on_hung()


class Heartbeat:
    """tf_heartbeat every interval; ``on_fatal`` is called if the database refuses it."""

    def __init__(
        self,
        *,
        config: WorkerConfig,
        db: DbConnection,
        halt: threading.Event,
        on_fatal: Callable[[str], None],
        logger: logging.Logger,
    ) -> None:
        self.config = config
        self.db = db
        self.worker_id: str | None = None
        self._halt = halt
        self._on_fatal = on_fatal
        self._log = logger

    def run(self) -> None:
        interval = self.config.heartbeat_seconds
        wait = interval
        failures = 0
        try:
            self.db.connection()
        except psycopg.Error as exc:
            self._log.warning("could not open the %s connection yet: %s", self.db.application_name, one_line(exc))
        due = time.monotonic() + wait
        while not self._halt.wait(max(due - time.monotonic(), 0.0)):
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
        #: Set (by the watchdog) when another connection of the worker hung: re-subscribe.
        self.resubscribe = threading.Event()

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
                self.resubscribe.clear()
                while not self._halt.is_set():
                    if self.resubscribe.is_set():
                        raise psycopg.OperationalError(
                            "another connection of this worker hung: the server may be unreachable"
                        )
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
