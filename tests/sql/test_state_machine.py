"""The task state machine against a model (issue 10, item 9): hypothesis drives random sequences
of submit, claim, renew, finalize with every outcome (one task or a batch), lease expiry, recover,
promote, cancel, retry and queue pause/resume, by three workers over two queues, and after every
step compares every task and attempt with a small Python model of docs/design.md §2 and checks
that tf_invariant_violations is empty.

The model predicts each answer exactly: which tasks a claim takes (priority DESC, then
submission order, paused queues skipped), each guard refusal and its reason, the state after
each outcome, what recovery and promotion move. Lease expiry is made by moving a lease into the
past as the table owner (tasks and attempt together); the task type has a zero backoff, so a
RETRYING task is due at once and promotion needs no waiting. The machine runs in a database of
its own, emptied before each example, because recovery and promotion act on every queue.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import psycopg
import pytest
from hypothesis import HealthCheck, settings, strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from psycopg.types.json import Jsonb

from taskforge import database as tfdb

TASK_TYPE = "sm.noop"
QUEUES = ("sm_a", "sm_b")
WORKERS = 3
OUTCOMES = ("succeeded", "failed", "retryable", "cancelled")
ATTEMPT_STATE = {"succeeded": "SUCCEEDED", "failed": "FAILED", "retryable": "FAILED", "cancelled": "CANCELLED"}


@dataclass
class Task:
    task_id: int
    queue: str
    priority: int
    max_attempts: int
    state: str = "QUEUED"
    owner: int | None = None  # index of the worker while RUNNING
    cancel_requested: bool = False
    lease_expired: bool = False
    attempts: list[str] = field(default_factory=list)  # attempt states, attempt i + 1 at index i

    @property
    def attempt_count(self) -> int:
        return len(self.attempts)


def guard(task: Task, worker: int, attempt_number: int) -> str | None:
    """The guard's refusal reason (docs/design.md §2 rule 4), or None when the call is allowed."""
    if task.state != "RUNNING":
        return "not_running"
    if attempt_number != task.attempt_count:
        return "stale_attempt"
    if worker != task.owner:
        return "not_owner"
    if task.lease_expired:
        return "lease_expired"
    return None


def state_after(task: Task, outcome: str) -> str:
    """The task's state after its current attempt ends with outcome (§2 rule 3)."""
    if outcome == "succeeded":
        return "SUCCEEDED"
    if outcome == "cancelled" or task.cancel_requested:
        return "CANCELLED"
    if outcome == "failed":
        return "FAILED"
    if outcome == "retryable":
        return "RETRYING" if task.attempt_count < task.max_attempts else "FAILED"
    # lease_expired (recovery): back at once while budget remains
    return "QUEUED" if task.attempt_count < task.max_attempts else "FAILED"


class TaskStateMachine(RuleBasedStateMachine):
    dsn: str = ""

    def __init__(self) -> None:
        super().__init__()
        self.conn = psycopg.connect(self.dsn, autocommit=True)
        self.tasks: dict[int, Task] = {}
        self.order: list[int] = []
        self.paused: set[str] = set()
        self.workers: list[str] = []

    def teardown(self) -> None:
        self.conn.close()

    # --- helpers ---------------------------------------------------------------------------------

    def pick(self, index: int, states: tuple[str, ...] | None = None) -> Task | None:
        candidates = [t for t in (self.tasks[i] for i in self.order) if states is None or t.state in states]
        return candidates[index % len(candidates)] if candidates else None

    def pick_target(self, index: int, running: bool) -> Task | None:
        """A RUNNING task when ``running`` and there is one (the calls that can be accepted),
        else any task (the refusals)."""
        return (self.pick(index, ("RUNNING",)) if running else None) or self.pick(index)

    @staticmethod
    def caller(task: Task, who: str, index: int) -> tuple[int, int]:
        """(worker, attempt_number) of a call about task: its owner with the current attempt, its
        owner with the previous attempt, or another worker."""
        owner = task.owner if task.owner is not None else index % WORKERS
        if who == "owner":
            return owner, max(1, task.attempt_count)
        if who == "stale":
            return owner, max(1, task.attempt_count - 1)
        return (owner + 1 + index % (WORKERS - 1)) % WORKERS, max(1, task.attempt_count)

    def finish_attempt(self, task: Task, outcome: str) -> None:
        task.attempts[-1] = ATTEMPT_STATE[outcome]
        task.state = state_after(task, outcome)
        task.owner, task.lease_expired = None, False

    # --- rules -----------------------------------------------------------------------------------

    @initialize()
    def empty_database(self) -> None:
        with self.conn.transaction():
            self.conn.execute("TRUNCATE taskforge.attempts, taskforge.tasks, taskforge.queues")
        self.workers = [
            str(self.conn.execute("SELECT taskforge.tf_register_worker(name => %s)", (f"sm-{i}",)).fetchone()[0])
            for i in range(WORKERS)
        ]

    @rule(queue=st.sampled_from(QUEUES), priority=st.integers(0, 1), max_attempts=st.integers(1, 3))
    def submit(self, queue: str, priority: int, max_attempts: int) -> None:
        task_id, state, created = self.conn.execute(
            "SELECT * FROM taskforge.tf_submit(task_type => %s, queue => %s, priority => %s, max_attempts => %s)",
            (TASK_TYPE, queue, priority, max_attempts),
        ).fetchone()
        assert (state, created) == ("QUEUED", True)
        self.tasks[task_id] = Task(task_id, queue, priority, max_attempts)
        self.order.append(task_id)

    @rule(
        requests=st.lists(
            st.tuples(st.sampled_from(QUEUES), st.integers(0, 1), st.integers(1, 2)), min_size=1, max_size=3
        )
    )
    def submit_many(self, requests: list[tuple[str, int, int]]) -> None:
        rows = self.conn.execute(
            "SELECT task_id, state, created FROM taskforge.tf_submit_many(requests => %s)",
            (Jsonb([{"task_type": TASK_TYPE, "queue": q, "priority": p, "max_attempts": m} for q, p, m in requests]),),
        ).fetchall()
        assert [(state, created) for _, state, created in rows] == [("QUEUED", True)] * len(requests)
        for (task_id, _, _), (queue, priority, max_attempts) in zip(rows, requests, strict=True):
            self.tasks[task_id] = Task(task_id, queue, priority, max_attempts)
            self.order.append(task_id)

    @rule(worker=st.integers(0, WORKERS - 1), max_tasks=st.integers(1, 3))
    def claim(self, worker: int, max_tasks: int) -> None:
        rows = self.conn.execute(
            "SELECT task_id, attempt_number FROM taskforge.tf_claim(worker_id => %s, queues => %s, max_tasks => %s)",
            (self.workers[worker], list(QUEUES), max_tasks),
        ).fetchall()
        eligible = [
            t for t in (self.tasks[i] for i in self.order) if t.state == "QUEUED" and t.queue not in self.paused
        ]
        eligible.sort(key=lambda t: (-t.priority, self.order.index(t.task_id)))
        expected = eligible[:max_tasks]
        assert [r[0] for r in rows] == [t.task_id for t in expected]
        for task in expected:
            task.attempts.append("RUNNING")
            task.state, task.owner, task.lease_expired = "RUNNING", worker, False
        assert [r[1] for r in rows] == [t.attempt_count for t in expected]

    @rule(worker=st.integers(0, WORKERS - 1), max_tasks=st.integers(1, 3))
    def claim_more(self, worker: int, max_tasks: int) -> None:
        """The same as claim: claims are drawn twice as often as most calls."""
        self.claim(worker, max_tasks)

    @rule(index=st.integers(0, 10**6), running=st.booleans(), who=st.sampled_from(("owner", "owner", "stale", "other")))
    def renew(self, index: int, running: bool, who: str) -> None:
        task = self.pick_target(index, running)
        if task is None:
            return
        worker, attempt = self.caller(task, who, index)
        renewed, cancel_requested, reason = self.conn.execute(
            "SELECT renewed, cancel_requested, reason FROM taskforge.tf_renew(task_id => %s, worker_id => %s, "
            "attempt_number => %s)",
            (task.task_id, self.workers[worker], attempt),
        ).fetchone()
        expected = guard(task, worker, attempt)
        assert (renewed, reason, cancel_requested) == (expected is None, expected, task.cancel_requested)

    @rule(
        index=st.integers(0, 10**6),
        running=st.booleans(),
        who=st.sampled_from(("owner", "owner", "stale", "other")),
        outcome=st.sampled_from(OUTCOMES),
    )
    def finalize(self, index: int, running: bool, who: str, outcome: str) -> None:
        task = self.pick_target(index, running)
        if task is None:
            return
        worker, attempt = self.caller(task, who, index)
        accepted, task_state, reason = self.conn.execute(
            "SELECT * FROM taskforge.tf_finalize(task_id => %s, worker_id => %s, attempt_number => %s, outcome => %s, "
            "error => %s)",
            (task.task_id, self.workers[worker], attempt, outcome, None if outcome == "succeeded" else '{"m": 1}'),
        ).fetchone()
        expected = guard(task, worker, attempt)
        assert (accepted, reason) == (expected is None, expected)
        if accepted:
            self.finish_attempt(task, outcome)
        assert task_state == task.state

    @precondition(lambda self: any(t.state == "RUNNING" for t in self.tasks.values()))
    @rule(index=st.integers(0, 10**6), outcome=st.sampled_from(OUTCOMES))
    def finalize_own(self, index: int, outcome: str) -> None:
        """The owner of a RUNNING task finalizes its current attempt (drawn as often as finalize)."""
        self.finalize(index, True, "owner", outcome)

    @precondition(lambda self: any(t.state == "RUNNING" for t in self.tasks.values()))
    @rule(index=st.integers(0, 10**6), outcomes=st.lists(st.sampled_from(OUTCOMES), min_size=1, max_size=4))
    def finalize_many(self, index: int, outcomes: list[str]) -> None:
        """The batch of the owner of a RUNNING task: the first len(outcomes) tasks it holds, plus
        one it does not hold when there is one (refused not_owner, the others unaffected)."""
        worker = self.pick(index, ("RUNNING",)).owner
        held = [t for t in (self.tasks[i] for i in self.order) if t.state == "RUNNING" and t.owner == worker]
        foreign = [t for t in self.tasks.values() if t.state == "RUNNING" and t.owner != worker][:1]
        batch = (held + foreign)[: len(outcomes)]
        outcomes = outcomes[: len(batch)]
        rows = self.conn.execute(
            "SELECT task_id, accepted, task_state, reason FROM taskforge.tf_finalize_many(worker_id => %s, "
            "task_ids => %s, attempt_numbers => %s, outcomes => %s)",
            (self.workers[worker], [t.task_id for t in batch], [t.attempt_count for t in batch], outcomes),
        ).fetchall()
        for (task_id, accepted, task_state, reason), task, outcome in zip(rows, batch, outcomes, strict=True):
            expected = guard(task, worker, task.attempt_count)
            assert (task_id, accepted, reason) == (task.task_id, expected is None, expected)
            if accepted:
                self.finish_attempt(task, outcome)
            assert task_state == task.state

    @rule(index=st.integers(0, 10**6))
    def expire_lease(self, index: int) -> None:
        """The owner stops renewing and its lease runs out (moved into the past as the table owner)."""
        task = self.pick(index, ("RUNNING",))
        if task is None or task.lease_expired:
            return
        with self.conn.transaction():
            self.conn.execute(
                "UPDATE taskforge.tasks SET lease_expires_at = clock_timestamp() - interval '1 second' "
                "WHERE task_id = %s",
                (task.task_id,),
            )
            self.conn.execute(
                "UPDATE taskforge.attempts SET lease_expires_at = clock_timestamp() - interval '1 second' "
                "WHERE task_id = %s AND attempt_number = %s",
                (task.task_id, task.attempt_count),
            )
        task.lease_expired = True

    @rule()
    def scheduler_pass(self) -> None:
        """What a scheduler does on each pass: tf_recover, then tf_promote."""
        self.recover()
        self.promote()

    def recover(self) -> None:
        recovered, ended = self.conn.execute("SELECT recovered, failed FROM taskforge.tf_recover()").fetchone()
        expired = [t for t in self.tasks.values() if t.state == "RUNNING" and t.lease_expired]
        for task in expired:
            task.attempts[-1] = "ABANDONED"
            task.state = state_after(task, "lease_expired")
            task.owner, task.lease_expired = None, False
        assert (recovered, ended) == (
            sum(t.state == "QUEUED" for t in expired),
            sum(t.state != "QUEUED" for t in expired),
        )

    def promote(self) -> None:
        promoted = self.conn.execute("SELECT promoted FROM taskforge.tf_promote()").fetchone()[0]
        retrying = [t for t in self.tasks.values() if t.state == "RETRYING"]
        assert promoted == len(retrying)
        for task in retrying:
            task.state = "QUEUED"

    @rule(index=st.integers(0, 10**6))
    def cancel(self, index: int) -> None:
        task = self.pick(index)
        if task is None or index % 2:  # a cancel ends most work: half as many keep the machine busy
            return
        state, requested = self.conn.execute(
            "SELECT * FROM taskforge.tf_cancel(task_id => %s, reason => 'model')", (task.task_id,)
        ).fetchone()
        if task.state in ("QUEUED", "RETRYING"):
            task.state, task.cancel_requested = "CANCELLED", True
        elif task.state == "RUNNING":
            task.cancel_requested = True
        assert (state, requested) == (task.state, task.cancel_requested)

    @rule(index=st.integers(0, 10**6), extra=st.integers(1, 2))
    def retry(self, index: int, extra: int) -> None:
        task = self.pick(index)
        if task is None:
            return
        try:
            state, max_attempts = self.conn.execute(
                "SELECT * FROM taskforge.tf_retry(task_id => %s, extra_attempts => %s)", (task.task_id, extra)
            ).fetchone()
        except psycopg.Error as exc:
            assert exc.sqlstate == "TF409" and task.state not in ("FAILED", "CANCELLED"), exc
            return
        assert task.state in ("FAILED", "CANCELLED")
        task.max_attempts = max(task.max_attempts, task.attempt_count + extra)
        task.state, task.cancel_requested = "QUEUED", False
        assert (state, max_attempts) == ("QUEUED", task.max_attempts)

    @rule(queue=st.sampled_from(QUEUES), pause=st.booleans())
    def pause_or_resume(self, queue: str, pause: bool) -> None:
        function = "tf_pause_queue" if pause else "tf_resume_queue"
        changed = self.conn.execute(f"SELECT taskforge.{function}(queue => %s)", (queue,)).fetchone()[0]
        assert changed == (pause != (queue in self.paused))
        (self.paused.add if pause else self.paused.discard)(queue)

    # --- checked after every step ------------------------------------------------------------------

    @invariant()
    def database_matches_the_model(self) -> None:
        rows = self.conn.execute(
            "SELECT task_id, state, attempt_count, max_attempts, owner_worker_id::text, "
            "cancel_requested_at IS NOT NULL FROM taskforge.tasks ORDER BY task_id"
        ).fetchall()
        assert rows == [
            (
                t.task_id,
                t.state,
                t.attempt_count,
                t.max_attempts,
                None if t.owner is None else self.workers[t.owner],
                t.cancel_requested,
            )
            for t in (self.tasks[i] for i in sorted(self.order))
        ]
        attempts = self.conn.execute(
            "SELECT task_id, array_agg(state::text ORDER BY attempt_number) FROM taskforge.attempts GROUP BY task_id"
        ).fetchall()
        assert dict(attempts) == {t.task_id: t.attempts for t in self.tasks.values() if t.attempts}

    @invariant()
    def no_invariant_violation(self) -> None:
        assert self.conn.execute("SELECT rule, task_id, detail FROM taskforge.tf_invariant_violations").fetchall() == []


@pytest.fixture()
def machine_dsn(fresh_database):
    """A database of the machine's own, migrated, with a task type whose retries are due at once."""
    dsn = fresh_database("taskforge_statemachine")
    tfdb.migrate(dsn)
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(
            "SELECT taskforge.tf_register_task_type(%s, backoff_base_seconds => 0, backoff_cap_seconds => 0, "
            "backoff_jitter => 0)",
            (TASK_TYPE,),
        )
    return dsn


@pytest.mark.timeout(900)  # passing takes about 10 s; shrinking a counterexample takes minutes
def test_the_task_state_machine_matches_its_model(machine_dsn):
    TaskStateMachine.dsn = machine_dsn
    run_state_machine_as_test(
        TaskStateMachine,
        settings=settings(
            max_examples=60,
            stateful_step_count=100,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
            database=None,
        ),
    )
