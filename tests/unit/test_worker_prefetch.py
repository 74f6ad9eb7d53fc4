"""``--prefetch`` without a database: the setting's range and the attempts it lets a worker hold,
the outcome of an attempt that waited for a slot and must not start (``execute.not_started``),
and the limits of the sync slots and the event loop: attempts beyond ``concurrency`` wait and
start one by one as running handlers end."""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
import time

import pytest
from click.testing import CliRunner

from taskforge.cli import main
from taskforge.handlers import HandlerRegistry, Outcome, TaskContext
from taskforge.worker.aio import AsyncRunner
from taskforge.worker.attempts import AttemptTable, RunningAttempt
from taskforge.worker.config import MAX_PREFETCH, WorkerConfig
from taskforge.worker.execute import Slots, not_started, prepare
from taskforge.worker.permits import RunPermits

from worker_units import held_attempt

LOG = logging.getLogger("test.worker.prefetch")


def attempt(task_type: str, task_id: int, deadline: float | None = None) -> RunningAttempt:
    return held_attempt(task_type, task_id=task_id, deadline=deadline)


class Probe:
    """Records, across threads, which handlers run and how many at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running = 0
        self.most = 0
        self.calls: list[tuple[int, str]] = []  # (task_id, thread name), in the order handlers started
        self.spans: list[tuple[int, float, float]] = []  # (task_id, start, end), monotonic

    def enter(self, ctx: TaskContext) -> float:
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
            self.calls.append((ctx.task_id, threading.current_thread().name))
        return time.monotonic()

    def leave(self, ctx: TaskContext, started: float) -> None:
        with self.lock:
            self.running -= 1
            self.spans.append((ctx.task_id, started, time.monotonic()))


# --- the setting ------------------------------------------------------------------------------


@pytest.mark.parametrize("prefetch", [-1, MAX_PREFETCH + 1])
def test_prefetch_out_of_range_is_refused_naming_the_setting(prefetch):
    assert MAX_PREFETCH == 1000
    with pytest.raises(ValueError, match=r"^prefetch: must be between 0 and 1000, got "):
        WorkerConfig(prefetch=prefetch)


@pytest.mark.parametrize("value", ["-1", "1001"])
def test_the_worker_command_refuses_prefetch_out_of_range_before_it_connects(value):
    result = CliRunner().invoke(main, ["worker", "--prefetch", value, "--dsn", "host=127.0.0.1 port=1"])
    assert result.exit_code == 2, result.output
    assert "'--prefetch'" in result.output and "0<=x<=1000" in result.output, result.output


@pytest.mark.parametrize(
    ("concurrency", "prefetch", "held"), [(1, 0, 1), (1, 2, 3), (4, 1000, 1004), (10_000, 7, 10_007)]
)
def test_a_worker_holds_its_slots_and_the_attempts_claimed_ahead(concurrency, prefetch, held):
    config = WorkerConfig(concurrency=concurrency, prefetch=prefetch)
    assert (config.prefetch, config.held_limit) == (prefetch, held)
    assert WorkerConfig().prefetch == 0 and WorkerConfig(concurrency=5).held_limit == 5


# --- an attempt that waited for a slot ----------------------------------------------------------------


def test_not_started_says_how_a_waiting_attempt_ends_without_its_handler():
    fresh = TaskContext(task_id=1, attempt_number=1, task_type="t", queue="q", deadline=time.monotonic() + 60)
    assert not_started(fresh) is None

    cancelled = TaskContext(task_id=2, attempt_number=1, task_type="t", queue="q")
    cancelled.mark_cancel_requested()
    outcome = not_started(cancelled)
    assert outcome is not None and outcome.outcome == "cancelled"
    assert outcome.error is not None and outcome.error["type"] == "taskforge.TaskCancelled"
    assert "before the handler started" in outcome.error["message"]

    # The deadline passed on this process's clock, or a renewal was refused timed_out (which the
    # renewer records as a lost lease that timed out): retryable, which the database refuses
    # and recovery records timed_out.
    late = TaskContext(task_id=3, attempt_number=1, task_type="t", queue="q", timeout_seconds=0.5)
    late.deadline = time.monotonic() - 0.01
    refused = TaskContext(task_id=4, attempt_number=1, task_type="t", queue="q", timeout_seconds=2.0)
    refused.mark_lease_lost()
    refused.mark_timed_out()
    for ctx in (late, refused):
        outcome = not_started(ctx)
        assert outcome is not None and outcome.outcome == "retryable", ctx
        assert outcome.error is not None and outcome.error["type"] == "taskforge.AttemptTimedOut"
        assert f"timeout_seconds {ctx.timeout_seconds}" in outcome.error["message"]

    lost = TaskContext(task_id=5, attempt_number=1, task_type="t", queue="q")
    lost.mark_lease_lost()
    outcome = not_started(lost)
    assert outcome is not None and outcome.outcome == "failed"
    assert outcome.error is not None and outcome.error["type"] == "taskforge.LeaseLost"


def test_prepare_never_calls_the_handler_of_an_attempt_that_must_not_start():
    calls: list[int] = []
    registry = HandlerRegistry()
    registry.register("u.t", lambda payload, ctx: calls.append(ctx.task_id))
    item = attempt("u.t", 1)
    prepared = prepare(item, registry)
    assert not isinstance(prepared, Outcome)  # the handler and the decoded payload
    item.ctx.mark_cancel_requested()
    prepared = prepare(item, registry)
    assert isinstance(prepared, Outcome) and prepared.outcome == "cancelled"
    assert calls == []


# --- the sync slots ---------------------------------------------------------------------------------


class Done:
    """What the slots or the event loop hand back (``on_done`` of either)."""

    def __init__(self) -> None:
        self.items: list[RunningAttempt] = []
        self.changed = threading.Condition()

    def one(self, item: RunningAttempt) -> None:
        self.many([item])

    def many(self, items: list[RunningAttempt]) -> None:
        with self.changed:
            self.items.extend(items)
            self.changed.notify_all()

    def wait(self, count: int) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: len(self.items) >= count, timeout=20), len(self.items)

    def outcomes(self) -> dict[int, str]:
        return {item.ctx.task_id: item.outcome.outcome for item in self.items if item.outcome is not None}


def sync_registry(probe: Probe, seconds: float) -> HandlerRegistry:
    def slow(payload, ctx):
        started = probe.enter(ctx)
        time.sleep(seconds)
        probe.leave(ctx, started)

    registry = HandlerRegistry()
    registry.register("u.slow", slow)
    return registry


def test_one_slot_runs_three_attempts_one_at_a_time_in_one_thread_in_order():
    probe, done = Probe(), Done()
    slots = Slots(1, sync_registry(probe, 0.1), done.one, LOG)
    try:
        slots.submit_many([attempt("u.slow", i) for i in (1, 2, 3)])
        done.wait(3)
        assert [item.ctx.task_id for item in done.items] == [1, 2, 3]
        assert done.outcomes() == {1: "succeeded", 2: "succeeded", 3: "succeeded"}
        assert probe.most == 1
        assert [task_id for task_id, _ in probe.calls] == [1, 2, 3]
        assert len({thread for _, thread in probe.calls}) == 1 and len(slots.threads) == 1
        spans = sorted(probe.spans, key=lambda span: span[1])
        assert all(before[2] <= after[1] for before, after in itertools.pairwise(spans)), spans
    finally:
        slots.stop()
        for thread in slots.threads:
            thread.join(5)


def test_slots_run_at_most_their_limit_and_end_waiting_attempts_that_must_not_start():
    probe, done = Probe(), Done()
    slots = Slots(2, sync_registry(probe, 0.3), done.one, LOG)
    try:
        items = [attempt("u.slow", i) for i in range(1, 7)]
        cancelled, late = items[4], items[5]
        late.ctx.timeout_seconds, late.ctx.deadline = 0.2, time.monotonic() + 0.2
        slots.submit_many(items)
        time.sleep(0.1)  # 1 and 2 run; the rest wait for them (what the renewer does meanwhile:)
        cancelled.ctx.mark_cancel_requested()
        done.wait(6)
        assert probe.most == 2 and len(slots.threads) == 2
        assert sorted(task_id for task_id, _ in probe.calls) == [1, 2, 3, 4]
        assert done.outcomes() == {
            1: "succeeded",
            2: "succeeded",
            3: "succeeded",
            4: "succeeded",
            5: "cancelled",
            6: "retryable",
        }
    finally:
        slots.stop()
        for thread in slots.threads:
            thread.join(5)


# --- the event loop of async handlers --------------------------------------------------------------


class Held:
    """A worker's wiring with ``--prefetch`` and no database: ``limit`` permits (its
    ``concurrency``) in front of sync slots and an event loop, each handing ended attempts back
    through the permits (as lifecycle.py does), in threads of their own."""

    def __init__(self, registry: HandlerRegistry, limit: int) -> None:
        self.done = Done()
        self.halt = threading.Event()
        self.permits = RunPermits(limit, self._hand_over)
        self.slots = Slots(limit, registry, self.permits.releasing_one(self.done.one), LOG)
        self.runner = AsyncRunner(registry, AttemptTable(), self.permits.releasing_many(self.done.many), self.halt, LOG)
        self.runner.open()
        self.threads = [threading.Thread(target=self.runner.run), threading.Thread(target=self.runner.watch)]
        for thread in self.threads:
            thread.start()

    def _hand_over(self, items: list[RunningAttempt]) -> None:
        sync = [item for item in items if not item.is_async]
        if len(sync) < len(items):
            self.runner.submit_many([item for item in items if item.is_async])
        if sync:
            self.slots.submit_many(sync)

    def close(self) -> None:
        self.slots.stop()
        for thread in self.slots.threads:
            thread.join(5)
        self.halt.set()
        self.runner.stop()
        for thread in self.threads:
            thread.join(10)


def async_registry(probe: Probe, seconds: float) -> HandlerRegistry:
    async def slow(payload, ctx):
        started = probe.enter(ctx)
        try:
            await asyncio.sleep(seconds)
        finally:
            probe.leave(ctx, started)

    registry = HandlerRegistry()
    registry.register("a.slow", slow)
    return registry


def mixed_registry(probe: Probe, seconds: float) -> HandlerRegistry:
    registry = sync_registry(probe, seconds)
    handler = async_registry(probe, seconds).get("a.slow")
    assert handler is not None
    registry.register("a.slow", handler)
    return registry


def test_permits_start_at_most_their_limit_in_claim_order_and_every_attempt_offered():
    probe = Probe()
    held = Held(async_registry(probe, 0.1), limit=2)
    try:
        held.permits.offer([attempt("a.slow", i) for i in range(1, 6)])
        held.done.wait(5)
        assert held.done.outcomes() == dict.fromkeys(range(1, 6), "succeeded")
        assert probe.most == 2  # two at once, never more
        assert [task_id for task_id, _ in probe.calls] == [1, 2, 3, 4, 5]  # the waiting ones in order
        # A later offer finds the permits free again (every one came back).
        assert (held.permits.running, held.permits.waiting) == (0, 0)
        held.permits.offer([attempt("a.slow", i) for i in range(6, 9)])
        held.done.wait(8)
        assert probe.most == 2 and len(probe.calls) == 8
    finally:
        held.close()


def test_waiting_async_attempts_that_must_not_start_end_without_their_handler():
    probe = Probe()
    held = Held(async_registry(probe, 0.4), limit=1)
    try:
        first = attempt("a.slow", 1)
        cancelled = attempt("a.slow", 2)
        late = attempt("a.slow", 3, deadline=time.monotonic() + 0.2)
        after = attempt("a.slow", 4)
        held.permits.offer([first, cancelled, late, after])
        time.sleep(0.1)
        # What the renewer does when it learns of tf_cancel for an attempt that waits.
        cancelled.ctx.mark_cancel_requested()
        held.runner.interrupt([cancelled])
        held.done.wait(4)
        assert held.done.outcomes() == {1: "succeeded", 2: "cancelled", 3: "retryable", 4: "succeeded"}
        assert [task_id for task_id, _ in probe.calls] == [1, 4]
        assert probe.most == 1
        assert late.outcome is not None and late.outcome.error is not None
        assert late.outcome.error["type"] == "taskforge.AttemptTimedOut"
    finally:
        held.close()


def test_sync_and_async_handlers_share_the_permits_in_claim_order():
    """--concurrency counts both kinds together: one permit runs one handler at a time, whichever
    kind, and the attempts start in the order they were claimed: an async attempt claimed after
    sync ones does not go first (nor the other way round)."""
    probe = Probe()
    held = Held(mixed_registry(probe, 0.1), limit=1)
    try:
        kinds = ["u.slow", "u.slow", "a.slow", "u.slow", "a.slow", "a.slow"]
        held.permits.offer([attempt(kind, i) for i, kind in enumerate(kinds, 1)])
        held.permits.offer([attempt("u.slow", 7), attempt("a.slow", 8)])
        held.done.wait(8)
        assert held.done.outcomes() == dict.fromkeys(range(1, 9), "succeeded")
        assert probe.most == 1, probe.spans
        assert [task_id for task_id, _ in probe.calls] == list(range(1, 9))
        assert (held.permits.running, held.permits.waiting) == (0, 0)
    finally:
        held.close()


def test_an_offer_whose_start_fails_keeps_nothing():
    def broken(items):
        raise RuntimeError("the event loop of async handlers was not opened")

    permits = RunPermits(1, broken)
    with pytest.raises(RuntimeError):
        permits.offer([attempt("a.slow", 1), attempt("a.slow", 2)])
    assert (permits.running, permits.waiting) == (0, 0)


def test_an_attempt_that_waited_for_a_permit_says_at_info_when_it_starts(caplog):
    started: list[int] = []
    permits = RunPermits(1, lambda items: started.extend(item.ctx.task_id for item in items), LOG)
    first, second = attempt("a.slow", 1), attempt("a.slow", 2)
    second.claimed_at = time.monotonic() - 0.25
    with caplog.at_level(logging.INFO, logger=LOG.name):
        permits.offer([first, second])
        assert started == [1] and not caplog.records  # the first starts at once: nothing to say
        permits.release()
    assert started == [1, 2]
    [record] = caplog.records
    assert record.getMessage().startswith("starting task 2 attempt 1, claimed ahead, after 0.2")
    assert record.getMessage().endswith(" s waiting for a slot")
    assert record.task_id == 2
    with caplog.at_level(logging.WARNING, logger=LOG.name):  # not at WARNING (the benchmarks' level)
        caplog.clear()
        permits.offer([attempt("a.slow", 3)])
        permits.release()
        permits.release()
    assert not caplog.records
