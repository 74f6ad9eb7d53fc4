"""The one error shape of the JSON API, and how errors become it.

Every error answer is ``{"code": str, "message": str, "field": str | null}``:

=====  ================================  ===================================================
HTTP   code                              when
=====  ================================  ===================================================
400    ``invalid_argument``              request validation or SQLSTATE TF400; ``field`` names it
400    ``csrf``                          an unsafe request without the CSRF token (browser sessions)
401    ``unauthorized``                  token configured and not sent (or wrong)
403    ``read_only``                     any action while the console is read-only
404    ``not_found``                     SQLSTATE TF404 (``field`` = ``task_id``), or no such route
409    ``conflict``                      SQLSTATE TF409 (idempotency key reuse, retry refused)
413    ``request_entity_too_large``      body above the configured limit
429    ``too_many_attempts``             a bearer token while its address (or the token) is
                                         throttled after failures; ``Retry-After`` says when
503    ``database_unavailable``/``cut_short``  no connection, or a read hit ``statement_timeout``
=====  ================================  ===================================================

A refusal (:class:`taskforge.errors.Refused`: SQLSTATE TF400/TF404/TF409, or a value refused
before sending) gets its status and code from :mod:`taskforge_console.refusals`, its ``field``
from the error's ``COLUMN`` (the argument at fault).
"""

from __future__ import annotations

from typing import Any

from flask import jsonify
from pydantic import BaseModel, Field, ValidationError
from werkzeug.wrappers import Response as BaseResponse

from taskforge.errors import Refused

from ..refusals import refusal_status

__all__ = [
    "ErrorBody",
    "ValidationErrorBody",
    "error_response",
    "refused_response",
    "validation_error",
]


class ErrorBody(BaseModel):
    """An error answer of the API."""

    code: str = Field(description="Machine-readable reason, e.g. invalid_argument, not_found, conflict.")
    message: str = Field(description="What went wrong, for a person.")
    field: str | None = Field(default=None, description="The request field at fault, when there is one.")


class ValidationErrorBody(ErrorBody):
    """The 400 answer of a request that does not match the schema (same shape as ErrorBody)."""


def error_response(status: int, code: str, message: str, field: str | None = None) -> BaseResponse:
    response = jsonify(code=code, message=message, field=field)
    response.status_code = status
    return response


def _loc_field(loc: tuple[int | str, ...]) -> str | None:
    parts = [str(p) for p in loc if not (isinstance(p, str) and p in {"body", "query", "path", "header"})]
    return ".".join(parts) or None


def validation_error(exc: ValidationError) -> BaseResponse:
    """flask-openapi3's callback for a request that fails its pydantic model: 400 naming the field."""
    errors: list[Any] = exc.errors(include_url=False, include_context=False, include_input=False)
    if not errors:
        return error_response(400, "invalid_argument", "invalid request")
    first = errors[0]
    field = _loc_field(tuple(first.get("loc", ())))
    problem = str(first.get("msg", "invalid")).removeprefix("Value error, ")
    if first.get("type") == "model_type" and field is None:
        problem = "a JSON object is required (Content-Type: application/json)"
    message = f"{field}: {problem}" if field else f"body: {problem}"
    return error_response(400, "invalid_argument", message, field)


def refused_response(exc: Refused) -> BaseResponse:
    """A refusal as 400/404/409 (:func:`taskforge_console.refusals.refusal_status`) with its
    message and the field it names (``task_id`` for a task that does not exist)."""
    status, code = refusal_status(exc)
    return error_response(status, code, exc.message, exc.field)
