"""Finalizing: what the dispatcher sends for finished attempts, and what it does with each answer.

Finished attempts go to the database in batches (``tf_finalize_and_claim``), never one
statement per task. Each element is answered on its own:

* accepted: the attempt and task changed together; the attempt leaves the worker;
* ``busy``: another transaction holds the task's row; nothing happened and nothing waited; the
  element is sent again after a short doubling delay (:func:`busy_delay`), while renewals keep
  its lease alive;
* any other reason (``not_running``, ``stale_attempt``, ``not_owner``, ``lease_expired``,
  ``not_found``): the guard refused a stale attempt; it leaves the worker, with a log line
  saying what is known.

A batch the database refuses as a whole (a permanent error, e.g. a result it cannot store) is
split: each element is sent alone, and one that is still refused is finalized as ``failed``
with the refusal as its error, so one bad result costs its own attempt only.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from ..handlers import Outcome, error_json
from .attempts import RunningAttempt
from .config import BUSY_RETRY_SECONDS
from .connection import one_line
from .logs import attempt_fields
from .rows import int_array, text_array

__all__ = [
    "BUSY",
    "LOG_EVERY_SECONDS",
    "QUIET_BUSY_TRIES",
    "REFUSAL_MEANING",
    "TIMED_OUT",
    "busy_delay",
    "finalize_params",
    "log_busy",
    "refusal_outcome",
    "report_refused",
]

BUSY = "busy"
#: The guard's reason once an attempt's deadline has passed (no lease is granted beyond it).
TIMED_OUT = "timed_out"
#: While one attempt's finalize or renewal keeps coming back busy, log it at most this often (s).
LOG_EVERY_SECONDS = 10.0
#: Busy answers in a row logged at DEBUG only, before the first WARNING (:func:`log_busy`).
QUIET_BUSY_TRIES = 2


#: The arrays of a turn that finalizes nothing (a claim alone).
_NO_ELEMENTS: dict[str, Any] = {"task_ids": [], "attempt_numbers": [], "outcomes": [], "results": [], "errors": []}


def finalize_params(items: list[RunningAttempt]) -> dict[str, Any]:
    """The element-aligned arrays of tf_finalize_and_claim for these finished attempts, each as
    one array literal (see :mod:`.rows`); empty lists when there are none."""
    if not items:
        return dict(_NO_ELEMENTS)
    outcomes = [_outcome(item) for item in items]
    return {
        "task_ids": int_array([item.ctx.task_id for item in items]),
        "attempt_numbers": int_array([item.ctx.attempt_number for item in items]),
        "outcomes": text_array([o.outcome for o in outcomes]),
        "results": text_array([o.result for o in outcomes]),
        "errors": text_array([None if o.error is None else json.dumps(o.error, ensure_ascii=False) for o in outcomes]),
    }


def _outcome(item: RunningAttempt) -> Outcome:
    if item.outcome is None:
        raise ValueError(f"task {item.ctx.task_id} attempt {item.ctx.attempt_number} has not finished")
    return item.outcome


def busy_delay(tries: int, cap: float) -> float:
    """Seconds to wait before the ``tries``-th resend of a busy element: 2 ms doubling, at most ``cap``."""
    return min(cap, BUSY_RETRY_SECONDS * 2.0 ** min(max(tries - 1, 0), 20))


def log_busy(logger: logging.Logger, item: RunningAttempt, tries: int, now: float, message: str, *args: Any) -> None:
    """Log the ``tries``-th busy answer in a row for ``item`` (a finalize's or a renewal's):
    DEBUG for the first :data:`QUIET_BUSY_TRIES` (the usual holder, a concurrent claim, lets go
    within a millisecond or two, so they are routine under load), then WARNING, repeated at most
    every :data:`LOG_EVERY_SECONDS` while the lock lasts (``item.logged_at``, the last WARNING).
    ``now`` is monotonic seconds; ``message`` and ``args`` as for ``logger.log``."""
    if tries <= QUIET_BUSY_TRIES:
        level = logging.DEBUG
    elif tries == QUIET_BUSY_TRIES + 1 or now - item.logged_at >= LOG_EVERY_SECONDS:
        level = logging.WARNING
        item.logged_at = now
    else:
        return
    if logger.isEnabledFor(level):
        logger.log(level, message, *args, extra=attempt_fields(item.ctx))


def refusal_outcome(item: RunningAttempt, exc: BaseException) -> Outcome:
    """The ``failed`` outcome that replaces one the database refused to store (``exc``)."""
    sent = item.outcome.outcome if item.outcome else "unknown"
    return Outcome(
        "failed",
        error=error_json(
            type_name="taskforge.FinalizeRefused", message=f"the database refused the {sent} outcome: {one_line(exc)}"
        ),
    )


#: What each guard refusal tells the worker about its own attempt, and nothing more.
REFUSAL_MEANING = {
    "not_running": "the task is no longer RUNNING, so this attempt was ended without this call "
    "(normally: its lease expired and tf_recover took the task back)",
    "stale_attempt": "the task has a newer attempt, so this attempt was ended without this call "
    "(normally: its lease expired and the task was recovered and claimed again)",
    "not_owner": "another worker owns the task now",
    "lease_expired": "the attempt's lease expired before this call arrived; tf_recover will record it ABANDONED",
    "not_found": "the task no longer exists (pruned or deleted)",
}


def report_refused(log: logging.Logger, item: RunningAttempt, reason: str, task_state: str | None) -> None:
    """Log why the guard refused an attempt's outcome, saying only what is known.

    When an earlier send of the same outcome was lost with its connection (``resent_after_loss``),
    that send may have been applied before the connection broke, so a ``not_running`` refusal
    does not say who ended the attempt; the line says so, unless the task's state rules the lost
    send out (a ``succeeded`` outcome would have left the task SUCCEEDED, for good).
    """
    ctx, sent = item.ctx, item.outcome.outcome if item.outcome else "unknown"
    if reason == TIMED_OUT:
        log.warning(
            "tf_finalize did not accept the %s outcome of task %s attempt %s: the attempt passed its "
            "deadline (timeout_seconds %s) before finishing; recovery records it timed_out (task is %s)",
            sent,
            ctx.task_id,
            ctx.attempt_number,
            ctx.timeout_seconds,
            task_state,
            extra=attempt_fields(ctx),
        )
    elif item.resent_after_loss and reason == "not_running":
        if sent == "succeeded" and task_state != "SUCCEEDED":
            known = (
                "the lost send was not applied (it would have left the task SUCCEEDED), so the attempt "
                "was ended without it"
            )
        else:
            known = (
                "either the lost send was applied before the connection broke or the attempt was ended "
                "without it (e.g. recovered after its lease expired); tf_attempts shows which"
            )
        log.warning(
            "finalize of task %s attempt %s was sent again after its connection broke mid-call and is "
            "refused (not_running, task now %s, outcome sent %s): %s",
            ctx.task_id,
            ctx.attempt_number,
            task_state,
            sent,
            known,
            extra=attempt_fields(ctx),
        )
    else:
        log.warning(
            "tf_finalize did not accept the %s outcome of task %s attempt %s: %s (task is %s); %s",
            sent,
            ctx.task_id,
            ctx.attempt_number,
            reason,
            task_state,
            REFUSAL_MEANING.get(reason, "the guard refused it"),
            extra=attempt_fields(ctx),
        )
