"""The synthetic task types, for demos, benchmarks and tests: opt-in on each worker.

The schema registers these task types in the database (``db/schema/80_task_types.sql``), but a
worker runs them only when told to, with ``taskforge worker --import taskforge.synthetic`` (the
same ``--import`` as any handler module): importing this module registers their handlers. A
production worker that does not import it claims none of them, so no client can occupy it with,
say, ``sleep {"ms": 86400000}``.

Payloads (``ms`` in milliseconds):

* ``noop``            ``{}``           does nothing, returns None;
* ``sleep``           ``{"ms": int}``  waits ``ms`` (0..86,400,000) on the monotonic clock, and ends
                                       ``cancelled`` early if a cancel is requested meanwhile,
                                       a retryable error at its attempt deadline;
* ``fail_once``       ``{}``           retryable failure on attempt 1, success afterwards;
* ``fail``            ``{}``           an ordinary (terminal) error;
* ``retryable_fail``  ``{}``           a retryable error on every attempt (spends the budget);
* ``echo``            any object       returns its payload as the result;
* ``async_noop``      ``{}``           ``async def``: does nothing, returns None;
* ``async_sleep``     ``{"ms": int}``  ``async def``: ``sleep`` on the worker's event loop
                                       (``await ctx.async_sleep``): the same payload, result and
                                       early ends on a cancel request or at the deadline.
"""

from __future__ import annotations

from typing import Any

from .handlers import Handler, RetryableError, TaskCancelled, TaskContext, registry

__all__ = ["SYNTHETIC_HANDLERS", "SYNTHETIC_TASK_TYPES", "SyntheticFailure"]


class SyntheticFailure(Exception):
    """The ordinary error raised by the synthetic ``fail`` task type."""


def noop(payload: dict[str, Any], ctx: TaskContext) -> None:
    return None


def sleep(payload: dict[str, Any], ctx: TaskContext) -> dict[str, Any]:
    ms = _sleep_ms("sleep", payload)
    # Event.wait, not time.sleep: it sleeps on the monotonic clock and notices a cancel or
    # the attempt's deadline (a cooperative handler gives up with a retryable error).
    if ctx.sleep(ms / 1000.0):
        _stopped_early("sleep", ms, ctx)
    return {"slept_ms": ms}


async def async_noop(payload: dict[str, Any], ctx: TaskContext) -> None:
    return None


async def async_sleep(payload: dict[str, Any], ctx: TaskContext) -> dict[str, Any]:
    ms = _sleep_ms("async_sleep", payload)
    if await ctx.async_sleep(ms / 1000.0):
        _stopped_early("async_sleep", ms, ctx)
    return {"slept_ms": ms}


def _sleep_ms(name: str, payload: Any) -> float:
    """The ``ms`` of a sleep payload (0..86,400,000); ValueError for anything else."""
    ms = payload.get("ms", 0) if isinstance(payload, dict) else None
    if isinstance(ms, bool) or not isinstance(ms, (int, float)) or ms != ms or ms < 0 or ms > 86_400_000:
        raise ValueError(f'{name}: payload must be {{"ms": milliseconds}} with 0 <= ms <= 86400000, got {payload!r}')
    return ms


def _stopped_early(name: str, ms: float, ctx: TaskContext) -> None:
    """Raise what a sleep that ended early means: the deadline passed, or a cancel was requested."""
    if ctx.timed_out:
        raise RetryableError(f"{name}: the attempt's deadline ({ctx.timeout_seconds} s) passed before {ms} ms elapsed")
    raise TaskCancelled(f"{name}: cancel requested before {ms} ms elapsed")


def fail_once(payload: dict[str, Any], ctx: TaskContext) -> dict[str, Any]:
    if ctx.attempt_number == 1:
        raise RetryableError("fail_once: planned retryable failure on attempt 1")
    return {"attempt_number": ctx.attempt_number}


def fail(payload: dict[str, Any], ctx: TaskContext) -> None:
    raise SyntheticFailure("fail: planned ordinary failure")


def retryable_fail(payload: dict[str, Any], ctx: TaskContext) -> None:
    raise RetryableError(f"retryable_fail: planned retryable failure on attempt {ctx.attempt_number}")


def echo(payload: dict[str, Any], ctx: TaskContext) -> Any:
    return payload


#: Task type -> handler, in the order of the schema's seed rows.
SYNTHETIC_HANDLERS: dict[str, Handler] = {
    "noop": noop,
    "sleep": sleep,
    "fail_once": fail_once,
    "fail": fail,
    "retryable_fail": retryable_fail,
    "echo": echo,
    "async_noop": async_noop,
    "async_sleep": async_sleep,
}
SYNTHETIC_TASK_TYPES = tuple(SYNTHETIC_HANDLERS)

for _name, _fn in SYNTHETIC_HANDLERS.items():
    registry.register(_name, _fn)
