"""The log lines of ``taskforge worker`` and ``taskforge scheduler``: text for people, JSON for
log pipelines (``--log-format``, ``$TASKFORGE_LOG_FORMAT``).

* ``text``: ``2025-01-31T12:00:00.123Z INFO taskforge.worker[pid]: message``;
* ``json``: one object per line, ``{"time", "level", "logger", "message", "pid"}``, plus
  ``task_id``, ``attempt`` and ``worker_id`` where known, ``scheduler_id`` in a scheduler, and
  ``exception`` (the traceback) when there is one.

Where the ids come from: a line about one attempt carries them in the record
(``log.info(..., extra=attempt_fields(ctx))``); the id of the process's own worker or scheduler,
registered once it has started (:func:`set_process_field`), is added to every line that does not
carry its own. Both are stdlib ``logging`` and ``json``: no dependency. Timestamps are the wall
clock in UTC, for people; no decision uses them.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from ..context import TaskContext

__all__ = ["LOG_FORMATS", "JsonFormatter", "attempt_fields", "make_formatter", "set_process_field"]

#: The values of ``--log-format``.
LOG_FORMATS = ("text", "json")
#: Record attributes that :class:`JsonFormatter` writes when a line carries them (``extra=``).
FIELDS = ("task_id", "attempt", "worker_id", "scheduler_id")

#: Ids of this process's worker or scheduler, added to lines that do not carry their own.
_PROCESS_FIELDS: dict[str, str] = {}


def set_process_field(name: str, value: str | None) -> None:
    """Add ``name`` (``worker_id`` or ``scheduler_id``) to every JSON line of this process from now
    on (None removes it). ValueError for another name."""
    if name not in FIELDS:
        raise ValueError(f"name: must be one of {', '.join(FIELDS)}, got {name!r}")
    if value is None:
        _PROCESS_FIELDS.pop(name, None)
    else:
        _PROCESS_FIELDS[name] = value


def attempt_fields(ctx: TaskContext) -> dict[str, Any]:
    """The ``extra=`` of a log line about one attempt: ``task_id``, ``attempt``, ``worker_id``."""
    return {"task_id": ctx.task_id, "attempt": ctx.attempt_number, "worker_id": ctx.worker_id}


def _utc(record: logging.LogRecord) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z"


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line (see the module docstring). A message or value that
    JSON cannot hold as it is (bytes, objects) is written as its ``str``; line breaks in it are
    escaped, so a record is always exactly one line."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": _utc(record),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "pid": record.process,
        }
        for name in FIELDS:
            value = getattr(record, name, None)
            if value is None:
                value = _PROCESS_FIELDS.get(name)
            if value is not None:
                line[name] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exception"] = record.exc_text
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        return json.dumps(line, ensure_ascii=False, default=str)


def make_formatter(log_format: str) -> logging.Formatter:
    """The formatter of ``log_format`` (``text`` or ``json``); ValueError naming ``log_format``
    for anything else."""
    if log_format == "json":
        return JsonFormatter()
    if log_format != "text":
        raise ValueError(f"log_format: must be one of {', '.join(LOG_FORMATS)}, got {log_format!r}")
    formatter = logging.Formatter(
        "%(asctime)s.%(msecs)03dZ %(levelname)s %(name)s[%(process)d]: %(message)s", datefmt="%Y-%m-%dT%H:%M:%S"
    )
    formatter.converter = time.gmtime
    return formatter
