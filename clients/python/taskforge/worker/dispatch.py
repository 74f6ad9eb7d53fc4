"""The dispatcher: one thread and one connection that claim and finalize, in batches.

Each turn is one ``tf_finalize_and_claim`` call, one round trip and one commit: it finalizes
every attempt whose handler ended since the last turn and claims for every slot that is (or is
about to be) free. It claims only when a claim may find work: after a NOTIFY for one of its
queues, when the last claim filled every slot it asked for, or every ``poll_seconds``. A
finished attempt is finalized at once (with a claim in the same call when one is wanted).

Errors: a transient one (lost connection, failover, statement timeout) is retried on a new
connection with capped backoff, sending the same elements again (the guard makes a repeat
harmless); a lock timeout (another transaction holds this worker's row, which a claim's
foreign keys touch) is sent again after 50 ms doubling up to lease/10; a permanent error splits the batch
(:mod:`taskforge.worker.finalize`). A claim refused permanently (e.g. TF404: the worker was
deregistered) stops the worker. Times are monotonic seconds.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg

from .. import sql
from ..handlers import Outcome, TaskContext, error_json
from .attempts import AttemptTable, RunningAttempt
from .config import MAX_CLAIM, WorkerConfig
from .connection import Backoff, DbConnection, is_connection_loss, is_lock_timeout, is_transient_error, one_line
from .finalize import BUSY, LOG_EVERY_SECONDS, busy_delay, finalize_params, refusal_outcome, report_refused

__all__ = ["Dispatcher"]


class Dispatcher:
    """Claims for free slots and finalizes finished attempts (see the module docstring).

    ``start_attempt(item)`` hands a claimed attempt to a slot; ``on_fatal(message)`` is called
    when the worker must stop because the database refuses its claims. ``stopping``: claim
    nothing new, finalize what is left, then return. ``force``: return at once.
    """

    def __init__(
        self,
        *,
        config: WorkerConfig,
        db: DbConnection,
        attempts: AttemptTable,
        start_attempt: Callable[[RunningAttempt], None],
        on_fatal: Callable[[str], None],
        stopping: threading.Event,
        force: threading.Event,
        logger: logging.Logger,
    ) -> None:
        self.config = config
        self.db = db
        self.attempts = attempts
        self.worker_id: str | None = None
        self.task_types: list[str] | None = None
        self.wake = threading.Event()  # something to do: an attempt finished, a NOTIFY, a stop
        self.notified = threading.Event()  # a claim may find work now (NOTIFY, reconnect, stop of a wait)
        self._start_attempt = start_attempt
        self._on_fatal = on_fatal
        self._stopping = stopping
        self._force = force
        self._log = logger
        self._done: queue.SimpleQueue[RunningAttempt] = queue.SimpleQueue()
        self._pending: list[RunningAttempt] = []
        self._backoff = Backoff(cap=config.reconnect_max_seconds)
        self._lock_waits = 0  # lock timeouts in a row (see _failed)

    # --- called from other threads ---------------------------------------------------------------

    def finished(self, item: RunningAttempt) -> None:
        """A slot's handler ended (``item.outcome`` is set): finalize it on the next turn."""
        self._done.put(item)
        self.wake.set()

    def claim_soon(self) -> None:
        """Work may be waiting (a NOTIFY for one of our queues, a listener that re-subscribed)."""
        self.notified.set()
        self.wake.set()

    # --- the loop ----------------------------------------------------------------------------------

    def run(self) -> None:
        """Turn until stopping with nothing left to finalize, or until forced."""
        cfg = self.config
        claim_wanted = True
        next_poll = time.monotonic() + cfg.poll_seconds
        while not self._force.is_set():
            self.wake.clear()
            self._collect()
            now = time.monotonic()
            stopping = self._stopping.is_set()
            if self.notified.is_set():
                self.notified.clear()
                claim_wanted = True
            if now >= next_poll:
                claim_wanted = True
                next_poll = now + cfg.poll_seconds
            ready = [item for item in self._pending if item.send_after <= now]
            free = cfg.concurrency - len(self.attempts) + len(ready)
            claim = 0 if stopping or not claim_wanted else max(0, min(free, MAX_CLAIM))
            if not ready and not claim:
                if stopping and len(self.attempts) == 0:
                    return
                waits = [next_poll - now] + [item.send_after - now for item in self._pending]
                self.wake.wait(max(min(waits), 0.0))
                continue
            claimed = self._turn(ready, claim)
            if claim and claimed is not None:
                claim_wanted = claimed >= claim
                if not claim_wanted:
                    next_poll = time.monotonic() + cfg.poll_seconds

    def _collect(self) -> None:
        while True:
            try:
                self._pending.append(self._done.get_nowait())
            except queue.Empty:
                return

    def _params(self, items: list[RunningAttempt], claim: int) -> dict[str, Any]:
        cfg = self.config
        return {
            "worker_id": self.worker_id,
            **finalize_params(items),
            "queues": list(cfg.queues) if cfg.queues else None,
            "lease_seconds": cfg.lease_seconds,
            "max_tasks": claim,
            "task_types": self.task_types,
        }

    def _turn(self, items: list[RunningAttempt], claim: int) -> int | None:
        """One call: finalize ``items``, claim up to ``claim``. Returns how many were claimed
        (None when the call failed and nothing was claimed)."""
        sent_at = time.monotonic()

        def retry(exc: BaseException) -> bool:
            for item in items:
                item.finalize_tries += 1
                # Only a connection that broke mid-call leaves the first send's fate unknown.
                item.resent_after_loss = item.resent_after_loss or is_connection_loss(exc)
            # Finished attempts are sent until they land (or the worker is forced out); a call
            # that only claims gives up once the worker is stopping.
            return not self._force.is_set() and (bool(items) or not self._stopping.is_set())

        try:
            rows = self.db.execute(
                sql.FINALIZE_AND_CLAIM,
                self._params(items, claim),
                retry=retry,
                what="finalize and claim" if items else "claim",
            )
        except psycopg.Error as exc:
            self._failed(items, claim, exc)
            return None
        self._backoff.reset()
        self._lock_waits = 0
        self._answer(items, rows)
        return self._started([row for row in rows if row[0] == "claimed"], sent_at)

    def _answer(self, items: list[RunningAttempt], rows: list[tuple[Any, ...]]) -> None:
        by_key = {item.key: item for item in items}
        now = time.monotonic()
        for kind, task_id, attempt_number, accepted, task_state, reason, *_ in rows:
            if kind != "finalized":
                continue
            item = by_key[(task_id, attempt_number)]
            if reason == BUSY:
                self._busy(item, now)
                continue
            self._pending.remove(item)
            self.attempts.remove(item)
            if accepted:
                if item.finalize_tries:
                    self._log.info(
                        "finalized task %s attempt %s after %d busy or failed send(s): %s -> task %s",
                        task_id,
                        attempt_number,
                        item.finalize_tries,
                        _outcome_name(item),
                        task_state,
                    )
                elif self._log.isEnabledFor(logging.INFO):
                    self._log.info(
                        "finalized task %s attempt %s: %s -> task %s",
                        task_id,
                        attempt_number,
                        _outcome_name(item),
                        task_state,
                    )
            else:
                report_refused(self._log, item, reason, task_state)

    def _busy(self, item: RunningAttempt, now: float) -> None:
        item.finalize_tries += 1
        delay = busy_delay(item.finalize_tries, self.config.busy_retry_cap_seconds)
        item.send_after = now + delay
        if item.finalize_tries == 1 or now - item.logged_at >= LOG_EVERY_SECONDS:
            item.logged_at = now
            self._log.warning(
                "finalize of task %s attempt %s found the task's row locked by another "
                "transaction (busy, %d time(s) so far; nothing was written or waited for); "
                "sending it again in %.2f s",
                item.ctx.task_id,
                item.ctx.attempt_number,
                item.finalize_tries,
                delay,
            )

    def _started(self, rows: list[tuple[Any, ...]], sent_at: float) -> int:
        renew_at = sent_at + self.config.renew_seconds
        info = self._log.isEnabledFor(logging.INFO)  # one line per task start and end at INFO
        for row in rows:
            _kind, task_id, attempt_number, _a, _s, _r, task_type, payload, queue_name, priority, max_attempts = row[
                :11
            ]
            timeout_seconds = row[11]
            ctx = TaskContext(
                task_id=task_id,
                attempt_number=attempt_number,
                task_type=task_type,
                queue=queue_name,
                priority=priority,
                max_attempts=max_attempts,
                worker_id=self.worker_id,
                timeout_seconds=timeout_seconds,
                # From before the claim was sent: never later than the database's deadline.
                deadline=None if timeout_seconds is None else sent_at + timeout_seconds,
            )
            item = RunningAttempt(ctx=ctx, payload=payload, next_renew=renew_at)
            self.attempts.add(item)
            if info:
                self._log.info(
                    "claimed task %s attempt %s (%s, queue %s)", task_id, attempt_number, task_type, queue_name
                )
            try:
                self._start_attempt(item)
            except Exception as exc:  # noqa: BLE001 - one task's failure costs its attempt, not the dispatcher
                self._log.exception("could not start task %s attempt %s", task_id, attempt_number)
                if item.outcome is None:
                    item.outcome = Outcome("failed", error=error_json(exc))
                    self.finished(item)
        return len(rows)

    # --- errors ----------------------------------------------------------------------------------

    def _failed(self, items: list[RunningAttempt], claim: int, exc: psycopg.Error) -> None:
        now = time.monotonic()
        if is_lock_timeout(exc) or is_transient_error(exc):
            # Nothing was written (the statement rolled back) or, for a connection lost mid-call
            # and not retried (forced stop), its fate is unknown: send the same elements again.
            # A lock timeout (another transaction holds this worker's own row) is tried again
            # soon; anything else after the reconnect backoff.
            self._lock_waits = self._lock_waits + 1 if is_lock_timeout(exc) else 0
            delay = (
                busy_delay(self._lock_waits, self.config.busy_retry_cap_seconds)
                if is_lock_timeout(exc)
                else self._backoff.next_delay()
            )
            for item in items:
                item.finalize_tries += 1
                item.send_after = now + delay
            if not self._force.is_set():
                self._log.warning(
                    "%s failed: %s; trying again in %.2f s",
                    "finalize and claim" if items else "claim",
                    one_line(exc),
                    delay,
                )
                self._force.wait(delay)
            return
        if not items:
            self._log.error("tf_claim refused: %s; stopping", one_line(exc))
            self._on_fatal(f"tf_claim refused: {one_line(exc)}")
            return
        # A permanent error: find the element(s) the database will not take, one by one.
        self._log.warning(
            "tf_finalize_and_claim refused a batch of %d: %s; finalizing them one by one", len(items), one_line(exc)
        )
        for item in items:
            self._alone(item)

    def _alone(self, item: RunningAttempt) -> None:
        for replaced in (False, True):
            try:
                rows = self.db.execute(
                    sql.FINALIZE_AND_CLAIM,
                    self._params([item], 0),
                    retry=lambda _exc: not self._force.is_set(),
                    what="finalize",
                )
            except psycopg.Error as exc:
                if is_lock_timeout(exc) or is_transient_error(exc):
                    item.finalize_tries += 1
                    item.send_after = time.monotonic() + self._backoff.next_delay()
                    return
                if not replaced:
                    self._log.warning(
                        "tf_finalize refused the %s outcome of task %s attempt %s: %s; finalizing it as failed",
                        item.outcome.outcome if item.outcome else "?",
                        item.ctx.task_id,
                        item.ctx.attempt_number,
                        one_line(exc),
                    )
                    item.outcome = refusal_outcome(item, exc)
                    continue
                self._log.error(
                    "could not finalize task %s attempt %s: %s; its lease will expire and "
                    "tf_recover will requeue it (or fail it if no attempts remain)",
                    item.ctx.task_id,
                    item.ctx.attempt_number,
                    one_line(exc),
                )
                self._pending.remove(item)
                self.attempts.remove(item)
                return
            self._answer([item], rows)
            return


def _outcome_name(item: RunningAttempt) -> str | None:
    """The outcome of a finished attempt, for a log line."""
    return None if item.outcome is None else item.outcome.outcome
