"""The failover rig's checks can fail: :func:`ha_checks.judge` on made-up data finds each loss
it exists to find (no cluster needed; these run in make ha and make ha-short before the rig)."""

from __future__ import annotations

import json
from typing import Any

from ha_checks import Finalize, Snapshot, judge, read_finalizes

PAYLOAD_A = {"key": "k-0", "ms": 50, "kind": "ok", "tx": True}
PAYLOAD_B = {"key": "k-1", "ms": 50, "kind": "ok", "tx": False}
PLANNED = {"k-0": PAYLOAD_A, "k-1": PAYLOAD_B}
ACKS = {"k-0": {"key": "k-0", "task_id": 1, "at": 1.0}, "k-1": {"key": "k-1", "task_id": 2, "at": 2.0}}
RUNS = {(1, 1): [("k-0", 3.0)], (2, 1): [("k-1", 4.0)]}
FINALIZES = [Finalize(1, 1, "succeeded", "SUCCEEDED", 3.1), Finalize(2, 1, "succeeded", "SUCCEEDED", 4.1)]


def snapshot(**changes: Any) -> Snapshot:
    """Everything as it should be, unless ``changes`` say otherwise."""
    values: dict[str, Any] = {
        "tasks": {
            "k-0": (1, "SUCCEEDED", PAYLOAD_A, "k-0", 1, 5),
            "k-1": (2, "SUCCEEDED", PAYLOAD_B, "k-1", 1, 5),
        },
        "attempts": {(1, 1): ("SUCCEEDED", "succeeded"), (2, 1): ("SUCCEEDED", "succeeded")},
        "effects": [("k-0", 1, 1)],
        "violations": [],
    }
    values.update(changes)
    return Snapshot(**values)


def test_all_kept_is_no_problem():
    verdict = judge(snapshot(), ACKS, FINALIZES, RUNS, PLANNED)
    assert verdict.problems == []
    assert (verdict.submits_acknowledged, verdict.finalizes_acknowledged, verdict.effects) == (2, 2, 1)


def test_a_lost_submit_and_its_id_reused_by_another_task():
    # k-0's task (id 1) is gone; id 1 now belongs to k-1, which was acknowledged as 2.
    tasks = {"k-1": (1, "SUCCEEDED", PAYLOAD_B, "k-1", 1, 5)}
    verdict = judge(
        snapshot(tasks=tasks, attempts={(1, 1): ("SUCCEEDED", "succeeded")}, effects=[]), ACKS, [], {}, PLANNED
    )
    assert (verdict.submits_lost, verdict.ids_reused, verdict.ids_changed) == (1, 1, 1)


def test_a_lost_finalize_and_a_result_on_another_task():
    attempts = {
        (1, 1): ("ABANDONED", "lease_expired"),
        (1, 2): ("SUCCEEDED", "succeeded"),
        (2, 1): ("SUCCEEDED", "succeeded"),
    }
    tasks = {
        "k-0": (1, "SUCCEEDED", PAYLOAD_A, "k-0", 2, 5),
        "k-1": (2, "SUCCEEDED", PAYLOAD_B, "k-0", 1, 5),
    }
    verdict = judge(snapshot(tasks=tasks, attempts=attempts, effects=[("k-0", 1, 2)]), ACKS, FINALIZES, RUNS, PLANNED)
    assert verdict.finalizes_lost == 1 and verdict.results_on_wrong_task == 1
    assert verdict.abandoned == 1


def test_unfinished_tasks_bad_effects_and_violations():
    tasks = {
        "k-0": (1, "RUNNING", PAYLOAD_A, None, 1, 5),
        "k-1": (2, "SUCCEEDED", {"key": "k-1", "ms": 1}, "k-1", 1, 5),
    }
    attempts = {(1, 1): ("RUNNING", None), (2, 1): ("SUCCEEDED", "succeeded")}
    verdict = judge(
        snapshot(tasks=tasks, attempts=attempts, effects=[("k-0", 1, 1)], violations=[("rule", 1, 1, "x")]),
        ACKS,
        [],
        RUNS,
        PLANNED,
    )
    assert verdict.not_terminal == 1 and verdict.effect_problems == 1 and verdict.violations == 1
    assert any("is not the request" in p for p in verdict.problems)


def test_the_worker_log_lines_of_accepted_finalizes_are_read():
    lines = [
        {"time": "2026-12-04T10:00:00.500Z", "message": "finalized task 7 attempt 1: succeeded -> task SUCCEEDED"},
        {
            "time": "2026-12-04T10:00:01Z",
            "message": "finalized task 8 attempt 2 in the handler's transaction: succeeded -> task SUCCEEDED",
        },
        {
            "time": "2026-12-04T10:00:02Z",
            "message": "finalized task 9 attempt 1 after 3 busy or failed send(s): retryable -> task RETRYING",
        },
        {
            "time": "2026-12-04T10:00:03Z",
            "message": "tf_finalize did not accept the succeeded outcome of task 10 attempt 1",
        },
    ]
    text = "\n".join(json.dumps(line) for line in lines) + "\nnot json\n"
    found = read_finalizes(text)
    assert [(f.task_id, f.attempt_number, f.outcome, f.task_state) for f in found] == [
        (7, 1, "succeeded", "SUCCEEDED"),
        (8, 2, "succeeded", "SUCCEEDED"),
        (9, 1, "retryable", "RETRYING"),
    ]
