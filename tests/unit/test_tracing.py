"""taskforge.tracing without a database: the traceparent of the current span, the submit span, and
the spans the worker's sync slots and event loop run attempts in, read with the SDK's in-memory
exporter (a provider of the test's own: the global one is never set here); and the module with
opentelemetry not installed at all."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
import threading

import pytest
from opentelemetry import trace as otel_trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from taskforge.handlers import HandlerRegistry, RetryableError, TaskContext
from taskforge.tracing import AttemptTracing, current_traceparent, link_of, submit_span
from taskforge.worker.aio import AsyncRunner
from taskforge.worker.attempts import AttemptTable, RunningAttempt
from taskforge.worker.execute import Slots

LOG = logging.getLogger("test.tracing")
SUBMITTED = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


@pytest.fixture()
def spans():
    """A provider of the test's own and what it exported: ``(provider, exporter)``."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


def attempt(task_type: str, *, task_id: int = 7, traceparent: str | None = SUBMITTED) -> RunningAttempt:
    ctx = TaskContext(
        task_id=task_id, attempt_number=2, task_type=task_type, queue="mail", traceparent=traceparent, worker_id="w"
    )
    return RunningAttempt(ctx=ctx, payload='{"n": 1}', next_renew=0.0, is_async=task_type.startswith("a."))


def test_the_current_traceparent_is_the_current_span_context_in_w3c_form(spans):
    provider, _ = spans
    assert current_traceparent() is None  # no span
    with provider.get_tracer("t").start_as_current_span("outer") as span:
        context = span.get_span_context()
        flags = int(context.trace_flags)
        assert current_traceparent() == f"00-{context.trace_id:032x}-{context.span_id:016x}-{flags:02x}"
    assert current_traceparent() is None


def test_the_submit_span_is_current_in_its_block_and_records_a_failure(spans):
    provider, exporter = spans
    with submit_span("send_mail", "mail", tracer_provider=provider) as span:
        stored = current_traceparent()
        span.set_attribute("taskforge.task_id", 42)
    with pytest.raises(ValueError, match="refused"), submit_span("send_mail", "mail", tracer_provider=provider):
        raise ValueError("refused")
    ok, failed = exporter.get_finished_spans()
    assert ok.name == "taskforge submit send_mail" and ok.kind is SpanKind.PRODUCER
    assert stored == f"00-{ok.context.trace_id:032x}-{ok.context.span_id:016x}-{int(ok.context.trace_flags):02x}"
    assert dict(ok.attributes) == {
        "taskforge.task_type": "send_mail",
        "taskforge.queue": "mail",
        "taskforge.task_id": 42,
        "messaging.system": "taskforge",
        "messaging.operation.type": "send",
        "messaging.destination.name": "mail",
    }
    assert ok.status.status_code is StatusCode.UNSET
    assert failed.status.status_code is StatusCode.ERROR
    assert [event.name for event in failed.events] == ["exception"]


def test_nothing_records_while_no_tracer_provider_is_set():
    assert isinstance(otel_trace.get_tracer_provider(), otel_trace.ProxyTracerProvider)
    assert AttemptTracing().tracer() is None
    with submit_span("send_mail", "mail") as span:
        span.set_attribute("taskforge.task_id", 1)
        assert not span.is_recording()
        assert current_traceparent() is None  # a span that records nothing has no valid context


def test_a_stored_traceparent_becomes_one_link_and_anything_else_none():
    (link,) = link_of(SUBMITTED)
    assert (link.context.trace_id, link.context.span_id) == (
        0x0AF7651916CD43DD8448EB211C80319C,
        0xB7AD6B7169203331,
    )
    assert link_of(None) == [] and link_of("") == [] and link_of("00-not-a-traceparent-01") == []


def test_a_sync_attempt_runs_in_a_consumer_span_linked_to_its_submit(spans):
    provider, exporter = spans
    registry = HandlerRegistry()
    children = []

    def handler(payload, ctx):
        with provider.get_tracer("app").start_as_current_span("send") as child:  # the handler's own span
            children.append(child)
        return {"sent": payload["n"]}

    def failing(payload, ctx):
        raise RetryableError("smtp down")

    registry.register("u.send", handler)
    registry.register("u.fail", failing)
    slots = Slots(0, registry, lambda item: None, LOG, AttemptTracing(provider))
    assert slots.run(attempt("u.send")).outcome == "succeeded"
    assert slots.run(attempt("u.fail", task_id=8, traceparent=None)).outcome == "retryable"

    child, run, failed = exporter.get_finished_spans()
    assert run.name == "taskforge run u.send" and run.kind is SpanKind.CONSUMER
    assert run.parent is None  # linked to the submit, not its child
    assert [(link.context.trace_id, link.context.span_id) for link in run.links] == [
        (0x0AF7651916CD43DD8448EB211C80319C, 0xB7AD6B7169203331)
    ]
    assert dict(run.attributes) == {
        "taskforge.task_id": 7,
        "taskforge.attempt": 2,
        "taskforge.queue": "mail",
        "taskforge.task_type": "u.send",
        "taskforge.outcome": "succeeded",
        "messaging.system": "taskforge",
        "messaging.operation.type": "process",
        "messaging.destination.name": "mail",
    }
    assert run.status.status_code is StatusCode.UNSET
    assert child.parent is not None and child.parent.span_id == run.context.span_id  # current while it ran
    assert failed.links == () or list(failed.links) == []
    assert failed.attributes["taskforge.outcome"] == "retryable"
    assert failed.status.status_code is StatusCode.ERROR and failed.status.description == "smtp down"
    (event,) = failed.events
    assert event.name == "exception" and event.attributes["exception.type"] == "taskforge.handlers.RetryableError"
    assert (
        event.attributes["exception.message"] == "smtp down" and "Traceback" in event.attributes["exception.stacktrace"]
    )


def test_an_async_attempt_runs_in_its_span_on_the_event_loop(spans):
    provider, exporter = spans
    registry = HandlerRegistry()

    async def handler(payload, ctx):
        await asyncio.sleep(0.01)
        with provider.get_tracer("app").start_as_current_span("query"):
            await asyncio.sleep(0)
        return None

    async def failing(payload, ctx):
        await asyncio.sleep(0)
        raise ValueError("bad input")

    registry.register("a.send", handler)
    registry.register("a.fail", failing)
    done: list[RunningAttempt] = []
    ended = threading.Event()

    def on_done(items):
        done.extend(items)
        if len(done) == 2:
            ended.set()

    halt = threading.Event()
    runner = AsyncRunner(registry, AttemptTable(), on_done, halt, LOG, tracing=AttemptTracing(provider))
    runner.open()
    thread = threading.Thread(target=runner.run)
    thread.start()
    try:
        runner.submit_many([attempt("a.send"), attempt("a.fail", task_id=8)])
        assert ended.wait(20)
    finally:
        halt.set()
        runner.stop()
        thread.join(10)
    by_name = {span.name: span for span in exporter.get_finished_spans()}
    run, failed, child = by_name["taskforge run a.send"], by_name["taskforge run a.fail"], by_name["query"]
    assert run.attributes["taskforge.outcome"] == "succeeded" and run.kind is SpanKind.CONSUMER
    assert child.parent is not None and child.parent.span_id == run.context.span_id
    assert failed.attributes["taskforge.outcome"] == "failed"
    assert failed.status.status_code is StatusCode.ERROR and failed.status.description == "bad input"
    # Two attempts on one loop at once: each span is current in its own task only.
    assert run.context.trace_id != failed.context.trace_id


def test_without_opentelemetry_installed_everything_is_a_no_op():
    code = """
import sys
sys.modules["opentelemetry"] = None  # what an environment without the otel extra gives: ImportError
from taskforge import tracing
from taskforge.worker import Worker  # the worker imports it too
assert not tracing.HAVE_OTEL
assert tracing.current_traceparent() is None
with tracing.submit_span("send_mail", "mail") as span:
    span.set_attribute("taskforge.task_id", 1)
assert tracing.AttemptTracing().tracer() is None and tracing.link_of("00-" + "1" * 32 + "-" + "2" * 16 + "-01") == []
print("no-op")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "no-op"
