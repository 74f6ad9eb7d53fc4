"""Attempts for the worker's unit tests (no database): what the dispatcher hands the slots and
the event loop."""

from __future__ import annotations

from taskforge.handlers import TaskContext
from taskforge.worker.attempts import RunningAttempt


def held_attempt(
    task_type: str, payload: str = "{}", task_id: int = 1, deadline: float | None = None
) -> RunningAttempt:
    """Attempt 1 of task ``task_id`` in queue ``q``; async when ``task_type`` starts with ``a.``;
    ``deadline`` (monotonic seconds) gives it a ``timeout_seconds`` of 1."""
    ctx = TaskContext(
        task_id=task_id,
        attempt_number=1,
        task_type=task_type,
        queue="q",
        timeout_seconds=None if deadline is None else 1.0,
        deadline=deadline,
    )
    return RunningAttempt(ctx=ctx, payload=payload, next_renew=0.0, is_async=task_type.startswith("a."))
