"""The worker in-process with a tracer provider of the test's own: the traceparent a task was
submitted with (tf_submit(..., traceparent => ...)) reaches its attempt's span as a link, with the
task's id, attempt, queue, type and outcome, for sync and async handlers."""

from __future__ import annotations

import json
import threading

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import taskforge.synthetic  # noqa: F401  (the worker below runs the synthetic task types)
from taskforge.worker import Worker, WorkerConfig

from itest_support import task, wait_for

TRACE_ID, SPAN_ID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{SPAN_ID}-01"

pytestmark = pytest.mark.timeout(120)


def submit(conn, task_type: str, queue: str, traceparent: str | None) -> int:
    return conn.execute(
        "SELECT task_id FROM taskforge.tf_submit(task_type => %s, payload => %s::jsonb, queue => %s, "
        "max_attempts => 1, traceparent => %s)",
        (task_type, json.dumps({"n": 1}), queue, traceparent),
    ).fetchone()[0]


def test_each_attempt_runs_in_a_span_linked_to_the_context_stored_at_submit(db_dsn, conn, queue):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    worker = Worker(db_dsn, WorkerConfig(queues=(queue,), concurrency=4), tracer_provider=provider)
    thread = threading.Thread(target=worker.run, kwargs={"install_signal_handlers": False}, daemon=True)
    thread.start()
    try:
        ids = {
            "echo": submit(conn, "echo", queue, TRACEPARENT),
            "async_noop": submit(conn, "async_noop", queue, TRACEPARENT),
            "fail": submit(conn, "fail", queue, TRACEPARENT),
            "noop": submit(conn, "noop", queue, None),
        }
        wait_for(
            lambda: all(task(conn, t)["state"] in ("SUCCEEDED", "FAILED") for t in ids.values()),
            60,
            message="every task to end",
        )
        wait_for(lambda: len(exporter.get_finished_spans()) == 4, 10, message="four spans")
    finally:
        worker.request_stop()
        thread.join(30)
    spans = {span.attributes["taskforge.task_type"]: span for span in exporter.get_finished_spans()}
    assert task(conn, ids["echo"])["traceparent"] == TRACEPARENT
    for task_type, outcome in (("echo", "succeeded"), ("async_noop", "succeeded"), ("fail", "failed")):
        span = spans[task_type]
        assert span.name == f"taskforge run {task_type}" and span.kind is SpanKind.CONSUMER
        assert [(f"{link.context.trace_id:032x}", f"{link.context.span_id:016x}") for link in span.links] == [
            (TRACE_ID, SPAN_ID)
        ]
        assert span.parent is None
        assert {k: span.attributes[k] for k in ("taskforge.task_id", "taskforge.attempt", "taskforge.queue")} == {
            "taskforge.task_id": ids[task_type],
            "taskforge.attempt": 1,
            "taskforge.queue": queue,
        }
        assert span.attributes["taskforge.outcome"] == outcome
    assert spans["fail"].status.status_code is StatusCode.ERROR
    assert spans["echo"].status.status_code is StatusCode.UNSET
    assert list(spans["noop"].links) == []  # submitted without a trace context: no link
