"""``taskforge worker --prefetch N`` as a real process: attempts claimed ahead of a free slot wait
in the worker, never run more handlers at once than ``--concurrency``, end without their handler
when cancelled while they wait, run during a graceful stop, and are recovered after a crash.

The handlers are a module written to the test's tmp_path (the ``probe`` fixture): each call
leaves a marker file ``ran-TASK-ATTEMPT`` when it starts and appends its handler window
(monotonic start and end) to ``spans.jsonl``, so a test sees which handlers ran and whether any
two ran at once, which the attempt rows cannot show (with prefetch, an attempt's ``started_at``
is its claim, not its handler's start)."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from itest_support import (
    LONG,
    all_in,
    attempts,
    history,
    submit,
    task,
    wait_for,
    wait_log,
    wait_registered,
    wait_running,
)

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(autouse=True)
def no_invariant_violations(conn, queue):
    """After each test: no task of its queue breaks a state-machine rule (tf_invariant_violations)."""
    yield
    rows = conn.execute(
        "SELECT v.rule, v.task_id, v.detail FROM taskforge.tf_invariant_violations v"
        " JOIN taskforge.tasks t USING (task_id) WHERE t.queue = %s",
        (queue,),
    ).fetchall()
    assert rows == []


def prefetch_worker(spawn, conn, queue, probe, prefetch="1", *options, name="w"):
    """A worker of ``queue`` with the probe's handlers, one slot and ``--prefetch``, registered;
    ``options``: more of its command line (e.g. a short lease)."""
    worker = spawn.worker(
        "--queue",
        queue,
        "--import",
        str(probe.module),
        "--concurrency",
        "1",
        "--prefetch",
        prefetch,
        *options,
        name=f"{queue}-{name}",
    )
    return worker, wait_registered(conn, worker)


PROBE_MODULE = '''
"""Handlers of tests/processes/test_worker_prefetch_processes.py (written there to a tmp folder)."""

import json
import os
import time
from pathlib import Path

from taskforge import handler


def _seconds(payload, ctx):
    ms = payload["ms"] if ctx.attempt_number == 1 else payload.get("retry_ms", payload["ms"])
    return ms / 1000.0


def _started(payload, ctx):
    (Path(payload["dir"]) / f"ran-{ctx.task_id}-{ctx.attempt_number}").touch()
    return time.monotonic()


def _ended(payload, ctx, started):
    span = {"task_id": ctx.task_id, "attempt": ctx.attempt_number, "start": started, "end": time.monotonic()}
    line = json.dumps(span)
    fd = os.open(Path(payload["dir"]) / "spans.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, (line + "\\n").encode())
    finally:
        os.close(fd)


@handler("itest.prefetch_probe")
def probe(payload, ctx):
    started = _started(payload, ctx)
    try:
        ctx.sleep(_seconds(payload, ctx))
    finally:
        _ended(payload, ctx, started)
    return {"attempt": ctx.attempt_number}


@handler("itest.prefetch_probe_async")
async def probe_async(payload, ctx):
    started = _started(payload, ctx)
    try:
        await ctx.async_sleep(_seconds(payload, ctx))
    finally:
        _ended(payload, ctx, started)
    return {"attempt": ctx.attempt_number}
'''

SYNC, ASYNC = "itest.prefetch_probe", "itest.prefetch_probe_async"


class Probe:
    """The handler module and the folder its handlers leave their traces in."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.module = folder / "prefetch_probe.py"
        self.module.write_text(PROBE_MODULE)

    def payload(self, ms: int, retry_ms: int | None = None) -> dict:
        payload: dict = {"ms": ms, "dir": str(self.folder)}
        if retry_ms is not None:
            payload["retry_ms"] = retry_ms
        return payload

    def ran(self, task_id: int, attempt_number: int = 1) -> bool:
        return (self.folder / f"ran-{task_id}-{attempt_number}").exists()

    def spans(self) -> list[dict]:
        path = self.folder / "spans.jsonl"
        if not path.exists():
            return []
        return sorted((json.loads(line) for line in path.read_text().splitlines()), key=lambda s: s["start"])

    def most_at_once(self) -> int:
        """The most handler windows that overlapped at any moment."""
        events = sorted([(s["start"], 1) for s in self.spans()] + [(s["end"], -1) for s in self.spans()])
        running = most = 0
        for _, step in events:  # an end sorts before a start at the same instant
            running += step
            most = max(most, running)
        return most


@pytest.fixture()
def probe(conn, tmp_path) -> Probe:
    folder = tmp_path / "probe"
    folder.mkdir()
    for task_type in (SYNC, ASYNC):
        conn.execute(
            "SELECT taskforge.tf_register_task_type(task_type => %s, backoff_base_seconds => 0.1, backoff_jitter => 0)",
            (task_type,),
        )
    return Probe(folder)


def running_count(conn, task_ids: list[int]) -> int:
    return conn.execute(
        "SELECT count(*) FROM taskforge.tasks WHERE task_id = ANY(%s) AND state = 'RUNNING'", (task_ids,)
    ).fetchone()[0]


@pytest.mark.parametrize("task_type", [SYNC, ASYNC])
def test_one_slot_and_two_ahead_drains_the_queue_one_handler_at_a_time(spawn, conn, queue, probe, task_type):
    task_ids = [submit(conn, task_type, probe.payload(60), queue=queue) for _ in range(30)]
    worker, _ = prefetch_worker(spawn, conn, queue, probe, "2")
    held: list[int] = []

    def drained() -> bool:
        held.append(running_count(conn, task_ids))
        return all_in(conn, task_ids, {"SUCCEEDED"})

    wait_for(drained, timeout=60, message="all tasks to succeed", procs=[worker], interval=0.01)
    assert "concurrency=1 prefetch=2" in worker.log()
    assert all(history(conn, t) == ["SUCCEEDED"] for t in task_ids)
    # It holds its slot and two attempts claimed ahead (their rows RUNNING from the claim), no more...
    assert max(held) == 3, held
    # ...and runs one handler at a time: no two handler windows overlap.
    spans = probe.spans()
    assert sorted(s["task_id"] for s in spans) == sorted(task_ids)
    assert probe.most_at_once() == 1, spans
    # Nothing ended without its handler (every attempt ran it once).
    assert all(probe.ran(t) for t in task_ids)


@pytest.mark.parametrize("task_type", [SYNC, ASYNC])
def test_a_task_cancelled_while_it_waits_ends_cancelled_without_its_handler(spawn, conn, queue, probe, task_type):
    worker, _ = prefetch_worker(spawn, conn, queue, probe, "1", "--lease-seconds", "1")
    busy = submit(conn, task_type, probe.payload(4000), queue=queue)
    wait_running(conn, busy, 1, procs=[worker])
    wait_for(lambda: probe.ran(busy), message="the first handler to start", procs=[worker])
    waiting = submit(conn, task_type, probe.payload(10), queue=queue)
    wait_running(conn, waiting, 1, procs=[worker])  # claimed ahead: its attempt runs, its handler waits
    wait_log(worker, f"claimed task {waiting} attempt 1")
    assert conn.execute(
        "SELECT task_state, cancel_requested FROM taskforge.tf_cancel(task_id => %s)", (waiting,)
    ).fetchone() == ("RUNNING", True)
    # The renewer (every 1/3 s) learns of it while the first handler still holds the only slot.
    wait_log(worker, f"task {waiting} attempt 1: cancel requested", timeout=10)
    assert task(conn, busy)["state"] == "RUNNING"

    wait_for(
        lambda: all_in(conn, [busy, waiting], {"SUCCEEDED", "CANCELLED"}), message="both tasks to end", procs=[worker]
    )
    assert history(conn, busy) == ["SUCCEEDED"] and probe.ran(busy)
    rows = attempts(conn, waiting)
    assert [(a["state"], a["outcome"]) for a in rows] == [("CANCELLED", "cancelled")]
    row = task(conn, waiting)
    assert row["state"] == "CANCELLED"
    assert "before the handler started" in row["last_error"]["message"], row["last_error"]
    assert not probe.ran(waiting)  # its handler was never called
    assert [s["task_id"] for s in probe.spans()] == [busy]
    # It ended when the slot freed, not before the first handler did.
    assert rows[0]["finished_at"] >= attempts(conn, busy)[0]["finished_at"]


def test_a_task_whose_deadline_passes_while_it_waits_is_timed_out_without_its_handler_and_retried(
    spawn, conn, queue, probe
):
    spawn.scheduler()
    worker, _ = prefetch_worker(spawn, conn, queue, probe, "1", "--lease-seconds", "2")
    busy = submit(conn, SYNC, probe.payload(3000), queue=queue)
    wait_for(lambda: probe.ran(busy), message="the first handler to start", procs=[worker])
    # Its deadline (1 s) runs from the claim: it passes while the task waits for the slot.
    late = conn.execute(
        "SELECT task_id FROM taskforge.tf_submit(task_type => %s, payload => %s::jsonb, queue => %s, "
        "max_attempts => 3, timeout_seconds => 1)",
        (SYNC, json.dumps(probe.payload(50)), queue),
    ).fetchone()[0]
    wait_running(conn, late, 1, procs=[worker])
    wait_log(worker, f"claimed task {late} attempt 1")

    wait_for(lambda: task(conn, late)["state"] == "SUCCEEDED", message="the late task to succeed", procs=[worker])
    assert history(conn, busy) == ["SUCCEEDED"]
    rows = attempts(conn, late)
    assert [(a["attempt_number"], a["state"], a["outcome"]) for a in rows] == [
        (1, "ABANDONED", "timed_out"),
        (2, "SUCCEEDED", "succeeded"),
    ], rows
    assert not probe.ran(late, 1) and probe.ran(late, 2)  # attempt 1 ended without its handler
    assert probe.most_at_once() == 1


def test_sigterm_runs_the_waiting_attempt_in_the_grace_period_and_exits_0(spawn, conn, queue, probe):
    worker, _ = prefetch_worker(spawn, conn, queue, probe, "1", "--lease-seconds", "2", "--grace-seconds", "30")
    running = submit(conn, SYNC, probe.payload(2500), queue=queue)
    wait_for(lambda: probe.ran(running), message="the first handler to start", procs=[worker])
    waiting = submit(conn, SYNC, probe.payload(500), queue=queue)
    wait_running(conn, waiting, 1, procs=[worker])
    wait_log(worker, f"claimed task {waiting} attempt 1")
    left = submit(conn, "noop", queue=queue)  # beyond the 2 attempts held: not claimed
    assert not probe.ran(waiting)  # it waits for the slot

    worker.signal(signal.SIGTERM)
    assert worker.wait(LONG) == 0, worker.log()

    for task_id in (running, waiting):
        assert history(conn, task_id) == ["SUCCEEDED"], task_id
        assert task(conn, task_id)["state"] == "SUCCEEDED"
    assert probe.ran(waiting)  # it ran during the grace period
    assert [s["task_id"] for s in probe.spans()] == [running, waiting]
    assert probe.most_at_once() == 1
    row = task(conn, left)
    assert (row["state"], row["attempt_count"]) == ("QUEUED", 0)
    log = worker.log()
    assert "SIGTERM received" in log and "lease lost" not in log
    assert log.count("claimed task") == 2


def test_sigkill_with_one_running_and_one_waiting_loses_no_task(spawn, conn, queue, probe):
    spawn.scheduler()
    victim, victim_id = prefetch_worker(spawn, conn, queue, probe, "1", "--lease-seconds", "2", name="victim")
    running = submit(conn, SYNC, probe.payload(60_000, retry_ms=100), queue=queue)
    wait_for(lambda: probe.ran(running), message="the first handler to start", procs=[victim])
    waiting = submit(conn, SYNC, probe.payload(100), queue=queue)
    wait_running(conn, waiting, 1, procs=[victim])
    wait_log(victim, f"claimed task {waiting} attempt 1")
    assert not probe.ran(waiting)
    victim.signal(signal.SIGKILL)
    assert victim.wait(30) == -signal.SIGKILL

    rescuer = spawn.worker("--queue", queue, "--import", str(probe.module), name=f"{queue}-rescuer")
    rescuer_id = wait_registered(conn, rescuer)
    wait_for(lambda: all_in(conn, [running, waiting], {"SUCCEEDED"}), message="both tasks to succeed", procs=[rescuer])
    for task_id in (running, waiting):
        rows = attempts(conn, task_id)
        assert [(a["attempt_number"], a["state"], a["outcome"]) for a in rows] == [
            (1, "ABANDONED", "lease_expired"),
            (2, "SUCCEEDED", "succeeded"),
        ], rows
        assert str(rows[0]["worker_id"]) == victim_id and str(rows[1]["worker_id"]) == rescuer_id
        assert rows[0]["abandoned_at"] >= rows[0]["lease_expires_at"]
        assert probe.ran(task_id, 2)
    assert not probe.ran(waiting, 1)  # claimed ahead by the victim, never started there


def test_sync_and_async_handlers_share_the_slots_and_start_in_claim_order_with_prefetch(spawn, conn, queue, probe):
    kinds = [SYNC, SYNC, ASYNC, SYNC, ASYNC, ASYNC]
    task_ids = [submit(conn, kind, probe.payload(300), queue=queue) for kind in kinds]
    worker, _ = prefetch_worker(spawn, conn, queue, probe, "3")
    wait_for(lambda: all_in(conn, task_ids, {"SUCCEEDED"}), message="every task to succeed", procs=[worker])
    # --concurrency counts both kinds together (docs/worker.md, "Async handlers"): one at a time,
    # and in the claim order (created_at here), whatever the kind: neither holds the other back.
    assert probe.most_at_once() == 1, probe.spans()
    assert [span["task_id"] for span in probe.spans()] == task_ids, probe.spans()
