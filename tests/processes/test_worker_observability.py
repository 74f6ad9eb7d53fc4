"""What a worker process tells the outside: OpenTelemetry spans of its attempts (through the
global tracer provider an imported module sets) and ``--log-format json`` lines."""

from __future__ import annotations

import json
import re
import signal

import pytest

from itest_support import LONG, ROOT, submit, task, wait_for, wait_registered

pytestmark = pytest.mark.timeout(300)

OTEL_SETUP = ROOT / "tests" / "helpers" / "itest_otel_setup.py"
TRACE_ID, SPAN_ID = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"


def test_a_worker_runs_each_attempt_in_a_span_linked_to_the_submitted_trace_context(spawn, conn, queue, tmp_path):
    spans = tmp_path / "spans.jsonl"
    worker = spawn.worker("--queue", queue, "--import", str(OTEL_SETUP), env={"TASKFORGE_TEST_SPANS": str(spans)})
    wait_registered(conn, worker)
    ok = conn.execute(
        "SELECT task_id FROM taskforge.tf_submit(task_type => 'echo', payload => '{\"n\": 1}', queue => %s, "
        "traceparent => %s)",
        (queue, f"00-{TRACE_ID}-{SPAN_ID}-01"),
    ).fetchone()[0]
    failed = submit(conn, "fail", queue=queue, max_attempts=1)
    wait_for(
        lambda: task(conn, ok)["state"] == "SUCCEEDED" and task(conn, failed)["state"] == "FAILED",
        message="both tasks to end",
        procs=[worker],
    )
    lines = wait_for(
        lambda: spans.exists() and len(lines := spans.read_text().splitlines()) >= 2 and lines,
        message="two spans in the file",
    )
    by_task = {span["attributes"]["taskforge.task_id"]: span for span in map(json.loads, lines)}
    run = by_task[ok]
    assert (run["name"], run["kind"], run["parent"], run["status"]) == ("taskforge run echo", "CONSUMER", None, "UNSET")
    assert run["links"] == [[TRACE_ID, SPAN_ID]]
    assert run["attributes"] == {
        "taskforge.task_id": ok,
        "taskforge.attempt": 1,
        "taskforge.queue": queue,
        "taskforge.task_type": "echo",
        "taskforge.outcome": "succeeded",
        "messaging.system": "taskforge",
        "messaging.operation.type": "process",
        "messaging.destination.name": queue,
    }
    error = by_task[failed]
    assert (error["name"], error["status"], error["links"]) == ("taskforge run fail", "ERROR", [])
    assert error["attributes"]["taskforge.outcome"] == "failed"


def test_log_format_json_writes_one_object_per_line_with_the_task_and_worker_ids(spawn, conn, queue):
    scheduler = spawn.scheduler(env={"TASKFORGE_LOG_FORMAT": "json"})
    worker = spawn.worker("--queue", queue, "--log-format", "json", name=f"{queue}-w")
    worker_id = wait_registered(conn, worker)
    ids = [submit(conn, "echo", {"n": i}, queue=queue) for i in range(3)] + [submit(conn, "fail_once", queue=queue)]
    wait_for(lambda: all(task(conn, t)["state"] == "SUCCEEDED" for t in ids), message="every task", procs=[worker])
    worker.signal(signal.SIGTERM)
    scheduler.signal(signal.SIGTERM)
    assert worker.wait(LONG) == 0 and scheduler.wait(LONG) == 0

    lines = [json.loads(line) for line in worker.log().splitlines()]  # every line is one JSON object
    assert len(lines) > 10
    for line in lines:
        assert {"time", "level", "logger", "message", "pid"} <= line.keys(), line
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", line["time"]), line
        assert line["worker_id"] == worker_id, line  # the process's own id, on every line
    about = [line for line in lines if re.match(r"(claimed|finalized) task \d+ attempt \d+", line["message"])]
    for line in about:
        task_id, attempt = map(int, re.search(r"task (\d+) attempt (\d+)", line["message"]).groups())
        assert (line["task_id"], line["attempt"]) == (task_id, attempt), line
    assert {(line["task_id"], line["attempt"]) for line in about} >= {(t, 1) for t in ids} | {(ids[-1], 2)}
    debug = [line for line in lines if "handler ended" in line["message"]]
    assert debug and all(line["level"] == "DEBUG" and "task_id" in line for line in debug)

    scheduler_lines = [json.loads(line) for line in scheduler.log().splitlines()]
    assert any(line["message"].startswith("scheduler started") for line in scheduler_lines)
    assert len({line["scheduler_id"] for line in scheduler_lines}) == 1
    assert all(line["logger"] == "taskforge.scheduler" for line in scheduler_lines)
