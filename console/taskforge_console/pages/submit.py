"""The submit form (``/submit``): any task type registered in the database (``tf_task_types``),
a queue, a JSON payload, priority, attempt budget, an optional delay and idempotency key.
The form's text becomes a :class:`taskforge.submission.SubmitRequest` (the one request shape,
checked there) and ``tf_submit`` decides: a refusal is shown next to the form with the message
naming the field (``payload: ...``, ``queue: ...``), and nothing is written.
"""

from __future__ import annotations

from flask import Response, flash, redirect, render_template, request, url_for
from werkzeug.wrappers import Response as BaseResponse

from taskforge import client
from taskforge.rows import TaskType
from taskforge.submission import JsonProblem, SubmitRequest, loads_json

from ..auth import may_act
from .blueprint import bp
from .common import act, problem_of, read_or

__all__ = ["DEFAULTS", "submit", "submit_post"]

#: What the empty form holds (tf_submit's own defaults).
DEFAULTS = {
    "task_type": "",
    "queue": "default",
    "payload": "{}",
    "priority": "0",
    "max_attempts": "3",
    "delay_seconds": "",
    "idempotency_key": "",
}


def _form(values: dict[str, str], error: str | None = None, status: int = 200) -> Response:
    none: list[TaskType] = []
    types = read_or("task types", client.task_types, none)
    body = render_template("pages/submit.html", values=values, error=error, task_types=types)
    return Response(body, status=status)


@bp.get("/submit")
@may_act
def submit() -> BaseResponse:
    """The empty form (hidden, and refused, in read-only mode)."""
    values = dict(DEFAULTS)
    values["task_type"] = request.args.get("task_type", "")
    values["queue"] = request.args.get("queue", values["queue"])
    return _form(values)


def _int(values: dict[str, str], name: str) -> int:
    text = values[name].strip()
    try:
        return int(text)
    except ValueError:
        raise client.InvalidArgument(name, f"must be a whole number, got {text!r}") from None


def _request(values: dict[str, str]) -> SubmitRequest:
    """The request of the form (client-side checks only; the database decides the rest)."""
    try:
        payload = loads_json(values["payload"] or "{}")
    except JsonProblem as exc:
        raise client.InvalidArgument("payload", exc.problem) from None
    if not isinstance(payload, dict):
        raise client.InvalidArgument("payload", "must be a JSON object")
    delay_text = values["delay_seconds"].strip()
    try:
        delay = float(delay_text) if delay_text else None
    except ValueError:
        raise client.InvalidArgument("delay_seconds", f"must be a number of seconds, got {delay_text!r}") from None
    return SubmitRequest(
        task_type=values["task_type"].strip(),
        payload=payload,
        queue=values["queue"].strip(),
        priority=_int(values, "priority"),
        max_attempts=_int(values, "max_attempts"),
        delay_seconds=delay,
        idempotency_key=values["idempotency_key"].strip() or None,
    )


@bp.post("/submit")
@may_act
def submit_post() -> BaseResponse:
    """Submit; on success go to the new (or, for an idempotent replay, the existing) task."""
    values = {name: request.form.get(name, default) for name, default in DEFAULTS.items()}
    try:
        submitted = _request(values)
        result = act(lambda conn: client.submit_request(conn, submitted))
    except Exception as exc:
        problem = problem_of(exc)
        if problem is None:
            raise
        return _form(values, problem, 400)
    if result.created:
        flash(f"Task {result.task_id} submitted ({result.state}).", "ok")
    else:
        flash(f"Task {result.task_id} already exists with this idempotency key and the same request; shown here.", "ok")
    return redirect(url_for("pages.task", task_id=result.task_id))
