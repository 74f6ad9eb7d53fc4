"""The chaos tests' judge (tests/helpers/chaos_checks.py) on made-up histories: each rule it
enforces after a fault must flag the history that breaks it, and pass the one that keeps it."""

from __future__ import annotations

import json

import pytest

from chaos_checks import Run, State, judge, read_run_log

NOW = 1_000.0


def attempt(number: int, state: str, outcome: str | None, started: float, lease: float, finished: float | None):
    return (number, state, outcome, started, lease, finished)


def verdict_for(tasks, attempts, runs, *, keys=None, violations=(), killed=None, alive=()):
    state = State(tasks=tasks, attempts=attempts, violations=list(violations))
    keys = keys if keys is not None else {key: row[4] for key, row in tasks.items()}
    return judge(state, keys, runs, killed or {}, set(alive), NOW)


def one_ok_task(state="SUCCEEDED", rows=None, runs=None, max_attempts=4):
    rows = rows if rows is not None else [attempt(1, "SUCCEEDED", "succeeded", 10.0, 13.0, 11.0)]
    runs = runs if runs is not None else {(1, 1): Run(pid=7, start=10.01, end=10.9)}
    return {"k": (1, state, max_attempts, len(rows), "ok")}, {1: rows}, runs


def test_a_clean_history_passes_with_its_figures():
    verdict = verdict_for(*one_ok_task())
    assert verdict.problems == []
    assert (verdict.tasks, verdict.lost, verdict.attempts, verdict.executions, verdict.re_executions) == (1, 0, 1, 1, 0)


def test_a_key_without_a_task_is_lost():
    tasks, attempts, runs = one_ok_task()
    verdict = verdict_for(tasks, attempts, runs, keys={"k": "ok", "never-stored": "ok"})
    assert verdict.lost == 1 and any("never-stored" in p for p in verdict.problems)


def test_a_task_that_is_not_terminal_counts_as_lost():
    rows = [attempt(1, "RUNNING", None, 10.0, 13.0, None)]
    verdict = verdict_for(*one_ok_task(state="RUNNING", rows=rows, runs={(1, 1): Run(7, 10.01)}), alive={7})
    assert verdict.lost == 1 and any("not terminal" in p for p in verdict.problems)


def test_an_overlap_after_the_lease_expired_is_allowed_and_counted():
    rows = [
        attempt(1, "ABANDONED", "lease_expired", 10.0, 13.0, 13.2),
        attempt(2, "SUCCEEDED", "succeeded", 13.3, 16.3, 14.0),
    ]
    # The first execution (a frozen worker) went on until 15.0, past the second's start.
    runs = {(1, 1): Run(7, 10.01, 15.0), (1, 2): Run(8, 13.31, 13.9)}
    verdict = verdict_for(*one_ok_task(rows=rows, runs=runs))
    assert verdict.problems == []
    assert (verdict.overlaps, verdict.re_executions, verdict.double_run_tasks, verdict.abandoned) == (1, 1, 1, 1)


def test_an_overlap_inside_the_earlier_lease_is_a_problem():
    rows = [
        attempt(1, "ABANDONED", "lease_expired", 10.0, 13.0, 13.2),
        attempt(2, "SUCCEEDED", "succeeded", 12.0, 15.0, 12.5),  # claimed before the lease ran out
    ]
    runs = {(1, 1): Run(7, 10.01, 12.8), (1, 2): Run(8, 12.01, 12.4)}
    verdict = verdict_for(*one_ok_task(rows=rows, runs=runs))
    assert any("did not permit" in p for p in verdict.problems)


def test_an_overlap_with_an_attempt_that_was_not_abandoned_is_a_problem():
    rows = [
        attempt(1, "FAILED", "retryable", 10.0, 13.0, 11.0),
        attempt(2, "SUCCEEDED", "succeeded", 14.0, 17.0, 15.0),
    ]
    runs = {(1, 1): Run(7, 10.01, 14.5), (1, 2): Run(8, 14.01, 14.9)}
    tasks = {"k": (1, "SUCCEEDED", 4, 2, "flaky")}
    verdict = verdict_for(tasks, {1: rows}, runs)
    assert any("did not permit" in p for p in verdict.problems)


def test_a_killed_execution_ends_at_the_kill():
    rows = [
        attempt(1, "ABANDONED", "lease_expired", 10.0, 13.0, 13.2),
        attempt(2, "SUCCEEDED", "succeeded", 13.3, 16.3, 14.0),
    ]
    runs = {(1, 1): Run(7, 10.01, None), (1, 2): Run(8, 13.31, 13.9)}
    assert verdict_for(*one_ok_task(rows=rows, runs=runs), killed={7: 11.0}).problems == []
    # Without the kill, an execution that never ended in a process that is gone is a problem.
    assert any("never ended" in p for p in verdict_for(*one_ok_task(rows=rows, runs=runs)).problems)


def test_more_attempts_than_the_budget_is_a_problem():
    rows = [attempt(n, "ABANDONED", "lease_expired", 10.0 * n, 10.0 * n + 3, 10.0 * n + 3.1) for n in (1, 2)]
    rows.append(attempt(3, "SUCCEEDED", "succeeded", 40.0, 43.0, 41.0))
    runs = {(1, n): Run(7, 10.0 * n + 0.01, 10.0 * n + 0.5) for n in (1, 2)} | {(1, 3): Run(7, 40.01, 40.5)}
    verdict = verdict_for(*one_ok_task(rows=rows, runs=runs, max_attempts=2))
    assert any("budget 2" in p for p in verdict.problems)


def test_an_execution_without_an_attempt_or_an_outcome_without_an_execution_is_a_problem():
    tasks, attempts, _ = one_ok_task()
    verdict = verdict_for(tasks, attempts, {(1, 1): Run(7, 10.01, 10.5), (1, 2): Run(7, 20.0, 20.5)})
    assert any("never created" in p for p in verdict.problems)
    verdict = verdict_for(tasks, attempts, {})
    assert any("never executed" in p for p in verdict.problems)


def test_an_unplanned_failure_is_a_problem_unless_faults_took_the_whole_budget():
    rows = [attempt(1, "FAILED", "failed", 10.0, 13.0, 11.0)]
    verdict = verdict_for(*one_ok_task(state="FAILED", rows=rows, runs={(1, 1): Run(7, 10.01, 10.9)}))
    assert any("ended FAILED" in p for p in verdict.problems)
    rows = [attempt(n, "ABANDONED", "lease_expired", 10.0 * n, 10.0 * n + 3, 10.0 * n + 3.1) for n in (1, 2)]
    runs = {(1, n): Run(7, 10.0 * n + 0.01, 10.0 * n + 0.5) for n in (1, 2)}
    verdict = verdict_for(*one_ok_task(state="FAILED", rows=rows, runs=runs, max_attempts=2))
    assert verdict.problems == [] and verdict.budget_spent_by_faults == 1


def test_invariant_violations_are_problems():
    verdict = verdict_for(*one_ok_task(), violations=[("running_without_owner", 1, None, "x")])
    assert verdict.problems == ["tf_invariant_violations: ('running_without_owner', 1, None, 'x')"]


@pytest.mark.parametrize("duplicate", [True, False])
def test_the_run_log_flags_an_attempt_executed_twice(tmp_path, duplicate):
    log = tmp_path / "runs.jsonl"
    events = [("start", 1.0), ("end", 2.0)] + ([("start", 3.0)] if duplicate else [])
    log.write_text(
        "".join(
            json.dumps({"event": e, "task_id": 5, "attempt_number": 1, "pid": 9, "at": at}) + "\n" for e, at in events
        )
    )
    runs, problems = read_run_log(log)
    assert set(runs) == {(5, 1)}
    assert problems == (["task 5 attempt 1: executed twice"] if duplicate else [])
