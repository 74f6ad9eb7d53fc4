"""The demo's workload file and its expectation checks (taskforge.demo): no database."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from taskforge import demo
from taskforge.rows import Attempt, TaskRow
from taskforge.submission import SubmitRequest, read_request_lines

WORKLOAD = Path(__file__).resolve().parents[2] / "examples" / "demo_workload.jsonl"


def test_shipped_workload_has_the_promised_mix():
    items = demo.load_workload(WORKLOAD)
    types = {i.task_type for i in items}
    assert types == set(demo.EXPECTATIONS)
    assert len({i.priority for i in items}) >= 4
    assert any(i.delay_seconds for i in items)
    keys = [i.idempotency_key for i in items if i.idempotency_key]
    assert len(keys) == 2 and len(set(keys)) == 1, "one idempotent replay of the same key"
    replayed = [i for i in items if i.idempotency_key]
    assert (replayed[0].payload, replayed[0].queue, replayed[0].priority) == (
        replayed[1].payload,
        replayed[1].queue,
        replayed[1].priority,
    )
    assert any(
        i.task_type == "sleep" and i.payload["ms"] >= demo.KILL_MIN_SLEEP_MS and i.max_attempts >= 2 for i in items
    ), "a long sleep for the SIGKILL"
    assert all(i.max_attempts <= 3 for i in items if i.task_type == "retryable_fail")
    assert len({i.payload.get("ms") for i in items if i.task_type == "sleep"}) >= 4


def test_shipped_workload_is_from_file_input_in_the_one_request_shape():
    """The file `taskforge submit --from-file` reads, parsed by the same function: every line a
    SubmitRequest whose JSON form reads back as the same request."""
    pairs = list(read_request_lines(WORKLOAD.read_text(encoding="utf-8").splitlines()))
    assert [r for _, r in pairs] == demo.load_workload(WORKLOAD)
    for _, request in pairs:
        assert isinstance(request, SubmitRequest)
        assert SubmitRequest.from_json(request.to_json()) == request


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"task_type": "noop"}\n{bad json}\n', ":2: not valid JSON"),
        ('["noop"]\n', ":1: must be a JSON object, got array"),
        ('{"task_type": "explode"}\n', ":1: task_type: must be one of"),
        ('{"task_type": "noop", "colour": "red"}\n', ":1: unknown key 'colour'"),
        ('{"type": "noop"}\n', ":1: unknown key 'type'"),
        ('{"task_type": "noop", "priority": 1.5}\n', ":1: priority: must be an integer, got float"),
        ('{"task_type": "echo", "payload": [1]}\n', ":1: payload: must be a JSON object, got array"),
        ('{"task_type": "echo", "delay_seconds": -3}\n', ":1: delay_seconds: must be between 0 and"),
        ("# only a comment\n\n", "no tasks in the workload"),
    ],
)
def test_load_workload_names_the_bad_line(tmp_path, text, message):
    path = tmp_path / "w.jsonl"
    path.write_text(text)
    with pytest.raises(demo.DemoError) as info:
        demo.load_workload(path)
    assert message in str(info.value)


def _row(cls: Any, **values: Any) -> Any:
    """A row of ``cls`` with ``values`` and None in every other field."""
    return cls(**{name: values.get(name) for name in cls.__dataclass_fields__})


def test_expectation_checks_reject_wrong_histories():
    def task(task_id, task_type, state, max_attempts=3, payload=None, result=None):
        return _row(
            TaskRow,
            task_id=task_id,
            task_type=task_type,
            state=state,
            max_attempts=max_attempts,
            payload=payload or {},
            result=result,
        )

    def attempts(task_id, *states):
        return [
            _row(Attempt, task_id=task_id, attempt_number=n, state=s, worker_id=uuid.uuid4())
            for n, s in enumerate(states, 1)
        ]

    good = [
        task(1, "fail_once", "SUCCEEDED"),
        task(2, "sleep", "SUCCEEDED"),
        task(3, "fail", "FAILED"),
        task(4, "retryable_fail", "FAILED", max_attempts=2),
        task(5, "echo", "SUCCEEDED", payload={"a": 1}, result={"a": 1}),
    ]
    good_attempts = (
        attempts(1, "FAILED", "SUCCEEDED")
        + attempts(2, "ABANDONED", "SUCCEEDED")
        + attempts(3, "FAILED")
        + attempts(4, "FAILED", "FAILED")
        + attempts(5, "SUCCEEDED")
    )
    assert all(ok for ok, _, _ in demo.check_expectations(good, good_attempts))

    bad = [
        task(1, "fail_once", "SUCCEEDED"),
        task(2, "sleep", "SUCCEEDED"),
        task(3, "fail", "FAILED"),
        task(4, "retryable_fail", "FAILED", max_attempts=3),
        task(5, "echo", "SUCCEEDED", payload={"a": 1}, result={"a": 2}),
    ]
    bad_attempts = (
        attempts(1, "SUCCEEDED")
        + attempts(2, "FAILED", "SUCCEEDED")
        + attempts(3, "FAILED", "FAILED")
        + attempts(4, "FAILED", "FAILED")
        + attempts(5, "SUCCEEDED")
    )
    results = demo.check_expectations(bad, bad_attempts)
    assert [ok for ok, _, _ in results] == [False] * 5
    assert any("task 1: SUCCEEDED after SUCCEEDED" in p for _, _, problems in results for p in problems)
