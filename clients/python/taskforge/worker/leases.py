"""Lease renewals: one thread and one connection that renew every due lease in one statement.

Each attempt has its own schedule (``next_renew``, every ``lease_seconds / 3``). When one is
due, every attempt due within the next half interval is renewed with it in one
``tf_renew_many`` call, so schedules converge and a worker with many slots sends few
statements. Answers per attempt:

* renewed: next renewal one interval after the call was sent;
* ``busy`` (another transaction holds the task's row): nothing changed and the lease is not
  lost; tried again after a short doubling delay while the other attempts go on;
* ``not_running``, ``stale_attempt``, ``not_owner``, ``lease_expired``, ``not_found``: the lease
  is lost: renewals stop and ``ctx.lease_lost`` becomes True; the handler keeps running and its
  result is still offered to tf_finalize, which decides. (For an attempt already finished and
  being finalized, or finalized in its handler's transaction, this is expected and not reported.)

``cancel_requested`` is copied into ``ctx.cancel_requested``; the round's newly cancelled
attempts of async handlers are then handed, in one call, to ``on_interrupt``, which cancels
their coroutines (:mod:`.aio`). An error says nothing about the
leases: a transient one (lost connection, a read-only window during a failover, a statement
timeout) is sent again soon on a new connection, a permanent one (a refusal, which would be a
bug) is logged as an error and retried with the same capped backoff, since only the database's
answer per attempt can say a lease is lost. Times are monotonic seconds; the
database alone decides whether a lease holds.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable

import psycopg

from .. import sql
from .attempts import AttemptTable, RunningAttempt
from .config import MAX_BATCH, WorkerConfig
from .connection import DbConnection, is_transient_error, one_line
from .finalize import BUSY, TIMED_OUT, busy_delay, log_busy
from .logs import attempt_fields
from .rows import RENEW_ROWS, RenewRow, int_array

__all__ = ["Renewer"]

#: How often (seconds) the renewer looks at the attempts when none is due sooner.
IDLE_LOOK_SECONDS = 0.25


class Renewer:
    """Renews the leases of the attempts in ``attempts`` until ``halt`` is set.

    ``on_interrupt(items)``: attempts of async handlers whose cancel was just requested.
    """

    def __init__(
        self,
        *,
        config: WorkerConfig,
        db: DbConnection,
        attempts: AttemptTable,
        halt: threading.Event,
        logger: logging.Logger,
        on_interrupt: Callable[[list[RunningAttempt]], None] | None = None,
    ) -> None:
        self.config = config
        self.db = db
        self.attempts = attempts
        self.worker_id: str | None = None
        self.on_interrupt = on_interrupt
        self._halt = halt
        self._log = logger
        self._failures = 0

    def run(self) -> None:
        try:
            self.db.connection()  # open it now so it is ready when first needed
        except psycopg.Error as exc:
            self._log.warning("could not open the %s connection yet: %s", self.db.application_name, one_line(exc))
        while not self._halt.is_set():
            now = time.monotonic()
            live = [item for item in self.attempts.snapshot() if not item.lease_lost]
            due = [item for item in live if item.next_renew <= now]
            if not due:
                wait = min([item.next_renew - now for item in live] + [IDLE_LOOK_SECONDS])
                self._halt.wait(max(wait, 0.001))
                continue
            window = now + self.config.renew_seconds / 2
            batch = sorted((item for item in live if item.next_renew <= window), key=lambda i: i.next_renew)
            self._renew(batch[:MAX_BATCH])  # the most urgent first when more than one call's worth is due

    def _renew(self, batch: list[RunningAttempt]) -> None:
        cfg = self.config
        sent_at = time.monotonic()
        try:
            rows: list[RenewRow] = self.db.execute(
                sql.RENEW_MANY,
                {
                    "worker_id": self.worker_id,
                    "task_ids": int_array([item.ctx.task_id for item in batch]),
                    "attempt_numbers": int_array([item.ctx.attempt_number for item in batch]),
                    "lease_seconds": cfg.lease_seconds,
                },
                what="renew",
                row_factory=RENEW_ROWS,
            )
        except psycopg.Error as exc:
            if self._halt.is_set():
                return  # stopping: the renewal was interrupted on purpose
            self._failures += 1
            delay = min(cfg.renew_seconds, 0.25 * 2 ** (self._failures - 1)) * random.uniform(0.75, 1.0)
            if is_transient_error(exc):
                self._log.warning(
                    "renewal of %d lease(s) failed (transient, %d in a row): %s; retrying in %.2f s",
                    len(batch),
                    self._failures,
                    one_line(exc),
                    delay,
                )
            else:
                self._log.error(
                    "tf_renew_many refused %d lease(s): %s; retrying in %.2f s", len(batch), one_line(exc), delay
                )
            for item in batch:
                item.next_renew = time.monotonic() + delay
            return
        self._failures = 0
        by_key = {item.key: item for item in batch}
        now = time.monotonic()
        interrupt: list[RunningAttempt] = []
        for task_id, attempt_number, renewed, cancel_requested, reason in rows:
            item = by_key[(task_id, attempt_number)]
            ctx = item.ctx
            if cancel_requested and not ctx.cancel_requested:
                self._log.info(
                    "task %s attempt %s: cancel requested (ctx.cancel_requested is now True%s)",
                    task_id,
                    attempt_number,
                    "; cancelling its coroutine" if item.is_async and item.outcome is None else "",
                    extra=attempt_fields(ctx),
                )
                ctx.mark_cancel_requested()
                if item.is_async:
                    interrupt.append(item)
            if renewed:
                if item.busy_renewals:
                    self._log.info(
                        "renewed task %s attempt %s after %d busy renewal(s)",
                        task_id,
                        attempt_number,
                        item.busy_renewals,
                        extra=attempt_fields(ctx),
                    )
                    item.busy_renewals = 0
                item.next_renew = sent_at + cfg.renew_seconds
            elif reason == BUSY:
                item.busy_renewals += 1
                delay = busy_delay(item.busy_renewals, cfg.busy_retry_cap_seconds)
                item.next_renew = now + delay
                log_busy(
                    self._log,
                    item,
                    item.busy_renewals,
                    now,
                    "renewal of task %s attempt %s found the task's row locked by another "
                    "transaction (busy, %d time(s) in a row); the lease is not lost; "
                    "retrying in %.2f s",
                    task_id,
                    attempt_number,
                    item.busy_renewals,
                    delay,
                )
            else:
                item.lease_lost = True
                if item.outcome is not None or ctx.transaction_verdict is not None:
                    # Finished and being finalized, or finalized in the handler's own transaction
                    # whose handler still runs: tf_finalize reports how that ended.
                    continue
                ctx.mark_lease_lost()
                if reason == TIMED_OUT or ctx.timed_out:
                    # Refused timed_out, or (once recovery got there first) not_running after the
                    # deadline passed on this process's clock too.
                    ctx.mark_timed_out()
                    self._log.warning(
                        "task %s attempt %s passed its deadline (timeout_seconds %s): no lease past it "
                        "(tf_renew_many: %s; ctx.timed_out is now True); recovery records the attempt "
                        "timed_out and the task is retried within its budget",
                        task_id,
                        attempt_number,
                        ctx.timeout_seconds,
                        reason,
                        extra=attempt_fields(ctx),
                    )
                    continue
                self._log.warning(
                    "lease lost for task %s attempt %s (tf_renew_many: %s); no more renewals; %s",
                    task_id,
                    attempt_number,
                    reason,
                    "the handler keeps running and its result will still be offered to tf_finalize, which decides"
                    if item.started
                    else "it was claimed ahead (--prefetch) and its handler will not start",
                    extra=attempt_fields(ctx),
                )
        if interrupt and self.on_interrupt is not None:
            self.on_interrupt(interrupt)
