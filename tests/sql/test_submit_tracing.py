"""The client's submit is a span (``taskforge submit <type>``) whose context the task stores as its
traceparent; a refused submit ends its span as an error and leaves the caller's context as it was.
Run in a subprocess, which sets the global tracer provider (the suite's own process never does)."""

from __future__ import annotations

import json
import subprocess
import sys

from sqlcore_helpers import unique_name

SCRIPT = r"""
import asyncio, json, sys
import psycopg
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from taskforge import aio, client
from taskforge.errors import Refused

dsn, queue = sys.argv[1], sys.argv[2]
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
tracer = trace.get_tracer("app")
out = {}
with psycopg.connect(dsn, autocommit=True) as conn, tracer.start_as_current_span("request") as parent:
    context = parent.get_span_context()
    out["parent"] = [format(context.trace_id, "032x"), format(context.span_id, "016x")]
    out["one"] = client.submit(conn, "echo", {}, queue=queue).task_id
    out["many"] = [t.task_id for t in client.submit_many(conn, [{"task_type": "echo", "queue": queue}] * 2)]
    given = "00-" + "a" * 32 + "-" + "b" * 16 + "-01"
    out["given"] = client.submit(conn, "echo", {}, queue=queue, traceparent=given).task_id
    try:
        client.submit(conn, "echo", {}, queue="not a queue name")
    except Refused as exc:
        out["refused"] = exc.argument
    out["current_after_refusal"] = format(trace.get_current_span().get_span_context().span_id, "016x")

    async def submit_async():
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as aconn:
            return (await aio.submit(aconn, "echo", {}, queue=queue)).task_id
    out["async"] = asyncio.run(submit_async())
    out["stored"] = dict(conn.execute(
        "SELECT task_id, traceparent FROM taskforge.tf_tasks WHERE queue = %s", (queue,)).fetchall())
out["spans"] = [
    {"name": s.name, "kind": s.kind.name, "span_id": format(s.context.span_id, "016x"),
     "trace_id": format(s.context.trace_id, "032x"), "status": s.status.status_code.name,
     "attributes": dict(s.attributes)}
    for s in exporter.get_finished_spans()
]
print(json.dumps(out))
"""


def test_submit_spans_and_the_stored_trace_context(db_dsn):
    queue = unique_name()
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, db_dsn, queue], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert "Failed to detach context" not in proc.stderr, proc.stderr
    out = json.loads(proc.stdout)
    trace_id, parent_id = out["parent"]
    stored = {int(k): v for k, v in out["stored"].items()}
    spans = {s["span_id"]: s for s in out["spans"] if s["name"].startswith("taskforge submit")}
    for task_id in (out["one"], *out["many"], out["async"]):
        version, stored_trace, stored_span, _flags = stored[task_id].split("-")
        assert (version, stored_trace) == ("00", trace_id), "the task's context is not the caller's trace"
        span = spans[stored_span]  # the task stores its own submit span's context
        assert span["name"] == "taskforge submit echo" and span["kind"] == "PRODUCER"
        assert span["attributes"]["taskforge.queue"] == queue
    assert spans[stored[out["one"]].split("-")[2]]["attributes"]["taskforge.task_id"] == out["one"]
    assert spans[stored[out["many"][0]].split("-")[2]]["attributes"]["taskforge.batch_size"] == 2
    assert stored[out["given"]] == "00-" + "a" * 32 + "-" + "b" * 16 + "-01"  # a context given is kept
    assert out["refused"] == "queue"
    errors = [s for s in spans.values() if s["status"] == "ERROR"]
    assert len(errors) == 1 and errors[0]["attributes"]["taskforge.queue"] == "not a queue name"
    assert out["current_after_refusal"] == parent_id, "the refused submit's span stayed current"
