"""The task list (``/tasks``) and its bulk actions (``/tasks/bulk``).

Filters (query arguments; empty means "any"): ``state`` (repeatable), ``queue``, ``task_type``,
``task_id``, ``created_after``/``created_before``, ``finished_after``/``finished_before`` (UTC,
``YYYY-MM-DDTHH:MM[:SS]`` as a ``datetime-local`` input sends it, or ISO 8601 with an offset;
ranges are half-open ``[after, before)``), ``limit`` (1..500, default 50). Pages are keyset
pages by task id, newest first: ``cursor`` is the last id of the previous page, so a page costs
the same with a million rows as with ten.

Bulk actions take the ticked rows (``selected``, repeatable) or every task matching the filter
(``all_matching=1``, at most :data:`taskforge_console.queries.BULK_LIMIT` per action), and always
go through a confirmation step: the first POST only shows what would change; the second one
(``confirm=1``) acts, in one transaction, and shows what was done and what was refused.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from flask import Response, render_template, request, url_for
from werkzeug.datastructures import MultiDict

from taskforge import client

from .. import queries
from ..auth import may_act
from ..filters import FILTER_FIELDS, filter_from_args
from .blueprint import bp
from .common import act, problem_of, read, read_or, render_page

__all__ = ["DEFAULT_LIMIT", "bulk", "filter_args", "tasks"]

DEFAULT_LIMIT = 50
ACTIONS = {"cancel": "Cancel", "retry": "Retry"}
_TIME_FIELDS = ("created_after", "created_before", "finished_after", "finished_before")


def _int_field(args: Mapping[str, str], name: str, low: int, high: int) -> int | None:
    text = (args.get(name) or "").strip()
    if not text:
        return None
    try:
        value = int(text)
    except ValueError:
        raise client.InvalidArgument(name, f"must be a whole number, got {text!r}") from None
    if not low <= value <= high:
        raise client.InvalidArgument(name, f"must be between {low} and {high}, got {value}")
    return value


def filter_args(where: queries.TaskFilter) -> list[tuple[str, str]]:
    """``where`` back as (name, value) pairs, for links and hidden form fields."""
    pairs: list[tuple[str, str]] = [("state", s) for s in where.states or ()]
    for name in ("queue", "task_type", "task_id"):
        value = getattr(where, name)
        if value is not None:
            pairs.append((name, str(value)))
    for name in _TIME_FIELDS:
        value = getattr(where, name)
        if value is not None:
            pairs.append((name, value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")))
    return pairs


def _form_values(args: MultiDict[str, str]) -> dict[str, Any]:
    """What the filter form shows again (as typed, also when it was refused)."""
    values: dict[str, Any] = {name: args.get(name, "") for name in FILTER_FIELDS if name != "state"}
    values["state"] = [s.upper() for s in args.getlist("state")]
    values["limit"] = args.get("limit", "")
    return values


@bp.get("/tasks")
def tasks() -> Response | str:
    """One keyset page of tasks matching the filter, newest first."""
    error = None
    rows: list[dict[str, Any]] = []
    next_cursor = None
    where = queries.TaskFilter()
    cursor = None
    limit = DEFAULT_LIMIT
    try:
        where = filter_from_args(request.args, naive_as_utc=True)
        cursor = _int_field(request.args, "cursor", client.INT8_RANGE[0], client.INT8_RANGE[1])
        limit = _int_field(request.args, "limit", 1, queries.PAGE_LIMIT) or DEFAULT_LIMIT
        empty: tuple[list[dict[str, Any]], int | None] = ([], None)
        rows, next_cursor = read_or(
            "task list", lambda conn: queries.list_tasks(conn, where, cursor=cursor, limit=limit), empty
        )
    except client.InvalidArgument as exc:
        error = str(exc)
    pairs = filter_args(where)
    if limit != DEFAULT_LIMIT:
        pairs.append(("limit", str(limit)))
    body = render_page(
        "pages/tasks.html",
        "pages/_tasks_region.html",
        rows=rows,
        error=error,
        form=_form_values(request.args),
        filter_pairs=pairs,
        cursor=cursor,
        next_url=url_for("pages.tasks", **_multi([*pairs, ("cursor", str(next_cursor))])) if next_cursor else None,
        first_url=url_for("pages.tasks", **_multi(pairs)) if cursor is not None else None,
        limit=limit,
        actions=ACTIONS,
        bulk_limit=queries.BULK_LIMIT,
    )
    return Response(body, status=400) if error else body


def _multi(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """``url_for`` keyword arguments from pairs (a repeated name becomes a list)."""
    out: dict[str, Any] = {}
    for name, value in pairs:
        if name in out:
            existing = out[name]
            out[name] = [*existing, value] if isinstance(existing, list) else [existing, value]
        else:
            out[name] = value
    return out


def _selected_ids(form: MultiDict[str, str]) -> list[int]:
    ids: list[int] = []
    for text in form.getlist("selected"):
        try:
            value = int(text)
        except ValueError:
            raise client.InvalidArgument("selected", f"must hold task ids, got {text!r}") from None
        if not client.INT8_RANGE[0] <= value <= client.INT8_RANGE[1]:
            raise client.InvalidArgument("selected", f"task id {value} is outside the range of bigint")
        ids.append(value)
    return sorted(set(ids))


def _applicable(action: str) -> tuple[str, ...]:
    return queries.CANCELLABLE_STATES if action == "cancel" else queries.RETRYABLE_STATES


def _preview(action: str, ids: list[int] | None, where: queries.TaskFilter) -> dict[str, Any]:
    """What a confirmed action would touch: the count (capped) and, for ticked rows, their states."""
    states = _applicable(action)
    if ids is not None:
        rows = read("selected tasks", lambda conn: client.tasks_by_id(conn, ids))
        found = {r.task_id for r in rows}
        return {
            "rows": rows,
            "count": sum(1 for r in rows if r.state in states),
            "skipped": sum(1 for r in rows if r.state not in states),
            "missing": [i for i in ids if i not in found],
            "more": False,
        }
    matching = read(
        "tasks matching the filter",
        lambda conn: queries.count_matching(
            conn, where.restricted_to(states), cap=queries.BULK_LIMIT + 1, skip_cancel_requested=action == "cancel"
        ),
    )
    return {
        "rows": [],
        "count": min(matching, queries.BULK_LIMIT),
        "skipped": 0,
        "missing": [],
        "more": matching > queries.BULK_LIMIT,
    }


@bp.post("/tasks/bulk")
@may_act
def bulk() -> Response | str:
    """Step 1 (no ``confirm``): show what the action would change. Step 2 (``confirm=1``): act."""
    form = request.form
    action = form.get("action", "")
    back = url_for("pages.tasks", **_multi(_pairs_from_form(form)))
    if action not in ACTIONS:
        return _bulk_refused(f"action: must be one of {', '.join(ACTIONS)}, got {action!r}", back)
    try:
        where = filter_from_args(form, naive_as_utc=True)
        all_matching = form.get("all_matching") == "1"
        ids = None if all_matching else _selected_ids(form)
    except client.InvalidArgument as exc:
        return _bulk_refused(str(exc), back)
    if ids is not None and not ids:
        return _bulk_refused("selected: tick at least one task, or choose all tasks matching the filter", back)
    if form.get("confirm") != "1":
        return render_template(
            "pages/bulk_confirm.html",
            action=action,
            action_label=ACTIONS[action],
            ids=ids,
            all_matching=all_matching,
            filter_pairs=filter_args(where),
            preview=_preview(action, ids, where),
            applicable=_applicable(action),
            bulk_limit=queries.BULK_LIMIT,
            back=back,
        )

    def run(conn: Any) -> queries.BulkOutcome:
        if action == "cancel":
            return queries.bulk_cancel(conn, task_ids=ids, where=None if ids is not None else where, reason=_reason())
        return queries.bulk_retry(conn, task_ids=ids, where=None if ids is not None else where)

    try:
        outcome = act(run)
    except Exception as exc:
        problem = problem_of(exc)
        if problem is None:
            raise
        return _bulk_refused(problem, back)
    return render_template(
        "pages/bulk_done.html",
        action=action,
        action_label=ACTIONS[action],
        outcome=outcome,
        all_matching=all_matching,
        filter_pairs=filter_args(where),
        back=back,
        bulk_limit=queries.BULK_LIMIT,
    )


def _reason() -> str | None:
    return (request.form.get("reason") or "").strip() or "bulk cancel from the console"


def _pairs_from_form(form: MultiDict[str, str]) -> list[tuple[str, str]]:
    return [(name, value) for name in FILTER_FIELDS for value in form.getlist(name) if value.strip()]


def _bulk_refused(message: str, back: str) -> Response:
    return Response(render_template("pages/bulk_refused.html", message=message, back=back), status=400)
