"""The dispatcher: one thread and one connection that claim and finalize, in batches.

Each turn is one ``tf_finalize_and_claim`` call, one round trip and one commit: it finalizes
every attempt whose handler ended since the last turn and claims for every slot that is (or is
about to be) free, and for up to ``prefetch`` more attempts that wait in the process for a slot,
at most :data:`~.config.TURN_BATCH` of each per call (more go in the next turn, at once). It
claims only when a claim may find work: after a NOTIFY for one of its queues, when the last
claim filled every slot it asked for, or every ``poll_seconds``. A finished attempt is finalized
at once (with a claim in the same call when one is wanted).

Hand-offs are per turn, not per task: a turn's claims go to ``start_attempts`` in one call
(the worker hands them to the sync slots or the event loop, or runs a sync handler inline with
``concurrency`` 1), and finished attempts come back through :meth:`Dispatcher.finished` /
:meth:`Dispatcher.finished_many` into one list the next turn takes whole. An attempt that ends
after its deadline is sent no earlier than the database's deadline has surely passed
(``claimed_at + timeout_seconds``), so the database refuses it ``timed_out`` and recovery
records the attempt ``timed_out``, whichever thread ran it. An attempt whose handler finalized
it in its own transaction (``ctx.transaction()``, :mod:`.transaction`) is not sent: its verdict
is reported as an answer of a turn would be, and its slot is free for the next claim.

Errors: a transient one (lost connection, failover, statement timeout) is retried on a new
connection with capped backoff, sending the same elements again (the guard makes a repeat
harmless); a lock timeout (another transaction holds this worker's row, which a claim's
foreign keys touch) is sent again after 2 ms doubling up to lease/10; a permanent error splits the batch
(:mod:`taskforge.worker.finalize`). A claim refused permanently (e.g. TF404: the worker was
deregistered) stops the worker. Times are monotonic seconds.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import psycopg

from .. import sql
from ..context import TransactionSource
from ..handlers import Outcome, TaskContext, error_json
from .attempts import AttemptTable, RunningAttempt
from .config import TURN_BATCH, WorkerConfig
from .connection import Backoff, DbConnection, is_connection_loss, is_lock_timeout, is_transient_error, one_line
from .finalize import BUSY, busy_delay, finalize_params, log_busy, refusal_outcome, report_refused
from .logs import attempt_fields
from .rows import TURN_ROWS, TurnRow, text_array

#: Margin (seconds) added to ``claimed_at + timeout_seconds`` before a timed-out attempt's
#: finalize is sent: covers the two clocks' drift over one attempt.
DEADLINE_MARGIN_SECONDS = 0.01

__all__ = ["Dispatcher"]


class Dispatcher:
    """Claims for free slots and finalizes finished attempts (see the module docstring).

    ``start_attempts(items)`` starts a turn's claimed attempts and returns those it already ran
    (inline); the others come back through :meth:`finished` / :meth:`finished_many`.
    ``async_types``: task types whose handler is ``async def``. ``on_fatal(message)`` is called
    when the worker must stop because the database refuses its claims. ``stopping``: claim
    nothing new, finalize what is left, then return. ``force``: return at once.
    """

    def __init__(
        self,
        *,
        config: WorkerConfig,
        db: DbConnection,
        attempts: AttemptTable,
        start_attempts: Callable[[list[RunningAttempt]], Sequence[RunningAttempt]],
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
        self.async_types: frozenset[str] = frozenset()
        #: What ``ctx.transaction()`` of the attempts it starts takes its connections from.
        self.transactions: TransactionSource | None = None
        self.wake = threading.Event()  # something to do: an attempt finished, a NOTIFY, a stop
        self.notified = threading.Event()  # a claim may find work now (NOTIFY, reconnect, stop of a wait)
        self._start_attempts = start_attempts
        self._on_fatal = on_fatal
        self._stopping = stopping
        self._force = force
        self._log = logger
        self._done: list[RunningAttempt] = []  # ended since the last turn (any thread appends)
        self._done_lock = threading.Lock()
        self._pending: dict[tuple[int, int], RunningAttempt] = {}  # ended, not yet finalized
        self._backoff = Backoff(cap=config.reconnect_max_seconds)
        self._lock_waits = 0  # lock timeouts in a row (see _failed)
        self._array_cache: dict[tuple[str, ...], str] = {}

    # --- called from other threads ---------------------------------------------------------------

    def finished(self, item: RunningAttempt) -> None:
        """A slot's handler ended (``item.outcome`` is set): finalize it on the next turn."""
        with self._done_lock:
            self._done.append(item)
        if not self.wake.is_set():
            self.wake.set()

    def finished_many(self, items: Iterable[RunningAttempt]) -> None:
        """Handlers ended (each ``outcome`` is set): finalize them on the next turn (one wake-up)."""
        with self._done_lock:
            self._done.extend(items)
        if not self.wake.is_set():
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
        wake, pending = self.wake, self._pending
        while not self._force.is_set():
            if wake.is_set():  # Event.clear takes its lock even when there is nothing to clear
                wake.clear()
            self._collect()
            now = time.monotonic()
            stopping = self._stopping.is_set()
            if self.notified.is_set():
                self.notified.clear()
                claim_wanted = True
            if now >= next_poll:
                claim_wanted = True
                next_poll = now + cfg.poll_seconds
            ready = [item for item in pending.values() if item.send_after <= now]
            if len(ready) > TURN_BATCH:
                ready = ready[:TURN_BATCH]
            free = cfg.held_limit - len(self.attempts) + len(ready)
            claim = 0 if stopping or not claim_wanted else max(0, min(free, TURN_BATCH))
            if not ready and not claim:
                if stopping and len(self.attempts) == 0:
                    return
                waits = [next_poll - now] + [item.send_after - now for item in pending.values()]
                wake.wait(max(min(waits), 0.0))
                continue
            claimed = self._turn(ready, claim)
            if claim and claimed is not None:
                claim_wanted = claimed >= claim
                if not claim_wanted:
                    next_poll = time.monotonic() + cfg.poll_seconds

    def _collect(self) -> None:
        if not self._done:
            return
        with self._done_lock:
            items, self._done = self._done, []
        self._take(items)

    def _take(self, items: Iterable[RunningAttempt]) -> None:
        """Attempts whose handlers ended join the next finalize (a timed-out one once the
        database's deadline has surely passed, see the module docstring)."""
        pending = self._pending
        for item in items:
            ctx = item.ctx
            if ctx.transaction_verdict is not None:
                self._ended_in_transaction(item)
                continue
            timeout = ctx.timeout_seconds
            if timeout is not None and ctx.timed_out:
                item.send_after = max(item.send_after, item.claimed_at + timeout + DEADLINE_MARGIN_SECONDS)
            pending[(ctx.task_id, ctx.attempt_number)] = item

    def _ended_in_transaction(self, item: RunningAttempt) -> None:
        """An attempt tf_finalize answered inside the handler's own transaction: nothing to send
        (a second outcome would be refused); report it and free its slot."""
        ctx = item.ctx
        verdict = ctx.transaction_verdict
        if verdict is None:
            return
        ended = item.outcome
        # What the database answered was the success the transaction sent.
        item.outcome = Outcome("succeeded", result=verdict.result)
        if not verdict.accepted:
            report_refused(self._log, item, verdict.reason or "", verdict.task_state)
        else:
            self._log.info(
                "finalized task %s attempt %s in the handler's transaction: succeeded -> task %s",
                ctx.task_id,
                ctx.attempt_number,
                verdict.task_state,
                extra=attempt_fields(ctx),
            )
            if ended is not None and ended.outcome != "succeeded":
                self._log.warning(
                    "task %s attempt %s: the handler ended %s after its success committed in ctx.transaction() "
                    "(the task stays %s): %s",
                    ctx.task_id,
                    ctx.attempt_number,
                    ended.outcome,
                    verdict.task_state,
                    (ended.error or {}).get("message"),
                    extra=attempt_fields(ctx),
                )
            elif ended is not None and ended.result is not None and ended.result != verdict.result:
                self._log.warning(
                    "task %s attempt %s: the handler returned a value after its success committed in "
                    "ctx.transaction(); it is not stored (the task's result is what ctx.set_result gave "
                    "inside the block)",
                    ctx.task_id,
                    ctx.attempt_number,
                    extra=attempt_fields(ctx),
                )
        self.attempts.remove(item)

    def _params(self, items: list[RunningAttempt], claim: int) -> dict[str, Any]:
        cfg = self.config
        return {
            "worker_id": self.worker_id,
            **finalize_params(items),
            "queues": self._names(cfg.queues),
            "lease_seconds": cfg.lease_seconds,
            "max_tasks": claim,
            "task_types": self._names(self.task_types),
        }

    def _names(self, names: Sequence[str] | None) -> str | None:
        """The queues or task types as one array literal (the same every turn: built once)."""
        if not names:
            return None
        key = tuple(names)
        literal = self._array_cache.get(key)
        if literal is None:
            literal = self._array_cache[key] = text_array(key)
        return literal

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
            rows: list[TurnRow] = self.db.execute(
                sql.FINALIZE_AND_CLAIM,
                self._params(items, claim),
                retry=retry,
                what="finalize and claim" if items else "claim",
                row_factory=TURN_ROWS,
            )
        except psycopg.Error as exc:
            self._failed(items, claim, exc)
            return None
        self._backoff.reset()
        self._lock_waits = 0
        if items:
            self._answer(items, rows)
        return self._started([row for row in rows if row.kind == "claimed"], sent_at)

    def _answer(self, items: list[RunningAttempt], rows: list[TurnRow]) -> None:
        by_key = {(item.ctx.task_id, item.ctx.attempt_number): item for item in items}
        now = time.monotonic()
        info = self._log.isEnabledFor(logging.INFO)
        gone: list[RunningAttempt] = []
        for row in rows:
            if row.kind != "finalized":
                continue
            key = (row.task_id, row.attempt_number)
            item = by_key[key]
            if row.reason == BUSY:
                self._busy(item, now)
                continue
            del self._pending[key]
            gone.append(item)
            if row.accepted:
                if item.finalize_tries:
                    self._log.info(
                        "finalized task %s attempt %s after %d busy or failed send(s): %s -> task %s",
                        row.task_id,
                        row.attempt_number,
                        item.finalize_tries,
                        _outcome_name(item),
                        row.task_state,
                        extra=attempt_fields(item.ctx),
                    )
                elif info:
                    self._log.info(
                        "finalized task %s attempt %s: %s -> task %s",
                        row.task_id,
                        row.attempt_number,
                        _outcome_name(item),
                        row.task_state,
                        extra=attempt_fields(item.ctx),
                    )
            else:
                report_refused(self._log, item, row.reason or "", row.task_state)
        self.attempts.remove_many(gone)

    def _busy(self, item: RunningAttempt, now: float) -> None:
        item.finalize_tries += 1
        delay = busy_delay(item.finalize_tries, self.config.busy_retry_cap_seconds)
        item.send_after = now + delay
        log_busy(
            self._log,
            item,
            item.finalize_tries,
            now,
            "finalize of task %s attempt %s found the task's row locked by another "
            "transaction (busy, %d time(s) so far; nothing was written or waited for); "
            "sending it again in %.2f s",
            item.ctx.task_id,
            item.ctx.attempt_number,
            item.finalize_tries,
            delay,
        )

    def _started(self, rows: list[TurnRow], sent_at: float) -> int:
        if not rows:
            return 0
        renew_at = sent_at + self.config.renew_seconds
        claimed_at = time.monotonic()
        worker_id, async_types, transactions = self.worker_id, self.async_types, self.transactions
        items = []
        for row in rows:
            timeout = row.timeout_seconds
            ctx = TaskContext(
                row.task_id,
                row.attempt_number,
                row.task_type,
                row.queue,
                row.priority,
                row.max_attempts,
                worker_id,
                timeout,
                # From before the claim was sent: never later than the database's deadline.
                None if timeout is None else sent_at + timeout,
                transactions,
                row.traceparent,
            )
            items.append(RunningAttempt(ctx, row.payload, renew_at, row.task_type in async_types, claimed_at))
        self.attempts.add_many(items)
        if self._log.isEnabledFor(logging.INFO):  # one line per task start and end at INFO
            for item in items:
                ctx = item.ctx
                self._log.info(
                    "claimed task %s attempt %s (%s, queue %s)",
                    ctx.task_id,
                    ctx.attempt_number,
                    ctx.task_type,
                    ctx.queue,
                    extra=attempt_fields(ctx),
                )
        try:
            self._take(self._start_attempts(items))
        except Exception as exc:  # noqa: BLE001 - a failure to start costs these attempts, not the dispatcher
            self._log.exception("could not start %d claimed attempt(s)", len(items))
            failed = [item for item in items if item.outcome is None]
            for item in failed:
                item.outcome = Outcome("failed", error=error_json(exc))
            self._take(failed)
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
                rows: list[TurnRow] = self.db.execute(
                    sql.FINALIZE_AND_CLAIM,
                    self._params([item], 0),
                    retry=lambda _exc: not self._force.is_set(),
                    what="finalize",
                    row_factory=TURN_ROWS,
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
                        extra=attempt_fields(item.ctx),
                    )
                    item.outcome = refusal_outcome(item, exc)
                    continue
                self._log.error(
                    "could not finalize task %s attempt %s: %s; its lease will expire and "
                    "tf_recover will requeue it (or fail it if no attempts remain)",
                    item.ctx.task_id,
                    item.ctx.attempt_number,
                    one_line(exc),
                    extra=attempt_fields(item.ctx),
                )
                self._pending.pop(item.key, None)
                self.attempts.remove(item)
                return
            self._answer([item], rows)
            return


def _outcome_name(item: RunningAttempt) -> str | None:
    """The outcome of a finished attempt, for a log line."""
    return None if item.outcome is None else item.outcome.outcome
