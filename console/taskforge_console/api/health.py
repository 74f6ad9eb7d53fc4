"""``GET /healthz``: is the database reachable, and which schema version does it hold."""

from __future__ import annotations

from typing import Any

from flask_openapi3 import APIBlueprint, Tag
from pydantic import BaseModel, Field

from taskforge import sql

from ..db import CutShort, DatabaseUnavailable
from ..state import console

__all__ = ["Health", "bp"]

bp = APIBlueprint("health", __name__, abp_tags=[Tag(name="health")])


class Health(BaseModel):
    status: str = Field(description="ok, or unavailable when the database cannot be read.")
    database: bool = Field(description="The database answered.")
    schema_version: int | None = Field(description="taskforge.tf_schema_version(), null when unreachable.")
    read_only: bool = Field(description="The console refuses actions.")


@bp.get("/healthz", responses={200: Health, 503: Health}, doc_ui=True)
def healthz() -> Any:
    """Database reachable (one query under the read statement_timeout) and its schema version.

    No authentication: it tells nothing but reachability and the version. 200 when the database
    answered, 503 otherwise."""
    state = console()
    try:
        version = state.db.read("health check", lambda conn: sql.one_value(conn, sql.SCHEMA_VERSION))
    except (DatabaseUnavailable, CutShort):
        body = Health(status="unavailable", database=False, schema_version=None, read_only=state.settings.read_only)
        return body.model_dump(), 503
    return Health(
        status="ok", database=True, schema_version=int(version), read_only=state.settings.read_only
    ).model_dump()
