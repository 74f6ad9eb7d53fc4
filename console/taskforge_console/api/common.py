"""What every API blueprint shares: the blueprint factory (auth, error mapping, documented
error answers) and reading an optional JSON body."""

from __future__ import annotations

import json
from typing import Any, TypeVar

import psycopg
from flask import request
from flask_openapi3 import APIBlueprint, Tag
from flask_openapi3.types import ResponseDict
from pydantic import BaseModel, ValidationError
from werkzeug.wrappers import Response as BaseResponse

from taskforge.errors import Refused, refused_from

from ..auth import require_signed_in
from .errors import ErrorBody, error_response, refused_response, validation_error

__all__ = ["BodyError", "api_blueprint", "database_error", "optional_body", "optional_body_doc"]

M = TypeVar("M", bound=BaseModel)

#: Error answers every authenticated API operation may give (documented in the OpenAPI document).
COMMON_RESPONSES: ResponseDict = {400: ErrorBody, 401: ErrorBody, 429: ErrorBody, 503: ErrorBody}
#: SQLSTATEs that mean the database is not (fully) set up for the console.
SETUP_SQLSTATES = {
    "42501": "the console's database role lacks a privilege: GRANT taskforge_console TO <the console's login role>",
    "42883": "a TaskForge function is missing: run `taskforge db migrate` (the schema is older than this console)",
    "42P01": "a TaskForge view is missing: run `taskforge db migrate` (the schema is older than this console)",
    "3F000": "the taskforge schema is not installed: run `taskforge db migrate`",
}


class BodyError(ValueError):
    """A request body that is not JSON."""


def database_error(exc: psycopg.Error) -> BaseResponse:
    """A refusal (TF400/TF404/TF409) -> :func:`refused_response`; an action cut short -> 503; a
    database without the schema or grants the console needs -> 503 saying what to run; anything
    else re-raised."""
    refused = refused_from(exc)
    if refused is not None:
        return refused_response(refused)
    sqlstate = getattr(exc, "sqlstate", None) or ""
    if isinstance(exc, psycopg.errors.QueryCanceled):
        return error_response(503, "cut_short", "the action took longer than the console's limit and was cancelled")
    if sqlstate in SETUP_SQLSTATES:
        return error_response(503, "database_setup", SETUP_SQLSTATES[sqlstate])
    raise exc


def _body_error(exc: BodyError) -> BaseResponse:
    return error_response(400, "invalid_argument", str(exc), "body")


def api_blueprint(name: str, import_name: str, tag: str, description: str) -> APIBlueprint:
    """An ``/api`` blueprint that needs sign-in (bearer token or session), maps refusals
    (:class:`taskforge.errors.Refused`: the SQL API's, the client's checks) to JSON errors, and
    documents them."""
    bp = APIBlueprint(
        name,
        import_name,
        url_prefix="/api",
        abp_tags=[Tag(name=tag, description=description)],
        abp_security=[{"bearer": []}],
        abp_responses=dict(COMMON_RESPONSES),
    )
    bp.before_request(require_signed_in)
    bp.register_error_handler(psycopg.Error, database_error)
    bp.register_error_handler(Refused, refused_response)
    bp.register_error_handler(ValidationError, validation_error)
    bp.register_error_handler(BodyError, _body_error)
    return bp


def optional_body(model: type[M]) -> M:
    """The JSON body as ``model``; an empty body is ``model()``. Raises :class:`BodyError`
    (400) for a body that is not JSON, ``ValidationError`` (400 naming the field) otherwise."""
    raw = request.get_data(cache=True)
    if not raw.strip():
        return model()
    try:
        data: Any = json.loads(raw)
    except ValueError as exc:
        raise BodyError(f"body: not valid JSON ({exc})") from None
    return model.model_validate(data)


def optional_body_doc(model: type[BaseModel]) -> dict[str, Any]:
    """OpenAPI ``requestBody`` (not required) for :func:`optional_body` (flat models only)."""
    return {
        "requestBody": {
            "required": False,
            "content": {"application/json": {"schema": model.model_json_schema()}},
        }
    }
