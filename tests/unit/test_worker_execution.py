"""The worker's execution parts without a database: the context's sleeps, the sync slot pool,
the event loop of async handlers, and the array literals the worker sends."""

from __future__ import annotations

import asyncio
import logging
import threading
import time

import pytest

from taskforge.handlers import HandlerRegistry, TaskCancelled, TaskContext, is_async_handler
from taskforge.worker.aio import AsyncRunner
from taskforge.worker.attempts import AttemptTable, RunningAttempt
from taskforge.worker.execute import Slots
from taskforge.worker.rows import int_array, text_array

from worker_units import held_attempt as attempt

LOG = logging.getLogger("test.worker.execution")


# --- the context ----------------------------------------------------------------------------------


def test_a_context_makes_no_event_until_a_handler_sleeps():
    ctx = TaskContext(task_id=1, attempt_number=1, task_type="t", queue="q")
    assert ctx._event is None and ctx._waiters is None
    ctx.mark_cancel_requested()  # nothing waits: nothing to wake
    assert ctx.cancel_requested and ctx.sleep(5) is True and ctx._event is not None


def test_sleep_is_woken_from_another_thread():
    ctx = TaskContext(task_id=1, attempt_number=1, task_type="t", queue="q")
    threading.Timer(0.05, ctx.mark_cancel_requested).start()
    started = time.monotonic()
    assert ctx.sleep(10) is True
    assert time.monotonic() - started < 2


def test_async_sleep_runs_full_time_or_returns_early_on_cancel_and_deadline():
    async def main() -> None:
        ctx = TaskContext(task_id=1, attempt_number=1, task_type="t", queue="q")
        assert await ctx.async_sleep(0.01) is False
        assert ctx._waiters == set()  # nothing left behind
        # A cancel requested from another thread (the renewer) ends the wait.
        threading.Timer(0.05, ctx.mark_cancel_requested).start()
        started = time.monotonic()
        assert await ctx.async_sleep(10) is True
        assert time.monotonic() - started < 2
        # The deadline ends it too (monotonic clock, the loop's).
        late = TaskContext(task_id=2, attempt_number=1, task_type="t", queue="q", deadline=time.monotonic() + 0.05)
        assert await late.async_sleep(10) is True and late.timed_out
        # Cancelling the coroutine raises CancelledError there, like any await.
        waiting = asyncio.ensure_future(TaskContext(3, 1, "t", "q").async_sleep(10))
        await asyncio.sleep(0.01)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting

    asyncio.run(main())


def test_the_registry_knows_which_handlers_are_async():
    class Callable:
        async def __call__(self, payload, ctx):
            return None

    async def coroutine_function(payload, ctx):
        return None

    registry = HandlerRegistry()
    registry.register("u.sync", lambda payload, ctx: None)
    registry.register("u.async", coroutine_function)
    registry.register("u.object", Callable())
    assert [registry.is_async(t) for t in ("u.sync", "u.async", "u.object")] == [False, True, True]
    registry.register("u.async", lambda payload, ctx: None, replace=True)
    assert not registry.is_async("u.async") and not is_async_handler(len)


# --- sync slots -----------------------------------------------------------------------------------


def pool(limit: int, registry: HandlerRegistry) -> tuple[Slots, list[RunningAttempt], threading.Condition]:
    done: list[RunningAttempt] = []
    changed = threading.Condition()

    def on_done(item: RunningAttempt) -> None:
        with changed:
            done.append(item)
            changed.notify_all()

    return Slots(limit, registry, on_done, LOG), done, changed


def wait_done(done: list, changed: threading.Condition, count: int) -> None:
    with changed:
        assert changed.wait_for(lambda: len(done) >= count, timeout=20), len(done)


def test_slot_threads_start_lazily_never_more_than_attempts_held_or_the_limit():
    registry = HandlerRegistry()
    registry.register("u.noop", lambda payload, ctx: None)
    registry.register("u.slow", lambda payload, ctx: time.sleep(0.3))
    slots, done, changed = pool(8, registry)
    assert slots.threads == []  # nothing handed over yet: no thread
    slots.submit_many([attempt("u.noop")])
    wait_done(done, changed, 1)
    assert len(slots.threads) == 1
    # Trivial handlers: the threads that are there take them one after the other.
    slots.submit_many([attempt("u.noop", task_id=i) for i in range(200)])
    wait_done(done, changed, 201)
    assert len(slots.threads) <= 8
    # Slow handlers spread over the limit, and no further.
    started = time.monotonic()
    slots.submit_many([attempt("u.slow", task_id=i) for i in range(16)])
    wait_done(done, changed, 217)
    assert len(slots.threads) == 8
    assert 0.55 < time.monotonic() - started < 3.0  # two rounds of 8 in parallel, not 16 in a row
    assert all(item.outcome is not None and item.outcome.outcome == "succeeded" for item in done)
    slots.stop()
    for thread in slots.threads:
        thread.join(5)
        assert not thread.is_alive()


# --- the event loop of async handlers -----------------------------------------------------------------


class Loop:
    """An AsyncRunner in threads of its own, with what it hands back."""

    def __init__(self, registry: HandlerRegistry) -> None:
        self.done: list[RunningAttempt] = []
        self.batches = 0
        self.changed = threading.Condition()
        self.halt = threading.Event()
        self.runner = AsyncRunner(registry, AttemptTable(), self.on_done, self.halt, LOG)
        self.runner.open()
        self.threads = [threading.Thread(target=self.runner.run), threading.Thread(target=self.runner.watch)]
        for thread in self.threads:
            thread.start()

    def on_done(self, items: list[RunningAttempt]) -> None:
        with self.changed:
            self.done.extend(items)
            self.batches += 1
            self.changed.notify_all()

    def wait(self, count: int) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: len(self.done) >= count, timeout=20), len(self.done)

    def close(self) -> None:
        self.halt.set()
        self.runner.stop()
        for thread in self.threads:
            thread.join(10)


def test_async_attempts_come_back_in_batches_with_their_outcomes():
    registry = HandlerRegistry()

    async def noop(payload, ctx):
        return None

    async def echo(payload, ctx):
        await asyncio.sleep(0)
        return payload

    async def refuses(payload, ctx):
        raise TaskCancelled("no")

    for name, fn in (("a.noop", noop), ("a.echo", echo), ("a.refuses", refuses)):
        registry.register(name, fn)
    loop = Loop(registry)
    try:
        items = [attempt("a.noop", task_id=i) for i in range(500)]
        items += [attempt("a.echo", '{"x": 1}', task_id=1000), attempt("a.refuses", task_id=1001)]
        items.append(attempt("a.echo", '{"a":' + "[" * 1000 + "]" * 1000 + "}", task_id=1002))
        loop.runner.submit_many(items)
        loop.wait(len(items))
        assert loop.batches <= 4  # handed back once per loop iteration, not once per attempt
        outcomes = {item.ctx.task_id: item.outcome for item in loop.done}
        assert outcomes[1000] is not None and (outcomes[1000].outcome, outcomes[1000].result) == (
            "succeeded",
            '{"x": 1}',
        )
        assert outcomes[1001] is not None and outcomes[1001].outcome == "cancelled"
        poison = outcomes[1002]
        assert poison is not None and poison.error is not None and poison.error["type"] == "taskforge.PayloadError"
    finally:
        loop.close()


def test_a_cancel_request_and_a_deadline_cancel_the_coroutine():
    seen: list[str] = []
    registry = HandlerRegistry()

    async def waits(payload, ctx):
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            seen.append(f"{ctx.task_id} cancelled")
            raise

    async def cooperative(payload, ctx):
        if await ctx.async_sleep(60):
            raise TaskCancelled("stopped on request")  # the one step it gets before the cancel
        return None

    registry.register("a.waits", waits)
    registry.register("a.cooperative", cooperative)
    loop = Loop(registry)
    try:
        cancelled, cooperating = attempt("a.waits", task_id=1), attempt("a.cooperative", task_id=2)
        late = attempt("a.waits", task_id=3, deadline=time.monotonic() + 0.2)
        loop.runner.submit_many([cancelled, cooperating, late])
        time.sleep(0.1)
        for item in (cancelled, cooperating):  # what the renewer does when it learns of tf_cancel
            item.ctx.mark_cancel_requested()
        loop.runner.interrupt([cancelled, cooperating])
        loop.wait(3)
        assert cancelled.outcome is not None and cancelled.outcome.outcome == "cancelled"
        assert (
            cancelled.outcome.error is not None and cancelled.outcome.error["message"] == "cancel requested (tf_cancel)"
        )
        assert cooperating.outcome is not None and cooperating.outcome.outcome == "cancelled"
        assert cooperating.outcome.error is not None and cooperating.outcome.error["message"] == "stopped on request"
        assert late.outcome is not None and late.outcome.outcome == "retryable" and late.ctx.timed_out
        assert late.outcome.error is not None and late.outcome.error["type"] == "taskforge.AttemptTimedOut"
        assert sorted(seen) == ["1 cancelled", "3 cancelled"]
    finally:
        loop.close()


def test_the_watchdog_names_the_attempt_that_blocks_the_loop(caplog):
    registry = HandlerRegistry()

    async def blocks(payload, ctx):
        time.sleep(1.6)

    registry.register("a.blocks", blocks)
    loop = Loop(registry)
    try:
        item = attempt("a.blocks", task_id=77)
        loop.runner._attempts.add(item)
        with caplog.at_level(logging.INFO, logger=LOG.name):
            loop.runner.submit_many([item])
            loop.wait(1)
            time.sleep(0.6)
        text = caplog.text
        assert "the event loop of async handlers has not run for" in text
        assert "it is blocked in task 77 attempt 1 (type a.blocks)" in text
        assert "runs again after a stall of" in text
    finally:
        loop.close()


# --- array literals -------------------------------------------------------------------------------


def test_array_literals_quote_every_text_and_escape_quotes_and_backslashes():
    assert int_array([7, 8, 9000000000]) == "{7,8,9000000000}"
    assert int_array([]) == "{}"
    assert text_array(["succeeded", None, "null"]) == '{"succeeded",NULL,"null"}'
    assert text_array(['{"a": "b\\\\c"}']) == '{"{\\"a\\": \\"b\\\\\\\\c\\"}"}'
