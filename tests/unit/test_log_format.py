"""The worker's and scheduler's log lines without a process: the JSON formatter and its ids."""

from __future__ import annotations

import json
import logging
import re

import pytest

from taskforge.handlers import TaskContext
from taskforge.worker.logs import JsonFormatter, attempt_fields, make_formatter, set_process_field


def record(message: str, *args, extra: dict | None = None, exc_info=None) -> logging.LogRecord:
    rec = logging.LogRecord("taskforge.worker", logging.WARNING, __file__, 1, message, args, exc_info)
    for key, value in (extra or {}).items():
        setattr(rec, key, value)
    return rec


def test_a_json_line_carries_the_attempt_of_its_record_and_the_process_worker_otherwise():
    ctx = TaskContext(task_id=7, attempt_number=2, task_type="t", queue="q", worker_id="w-own")
    set_process_field("worker_id", "w-process")
    try:
        about = json.loads(JsonFormatter().format(record("task %s\nsplit", 7, extra=attempt_fields(ctx))))
        other = json.loads(JsonFormatter().format(record("heartbeat restored")))
    finally:
        set_process_field("worker_id", None)
    assert about["message"] == "task 7\nsplit" and about["level"] == "WARNING" and about["logger"] == "taskforge.worker"
    assert (about["task_id"], about["attempt"], about["worker_id"]) == (7, 2, "w-own")
    assert other["worker_id"] == "w-process" and "task_id" not in other
    assert "worker_id" not in json.loads(JsonFormatter().format(record("after")))


def test_a_json_line_is_one_line_even_with_a_traceback_and_odd_values():
    try:
        raise ValueError("bad\nthing")
    except ValueError:
        import sys

        rec = record("object %s", object(), exc_info=sys.exc_info())
    text = JsonFormatter().format(rec)
    assert "\n" not in text
    line = json.loads(text)
    assert line["message"].startswith("object <object object at") and "ValueError: bad" in line["exception"]


def test_an_unknown_format_or_field_is_refused_by_name():
    with pytest.raises(ValueError, match=r"^log_format: must be one of text, json"):
        make_formatter("xml")
    with pytest.raises(ValueError, match=r"^name: must be one of"):
        set_process_field("host", "x")
    text = make_formatter("text").format(record("plain"))
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z WARNING taskforge\.worker\[\d+\]: plain", text), text
