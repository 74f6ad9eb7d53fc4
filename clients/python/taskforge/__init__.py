"""TaskForge: PostgreSQL-backed background tasks.

Every rule (admission, claiming, leases, retries, recovery) lives in PL/pgSQL functions in
schema ``taskforge``; this package holds the thin Python processes around them: the worker,
the scheduler and the ``taskforge`` command line.

Handler API (see docs/worker.md)::

    from taskforge import RetryableError, handler

    @handler("resize_image")
    def resize_image(payload, ctx):
        ...
"""

from .handlers import (
    HandlerRegistry,
    RetryableError,
    TaskCancelled,
    TaskContext,
    handler,
    registry,
)

__version__ = "0.1.0"

#: The newest tf_schema_version() this client understands.
SCHEMA_VERSION = 1

__all__ = ["SCHEMA_VERSION", "HandlerRegistry", "RetryableError", "TaskCancelled", "TaskContext", "handler", "registry"]
