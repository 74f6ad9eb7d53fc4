"""What the chaos tests check after each fault, from the database and the handlers' run log.

:func:`check` reads every task submitted with an idempotency key (the chaos workload keys them
all), their attempts, ``tf_invariant_violations`` and the run log of ``chaos_handlers.py``, and
returns a :class:`Verdict`: the figures and a list of problems (empty when every rule holds):

* every task is terminal (``SUCCEEDED``, ``FAILED``, ``CANCELLED``) and none is lost: each key
  the workload submitted (acknowledged or not) has exactly one task;
* no task used more attempts than its budget, in the database or in the run log (each
  execution belongs to an attempt the database created);
* a task ends as its payload says (``ok``/``flaky`` ``SUCCEEDED``, ``fail`` ``FAILED``), unless
  faults took its whole budget: then every attempt it lost is ``ABANDONED``;
* at most one execution per attempt, at most one successful attempt per task, and two
  executions of one task overlap in time only when the earlier attempt was ``ABANDONED`` and
  the later one was claimed after the earlier one's lease had expired (what leases permit: a
  frozen or cut-off worker may still be running a handler it no longer owns);
* ``tf_invariant_violations`` is empty.

Times: the run log has wall-clock seconds (``time.time()``); the database's timestamps are read
as epoch seconds; both come from the same machine's clock. TOLERANCE absorbs the rounding.
"""

from __future__ import annotations

import json
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

__all__ = ["TERMINAL", "Run", "State", "Verdict", "check", "judge", "read_run_log", "read_state"]

TERMINAL = frozenset({"SUCCEEDED", "FAILED", "CANCELLED"})
#: Seconds of slack when wall-clock instants of the run log meet database timestamps.
TOLERANCE = 0.005
#: Executions a task's payload plans (a flaky task fails once on purpose).
PLANNED_RUNS = {"ok": 1, "flaky": 2, "fail": 1}

TASKS = """
SELECT idempotency_key, task_id, state, max_attempts, attempt_count, payload->>'kind'
  FROM taskforge.tasks WHERE idempotency_key IS NOT NULL
"""
ATTEMPTS = """
SELECT a.task_id, a.attempt_number, a.state, a.outcome, extract(epoch FROM a.started_at)::float8,
       extract(epoch FROM a.lease_expires_at)::float8, extract(epoch FROM a.finished_at)::float8
  FROM taskforge.attempts a JOIN taskforge.tasks t USING (task_id)
 WHERE t.idempotency_key IS NOT NULL
 ORDER BY a.task_id, a.attempt_number
"""
VIOLATIONS = "SELECT rule, task_id, attempt_number, detail FROM taskforge.tf_invariant_violations"


@dataclass
class Run:
    """One execution of a handler, from the run log (wall-clock seconds)."""

    pid: int
    start: float
    end: float | None = None


@dataclass
class Verdict:
    """Figures over every keyed task so far, and the problems found (empty = all rules hold)."""

    tasks: int = 0
    states: Counter[str] = field(default_factory=Counter)
    lost: int = 0
    attempts: int = 0
    abandoned: int = 0
    executions: int = 0
    #: Executions beyond what the payload plans: the at-least-once re-runs after a lost attempt.
    re_executions: int = 0
    #: Tasks with at least one such re-run.
    double_run_tasks: int = 0
    #: Pairs of executions of one task that overlapped in time (each after the lease expired).
    overlaps: int = 0
    max_attempts_used: int = 0
    budget_spent_by_faults: int = 0
    problems: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "tasks": self.tasks,
            "states": dict(self.states),
            "lost": self.lost,
            "attempts": self.attempts,
            "abandoned": self.abandoned,
            "executions": self.executions,
            "re_executions": self.re_executions,
            "double_run_tasks": self.double_run_tasks,
            "overlaps_after_lease_expiry": self.overlaps,
            "max_attempts_used": self.max_attempts_used,
            "budget_spent_by_faults": self.budget_spent_by_faults,
        }


def read_run_log(path: Path) -> tuple[dict[tuple[int, int], Run], list[str]]:
    """Executions by (task_id, attempt_number), and problems (an attempt executed twice, an end
    without a start)."""
    runs: dict[tuple[int, int], Run] = {}
    problems: list[str] = []
    if not path.exists():
        return runs, problems
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        entry = json.loads(line)
        key = (int(entry["task_id"]), int(entry["attempt_number"]))
        if entry["event"] == "start":
            if key in runs:
                problems.append(f"task {key[0]} attempt {key[1]}: executed twice")
            runs[key] = Run(pid=int(entry["pid"]), start=float(entry["at"]))
        elif key not in runs:
            problems.append(f"task {key[0]} attempt {key[1]}: an end without a start in the run log")
        else:
            runs[key].end = float(entry["at"])
    return runs, problems


@dataclass
class State:
    """What the checks read from the database: tasks by idempotency key (task_id, state,
    max_attempts, attempt_count, kind), attempts by task_id (attempt_number, state, outcome,
    started_at, lease_expires_at, finished_at; instants as epoch seconds), invariant violations."""

    tasks: dict[str, tuple[Any, ...]]
    attempts: dict[int, list[tuple[Any, ...]]]
    violations: list[tuple[Any, ...]]


def read_state(conn: psycopg.Connection[Any]) -> State:
    attempts: dict[int, list[tuple[Any, ...]]] = defaultdict(list)
    for row in conn.execute(ATTEMPTS).fetchall():
        attempts[row[0]].append(row[1:])
    return State(
        tasks={row[0]: row[1:] for row in conn.execute(TASKS).fetchall()},
        attempts=attempts,
        violations=conn.execute(VIOLATIONS).fetchall(),
    )


def check(
    conn: psycopg.Connection[Any],
    keys: dict[str, str],
    run_log: Path,
    killed: dict[int, float],
    alive_pids: set[int],
) -> Verdict:
    """Read the database and the run log, then :func:`judge`."""
    runs, problems = read_run_log(run_log)
    verdict = judge(read_state(conn), keys, runs, killed, alive_pids, time.time())
    verdict.problems[:0] = problems
    return verdict


def judge(
    state: State,
    keys: dict[str, str],
    runs: dict[tuple[int, int], Run],
    killed: dict[int, float],
    alive_pids: set[int],
    now: float,
) -> Verdict:
    """Check every rule of the module docstring.

    ``keys``: idempotency key -> planned kind of every task the workload submitted; ``runs``:
    executions from the run log; ``killed``: pid -> wall-clock second it was sent SIGKILL (its
    unfinished executions end there); ``alive_pids``: worker processes still running (their
    unfinished executions are still going, e.g. after a SIGSTOP); ``now``: wall-clock seconds."""
    verdict = Verdict()
    tasks, attempts = state.tasks, state.attempts
    verdict.problems.extend(f"tf_invariant_violations: {row}" for row in state.violations)
    runs_by_task: dict[int, dict[int, Run]] = defaultdict(dict)
    for (task_id, attempt_number), run in runs.items():
        runs_by_task[task_id][attempt_number] = run

    for key, kind in keys.items():
        if key not in tasks:
            verdict.lost += 1
            verdict.problems.append(f"lost: no task for idempotency key {key}")
            continue
        task_id, task_state, max_attempts, attempt_count, stored_kind = tasks[key]
        verdict.tasks += 1
        verdict.states[task_state] += 1
        if stored_kind != kind:
            verdict.problems.append(f"task {task_id} ({key}): payload kind {stored_kind!r}, submitted {kind!r}")
        if task_state not in TERMINAL:
            verdict.lost += 1
            verdict.problems.append(f"task {task_id} ({key}): not terminal but {task_state}")
        rows = attempts.get(task_id, [])
        verdict.attempts += len(rows)
        verdict.max_attempts_used = max(verdict.max_attempts_used, len(rows))
        if len(rows) != attempt_count or len(rows) > max_attempts:
            verdict.problems.append(
                f"task {task_id}: {len(rows)} attempts, attempt_count {attempt_count}, budget {max_attempts}"
            )
        by_number = {r[0]: r for r in rows}
        abandoned = [r for r in rows if r[1] == "ABANDONED"]
        verdict.abandoned += len(abandoned)
        if sum(1 for r in rows if r[1] == "SUCCEEDED") > 1:
            verdict.problems.append(f"task {task_id}: more than one successful attempt")
        task_runs = runs_by_task.get(task_id, {})
        _check_outcome(verdict, task_id, kind, task_state, max_attempts, rows)
        _check_runs(verdict, task_id, kind, max_attempts, by_number, task_runs, killed, alive_pids, now)
    return verdict


def _check_outcome(
    verdict: Verdict, task_id: int, kind: str, state: str, max_attempts: int, rows: list[tuple[Any, ...]]
) -> None:
    """The end state the payload plans, or a budget taken by faults (every other attempt lost)."""
    if state not in TERMINAL:
        return
    wanted = "FAILED" if kind == "fail" else "SUCCEEDED"
    if state == wanted:
        if state == "SUCCEEDED" and (not rows or rows[-1][1] != "SUCCEEDED"):
            verdict.problems.append(f"task {task_id}: SUCCEEDED but its last attempt is {rows[-1:]}")
        return
    planned_failures = 1 if kind == "flaky" else 0
    lost = sum(1 for r in rows if r[1] == "ABANDONED")
    if state == "FAILED" and len(rows) == max_attempts and lost + planned_failures >= max_attempts:
        verdict.budget_spent_by_faults += 1
        return
    verdict.problems.append(f"task {task_id} ({kind}): ended {state}; attempts {[(r[0], r[1], r[2]) for r in rows]}")


def _check_runs(
    verdict: Verdict,
    task_id: int,
    kind: str,
    max_attempts: int,
    by_number: dict[int, tuple[Any, ...]],
    task_runs: dict[int, Run],
    killed: dict[int, float],
    alive_pids: set[int],
    now: float,
) -> None:
    """Executions belong to attempts within the budget; overlaps only after a lease expired."""
    verdict.executions += len(task_runs)
    extra = len(task_runs) - PLANNED_RUNS[kind]
    if extra > 0:
        verdict.re_executions += extra
        verdict.double_run_tasks += 1
    for number in task_runs:
        if number not in by_number or number > max_attempts:
            verdict.problems.append(f"task {task_id}: executed attempt {number}, which the database never created")
    for number, row in by_number.items():
        if row[2] in ("succeeded", "failed", "retryable") and number not in task_runs:
            verdict.problems.append(f"task {task_id} attempt {number}: reported {row[2]} but never executed")
    spans = []
    for number, run in sorted(task_runs.items()):
        end = run.end
        if end is None:
            if run.pid in killed:
                end = killed[run.pid]
            elif run.pid in alive_pids:
                end = now  # still running (a stale execution on a resumed worker)
            else:
                verdict.problems.append(f"task {task_id} attempt {number}: execution never ended (pid {run.pid})")
                end = now
        spans.append((number, run.start, end))
    for i, (a, _, a_end) in enumerate(spans):
        for b, b_start, _b_end in spans[i + 1 :]:
            if b_start >= a_end - TOLERANCE:
                continue
            verdict.overlaps += 1
            earlier, later = by_number.get(a), by_number.get(b)
            if earlier is None or later is None:
                continue  # reported above
            if earlier[1] != "ABANDONED" or later[3] < earlier[4] - TOLERANCE:
                verdict.problems.append(
                    f"task {task_id}: attempt {b} ran from {b_start:.3f} while attempt {a} ({earlier[1]}, lease "
                    f"until {earlier[4]:.3f}) ran until {a_end:.3f}: an overlap the lease did not permit"
                )
