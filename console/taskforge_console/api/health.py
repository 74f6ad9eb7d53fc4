"""``GET /healthz``: is the database reachable, and which schema version does it hold."""

from __future__ import annotations

from typing import Any

from flask_openapi3 import APIBlueprint, Tag
from pydantic import BaseModel, Field

from taskforge import sql

from ..db import CutShort, Database, DatabaseUnavailable, ReplicaStatus
from ..state import console

__all__ = ["Health", "ReadReplica", "bp"]

bp = APIBlueprint("health", __name__, abp_tags=[Tag(name="health")])


class ReadReplica(BaseModel):
    up: bool = Field(description="The read replica answered; false: reads go to the primary.")
    in_recovery: bool | None = Field(description="It is a hot standby (pg_is_in_recovery()); null when down.")
    streaming: bool | None = Field(description="Its WAL receiver is connected; null when down.")
    lag_seconds: float | None = Field(
        description="Replay lag in seconds: 0 while it streams and has replayed all it received, else the age of "
        "the last transaction it replayed; null when down or unknown."
    )
    lag_bytes: float | None = Field(description="WAL received but not yet replayed (bytes); null when down.")


class Health(BaseModel):
    status: str = Field(description="ok, or unavailable when the database cannot be read.")
    database: bool = Field(description="The database answered.")
    schema_version: int | None = Field(description="taskforge.tf_schema_version(), null when unreachable.")
    read_only: bool = Field(description="The console refuses actions.")
    read_replica: ReadReplica | None = Field(
        default=None, description="The read replica (--read-dsn); absent when none is configured."
    )


@bp.get("/healthz", responses={200: Health, 503: Health}, doc_ui=True)
def healthz() -> Any:
    """Database reachable (one query under the read statement_timeout) and its schema version.

    No authentication: it tells nothing but reachability, the version and, with a read replica,
    whether it answers and its replay lag. 200 when the database answered (the replica, or the
    primary when the replica cannot be reached), 503 otherwise."""
    state = console()
    replica = _replica(state.db) if state.db.has_replica else None
    try:
        version = state.db.read("health check", lambda conn: sql.one_value(conn, sql.SCHEMA_VERSION))
    except (DatabaseUnavailable, CutShort):
        body = Health(
            status="unavailable",
            database=False,
            schema_version=None,
            read_only=state.settings.read_only,
            read_replica=replica,
        )
        return _dump(body), 503
    body = Health(
        status="ok",
        database=True,
        schema_version=int(version),
        read_only=state.settings.read_only,
        read_replica=replica,
    )
    return _dump(body)


def _dump(body: Health) -> dict[str, Any]:
    # Without a read replica the answer is what it was before there could be one.
    return body.model_dump(exclude={"read_replica"} if body.read_replica is None else None)


def _replica(db: Database) -> ReadReplica:
    try:
        status = db.replica_status() or ReplicaStatus(up=False)
    except CutShort:  # it answered, but cancelled the query
        return ReadReplica(up=True, in_recovery=None, streaming=None, lag_seconds=None, lag_bytes=None)
    return ReadReplica(
        up=status.up,
        in_recovery=status.in_recovery,
        streaming=status.streaming,
        lag_seconds=status.lag_seconds,
        lag_bytes=status.lag_bytes,
    )
