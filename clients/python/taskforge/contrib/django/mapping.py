"""How a Django task maps onto a TaskForge task, and back (docs/django.md, "How fields map").

* The payload is ``{"module_path": "<module>.<function>", "args": [...], "kwargs": {...}}``: the
  task's ``Task.module_path`` and its arguments as JSON (Django's ``normalize_json``: tuples
  become lists, bytes UTF-8 strings; anything else that is not JSON is refused).
* Priority: TaskForge priority = :data:`PRIORITY_SCALE` x Django priority, so Django's
  -100..100 spreads over -32700..32700 of TaskForge's -32768..32767 (both claim higher first),
  and a task of another client with a priority between two Django steps runs between them.
  Back: the nearest Django priority, clamped to -100..100.
* States: BLOCKED, QUEUED and RETRYING are ``READY``; RUNNING is ``RUNNING``; SUCCEEDED is
  ``SUCCESSFUL``; FAILED and CANCELLED are ``FAILED``.
* Errors: each attempt's stored error (``{"type", "message", "traceback"}``) is a ``TaskError``
  whose ``exception_class_path`` is the type (``builtins.`` prefixed for a built-in exception,
  which the worker stores by its bare name) and whose ``traceback`` is the stored traceback
  (the ``"type: message"`` line when none was stored, as after a lost lease).
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import Any

from django.tasks.base import TASK_MAX_PRIORITY, TASK_MIN_PRIORITY, TaskError, TaskResultStatus
from django.utils.json import normalize_json

from ... import client

__all__ = [
    "PRIORITY_SCALE",
    "STATUS_OF_STATE",
    "as_mapping",
    "exception_class_path",
    "fields",
    "json_arguments",
    "make_payload",
    "read_payload",
    "task_error",
    "task_errors",
    "to_django_priority",
    "to_taskforge_priority",
]

#: TaskForge priority of one step of Django priority.
PRIORITY_SCALE = 327

#: Django's status of each TaskForge task state.
STATUS_OF_STATE: dict[str, Any] = {
    "BLOCKED": TaskResultStatus.READY,
    "QUEUED": TaskResultStatus.READY,
    "RETRYING": TaskResultStatus.READY,
    "RUNNING": TaskResultStatus.RUNNING,
    "SUCCEEDED": TaskResultStatus.SUCCESSFUL,
    "FAILED": TaskResultStatus.FAILED,
    "CANCELLED": TaskResultStatus.FAILED,
}

_PAYLOAD_KEYS = ("module_path", "args", "kwargs")


def to_taskforge_priority(priority: int) -> int:
    """The TaskForge priority of a Django priority (an int in -100..100, as ``validate_task``
    checked): ``priority * PRIORITY_SCALE``."""
    return int(priority) * PRIORITY_SCALE


def to_django_priority(priority: int) -> int:
    """The Django priority of a TaskForge priority: the nearest multiple of
    :data:`PRIORITY_SCALE`, divided by it, clamped to -100..100."""
    return int(max(TASK_MIN_PRIORITY, min(TASK_MAX_PRIORITY, round(priority / PRIORITY_SCALE))))


def json_arguments(field: str, value: Any, module_path: str) -> Any:
    """``value`` (a task's ``args`` or ``kwargs``) as JSON-shaped Python values, by Django's
    ``normalize_json``. Raises ``TypeError`` naming ``field`` and the task for anything else."""
    try:
        return normalize_json(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{field}: the arguments of {module_path} must be JSON values ({exc})") from None


def make_payload(module_path: str, args: list[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The TaskForge payload of a Django task call (arguments already JSON-shaped)."""
    return {"module_path": module_path, "args": args, "kwargs": kwargs}


def read_payload(payload: Mapping[str, Any]) -> tuple[str, list[Any], dict[str, Any]]:
    """``(module_path, args, kwargs)`` of a payload :func:`make_payload` wrote. Raises
    ``ValueError`` naming the key that is missing or of the wrong JSON type."""
    missing = [key for key in _PAYLOAD_KEYS if key not in payload]
    if missing:
        raise ValueError(f"payload: no {', '.join(missing)} (not a Django task's payload)")
    module_path, args, kwargs = (payload[key] for key in _PAYLOAD_KEYS)
    if not isinstance(module_path, str):
        raise ValueError(f"payload.module_path: must be a string, got {type(module_path).__name__}")
    if not isinstance(args, list):
        raise ValueError(f"payload.args: must be an array, got {type(args).__name__}")
    if not isinstance(kwargs, dict):
        raise ValueError(f"payload.kwargs: must be an object, got {type(kwargs).__name__}")
    return module_path, args, kwargs


def exception_class_path(type_name: str) -> str:
    """The dotted path of the exception class named in a stored error: the worker stores
    built-in exceptions by their bare name (``ValueError``), Django names them
    ``builtins.ValueError``; other names are kept (they are ``module.QualName`` already, or a
    name TaskForge gives, like ``timed_out``)."""
    found = getattr(builtins, type_name, None) if "." not in type_name else None
    if isinstance(found, type) and issubclass(found, BaseException):
        return f"builtins.{type_name}"
    return type_name


def task_error(error: Mapping[str, Any]) -> Any:
    """A Django ``TaskError`` of one stored error object."""
    type_name = str(error.get("type") or "error")
    message = error.get("message")
    trace = error.get("traceback") or (f"{type_name}: {message}" if message else type_name)
    return TaskError(exception_class_path=exception_class_path(type_name), traceback=str(trace))


def task_errors(task: Mapping[str, Any]) -> list[Any]:
    """The ``TaskError`` of every attempt of ``task`` (see :func:`fields`) that recorded an error,
    first attempt first; the task's ``last_error`` alone when no attempt has one (a task that
    failed without an attempt error of its own)."""
    errors = [task_error(attempt["error"]) for attempt in task["attempts"] if isinstance(attempt.get("error"), dict)]
    if not errors and isinstance(task.get("last_error"), dict):
        errors.append(task_error(task["last_error"]))
    return errors


def as_mapping(row: Any) -> dict[str, Any]:
    """A row of :mod:`taskforge.client` (a ``dict``, or a typed row) as a ``dict``."""
    return dict(row) if isinstance(row, Mapping) else client.as_dict(row)


def fields(task: Any) -> dict[str, Any]:
    """What :func:`taskforge.client.get_task` returned (a ``dict``, or a typed row) as a ``dict``
    whose ``"attempts"`` is a list of ``dict``."""
    row = as_mapping(task)
    row["attempts"] = [as_mapping(attempt) for attempt in row.get("attempts") or ()]
    return row
