"""Trust checks: a run is only worth its numbers if the history is exactly what the workload implies.

The checks are pure functions over rows read from ``taskforge.tasks`` and ``taskforge.attempts``
(so a test can hand them a deliberately broken history); :func:`require` turns failures into
:class:`TrustFailure`, which fails the run with a message naming each check.

Expectations per workload:

* ``once``       (E1, E2, pickup): every task SUCCEEDED after exactly one SUCCEEDED attempt;
* ``fail_once``  (E5): every history is exactly FAILED -> SUCCEEDED;
* ``recovered``  (E6): ABANDONED attempts (crashed owners) then one SUCCEEDED attempt; every
  ABANDONED attempt has exactly one later SUCCEEDED attempt of the same task.
"""

from __future__ import annotations

import collections
import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .results import CheckResult

__all__ = [
    "EXPECTATIONS",
    "AttemptRow",
    "TaskRow",
    "TrustFailure",
    "check_drained",
    "check_history",
    "check_invariants",
    "require",
]

TERMINAL = frozenset({"SUCCEEDED", "FAILED", "CANCELLED"})
EXPECTATIONS = ("once", "fail_once", "recovered")
#: How many offending rows a failed check names.
SHOWN = 5


@dataclass(frozen=True)
class TaskRow:
    """The columns of ``taskforge.tasks`` the checks read (timestamps: database clock)."""

    task_id: int
    state: str
    attempt_count: int
    created_at: dt.datetime | None = None


@dataclass(frozen=True)
class AttemptRow:
    """The columns of ``taskforge.attempts`` the checks read (timestamps: database clock)."""

    task_id: int
    attempt_number: int
    state: str
    started_at: dt.datetime | None = None
    lease_expires_at: dt.datetime | None = None
    finished_at: dt.datetime | None = None


class TrustFailure(Exception):
    """One or more trust checks failed; the message names every failed check."""

    def __init__(self, where: str, failed: Sequence[CheckResult]):
        self.where = where
        self.failed = list(failed)
        lines = "; ".join(f"{c.name}: {c.detail}" for c in self.failed)
        super().__init__(f"trust check(s) failed in {where}: {lines}")


def _check(name: str, offenders: Sequence[str], ok_detail: str) -> CheckResult:
    if not offenders:
        return CheckResult(name, True, ok_detail)
    shown = ", ".join(offenders[:SHOWN]) + (f" (+{len(offenders) - SHOWN} more)" if len(offenders) > SHOWN else "")
    return CheckResult(name, False, f"{len(offenders)} offending: {shown}")


def _histories(attempts: Iterable[AttemptRow]) -> dict[int, list[AttemptRow]]:
    by_task: dict[int, list[AttemptRow]] = collections.defaultdict(list)
    for a in sorted(attempts, key=lambda a: (a.task_id, a.attempt_number)):
        by_task[a.task_id].append(a)
    return by_task


def _expected_history(expectation: str, states: list[str]) -> bool:
    if expectation == "once":
        return states == ["SUCCEEDED"]
    if expectation == "fail_once":
        return states == ["FAILED", "SUCCEEDED"]
    return bool(states) and states[-1] == "SUCCEEDED" and all(s == "ABANDONED" for s in states[:-1])


def _replacement_offenders(history: dict[int, list[AttemptRow]]) -> list[str]:
    """ABANDONED attempts without exactly one later SUCCEEDED attempt of the same task."""
    bad = []
    for task_id, rows in history.items():
        for a in rows:
            if a.state != "ABANDONED":
                continue
            later = [b for b in rows if b.attempt_number > a.attempt_number and b.state == "SUCCEEDED"]
            if len(later) != 1:
                bad.append(f"task {task_id} attempt {a.attempt_number} has {len(later)} later successes")
    return bad


def check_history(
    submitted: Sequence[int], tasks: Sequence[TaskRow], attempts: Sequence[AttemptRow], expectation: str
) -> list[CheckResult]:
    """Checks over the measured tasks of one trial: counts reconcile, every task is terminal in
    the expected state, attempt identities are unique, attempt counts and histories are what
    ``expectation`` implies (see the module docstring)."""
    if expectation not in EXPECTATIONS:
        raise ValueError(f"unknown expectation {expectation!r}")
    wanted = set(submitted)
    found = {t.task_id for t in tasks}
    results = [
        CheckResult(
            "counts",
            len(submitted) == len(wanted) == len(tasks) and found == wanted,
            f"submitted {len(submitted)}, found {len(tasks)} in the database"
            + (f", missing {sorted(wanted - found)[:SHOWN]}" if wanted - found else "")
            + (f", unexpected {sorted(found - wanted)[:SHOWN]}" if found - wanted else ""),
        )
    ]
    results.append(
        _check(
            "terminal",
            [f"task {t.task_id} {t.state}" for t in tasks if t.state not in TERMINAL],
            f"all {len(tasks)} tasks terminal",
        )
    )
    results.append(
        _check(
            "final_states",
            [f"task {t.task_id} {t.state}" for t in tasks if t.state != "SUCCEEDED"],
            f"all {len(tasks)} tasks SUCCEEDED",
        )
    )
    identities = collections.Counter((a.task_id, a.attempt_number) for a in attempts)
    results.append(
        _check(
            "unique_attempts",
            [f"task {t} attempt {n} x{c}" for (t, n), c in identities.items() if c > 1],
            f"{len(identities)} distinct (task_id, attempt_number)",
        )
    )
    history = _histories(attempts)
    per_task = {"once": 1, "fail_once": 2}.get(expectation)
    count_bad = [
        f"task {t.task_id}: attempt_count {t.attempt_count}, {len(history.get(t.task_id, []))} attempt rows"
        for t in tasks
        if t.attempt_count != len(history.get(t.task_id, [])) or (per_task is not None and t.attempt_count != per_task)
    ]
    stray = sorted(set(history) - found)
    count_bad += [f"attempts of unknown task {t}" for t in stray]
    expected_total = f"{per_task * len(tasks)}" if per_task else "1 + abandoned per task"
    results.append(_check("attempt_counts", count_bad, f"{len(attempts)} attempts (expected {expected_total})"))
    results.append(
        _check(
            "histories",
            [
                f"task {t}: {' -> '.join(a.state for a in rows)}"
                for t, rows in history.items()
                if not _expected_history(expectation, [a.state for a in rows])
            ]
            + [f"task {t.task_id}: no attempts" for t in tasks if t.task_id not in history],
            {
                "once": "every history is SUCCEEDED",
                "fail_once": "every history is FAILED -> SUCCEEDED",
                "recovered": "every history is ABANDONED* -> SUCCEEDED",
            }[expectation],
        )
    )
    if expectation == "recovered":
        abandoned = sum(1 for a in attempts if a.state == "ABANDONED")
        results.append(
            _check(
                "replacements",
                _replacement_offenders(history),
                f"each of {abandoned} ABANDONED attempts has exactly one later SUCCEEDED attempt",
            )
        )
    return results


def check_drained(running_tasks: int, leased_tasks: int, running_attempts: int) -> CheckResult:
    """After the drain: no RUNNING task, no owner or lease on any task, no RUNNING attempt."""
    ok = running_tasks == leased_tasks == running_attempts == 0
    return CheckResult(
        "no_leftovers",
        ok,
        f"RUNNING tasks {running_tasks}, tasks with owner or lease {leased_tasks}, RUNNING attempts {running_attempts}",
    )


def check_invariants(violations: Sequence[tuple[Any, ...]]) -> CheckResult:
    """``taskforge.tf_invariant_violations`` must be empty (rows: rule, task_id, attempt_number, detail)."""
    return _check("invariants", [f"{r[0]} (task {r[1]})" for r in violations], "tf_invariant_violations is empty")


def require(where: str, checks: Sequence[CheckResult]) -> None:
    """Raise :class:`TrustFailure` naming every failed check, if any."""
    failed = [c for c in checks if not c.ok]
    if failed:
        raise TrustFailure(where, failed)
