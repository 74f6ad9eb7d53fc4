"""OpenTelemetry tracing of submits and attempts, optional (extra ``otel``: ``opentelemetry-api``).

Without ``opentelemetry-api`` installed every function here is a no-op, and with it but no
tracer provider set (the API's default proxy provider, or a no-op one) nothing records either.

* :func:`current_traceparent` returns the W3C ``traceparent`` of the current span context (through
  the API's W3C trace context propagator), the value ``tf_submit(..., traceparent => ...)`` and
  the ``traceparent`` key of ``tf_submit_many`` store with a task;
* :func:`submit_span` makes the span of one submit, ``taskforge submit <task_type>`` (kind
  PRODUCER: the task's stored context is the span's own, per the messaging conventions of
  OpenTelemetry for a send whose context is the message's creation context);
* :class:`AttemptTracing` and :func:`attempt_span`: the worker runs each attempt's handler in a
  span ``taskforge run <task_type>`` (kind CONSUMER) LINKED to the context stored at submit (a
  link, not a parent: an attempt may start long after the submit's trace ended, and a task runs
  as several attempts), current while the handler runs, so the handler's own spans are its
  children. Attributes: ``taskforge.task_id``, ``taskforge.attempt``, ``taskforge.queue``,
  ``taskforge.task_type``, ``taskforge.outcome`` (succeeded, failed, retryable, cancelled) and
  the ``messaging.*`` ones; status ERROR, with an ``exception`` event, when the attempt failed
  (outcome failed or retryable).

The cost when nothing records: :meth:`AttemptTracing.tracer` is one call and a type check per
attempt (the global provider is looked at each time until one is set; it cannot change after).
Clock: span times are the SDK's (the wall clock), for people; no decision depends on them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from .context import TaskContext

try:
    from opentelemetry import trace as otel_trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    HAVE_OTEL = True
except ImportError:  # the otel extra is not installed
    HAVE_OTEL = False

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer, TracerProvider

__all__ = [
    "HAVE_OTEL",
    "TRACER_NAME",
    "AttemptSpan",
    "AttemptTracing",
    "attempt_span",
    "current_traceparent",
    "link_of",
    "submit_span",
]

#: The instrumentation scope of TaskForge's spans.
TRACER_NAME = "taskforge"
#: ``messaging.system`` of every span.
MESSAGING_SYSTEM = "taskforge"
#: Outcomes that make an attempt's span an error.
FAILED_OUTCOMES = frozenset({"failed", "retryable"})


def current_traceparent() -> str | None:
    """The W3C ``traceparent`` (``00-<32 hex trace id>-<16 hex span id>-<2 hex flags>``) of the
    current span context, or None: no valid current span, or ``opentelemetry-api`` is not
    installed. Read through the W3C trace context propagator whatever the global propagator is
    (the stored column is a W3C traceparent). Never raises."""
    if not HAVE_OTEL:
        return None
    carrier: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(carrier)
    return carrier.get("traceparent")


class _NoSpan:
    """What :func:`submit_span` yields when nothing records: a span's setters, doing nothing."""

    def set_attribute(self, key: str, value: Any) -> None:
        """Nothing (the API of ``opentelemetry.trace.Span.set_attribute``)."""

    def is_recording(self) -> bool:
        return False


@contextlib.contextmanager
def submit_span(task_type: str, queue: str, *, tracer_provider: TracerProvider | None = None) -> Iterator[Any]:
    """``with submit_span(task_type, queue) as span:`` the span of one submit, current inside the
    block: call :func:`current_traceparent` inside it, so the task stores this span's context,
    and ``span.set_attribute("taskforge.task_id", task_id)`` once the id is known.

    Name ``taskforge submit <task_type>``, kind PRODUCER, attributes ``taskforge.task_type``,
    ``taskforge.queue``, ``messaging.system`` = ``taskforge``, ``messaging.operation.type`` =
    ``send``, ``messaging.destination.name`` = the queue. An exception leaving the block is
    recorded on the span (status ERROR) and goes on. ``tracer_provider``: default the global
    one. Without ``opentelemetry-api`` it yields an object whose ``set_attribute`` does nothing.
    """
    if not HAVE_OTEL:
        yield _NoSpan()
        return
    tracer = otel_trace.get_tracer(TRACER_NAME, _version(), tracer_provider=tracer_provider)
    with tracer.start_as_current_span(
        f"taskforge submit {task_type}",
        kind=otel_trace.SpanKind.PRODUCER,
        attributes={
            "taskforge.task_type": task_type,
            "taskforge.queue": queue,
            "messaging.system": MESSAGING_SYSTEM,
            "messaging.operation.type": "send",
            "messaging.destination.name": queue,
        },
    ) as span:
        yield span


class AttemptTracing:
    """Whether the worker traces an attempt: :meth:`tracer` is the tracer of attempt spans, or
    None when nothing would record (see the module docstring). ``tracer_provider``: the
    provider to use (an embedding application's, a test's); None = the global one."""

    def __init__(self, tracer_provider: TracerProvider | None = None) -> None:
        self._tracer: Tracer | None = None
        if HAVE_OTEL and tracer_provider is not None:
            self._tracer = otel_trace.get_tracer(TRACER_NAME, _version(), tracer_provider=tracer_provider)

    def tracer(self) -> Tracer | None:
        """The tracer, or None (one call and a type check while no provider is set)."""
        tracer = self._tracer
        if tracer is not None or not HAVE_OTEL:
            return tracer
        provider = otel_trace.get_tracer_provider()
        if isinstance(provider, (otel_trace.ProxyTracerProvider, otel_trace.NoOpTracerProvider)):
            return None
        self._tracer = tracer = provider.get_tracer(TRACER_NAME, _version())
        return tracer


def link_of(traceparent: str | None) -> list[Any]:
    """The span links for a stored ``traceparent``: one link to its span context, or none (no
    traceparent, or one the propagator does not take as a valid context)."""
    if not HAVE_OTEL or not traceparent:
        return []
    context = TraceContextTextMapPropagator().extract({"traceparent": traceparent})
    span_context = otel_trace.get_current_span(context).get_span_context()
    if not span_context.is_valid:
        return []
    return [otel_trace.Link(span_context)]


class AttemptSpan:
    """The span of one attempt, while its handler runs: :meth:`ended` records how it ended."""

    def __init__(self, span: Span) -> None:
        self.span = span

    def ended(self, outcome: str, error: Mapping[str, Any] | None, ctx: TaskContext) -> None:
        """Record the attempt's ``outcome`` (and its ``error``, a ``handlers.error_json`` dict);
        an outcome in :data:`FAILED_OUTCOMES` sets status ERROR with an ``exception`` event. A
        success refused inside ``ctx.transaction()`` adds ``taskforge.finalize_refused``; one it
        committed makes the outcome ``succeeded`` whatever the handler did after the block (the
        task is SUCCEEDED: the worker sends no other outcome)."""
        span = self.span
        verdict = ctx.transaction_verdict
        if verdict is not None and verdict.accepted:
            outcome, error = "succeeded", None
        span.set_attribute("taskforge.outcome", outcome)
        if verdict is not None and not verdict.accepted:
            span.set_attribute("taskforge.finalize_refused", verdict.reason or "")
        if outcome in FAILED_OUTCOMES:
            message = str((error or {}).get("message") or outcome)
            event = {"exception.type": str((error or {}).get("type") or "error"), "exception.message": message}
            stacktrace = (error or {}).get("traceback")
            if stacktrace:
                event["exception.stacktrace"] = str(stacktrace)
            span.add_event("exception", event)
            span.set_status(otel_trace.Status(otel_trace.StatusCode.ERROR, message))


@contextlib.contextmanager
def attempt_span(tracer: Tracer, ctx: TaskContext) -> Iterator[AttemptSpan]:
    """``with attempt_span(tracer, ctx) as span: ...; span.ended(outcome, error, ctx)``: the
    attempt's span (see the module docstring), current inside the block, linked to
    ``ctx.traceparent``. The block is expected not to raise (the worker's handler runs never do);
    an exception that does is recorded and goes on."""
    with tracer.start_as_current_span(
        f"taskforge run {ctx.task_type}",
        kind=otel_trace.SpanKind.CONSUMER,
        links=link_of(ctx.traceparent),
        attributes={
            "taskforge.task_id": ctx.task_id,
            "taskforge.attempt": ctx.attempt_number,
            "taskforge.queue": ctx.queue,
            "taskforge.task_type": ctx.task_type,
            "messaging.system": MESSAGING_SYSTEM,
            "messaging.operation.type": "process",
            "messaging.destination.name": ctx.queue,
        },
    ) as span:
        yield AttemptSpan(span)


def _version() -> str:
    from . import __version__

    return __version__
