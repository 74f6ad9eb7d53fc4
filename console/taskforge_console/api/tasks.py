"""``/api/tasks``: submit, list (filters, keyset cursor), detail with attempts, cancel and retry
(one task, or many by ids or by filter)."""

from __future__ import annotations

from typing import Any

from flask import url_for
from flask_openapi3.types import ResponseDict

from taskforge import client
from taskforge.submission import SubmitRequest

from .. import queries
from ..auth import may_act
from ..filters import to_task_filter
from ..state import console
from .common import api_blueprint, optional_body, optional_body_doc
from .errors import ErrorBody
from .models import (
    BulkCancelBody,
    BulkCancelled,
    BulkRetried,
    BulkRetryBody,
    CancelBody,
    Cancelled,
    Retried,
    RetryBody,
    SubmitBody,
    Submitted,
    TaskDetail,
    TaskListQuery,
    TaskPage,
    TaskPath,
)

__all__ = ["bp"]

bp = api_blueprint("api_tasks", __name__, "tasks", "Submit, inspect, cancel and retry tasks.")
ACTION_RESPONSES: ResponseDict = {403: ErrorBody, 404: ErrorBody, 409: ErrorBody, 413: ErrorBody}


@bp.post("/tasks", responses={200: Submitted, 201: Submitted, **ACTION_RESPONSES})
@may_act
def submit_task(body: SubmitBody) -> Any:
    """Submit a task (tf_submit).

    201 with the new task, 200 for an idempotent replay (same idempotency_key and same request:
    the stored task), 409 when the key was used for a different request, 400 naming the field
    the database refused, 413 when the body is larger than the console's limit."""
    request = SubmitRequest(**dict(body))  # the body's fields are the request's (checked there)
    done = console().db.act(lambda conn: client.submit_request(conn, request))
    answer = Submitted.model_validate(done.as_dict()).model_dump(mode="json")
    if not done.created:
        return answer, 200
    return answer, 201, {"Location": url_for("api_tasks.get_task", task_id=done.task_id)}


@bp.get("/tasks", responses={200: TaskPage})
def list_tasks(query: TaskListQuery) -> Any:
    """Tasks, newest first, one page at a time.

    Filters: state (repeat for several), queue, task_type, task_id, created and finished time
    ranges ([after, before), RFC 3339 with an offset). Pagination is by keyset: pass the answer's
    next_cursor as cursor for the next page (null on the last page); the cost of a page does not
    grow with the number of tasks before it."""
    where = to_task_filter(query)
    rows, next_cursor = console().db.read(
        "task list", lambda conn: queries.list_tasks(conn, where, cursor=query.cursor, limit=query.limit)
    )
    return TaskPage.model_validate({"tasks": rows, "next_cursor": next_cursor}).model_dump(mode="json")


@bp.get("/tasks/<int:task_id>", responses={200: TaskDetail, 404: ErrorBody})
def get_task(path: TaskPath) -> Any:
    """One task with its attempt timeline (tf_tasks and tf_attempts)."""
    task = console().db.read("task", lambda conn: client.get_task(conn, path.task_id))
    return TaskDetail.model_validate(task.as_dict()).model_dump(mode="json")


@bp.post(
    "/tasks/<int:task_id>/cancel",
    responses={200: Cancelled, **ACTION_RESPONSES},
    openapi_extensions=optional_body_doc(CancelBody),
)
@may_act
def cancel_task(path: TaskPath) -> Any:
    """Cancel a task (tf_cancel): BLOCKED/QUEUED/RETRYING end CANCELLED now (and so do the
    task's BLOCKED descendants); RUNNING gets a cancel request
    (cancel_requested=true) honoured when its worker finishes or its lease expires; a finished
    task is returned unchanged. Optional body: {"reason": "..."}."""
    body = optional_body(CancelBody)
    done = console().db.act(lambda conn: client.cancel(conn, path.task_id, body.reason))
    return Cancelled.model_validate(done.as_dict()).model_dump(mode="json")


@bp.post(
    "/tasks/<int:task_id>/retry",
    responses={200: Retried, **ACTION_RESPONSES},
    openapi_extensions=optional_body_doc(RetryBody),
)
@may_act
def retry_task(path: TaskPath) -> Any:
    """Retry a FAILED or CANCELLED task (tf_retry): it is QUEUED again with extra_attempts more
    attempts (default 1); 409 for a task in any other state. Optional body: {"extra_attempts": n}."""
    body = optional_body(RetryBody)
    done = console().db.act(lambda conn: client.retry(conn, path.task_id, body.extra_attempts))
    return Retried.model_validate(done.as_dict()).model_dump(mode="json")


@bp.post("/tasks/cancel", responses={200: BulkCancelled, **ACTION_RESPONSES})
@may_act
def cancel_tasks(body: BulkCancelBody) -> Any:
    """Cancel many tasks: {"task_ids": [...]} (up to 10,000) or {"filter": {...}}.

    A filter takes the newest 10,000 matching tasks a cancel can change (BLOCKED, QUEUED, RETRYING, and
    RUNNING without a cancel request); more=true says more matched: call again. One
    transaction per call. Unknown ids and refusals are listed in refused; the others go on."""
    where = to_task_filter(body.filter) if body.filter is not None else None
    done = console().db.act(
        lambda conn: queries.bulk_cancel(conn, task_ids=body.task_ids, where=where, reason=body.reason)
    )
    return BulkCancelled.model_validate(
        {"cancelled": done.done, "refused": done.refused, "more": done.more}
    ).model_dump(mode="json")


@bp.post("/tasks/retry", responses={200: BulkRetried, **ACTION_RESPONSES})
@may_act
def retry_tasks(body: BulkRetryBody) -> Any:
    """Retry many tasks: {"task_ids": [...]} (up to 10,000) or {"filter": {...}}.

    A filter takes the newest 10,000 matching FAILED or CANCELLED tasks; more=true says more
    matched: call again. Refusals (not found, not retryable) are listed in refused."""
    where = to_task_filter(body.filter) if body.filter is not None else None
    done = console().db.act(
        lambda conn: queries.bulk_retry(conn, task_ids=body.task_ids, where=where, extra_attempts=body.extra_attempts)
    )
    return BulkRetried.model_validate({"retried": done.done, "refused": done.refused, "more": done.more}).model_dump(
        mode="json"
    )
