"""Reading a task filter from query arguments (the task-list page and its bulk form), with the
names and rules of ``GET /api/tasks``: ``state`` (repeatable), ``queue``, ``task_type``,
``task_id``, ``created_after``, ``created_before``, ``finished_after``, ``finished_before``."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError
from werkzeug.datastructures import MultiDict

from taskforge import client

from .api.models import TaskFilterModel
from .queries import TaskFilter

__all__ = ["FILTER_FIELDS", "filter_from_args", "to_task_filter"]

#: Query argument names of a task filter.
FILTER_FIELDS = tuple(TaskFilterModel.model_fields)
_TIME_FIELDS = ("created_after", "created_before", "finished_after", "finished_before")


def to_task_filter(model: TaskFilterModel) -> TaskFilter:
    """The query-layer filter of a validated API filter."""
    return TaskFilter(
        states=tuple(model.state) if model.state else None,
        queue=model.queue,
        task_type=model.task_type,
        task_id=model.task_id,
        created_after=model.created_after,
        created_before=model.created_before,
        finished_after=model.finished_after,
        finished_before=model.finished_before,
    )


def _as_utc(value: str) -> str:
    """A naive ISO time (an HTML ``datetime-local`` field) read as UTC; others unchanged."""
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        return value  # the model reports it
    return parsed.replace(tzinfo=dt.UTC).isoformat() if parsed.tzinfo is None else value


def filter_from_args(args: MultiDict[str, str] | Mapping[str, Any], *, naive_as_utc: bool = False) -> TaskFilter:
    """A :class:`TaskFilter` from query arguments; empty values and other names are ignored.

    ``naive_as_utc``: a time without an offset is read as UTC (else it is refused, as by the
    API). Raises :class:`taskforge.client.InvalidArgument` naming the argument at fault."""
    getlist = args.getlist if isinstance(args, MultiDict) else (lambda k: [args[k]] if k in args else [])
    values: dict[str, Any] = {}
    states = [s.strip().upper() for s in getlist("state") if s and s.strip()]
    if states:
        values["state"] = states
    for name in FILTER_FIELDS:
        if name == "state":
            continue
        raw = args.get(name)
        if raw is None or str(raw).strip() == "":
            continue
        text = str(raw).strip()
        values[name] = _as_utc(text) if naive_as_utc and name in _TIME_FIELDS else text
    try:
        model = TaskFilterModel.model_validate(values)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        field = str(first["loc"][0]) if first.get("loc") else "filter"
        raise client.InvalidArgument(field, str(first.get("msg", "invalid"))) from None
    return to_task_filter(model)
