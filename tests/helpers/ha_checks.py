"""What the failover rig checks after a failover (tests/ha), from what each client was told and
what the database holds afterwards.

Inputs (see ha_rig.py for where each comes from):

* the submitter's acknowledgements: idempotency key -> the task id it was told;
* the worker's acknowledged finalizes, from its log (JSON lines; ``finalized task T attempt N:
  OUTCOME -> task STATE``, also "in the handler's transaction" and "after ... send(s)"): the
  worker logs that line only after the database answered ``accepted``;
* the handler's run log (ha_handlers.py): which idempotency key a (task id, attempt) meant to
  the worker when it ran it;
* the database after the failover: every keyed task (id, state, the key in its payload, the key
  in its result), every attempt's state and outcome, the rows the handlers' transactions wrote
  (``public.ha_effects``) and ``tf_invariant_violations``.

:func:`judge` returns a :class:`Verdict`: figures, and a list of problems, each one a broken
promise of synchronous failover:

* **lost submit**: an acknowledged key has no task;
* **id reused / id changed**: an acknowledged task id now belongs to another key, or the key's
  task has another id (a task id must keep meaning one task);
* **lost finalize**: an acknowledged outcome is not the outcome of that attempt of that task;
* **wrong task**: a task's result names another key (an outcome that landed on a task the
  worker did not run);
* a task not terminal, a task whose payload is not its key's request, a ctx.transaction()
  effect missing, doubled or written by an attempt that did not succeed, an invariant violation.

In asynchronous mode the rig reports the figures instead of failing on them.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg

__all__ = [
    "TERMINAL",
    "Finalize",
    "Snapshot",
    "Verdict",
    "judge",
    "read_acks",
    "read_finalizes",
    "read_runs",
    "read_snapshot",
]

TERMINAL = frozenset({"SUCCEEDED", "FAILED", "CANCELLED"})
#: The worker's log line of an accepted finalize (taskforge/worker/dispatch.py).
FINALIZED = re.compile(
    r"^finalized task (?P<task_id>\d+) attempt (?P<attempt>\d+)"
    r"(?: in the handler's transaction| after \d+ busy or failed send\(s\))?: (?P<outcome>\w+) -> task (?P<state>\w+)$"
)

TASKS = """
SELECT idempotency_key, task_id, state, payload, result->>'key', attempt_count, max_attempts
  FROM taskforge.tasks WHERE idempotency_key IS NOT NULL
"""
ATTEMPTS = "SELECT task_id, attempt_number, state, outcome FROM taskforge.attempts"
EFFECTS = "SELECT key, task_id, attempt_number FROM public.ha_effects"
VIOLATIONS = "SELECT rule, task_id, attempt_number, detail FROM taskforge.tf_invariant_violations"


@dataclass(frozen=True)
class Finalize:
    """One finalize the database acknowledged to the worker (``at``: wall-clock seconds)."""

    task_id: int
    attempt_number: int
    outcome: str
    task_state: str
    at: float


@dataclass
class Snapshot:
    """The database after the failover: tasks by key (task_id, state, payload, result key,
    attempt_count, max_attempts), attempts by (task_id, attempt_number) (state, outcome), the
    effect rows (key, task_id, attempt_number) and the invariant violations."""

    tasks: dict[str, tuple[Any, ...]]
    attempts: dict[tuple[int, int], tuple[str, str | None]]
    effects: list[tuple[str, int, int]]
    violations: list[tuple[Any, ...]]


@dataclass
class Verdict:
    """Figures and problems (empty: every promise of synchronous failover held)."""

    submits_acknowledged: int = 0
    submits_lost: int = 0
    ids_reused: int = 0
    ids_changed: int = 0
    finalizes_acknowledged: int = 0
    finalizes_lost: int = 0
    results_on_wrong_task: int = 0
    tasks: int = 0
    states: Counter[str] = field(default_factory=Counter)
    not_terminal: int = 0
    attempts: int = 0
    abandoned: int = 0
    effects: int = 0
    effect_problems: int = 0
    violations: int = 0
    problems: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "submits_acknowledged": self.submits_acknowledged,
            "submits_lost": self.submits_lost,
            "ids_reused": self.ids_reused,
            "ids_changed": self.ids_changed,
            "finalizes_acknowledged": self.finalizes_acknowledged,
            "finalizes_lost": self.finalizes_lost,
            "results_on_wrong_task": self.results_on_wrong_task,
            "tasks": self.tasks,
            "states": dict(self.states),
            "not_terminal": self.not_terminal,
            "attempts": self.attempts,
            "abandoned_attempts": self.abandoned,
            "transaction_effects": self.effects,
            "transaction_effect_problems": self.effect_problems,
            "invariant_violations": self.violations,
        }


# --- reading -------------------------------------------------------------------------------------


def read_acks(path: Path) -> dict[str, dict[str, Any]]:
    """The submitter's acknowledgements by key."""
    acks: dict[str, dict[str, Any]] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                entry = json.loads(line)
                acks[entry["key"]] = entry
    return acks


def read_finalizes(log_text: str) -> list[Finalize]:
    """Acknowledged finalizes from a worker's JSON log (other lines are skipped)."""
    found = []
    for line in log_text.splitlines():
        if not line.startswith("{"):
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        match = FINALIZED.match(str(entry.get("message", "")))
        if match is None:
            continue
        found.append(
            Finalize(
                int(match["task_id"]),
                int(match["attempt"]),
                match["outcome"],
                match["state"],
                datetime.fromisoformat(str(entry["time"]).replace("Z", "+00:00")).timestamp(),
            )
        )
    return found


def read_runs(path: Path) -> dict[tuple[int, int], list[tuple[str, float]]]:
    """From the handler's run log: (task_id, attempt_number) -> [(key, end time)] of every
    execution that ended (several keys for one pair only when a task id was reused)."""
    runs: dict[tuple[int, int], list[tuple[str, float]]] = defaultdict(list)
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                entry = json.loads(line)
                if entry["event"] == "end":
                    runs[(int(entry["task_id"]), int(entry["attempt_number"]))].append((entry["key"], entry["at"]))
    return runs


def read_snapshot(conn: psycopg.Connection[Any]) -> Snapshot:
    return Snapshot(
        tasks={row[0]: row[1:] for row in conn.execute(TASKS).fetchall()},
        attempts={(row[0], row[1]): (row[2], row[3]) for row in conn.execute(ATTEMPTS).fetchall()},
        effects=[(row[0], row[1], row[2]) for row in conn.execute(EFFECTS).fetchall()],
        violations=conn.execute(VIOLATIONS).fetchall(),
    )


# --- judging -------------------------------------------------------------------------------------


def _key_of(runs: dict[tuple[int, int], list[tuple[str, float]]], fin: Finalize) -> str | None:
    """The key the worker ran ``fin``'s attempt for: the execution that ended last before the
    finalize was acknowledged (one second of slack for the log's rounding)."""
    candidates = [(at, key) for key, at in runs.get((fin.task_id, fin.attempt_number), []) if at <= fin.at + 1.0]
    return max(candidates)[1] if candidates else None


def judge(
    snapshot: Snapshot,
    acks: dict[str, dict[str, Any]],
    finalizes: list[Finalize],
    runs: dict[tuple[int, int], list[tuple[str, float]]],
    planned: dict[str, dict[str, Any]],
) -> Verdict:
    """Check every promise of the module docstring. ``planned``: key -> the payload its submit
    sent (every key the submitter may have sent, acknowledged or not)."""
    verdict = Verdict()
    tasks = snapshot.tasks
    key_by_id = {row[0]: key for key, row in tasks.items()}

    for key, ack in acks.items():
        verdict.submits_acknowledged += 1
        acked_id = int(ack["task_id"])
        holder = key_by_id.get(acked_id)
        if holder is not None and holder != key:
            verdict.ids_reused += 1
            verdict.problems.append(f"id reused: task {acked_id} was acknowledged for {key}, now it is {holder}")
        if key not in tasks:
            verdict.submits_lost += 1
            verdict.problems.append(f"lost submit: {key} was acknowledged as task {acked_id}; no task has that key")
        elif tasks[key][0] != acked_id:
            verdict.ids_changed += 1
            verdict.problems.append(f"id changed: {key} was acknowledged as task {acked_id}, now it is {tasks[key][0]}")

    for key, (task_id, state, payload, result_key, attempt_count, max_attempts) in tasks.items():
        verdict.tasks += 1
        verdict.states[state] += 1
        if state not in TERMINAL:
            verdict.not_terminal += 1
            verdict.problems.append(f"task {task_id} ({key}) is {state}, not terminal")
        if key in planned and payload != planned[key]:
            verdict.problems.append(f"task {task_id} ({key}): payload {payload} is not the request {planned[key]}")
        if result_key is not None and result_key != key:
            verdict.results_on_wrong_task += 1
            verdict.problems.append(f"wrong task: task {task_id} ({key}) holds the result of {result_key}")
        if attempt_count > max_attempts:
            verdict.problems.append(f"task {task_id}: {attempt_count} attempts, budget {max_attempts}")

    for fin in finalizes:
        verdict.finalizes_acknowledged += 1
        key = _key_of(runs, fin)
        task = tasks.get(key) if key is not None else None
        attempt = snapshot.attempts.get((fin.task_id, fin.attempt_number))
        if key is None:
            verdict.finalizes_lost += 1
            verdict.problems.append(f"finalize of task {fin.task_id} attempt {fin.attempt_number}: never ran here")
        elif task is None or task[0] != fin.task_id:
            verdict.finalizes_lost += 1
            now = "no task" if task is None else f"task {task[0]}"
            verdict.problems.append(
                f"lost finalize: task {fin.task_id} attempt {fin.attempt_number} ({key}) {fin.outcome} was "
                f"acknowledged; {key} is {now} now"
            )
        elif attempt is None or attempt[1] != fin.outcome:
            verdict.finalizes_lost += 1
            verdict.problems.append(
                f"lost finalize: task {fin.task_id} attempt {fin.attempt_number} ({key}) {fin.outcome} was "
                f"acknowledged; the attempt is {attempt}"
            )

    by_key: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for key, task_id, attempt_number in snapshot.effects:
        by_key[key].append((task_id, attempt_number))
        verdict.effects += 1
    for key, (task_id, state, payload, *_rest) in tasks.items():
        if not (isinstance(payload, dict) and payload.get("tx")):
            continue
        rows = by_key.get(key, [])
        succeeded = [n for (t, n), (s, _o) in snapshot.attempts.items() if t == task_id and s == "SUCCEEDED"]
        wanted = [(task_id, n) for n in succeeded]
        if sorted(rows) != wanted:
            verdict.effect_problems += 1
            verdict.problems.append(
                f"ctx.transaction(): task {task_id} ({key}, {state}) has effect rows {rows}, "
                f"succeeded attempts {succeeded}"
            )

    for (_task_id, _number), (state, _outcome) in snapshot.attempts.items():
        verdict.attempts += 1
        verdict.abandoned += state == "ABANDONED"
    verdict.violations = len(snapshot.violations)
    verdict.problems.extend(f"tf_invariant_violations: {row}" for row in snapshot.violations)
    return verdict
