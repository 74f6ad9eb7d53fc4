"""The worker process: claim -> handler -> finalize, batched, around the SQL API.

Modules, one job each:

* :mod:`.config`      :class:`WorkerConfig` and shared constants;
* :mod:`.startup`     startup errors, the schema-version check, logging setup;
* :mod:`.logs`        the text and JSON log lines (``--log-format``) and their task/worker ids;
* :mod:`.connection`  one reconnecting connection, error classification, backoff;
* :mod:`.attempts`    the attempts the worker holds (shared by the threads below);
* :mod:`.rows`        typed result rows and array-literal parameters of the worker's statements;
* :mod:`.dispatch`    the dispatcher: one ``tf_finalize_and_claim`` per turn, batched;
* :mod:`.finalize`    what is sent for finished attempts and what each answer means;
* :mod:`.execute`     running an attempt's handler; the lazily started threads of sync handlers;
* :mod:`.aio`         the event loop of ``async def`` handlers, and its stall watchdog;
* :mod:`.transaction` ``ctx.transaction()``: the handler's writes and the success in one transaction;
* :mod:`.leases`      lease renewals, one ``tf_renew_many`` per renewal round;
* :mod:`.heartbeat`   the heartbeat (with housekeeping) and the LISTEN thread;
* :mod:`.lifecycle`   :class:`Worker`: start, threads, signals, clean and forced exits.

Row locks held by other transactions never block the hot path: the batch functions skip such
rows and report them ``busy``; the worker sends those elements again a moment later.
"""

from .config import WorkerConfig
from .connection import Backoff, DbConnection, is_lock_timeout, is_transient_error, one_line
from .lifecycle import EXIT_ERROR, EXIT_FORCED, EXIT_OK, Worker
from .logs import LOG_FORMATS, set_process_field
from .startup import SchemaVersionError, WorkerConfigError, WorkerStartupError, check_schema, configure_logging

__all__ = [
    "EXIT_ERROR",
    "EXIT_FORCED",
    "EXIT_OK",
    "LOG_FORMATS",
    "Backoff",
    "DbConnection",
    "SchemaVersionError",
    "Worker",
    "WorkerConfig",
    "WorkerConfigError",
    "WorkerStartupError",
    "check_schema",
    "configure_logging",
    "is_lock_timeout",
    "is_transient_error",
    "one_line",
    "set_process_field",
]
