"""Sets the global OpenTelemetry tracer provider of a worker process, the way an application
would in a module it imports (``taskforge worker --import`` this file): every finished span is
written at once, as one JSON line, to the file named by ``$TASKFORGE_TEST_SPANS``
(tests/processes/test_worker_observability.py reads it)."""

import json
import os
import threading

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult


def _ids(context):
    return [f"{context.trace_id:032x}", f"{context.span_id:016x}"]


class JsonLinesExporter(SpanExporter):
    """One JSON object per span: name, kind, trace and span ids, parent, links, attributes, status."""

    def __init__(self, path):
        self.path = path
        self.lock = threading.Lock()

    def export(self, spans):
        with self.lock, open(self.path, "a", encoding="utf-8") as out:
            for span in spans:
                out.write(
                    json.dumps(
                        {
                            "name": span.name,
                            "kind": span.kind.name,
                            "trace_id": f"{span.context.trace_id:032x}",
                            "span_id": f"{span.context.span_id:016x}",
                            "parent": None if span.parent is None else f"{span.parent.span_id:016x}",
                            "links": [_ids(link.context) for link in span.links],
                            "attributes": dict(span.attributes),
                            "status": span.status.status_code.name,
                        }
                    )
                    + "\n"
                )
        return SpanExportResult.SUCCESS


provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(JsonLinesExporter(os.environ["TASKFORGE_TEST_SPANS"])))
trace.set_tracer_provider(provider)
